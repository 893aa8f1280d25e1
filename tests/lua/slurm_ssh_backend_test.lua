-- The slurm_ssh backend's profile checks (what is refused, naming the key
-- and what to do) and the _navette.slurm pieces its sessions use: a job
-- description as sbatch's words, and a listing in squeue --json's shape
-- read with the user's jobs only and an array's task picked; and the
-- edit of a project file that `navette ssh trust` makes (pin_text): an
-- existing host_key replaced, one added after host, that profile's only,
-- and no edit of a shape it does not read safely.
local t = test
local backends = require "navette.backends"
local sys = _navette.sys

local b = backends.get("slurm_ssh")
local FP = "SHA256:" .. string.rep("A", 43)

local function where(storage, cred)
  return { path = "navette.lua", profile = "login",
           storage = storage or "s3://bucket/",
           credentials = { key = cred or { name = "key", kind = "pem",
                                           source = "file",
                                           path = "/home/me/.ssh/id" } } }
end

local function settings(more)
  local s = { ssh = { host = "login.example.org", user = "me",
                      host_key = FP }, credential = "key" }
  for k, v in pairs(more or {}) do s[k] = v end
  return s
end

local function refused(s, w)
  local ok, err = pcall(b.validate, s, w or where())
  t.ok(not ok, "refused")
  t.eq(type(err), "table", "an error object: " .. tostring(err))
  return err.message, err.hint
end

t.test("a valid profile keeps its settings", function()
  local cfg = b.validate(settings { partition = "gpu" }, where())
  t.eq(cfg.host, "login.example.org")
  t.eq(cfg.port, 22)
  t.eq(cfg.identity, "/home/me/.ssh/id")
  t.eq(cfg.host_key, FP)
  t.eq(cfg.partition, "gpu")
  t.eq(cfg.working_directory, "/tmp")
end)

t.test("an ssh-cert credential, of any source, with a signer",
       function()
  local function w(extra)
    local x = where(nil, { name = "key", kind = "ssh-cert",
                           source = "command", command = { "get-key" } })
    for k, v in pairs(extra or {}) do x.credentials[k] = v end
    return x
  end
  local cfg = b.validate(settings(), w())
  t.eq(cfg.credential.kind, "ssh-cert")
  t.eq(cfg.signer, nil)
  cfg = b.validate(settings { signer = { command = { "sign", "-x" } } }, w())
  t.eq(cfg.signer.command[2], "-x")
  t.eq(cfg.signer.margin, 600)
  cfg = b.validate(settings { signer = { ca = "ca", lifetime = "2h" } },
                   w { ca = { name = "ca", kind = "pem", source = "file",
                              path = "/ca" } })
  t.eq(cfg.signer.ca.name, "ca")
  t.eq(cfg.signer.lifetime, 7200)
  t.eq(cfg.signer.principals[1], "me")
  t.eq(cfg.signer.key_id, "navette-me")
  local m = refused(settings { signer = { ca = "nope" } }, w())
  t.ok(m:find("signer.ca must name a declared credential", 1, true), m)
  m = refused(settings { signer = { command = { "a" }, ca = "ca" } }, w())
  t.ok(m:find("signer needs one of command", 1, true), m)
  m = refused(settings { signer = { comand = { "a" } } }, w())
  t.ok(m:find("unknown key 'comand'", 1, true), m)
  -- a signer renews certificates: a pem key has none
  m = refused(settings { signer = { command = { "a" } } })
  t.ok(m:find("a signer renews the certificate", 1, true), m)
  -- a certificate path is for a key read from a file
  m = refused(settings { certificate = "/c" }, w())
  t.ok(m:find("for a key of source file", 1, true), m)
end)

t.test("mistakes are named, with the nearest key", function()
  local m, h = refused(settings { partiton = "gpu" })
  t.ok(m:find("unknown key 'partiton' (did you mean 'partition'?)", 1,
              true), m)
  t.ok(h:find("ssh, credential, certificate", 1, true), h)
  m = refused(settings { ssh = { hots = "x", user = "me" } })
  t.ok(m:find("unknown key 'hots' (did you mean 'host'?)", 1, true), m)
  m = refused(settings(), where("file:///tmp/x"))
  t.ok(m:find("needs s3:// storage", 1, true), m)
  m = refused(settings(), where(nil, { name = "key", kind = "bearer",
                                       source = "env" }))
  t.ok(m:find("must be of kind ssh-cert (any source), or pem with "
              .. "source file", 1, true), m)
  local bad = settings()
  bad.ssh.host_key = "MD5:aa:bb"
  m = refused(bad)
  t.ok(m:find("ssh.host_key must be the host key's SHA256", 1, true), m)
  bad = settings()
  bad.ssh.host = "-oProxyCommand=x"
  m = refused(bad)
  t.ok(m:find("ssh.host must be", 1, true), m)
end)

t.test("a profile with no host key is refused before any connection",
       function()
  local s = settings()
  s.ssh.host_key = nil
  local cfg = b.validate(s, where()) -- the project still loads
  local ok, err = pcall(b.prepare, { name = "j", id = "j-1" },
                        { name = "login", slurm_ssh = cfg })
  t.ok(not ok, "prepare refuses it")
  t.eq(err.code, "refused")
  t.ok(err.message:find("no pinned host key", 1, true), err.message)
  t.ok(err.hint:find("navette ssh trust login", 1, true), err.hint)
end)

