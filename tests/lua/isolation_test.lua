-- Profiles share nothing implicitly (navette.isolation): a project-level
-- credential is a definition, granted to a profile that names it (in its
-- credentials list or its settings); a credential, a storage URL, a
-- registry or an endpoint of another profile is refused, naming both
-- profiles, with code refused (exit 3); what no profile names stays
-- usable. Both directions: dev reaching prod's, prod reaching dev's.
local t = test
local sys = _navette.sys
local project = require "navette.project"
local isolation = require "navette.isolation"

local FILE = [[return {
  name = "iso",
  credentials = {
    shared_reg = { kind = "basic", source = "env", host = "reg.example.com:5000",
                   env = { user = "REG_USER", password = "REG_PASSWORD" } },
    prod_s3 = { kind = "s3", source = "env" },
    unused = { kind = "bearer", source = "env", env = { token = "UNUSED_TOKEN" } },
  },
  profiles = {
    dev = {
      storage = "s3://team-data/dev/",
      s3 = { endpoint = "http://127.0.0.1:7480" },
      credentials = { "shared_reg",
                      dev_key = { kind = "hs256", source = "env",
                                  env = { key = "DEV_KEY" } } },
      images = { app = "dev-registry.example.com/app:latest" },
    },
    prod = {
      storage = "s3://prod-data/",
      s3 = { endpoint = "http://127.0.0.1:7480", credential = "prod_s3" },
      images = { app = "prod-registry.example.com:443/app:v1" },
      endpoints = { ["https://prod-api.example.com"] = { pin = "sha256//x" } },
    },
    lab = { storage = "file:///srv/lab/store" },
  },
}]]

local function load()
  local dir = t.tmpdir()
  assert(sys.write_file(dir .. "/navette.lua", FILE))
  return project.load(dir, dir)
end

local function refused(fn, pattern)
  local e = t.raises(fn, pattern)
  t.eq(e.code, "refused", pattern)
  return e
end

t.test("a project-level credential goes only to profiles that name it",
       function()
  local p = load().profiles
  t.ok(p.dev.credentials.shared_reg, "dev lists it")
  t.ok(p.dev.credentials.dev_key, "dev's own")
  t.eq(p.dev.credentials.prod_s3, nil, "dev does not name prod_s3")
  t.ok(p.prod.credentials.prod_s3, "prod's s3.credential names it")
  t.eq(p.prod.credentials.shared_reg, nil)
  t.eq(p.prod.credentials.dev_key, nil, "a profile's own stays its own")
  t.eq(p.lab.credentials.unused, nil)
  t.eq(p["local"].credentials.shared_reg, nil,
       "the built-in local profile gets none when profiles are declared")
end)

t.test("a project without profiles: its local profile has them all",
       function()
  local dir = t.tmpdir()
  assert(sys.write_file(dir .. "/navette.lua", [[return { name = "one",
    credentials = { k = { kind = "bearer", source = "env",
                          env = { token = "K_TOKEN" } } } }]]))
  t.ok(project.load(dir, dir).profiles["local"].credentials.k)
end)

t.test("credentials: another profile's, or the project's not named",
       function()
  local p = load().profiles
  local e = refused(function() isolation.check_credential(p.prod, "dev_key") end,
                    "credential 'dev_key' belongs to profile 'dev', not to "
                    .. "profile 'prod'")
  t.ok(e.hint:find('credentials = { "dev_key" }', 1, true), e.hint)
  refused(function() isolation.check_credential(p.dev, "prod_s3") end,
          "belongs to profile 'prod', not to profile 'dev'")
  refused(function() isolation.check_credential(p.lab, "unused") end,
          "declared by the project, and profile 'lab' does not name it")
  isolation.check_credential(p.dev, "dev_key") -- its own: fine
  isolation.check_credential(p.dev, "nothing") -- unknown: creds says so
end)

t.test("creds.get refuses another profile's credential with exit 3",
       function()
  local p = load().profiles
  local creds = require "navette.creds"
  creds._set_context(p.prod.credentials, p.prod)
  local e = refused(function() creds.get("dev_key") end,
                    "belongs to profile 'dev'")
  t.eq(require("navette.errors").exit_status[e.code], 3, "exit 3")
  creds._set_context(p.dev.credentials, p.dev)
  refused(function() creds.get("prod_s3") end, "belongs to profile 'prod'")
  creds._set_context({}, nil)
end)

