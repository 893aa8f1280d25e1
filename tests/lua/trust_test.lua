-- Trusting a project (issue 26): what navette.lua binds of the user's
-- (credential sources and hosts, data sets, profiles' stores and
-- endpoints, the team repository) takes effect only once the user trusted
-- that checkout; the C loader refuses a project's credential until then,
-- whatever Lua asks; a change of what it binds is refused with its diff;
-- the user's own declarations need no trust; the project file is looked
-- up only inside the repository (M0).
local t = test
local sys, core = _navette.sys, _navette.core
local project = require "navette.project"
local trust = require "navette.trust"
local native = _navette.creds

local function git(dir, command)
  assert(os.execute("cd '" .. dir .. "' && " .. command .. " >/dev/null 2>&1"))
end

local function repo(files)
  local dir = t.tmpdir()
  for name, text in pairs(files) do
    assert(sys.mkdir_p((dir .. "/" .. name):match("^(.*)/[^/]*$")))
    assert(sys.write_file(dir .. "/" .. name, text))
  end
  git(dir, "git init -q .")
  return dir
end

local BINDING = [[return { name = "p", credentials = {
  gh = { kind = "bearer", source = "env", env = { token = "NV_TRUST_TOKEN" },
         host = "127.0.0.1:9" } } }]]

t.test("a project's credential is not loaded before trust", function()
  local dir = repo { ["navette.lua"] = BINDING }
  local proj = project.at(dir)
  t.eq(proj.trusted, false, "untrusted")
  t.eq(proj.trust.state, "untrusted")
  local decl = proj.credentials.gh
  t.eq(decl.origin, "project")
  local h, err = native.load(decl)
  t.eq(h, nil, "not loaded")
  t.eq(err.code, "untrusted")
  t.match(err.message, "not trusted on this machine")
  -- Lua cannot talk the loader round: the origin of a declaration a
  -- recipe could hand over is not a way in when it says "project"
  local forged = {}
  for k, v in pairs(decl) do forged[k] = v end
  forged.origin = nil
  t.eq((native.load(forged)), nil, "no origin: refused too")
end)

t.test("trusted, it loads; a change is refused with its diff", function()
  local dir = repo { ["navette.lua"] = BINDING }
  trust.record(project.at(dir))
  local proj = project.at(dir)
  t.eq(proj.trust.state, "trusted")
  t.eq(proj.trusted, true)
  local h, err = native.load(proj.credentials.gh)
  -- (the variable is unset: the loader went as far as the source)
  t.ok(h == nil and err.code ~= "untrusted", "the source was read: "
       .. tostring(err and err.message))
  assert(sys.write_file(dir .. "/navette.lua",
                        (BINDING:gsub("127%.0%.0%.1:9", "evil.example:443"))))
  proj = project.at(dir)
  t.eq(proj.trust.state, "changed")
  t.eq(proj.trusted, false)
  t.eq((native.load(proj.credentials.gh)), nil, "refused after the change")
  local e = trust.refusal(proj, "profile local")
  t.eq(e.code, "refused")
  t.match(e.message, "changed what it binds since you trusted it")
  t.match(e.message, '%- credentials%.gh%.host = "127%.0%.0%.1:9"')
  t.match(e.message, '%+ credentials%.gh%.host = "evil%.example:443"')
  t.match(e.hint, "navette trust")
end)

t.test("what binds, and what does not", function()
  local b = trust.bindings {
    name = "x", default_profile = "a", maintenance = { "m.lua" },
    datasets = { d = "/data/x" },
    profiles = { a = { description = "d", max_token_lifespan = 60,
                       storage = "s3://b/", s3 = { endpoint = "https://e" },
                       slurm = { url = "http://h:1" } } },
  }
  t.match(b, 'datasets%.d = "/data/x"')
  t.match(b, 'profiles%.a%.storage = "s3://b/"')
  t.match(b, 'profiles%.a%.s3%.endpoint = "https://e"')
  t.match(b, 'profiles%.a%.slurm%.url = "http://h:1"')
  t.ok(not b:find("description", 1, true), "a description binds nothing")
  t.ok(not b:find("max_token_lifespan", 1, true), "nor a limit")
  t.ok(not b:find("maintenance", 1, true), "nor the maintenance list")
  -- an unknown profile key binds (the safe default)
  t.match(trust.bindings { profiles = { a = { future = 1 } } },
          "profiles%.a%.future = 1")
  -- a project that binds nothing needs no trust
  local dir = repo { ["navette.lua"] = 'return { name = "plain" }' }
  local proj = project.at(dir)
  t.eq(proj.trust.state, "none")
  t.eq(proj.trusted, true)
end)

t.test("the user's own credentials need no trust, and name a host",
       function()
  local config = trust.config_dir()
  assert(sys.mkdir_p(config, 448))
  local path = config .. "/credentials.lua"
  assert(sys.write_file(path, [[return { mine = { kind = "bearer",
    source = "env", env = { token = "NV_TRUST_MINE" }, host = "api.example" } }]]))
  local ok, err = pcall(function()
    local dir = repo { ["navette.lua"] = BINDING }
    local proj = project.at(dir)
    t.eq(proj.trusted, false)
    local d = proj.profiles["local"].credentials.mine
    t.eq(d.origin, "user")
    local _, e = native.load(d)
    t.ok(e.code ~= "untrusted", "a user's declaration is not gated: "
         .. tostring(e.message))
    assert(sys.write_file(path, [[return { mine = { kind = "bearer",
      source = "env", env = { token = "NV_TRUST_MINE" } } }]]))
    t.raises(function() project.at(dir) end, "names the host it is for")
  end)
  sys.remove(path)
  if not ok then error(err, 0) end
end)

t.test("the project file is looked up only inside the repository (M0)",
       function()
  -- a folder holding a navette.lua, and a repository inside it without
  -- one: the parent's file is not the repository's project
  local parent = t.tmpdir()
  assert(sys.write_file(parent .. "/navette.lua", BINDING))
  local dir = parent .. "/clone"
  assert(sys.mkdir_p(dir .. "/sub"))
  git(dir, "git init -q .")
  local proj = project.at(dir .. "/sub")
  t.eq(proj.file, nil, "no project file")
  t.eq(proj.credentials, nil, "nothing the parent declares")
  -- the repository's own file, found from a subfolder
  assert(sys.write_file(dir .. "/navette.lua", 'return { name = "own" }'))
  t.eq(project.at(dir .. "/sub").name, "own")
end)

t.test("records: per checkout, listed, revoked", function()
  local a = repo { ["navette.lua"] = BINDING }
  local b = repo { ["navette.lua"] = BINDING }
  trust.record(project.at(a))
  t.eq(project.at(a).trust.state, "trusted")
  t.eq(project.at(b).trust.state, "untrusted", "another checkout is not")
  local listed = false
  for _, r in ipairs(trust.list()) do
    if r.root == project.at(a).root then listed = true end
  end
  t.ok(listed, "listed")
  t.eq(trust.revoke(project.at(a).root), true)
  t.eq(project.at(a).trust.state, "untrusted")
  -- a damaged record is no trust
  trust.record(project.at(a))
  local rec = trust.config_dir() .. "/trusted/"
              .. sys.sha256(project.at(a).root) .. ".json"
  local text = sys.read_file(rec)
  assert(sys.write_file(rec, (text:gsub("127%.0%.0%.1:9", "evil:1"))))
  t.eq(project.at(a).trust.state, "untrusted", "a forged record is refused")
  core.set_trusted(false)
end)