t.test("a description as sbatch's words", function()
  local words = assert(_navette.slurm.sbatch_args {
    name = "nv-1", working_directory = "/w", after = "12,13_1",
    array = "0-2", env = { PATH = "/bin" } })
  t.eq(table.concat(words, " "), "--parsable --job-name=nv-1 --chdir=/w "
       .. "--dependency=afterok:12:13_1 --kill-on-invalid-dep=yes "
       .. "--array=0-2 --export=PATH=/bin")
  local none, err = _navette.slurm.sbatch_args {
    name = "nv-1", working_directory = "/w", gpu = 1 }
  t.eq(none, nil)
  t.ok(err.message:find("gpu", 1, true), err.message)
end)

t.test("squeue --json: the user's jobs, an array's task", function()
  local here = debug.getinfo(1, "S").source:match("^@(.*)/[^/]+$")
  local text = assert(sys.read_file(here .. "/../data/slurm/job_array.json"))
  local jobs = assert(_navette.slurm.parse_jobs(text, nil, "root"))
  t.eq(#jobs, 5)
  t.eq(#assert(_navette.slurm.parse_jobs(text, nil, "someone-else")), 0)
  local task = assert(_navette.slurm.parse_jobs(text, nil, "root", 16, 2))
  t.eq(task.job_id, 19)
  t.eq(task.state, "RUNNING")
  -- a task still waiting is read from its array's line
  task = assert(_navette.slurm.parse_jobs(text, nil, "root", 16, 5))
  t.eq(task.state, "PENDING")
  t.eq(task.array_task_id, 5)
  local none, err = _navette.slurm.parse_jobs(text, nil, "root", 99, 0)
  t.eq(none, nil)
  t.eq(err.code, "not_found")
end)

-- pin_text's edit of a project file, read back as Lua
local NEW = "SHA256:" .. string.rep("B", 43)
local function pinned(text, profile)
  local v = assert(load(text, "=navette.lua", "t", {}))()
  return v.profiles[profile].slurm_ssh.ssh.host_key, v
end

t.test("ssh trust's edit: an existing host_key is replaced", function()
  local text = [[
return {
  profiles = {
    -- login = { old notes }
    login = { backend = "slurm_ssh",
      slurm_ssh = { ssh = { host = "a.example", user = "me",
                            host_key = "]] .. FP .. [[" } } },
    other = { slurm_ssh = { ssh = { host = "b", host_key = "]] .. FP
    .. [[" } } },
  },
}
]]
  local out = assert(b.pin_text(text, "login", NEW))
  t.eq(pinned(out, "login"), NEW)
  t.eq(pinned(out, "other"), FP, "another profile's pin is left")
  t.eq(select(2, out:gsub("\n", "")), select(2, text:gsub("\n", "")),
       "no line added")
end)

t.test("ssh trust's edit: one added after host", function()
  local text = [[
return {
  name = "x", default_profile = "login",
  profiles = {
    ["login-2"] = {
      backend = "slurm_ssh", storage = "s3://b/",
      slurm_ssh = {
        ssh = { host = "a.example", port = 2200, user = "me" },
        credential = "key", partition = "gpu",
      },
    },
    last = { slurm_ssh = { ssh = { user = "u", host = 'h' } } },
    login = { description = "ssh = { host = 'not this' }" },
  },
}
]]
  local out = assert(b.pin_text(text, "login-2", NEW))
  local pin, v = pinned(out, "login-2")
  t.eq(pin, NEW)
  t.eq(v.profiles["login-2"].slurm_ssh.ssh.port, 2200, "the rest kept")
  t.match(out, 'host = "a%.example", host_key = "' .. NEW:gsub("%p", "%%%0")
          .. '", port = 2200', "written after host")
  out = assert(b.pin_text(text, "last", NEW))
  t.eq(pinned(out, "last"), NEW, "host last in its table, no comma")
  t.eq(pinned(out, "login-2"), nil, "the other profile untouched")
end)

t.test("ssh trust's edit: a shape not read safely is not edited", function()
  local function no(text, profile, says)
    local out, why = b.pin_text(text, profile or "login", NEW)
    t.eq(out, nil, says)
    t.match(tostring(why), says)
  end
  local node = 'local node = { host = "h" }\n'
  no(node .. [[
return { profiles = { login = { slurm_ssh = { ssh = node } } } }]], nil, "profiles.login.slurm_ssh.ssh is not a table")
  no([[local p = {}
return p]], nil, "does not return a table")
  no([[return { profiles = { login = { slurm_ssh = { ssh = {
  host = "h", host_key = os.getenv("PIN") } } } } }]], nil,
     "host_key is not a plain string")
  no([[return { profiles = { login = { slurm_ssh = { ssh = {
  host = HOST } } } } }]], nil, "no host = ")
  no([[return { profiles = { login = {}, login = { slurm_ssh = { ssh = {
  host = "h" } } } } }]], nil, "a key given twice")
  no([[return { profiles = { login = { slurm_ssh = { ssh = {
  host = "h" } } } } ]], nil, "read safely here")
  no([[return { profiles = { other = { slurm_ssh = { ssh = {
  host = "h" } } } } }]], nil, "profiles.login is not a table")
end)
