-- The slurm backend: jobs submitted to slurmrestd (Slurm's REST API) from
-- the laptop, run on the cluster's nodes by the node launcher (which
-- fetches and publishes through S3 itself), and observed by combining
-- Slurm's state of the job with what the launcher published (its status
-- object, log chunks and run record). Nothing needs a session on the node,
-- and closing the laptop loses nothing: the job is Slurm's, its results
-- are in storage, and `navette status` reads both back.
--
-- This file is the wire: the profile's settings, and the sessions with
-- slurmrestd (its endpoint, TLS, tokens minted from the profile's
-- credential). The job logic (submissions and their lost answers,
-- arrays, `after`, outcomes, cancel, what is shown) is navette.slurm.logic,
-- which every way of reaching Slurm shares: it is handed this file's
-- sessions and does the rest.
local errors = require "navette.errors"
local util = require "navette.util"
local logic = require "navette.slurm.logic"
local native, jobs_native = _navette.slurm, _navette.jobs
local core = _navette.core

local M = { name = "slurm" }

local KEYS = { "endpoint", "user", "credential", "partition", "account",
               "qos", "nodes", "working_directory", "requeue",
               "environment", "api_version", "ca_bundle", "pin" }
local STATUS_TOKEN_LIFESPAN = 300 -- a status poll's token

-- ---- the profile -----------------------------------------------------------

M.profile_keys = KEYS
-- a job's `after` is Slurm's afterok (a job that cannot run is ended)
M.dependencies = true
M.settings_doc = "Slurm settings (backend = \"slurm\"): see `navette help slurm`."

-- Validates profile.slurm (t) of profile where.profile in project file
-- where.path.
function M.validate(t, where)
  local path, name = where.path, where.profile
  local credentials, storage = where.credentials, where.storage
  local function fail(message, hint)
    error(errors.new("recipe", path .. ": profile '" .. name .. "': slurm: "
                     .. message, hint), 0)
  end
  if type(t) ~= "table" then
    fail("a slurm profile needs slurm = { endpoint = ..., user = ..., "
         .. "credential = ... }")
  end
  for k in pairs(t) do
    local known = false
    for _, key in ipairs(KEYS) do if k == key then known = true end end
    if not known then
      fail("unknown key '" .. tostring(k) .. "'" .. util.suggest(tostring(k),
           KEYS), "slurm keys are: " .. table.concat(KEYS, ", "))
    end
  end
  if not storage:match("^s3://") then
    fail("the slurm backend needs s3:// storage", "the node reads its "
         .. "inputs and publishes its outputs there, with presigned URLs")
  end
  if type(t.endpoint) ~= "string"
     or not t.endpoint:match("^https?://[^/]+") then
    fail("endpoint must be the slurmrestd URL, https://HOST:PORT")
  end
  if type(t.user) ~= "string" or not t.user:match("^[%w._-]+$") then
    fail("user must be the Slurm user name jobs run as")
  end
  if type(t.credential) ~= "string" then
    fail("credential must name a declared credential: kind hs256 (the "
         .. "cluster's JWT key, tokens minted per job) or bearer (a token)")
  end
  local cred = credentials[t.credential]
  if not cred then
    fail("credential '" .. t.credential .. "' is not declared",
         "declare it under credentials = { ... } in navette.lua")
  end
  if cred.kind ~= "hs256" and cred.kind ~= "bearer" then
    fail("credential '" .. t.credential .. "' is of kind " .. cred.kind
         .. ", not hs256 or bearer")
  end
  for _, k in ipairs({ "partition", "account", "qos", "api_version",
                       "ca_bundle", "pin" }) do
    if t[k] ~= nil and type(t[k]) ~= "string" then
      fail(k .. " must be a string")
    end
  end
  local wd = t.working_directory or "/tmp"
  if type(wd) ~= "string" or wd:sub(1, 1) ~= "/" then
    fail("working_directory must be an absolute path on the nodes")
  end
  local nodes = {}
  if t.nodes ~= nil then
    if type(t.nodes) ~= "table" then
      fail("nodes must be a list of node names { \"gpu-a\", \"gpu-b\" }")
    end
    for i, n in ipairs(t.nodes) do
      if type(n) ~= "string" or not n:match("^[%w._%[%],-]+$") then
        fail("nodes[" .. i .. "] is not a node name")
      end
      nodes[i] = n
    end
  end
  if t.requeue ~= nil and type(t.requeue) ~= "boolean" then
    fail("requeue must be a boolean")
  end
  local environment = {}
  for k, v in pairs(t.environment or {}) do
    if type(k) ~= "string" or not jobs_native.env_name_ok(k)
       or type(v) ~= "string" then
      fail("environment maps names to strings (not NAVETTE_*, PATH...)")
    end
    if _navette.creds.redact(v) ~= v then
      fail("environment." .. k .. " looks like a secret",
           "a job gets short-lived access, never a secret in its "
           .. "environment")
    end
    environment[k] = v
  end
  return {
    endpoint = t.endpoint:gsub("/+$", ""), user = t.user, credential = cred,
    partition = t.partition, account = t.account, qos = t.qos,
    nodes = nodes, working_directory = wd, requeue = t.requeue == true,
    environment = environment, api_version = t.api_version,
    ca_bundle = t.ca_bundle, pin = t.pin,
  }
