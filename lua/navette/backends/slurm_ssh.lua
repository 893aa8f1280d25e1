-- The slurm_ssh backend: jobs on a Slurm cluster reached the way most
-- users reach one, through SSH to a login node where sbatch, squeue and
-- scancel are on the PATH. Everything else is as on the slurm backend
-- (slurmrestd): the node launcher, S3 storage and presigned URLs, the
-- job logic of navette.slurm.logic and the settings of
-- navette.slurm.settings; this file is only the wire: OpenSSH's own ssh
-- (_navette.ssh), the host key pinned in the profile and nothing else
-- trusted, one ControlMaster per run.
--
-- On the login node: `sbatch --parsable` with the batch script on its
-- standard input (an array for a sweep, one call), one `squeue --json`
-- for all of the user's jobs per look (Slurm 22.05's ignores -j, and
-- sacct needs accounting), `scancel ID` or `scancel ID_TASK`.
local errors = require "navette.errors"
local term = require "navette.term"
local util = require "navette.util"
local logic = require "navette.slurm.logic"
local settings = require "navette.slurm.settings"
local util = require "navette.util"
local slurm, ssh = _navette.slurm, _navette.ssh
local ssh_cert, creds_native = _navette.ssh_cert, _navette.creds
local sys, core = _navette.sys, _navette.core

local M = { name = "slurm_ssh" }

