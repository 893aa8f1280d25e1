-- The test runner behind `navette test FILE...`: a test file registers
-- cases with test(name, fn) and checks with the assertions below; the
-- runner prints one line per case and "N passed, N failed, N skipped". A
-- file that registers no case fails (a test that checks nothing must not
-- read as passed); a case that cannot run here calls test.skip(why).
local term = require "navette.term"
local errors = require "navette.errors"
local core, sys, json = _navette.core, _navette.sys, _navette.json

local testing = {}
local cases = {}

function testing.test(name, fn)
  cases[#cases + 1] = { name = name, fn = fn }
end

-- Ends the current case as skipped, saying why (a tool or privilege that
-- this machine lacks). A run with a skip exits 77: skipped, not passed.
-- (the message handler keeps an error's string fields: code marks it)
function testing.skip(why)
  error({ code = "skip", message = tostring(why) }, 2)
end

local function fail(message, level)
  error({ code = "assertion", message = message }, level or 3)
end

local function show(v)
  if type(v) == "string" then return string.format("%q", v) end
  if type(v) == "table" then
    local ok, s = pcall(json.encode, v)
    if ok then return s end
  end
  return tostring(v)
end

function testing.eq(actual, expected, what)
  if actual ~= expected then
    fail((what and (what .. ": ") or "") .. "expected " .. show(expected)
         .. ", got " .. show(actual))
  end
end

function testing.ok(value, what)
  if not value then fail((what or "expected a true value") .. ", got "
                         .. show(value)) end
  return value
end

function testing.match(s, pattern, what)
  if type(s) ~= "string" or not s:find(pattern) then
    fail((what and (what .. ": ") or "") .. show(s) .. " does not match "
         .. show(pattern))
  end
end

-- Calls fn, which must raise; returns the error object.
function testing.raises(fn, pattern)
  local ok, e = core.pcall(fn)
  if ok then fail("expected an error, none was raised") end
  if pattern then
    local message = type(e) == "table" and tostring(e.message) or tostring(e)
    if not message:find(pattern) then
      fail("error " .. show(message) .. " does not match " .. show(pattern))
    end
  end
  return e
end

-- A fresh temporary folder, removed when the run ends.
local temps = {}
function testing.tmpdir()
  local base = sys.getenv("TMPDIR") or "/tmp"
  local dir = base .. "/navette-test-" .. sys.random_hex(8)
  assert(sys.mkdir_p(dir, 448))
  temps[#temps + 1] = dir
  return dir
end

-- What a sandboxed test file gets as `test`: the assertions, sealed.
local function sandboxed_test_api()
  return core.seal({ test = testing.test, eq = testing.eq, ok = testing.ok,
                     match = testing.match, raises = testing.raises,
                     skip = testing.skip })
end

-- The environment of a test file. host: navette's own tests, run with the
-- host's whole library (_navette, internal modules); otherwise the file
-- is untrusted like a recipe: the recipe sandbox, the public API, `test`,
-- modules of its own folder, and the recipe time bound.
local function environment(file, host)
  if host then
    return setmetatable({ test = testing }, { __index = _G }), core.pcall
  end
  local dir = file:match("^(.*)/[^/]*$") or "."
  local env = core.sandbox(dir, {
    navette = require("navette.public").new(),
    globals = { test = sandboxed_test_api() },
    load_module = function(_, rel)
      local f = io.open(dir .. "/" .. rel, "rb")
      if not f then return nil, "no file " .. dir .. "/" .. rel end
      local text = f:read("a")
      f:close()
      return text, rel
    end,
  })
  return env, core.call_bounded
end

-- opts.host: run with the host's whole library (navette's own tests).
function testing.run_files(files, opts)
  local host = opts and opts.host
  local passed, failed, skipped = 0, 0, 0
  for _, file in ipairs(files) do
    cases = {}
    local env, call = environment(file, host)
    local chunk = errors.check(core.load_recipe(file, env, file))
    local ok, e = call(chunk)
    if not ok then
      term.print("FAIL " .. file .. ": " .. tostring(e.message))
      failed = failed + 1
    elseif #cases == 0 then
      term.print("FAIL " .. file .. ": registers no test case (call "
                 .. "test.test(name, fn))")
      failed = failed + 1
    end
    for _, c in ipairs(cases) do
      local cok, ce = call(c.fn)
      if cok then
        passed = passed + 1
        term.print("ok   " .. c.name)
      elseif type(ce) == "table" and ce.code == "skip" then
        skipped = skipped + 1
        term.print("SKIP " .. c.name .. ": " .. tostring(ce.message))
      else
        failed = failed + 1
        term.print("FAIL " .. c.name .. ": " .. tostring(ce.message))
      end
    end
  end
  for _, d in ipairs(temps) do sys.remove_tree(d) end
  temps = {}
  term.print(passed .. " passed, " .. failed .. " failed, " .. skipped
             .. " skipped")
  if failed > 0 then return 1 end
  return skipped > 0 and 77 or 0
end

return testing