end

-- How to reach the cluster again for status and cancel (no secret), and
-- the profile's requeue for a job that does not say.
-- the most jobs one job may run after (Slurm's dependency list, as
-- host/jobs/slurm.h bounds it)
local AFTER_MAX = 10000

-- ---- retries and checkpoints ------------------------------------------------

-- Slurm's requeue, or the launcher, runs a job again after the failures
-- its retries name, and the launcher saves and restores its checkpoint
-- (see navette.slurm.description).
M.retries = true
M.checkpoints = true

-- What the node launcher takes from Slurm (the contract's launch,
-- host/jobs/launcher.h): the commands ask slurmctld through the node's
-- scontrol, $1 the job's id.
M.launch = {
  scheduler = "Slurm",
  array_index = "SLURM_ARRAY_TASK_ID",
  attempt = "SLURM_RESTART_COUNT",
  node = "SLURMD_NODENAME",
  job = "SLURM_JOB_ID",
  -- an array's task is JOB_TASK: the array's own id would requeue all
  requeue = { "sh", "-c", [[
command -v scontrol >/dev/null 2>&1 || { echo "the node has no scontrol"; exit 1; }
[ -n "${SLURM_ARRAY_JOB_ID:-}" ] && [ -n "${SLURM_ARRAY_TASK_ID:-}" ] &&
	set -- "${SLURM_ARRAY_JOB_ID}_$SLURM_ARRAY_TASK_ID"
exec scontrol requeue "$1"]], "sh" },
  requeue_needs = "the node's scontrol and a cluster that lets a job be "
                  .. "requeued (JobRequeue, the partition)",
  -- TimeLimit less RunTime, each [D-]HH:MM:SS or MM:SS; nothing for
  -- UNLIMITED
  time_left = { "sh", "-c", [[
command -v scontrol >/dev/null 2>&1 || exit 1
scontrol -o show job "$1" 2>/dev/null | awk '
function secs(t, a) {
	split(t, a, /[-:]/)
	if (t ~ /^[0-9]+-[0-9]+:[0-9]+:[0-9]+$/) return ((a[1] * 24 + a[2]) * 60 + a[3]) * 60 + a[4]
	if (t ~ /^[0-9]+:[0-9]+:[0-9]+$/) return (a[1] * 60 + a[2]) * 60 + a[3]
	if (t ~ /^[0-9]+:[0-9]+$/) return a[1] * 60 + a[2]
	return ""
}
{
	for (i = 1; i <= NF; i++) {
		if ($i ~ /^TimeLimit=/) limit = secs(substr($i, 11))
		if ($i ~ /^RunTime=/) run = secs(substr($i, 9))
	}
}
END { if (limit != "" && run != "") print limit - run }']], "sh" },
  timed_out = { "sh", "-c", [[
command -v scontrol >/dev/null 2>&1 || exit 1
case " $(scontrol -o show job "$1" 2>/dev/null) " in
*" JobState=TIMEOUT "*) exit 0 ;;
esac
exit 1]], "sh" },
  in_container = false,
}

function M.prepare(spec, profile)
  if spec.after and #spec.after > AFTER_MAX then
    -- (checked in the checking pass: before any job of the run is sent)
    error(errors.new("recipe", "job '" .. spec.name .. "' runs after "
                     .. #spec.after .. " jobs; on Slurm at most "
                     .. AFTER_MAX, "join them in stages: a job after each "
                     .. "part of them, then one after those"), 0)
  end
  logic.retries_by_requeue(spec)
  if spec.requeue == nil then spec.requeue = profile.slurm.requeue end
  spec.slurm = {}
  for k, v in pairs(profile.slurm) do spec.slurm[k] = v end
  spec.slurm.max_token_lifespan = profile.max_token_lifespan
end

-- The profile's nodes, taken in turn by a sweep's jobs.
function M.nodes(profile)
  return profile.slurm.nodes
end

-- ---- sessions ----------------------------------------------------------------

-- A session with slurmrestd as the job's spec describes it (spec.slurm),
-- its tokens living `lifespan` seconds at most, never more than `max`.
local function open(cfg, lifespan, max)
  local handle, err = _navette.creds.load(cfg.credential)
  if not handle then
    error(errors.new("refused", "the Slurm credential '"
                     .. tostring(cfg.credential.name) .. "' cannot be "
                     .. "loaded: " .. err.message, err.hint), 0)
  end
  local session, serr = native.open {
    endpoint = cfg.endpoint, user = cfg.user, credential = handle,
    lifespan = math.min(lifespan, max), max_lifespan = max,
    version = cfg.api_version, ca_bundle = cfg.ca_bundle, pin = cfg.pin,
  }
  if not session then
    error(errors.new(serr.code == "refused" and "refused" or "backend",
                     "slurmrestd at " .. cfg.endpoint .. ": "
                     .. serr.message, serr.hint), 0)
  end
  return session
end
M.open = open

-- A session for a status poll, a listing or a cancel: the tokens it mints
-- live STATUS_TOKEN_LIFESPAN; a bearer token (a team member's, handed
-- over) may live as long as the profile lets a token live (cfg: a spec's
-- slurm, which carries max_token_lifespan).
local function status_session(cfg)
  return open(require("navette.trust").recorded(cfg), STATUS_TOKEN_LIFESPAN,
              cfg.max_token_lifespan or 3600)
end

-- check_credential{ credential = NAME or HANDLE } -> true when the
-- profile's cluster accepts the credential (an hs256 key, whose tokens it
-- must verify, or a bearer token): a token is minted and a job lookup
-- sent through slurmrestd. Raises refused naming what Slurm said when it
-- does not; plan mode records the check and does nothing.
function M.check_credential(opts)
  local what = "navette.slurm.check_credential"
  util.check_options(what, opts, { "credential" },
                     "{ credential = NAME or HANDLE }")
  local run = require("navette.context").current()
  local profile = run and run.profile
  local cfg = profile and profile.slurm
  if not cfg then
    errors.raise("usage", what .. " needs a profile whose backend is slurm",
                 "run the recipe with --profile naming such a profile")
  end
  local handle = opts.credential
  if type(handle) == "string" then
    handle = require("navette.creds").get(handle)
  elseif type(handle) ~= "userdata" then
    errors.raise("recipe", what .. ": credential must name a declared "
                 .. "credential or be a handle")
  end
  local kind = handle:info().kind
  if kind ~= "hs256" and kind ~= "bearer" then
    errors.raise("recipe", what .. ": credential " .. handle:name()
                 .. " is of kind " .. kind .. ", not hs256 or bearer")
  end
  if core.plan_mode() then
    core.plan("slurm", "check credential", handle:name())
    return true
  end
  local max = cfg.max_token_lifespan or 3600
  local session, serr = native.open {
    endpoint = cfg.endpoint, user = cfg.user, credential = handle,
    lifespan = math.min(60, max), max_lifespan = max,
    version = cfg.api_version, ca_bundle = cfg.ca_bundle, pin = cfg.pin,
  }
  local found, err
  if session then
    found, err = session:find { name = "navette-credential-check" }
    session:close()
  else
    err = serr
  end
  if found or err.code == "not_found" then return true end
  errors.raise(err.code == "refused" and "refused" or "backend",
               what .. ": slurmrestd at " .. cfg.endpoint .. " with "
               .. "credential " .. handle:name() .. ": " .. err.message,
               err.hint)
end

-- ---- the wire ------------------------------------------------------------------

-- The lifespan of the tokens of a job's submission: its time limit and a
-- margin, never more than the profile lets a token live.
local function token_lifespan(spec, profile_max)
  local limit = spec.resources and spec.resources.time_limit
  local creds = require "navette.creds"
  return math.min(profile_max, (limit or 0) + creds.JOB_TOKEN_MARGIN)
end

-- The session for spec's cluster and token lifespan (kept in ctx.sessions
-- for the run when given, so a sweep goes through one session: one
-- version discovery, kept-alive connections, per cluster, user,
-- credential and token lifespan), or, when it cannot be opened, false
-- and the error.
local function session_for(spec, ctx)
  local profile_max = spec.slurm.max_token_lifespan or 3600
  local lifespan = token_lifespan(spec, profile_max)
  local cache, key = ctx.sessions, table.concat({ spec.slurm.endpoint,
    spec.slurm.user, tostring(spec.slurm.credential
    and spec.slurm.credential.name), tostring(lifespan) }, "\0")
  local session = cache and cache[key]
  if session then return true, session end
  local ok
  ok, session = pcall(open, spec.slurm, lifespan, profile_max)
  if ok and cache then cache[key] = session end
  return ok, session