local KEYS = { "ssh", "credential", "certificate", "signer" }
for _, k in ipairs(settings.KEYS) do KEYS[#KEYS + 1] = k end
local SSH_KEYS = { "host", "port", "user", "host_key", "proxy_jump" }
local SIGNER_KEYS = { "command", "ca", "key_id", "principals", "lifetime",
                      "margin" }
-- a certificate with less than this left is renewed by the signer first
-- (the login needs it only at the ControlMaster's start)
local RENEW_MARGIN = 600
-- seconds a ControlMaster outlives its last command
local CONTROL_PERSIST = 60
-- a look at the jobs is reused this long, by every session onto the same
-- login node and user (each row of a listing opens one: one squeue for
-- all of them)
local SNAPSHOT_FOR = 2
-- the longest answer of squeue --json (about 4 KiB a job)
local LIST_MAX = 32 * 1024 * 1024

-- ---- the profile -----------------------------------------------------------

M.profile_keys = KEYS
M.dependencies = true
M.retries = true
M.checkpoints = true
M.launch = settings.launch
M.settings_doc = "Slurm through SSH settings (backend = \"slurm_ssh\"): "
  .. "see `navette help slurm`."

local function trust_hint(profile)
  return "run `navette ssh trust " .. tostring(profile) .. "` once, or "
    .. "write the login node's host key fingerprint (ssh-keygen -lf "
    .. "/etc/ssh/ssh_host_ed25519_key.pub on the node, or your admins') "
    .. "as ssh.host_key = \"SHA256:...\""
end

-- Validates slurm_ssh.signer (s): { command = { ... } } or { ca = NAME,
-- key_id = ..., principals = { ... }, lifetime = "1h" }, and margin.
local function check_signer(s, where, user, fail)
  if s == nil then return nil end
  if type(s) ~= "table" then
    fail("signer must be { command = { \"program\", ... } } or { ca = "
         .. "\"CREDENTIAL\" }")
  end
  settings.check_keys(s, SIGNER_KEYS, "slurm_ssh.signer", fail)
  if (s.command == nil) == (s.ca == nil) then
    fail("signer needs one of command (a program given the public key, "
         .. "printing {\"Certificate\": ...}) and ca (a credential holding "
         .. "the CA's private key)")
  end
  local out = {}
  if s.command ~= nil then
    if type(s.command) ~= "table" or #s.command == 0 or #s.command > 32 then
      fail("signer.command must be { \"program\", \"arg\", ... }")
    end
    out.command = {}
    for i, a in ipairs(s.command) do
      if type(a) ~= "string" then fail("signer.command: words are strings") end
      out.command[i] = a
    end
  else
    local ca = type(s.ca) == "string" and where.credentials[s.ca]
    if not ca or (ca.kind ~= "pem" and ca.kind ~= "ssh-cert") then
      fail("signer.ca must name a declared credential of kind pem or "
           .. "ssh-cert holding the SSH CA's private key",
           "declare it under credentials = { ... }, for example { kind = "
           .. "\"pem\", source = \"keychain\", ... }")
    end
    out.ca = ca
    out.key_id = s.key_id or ("navette-" .. user)
    if type(out.key_id) ~= "string" or not out.key_id:match("^[%w][%w._@-]*$")
       or #out.key_id > 128 then
      fail("signer.key_id must be letters, digits, '.', '_', '@' and '-'")
    end
    out.principals = {}
    for i, p in ipairs(s.principals or { user }) do
      if type(p) ~= "string" or not p:match("^[%w_][%w._@-]*$") then
        fail("signer.principals must be user names on the login node")
      end
      out.principals[i] = p
    end
    if #out.principals == 0 then
      fail("signer.principals must name at least one principal")
    end
    out.lifetime = util.parse_duration(s.lifetime or 3600)
    if not out.lifetime or out.lifetime < 60 or out.lifetime > 366 * 86400 then
      fail("signer.lifetime must be a duration from 1m to 366d")
    end
  end
  out.margin = util.parse_duration(s.margin or RENEW_MARGIN)
  if not out.margin or out.margin < 0 then
    fail("signer.margin must be a duration (renew when less is left)")
  end
  return out
end

-- Validates profile.slurm_ssh (t). A profile with no host_key is valid
-- (so that the project loads) but refused before any connection.
function M.validate(t, where)
  local name = where.profile
  local fail = require("navette.backends").profile_fail(where, "slurm_ssh")
  if type(t) ~= "table" then
    fail("a slurm_ssh profile needs slurm_ssh = { ssh = { host = ..., "
         .. "user = ..., host_key = \"SHA256:...\" }, identity = ... }")
  end
  settings.check_keys(t, KEYS, "slurm_ssh", fail)
  if not where.storage:match("^s3://") then
    fail("the slurm_ssh backend needs s3:// storage", "the node reads "
         .. "its inputs and publishes its outputs there, with presigned "
         .. "URLs")
  end
  local s = t.ssh
  if type(s) ~= "table" then
    fail("ssh must be a table { host = ..., port = 22, user = ..., "
         .. "host_key = \"SHA256:...\" }")
  end
  settings.check_keys(s, SSH_KEYS, "slurm_ssh.ssh", fail)
  if type(s.host) ~= "string" or not s.host:match("^[%w][%w.:-]*$") then
    fail("ssh.host must be the login node's host name or address")
  end
  if s.port ~= nil and (math.type(s.port) ~= "integer" or s.port < 1
                        or s.port > 65535) then
    fail("ssh.port must be a port number from 1 to 65535")
  end
  if type(s.user) ~= "string" or not s.user:match("^[%a_][%w._-]*$") then
    fail("ssh.user must be your user name on the login node")
  end
  if s.host_key ~= nil and (type(s.host_key) ~= "string"
     or not s.host_key:match("^SHA256:[%w+/]+$") or #s.host_key ~= 50) then
    fail("ssh.host_key must be the host key's SHA256 fingerprint, "
         .. "\"SHA256:\" and 43 characters", trust_hint(name))
  end
  if s.proxy_jump ~= nil and (type(s.proxy_jump) ~= "string"
     or not s.proxy_jump:match("^[%w._@:%[%]-]+$")) then
    fail("ssh.proxy_jump must be one jump host, [user@]host[:port]")
  end
  if type(t.credential) ~= "string" then
    fail("credential must name a declared credential: kind ssh-cert (a "
         .. "key and its certificate), or pem with source file (the path "
         .. "of your SSH private key)")
  end
  local cred = where.credentials[t.credential]
  if not cred then
    fail("credential '" .. t.credential .. "' is not declared",
         "declare it under credentials = { ... } in navette.lua")
  end
  local certified = cred.kind == "ssh-cert"
  if not certified and (cred.kind ~= "pem" or cred.source ~= "file") then
    fail("credential '" .. t.credential .. "' must be of kind ssh-cert "
         .. "(any source), or pem with source file (the private key's "
         .. "path: ssh reads the key itself)")
  end
  if cred.source == "file" and cred.path:sub(1, 1) ~= "/" then
    fail("credential '" .. t.credential .. "': the key's path must be "
         .. "absolute")
  end
  if t.certificate ~= nil and (type(t.certificate) ~= "string"
     or t.certificate:sub(1, 1) ~= "/" or cred.source ~= "file") then
    fail("certificate must be the absolute path of the key's "
         .. "certificate (KEY-cert.pub), signed by the cluster's SSH CA, "
         .. "for a key of source file")
  end
  local signer = check_signer(t.signer, where, s.user, fail)
  if signer and not certified then
    fail("a signer renews the certificate of a credential of kind "
         .. "ssh-cert; '" .. t.credential .. "' is of kind " .. cred.kind)
  end
  return settings.check(t, fail, {
    profile = name, host = s.host, port = s.port or 22, user = s.user,
    host_key = s.host_key, proxy_jump = s.proxy_jump,
    credential = cred, identity = cred.path,
    certificate = t.certificate or cred.certificate, signer = signer,
  })
end

-- A profile whose login node has no pinned key goes nowhere.
local function need_pin(cfg)
  if not cfg.host_key then
    error(errors.new("refused", "profile '" .. tostring(cfg.profile)
                     .. "': the login node " .. tostring(cfg.host)
                     .. " has no pinned host key (slurm_ssh.ssh.host_key)"
                     .. "; nothing was sent", trust_hint(cfg.profile)), 0)
  end
end

function M.prepare(spec, profile)
  need_pin(profile.slurm_ssh)
  settings.prepare(spec, profile, profile.slurm_ssh)
end

function M.nodes(profile)
  return profile.slurm_ssh.nodes
end

-- ---- the connection ----------------------------------------------------------

local function where_of(cfg)
  return "the login node " .. tostring(cfg.user) .. "@"
    .. tostring(cfg.host) .. ":" .. tostring(cfg.port)
end

local function fail_open(cfg, message, hint)
  error(errors.new("refused", where_of(cfg) .. ": " .. message, hint), 0)
end

-- The folder of the ControlMaster sockets: short (a socket's path has at
-- most 86 bytes), ours, mode 0700, not a link (a client trusts whatever
-- listens there).
local function runtime_dir(cfg)
  local base = sys.getenv("XDG_RUNTIME_DIR")
  local dir
  if base and base:sub(1, 1) == "/" and #base <= 40 then
    dir = base .. "/navette"
  else
    dir = "/tmp/navette-" .. (sys.identity()):gsub("[^%w._-]", "_")
  end
  local ok, err = sys.mkdir_p(dir, 448)
  local st = sys.stat(dir)
  local home = sys.stat(core.home())
  if not ok or not st or st.type ~= "directory" or st.mode ~= 448
     or (home and st.uid ~= home.uid) then
    fail_open(cfg, dir .. " cannot hold navette's ssh sockets (it must "
              .. "be a folder of yours, mode 0700, not a link)"
              .. (err and (": " .. err.message) or ""),
              "remove it, or set XDG_RUNTIME_DIR to a short folder of "
              .. "yours")
  end
  return dir
end

-- "[host]:port" as known_hosts writes a host on a port other than 22
local function host_token(cfg)
  if cfg.port == 22 then return cfg.host:lower() end
  return "[" .. cfg.host:lower() .. "]:" .. cfg.port
end

-- The known_hosts file navette owns for the profile, holding only the
-- pinned key: written from the host's keys (ssh-keyscan: no login, no
-- command) when it lacks that key; refused when the host shows another.
local function known_hosts(cfg)
  local dir = core.home() .. "/ssh"
  local file = dir .. "/" .. tostring(cfg.profile) .. ".known_hosts"
  local token = host_token(cfg)
  local text = sys.read_file(file, 1024 * 1024)
  for line in (text or ""):gmatch("[^\n]+") do
    if line:match("^(%S+)") == token and ssh.fingerprint(line)
       == cfg.host_key then
      return file
    end
  end
  if cfg.proxy_jump then
    fail_open(cfg, "navette cannot fetch the host key through a jump "
              .. "host yet", "write the login node's known_hosts line into "
              .. file)
  end
  local scanned, err = ssh.scan { host = cfg.host, port = cfg.port }
  if not scanned then
    error(errors.new(err.code == "not_run" and "not_run" or "backend",
                     where_of(cfg) .. ": " .. err.message, err.hint), 0)
  end
  local shown = {}
  for line in scanned:gmatch("[^\n]+") do
    if not line:match("^#") then
      local fp = ssh.fingerprint(line)
      local kind, b64 = line:match("^%S+%s+(%S+)%s+(%S+)")
      if fp == cfg.host_key and kind then
        local entry = assert(ssh.known_hosts_line(cfg.host, cfg.port, kind,
                                                  b64))
        assert(sys.mkdir_p(dir, 448))
        assert(sys.write_file(file, entry .. "\n", 384))
        return file
      end
      if fp then shown[#shown + 1] = kind .. " " .. fp end
    end
  end
  error(errors.new("refused", where_of(cfg) .. ": the host key is not "
                   .. "the one pinned in profile '" .. tostring(cfg.profile)
                   .. "' (pinned " .. cfg.host_key .. ", the host shows "
                   .. (#shown > 0 and table.concat(shown, ", ") or "none")
                   .. "); nothing was sent",
                   "if the key was changed on purpose, check the new "
                   .. "fingerprint with the cluster's admins, then "
                   .. trust_hint(cfg.profile) .. "; if not, someone may "
                   .. "be in the way"), 0)
end

-- ---- the key and its certificate --------------------------------------------

-- [credential name] = the handle holding a certificate a signer gave this
-- process (each process asks the signer once, while it lasts)
local renewed = {}

local function span(seconds)
  seconds = math.floor(math.abs(seconds))
  if seconds >= 86400 then return (seconds // 86400) .. " d" end
  if seconds >= 3600 then return (seconds // 3600) .. " h" end
  if seconds >= 60 then return (seconds // 60) .. " min" end
  return seconds .. " s"
end

-- A fresh certificate for handle's key from the profile's signer.
local function renew(cfg, handle)
  local s, opts = cfg.signer, nil
  if s.command then
    opts = { command = s.command }
  else
    local ca, err = creds_native.load(s.ca)
    if not ca then
      error(errors.new(err.code == "not_run" and "not_run" or "refused",
                       where_of(cfg) .. ": the signer's CA credential '"
                       .. tostring(s.ca.name) .. "' cannot be loaded: "
                       .. err.message, err.hint), 0)
    end
    opts = { ca = ca, key_id = s.key_id, principals = s.principals,
             lifetime = s.lifetime, serial = math.floor(sys.now()),
             dir = runtime_dir(cfg) }
  end
  local fresh, err = ssh_cert.sign(handle, opts)
  if not fresh then
    error(errors.new(err.code == "not_run" and "not_run" or "refused",
                     where_of(cfg) .. ": the profile's signer gave no "
                     .. "certificate: " .. err.message,
                     err.hint or "check slurm_ssh.signer"), 0)
  end
  local c = fresh:info().certificate
  if not c or (c.valid_before or math.huge) <= sys.now() + 60 then
    error(errors.new("refused", where_of(cfg) .. ": the signer's "
                     .. "certificate is already expired; nothing was sent",
                     "check the signer's validity (-V) and this "
                     .. "machine's clock"), 0)
  end
  return fresh
end

-- The key ssh logs in with: {identity, certificate} (paths ssh reads),
-- or {handle, write = true} for a key and certificate that navette holds
-- (from another source than a file, or renewed): written 0600 into the
-- 0700 runtime folder around each ssh call (ssh reads them only at the
-- login) and removed after it. An ssh-cert's certificate is checked
-- first: renewed by the signer when less than its margin is left; an
-- expired one with no signer is refused here, before any connection.
local function login_key(cfg)
  local d = cfg.credential
  if d.kind ~= "ssh-cert" then
    return { identity = cfg.identity, certificate = cfg.certificate,
             id = cfg.identity .. "\0" .. tostring(cfg.certificate) }
  end
  if d.source == "file" and cfg.certificate then
    local copy = {}
    for k, v in pairs(d) do copy[k] = v end
    copy.certificate = cfg.certificate
    d = copy
  end
  local handle = renewed[d.name]
  -- a renewed certificate lives in memory only: written for each call
  local fresh = handle ~= nil
  if not handle then
    local err
    handle, err = creds_native.load(d)
    if not handle then
      error(errors.new(err.code == "not_run" and "not_run" or "refused",
                       where_of(cfg) .. ": the ssh credential '"
                       .. tostring(d.name) .. "' cannot be loaded: "
                       .. err.message, err.hint), 0)
    end
  end
  local cert = handle:info().certificate
  local now = sys.now()
  local left = cert and (cert.valid_before or math.huge) - now
  if not cert or left < (cfg.signer and cfg.signer.margin or 0) then
    if cfg.signer then
      handle = renew(cfg, handle)
      renewed[d.name] = handle
      cert, fresh = handle:info().certificate, true
    elseif not cert then
      fail_open(cfg, "credential '" .. d.name .. "' holds no certificate "
                .. "and the profile names no signer; nothing was sent",
                "have the key signed by the cluster's SSH CA (ssh-keygen "
                .. "-s CA -I ID -n PRINCIPAL -V +1h KEY.pub), or name a "
                .. "signer: slurm_ssh.signer = { command = { ... } }")
    elseif left <= 0 then
      fail_open(cfg, "the certificate of credential '" .. d.name
                .. "' (key id \"" .. cert.key_id .. "\", serial "
                .. cert.serial .. ") expired at "
                .. sys.iso8601(cert.valid_before) .. ", " .. span(left)
                .. " ago; nothing was sent",
                "get a new one from your SSH CA (for example `ssh-keygen "
                .. "-s CA -I ID -n PRINCIPAL -V +1h KEY.pub`), see it "
                .. "with `navette creds check " .. d.name .. "`, or name "
                .. "a signer that renews it: slurm_ssh.signer = { "
                .. "command = { ... } } or { ca = \"CREDENTIAL\" }")
    end
  end
  local id = d.name .. "\0" .. cert.fingerprint .. "\0" .. cert.serial
  if d.source == "file" and not fresh then
    return { identity = d.path, id = id, handle = handle,
             certificate = d.certificate or (d.path .. "-cert.pub") }
  end
  return { handle = handle, write = true, id = id }
end

-- A session's ssh options for cfg (opened: host key, folder, socket,
-- the key).
local function target(cfg)
  need_pin(cfg)
  local key = login_key(cfg)
  local kh = known_hosts(cfg)
  local name = sys.sha256(table.concat({ cfg.host, tostring(cfg.port),
    cfg.user, tostring(cfg.proxy_jump), cfg.host_key, key.id }, "\0"))
    :sub(1, 16)
  local dir = runtime_dir(cfg)
  return {
    host = cfg.host, port = cfg.port, user = cfg.user, known_hosts = kh,
    identity = key.identity, certificate = key.certificate,
    proxy_jump = cfg.proxy_jump,
    control_path = dir .. "/" .. name,
    control_persist = CONTROL_PERSIST,
  }, key, dir
end

-- ---- sessions (navette.slurm.logic's interface) -------------------------------

local Session = {}
Session.__index = Session
-- [control path] = the last look at the jobs {at, text, jobs}
local snapshots = {}
-- > 0 while a listing walks its rows (the wire's hold): every look of
-- the walk is served by the answer it first got, however long the walk
local holding = 0

-- words on the login node, stdin its input -> result | nil, err
function Session:run(words, stdin, max_output)
  assert(not self.closed, "slurm_ssh: session used after close")
  local opts = {}
  for k, v in pairs(self.target) do opts[k] = v end
  opts.command, opts.stdin, opts.max_output = words, stdin, max_output
  local written, err
  if self.login.write then
    -- for this call only: a running ControlMaster reads neither
    written, err = ssh_cert.write_identity(self.login.handle, self.dir)
    if not written then
      err.message = where_of(self.cfg) .. ": " .. err.message
      return nil, err
    end
    opts.identity, opts.certificate = written.identity, written.certificate
  end
  local r
  r, err = ssh.run(opts)
  if written then
    sys.remove(written.identity)
    if written.certificate then sys.remove(written.certificate) end
  end
  if not r then
    err.message = where_of(self.cfg) .. ": " .. err.message
    return nil, err
  end
  return r
end

local function said(r)
  local text = (r.stderr or ""):gsub("%s+$", ""):gsub("\n", " / ")
  return #text > 300 and (text:sub(1, 300) .. "...") or text
end

-- nothing reached Slurm for sure after these failures of ssh
local NOT_SENT = { host_key = true, denied = true, no_ssh = true,
                   not_run = true, unreachable = true }

function Session:submit(script, desc)
  local words, err = slurm.sbatch_args(desc)
  if not words then return nil, err, true end
  table.insert(words, 1, "sbatch")
  local r
  r, err = self:run(words, script, 64 * 1024)
  if not r then return nil, err, NOT_SENT[err.reason] == true end
  snapshots[self.key] = nil
  local id = r.stdout:match("^%s*(%d+)[;%s]")
             or r.stdout:match("^%s*(%d+)$")
  if r.status == 0 and id then return math.tointeger(tonumber(id)) end
  local message = said(r)
  local sure = r.status ~= 0
    and not message:match("[Tt]imed out") and not message:match("contact")
  return nil, { code = sure and "refused" or "backend",
                message = where_of(self.cfg) .. ": sbatch "
                  .. (r.status ~= 0 and ("failed (status " .. r.status
                                         .. "): " .. message)
                      or "printed no job id") },
         sure
end

-- The user's jobs in one squeue --json, kept SNAPSHOT_FOR seconds.
function Session:listing()
  local now = sys.now()
  local snap = snapshots[self.key]
  if snap and (holding > 0
               or now - snap.at >= 0 and now - snap.at < SNAPSHOT_FOR) then
    return snap
  end
  local r, err = self:run({ "squeue", "--json" }, nil, LIST_MAX)
  if not r and err.reason == "too_big" then
    err.message = where_of(self.cfg) .. ": squeue --json printed more "
      .. "than " .. (LIST_MAX // (1024 * 1024)) .. " MiB, the most one "
      .. "look at the jobs reads"
    err.hint = "check `squeue -u " .. self.cfg.user .. " | wc -l` on the "
      .. "login node (very many jobs?) and what its shell profile prints"
  end
  if not r then return nil, err end
  if r.status ~= 0 then
    return nil, { code = "backend", message = where_of(self.cfg)
                  .. ": squeue --json failed (status " .. r.status .. "): "
                  .. said(r), hint = "Slurm 21.08 or later has squeue "
                  .. "--json; check `squeue --json` on the login node" }
  end
  local jobs
  jobs, err = slurm.parse_jobs(r.stdout, nil, self.cfg.user)
  if not jobs then
    -- (the parser is slurmrestd's, whose JSON squeue --json prints)
    err.message = where_of(self.cfg) .. ": "
      .. err.message:gsub("slurmrestd", "squeue --json")
    err.hint = "check `squeue --json` on the login node: its JSON must "
      .. "be Slurm's own, with nothing else printed into it"
    return nil, err
  end
  snap = { at = now, text = r.stdout, jobs = jobs }
  snapshots[self.key] = snap
  return snap
end

function Session:jobs()
  local snap, err = self:listing()
  if not snap then return nil, err end
  return snap.jobs
end

function Session:find(q)
  local snap, err = self:listing()
  if not snap then return nil, err end
  local best, matches = nil, 0
  for _, job in ipairs(snap.jobs) do
    if job.name == q.name then
      matches = matches + 1
      if not best or job.job_id > best.job_id then best = job end
    end
  end
  if not best then
    return nil, { code = "not_found", message = "no Slurm job of user "
                  .. self.cfg.user .. " named '" .. tostring(q.name) .. "'" }
  end
  return best, matches
end

function Session:job(id, task)
  local snap, err = self:listing()
  if not snap then return nil, err end
  if task then
    return slurm.parse_jobs(snap.text, nil, self.cfg.user, id, task)
  end
  for _, job in ipairs(snap.jobs) do
    if job.job_id == id and not job.array_task_id then return job end
  end
  return nil, { code = "not_found", message = "Slurm has no job " .. id
                .. " of user " .. self.cfg.user }
end

function Session:cancel(id, task)
  local job = self:job(id, task)
  local was_done = job ~= nil and slurm.map_state(job).done
  local ref = task and (id .. "_" .. task) or tostring(id)
  local r, err = self:run({ "scancel", ref }, nil, 64 * 1024)
  if not r then return nil, err end
  snapshots[self.key] = nil
  if r.status ~= 0 then
    return nil, { code = "backend", message = where_of(self.cfg)
                  .. ": scancel " .. ref .. " failed (status " .. r.status
                  .. "): " .. said(r) }
  end
  return true, was_done
end

-- Closing a run's session ends its ControlMaster; a status look's leaves
-- it for the next look (it ends by itself CONTROL_PERSIST seconds on).
function Session:close()
  if self.closed then return end
  self.closed = true
  if self.owner then ssh.exit_master(self.target.control_path) end
end

local function open(cfg, owner)
  local t, login, dir = target(cfg)
  return setmetatable({ cfg = cfg, target = t, owner = owner,
                        key = t.control_path or "", login = login,
                        dir = dir }, Session)
end

local function status_session(cfg)
  return open(cfg, false)
end

-- The run's session (in ctx.sessions: closed, with its ControlMaster,
-- when the run is submitted).
local function session_for(spec, ctx)
  local cfg = spec.slurm
  local cache = ctx.sessions
  local key = table.concat({ "slurm_ssh", cfg.host, tostring(cfg.port),
                             cfg.user, tostring(cfg.host_key) }, "\0")
  local session = cache and cache[key]
  if session then return true, session end
  local ok
  ok, session = pcall(open, cfg, cache ~= nil)
  if ok and cache then cache[key] = session end
  return ok, session
end

-- submission, observation, reading back: the logic's, over this wire
logic.backend(M, {
  name = M.name,
  service = "login node",
  where = where_of,
  session = session_for,
  status_session = status_session,
  check_desc = slurm.check_desc,
  map_state = slurm.map_state,
  hold = function(on) holding = math.max(0, holding + (on and 1 or -1)) end,
})

-- ---- what other modules ask of a backend ----------------------------------------

function M.origins(profile)
  local cfg = profile.slurm_ssh
  return { cfg and ("ssh://" .. cfg.user .. "@" .. cfg.host .. ":"
                    .. cfg.port) }
end

function M.spec_credentials(spec)
  return { spec.slurm and spec.slurm.credential }
end

-- ---- first contact: navette ssh trust PROFILE ---------------------------

-- Calls fn(i, depth) for each character of text from `from` on that is
-- outside strings and comments, depth the braces open since from (after
-- a "{", before a "}"), until fn returns true. False when a string or a
-- comment is not closed.
local function walk(text, from, fn)
  local depth, i, n = 0, from, #text
  while i <= n do
    local c = text:sub(i, i)
    local long = text:match("^%-%-%[(=*)%[", i) or (c == "["
                 and text:match("^%[(=*)%[", i))
    if long then
      local close = text:find("]" .. long .. "]", i, true)
      if not close then return false end
      i = close + #long + 1
    elseif c == "-" and text:sub(i + 1, i + 1) == "-" then
      i = text:find("\n", i, true) or n
    elseif c == '"' or c == "'" then
      local j = i + 1
      while text:sub(j, j) ~= c do
        local d = text:sub(j, j)
        if d == "" or d == "\n" then return false end
        j = j + (d == "\\" and 2 or 1)
      end
      i = j
    else
      if c == "{" then depth = depth + 1 end
      if fn(i, depth) then return true end
      if c == "}" then depth = depth - 1 end
    end
    i = i + 1
  end
  return true
end

-- The top-level fields of the table whose "{" is at open: {name = the
-- index where its value starts}; nil when a name comes twice, the table
-- is not closed or a string in it is not.
local function fields(text, open)
  local out, twice, closed = {}, false, false
  local ok = walk(text, open, function(i, depth)
    if depth ~= 1 then return false end
    if text:sub(i, i) == "}" then
      closed = true
      return true
    end
    local prev = i > 1 and text:sub(i - 1, i - 1) or ""
    local name, at
    if not prev:match("[%w_]") then
      name, at = text:match("^([%a_][%w_]*)%s*=()", i)
    end
    if not name then
      name, at = text:match("^%[%s*[\"']([%w_-]+)[\"']%s*%]%s*=()", i)
    end
    if name and text:sub(at, at) ~= "=" then
      if out[name] then twice = true end
      out[name] = text:match("^%s*()", at)
    end
    return false
  end)
  if not ok or twice or not closed then return nil end
  return out
end

-- Text with host_key = fp written into profile's slurm_ssh.ssh table: an
-- existing host_key's string replaced, or one added after its host
-- field. nil and why when the file is not of a shape read safely here
-- (`return { ... profiles = { NAME = { slurm_ssh = { ssh = { host =
-- "..." ...` with tables and strings written out).
function M.pin_text(text, profile, fp)
  local root
  walk(text, 1, function(i, depth)
    if depth == 0 and text:match("^return%s*{", i)
       and not (text:sub(i - 1, i - 1)):match("[%w_]") then
      root = text:match("^return%s*(){", i)
      return true
    end
  end)
  if not root then return nil, "it does not return a table written out" end
  local at, path = root, { "profiles", profile, "slurm_ssh", "ssh" }
  for k, key in ipairs(path) do
    local f = fields(text, at)
    if not f then
      return nil, "a table around " .. table.concat(path, ".", 1, k)
        .. " is not one read safely here (a key given twice, a string "
        .. "not closed)"
    end
    at = f[key]
    if not at or text:sub(at, at) ~= "{" then
      return nil, table.concat(path, ".", 1, k) .. " is not a table "
        .. "written out in it"
    end
  end
  local f = fields(text, at)
  if not f then return nil, "its ssh table is not one read safely here" end
  local pin = "\"" .. fp .. "\""
  local function literal(start)
    local q = text:sub(start, start)
    if q ~= '"' and q ~= "'" then return nil end
    local stop = text:find(q, start + 1, true)
    local inner = stop and text:sub(start + 1, stop - 1)
    if not inner or inner:find("[\\\n]") then return nil end
    return stop
  end
  if f.host_key then
    local stop = literal(f.host_key)
    if not stop then
      return nil, "its ssh.host_key is not a plain string"
    end
    return text:sub(1, f.host_key - 1) .. pin .. text:sub(stop + 1)
  end
  local stop = f.host and literal(f.host)
  if not stop then
    return nil, "its ssh table has no host = \"...\" written out"
  end
  local comma = text:match("^[ \t]*(),", stop + 1)
  if comma then
    return text:sub(1, comma) .. " host_key = " .. pin .. ","
      .. text:sub(comma + 1)
  end
  return text:sub(1, stop) .. ", host_key = " .. pin .. text:sub(stop + 1)
end

-- The login node's host key as first contact sees it: ssh connects once,
-- takes whatever key the host shows into a throwaway known_hosts file (in
-- a fresh folder, mode 0700), tries no login and runs nothing. -> {line
-- (known_hosts, as navette writes it), kind, fingerprint}.
local function first_contact(cfg)
  local dir = core.home() .. "/tmp/ssh-trust-" .. sys.random_hex(8)
  local ok, err = sys.mkdir_p(dir, 448)
  local st = sys.stat(dir)
  if not ok or not st or st.type ~= "directory" or st.mode ~= 448 then
    sys.remove_tree(dir)
    error(errors.new("io", dir .. ": cannot make a private folder for "
                     .. "the host key" .. (err and (": " .. err.message)
                     or ""), "check NAVETTE_HOME's folder"), 0)
  end
  local file = dir .. "/known_hosts"
  local r
  r, err = ssh.probe { host = cfg.host, port = cfg.port, user = cfg.user,
                       known_hosts = file, timeout = 30 }
  local text = sys.read_file(file, 256 * 1024)
  sys.remove_tree(dir)
  if not r then
    error(errors.new(err.code == "not_run" and "not_run" or "backend",
                     where_of(cfg) .. ": " .. err.message, err.hint), 0)
  end
  for line in (text or ""):gmatch("[^\n]+") do
    local kind, b64 = line:match("^%S+%s+(%S+)%s+(%S+)")
    local fp = kind and ssh.fingerprint(line)
    if fp then
      return { kind = kind, fingerprint = fp,
               line = assert(ssh.known_hosts_line(cfg.host, cfg.port, kind,
                                                  b64)) }
    end
  end
  local said_text = (r.stderr or ""):gsub("%s+$", ""):gsub("\n", " / ")
  error(errors.new("backend", where_of(cfg) .. ": ssh showed no host key"
                   .. " (status " .. r.status .. (said_text ~= ""
                   and (": " .. said_text:sub(1, 300)) or "") .. ")",
                   "check the host and port of the profile, and the "
                   .. "network"), 0)
end

-- Writes the pin into the project file (text edited by M.pin_text, then
-- checked: read back, it differs from the old one by ssh.host_key alone)
-- -> the new project value; raises, writing nothing, when it cannot.
local function write_pin(proj, profile, fp, ctx)
  local project = require "navette.project"
  local trust = require "navette.trust"
  local file = proj.file
  local line = "host_key = \"" .. fp .. "\","
  local function cannot(why)
    error(errors.new("refused", file .. ": navette cannot add the pin "
                     .. "itself (" .. why .. "); nothing was written. Add "
                     .. "this line to profile '" .. profile .. "''s "
                     .. "slurm_ssh.ssh table:\n  " .. line,
                     "then commit " .. file), 0)
  end
  local text = sys.read_file(file, 4 * 1024 * 1024)
  if not text then cannot("it cannot be read") end
  local new, why = M.pin_text(text, profile, fp)
  if not new then cannot(why) end
  local okv, old_value = pcall(project.evaluate_data, file, text)
  local okn, new_value = pcall(project.evaluate_data, file, new)
  local function ssh_of(v)
    local p = type(v) == "table" and type(v.profiles) == "table"
              and v.profiles[profile]
    local t = type(p) == "table" and p.slurm_ssh
    return type(t) == "table" and type(t.ssh) == "table" and t.ssh or nil
  end
  if not (okv and okn and ssh_of(old_value) and ssh_of(new_value))
     or ssh_of(new_value).host_key ~= fp then
    cannot("the edited file does not read back with the pin")
  end
  ssh_of(old_value).host_key = fp
  if trust.bindings(old_value) ~= trust.bindings(new_value) then
    cannot("the edit would change more than ssh.host_key")
  end
  local st = sys.stat(file)
  ctx.write_known_hosts()
  errors.check(sys.write_file(file, new, st and st.mode & 4095 or 420))
  return new_value
end

local TRUST_USAGE = [[
usage: navette ssh trust PROFILE [--yes --expect SHA256:...]
  First contact with a slurm_ssh profile's login node: connects once,
  trying no login and running nothing, shows the host key's type and
  SHA256 fingerprint, and on your confirmation pins it: host_key =
  "SHA256:..." in the profile's slurm_ssh.ssh table of navette.lua, and
  its known_hosts line in navette's own file for the profile
  ($NAVETTE_HOME/ssh/PROFILE.known_hosts). Compare the fingerprint out
  of band first: `ssh-keygen -lf /etc/ssh/ssh_host_ed25519_key.pub` on
  the node, or the one your admins publish. A key that differs from the
  profile's pin, or from --expect, is refused and nothing is written.
  The project must be trusted on this machine (`navette trust`).
  --yes      pin without asking; needs --expect
  --expect   the fingerprint you expect (SHA256:...): any other is
             refused]]

local function ssh_trust(args, ctx)
  local opts = ctx.opts
  if args[1] ~= "trust" then
    ctx.usage_error(args[1] and ("unknown verb '" .. args[1] .. "'")
                    or "expected a verb: trust")
  end
  if #args ~= 2 then ctx.usage_error("expected one PROFILE") end
  if opts.yes and not opts.expect then
    ctx.usage_error("--yes needs --expect SHA256:...: a script says which "
                    .. "key it expects")
  end
  if opts.expect and (not opts.expect:match("^SHA256:[%w+/]+$")
                      or #opts.expect ~= 50) then
    ctx.usage_error("--expect must be a SHA256 fingerprint, \"SHA256:\" "
                    .. "and 43 characters (as ssh-keygen -lf prints it)")
  end
  local name = args[2]
  local proj = ctx.project("navette ssh trust " .. name)
  local profile = proj.profiles[name]
  if not profile or not profile.slurm_ssh then
    local names = {}
    for n, p in pairs(proj.profiles) do
      if p.slurm_ssh then names[#names + 1] = n end
    end
    table.sort(names)
    ctx.usage_error("profile '" .. name .. "' is not a slurm_ssh profile "
                    .. "of " .. proj.file .. " (those: "
                    .. (#names > 0 and table.concat(names, ", ")
                        or "none") .. ")")
  end
  local cfg = profile.slurm_ssh
  if cfg.proxy_jump then
    error(errors.new("refused", "profile '" .. name .. "': navette cannot "
                     .. "reach a login node through a jump host for its "
                     .. "first contact yet", trust_hint(name)), 0)
  end
  local seen = first_contact(cfg)
  term.print(where_of(cfg) .. " shows its " .. seen.kind .. " host key:")
  term.print("  " .. seen.fingerprint)
  term.print("check it out of band: on the node,")
  term.print("  ssh-keygen -lf /etc/ssh/ssh_host_"
             .. (seen.kind:match("^ssh%-(%w+)$") or seen.kind:match("^ecdsa")
                 and "ecdsa" or "ed25519") .. "_key.pub")
  term.print("or the fingerprint your admins publish")
  local function differs(other, what)
    error(errors.new("refused", where_of(cfg) .. ": the host key is not "
                     .. what .. " (" .. other .. ", the host shows "
                     .. seen.kind .. " " .. seen.fingerprint .. "); nothing "
                     .. "was written", "if the key was changed on purpose, "
                     .. "check the new fingerprint with the cluster's "
                     .. "admins, then write it as ssh.host_key in "
                     .. proj.file .. "; if not, someone may be in the way"),
          0)
  end
  if cfg.host_key and cfg.host_key ~= seen.fingerprint then
    differs("pinned " .. cfg.host_key, "the one pinned in profile '"
            .. name .. "'")
  end
  if opts.expect and opts.expect ~= seen.fingerprint then
    differs("expected " .. opts.expect, "the one expected")
  end
  local dir = core.home() .. "/ssh"
  local kh = dir .. "/" .. name .. ".known_hosts"
  function ctx.write_known_hosts()
    errors.check(sys.mkdir_p(dir, 448))
    errors.check(sys.write_file(kh, seen.line .. "\n", 384))
  end
  if cfg.host_key then
    ctx.write_known_hosts()
    term.print("already pinned in profile '" .. name .. "'; " .. kh
               .. " holds it")
    return 0
  end
  if not opts.yes then
    local yes, why = ctx.confirm("pin this key for profile '" .. name
                                 .. "' in " .. proj.file .. "?")
    if yes == nil then
      error(errors.new("refused", "no terminal to ask on (" .. tostring(why)
                       .. "): nothing was written", "once you have "
                       .. "checked the fingerprint: navette ssh trust "
                       .. name .. " --yes --expect " .. seen.fingerprint),
            0)
    elseif not yes then
      term.print("nothing was written")
      return 1
    end
  end
  write_pin(proj, name, seen.fingerprint, ctx)
  -- the pin changes what the trusted file binds by this one value, which
  -- the user just confirmed: their trust follows it
  local trust = require "navette.trust"
  local again = require("navette.project").at(proj.root)
  if proj.trusted then trust.record(again) end
  term.print("pinned " .. seen.fingerprint .. " for profile '" .. name
             .. "' in " .. proj.file .. " and " .. kh)
  term.print("commit " .. proj.file .. ": the pin is the team's")
  return 0
end

M.commands = {
  ssh = {
    summary = { { "ssh trust PROFILE [--yes --expect FP]",
                  "pin a slurm_ssh login node's host key" } },
    usage = TRUST_USAGE,
    flags = { yes = "bool", expect = "value" },
    run = ssh_trust,
  },
}

-- ---- the team layer: a certificate per member, a KRL ----------------------------
-- team.lua's services.ssh (navette team apply, revoke; the contract's
-- team_services): each member who may submit gets a key and a
-- certificate of their own, signed by the team's user CA (the credential
-- services.ssh.ca), for one principal of their own ("navette-{member}")
-- and the key id TEAM/MEMBER; both are handed over in
-- NAVETTE_HOME/team/TEAM/MEMBER.ssh-key and MEMBER.ssh-key-cert.pub, the
-- certificate signed again when a quarter of its life is left. sshd's
-- configuration is the cluster admin's: apply writes (services.ssh.files)
-- or prints what they install: the TrustedUserCAKeys, AuthorizedPrincipalsFile
-- and RevokedKeys lines, the CA's public key and a principals file per
-- login account. The KRL is a file navette keeps at services.ssh.krl, the
-- one the login node reads as RevokedKeys (a shared filesystem, or a copy
-- the admin installs): one file for every admin of the team, so that a
-- revocation by one is never dropped by another's, and `team revoke`'s
-- proof meets what sshd reads. It only grows (ssh-keygen -k -u): a
-- revoked key id stays refused, and a readmitted member (apply
-- --readmit) is signed under the next one, TEAM/MEMBER.2, .3...

local TEAM_KEYS = { "ca", "krl", "principal", "account", "lifespan",
                    "files" }
-- where the admin installs the files on the login node
local LOGIN_DIR = "/etc/ssh/navette-"
-- the longest a member's certificate lives
local LIFESPAN_MAX = 90 * 86400

local function absolute(v)
  return type(v) == "string" and v:sub(1, 1) == "/" and not v:find("%c")
    and not ("/" .. v .. "/"):find("/%.%.?/")
end

local function team_validate(t, where)
  local fail, profile = where.fail, where.profile
  local out = { profile = profile.name }
  local cred = type(t.ca) == "string" and profile.credentials[t.ca]
  if not cred then
    fail("ca must name a credential of profile " .. profile.name
         .. ": the team's user CA private key (kind pem, source file)",
         "ssh-keygen -t ed25519 -f team_ca makes one; the login node "
         .. "trusts its .pub (TrustedUserCAKeys)")
  end
  if cred.kind ~= "pem" or cred.source ~= "file"
     or not absolute(cred.path) then
    fail("ca: credential '" .. t.ca .. "' must be of kind pem with source "
         .. "file and an absolute path (ssh-keygen signs with the file)")
  end
  out.ca, out.ca_path = t.ca, cred.path
  if not absolute(t.krl) or t.krl:find("%s") then
    fail("krl must be the absolute path of the team's KRL (no spaces)",
         "the file the login node reads as RevokedKeys: on a shared "
         .. "filesystem, or copied there by the admin")
  end
  out.krl = t.krl
  local principal = t.principal or "navette-{member}"
  if type(principal) ~= "string"
     or not principal:match("^[%w@._-]*{member}[%w@._-]*$") then
    fail("principal must hold {member} once, with letters, digits, "
         .. "'@', '.', '_' and '-' around it",
         "each member has a principal of their own: \"navette-{member}\"")
  end
  out.principal = principal
  local account = t.account or "{member}"
  local shown = type(account) == "string"
    and account:gsub("{member}", "m", 1) or ""
  if not shown:match("^[%a_][%w._-]*$") or #shown > 32 then
    fail("account must be the login account on the node: a name, or "
         .. "\"{member}\" (each member's own, the default)")
  end
  out.account = account
  local life = util.parse_duration(t.lifespan or "1d")
  if not life or life < 600 or life > LIFESPAN_MAX then
    fail("lifespan must be a duration of 10 minutes to 90 days (\"1d\")")
  end
  out.lifespan_s = math.floor(life)
  if t.files ~= nil and not absolute(t.files) then
    fail("files must be the absolute path of a folder",
         "apply writes the login node's files there for the admin")
  end
  out.files = t.files
  return out
end

local function keygen(what, words, input)
  local r, err = ssh.keygen(words, input)
  if not r then
    error(errors.new(err.code or "backend", what .. ": " .. err.message,
                     err.hint), 0)
  end
  return r
end

local function keygen_ok(what, words, input)
  local r = keygen(what, words, input)
  if r.status ~= 0 then
    errors.raise("backend", what .. ": ssh-keygen failed (status "
                 .. r.status .. "): " .. said(r), "run ssh-keygen "
                 .. table.concat(words, " ") .. " by hand to see why")
  end
  return r
end

local function member_of(pattern, m)
  return (pattern:gsub("{member}", m.id))
end

local function key_path(policy, m)
  return require("navette.team").handoff_path(policy, m.id, "ssh-key")
end

local function key_id(policy, m, generation)
  return policy.name .. "/" .. m.id
    .. (generation > 1 and ("." .. generation) or "")
end

-- The CA's public key line and fingerprint.
local function ca_public(s)
  local r = keygen_ok("the team's SSH CA " .. s.ca_path,
                      { "-y", "-P", "", "-f", s.ca_path })
  local line = r.stdout:match("^(%S+ %S+)")
  local fp = line and ssh.fingerprint(line)
  if not fp then
    errors.raise("backend", "the team's SSH CA " .. s.ca_path .. ": "
                 .. "ssh-keygen -y printed no public key")
  end
  return line, fp
end

-- The key ids the KRL revokes for the CA of fingerprint ca_fp, or nil
-- when there is no KRL yet.
local function krl_ids(s, ca_fp)
  if not sys.stat(s.krl) then return nil end
  local r = keygen_ok("the KRL " .. s.krl, { "-Q", "-l", "-f", s.krl })
  local ids, ca = {}, nil
  for line in r.stdout:gmatch("[^\n]+") do
    local fp = line:match("^# CA key %S+ (SHA256:%S+)")
    if fp then ca = fp end
    local id = line:match("^id: (.+)$")
    if id and ca == ca_fp then ids[id] = true end
  end
  return ids
end

-- The member's key id now: the first generation the KRL does not revoke
-- (and that generation).
local function current_id(policy, m, revoked)
  local g = 1
  while revoked[key_id(policy, m, g)] do g = g + 1 end
  return key_id(policy, m, g), g
end

-- What `ssh-keygen -L` says of the certificate at path, or nil.
local function cert_info(path)
  if not sys.stat(path) then return nil end
  local r = ssh.keygen({ "-L", "-f", path })
  if not r or r.status ~= 0 then return nil end
  local out = r.stdout
  local info = { key_id = out:match('Key ID: "([^"\n]*)"'),
                 ca = out:match("Signing CA: %S+ (SHA256:[%w+/]+)"),
                 principals = {} }
  local to = out:match("Valid: [^\n]-to (%S+)")
             or out:match("Valid: before (%S+)")
  info.valid_before = (to == nil or to == "forever") and math.huge
                      or util.parse_iso8601(to .. "Z") or 0
  local list = out:match("Principals:%s*\n(.-)\n%s*Critical Options")
  for p in (list or ""):gmatch("%S+") do
    if p ~= "(none)" then info.principals[#info.principals + 1] = p end
  end
  return info
end

local function may_login(policy, m)
  local team = require "navette.team"
  return team.has(policy, m, "submit") or team.has(policy, m, "admin")
end

-- Makes (when missing, or fresh: the KRL revokes the old one) and signs
-- the member's key: the handed-over note.
local function sign(policy, s, m, id, fresh)
  local team = require "navette.team"
  local key = key_path(policy, m)
  errors.check(sys.mkdir_p(team.handoff_dir(policy), 448))
  if fresh or not sys.stat(key) or not sys.stat(key .. ".pub") then
    sys.remove(key)
    sys.remove(key .. ".pub")
    keygen_ok("a key for " .. m.id, { "-q", "-t", "ed25519", "-N", "",
              "-C", id, "-f", key })
  end
  keygen_ok("the certificate of " .. m.id, {
    "-q", "-s", s.ca_path, "-I", id, "-n", member_of(s.principal, m),
    "-V", "-5m:+" .. s.lifespan_s .. "s",
    "-z", tostring(math.floor(sys.now() * 1000)), "-O", "clear",
    key .. ".pub" })
  return "key and certificate handed over in " .. key .. " and " .. key
    .. "-cert.pub"
end

-- Adds the member's key ids (all generations up to now) and the key
-- navette holds for them to the KRL.
local function add_to_krl(policy, s, m, generation)
  local spec = {}
  for g = 1, generation do
    spec[#spec + 1] = "id: " .. key_id(policy, m, g)
  end
  local pub = sys.read_file(key_path(policy, m) .. ".pub", 64 * 1024)
  local line = pub and pub:match("^(%S+ %S+)")
  if line then spec[#spec + 1] = "key: " .. line end
  if not sys.stat(s.krl) then
    errors.check(sys.mkdir_p(util.dirname(s.krl), 493))
  end
  keygen_ok("the KRL " .. s.krl, { "-k", "-u", "-s", s.ca_path, "-f",
            s.krl, "-" }, table.concat(spec, "\n") .. "\n")
  return #spec
end

-- The files the login node needs: {[relative path] = text}.
local function login_files(policy, s, ca_line)
  local dir = LOGIN_DIR .. policy.name
  local files = {
    ["sshd_config"] = "# navette team apply: team " .. policy.name
      .. ". Add to the login node's sshd_config (sshd takes the first of\n"
      .. "# each: merge with such lines already there; a "
      .. "TrustedUserCAKeys file may hold\n# several CA keys).\n"
      .. "TrustedUserCAKeys " .. dir .. "/user_ca.pub\n"
      .. "AuthorizedPrincipalsFile " .. dir .. "/principals/%u\n"
      .. "RevokedKeys " .. dir .. "/revoked.krl\n",
    ["user_ca.pub"] = ca_line .. " navette-team-" .. policy.name .. "\n",
  }
  local by = {}
  for _, m in ipairs(require("navette.team").members(policy, true)) do
    if may_login(policy, m) then
      local account = member_of(s.account, m)
      by[account] = by[account] or {}
      table.insert(by[account], member_of(s.principal, m))
    end
  end
  for account, list in pairs(by) do
    table.sort(list)
    files["principals/" .. account] = table.concat(list, "\n") .. "\n"
  end
  -- (an account no member uses any more keeps an empty file: installed,
  -- it lets nobody in)
  if s.files then
    for _, f in ipairs(sys.listdir(s.files .. "/principals") or {}) do
      if not files["principals/" .. f] and not f:match("^%.") then
        files["principals/" .. f] = ""
      end
    end
  end
  return files, dir
end

local function install_note(policy, s, dir)
  return "install on the login node: " .. (s.files or "these")
    .. " into " .. dir .. "/, the KRL " .. s.krl .. " as " .. dir
    .. "/revoked.krl (each `team revoke` updates it: a shared filesystem, "
    .. "or copy it again), and sshd_config's lines"
end

local function team_apply(policy, proj, opts)
  local s = policy.services.ssh
  local changes, same = {}, 0
  local function add(op, what, run)
    changes[#changes + 1] = { service = "ssh", op = op, what = "ssh: "
                              .. what, run = run }
  end
  local ca_line, ca_fp = ca_public(s)
  local revoked = krl_ids(s, ca_fp)
  if not revoked then
    add("+", "an empty KRL " .. s.krl .. " (the login node's RevokedKeys)",
        function()
          errors.check(sys.mkdir_p(util.dirname(s.krl), 493))
          keygen_ok("the KRL " .. s.krl, { "-q", "-k", "-f", s.krl })
        end)
    revoked = {}
  else
    same = same + 1
  end
  local now = sys.now()
  for _, m in ipairs(require("navette.team").members(policy)) do
    local id, g = current_id(policy, m, revoked)
    local info = cert_info(key_path(policy, m) .. "-cert.pub")
    local principal = member_of(s.principal, m)
    if m.revoked and g > 1 then
      same = same + 1
    elseif m.revoked then
      add("+", "revoke " .. m.id .. "'s certificates (key id " .. id
          .. ") in the KRL", function() add_to_krl(policy, s, m, g) end)
    elseif not may_login(policy, m) then
      -- (no certificate: no principal of theirs is installed)
    elseif g > 1 and not (opts.readmit and opts.readmit[m.id])
           and not (info and info.key_id == id) then
      -- revoked by another admin, whose revocation this team file and
      -- this machine do not know yet
      add("!", m.id .. "'s key id " .. key_id(policy, m, g - 1)
          .. " is revoked in the KRL " .. s.krl .. ": no certificate "
          .. "signed (mark them revoked = true in the team file, or "
          .. "readmit them: team apply --readmit " .. m.id .. ")")
    elseif info and info.key_id == id and info.ca == ca_fp
           and #info.principals == 1 and info.principals[1] == principal
           and info.valid_before - now > s.lifespan_s / 4 then
      same = same + 1
    else
      add(info and "~" or "+", "certificate for " .. m.id
          .. " (principal " .. principal .. ", key id " .. id .. ", valid "
          .. s.lifespan_s .. " s)", function()
            -- (a readmitted member's old key is in the KRL too)
            return sign(policy, s, m, id,
                        g > 1 and not (info and info.key_id == id))
          end)
    end
  end
  local files, dir = login_files(policy, s, ca_line)
  local names = util.sorted_keys(files)
  if s.files then
    local differ = {}
    for _, f in ipairs(names) do
      local path = s.files .. "/" .. f
      if sys.read_file(path, 1024 * 1024) ~= files[f] then
        differ[#differ + 1] = f
      end
    end
    if #differ == 0 then
      same = same + 1
    else
      add("~", "login node files in " .. s.files .. ": "
          .. table.concat(differ, ", "), function()
            for _, f in ipairs(differ) do
              local path = s.files .. "/" .. f
              errors.check(sys.mkdir_p(util.dirname(path), 493))
              errors.check(sys.write_file(path, files[f], 420))
            end
            return install_note(policy, s, dir)
          end)
    end
  else
    local shown = {}
    for _, f in ipairs(names) do
      shown[#shown + 1] = "      " .. dir .. "/" .. f .. ":\n"
        .. files[f]:gsub("[^\n]+", "        %0"):gsub("\n$", "")
    end
    add("!", install_note(policy, s, dir) .. " (services.ssh.files: "
        .. "a folder to write them to):\n" .. table.concat(shown, "\n"))
  end
  return changes, same
end

local function team_revoke(policy, _, m)
  local s = policy.services.ssh
  local _, ca_fp = ca_public(s)
  local _, g = current_id(policy, m, krl_ids(s, ca_fp) or {})
  local n = add_to_krl(policy, s, m, g)
  return "ssh: " .. m.id .. "'s key ids " .. key_id(policy, m, 1)
    .. (g > 1 and ("..." .. key_id(policy, m, g)) or "")
    .. (n > g and " and key" or "") .. " added to the KRL " .. s.krl
end

-- The member's certificate against the KRL (ssh-keygen -Q) and against
-- the login node itself: a login with it, on a connection of its own.
local function team_prove(policy, proj, m)
  local s = policy.services.ssh
  local key = key_path(policy, m)
  local cert = key .. "-cert.pub"
  if not sys.stat(cert) then return nil end
  local q = keygen("the KRL " .. s.krl, { "-Q", "-f", s.krl, cert })
  local in_krl = q.status == 1 and q.stdout:find("REVOKED") ~= nil
  local cfg = proj.profiles[s.profile].slurm_ssh
  local account = member_of(s.account, m)
  local ok, t = pcall(target, cfg)
  local answer, refused
  if not ok then
    refused, answer = false, "not tried: " .. errors.from(t).message
  else
    t.identity, t.certificate, t.user = key, cert, account
    t.control_path, t.control_persist = nil, nil
    t.command, t.timeout = { "true" }, 30
    local r, err = ssh.run(t)
    if r then
      refused, answer = false, "logged in as " .. account
    elseif err.reason == "denied" then
      refused, answer = true, "login as " .. account .. " refused"
    else
      refused, answer = false, "login not proved: " .. err.message
    end
  end
  return { service = "ssh", credential = "certificate " .. m.id,
           refused = refused and in_krl,
           answer = (in_krl and "REVOKED in the KRL" or "NOT in the KRL")
             .. "; " .. answer }
end

M.team_services = {
  ssh = { keys = TEAM_KEYS, validate = team_validate, apply = team_apply,
          revoke = team_revoke, prove = team_prove },
}

return M
