-- The slurm backend: jobs submitted to slurmrestd (Slurm's REST API) from
-- the laptop, run on the cluster's nodes by the remote launcher (which
-- fetches and publishes through S3 itself), and observed by combining
-- Slurm's state of the job with what the launcher published (its status
-- object, log chunks and run record). Nothing needs a session on the node,
-- and closing the laptop loses nothing: the job is Slurm's, its results
-- are in storage, and `navette status` reads both back.
--
-- The job database keeps a row per job (backend "slurm", its Slurm job
-- id), written before the submit request is sent: a submission whose
-- answer was lost leaves a row without an id, which the next run of the
-- same job looks up in Slurm (the navette id is the Slurm job's name)
-- before it submits anything.
local errors = require "navette.errors"
local util = require "navette.util"
local published = require "navette.published"
local native, jobs_native, sys, json =
  _navette.slurm, _navette.jobs, _navette.sys, _navette.json
local core = _navette.core

local M = { name = "slurm" }

local KEYS = { "endpoint", "user", "credential", "partition", "account",
               "qos", "nodes", "working_directory", "requeue",
               "environment", "api_version", "ca_bundle", "pin" }
local STATUS_TOKEN_LIFESPAN = 300 -- a status poll's token
local REFRESH_EVERY = 1.0         -- seconds between two looks at a job

-- ---- the profile -----------------------------------------------------------

M.profile_keys = KEYS
-- a job's `after` is Slurm's afterok (a job that cannot run is ended)
M.dependencies = true
M.settings_doc = "Slurm settings (backend = \"slurm\"): see the README."

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

-- Slurm requeues a job whose node fails, or that is preempted, when the
-- job allows it (requeue): navette's retries of those kinds are that
-- requeue. A timeout or an exit status Slurm would not retry: the
-- launcher does, on the node, by asking Slurm to requeue the job
-- (NAVETTE_RETRY_ON names those kinds). So navette never submits a job
-- again itself, one failure is retried once, by one of the two, and
-- nothing waits for the laptop. The launcher counts the attempts
-- (SLURM_RESTART_COUNT) and fails one past retries.max.
M.retries = true
M.checkpoints = true
local REQUEUED = { node_fail = true, preempted = true }
-- The launcher stops the command this long before the time limit, so
-- that it saves a last checkpoint, or the launcher requeues a job that
-- retries on timeout. (Slurm's own warning, `signal`, reaches job steps
-- only, never the batch script: slurmrestd refuses its "B:".)
local WARN_BEFORE = 60
local function retries_by_requeue(spec)
  if not spec.retries then return end
  if spec.requeue == false then
    error(errors.new("recipe", "job '" .. spec.name .. "': retries need "
                     .. "Slurm's requeue, and the job says requeue = "
                     .. "false", "drop one of the two"), 0)
  end
  spec.requeue = true
end

-- The kinds of failure the launcher retries itself, as its
-- NAVETTE_RETRY_ON: "timeout exit:137", or nil.
local function launcher_retries(spec)
  local kinds = {}
  for _, kind in ipairs(spec.retries and spec.retries.on or {}) do
    if not REQUEUED[kind] then kinds[#kinds + 1] = kind end
  end
  return #kinds > 0 and table.concat(kinds, " ") or nil
end

-- Seconds before the time limit at which the launcher stops the command
-- (a job with a checkpoint, or that retries on timeout), or nil.
local function warn_before(spec)
  local wants = spec.checkpoint
  for _, kind in ipairs(spec.retries and spec.retries.on or {}) do
    wants = wants or kind == "timeout"
  end
  if not wants then return nil end
  local limit = spec.resources and spec.resources.time_limit or 240
  return math.max(1, math.min(WARN_BEFORE, math.floor(limit / 4)))
end

function M.prepare(spec, profile)
  if spec.after and #spec.after > AFTER_MAX then
    -- (checked in the checking pass: before any job of the run is sent)
    error(errors.new("recipe", "job '" .. spec.name .. "' runs after "
                     .. #spec.after .. " jobs; on Slurm at most "
                     .. AFTER_MAX, "join them in stages: a job after each "
                     .. "part of them, then one after those"), 0)
  end
  retries_by_requeue(spec)
  if spec.requeue == nil then spec.requeue = profile.slurm.requeue end
  spec.slurm = {}
  for k, v in pairs(profile.slurm) do spec.slurm[k] = v end
  spec.slurm.max_token_lifespan = profile.max_token_lifespan
  -- What the remote launcher takes from Slurm (host/jobs/launcher.h): the
  -- commands ask slurmctld through the node's scontrol, $1 the job's id.
  spec.launch = {
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
  if type(opts) ~= "table" then
    errors.raise("recipe", what .. " expects a table: " .. what
                 .. "{ credential = NAME or HANDLE }")
  end
  util.check_keys(opts, { "credential" }, function(k, suggestion, list)
    errors.raise("recipe", what .. ": unknown key '" .. tostring(k) .. "'"
                 .. suggestion, "it takes: " .. list)
  end)
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

-- ---- submission --------------------------------------------------------------

-- The Slurm job description of a spec (the launcher is its batch script).
local function description(spec, nodes)
  local cfg = spec.slurm
  local r = spec.resources or {}
  local env = { PATH = "/usr/local/bin:/usr/bin:/bin", NAVETTE_JOB_ID = spec.id }
  for k, v in pairs(cfg.environment or {}) do env[k] = v end
  local log_interval = sys.getenv("NAVETTE_LOG_INTERVAL")
  if log_interval and log_interval:match("^%d+%.?%d*$") then
    env.NAVETTE_LOG_INTERVAL = log_interval
  end
  local d = {
    name = spec.id, comment = "navette " .. spec.id
      .. (spec.member and (" member " .. spec.member.id) or ""),
    partition = r.partition or cfg.partition,
    account = r.account or cfg.account, qos = r.qos or cfg.qos,
    time_limit = r.time_limit and math.ceil(r.time_limit) or nil,
    cpus = r.cpus and math.ceil(r.cpus) or nil,
    memory = r.memory, gpus = r.gpus, gres = r.gres,
    nodes = nodes or r.nodes,
    working_directory = cfg.working_directory,
    stdout = cfg.working_directory .. "/navette-%j.out",
    requeue = spec.requeue == true,
    env = env,
  }
  env.NAVETTE_RETRY_ON = launcher_retries(spec)
  local warn = warn_before(spec)
  if warn then
    env.NAVETTE_WARN_BEFORE = tostring(warn)
    -- (Slurm's limit is whole minutes)
    env.NAVETTE_TIME_LIMIT = r.time_limit
                             and tostring(math.ceil(r.time_limit / 60) * 60)
  end
  return d
end

local function token_lifespan(spec, profile_max)
  local limit = spec.resources and spec.resources.time_limit
  local creds = require "navette.creds"
  return math.min(profile_max, (limit or 0) + creds.JOB_TOKEN_MARGIN)
end

-- A submission of the same job whose answer never came (no Slurm id):
-- found in Slurm by its name, it is adopted instead of submitted again;
-- not found, it is marked failed. Returns the adopted row's id, or nil.
local function settle_pending(db, session, spec)
  local text = db:pending_remote(M.name, spec.profile, spec.name)
  local adopted
  for _, row in ipairs(text and json.decode(text) or {}) do
    if row.spec and row.spec.commit == spec.commit then
      -- a task of a job array is found by the array's name
      local array = row.spec.array
      local found, ferr = session:find { name = array and array.name
                                                or row.id }
      if found then
        db:set_remote(row.id, array and ((found.array_job_id
                      or found.job_id) .. "_" .. array.index)
                      or tostring(found.job_id), "queued")
        db:phase(row.id, "accepted", sys.now())
        adopted = adopted or row.id
      elseif ferr and ferr.code == "not_found" and row.id == spec.id then
        -- this very submission, resumed (runner.spec): never reached
        -- Slurm, so it is sent now under its recorded id
      elseif ferr and ferr.code == "not_found" then
        db:finish(row.id, "failed", nil,
          { phase = "accepted", reason = "the submission got no answer "
            .. "and Slurm has no job by this name",
            hint = "nothing ran: submit it again" })
      else
        error(errors.new("backend", "cannot look up job " .. row.id
                         .. " in Slurm: " .. (ferr and ferr.message or "?"),
                         ferr and ferr.hint), 0)
      end
    end
  end
  return adopted
end

-- Closes a session unless the caller keeps it (see send).
local function release(session, cache)
  if not cache then session:close() end
end

-- Sends spec (its launcher: script) to Slurm; returns the job's id (an
-- earlier submission of it, adopted, when its answer had been lost).
-- ctx: see backends; ctx.sessions, when given, is a table the caller
-- keeps for one run, so a sweep goes through one session (one version
-- discovery, kept-alive connections) per cluster, user, credential and
-- token lifespan; the caller closes them.
-- The Slurm ids of the jobs spec runs after ("12,13", a task of an array
-- "14_2", a whole array "15" when it runs after each of its tasks); nil
-- when it runs after none. Each was submitted before it, so each has its
-- Slurm id; one without (its submission failed) stops the run here,
-- before this job is sent.
local function after_ids(db, spec)
  if not spec.after or #spec.after == 0 then return nil end
  local ids, arrays = {}, {}
  for _, id in ipairs(spec.after) do
    local text = db:get(id)
    local row = text and json.decode(text)
    local remote = row and row.remote_id
    if type(remote) ~= "string" or not (remote:match("^%d+$")
                                         or remote:match("^%d+_%d+$")) then
      error(errors.new("backend", "job '" .. spec.name .. "' runs after "
                       .. id .. ", which has no Slurm job id",
                       "see `navette status " .. id .. "`, then run again"),
            0)
    end
    local array = remote:match("^(%d+)_")
    if array then
      local a = arrays[array] or { n = 0, size = row.spec.array.size }
      arrays[array] = a
      a.n = a.n + 1
      a[#a + 1] = remote
    else
      ids[#ids + 1] = remote
    end
  end
  for _, array in ipairs(util.sorted_keys(arrays)) do
    local a = arrays[array]
    if a.n == a.size then
      ids[#ids + 1] = array -- (afterok of an array: all its tasks)
    else
      for _, remote in ipairs(a) do ids[#ids + 1] = remote end
    end
  end
  return table.concat(ids, ",")
end

-- A Slurm job id as a row keeps it ("12", or "14_2" for a task of an
-- array) -> the job or array id, and the task index or nil.
local function remote_ref(remote_id)
  local array, task = tostring(remote_id):match("^(%d+)_(%d+)$")
  if array then return tonumber(array), tonumber(task) end
  return tonumber(remote_id), nil
end

-- The session for spec's cluster and token lifespan (kept in ctx.sessions
-- for the run when given), or, when it cannot be opened, the error.
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

-- secrets: each sealed here (jobs.secret_seal: encrypted under a
-- password drawn for it) and put in the store outside the job's prefix;
-- the launcher sent to Slurm carries the password and presigned GET and
-- DELETE URLs that last the job's URLs' lifetime: the node fetches the
-- object once, deletes it, and decrypts it into a folder of its own. The
-- spec (jobs.db) keeps the objects' keys only, so that `navette status`
-- deletes one a job left (it never started, say) once the job is over.
-- For a job on the host of the node (an image's container would need the
-- folder mounted: not yet).
function M.secrets(_, spec)
  if spec and spec.container then return false, " for a job in an image" end
  return true
end

local function secrets_key(spec, name)
  return "_secrets/" .. spec.project .. "/" .. spec.id .. "/" .. name
end

-- Deletes the secrets' objects of spec (best effort: what is gone is
-- gone).
local function delete_secrets(spec, store)
  local own = not store
  store = store or published.s3_store(spec)
  if not store then return end
  for _, key in ipairs(spec.secrets_objects or {}) do store:delete(key) end
  if own then store:close() end
end

-- Seals and uploads spec's secrets; returns the script to send (the
-- launcher rendered again with their URLs and passwords, which no record
-- keeps) or the script as it was for a job without secrets.
local function deliver_secrets(spec, script, ctx)
  if not spec.secrets then return script end
  local store = require("navette.storage")._s3()
  local lifetime = spec.transfer and spec.transfer.lifetime
  if not lifetime then
    error(errors.new("backend", "job '" .. spec.name .. "' has secrets "
                     .. "but no transfer URLs", "submit again with this "
                     .. "version of navette"), 0)
  end
  local tmp_dir = core.home() .. "/tmp"
  errors.check(sys.mkdir_p(tmp_dir))
  local delivery = json.array({})
  spec.secrets_objects = json.array({})
  for _, item in ipairs(spec.secrets) do
    local tmp = tmp_dir .. "/secret-" .. sys.random_hex(8)
    local pass, err = jobs_native.secret_seal(ctx.secret(item.credential),
                                              tmp)
    local put
    if pass then
      local key = secrets_key(spec, item.name)
      put, err = store:put(key, tmp)
      if put then spec.secrets_objects[#spec.secrets_objects + 1] = key end
    end
    sys.remove(tmp)
    local get, del
    if put then
      local bucket, full = store:locate(put.url)
      get, err = store.client:presign("GET", bucket, full, lifetime)
      if get then
        del, err = store.client:presign("DELETE", bucket, full, lifetime)
      end
    end
    if not del then
      delete_secrets(spec, store)
      error(errors.new("backend", "cannot deliver secret " .. item.name
                       .. " of job '" .. spec.name .. "': " .. err.message,
                       err.hint), 0)
    end
    delivery[#delivery + 1] = { name = item.name, get = get, delete = del,
                                password = pass }
  end
  -- the launcher as runner.render_launcher makes it, with the delivery
  local saved = { spec.launcher, spec.redact_fingerprints }
  spec.launcher, spec.redact_fingerprints = nil, nil
  spec.secrets_delivery = delivery
  local text = json.encode(spec)
  spec.secrets_delivery = nil
  spec.launcher, spec.redact_fingerprints = saved[1], saved[2]
  return errors.check(jobs_native.launcher(text))
end

local function send(spec, script, ctx)
  local db = ctx.db
  local cache = ctx.sessions
  local ok, session = session_for(spec, ctx)
  if not ok then
    -- refused before anything reached Slurm (identity, most often): the
    -- job is recorded as failed where it stopped, then the error raised
    local e = errors.from(session)
    if db:submit(spec.id, spec.project, spec.profile, spec.name,
                 json.encode(spec), M.name) ~= nil then
      db:finish(spec.id, "failed", nil, { phase = "accepted",
                reason = e.message, hint = e.hint })
    end
    error(e, 0)
  end
  local adopted = settle_pending(db, session, spec)
  if adopted then
    release(session, cache)
    return adopted, true
  end
  local desc = description(spec, ctx.nodes)
  desc.after = after_ids(db, spec)
  local ok, cerr = native.check_desc(desc)
  if not ok then
    release(session, cache)
    error(errors.new("recipe", "job '" .. spec.name .. "': " .. cerr.message,
                     cerr.hint), 0)
  end
  local dok, delivered = pcall(deliver_secrets, spec, script, ctx)
  if not dok then
    release(session, cache)
    error(delivered, 0)
  end
  script = delivered
  -- recorded first: an answer lost from here on is found again by name
  local inserted, ierr = db:submit(spec.id, spec.project, spec.profile,
                                   spec.name, json.encode(spec), M.name,
                                   ctx.submission and ctx.submission.key)
  if inserted == nil then
    delete_secrets(spec)
    release(session, cache)
    return nil, ierr
  end
  local job_id, err, refused = session:submit(script, desc)
  if not job_id and not refused then
    -- no answer, or none that says no: Slurm may have the job. The row
    -- stays pending (no Slurm id) for the next run to find by name.
    release(session, cache)
    error(errors.new("backend", "slurmrestd at " .. spec.slurm.endpoint
                     .. ": the submission of job '" .. spec.name .. "' got "
                     .. "no usable answer (" .. err.message .. "): it may "
                     .. "or may not be in Slurm", "check that slurmrestd "
                     .. "is reachable, then run the same `navette run` "
                     .. "again: it looks the job up in Slurm by its name "
                     .. spec.id .. " and submits it only if Slurm has "
                     .. "none"), 0)
  end
  if not job_id then
    -- refused for sure (a 4xx answer): nothing runs
    delete_secrets(spec)
    db:finish(spec.id, "failed", nil,
      { phase = "accepted", reason = "Slurm refused the job: "
        .. err.message, hint = err.hint or "check the profile's slurm "
        .. "settings and the job's resources" })
    release(session, cache)
    error(errors.new(err.code == "refused" and "refused" or "backend",
                     "Slurm refused job '" .. spec.name .. "': "
                     .. err.message, err.hint), 0)
  end
  -- tests: accepted by Slurm, not yet recorded (core/fault.h)
  jobs_native.fault_point("submit-accepted", spec.name)
  local recorded, rerr = db:set_remote(spec.id, tostring(job_id), "queued")
  if not recorded then
    -- Slurm runs it; the next run of the same job finds it by name
    release(session, cache)
    error(errors.new("backend", "Slurm accepted job '" .. spec.name
                     .. "' as " .. tostring(job_id) .. " but its id could "
                     .. "not be recorded: " .. rerr.message, "run the same "
                     .. "`navette run` again: it finds the job in Slurm by "
                     .. "its name " .. spec.id .. " and submits nothing "
                     .. "twice"), 0)
  end
  db:phase(spec.id, "accepted", sys.now())
  release(session, cache)
  return spec.id, false
end

-- Submits the job (ctx: see backends): sent to Slurm, or, when an
-- earlier submission of it got no answer but Slurm has it, that one
-- adopted (its own spec, its own URLs) and nothing sent again.
function M.submit(spec, launcher, ctx)
  local sub = ctx.submission or {}
  local id, adopted
  if sub.resumed and type(sub.resumed.remote_id) == "string" then
    -- Slurm's id was recorded; only the end of the submission was lost
    id, adopted = sub.resumed.id, true
  else
    id, adopted = send(spec, launcher, ctx)
  end
  if not id then
    error(errors.new("backend", "cannot record job '" .. spec.name
                     .. "': " .. adopted.message, adopted.hint), 0)
  end
  if adopted then
    local text = ctx.db:get(id)
    local row = text and json.decode(text)
    spec = row and row.spec or spec
    spec.adopted = true
    _navette.out.write("stderr", "note: job '" .. spec.name .. "' was "
                       .. "already submitted as " .. id .. " (Slurm job "
                       .. tostring(row and row.remote_id) .. "); its "
                       .. "answer had been lost: nothing was submitted "
                       .. "again\n")
  else
    ctx.audit(spec, M.name)
    for _, item in ipairs(spec.secrets or {}) do
      ctx.audit_secret(spec, item)
    end
  end
  errors.check(ctx.db:submitted(id))
  return spec
end

-- ---- job arrays ----------------------------------------------------------------

-- a sweep's jobs go to Slurm as one job array (runner.array_group)
M.arrays = true

-- Records the tasks' rows before the request (each with its spec, whose
-- `array` says how Slurm knows it: an answer lost from here on is found
-- again by the array's name), after each task's earlier submission whose
-- answer was lost has been looked for. -> the ids of the adopted ones,
-- by task (then none is recorded), and how many
local function array_rows(specs, session, ctx, name)
  local adopted, n = {}, 0
  for k, spec in ipairs(specs) do
    adopted[k] = settle_pending(ctx.db, session, spec)
    if adopted[k] then n = n + 1 end
  end
  if n > 0 and n < #specs then
    error(errors.new("backend", "of the " .. #specs .. " jobs of sweep '"
                     .. specs[1].name .. "'..., " .. n .. " were found in "
                     .. "Slurm from an earlier submission and the others "
                     .. "not", "see `navette jobs`; cancel what is left "
                     .. "of that submission, then run again"), 0)
  end
  if n > 0 then return adopted, n end
  -- (one transaction: all of them recorded, or none)
  errors.check(ctx.db:transaction(function()
    for k, spec in ipairs(specs) do
      spec.array = { name = name, index = k - 1, size = #specs,
                     first = specs[1].id }
      local sub = ctx.submissions[k] or {}
      local inserted, ierr = ctx.db:submit(spec.id, spec.project,
        spec.profile, spec.name, json.encode(spec), M.name, sub.key)
      if inserted == nil then
        error(errors.new("backend", "cannot record job '" .. spec.name
                         .. "': " .. ierr.message, ierr.hint), 0)
      end
    end
    return true
  end))
  return adopted, 0
end

-- What becomes of the tasks when the one request fails: refused for sure
-- (a 4xx answer): each failed; else each left pending, for the next run
-- to find by the array's name.
local function array_failed(db, specs, err, refused, name)
  local first = specs[1]
  if refused then
    for _, spec in ipairs(specs) do
      db:finish(spec.id, "failed", nil,
        { phase = "accepted", reason = "Slurm refused the job array: "
          .. err.message, hint = err.hint or "check the profile's slurm "
          .. "settings and the job's resources" })
    end
    error(errors.new(err.code == "refused" and "refused" or "backend",
                     "Slurm refused the job array of sweep '"
                     .. first.name .. "'...: " .. err.message, err.hint), 0)
  end
  error(errors.new("backend", "slurmrestd at " .. first.slurm.endpoint
                   .. ": the submission of the job array " .. name .. " ("
                   .. #specs .. " jobs) got no usable answer ("
                   .. err.message .. "): it may or may not be in Slurm",
                   "check that slurmrestd is reachable, then run the same "
                   .. "`navette run` again: it looks the array up in Slurm "
                   .. "by its name and submits it only if Slurm has none"), 0)
end

-- Submits the specs (the tasks of one sweep, script their one launcher)
-- as one job array: one request, task k-1 being specs[k], each task a
-- job of its own for navette (its row, Slurm id "ARRAY_TASK", prefix,
-- record). ctx: as submit's, with submissions[k] for each spec. -> the
-- specs (those of an earlier submission adopted, when its answer had
-- been lost).
function M.submit_array(specs, script, ctx)
  local first = specs[1]
  local ok, session = session_for(first, ctx)
  if not ok then error(errors.from(session), 0) end
  local name = first.id .. "-array"
  local adopted, n = array_rows(specs, session, ctx, name)
  if n > 0 then
    for k, spec in ipairs(specs) do
      specs[k] = M.submit(spec, script, { db = ctx.db, sessions =
        ctx.sessions, submission = { resumed = { id = adopted[k],
        remote_id = "adopted" } }, audit = ctx.audit })
    end
    return specs
  end
  local desc = description(first, ctx.nodes)
  desc.name, desc.comment = name, "navette array of " .. #specs
                                   .. " jobs from " .. first.id
  desc.env.NAVETTE_JOB_ID = nil
  desc.stdout = first.slurm.working_directory .. "/navette-%A_%a.out"
  desc.array = "0-" .. (#specs - 1)
  desc.after = after_ids(ctx.db, first)
  local checked, cerr = native.check_desc(desc)
  if not checked then
    error(errors.new("recipe", "job '" .. first.name .. "': "
                     .. cerr.message, cerr.hint), 0)
  end
  local array_id, err, refused = session:submit(script, desc)
  if not array_id then array_failed(ctx.db, specs, err, refused, name) end
  jobs_native.fault_point("submit-accepted", name)
  -- each task's Slurm id and phase, and its submission complete, in one
  -- transaction (a run killed before it finds the array by its name)
  local now, audited = sys.now(), {}
  errors.check(ctx.db:transaction(function()
    for k, spec in ipairs(specs) do
      errors.check(ctx.db:set_remote(spec.id, array_id .. "_" .. (k - 1),
                                     "queued"))
      ctx.db:phase(spec.id, "accepted", now)
      errors.check(ctx.db:submitted(spec.id))
      audited[k] = { spec, M.name .. " array " .. array_id .. " task "
                           .. (k - 1) }
    end
    return true
  end))
  ctx.audit_many(audited)
  return specs
end

-- ---- observation -------------------------------------------------------------

local last_refresh = {}

-- Slurm's states that stop a job from outside: its record (if any) does
-- not say how it ended.
local STOPPED = { TIMEOUT = true, NODE_FAIL = true, OUT_OF_MEMORY = true,
                  PREEMPTED = true, BOOT_FAIL = true, DEADLINE = true,
                  CANCELLED = true }

-- The final outcome of a Slurm job that ended (state, failure, exit
-- code), by the record's rule in C (host/jobs/record.c): the launcher's
-- record (text) when it ran to its end, Slurm's reason when the job was
-- stopped from outside (time limit, node failure, cancel, memory).
local function outcome(view, job, text)
  return _navette.record.outcome(text, {
    state = view.state, phase = view.phase,
    reason = "Slurm: " .. view.detail,
    hint = view.hint ~= "" and view.hint or nil,
    stopped = STOPPED[job.state] == true,
    phase_from_record = job.state == "CANCELLED",
    exit_code = view.exit_code >= 0 and view.exit_code or nil,
    missing_reason = "the job ended but left no run record in storage",
    missing_hint = "read the node's output (navette-" .. job.job_id
                   .. ".out in the profile's working_directory); check "
                   .. "the node's curl and that its POST policy had not "
                   .. "expired",
  })
end

-- Why a job that runs after others ended before it started, naming the
-- first of those that failed or was cancelled; nil when none did.
local function after_failure(db, spec, ctx)
  for _, id in ipairs(spec.after or {}) do
    local text = db:get(id)
    local row = text and json.decode(text)
    if row and row.state ~= "succeeded" and row.state ~= "failed"
       and row.state ~= "cancelled" and ctx then
      -- not looked at since it ended: brought up to date first
      M.refresh(row, ctx, true)
      text = db:get(id)
      row = text and json.decode(text)
    end
    if row and (row.state == "failed" or row.state == "cancelled") then
      return { phase = "accepted", reason = "it runs after " .. row.name
               .. " (" .. id .. "), which ended " .. row.state,
               hint = "see why that job ended (navette status), then run "
               .. "the recipe again" }
    end
  end
  return nil
end

-- Records the phases the launcher published ({phase, at} in ISO-8601)
-- in the local row, all but the end, which is Slurm's and the record's
-- to say. Returns the time of the latest one (0 when none) and the
-- time of the end the list holds, if any.
local function merge_phases(db, id, list)
  local last, ended = 0, nil
  for _, p in ipairs(list) do
    local at = type(p) == "table" and type(p.at) == "string"
               and util.parse_iso8601(p.at)
    if at and (p.phase == "succeeded" or p.phase == "failed"
               or p.phase == "cancelled") then
      ended = at
    elseif at and type(p.phase) == "string" then
      db:phase(id, p.phase, at)
      if at > last then last = at end
    end
  end
  return last, ended
end

-- The fields a job's view gets from what Slurm says of it now: its state
-- (with the reason a pending job waits for), its node, its restarts
-- after a node failure; or why Slurm could not be asked.
local function fields(extra)
  if extra.job then
    local restarts = extra.job.restarts or 0
    return { slurm = { state = extra.job.state, reason = extra.job.reason,
                       nodes = extra.job.nodes,
                       restarts = extra.job.restarts,
                       detail = extra.view and extra.view.detail or nil },
             -- (each requeue is an attempt: see retries_by_requeue)
             attempt = restarts > 0 and math.tointeger(restarts + 1) or nil }
  elseif extra.error then
    return { slurm = { error = extra.error.message } }
  end
  return nil
end

-- What refresh returns: extra, kept for REFRESH_EVERY seconds, as the
-- contract has it (backends: refresh).
local function info(extra, changed)
  return { changed = changed, fields = fields(extra), record = extra.record,
           record_url = extra.record_url }
end

-- Brings the row of a Slurm job up to date: Slurm's state, the phases
-- the launcher published, and, once it is over, its outcome.
function M.refresh(row, ctx, force)
  local spec = row.spec
  local db = ctx.db
  local extra = last_refresh[row.id]
  local final = row.state == "succeeded" or row.state == "failed"
                or row.state == "cancelled"
  if extra and (final or (not force and sys.now() - extra.at < REFRESH_EVERY))
  then
    return info(extra, false)
  end
  if final then
    -- what Slurm still says of it (its node, its restarts), if anything
    extra = { at = sys.now() }
    last_refresh[row.id] = extra
    if row.remote_id and row.remote_id ~= json.null then
      local ok, session = pcall(status_session, spec.slurm)
      if ok then
        extra.job = session:job(remote_ref(row.remote_id))
        session:close()
      end
    end
    return info(extra, false)
  end
  extra = { at = sys.now() }
  last_refresh[row.id] = extra
  if not row.remote_id or row.remote_id == json.null then
    return info(extra, false)
  end
  local store = published.s3_store(spec)
  if store then
    merge_phases(db, row.id, published.phases(store, spec))
  end
  local ok, session = pcall(status_session, spec.slurm)
  if not ok then
    extra.error = errors.from(session)
    if store then store:close() end
    return info(extra, store ~= nil)
  end
  local job, err = session:job(remote_ref(row.remote_id))
  session:close()
  if not job then
    extra.error = err
    if store then store:close() end
    return info(extra, store ~= nil)
  end
  extra.job = job
  local view = native.map_state(job, spec.requeue == true)
  extra.view = view
  if view.done then
    local record, text
    local url = spec.outputs.url .. _navette.record.names.run_record
    if store then
      text = store:read(url, 4 * 1024 * 1024)
      record = text and json.decode(text) or nil
    end
    local state, failure, code = outcome(view, job, text)
    if state == "cancelled" and not record then
      -- ended by Slurm because a job it runs after cannot succeed
      failure = after_failure(db, spec, ctx) or failure
    end
    -- the record's phases first (the status object read above may be
    -- older than the end), then the end: never before the last phase
    -- (Slurm's end time has whole seconds)
    local final_phase = state == "succeeded" and "succeeded" or "failed"
    local last, ended = merge_phases(db, row.id, record
                                     and type(record.phases) == "table"
                                     and record.phases or {})
    ended = ended or (job.end_time > 0 and job.end_time or sys.now())
    db:phase(row.id, final_phase, math.max(ended, last))
    db:finish(row.id, state, code, failure, record and url or nil)
    -- a secret the node did not fetch (and delete): deleted now
    if store and spec.secrets_objects then delete_secrets(spec, store) end
    -- the view shows this very record: not read twice
    extra.record, extra.record_url = record, record and url or nil
  else
    db:set_remote(row.id, nil, view.state)
  end
  if store then store:close() end
  return info(extra, true)
end

-- What Slurm knows now of the session user's jobs on the cluster of
-- spec.slurm (cfg): {[navette job id] = Slurm's job}, or nil and an error.
function M.listing(cfg)
  local ok, session = pcall(status_session, cfg)
  if not ok then return nil, errors.from(session) end
  local list, err = session:jobs()
  session:close()
  if not list then return nil, err end
  local by = {}
  for _, j in ipairs(list) do
    if j.name then by[j.name] = j end
  end
  return by
end

-- Cancels a Slurm job (its launcher publishes its log and record as it
-- stops); returns what to print.
function M.cancel(row, ctx)
  local session = status_session(row.spec.slurm)
  local endpoint = "slurmrestd at " .. tostring(row.spec.slurm.endpoint)
  if not row.remote_id or row.remote_id == json.null then
    -- a submission whose answer was lost: Slurm may run it all the same,
    -- so it is looked up by name before the row is said cancelled
    local found, ferr = session:find { name = row.id }
    if not found and not (ferr and ferr.code == "not_found") then
      session:close()
      error(errors.new("backend", endpoint .. ": cannot look up job "
                       .. row.id .. " before cancelling it: "
                       .. (ferr and ferr.message or "?"), "check that "
                       .. "slurmrestd is reachable, then cancel again"), 0)
    end
    if not found then
      session:close()
      ctx.db:finish(row.id, "cancelled", nil,
        { phase = row.phase, reason = "cancelled before Slurm answered",
          hint = "submit it again with navette run" })
      return "cancelled"
    end
    row.remote_id = tostring(found.job_id)
    ctx.db:set_remote(row.id, row.remote_id, nil)
  end
  local ok, was_done = session:cancel(remote_ref(row.remote_id))
  session:close()
  if not ok then
    error(errors.new("backend", endpoint .. ": cannot cancel Slurm job "
                     .. row.remote_id .. ": " .. was_done.message,
                     (was_done.hint and was_done.hint .. "; " or "")
                     .. "the job was not cancelled: cancel it again once "
                     .. "slurmrestd answers"), 0)
  end
  M.refresh(row, ctx, true)
  return was_done and "already finished" or "cancelling"
end

-- ---- reading back ------------------------------------------------------------

-- The job's log as its launcher shipped it: the chunks in order (read
-- once each), or the published log when no chunk was shipped.
local shipped = {}
function M.log_chunk(view, offset, ctx)
  local text = ctx.db:get(view.id)
  local spec = text and json.decode(text).spec
  local store = spec and published.s3_store(spec)
  if not store then return "" end
  local seen = shipped[view.id] or { n = 0, bytes = 0 }
  shipped[view.id] = seen
  local out = {}
  for _, c in ipairs(published.log_chunks(store, spec, seen.n)) do
    seen.n, seen.bytes = c.n, seen.bytes + #c.data
    out[#out + 1] = c.data
  end
  local data = table.concat(out)
  local ended = view.state == "succeeded" or view.state == "failed"
                or view.state == "cancelled"
  if seen.n == 0 and offset == 0 and ended and view.log_url then
    data = store:read(view.log_url) or ""
    seen.bytes = #data
  end
  store:close()
  return data
end

-- What `status` and `jobs --profile` show of a Slurm job (x: its view,
-- or a listed row completed by list_rows): its Slurm job, state and node.
function M.describe(x)
  local sl = x.slurm or {}
  local job_id = sl.job_id
  return {
    line = "backend " .. M.name .. " · job " .. tostring(x.remote_id)
           .. (sl.state and (" · " .. sl.state .. ((sl.reason and
               sl.reason ~= "None" and sl.reason ~= "") and (" ("
               .. sl.reason .. ")") or "")) or "")
           .. ((sl.nodes and sl.nodes ~= "") and (" on " .. sl.nodes)
               or "")
           .. ((sl.restarts or 0) > 0 and (" · requeued "
               .. sl.restarts .. "x") or ""),
    note = sl.error and ("(cannot reach Slurm: " .. sl.error .. ")") or nil,
    column = {
      title = "SLURM", width = 24,
      text = job_id and (tostring(job_id)
             .. (sl.state and (" " .. sl.state) or "")
             .. ((sl.nodes and sl.nodes ~= "") and (" " .. sl.nodes)
                 or "")) or "-",
    },
    node = sl.nodes ~= "" and sl.nodes or nil,
  }
end

-- Completes the listed rows of Slurm jobs (those of one profile) with
-- their Slurm job: what Slurm and the node say now of those still going,
-- and the ended ones as Slurm still has them (state, node), from one
-- listing.
function M.list_rows(rows, ctx)
  for _, r in ipairs(rows) do
    if not (r.state == "succeeded" or r.state == "failed"
            or r.state == "cancelled") then
      -- (a listed row has no spec: the whole row is read)
      local row = errors.check(ctx.db:get(r.id))
      row = json.decode(row)
      local got = M.refresh(row, ctx)
      if got.changed then row = json.decode(errors.check(ctx.db:get(r.id))) end
      r.state, r.phase, r.failure = row.state, row.phase, row.failure
      r.slurm = got.fields and got.fields.slurm
    end
    r.slurm = r.slurm or {}
    r.slurm.job_id = math.tointeger(tonumber(r.remote_id))
                     or (r.remote_id ~= json.null and r.remote_id or nil)
  end
  local listing
  for _, r in ipairs(rows) do
    if not r.slurm.state and r.slurm.job_id then
      if listing == nil then
        local text = ctx.db:get(r.id)
        local row = text and json.decode(text)
        listing = row and row.spec and row.spec.slurm
                  and M.listing(row.spec.slurm) or false
      end
      local sj = listing and listing[r.id]
      if sj then
        r.slurm.state, r.slurm.nodes, r.slurm.reason =
          sj.state, sj.nodes, sj.reason
      end
    end
  end
end

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
