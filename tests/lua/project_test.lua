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

-- A profile's backend is looked up among the backends
-- (lua/navette/backends/); its own settings are checked by that backend.
t.test("a profile's backend and its settings are checked", function()
  local ok, err = load_project([[return { profiles = { p = {
    backend = "pbs" } } }]])
  t.ok(not ok)
  t.match(err.message, "unknown backend 'pbs'")
  t.eq(err.hint, "backends: local, kubernetes, slurm, slurm_ssh")
  ok, err = load_project([[return { profiles = { p = {
    slurm = { endpoint = "https://h:6820" } } } }]])
  t.ok(not ok)
  t.match(err.message, "profile 'p': slurm settings need backend = "
          .. "\"slurm\"")
  ok, err = load_project([[return { profiles = { p = {
    backend = "slurm", storage = "s3://bucket/p/",
    s3 = { endpoint = "https://s3:7480", region = "r", credential = "s" },
    credentials = { s = { kind = "s3", source = "env" },
                    j = { kind = "hs256", source = "file",
                          path = "/nonexistent/jwt.key" } },
    slurm = { endpoint = "https://h:6820", user = "u", credential = "j",
              partitoin = "x" } } } }]])
  t.ok(not ok)
  t.match(err.message, "profile 'p': slurm: unknown key 'partitoin'")
  t.match(err.message, "partition", "a suggestion")
  ok, err = load_project([[return { profiles = { p = {
    backend = "slurm", slurm = { endpoint = "https://h:6820", user = "u",
                                 credential = "j" } } } }]])
  t.ok(not ok)
  t.match(err.message, "the slurm backend needs s3:// storage")
end)

t.test("a slurm profile keeps its checked settings", function()
  local ok, p = load_project([[return { profiles = { p = {
    backend = "slurm", storage = "s3://bucket/p/",
    s3 = { endpoint = "https://s3:7480", region = "r", credential = "s" },
    credentials = { s = { kind = "s3", source = "env" },
                    j = { kind = "hs256", source = "file",
                          path = "/nonexistent/jwt.key" } },
    slurm = { endpoint = "https://h:6820/", user = "u", credential = "j",
              nodes = { "n1" } } } } }]])
  t.ok(ok, type(p) == "table" and tostring(p.message) or "loaded")
  local s = p.profiles.p.slurm
  t.eq(s.endpoint, "https://h:6820", "the trailing slash dropped")
  t.eq(s.working_directory, "/tmp")
  t.eq(s.nodes[1], "n1")
  t.eq(s.credential.name, "j")
  t.eq(p.profiles.p.backend, "slurm")
end)
