-- The project file's validators (navette.lua): a value of the wrong type
-- is a recipe error naming the file and the key, never a Lua error inside
-- the library.
local t = test
local project = require "navette.project"
local sys = _navette.sys

local function load_project(source)
  local dir = t.tmpdir()
  assert(sys.write_file(dir .. "/navette.lua", source))
  return pcall(project.load, dir, dir)
end

-- found by fuzz_project_file: validate_credentials called `fail` before
-- it was defined, so "attempt to call a nil value (global 'fail')"
t.test("credentials that are not a table are named", function()
  for _, source in ipairs({
    "return { credentials = 5 }",
    "return { profiles = { p = { credentials = 'x' } } }",
  }) do
    local ok, err = load_project(source)
    t.ok(not ok, source .. " is refused")
    t.eq(type(err), "table", "an error object: " .. tostring(err))
    t.eq(err.code, "recipe", "a recipe error")
    t.ok(err.message:find("navette.lua: .*credentials must be a table"),
         "names the file and the key: " .. tostring(err.message))
  end
end)

t.test("a valid project file loads", function()
  local ok, p = load_project([[return { name = "My Project",
    profiles = { p = { storage = "file:///srv/store" } } }]])
  t.ok(ok, type(p) == "table" and tostring(p.message) or "loaded")
  t.eq(p.name, "my-project")
  t.eq(p.profiles.p.storage, "file:///srv/store")
end)
