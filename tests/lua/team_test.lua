-- A team's policy (navette.team): team.lua is validated like navette.lua
-- (each mistake named with the file), the bucket statements give each
-- role exactly its prefixes ({member}: one statement per member, others
-- shared by the role's holders), a revoked member gets none, and a key id
-- two members list is a finding.
local t = test
local sys = _navette.sys
local project = require "navette.project"
local team = require "navette.team"
local team_s3 = require "navette.team.s3"
local team_registry = require "navette.team.registry"

local PROJECT = [[return { name = "v", default_profile = "dev",
  credentials = { adm = { kind = "s3", source = "env",
    env = { access_key_id = "A", secret_access_key = "B" } } },
  profiles = { dev = { storage = "s3://data/runs/",
    s3 = { endpoint = "http://127.0.0.1:9" }, credentials = { "adm" } } } }]]

local function policy(text)
  local dir = t.tmpdir()
  assert(sys.write_file(dir .. "/navette.lua", PROJECT))
  assert(sys.write_file(dir .. "/team.lua", text))
  local proj = project.load(dir, dir)
  return team.load(proj), dir
end

local GOOD = [[return {
  name = "vision",
  members = {
    alice = { name = "Alice", email = "Alice@Example.com", roles = { "dev" },
              keys = { "AKIASHARED" } },
    bob = { name = "Bob", email = "bob@example.com", roles = { "dev", "img" },
            keys = { "AKIASHARED" } },
    carol = { name = "Carol", email = "carol@example.com", roles = { "dev" },
              revoked = true },
  },
  roles = {
    dev = { "submit", "image-pull", ["data-read"] = { "s3://data/sets/" },
            ["data-write"] = { "s3://data/out/{member}/", "s3://data/shared/" } },
    img = { "image-push" },
  },
  services = { s3 = { profile = "dev", admin = "adm" } },
}]]

t.test("a valid policy: members, roles, rights", function()
  local p = policy(GOOD)
  t.eq(p.name, "vision")
  t.eq(p.members.alice.email, "alice@example.com", "emails compared lower")
  t.ok(team.has(p, p.members.bob, "image-push"))
  t.ok(not team.has(p, p.members.alice, "image-push"))
  t.eq(#team.members(p, true), 2, "carol is revoked")
  t.eq(team.member_of(p, "ALICE@example.com").id, "alice")
  t.eq(team.member_of(p, nil, "AKIASHARED").id, "alice")
end)

t.test("a key id two members list is a finding", function()
  local f = team.findings(policy(GOOD))
  t.eq(#f, 1)
  t.ok(f[1]:find("members alice and bob share the credential AKIASH", 1, true), f[1])
end)

t.test("bucket statements: each role its prefixes, {member} each one's",
       function()
  local st = team_s3.statements(policy(GOOD)).data
  local by = {}
  for _, s in ipairs(st) do by[s.Sid] = s end
  local read = by["navette-team-6-vision-read-dev-1"]
  t.eq(table.concat(read.Principal.AWS, " "),
       "arn:aws:iam:::user/alice arn:aws:iam:::user/bob")
  t.eq(table.concat(read.Action, " "), "s3:GetObject")
  t.eq(read.Resource[1], "arn:aws:s3:::data/sets/*")
  local own = by["navette-team-6-vision-write-dev-1-alice"]
  t.eq(own.Principal.AWS[1], "arn:aws:iam:::user/alice")
  t.eq(own.Resource[1], "arn:aws:s3:::data/out/alice/*")
  t.eq(table.concat(own.Action, " "), "s3:GetObject s3:PutObject")
  t.ok(by["navette-team-6-vision-write-dev-1-bob"], "bob's own prefix")
  t.eq(by["navette-team-6-vision-write-dev-1-carol"], nil, "revoked: nothing")
  local shared = by["navette-team-6-vision-write-dev-2"]
  t.eq(#shared.Principal.AWS, 2, "a shared prefix: one statement")
  for _, s in ipairs(st) do
    for _, p in ipairs(s.Principal.AWS) do
      t.ok(not p:find("carol"), "no statement names carol")
    end
  end
end)

t.test("admin: get, put and delete under every prefix the roles name",
       function()
  local text = GOOD:gsub('img = { "image%-push" },',
    'img = { "image-push" },\n    lead = { "admin", ["data-read"] = '
    .. '{ "s3://data/sets/a/", "s3://other/x/" } },')
                   :gsub('roles = { "dev", "img" }', 'roles = { "dev", "img", "lead" }')
  local p = policy(text)
  local prefixes = {}
  for _, d in ipairs(team_s3.admin_prefixes(p)) do prefixes[#prefixes + 1] = d.url end
  t.eq(table.concat(prefixes, " "), "s3://data/out/ s3://data/sets/ "
       .. "s3://data/shared/ s3://other/x/",
       "{member} cut, sets/a/ inside sets/, sorted")
  local all = team_s3.statements(p)
  local by = {}
  for _, list in pairs(all) do
    for _, st in ipairs(list) do by[st.Sid] = st end
  end
  local out = by["navette-team-6-vision-admin-lead-1"]
  t.eq(out.Resource[1], "arn:aws:s3:::data/out/*", "every member's outputs")
  t.eq(table.concat(out.Principal.AWS, " "), "arn:aws:iam:::user/bob")
  t.eq(table.concat(out.Action, " "), "s3:GetObject s3:PutObject s3:DeleteObject")
  t.eq(by["navette-team-6-vision-admin-lead-4"].Resource[1],
       "arn:aws:s3:::other/x/*", "on each bucket")
  for sid, st in pairs(by) do
    if not sid:find("-admin-", 1, true) then
      for _, a in ipairs(st.Action) do
        t.ok(a ~= "s3:DeleteObject", sid .. ": delete only for admin")
      end
    end
  end
end)

t.test("registry: pull, push with image-push, delete only with admin",
       function()
  local function actions(p, id)
    local a = team_registry.actions_of(p, p.members[id])
    return a and table.concat(a, ",") or "none"
  end
  local p = policy(GOOD)
  t.eq(actions(p, "alice"), "pull", "image-pull alone")
  t.eq(actions(p, "bob"), "pull,push", "image-push, no admin: no delete")
  local lead = policy(GOOD:gsub('img = { "image%-push" },',
    'img = { "image-push" },\n    lead = { "admin" },')
    :gsub('roles = { "dev", "img" }', 'roles = { "dev", "img", "lead" }'))
  t.eq(actions(lead, "bob"), "pull,push,delete", "admin")
  t.eq(actions(lead, "alice"), "pull", "the others unchanged")
end)

t.test("mistakes are named with the file", function()
  local cases = {
    { [[return { name = "v", members = {}, roles = { dev = { "sudo" } } }]],
      "role 'dev': unknown right 'sudo'" },
    { [[return { name = "v", roles = { dev = { "submit" } },
        members = { Alice = { name = "A", email = "a@b", roles = { "dev" } } } }]],
      "member 'Alice': member ids are lower-case" },
    { [[return { name = "v", roles = { dev = { "submit" } },
        members = { a = { name = "A", email = "nope", roles = { "dev" } } } }]],
      "member 'a': email must be an address" },
    { [[return { name = "v", roles = { dev = { "submit" } },
        members = { a = { name = "A", email = "a@b", roles = { "ops" } } } }]],
      "member 'a': no role 'ops'" },
    { [[return { name = "v", members = {},
        roles = { dev = { ["data-read"] = { "s3://data/x*" } } } }]],
      "a prefix holds no '*'" },
    { [[return { name = "v", members = {},
        roles = { dev = { ["data-write"] = { "s3://data/{user}/" } } } }]],
      "the only placeholder is {member}" },
    { [[return { name = "v", members = {},
        roles = { dev = { ["data-write"] = { "s3://data/{member}/" } } } }]],
      "{member} must be a whole folder under a prefix of the bucket" },
    { [[return { name = "v", members = {},
        roles = { dev = { ["data-write"] = { "s3://data/users/x-{member}/" } } } }]],
      "{member} must be a whole folder under a prefix of the bucket" },
    { [[return { name = "v", members = {}, roles = {},
        services = { s3 = { profile = "dev", admin = "nobody" } } }]],
      "services.s3.admin must name a credential of profile dev" },
    { [[return { name = "v", members = {}, roles = {},
        services = { ldap = {} } }]],
      "services: unknown key 'ldap'" },
    { [[return { name = "v", members = {}, roles = {},
        quota = { gpus = -1 } }]],
      "quota.gpus must be a whole number" },
  }
  for _, c in ipairs(cases) do
    local e = t.raises(function() policy(c[1]) end)
    t.ok(e.message:find("team.lua: ", 1, true), e.message)
    t.ok(e.message:find(c[2], 1, true), c[2] .. " in: " .. e.message)
  end
end)
