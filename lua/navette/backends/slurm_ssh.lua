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
local logic = require "navette.slurm.logic"
local settings = require "navette.slurm.settings"
local slurm, ssh = _navette.slurm, _navette.ssh
local sys, core = _navette.sys, _navette.core

local M = { name = "slurm_ssh" }

local KEYS = { "ssh", "credential", "certificate" }
for _, k in ipairs(settings.KEYS) do KEYS[#KEYS + 1] = k end
local SSH_KEYS = { "host", "port", "user", "host_key", "proxy_jump" }
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

-- Validates profile.slurm_ssh (t). A profile with no host_key is valid
-- (so that the project loads) but refused before any connection.
function M.validate(t, where)
  local path, name = where.path, where.profile
  local function fail(message, hint)
    error(errors.new("recipe", path .. ": profile '" .. name .. "': "
                     .. "slurm_ssh: " .. message, hint), 0)
  end
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
    fail("credential must name a declared credential: kind pem, source "
         .. "file, the path of your SSH private key")
  end
  local cred = where.credentials[t.credential]
  if not cred then
    fail("credential '" .. t.credential .. "' is not declared",
         "declare it under credentials = { ... } in navette.lua")
  end
  if cred.kind ~= "pem" or cred.source ~= "file" then
    fail("credential '" .. t.credential .. "' must be of kind pem with "
         .. "source file (the private key's path): ssh reads the key "
         .. "itself", "other sources are not supported yet")
  end
  if cred.path:sub(1, 1) ~= "/" then
    fail("credential '" .. t.credential .. "': the key's path must be "
         .. "absolute")
  end
  if t.certificate ~= nil and (type(t.certificate) ~= "string"
     or t.certificate:sub(1, 1) ~= "/") then
    fail("certificate must be the absolute path of the key's "
         .. "certificate (KEY-cert.pub), signed by the cluster's SSH CA")
  end
  return settings.check(t, fail, {
    profile = name, host = s.host, port = s.port or 22, user = s.user,
    host_key = s.host_key, proxy_jump = s.proxy_jump,
    credential = cred, identity = cred.path, certificate = t.certificate,
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

-- A session's ssh options for cfg (opened: host key, folder, socket).
local function target(cfg)
  need_pin(cfg)
  local kh = known_hosts(cfg)
  local name = sys.sha256(table.concat({ cfg.host, tostring(cfg.port),
    cfg.user, tostring(cfg.proxy_jump), cfg.host_key, cfg.identity,
    tostring(cfg.certificate) }, "\0")):sub(1, 16)
  return {
    host = cfg.host, port = cfg.port, user = cfg.user, known_hosts = kh,
    identity = cfg.identity, certificate = cfg.certificate,
    proxy_jump = cfg.proxy_jump,
    control_path = runtime_dir(cfg) .. "/" .. name,
    control_persist = CONTROL_PERSIST,
  }
end

-- ---- sessions (navette.slurm.logic's interface) -------------------------------

local Session = {}
Session.__index = Session
-- [control path] = the last look at the jobs {at, text, jobs}
local snapshots = {}

-- words on the login node, stdin its input -> result | nil, err
function Session:run(words, stdin, max_output)
  assert(not self.closed, "slurm_ssh: session used after close")
  local opts = {}
  for k, v in pairs(self.target) do opts[k] = v end
  opts.command, opts.stdin, opts.max_output = words, stdin, max_output
  local r, err = ssh.run(opts)
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
  if snap and now - snap.at >= 0 and now - snap.at < SNAPSHOT_FOR then
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
  local t = target(cfg)
  return setmetatable({ cfg = cfg, target = t, owner = owner,
                        key = t.control_path or "" }, Session)
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

local wire = logic.new {
  name = M.name,
  service = "login node",
  where = where_of,
  session = session_for,
  status_session = status_session,
  check_desc = slurm.check_desc,
  map_state = slurm.map_state,
}

M.submit = wire.submit
M.arrays = true
M.submit_array = wire.submit_array
M.secrets = logic.secrets
M.refresh = wire.refresh
M.listing = wire.listing
M.cancel = wire.cancel
M.log_chunk = wire.log_chunk
M.describe = wire.describe
M.list_rows = wire.list_rows

-- ---- what other modules ask of a backend ----------------------------------------

function M.origins(profile)
  local cfg = profile.slurm_ssh
  return { cfg and ("ssh://" .. cfg.user .. "@" .. cfg.host .. ":"
                    .. cfg.port) }
end

function M.spec_credentials(spec)
  return { spec.slurm and spec.slurm.credential }
end

return M