t.test("storage URLs: another profile's root is refused both ways",
       function()
  local p = load().profiles
  refused(function()
    isolation.check_url(p.dev, "s3://prod-data/models/x.bin", "input 'm'")
  end, "input 'm': s3://prod%-data/models/x.bin is in the storage of "
       .. "profile 'prod', not of profile 'dev' %(s3://team%-data/dev/%)")
  refused(function()
    isolation.check_url(p.prod, "s3://team-data/dev/a.csv")
  end, "is in the storage of profile 'dev', not of profile 'prod'")
  refused(function()
    isolation.check_url(p.prod, "s3://team-data/dev")
  end, "profile 'dev'")
  -- the same bucket outside dev's prefix: nobody's
  isolation.check_url(p.prod, "s3://team-data/public/a.csv")
  isolation.check_url(p.dev, "s3://team-data/dev/a.csv")
  isolation.check_url(p.dev, "s3://open-datasets/mnist.npz")
  refused(function()
    isolation.check_url(p.dev, "file:///srv/lab/store/run/out.txt")
  end, "profile 'lab'")
  refused(function()
    isolation.check_url(p.dev, "file:///srv/lab/other/../store/x")
  end, "is not a storage URL navette reads")
  -- the forms the store reads as the same path
  refused(function()
    isolation.check_url(p.dev, "file://localhost/srv/lab/store/k")
  end, "profile 'lab'")
  refused(function()
    isolation.check_url(p.dev, "file:///srv/%6Cab/store/k")
  end, "profile 'lab'")
  refused(function()
    isolation.check_url(p.dev, "S3://PROD-DATA/models/x.bin")
  end, "profile 'prod'")
  isolation.check_url(p.lab, "file:///srv/lab/store/x")
  isolation.check_url(p.dev, "file:///srv/lab/storeroom/x")
end)

t.test("registries and endpoints of another profile are refused", function()
  local p = load().profiles
  refused(function()
    isolation.check_registry(p.prod, "dev-registry.example.com")
  end, "registry dev%-registry.example.com belongs to profile 'dev'")
  refused(function()
    isolation.check_registry(p.dev, "prod-registry.example.com:443")
  end, "belongs to profile 'prod'")
  refused(function()
    isolation.check_registry(p.prod, "reg.example.com:5000")
  end, "belongs to profile 'dev'")
  isolation.check_registry(p.dev, "reg.example.com:5000")
  isolation.check_registry(p.dev, "docker.io")
  -- the same registry written otherwise
  refused(function()
    isolation.check_registry(p.prod, "reg.example.com:05000")
  end, "belongs to profile 'dev'")
  refused(function()
    isolation.check_registry(p.dev, "prod-registry.example.com.:443")
  end, "belongs to profile 'prod'")
  refused(function()
    isolation.check_registry(p.prod, "reg.example.com")
  end, "belongs to profile 'dev'")
  refused(function()
    isolation.check_origin(p.dev, "https://prod-api.example.com.:0443/x")
  end, "is an endpoint of profile 'prod'")
  refused(function()
    isolation.check_origin(p.dev, "https://prod-api.example.com/v1/x")
  end, "https://prod%-api.example.com:443 is an endpoint of profile 'prod'")
  -- both profiles' S3 service: shared, not refused
  isolation.check_origin(p.dev, "http://127.0.0.1:7480/x")
end)

t.test("nested roots: the longest root owns what it holds", function()
  local dir = t.tmpdir()
  assert(sys.write_file(dir .. "/navette.lua", [[return { name = "n",
    profiles = { wide = { storage = "s3://shared/" },
                  narrow = { storage = "s3://shared/secret/" } } }]]))
  local p = project.load(dir, dir).profiles
  refused(function()
    isolation.check_url(p.wide, "s3://shared/secret/model.bin")
  end, "in the storage of profile 'narrow', not of profile 'wide'")
  isolation.check_url(p.wide, "s3://shared/public/x")
  isolation.check_url(p.narrow, "s3://shared/secret/x")
  refused(function()
    isolation.check_url(p.narrow, "s3://shared/public/x")
  end, "profile 'wide'")
end)
