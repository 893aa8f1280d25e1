-- The error convention of the Lua API (lua/navette/errors.lua): a failure
-- raises an error object; "missing" is a result (storage.head gives nil
-- and a not_found error, image.exists gives false); every function that
-- can fail has a try_ twin that returns nil, err instead of raising.
local t = test
local errors = require "navette.errors"
local storage = require "navette.storage"
local image = require "navette.image"
local builder = require "navette.image.builder"
local http = require "navette.http"

-- A file:// store in a fresh folder, set as the run's store.
local function file_store()
  local dir = t.tmpdir()
  local root = "file://" .. dir .. "/store"
  local store = assert(_navette.storage.open(root, true))
  store:close()
  require("navette.context").enter({ profile = { name = "t", storage = root },
                         repo_root = dir, recipe_dir = dir, planned = {} })
  return dir, root
end

t.test("errors.pcall returns the results, or nil and an error object",
       function()
  local a, b = errors.pcall(function(x) return x, x + 1 end, 1)
  t.eq(a, 1)
  t.eq(b, 2)
  local v, e = errors.pcall(function()
    errors.raise("refused", "no", "check this")
  end)
  t.eq(v, nil)
  t.eq(e.code, "refused")
  t.match(e.message, "no$")
  t.eq(e.hint, "check this")
  v, e = errors.pcall(function() error("plain text", 0) end)
  t.eq(v, nil)
  t.eq(e.code, "recipe")
  t.eq(e.message, "plain text")
end)

t.test("a try_ twin calls the function its module holds when called",
       function()
  local m = { f = function() return "first" end }
  errors.add_try(m, { "f" })
  t.eq(m.try_f(), "first")
  m.f = function() errors.raise("backend", "down") end
  local v, e = m.try_f()
  t.eq(v, nil)
  t.eq(e.code, "backend")
end)

t.test("every public storage, image and http function has a try_ twin",
       function()
  -- each group's modules: the twin sits beside its function
  local modules = { storage = { storage, require "navette.storage.keys" },
                    image = { image, builder },
                    http = { http } }
  -- pure answers that cannot fail
  local pure = { ["image.target_platform"] = true }
  local seen = 0
  for _, name in ipairs(require("navette.public").names()) do
    local group, fn = name:match("^(%w+)%.([%w_]+)$")
    if modules[group] and not pure[name] then
      local home
      for _, m in ipairs(modules[group]) do
        if type(m[fn]) == "function" then home = m end
      end
      t.eq(type(home and home["try_" .. fn]), "function",
           name .. " has try_" .. fn)
      seen = seen + 1
    end
  end
  t.ok(seen >= 15, "the public functions were found (" .. seen .. ")")
end)

t.test("storage.head: a missing object is a result, not a failure",
       function()
  file_store()
  local info, err = storage.head("inputs/never-put.csv")
  t.eq(info, nil)
  t.eq(err.code, "not_found")
  -- the twin answers the same
  info, err = storage.try_head("inputs/never-put.csv")
  t.eq(info, nil)
  t.eq(err.code, "not_found")
  -- and a present object is described
  storage.put_string("inputs/there.txt", "hello\n")
  info = storage.head("inputs/there.txt")
  t.eq(info.size, 6)
  t.eq(info.key, "inputs/there.txt")
end)

t.test("storage.head: any other failure raises; try_head returns it",
       function()
  file_store()
  -- an s3:// object without an s3:// store
  local e = t.raises(function() storage.head("s3://bucket/key") end,
                     "s3:// storage")
  t.eq(e.code, "refused")
  local info, err = storage.try_head("s3://bucket/key")
  t.eq(info, nil)
  t.eq(err.code, "refused")
  -- a key the store cannot hold
  e = t.raises(function() storage.head("a/../../b") end)
  t.ok(e.code ~= "not_found", "not taken for missing: " .. e.code)
  info, err = storage.try_head("a/../../b")
  t.eq(info, nil)
  t.eq(err.code, e.code)
end)

t.test("storage.read raises for a missing object; try_read returns it",
       function()
  file_store()
  local e = t.raises(function() storage.read("nothing/here") end)
  t.eq(e.code, "not_found")
  local data, err = storage.try_read("nothing/here")
  t.eq(data, nil)
  t.eq(err.code, "not_found")
  storage.put_string("some/thing", "bytes")
  t.eq(storage.read("some/thing"), "bytes")
  t.eq(storage.try_read("some/thing"), "bytes")
  t.eq(#storage.list("some/").objects, 1)
  t.eq(#storage.try_list("some/").objects, 1)
end)

t.test("image: a bad reference raises; try_parse returns the error",
       function()
  local e = t.raises(function() image.parse("Not A Reference") end)
  local v, err = image.try_parse("Not A Reference")
  t.eq(v, nil)
  t.eq(err.code, e.code)
  t.match(err.message, "holds a space")
  local ref = image.try_parse("registry.example/team/app:1.0")
  t.eq(ref.registry, "registry.example")
  -- a misused call is a raise too, and returned by the twin
  e = t.raises(function() image.resolve("registry.example/a:1",
                                        { platfrom = "linux/amd64" }) end,
               "unknown key 'platfrom'")
  v, err = image.try_resolve("registry.example/a:1",
                             { platfrom = "linux/amd64" })
  t.eq(v, nil)
  t.eq(err.code, "recipe")
end)

t.test("http: a refused request raises; try_request returns it", function()
  local e = t.raises(function()
    http.request("https://example.invalid/", { insecure = true })
  end, "cannot be switched off")
  t.eq(e.code, "refused")
  local v, err = http.try_request("https://example.invalid/",
                                  { insecure = true })
  t.eq(v, nil)
  t.eq(err.code, "refused")
  v, err = http.try_get("example.invalid")
  t.eq(v, nil)
  t.match(err.message, "not a URL")
end)

t.test("s3store.try_open returns what open raises", function()
  local s3store = require "navette.s3store"
  local v, err = s3store.try_open({ name = "p" })
  t.eq(v, nil)
  t.eq(err.code, "usage")
  t.match(err.message, "has no s3:// storage")
end)
