-- Project file validation: each mistake is refused with the message and
-- the hint a user sees (path: message), checked before anything runs.
-- (Slurm's own checks are tested with its backend.)
local t = test
local sys = _navette.sys
local project = require "navette.project"

-- { project file, message after "PATH: ", hint (false: not checked) }
local CASES = {
  { [[return { nme = "x" }]],
    "unknown key 'nme' (did you mean 'name'?)",
    "project keys are: name, profiles, default_profile, credentials, datasets, "
    .. "maintenance, team" },
  { [[return { [1] = "x" }]],
    "unknown key '1'",
    "project keys are: name, profiles, default_profile, credentials, datasets, "
    .. "maintenance, team" },
  { [[return { datasets = "/srv/x.csv" }]],
    'datasets must be a table of NAME = { "/absolute/path", ... }',
    nil },
  { [[return { datasets = { ["a b"] = "/x" } }]],
    "datasets: names are letters, digits, '.', '_' and '-'",
    nil },
  { [[return { datasets = { digits = {} } }]],
    "datasets.digits must be a path or a list of paths",
    nil },
  { [[return { datasets = { digits = { "/a/digits.csv.gz", "data/digits.csv.gz" } } }]],
    "datasets.digits[2] must be an absolute path",
    "one per machine kind: the first that exists is uploaded" },
  { [[return { profiles = { a = { backend = "nope" } } }]],
    "profile 'a': unknown backend 'nope'",
    false },
  { [[return { profiles = { a = { backend = 3 } } }]],
    "profile 'a': backend must be a string",
    nil },
  { [[return { profiles = { a = { storag = "file:///x" } } }]],
    "profile 'a': unknown key 'storag' (did you mean 'storage'?)",
    false },
  { [[return { profiles = { a = { storage = "http://x" } } }]],
    "profile 'a': storage must be a file:/// or s3:// URL",
    "for example storage = \"file:///srv/store\" or \"s3://bucket/prefix/\"" },
  { [[return { profiles = { a = { require_pushed = 1 } } }]],
    "profile 'a': require_pushed must be a boolean",
    nil },
  { [[return { profiles = { a = { pinned = "yes" } } }]],
    "profile 'a': pinned must be a boolean",
    nil },
  { [[return { profiles = { a = { remote = 1 } } }]],
    "profile 'a': remote must be a string",
    nil },
  { [[return { profiles = { a = { credentials = 1 } } }]],
    "profile 'a': credentials must be a table: names of the project's "
    .. "credentials, and name = { ... } of its own",
    nil },
  { [[return { credentials = { reg = { kind = "basic", source = "env",
                 env = { user = "U", password = "P" } } },
               profiles = { a = { credentials = { "rg" } } } }]],
    "profile 'a': credentials[1]: 'rg' is not a credential of the project "
    .. "(did you mean 'reg'?)",
    "the project declares: reg" },
  { [[return { profiles = { a = { max_credential_age = "zz" } } }]],
    "profile 'a': max_credential_age must be a duration",
    "for example \"90d\" or \"1h\"" },
  { [[return { profiles = { a = { max_token_lifespan = "zz" } } }]],
    "profile 'a': max_token_lifespan must be a duration",
    "for example \"90d\" or \"1h\"" },
  { [[return { profiles = { a = { max_url_lifetime = "30d" } } }]],
    "profile 'a': max_url_lifetime must be between 1 s and 604800 s",
    nil },
  { [[return { profiles = { a = { url_margin = 0.5 } } }]],
    "profile 'a': url_margin must be between 1 s and 604800 s",
    nil },
  { [[return { profiles = { a = { max_output_bytes = "6GiB" } } }]],
    "profile 'a': max_output_bytes must be a size of at most 5GiB",
    "one output is one POST upload" },
  { [[return { profiles = { a = { s3 = {} } } }]],
    "profile 'a': s3 settings need s3:// storage",
    nil },
  { [[return { profiles = { a = { storage = "s3://bucket-x/p", s3 = { endpont = "x" } } } }]],
    "profile 'a': s3: unknown key 'endpont' (did you mean 'endpoint'?)",
    "s3 keys are: endpoint, region, path_style, credential, ca_bundle, pin" },
  { [[return { profiles = { a = { storage = "s3://bucket-x/p", s3 = { endpoint = "http://h/x" } } } }]],
    "profile 'a': s3.endpoint must be http(s)://HOST[:PORT] without a path, not 'http://h/x'",
    nil },
  { [[return { profiles = { a = { container = 1 } } }]],
    "profile 'a': container must be a table { runtime = \"podman\" }",
    nil },
  { [[return { profiles = { a = { container = { runtim = "x" } } } }]],
    "profile 'a': container: unknown key 'runtim'",
    "container keys are: runtime" },
  { [[return { profiles = { a = { container = { runtime = "a b" } } } }]],
    "profile 'a': container.runtime must name a program (podman, docker, or a path)",
    nil },
  { [[return { profiles = { a = { platform = "amd64" } } }]],
    "profile 'a': platform must be OS/ARCH[/VARIANT]",
    "for example platform = \"linux/amd64\" or \"linux/arm64\" (the nodes', not this machine's)" },
  { [[return { profiles = { a = { platform = 3 } } }]],
    "profile 'a': platform must be OS/ARCH[/VARIANT]",
    "for example platform = \"linux/amd64\" or \"linux/arm64\" (the nodes', not this machine's)" },
  { [[return { profiles = { a = { endpoints = 1 } } }]],
    "profile 'a': endpoints must be a table",
    nil },
  { [[return { profiles = { a = { endpoints = { x = {} } } } }]],
    "profile 'a': endpoints are [\"https://host:port\"] = { ca_bundle = ..., pin = ... }",
    nil },
  { [[return { profiles = { a = { endpoints = { ["https://h"] = { verify = false } } } } }]],
    "profile 'a': endpoint https://h: unknown key 'verify'",
    "TLS verification cannot be switched off" },
  { [[return { profiles = { a = { endpoints = { ["https://h"] = { foo = 1 } } } } }]],
    "profile 'a': endpoint https://h: unknown key 'foo'",
    "keys: ca_bundle, pin" },
  { [[return { profiles = { a = { endpoints = { ["https://h"] = { pin = "x" } } } } }]],
    "profile 'a': endpoint https://h: pin is \"sha256//BASE64\" (navette's pin of a PEM certificate is printed by openssl or _navette.net.pin)",
    nil },
  { [[return { profiles = { a = { platform = "x", endpoints = 1, max_url_lifetime = "30d", container = 1 } } }]],
    "profile 'a': container must be a table { runtime = \"podman\" }",
    nil },
  { [[return { profiles = { a = { endpoints = 1, max_credential_age = "zz" } } }]],
    "profile 'a': endpoints must be a table",
    nil },
  { [[return { profiles = { a = { max_credential_age = "zz", max_url_lifetime = "30d" } } }]],
    "profile 'a': max_credential_age must be a duration",
    "for example \"90d\" or \"1h\"" },
}

t.test("every mistake of a project file is named, with its hint", function()
  for _, c in ipairs(CASES) do
    local dir = t.tmpdir()
    assert(sys.write_file(dir .. "/navette.lua", c[1]))
    local e = t.raises(function() project.load(dir, dir) end)
    t.eq(e.code, "recipe", c[1])
    t.eq(e.message, dir .. "/navette.lua: " .. c[2], c[1])
    if c[3] ~= false then t.eq(e.hint, c[3], c[1] .. " (hint)") end
  end
end)

t.test("a profile's settings are normalised", function()
  local dir = t.tmpdir()
  assert(sys.write_file(dir .. "/navette.lua", [[return { profiles = { a = {
    storage = "s3://bucket-x/p", max_url_lifetime = "2d", url_margin = "1h",
    max_output_bytes = "1GiB", platform = "linux/arm64/v8",
    container = { runtime = "podman" }, max_credential_age = "90d",
    endpoints = { ["https://H:443/x"] = { ca_bundle = "c",
                                          pin = "sha256//x" } } } } }]]))
  local p = project.load(dir, dir).profiles.a
  t.eq(p.max_url_lifetime, 2 * 86400)
  t.eq(p.url_margin, 3600)
  t.eq(p.max_output_bytes, 1024 ^ 3)
  t.eq(p.max_credential_age, 90 * 86400)
  t.eq(p.max_token_lifespan, 3600)
  t.eq(p.platform, "linux/arm64/v8")
  t.eq(p.container.runtime, "podman")
  t.eq(p.endpoints["https://h:443"].pin, "sha256//x")
  t.eq(p.s3.bucket, "bucket-x")
  t.eq(p.s3.root, "p/")
  t.eq(p.require_pushed, true)
  t.eq(p.pinned, false, "not pinned unless it says so")
end)

t.test("pinned = true is kept (production: no floating library ref)",
       function()
  local dir = t.tmpdir()
  assert(sys.write_file(dir .. "/navette.lua",
    [[return { profiles = { prod = { pinned = true } } }]]))
  t.eq(project.load(dir, dir).profiles.prod.pinned, true)
end)
