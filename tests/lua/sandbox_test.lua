-- The sandbox recipes run in: allow-listed globals, frozen globals,
-- require limited to the library and the recipe's folder, memory and time
-- bounds.
local t = test
local core, sys = _navette.core, _navette.sys

local function run_source(source, files)
  local dir = t.tmpdir()
  for name, text in pairs(files or {}) do
    assert(sys.write_file(dir .. "/" .. name, text))
  end
  local path = dir .. "/recipe.lua"
  assert(sys.write_file(path, source))
  local env = core.sandbox(dir)
  local chunk, err = core.load_recipe(path, env, "recipe.lua")
  if not chunk then return false, err end
  return core.call_bounded(chunk)
end

t.test("the allowed libraries are there", function()
  local ok, r = run_source([[
    return string.rep("a", 3) .. table.concat({1, 2}) .. math.floor(2.5)
           .. utf8.char(72) .. tostring(coroutine.isyieldable())
           .. type(os.time())
  ]])
  t.ok(ok, type(r) == "table" and r.message or "ran")
  t.eq(r, "aaa122Hfalsenumber")
end)

t.test("dangerous functions are not reachable", function()
  for _, src in ipairs({
    "os.execute('true')", "io.open('/etc/passwd')", "dofile('/x')",
    "loadfile('/x')", "return load('return 1')()", "require 'os'",
    "require 'io'", "return package.loaded", "return debug.getinfo(1)",
    "os.exit(1)", "os.remove('/tmp/x')", "return _navette",
    "return collectgarbage('count')",
  }) do
    local ok, e = run_source(src)
    t.ok(not ok, "refused: " .. src)
  end
end)

t.test("errors carry the recipe's file and line", function()
  local ok, e = run_source("local a = 1\nlocal b = nil\nb()\n")
  t.ok(not ok)
  t.match(e.message, "^recipe.lua:3:")
end)

t.test("globals are frozen", function()
  local ok, e = run_source("x = 1")
  t.ok(not ok)
  t.match(e.message, "undeclared global 'x'")
  ok, e = run_source("rawset(_ENV, 'y', 1)")
  t.ok(not ok, "rawset cannot bypass the freeze")
  t.match(e.message, "frozen")
  ok, e = run_source("local t = {}; rawset(t, 'k', 1); return t.k")
  t.ok(ok, "rawset on a recipe's own table works")
  t.eq(e, 1)
  ok, e = run_source("return undefined_name")
  t.ok(not ok)
  t.match(e.message, "undeclared global 'undefined_name'")
end)

t.test("require finds the library and the recipe's own folder only", function()
  local ok, r = run_source("return require('helper').value",
                           { ["helper.lua"] = "return { value = 42 }" })
  t.ok(ok, type(r) == "table" and r.message or "ran")
  t.eq(r, 42)
  ok, r = run_source("return type(require('navette').job)")
  t.ok(ok, type(r) == "table" and r.message or "ran")
  t.eq(r, "function")
  ok, r = run_source("return require('../etc/passwd')")
  t.ok(not ok)
  ok, r = run_source("return require('missing_module')")
  t.ok(not ok)
  t.match(r.message, "module 'missing_module' not found")
end)

t.test("a syntax error is reported with its line", function()
  local ok, e = run_source("local x = 1\nlocal y = = 2\n")
  t.ok(not ok)
  t.match(e.message, "recipe.lua:2:")
end)

t.test("an endless loop is stopped by the time bound", function()
  core.set_limits(0.3)
  local ok, e = run_source("while true do end")
  core.set_limits(120)
  t.ok(not ok)
  t.match(e.message, "ran longer than")
end)

t.test("memory is capped", function()
  local used = core.memory()
  core.set_limits(nil, used + 8 * 1024 * 1024)
  local ok, e = run_source([[
    local parts = {}
    for i = 1, 1e7 do parts[i] = string.rep("x", 64) .. i end
  ]])
  core.set_limits(nil, 512 * 1024 * 1024)
  t.ok(not ok)
  -- a memory error skips the message handler: normalised by errors.from
  e = require("navette.errors").from(e)
  t.match(e.message, "out of memory")
end)