end

local slurm = logic.new {
  name = M.name,
  service = "slurmrestd",
  where = function(cfg) return "slurmrestd at " .. tostring(cfg.endpoint) end,
  session = session_for,
  status_session = status_session,
  check_desc = native.check_desc,
  map_state = native.map_state,
}

-- ---- submission, observation, reading back: the logic's ---------------------

M.submit = slurm.submit
-- a sweep's jobs go to Slurm as one job array (runner.array_group)
M.arrays = true
M.submit_array = slurm.submit_array
M.secrets = logic.secrets
M.refresh = slurm.refresh
M.listing = slurm.listing
M.cancel = slurm.cancel
M.log_chunk = slurm.log_chunk
M.describe = slurm.describe
M.list_rows = slurm.list_rows

-- ---- what other modules ask of a backend (backends/init.lua) ---------------

-- The origins the profile's backend reaches (isolation attributes them
-- to the profile): its slurmrestd.
function M.origins(profile)
  return { profile.slurm and profile.slurm.endpoint }
end

-- The credentials a recorded spec needs besides its store's: the
-- cluster's (portability, migrate).
function M.spec_credentials(spec)
  return { spec.slurm and spec.slurm.credential }
end

-- The member's jobs on the cluster now, for the quota note
-- (run/quota.lua): {running, pending, held = what holds the extra ones},
-- or nil when the cluster cannot be asked (the submission says why).
-- The listing is the session user's: the member's own Slurm user.
function M.member_jobs(profile)
  local cfg = setmetatable({ max_token_lifespan =
    profile.max_token_lifespan }, { __index = profile.slurm })
  local listing = M.listing(cfg)
  if not listing then return nil end
  local running, pending = 0, 0
  for _, job in pairs(listing) do
    if job.state == "RUNNING" or job.state == "CONFIGURING"
       or job.state == "SUSPENDED" then
      running = running + 1
    elseif job.state == "PENDING" then
      pending = pending + 1
    end
  end
  return { running = running, pending = pending,
           held = "Slurm holds the others (QOSMaxJobsPerUserLimit) until "
                  .. "one ends" }
end

-- The team services the cluster keeps (team/slurm.lua): Slurm's
-- accounts and associations, through a session that open makes.
M.team_services = { slurm = open }

-- navette.slurm.check_credential's documentation (navette.luals)
M.check_credential_doc = "True when the profile's Slurm cluster accepts "
  .. "the credential (an hs256 key's token, a bearer token); raises "
  .. "refused otherwise."

return M
