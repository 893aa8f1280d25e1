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
  require("navette.context").enter { credentials = p.prod.credentials,
                                     profile = p.prod }
  local e = refused(function() creds.get("dev_key") end,
                    "belongs to profile 'dev'")
  t.eq(require("navette.errors").exit_status[e.code], 3, "exit 3")
  require("navette.context").enter { credentials = p.dev.credentials,
                                     profile = p.dev }
  refused(function() creds.get("prod_s3") end, "belongs to profile 'prod'")
  require("navette.context").enter()
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
  -- names in the opposite order of the roots' lengths: the profile of
  -- the longest root sorts last, so taking the first owner by name, or
  -- the last, is seen (a three-level nest: the owner sorts in between)
  local dir = t.tmpdir()
  assert(sys.write_file(dir .. "/navette.lua", [[return { name = "n",
    profiles = { base = { storage = "s3://shared/" },
                 vault = { storage = "s3://shared/secret/" } } }]]))
  local p = project.load(dir, dir).profiles
  refused(function()
    isolation.check_url(p.base, "s3://shared/secret/model.bin")
  end, "in the storage of profile 'vault', not of profile 'base'")
  isolation.check_url(p.base, "s3://shared/public/x")
  isolation.check_url(p.vault, "s3://shared/secret/x")
  refused(function()
    isolation.check_url(p.vault, "s3://shared/public/x")
  end, "profile 'base'")
  local dir3 = t.tmpdir()
  assert(sys.write_file(dir3 .. "/navette.lua", [[return { name = "n3",
    profiles = { apex = { storage = "s3://shared/secret/" },
                 lab = { storage = "s3://shared/secret/deep/" },
                 zone = { storage = "s3://shared/" } } }]]))
  p = project.load(dir3, dir3).profiles
  for _, other in ipairs({ "apex", "zone" }) do
    refused(function()
      isolation.check_url(p[other], "s3://shared/secret/deep/w.bin")
    end, "in the storage of profile 'lab', not of profile '" .. other .. "'")
  end
  isolation.check_url(p.lab, "s3://shared/secret/deep/w.bin")
  refused(function()
    isolation.check_url(p.zone, "s3://shared/secret/x")
  end, "profile 'apex'")
end)

-- prod's endpoints and registry on this machine, dev's elsewhere: every
-- way of writing a loopback host names prod's (the host is compared by
-- address, not as text, and all loopback addresses are one host)
local LOOP = [[return { name = "loop",
  profiles = {
    dev = { storage = "s3://dev/",
            endpoints = { ["http://10.0.0.5:6820"] = {} },
            images = { app = "dev-registry.example.com/app:1" } },
    prod = { storage = "s3://prod/",
             endpoints = { ["http://127.0.0.1:6820"] = {},
                           ["http://localhost"] = {} },
             images = { app = "localhost:5000/app:1" } },
  } }]]

t.test("loopback endpoints: every form of the host is the same host",
       function()
  local dir = t.tmpdir()
  assert(sys.write_file(dir .. "/navette.lua", LOOP))
  local p = project.load(dir, dir).profiles
  local forms = { "localhost", "localhost.", "LocalHost", "%6cocalhost",
                  "api.localhost", "127.0.0.1", "127.0.0.1.", "2130706433",
                  "0x7f000001", "0177.0.0.1", "127.1", "127.0.1",
                  "127.0.0.2", "0.0.0.0", "[::1]", "[::ffff:127.0.0.1]",
                  "[::ffff:7f00:1]", "[0:0:0:0:0:0:0:1]", "[::]" }
  for _, h in ipairs(forms) do
    refused(function()
      isolation.check_origin(p.dev, "http://" .. h .. ":6820/slurm/v0.0.40")
    end, "is an endpoint of profile 'prod'")
    refused(function()
      isolation.check_origin(p.dev, "https://user@" .. h .. ":06820/")
    end, "is an endpoint of profile 'prod'")
    -- prod's "http://localhost": its port 80, written or not
    refused(function() isolation.check_origin(p.dev, "http://" .. h .. "/x") end,
            "is an endpoint of profile 'prod'")
    refused(function()
      isolation.check_origin(p.dev, "http://" .. h .. ":80/x")
    end, "is an endpoint of profile 'prod'")
    refused(function() isolation.check_registry(p.dev, h .. ":5000") end,
            "belongs to profile 'prod'")
    -- another port of this machine is no one's
    isolation.check_origin(p.dev, "http://" .. h .. ":6821/")
    isolation.check_registry(p.dev, h .. ":5001")
    -- prod reaches its own, whatever the form
    isolation.check_origin(p.prod, "http://" .. h .. ":6820/")
    isolation.check_registry(p.prod, h .. ":5000")
  end
  -- dev's own endpoint, and a machine nobody names
  isolation.check_origin(p.dev, "http://10.0.0.5:6820/")
  isolation.check_origin(p.dev, "http://0xa000005:6820/")
  isolation.check_origin(p.dev, "http://10.0.0.6:6820/")
  refused(function() isolation.check_origin(p.prod, "http://167772165:6820/") end,
          "is an endpoint of profile 'dev'")
end)

-- Kubernetes: a profile owns the API server of its context (the user's
-- kubeconfig, read once the project is trusted, never before).
t.test("kubernetes: a profile owns its context's API server", function()
  local dir = t.tmpdir()
  assert(sys.write_file(dir .. "/kubeconfig", [[
apiVersion: v1
kind: Config
clusters:
- name: a
  cluster: {server: "https://k8s-a.example.com:6443"}
- name: b
  cluster: {server: "https://k8s-b.example.com"}
users:
- name: u
  user: {token: x}
contexts:
- name: team-a
  context: {cluster: a, user: u}
- name: team-b
  context: {cluster: b, user: u}
current-context: team-b
]]))
  assert(sys.write_file(dir .. "/navette.lua", ([[return {
  name = "kiso",
  profiles = {
    a = { backend = "kubernetes", storage = "s3://team-a/",
          kubernetes = { namespace = "a", context = "team-a",
                         kubeconfig = "%s" } },
    b = { backend = "kubernetes", storage = "s3://team-b/",
          kubernetes = { namespace = "b", kubeconfig = "%s" } },
  },
}]]):format(dir .. "/kubeconfig", dir .. "/kubeconfig")))
  -- untrusted: the kubeconfig the clone names is not read
  local p = project.load(dir, dir).profiles
  isolation.check_origin(p.b, "https://k8s-a.example.com:6443/api")
  require("navette.trust").record(project.at(dir))
  p = project.load(dir, dir).profiles
  refused(function()
    isolation.check_origin(p.b, "https://k8s-a.example.com:6443/api")
  end, "is an endpoint of profile 'a', not of profile 'b'")
  refused(function()
    isolation.check_origin(p.a, "https://K8S-B.example.com:443/apis")
  end, "is an endpoint of profile 'b'")
  isolation.check_origin(p.a, "https://k8s-a.example.com:6443/api")
  isolation.check_origin(p.b, "https://k8s-b.example.com/apis")
  -- another port of that machine is no one's
  isolation.check_origin(p.b, "https://k8s-a.example.com:6444/")
end)
