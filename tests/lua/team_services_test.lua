-- A backend's team services (backends/init.lua: team_services): an entry
-- that is a table drives its service itself (keys, validate, apply,
-- revoke, prove) and team.lua takes services.<service> for it with no
-- module of the team layer; an entry that is a function is the old shape
-- (open), still read; a profile of another backend cannot keep the
-- service. slurm_ssh offers "ssh" that way.
local t = test
local sys = _navette.sys
local project = require "navette.project"
local team = require "navette.team"
local backends = require "navette.backends"

local calls = {}
local lab = {
  name = "labby",
  team_services = {
    lab = {
      keys = { "door", "badge" },
      validate = function(s, where)
        calls[#calls + 1] = "validate " .. where.profile.name
        if type(s.door) ~= "string" then
          where.fail("door must be a string", "the lab's door")
        end
        return { door = s.door:upper(), badge = s.badge, profile = s.profile }
      end,
      apply = function(policy, _, opts)
        calls[#calls + 1] = "apply " .. policy.services.lab.door
        return { { service = "lab", op = "+", what = "lab: a badge",
                   run = function() return "made" end } },
               opts.readmit and 2 or 1
      end,
      revoke = function(_, _, m) return "lab: " .. m.id .. " out" end,
    },
    old = function(cfg) return { opened = cfg } end,
  },
}

local function project_with(backend, services)
  local dir = t.tmpdir()
  assert(sys.write_file(dir .. "/navette.lua", [[return { name = "v",
    default_profile = "main",
    profiles = { main = { backend = "]] .. backend .. [[",
                          storage = "file://]] .. dir .. [[/store/" },
                 other = { storage = "file://]] .. dir .. [[/o/" } } }]]))
  assert(sys.write_file(dir .. "/team.lua", [[return { name = "vision",
    members = { alice = { name = "A", email = "a@example.com",
                          roles = { "dev" } } },
    roles = { dev = { "submit" } },
    services = ]] .. services .. [[ }]]))
  return project.load(dir, dir)
end

t.test("a table entry: its keys, its validate, its apply and revoke",
       function()
  backends.register(lab)
  calls = {}
  local proj = project_with("labby", [[{ lab = { door = "north" } }]])
  local p = team.load(proj)
  t.eq(p.services.lab.door, "NORTH", "what validate returned is kept")
  t.eq(calls[1], "validate main", "validate got the service's profile")
  t.eq(table.concat(team.service_names(p), ","), "lab")
  local svc = team.service(p, proj, "lab")
  local list, same = svc.changes(p, proj, {})
  t.eq(#list, 1)
  t.eq(list[1].what, "lab: a badge")
  t.eq(list[1].run(), "made")
  t.eq(same, 1)
  t.eq(svc.revoke(p, proj, p.members.alice), "lab: alice out")
  t.eq(svc.prove(p, proj, p.members.alice), nil,
       "no prove: no credential held, nothing tried")
  backends.unregister("labby")
end)

t.test("its keys and its checks are the backend's; mistakes name the file",
       function()
  backends.register(lab)
  local e = t.raises(function()
    team.load(project_with("labby", [[{ lab = { door = "n", window = 1 } }]]))
  end)
  t.ok(e.message:find("services.lab: unknown key 'window'", 1, true),
       e.message)
  t.ok((e.hint or ""):find("badge", 1, true), "the keys are listed")
  e = t.raises(function()
    team.load(project_with("labby", [[{ lab = { door = 3 } }]]))
  end)
  t.ok(e.message:find("team.lua: services.lab: door must be a string", 1,
                      true), e.message)
  t.eq(e.hint, "the lab's door")
  backends.unregister("labby")
end)

t.test("a profile of another backend cannot keep the service", function()
  backends.register(lab)
  local e = t.raises(function()
    team.load(project_with("local", [[{ lab = { door = "n" } }]]))
  end)
  t.ok(e.message:find("services.lab: profile main cannot keep it", 1, true),
       e.message)
  t.ok(e.hint:find("backend labby", 1, true), e.hint)
  backends.unregister("labby")
end)

t.test("a function entry is the old shape: open, and no service of its own",
       function()
  backends.register(lab)
  local s = backends.team_service(lab, "old")
  t.eq(s.open({ x = 1 }).opened.x, 1)
  t.eq(s.apply, nil)
  t.eq(backends.team_services().old, nil, "not a service team.lua names")
  t.eq(backends.team_services().lab[1], "labby")
  local e = t.raises(function()
    team.load(project_with("labby", [[{ old = {} }]]))
  end)
  t.ok(e.message:find("services: unknown key 'old'", 1, true), e.message)
  -- (slurm's is still a function: team/slurm.lua opens its sessions)
  t.eq(type(backends.get("slurm").team_services.slurm), "function")
  t.ok(backends.team_service(backends.get("slurm"), "slurm").open)
  backends.unregister("labby")
end)

t.test("slurm_ssh keeps the ssh service that way", function()
  local ssh = backends.team_service(backends.get("slurm_ssh"), "ssh")
  t.ok(ssh and ssh.apply and ssh.revoke and ssh.prove and ssh.validate)
  t.eq(backends.team_services().ssh[1], "slurm_ssh")
end)

t.test("slurm_ssh's ssh service: its settings are checked", function()
  local dir = t.tmpdir()
  assert(sys.write_file(dir .. "/navette.lua", [[return { name = "v",
    default_profile = "login",
    credentials = {
      ca = { kind = "pem", source = "file", path = "/keys/team_ca" },
      key = { kind = "pem", source = "file", path = "/keys/id" },
      tok = { kind = "bearer", source = "env", env = { token = "T" } } },
    profiles = { login = { backend = "slurm_ssh", storage = "s3://bucket/",
      credentials = { "ca", "tok" },
      s3 = { endpoint = "http://127.0.0.1:9" },
      slurm_ssh = { ssh = { host = "login", user = "me" },
                    credential = "key" } } } }]]))
  local proj = project.load(dir, dir)
  local function load(ssh)
    assert(sys.write_file(dir .. "/team.lua", [[return { name = "vision",
      members = { alice = { name = "A", email = "a@example.com",
                            roles = { "dev" } } },
      roles = { dev = { "submit" } },
      services = { ssh = ]] .. ssh .. [[ } }]]))
    return team.load(proj)
  end
  local p = load([[{ ca = "ca", krl = "/shared/v.krl" }]])
  t.eq(p.services.ssh.principal, "navette-{member}")
  t.eq(p.services.ssh.account, "{member}")
  t.eq(p.services.ssh.lifespan_s, 86400)
  t.eq(p.services.ssh.ca_path, "/keys/team_ca")
  for _, c in ipairs {
    { [[{ krl = "/k" }]], "ca must name a credential of profile login" },
    { [[{ ca = "tok", krl = "/k" }]], "ca: credential 'tok' must be of kind pem" },
    { [[{ ca = "ca", krl = "k.krl" }]], "krl must be the absolute path" },
    { [[{ ca = "ca", krl = "/a/../k" }]], "krl must be the absolute path" },
    { [[{ ca = "ca", krl = "/k", principal = "team" }]],
      "principal must hold {member} once" },
    { [[{ ca = "ca", krl = "/k", account = "a b" }]],
      "account must be the login account" },
    { [[{ ca = "ca", krl = "/k", lifespan = "1m" }]],
      "lifespan must be a duration of 10 minutes to 90 days" },
    { [[{ ca = "ca", krl = "/k", files = "out" }]],
      "files must be the absolute path of a folder" },
    { [[{ ca = "ca", krl = "/k", cert = 1 }]], "unknown key 'cert'" },
  } do
    local e = t.raises(function() load(c[1]) end)
    t.ok(e.message:find("services.ssh: " .. c[2], 1, true),
         c[1] .. " -> " .. e.message)
  end
end)
