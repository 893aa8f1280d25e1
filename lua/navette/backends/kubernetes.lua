-- The kubernetes backend: a job becomes one batch/v1 Job in the
-- profile's namespace, and one Secret owned by the Job that holds its
-- launcher (with the presigned URLs it fetches and publishes through), so
-- that both go together. The container runs the launcher itself
-- (launch.in_container): it fetches the code and inputs, runs the command
-- and publishes the outputs, log and run record through S3, as on Slurm.
-- A sweep is one Indexed Job (completionMode Indexed): one request, each
-- task still a job of its own for navette (its row, id, prefix, record;
-- its remote id JOB:INDEX).
--
-- The C side (host/k8s/, _navette.k8s) reads kubeconfigs, speaks to the
-- API server, builds the manifests and maps a Job and its pods to
-- navette's view (k8s_state.c); this file decides what to send and when.
--
-- Submission: the Job is created suspended, then its Secret (owned by the
-- Job's uid), then the Job is released (a merge patch). A row is written
-- before the first request; an answer lost from there on is settled by
-- the next run of the same job, which finds the Job by its name (the
-- navette id) and adopts it. `after` is navette's own: a Job that runs
-- after others is created suspended and labelled navette/held=after, and
-- released by the first look (status, watch, run --wait) that sees every
-- job it runs after succeeded; one that failed deletes it (cancelled,
-- saying which). The cluster runs nothing of it before then, so a closed
-- laptop holds it back: it is the one thing that waits for navette.
--
-- Observation: one LIST of the Jobs and pods of the profile's namespace
-- with the job's label (k8s look), the launcher's published phases, and,
-- once a task is over, its run record. A Job's time to live
-- (ttlSecondsAfterFinished) is set only once navette has read the run
-- records of all its tasks, so the cluster never forgets a Job nobody
-- looked at.
local errors = require "navette.errors"
local util = require "navette.util"
local published = require "navette.published"
local native = _navette.k8s
local sys, json = _navette.sys, _navette.json

local M = { name = "kubernetes" }

local KEYS = { "context", "namespace", "kubeconfig", "credential", "pin",
               "nodes", "environment", "image_pull_secret", "ttl",
               "timeout" }
local REFRESH_EVERY = 1.0   -- seconds between two looks at a job
local POD_WAIT = 20         -- seconds cancel waits for a task's pod
local TTL_DEFAULT = 3600    -- a finished Job's seconds, once read back
local RECORD_MAX = 4 * 1024 * 1024

M.profile_keys = KEYS
M.dependencies = true
M.arrays = true
M.settings_doc = "Kubernetes settings (backend = \"kubernetes\"): see "
  .. "`navette help kubernetes`."

-- The exit code with which the launcher ends an attempt that its job's
-- retries name (exit:N): the Job's podFailurePolicy counts it (the index
-- runs again, backoffLimitPerIndex = retries.max); any other failing
-- exit code fails the index at once.
local REQUEUE_EXIT = 75

-- What the launcher takes from the pod (host/k8s/k8s_manifest.c sets
-- these variables from the downward API): the completion index, the
-- failures of this index so far, the node; and the exit code that has
-- the Job controller run it again.
M.launch = {
  scheduler = "Kubernetes",
  array_index = "JOB_COMPLETION_INDEX",
  attempt = "K8S_INDEX_FAILURES",
  node = "K8S_NODE_NAME",
  requeue_exit = REQUEUE_EXIT,
  requeue_needs = "a Job whose podFailurePolicy counts exit code "
                  .. REQUEUE_EXIT,
  in_container = true,
}

-- Retries: a preempted pod (DisruptionTarget) or one whose node failed
-- is run again by the Job controller without using up a retry
-- (podFailurePolicy Ignore); an exit code the job's retries name is run
-- again by the launcher's exit REQUEUE_EXIT, counted per index. A
-- timeout cannot be: activeDeadlineSeconds bounds all of a Job's
-- attempts together. Checkpoints go through S3, as on Slurm.
M.retries = true
M.checkpoints = true

local function final(state)
  return state == "succeeded" or state == "failed" or state == "cancelled"
end

-- ---- the profile -----------------------------------------------------------

-- A DNS-1123 label: lowercase letters, digits and '-', not at its ends.
local function dns_label(s)
  return type(s) == "string" and #s <= 63
         and s:match("^[a-z0-9][-a-z0-9]*$") ~= nil and s:sub(-1) ~= "-"
end

-- Validates profile.kubernetes (t) of profile where.profile in project
-- file where.path.
function M.validate(t, where)
  local backends = require "navette.backends"
  local fail = backends.profile_fail(where, "kubernetes")
  if type(t) ~= "table" then
    fail("a kubernetes profile needs kubernetes = { namespace = ... }",
         "and context = \"NAME\" for a context other than the current one")
  end
  util.check_keys(t, KEYS, function(k, suggestion, list)
    fail("unknown key '" .. tostring(k) .. "'" .. suggestion,
         "kubernetes keys are: " .. list)
  end)
  if not where.storage:match("^s3://") then
    fail("the kubernetes backend needs s3:// storage", "the pod reads "
         .. "its inputs and publishes its outputs there, with presigned "
         .. "URLs")
  end
  if not dns_label(t.namespace) then
    fail("namespace must be the namespace the jobs go to (a DNS label: "
         .. "lowercase letters, digits and '-')")
  end
  for _, k in ipairs({ "context", "pin", "image_pull_secret" }) do
    if t[k] ~= nil and type(t[k]) ~= "string" then
      fail(k .. " must be a string")
    end
  end
  if t.pin and not t.pin:match("^sha256//[%w+/=]+$") then
    fail("pin must be \"sha256//BASE64\", the API server key's pin")
  end
  local kubeconfig = t.kubeconfig
  if type(kubeconfig) == "string" then kubeconfig = { kubeconfig } end
  if kubeconfig ~= nil then
    if type(kubeconfig) ~= "table" or #kubeconfig == 0 then
      fail("kubeconfig must be a path or a list of paths")
    end
    for i, p in ipairs(kubeconfig) do
      if type(p) ~= "string" or p == "" then
        fail("kubeconfig[" .. i .. "] must be a path")
      end
    end
  end
  local cred
  if t.credential ~= nil then
    cred = type(t.credential) == "string"
           and where.credentials[t.credential]
    if not cred then
      fail("credential '" .. tostring(t.credential) .. "' is not declared",
           "declare it under credentials = { ... } in navette.lua, or "
           .. "leave it out to use the kubeconfig's user")
    end
    if cred.kind ~= "bearer" then
      fail("credential '" .. t.credential .. "' is of kind " .. cred.kind
           .. ", not bearer (a token the API server takes)")
    end
  end
  local nodes = backends.node_list(t.nodes, "^[%w._-]+$", fail)
  local environment = backends.environment(t.environment, fail)
  local ttl = t.ttl == nil and TTL_DEFAULT or t.ttl
  if math.type(ttl) ~= "integer" or ttl < 0 or ttl > 2147483647 then
    fail("ttl must be the seconds a finished Job stays (0 or more), "
         .. "counted from when navette read its run record")
  end
  if t.timeout ~= nil and (type(t.timeout) ~= "number" or t.timeout < 1) then
    fail("timeout must be the seconds a request may take (1 or more)")
  end
  return {
    namespace = t.namespace, context = t.context, kubeconfig = kubeconfig,
    credential = cred, pin = t.pin, nodes = nodes,
    environment = environment, image_pull_secret = t.image_pull_secret,
    ttl = ttl, timeout = t.timeout,
  }
end

-- A job on Kubernetes runs in its image, which the launcher runs in.
function M.prepare(spec, profile)
  if not spec.container then
    error(errors.new("recipe", "job '" .. spec.name .. "': a job on "
                     .. "Kubernetes runs in an image", "give it image = "
                     .. "\"REPO@sha256:...\" (or a tag the run pins), an "
                     .. "image with sh and curl"), 0)
  end
  for _, kind in ipairs(spec.retries and spec.retries.on or {}) do
    if kind == "timeout" then
      error(errors.new("recipe", "job '" .. spec.name .. "': retries on "
                       .. "timeout cannot run on Kubernetes: a Job's "
                       .. "deadline (activeDeadlineSeconds, its "
                       .. "time_limit) counts all its attempts together",
                       "drop \"timeout\" from retries.on, or raise "
                       .. "time_limit and save a checkpoint"), 0)
    end
  end
  local cfg = profile.kubernetes
  spec.kubernetes = {}
  for k, v in pairs(cfg) do spec.kubernetes[k] = v end
  spec.kubernetes.max_token_lifespan = profile.max_token_lifespan
end

-- The profile's nodes, taken in turn by a sweep's jobs (--node).
function M.nodes(profile)
  return profile.kubernetes.nodes
end

-- ---- sessions ---------------------------------------------------------------

-- The kubeconfig files of cfg: its own, else kubectl's ($KUBECONFIG,
-- a colon list, else ~/.kube/config).
local function kubeconfig_paths(cfg)
  if cfg.kubeconfig then
    local out = {}
    for i, p in ipairs(cfg.kubeconfig) do
      out[i] = p:gsub("^~/", (sys.getenv("HOME") or "") .. "/")
    end
    return out
  end
  local env = sys.getenv("KUBECONFIG")
  if env and env ~= "" then
    local out = {}
    for p in env:gmatch("[^:]+") do out[#out + 1] = p end
    if #out > 0 then return out end
  end
  return { (sys.getenv("HOME") or "") .. "/.kube/config" }
end

local function where_of(cfg)
  return "Kubernetes" .. (cfg.context and (" context " .. cfg.context)
                          or "") .. ", namespace " .. tostring(cfg.namespace)
end

-- A session with the API server of cfg (a profile's or a recorded spec's
-- kubernetes table), and what open says of it; raises.
local function open(cfg)
  local handle
  if cfg.credential then
    local h, err = _navette.creds.load(cfg.credential)
    if not h then
      error(errors.new("refused", "the Kubernetes credential '"
                       .. tostring(cfg.credential.name) .. "' cannot be "
                       .. "loaded: " .. err.message, err.hint), 0)
    end
    handle = h
  end
  local session, info = native.open {
    kubeconfig = kubeconfig_paths(cfg), context = cfg.context,
    credential = handle, pin = cfg.pin, timeout = cfg.timeout,
  }
  if not session then
    error(errors.new(info.code == "refused" and "refused" or "backend",
                     where_of(cfg) .. ": " .. info.message, info.hint), 0)
  end
  return session, info
end
M.open = open

-- The session for spec (kept in ctx.sessions for the run when given);
-- a recorded spec's credential is loaded again (trust.recorded).
-- (kept for the process: a poll of many jobs, `run --wait` and `watch`
-- open one session per cluster and identity, so an exec plugin runs
-- once, not per job and per look; the collector closes them)
local held = {}
local function session_for(spec)
  local cfg = spec.kubernetes
  local key = table.concat({ tostring(cfg.context), tostring(cfg.pin),
    tostring(cfg.credential and cfg.credential.name),
    table.concat(kubeconfig_paths(cfg), ":") }, "\0")
  local s = held[key]
  if s then return s end
  s = open(require("navette.trust").recorded(cfg))
  held[key] = s
  return s
end


local function job_path(ns, name)
  return "/apis/batch/v1/namespaces/" .. ns .. "/jobs"
         .. (name and ("/" .. name) or "")
end

-- ---- the description --------------------------------------------------------

-- The Kubernetes job description of spec (k8s.manifest's keys): one job,
-- or with tasks (the specs of a sweep) one Indexed Job for all.
local function description(spec, ctx, tasks)
  local cfg = spec.kubernetes
  local r = spec.resources or {}
  local env = {}
  for k, v in pairs(cfg.environment or {}) do env[k] = v end
  local log_interval = sys.getenv("NAVETTE_LOG_INTERVAL")
  if log_interval and log_interval:match("^%d+%.?%d*$") then
    env.NAVETTE_LOG_INTERVAL = log_interval
  end
  if not tasks then env.NAVETTE_JOB_ID = spec.id end
  -- the kinds the launcher retries itself (the cluster: preemption and
  -- node failures)
  local kinds = {}
  for _, kind in ipairs(spec.retries and spec.retries.on or {}) do
    if kind ~= "node_fail" and kind ~= "preempted" then
      kinds[#kinds + 1] = kind
    end
  end
  if #kinds > 0 then env.NAVETTE_RETRY_ON = table.concat(kinds, " ") end
  local d = {
    name = spec.id, namespace = cfg.namespace,
    image = spec.container.image, tasks = tasks and #tasks or 1,
    suspend = true, env = env,
    project = spec.project, profile = spec.profile, run = spec.run,
    commit = spec.commit,
  }
  if r.cpus then d.cpus = tostring(r.cpus) end
  if r.memory then d.memory = math.tointeger(r.memory) or r.memory end
  if r.gpus then d.gpus = r.gpus end
  if r.time_limit then d.time_limit = math.ceil(r.time_limit) end
  if spec.retries then
    d.retries = spec.retries.max or 1
    if #kinds > 0 then d.requeue_exit = REQUEUE_EXIT end
  end
  if spec.member and spec.member.id then d.member = spec.member.id end
  if cfg.image_pull_secret then
    d.image_pull_secret = cfg.image_pull_secret
  end
  local node = ctx and ctx.nodes and ctx.nodes[1]
  if node then d.node = node end
  if spec.after and #spec.after > 0 then d.after = spec.after end
  if tasks then
    local ids = {}
    for k, t in ipairs(tasks) do ids[k] = t.id end
    d.task_ids = ids
  end
  return d
end
M.description = description

-- ---- submission -------------------------------------------------------------

-- The error of an answer that is not 2xx, for what (a verb and
-- resource, as "create jobs").
local function api_error(s, status, body, verb, resource)
  local ok, err = pcall(s.api_error, s, status, body or "", verb, resource)
  if ok then return err end
  return { code = "backend", status = status, message = "the Kubernetes "
           .. "API server answered HTTP " .. tostring(status) .. " to "
           .. verb .. " " .. resource }
end

-- The object of an answer's body, or nil when it is not a JSON object.
local function decoded(body)
  local ok, v = pcall(json.decode, body or "")
  return ok and type(v) == "table" and v or nil
end

-- The uid of a Job object's answer, or nil.
local function uid_of(body)
  local job = decoded(body)
  local uid = job and type(job.metadata) == "table" and job.metadata.uid
  return type(uid) == "string" and uid ~= "" and uid or nil
end

-- Deletes Job name of namespace ns (Background: its pods and Secret go
-- too); true when it is gone or going.
local function delete_job(s, ns, name)
  local st = s:request("DELETE", job_path(ns, name), native.delete_body())
  return st == 200 or st == 202 or st == 404
end

-- Whether an API error is a refusal for certain (nothing was created):
-- 4xx but 408 and 429.
local function refused(err)
  local st = err and err.status
  return type(st) == "number" and st >= 400 and st < 500 and st ~= 408
         and st ~= 429
end

-- Creates the Job of d (suspended), its Secret, and releases it unless it
-- runs after others. Returns the Job's uid and whether it was there
-- already (created by an earlier submission whose answer was lost); nil,
-- err, refused (true: nothing runs) when it fails.
local function create(s, d, launcher, secrets)
  local ns = d.namespace
  local manifest, merr = native.manifest(d, launcher, secrets)
  if not manifest then return nil, merr, true end
  local st, body = s:request("POST", job_path(ns), manifest)
  if not st then return nil, body, false end
  local uid, existed
  if st == 201 or st == 200 then
    uid = uid_of(body)
    if not uid then
      return nil, { code = "backend", message = "the API server's answer "
                    .. "to the Job's creation holds no uid" }, false
    end
  elseif st == 409 then
    -- the same name: ours when its navette/job label is this id
    local gst, gbody = s:request("GET", job_path(ns, d.name))
    if not gst then return nil, gbody, false end
    if gst ~= 200 then
      return nil, api_error(s, gst, gbody, "get", "jobs"), false
    end
    local job = decoded(gbody) or {}
    local meta = type(job.metadata) == "table" and job.metadata or {}
    local labels = type(meta.labels) == "table" and meta.labels or {}
    if labels["navette/job"] ~= d.name then
      return nil, { code = "refused", message = "a Job named " .. d.name
                    .. " that navette did not create is in namespace " .. ns,
                    hint = "delete it, or run again (a new id is drawn)" },
             true
    end
    uid, existed = uid_of(gbody), true
    if not uid then
      return nil, { code = "backend", message = "the Job " .. d.name
                    .. " has no uid in the API server's answer" }, false
    end
  else
    local err = api_error(s, st, body, "create", "jobs")
    return nil, err, refused(err)
  end
  -- tests: the Job created, not its Secret (core/fault.h)
  _navette.jobs.fault_point("k8s-job-created", d.name)
  local box, serr = native.secret_manifest(d, launcher, secrets, uid)
  if not box then
    -- (nothing may run without its Secret: the Job goes too)
    delete_job(s, ns, d.name)
    return nil, serr, true
  end
  st, body = s:request("POST", "/api/v1/namespaces/" .. ns .. "/secrets",
                       box)
  if not st then return nil, body, false end
  if st ~= 201 and st ~= 200 and st ~= 409 then
    local err = api_error(s, st, body, "create", "secrets")
    -- refused: the Job is deleted, so that nothing is left behind (an
    -- answer lost: the next run settles it, the next look resumes it)
    if refused(err) then delete_job(s, ns, d.name) end
    return nil, err, refused(err)
  end
  if not d.after then
    st, body = s:request("PATCH", job_path(ns, d.name),
                         native.resume_patch(),
                         "application/merge-patch+json")
    if not st then return nil, body, false end
    if st ~= 200 then
      return nil, api_error(s, st, body, "patch", "jobs"), false
    end
  end
  return uid, existed
end

-- A row of the same job whose submission got no answer: its Job found by
-- name is adopted; not found, the row fails (nothing ran). Returns the
-- adopted id or nil.
local function settle_pending(s, spec, ctx)
  local text = ctx.db:pending_remote(M.name, spec.profile, spec.name)
  local adopted
  for _, row in ipairs(text and json.decode(text) or {}) do
    local rs = row.spec
    if rs and rs.commit == spec.commit and rs.kubernetes then
      local name = rs.array and rs.array.job or row.id
      local st, body = s:request("GET", job_path(rs.kubernetes.namespace,
                                                  name))
      local job = st == 200 and decoded(body)
      local labels = job and type(job.metadata) == "table"
                     and job.metadata.labels
      if st == 200 and not (type(labels) == "table"
                            and labels["navette/job"] == name) then
        error(errors.new("backend", "a Job named " .. name .. " that "
                         .. "navette did not create is in namespace "
                         .. rs.kubernetes.namespace, "delete it, then "
                         .. "run again"), 0)
      elseif st == 200 and row.id == spec.id then
        -- this very submission, resumed (runner.spec): create() finishes
        -- it (a 409: the Job's Secret, then its release)
      elseif st == 200 then
        local remote = rs.array and (name .. ":" .. rs.array.index) or name
        ctx.db:set_remote(row.id, remote, "queued")
        ctx.db:phase(row.id, "accepted", sys.now())
        adopted = adopted or row.id
      elseif st == 404 and row.id ~= spec.id then
        ctx.db:finish(row.id, "failed", nil,
          { phase = "accepted", reason = "the submission got no answer "
            .. "and the cluster has no Job by this name",
            hint = "nothing ran: submit it again" })
      elseif st ~= 404 then
        local err = st and api_error(s, st, body, "get", "jobs") or body
        error(errors.new("backend", "cannot look up job " .. row.id
                         .. " in Kubernetes: " .. err.message, err.hint), 0)
      end
    end
  end
  return adopted
end

-- The job's secrets as k8s.secret_manifest takes them: {name = handle}.
local function secret_handles(spec, ctx)
  if not spec.secrets or #spec.secrets == 0 then return nil end
  local out = {}
  for _, item in ipairs(spec.secrets) do
    out[item.name] = ctx.secret(item.credential)
  end
  return out
end

-- What a failed create leaves: refused for certain, the rows fail and
-- nothing runs; else they stay pending for the next run to settle.
local function create_failed(specs, err, sure, ctx)
  local first = specs[1]
  local what = #specs > 1 and ("the Indexed Job of sweep '"
               .. first.name:match("^[^%[]*") .. "' (" .. #specs
               .. " jobs)") or ("job '" .. first.name .. "'")
  if sure then
    for _, spec in ipairs(specs) do
      ctx.db:finish(spec.id, "failed", nil,
        { phase = "accepted", reason = "Kubernetes refused the job: "
          .. err.message, hint = err.hint or "check the profile's "
          .. "namespace and the job's resources" })
    end
    error(errors.new(err.code == "refused" and "refused" or "backend",
                     "Kubernetes refused " .. what .. ": " .. err.message,
                     err.hint), 0)
  end
  error(errors.new("backend", where_of(first.kubernetes) .. ": the "
                   .. "submission of " .. what .. " got no usable answer ("
                   .. tostring(err.message) .. "): it may or may not be "
                   .. "in the cluster", "check that the API server is "
                   .. "reachable, then run the same `navette run` again: "
                   .. "it looks the Job up by its name " .. first.id
                   .. " and creates it only if the cluster has none"), 0)
end

-- Submits one job (ctx: see backends).
function M.submit(spec, launcher, ctx)
  local sub = ctx.submission or {}
  if sub.resumed and type(sub.resumed.remote_id) == "string" then
    -- the Job was created and recorded; only the end was lost
    local text = ctx.db:get(sub.resumed.id)
    local row = text and json.decode(text)
    spec = row and row.spec or spec
    spec.adopted = true
    errors.check(ctx.db:submitted(sub.resumed.id))
    return spec
  end
  local ok, s = pcall(session_for, spec)
  if not ok then
    local e = errors.from(s)
    if ctx.db:submit(spec.id, spec.project, spec.profile, spec.name,
                     json.encode(spec), M.name) ~= nil then
      ctx.db:finish(spec.id, "failed", nil, { phase = "accepted",
                    reason = e.message, hint = e.hint })
    end
    error(e, 0)
  end
  local done, got = pcall(function()
    local adopted = settle_pending(s, spec, ctx)
    if adopted then return adopted end
    local d = description(spec, ctx)
    -- (the secrets' handles first: one refused leaves no row behind)
    local handles = secret_handles(spec, ctx)
    local inserted, ierr = ctx.db:submit(spec.id, spec.project,
      spec.profile, spec.name, json.encode(spec), M.name,
      sub.key)
    if inserted == nil then
      error(errors.new("backend", "cannot record job '" .. spec.name
                       .. "': " .. ierr.message, ierr.hint), 0)
    end
    local uid, err, sure = create(s, d, launcher, handles)
    if not uid then create_failed({ spec }, err, sure, ctx) end
    _navette.jobs.fault_point("submit-accepted", spec.name)
    errors.check(ctx.db:set_remote(spec.id, spec.id, "queued"))
    ctx.db:phase(spec.id, "accepted", sys.now())
    return nil
  end)
  if not done then error(got, 0) end
  if got then
    local text = ctx.db:get(got)
    local row = text and json.decode(text)
    spec = row and row.spec or spec
    spec.adopted = true
    _navette.out.write("stderr", "note: job '" .. spec.name .. "' was "
                       .. "already submitted as " .. got .. "; its answer "
                       .. "had been lost: nothing was submitted again\n")
  else
    ctx.audit(spec, M.name)
    for _, item in ipairs(spec.secrets or {}) do
      ctx.audit_secret(spec, item)
    end
  end
  errors.check(ctx.db:submitted(spec.id))
  return spec
end

-- The most bytes of a launcher: the Secret's values may not add up to
-- more than 1 MiB (the API server's limit), with room for its keys.
local LAUNCHER_MAX = 1024 * 1024 - 1024

-- specs[i..j], and what ctx holds for them.
local function part_of(specs, ctx, i, j)
  local part, subs = {}, {}
  for k = i, j do
    part[#part + 1] = specs[k]
    subs[#subs + 1] = ctx.submissions[k] or false
  end
  local c = setmetatable({ submissions = subs }, { __index = ctx })
  return part, c
end

-- Submits the specs of one sweep as one Indexed Job: task k-1 is
-- specs[k], each a job of its own (row, id JOB:INDEX, prefix, record).
-- A sweep whose launcher would not fit in a Secret is sent as several
-- Indexed Jobs, halves of it, each with its own launcher.
function M.submit_array(specs, script, ctx)
  if #script > LAUNCHER_MAX and #specs > 1 then
    local out, half = {}, #specs // 2
    for _, range in ipairs({ { 1, half }, { half + 1, #specs } }) do
      local part, c = part_of(specs, ctx, range[1], range[2])
      local text = errors.check(_navette.jobs.array_launcher(
        require("navette.run.submit").array_json(part)))
      for _, spec in ipairs(M.submit_array(part, text, c)) do
        out[#out + 1] = spec
      end
    end
    return out
  end
  local first = specs[1]
  local s = session_for(first)
  local done, got = pcall(function()
    local n = 0
    local adopted = {}
    for k, spec in ipairs(specs) do
      adopted[k] = settle_pending(s, spec, ctx)
      if adopted[k] then n = n + 1 end
    end
    if n > 0 then
      if n < #specs then
        error(errors.new("backend", "of the " .. #specs .. " jobs of "
                         .. "sweep '" .. first.name .. "'..., " .. n
                         .. " were found in the cluster from an earlier "
                         .. "submission and the others not", "see "
                         .. "`navette jobs`; cancel what is left of that "
                         .. "submission, then run again"), 0)
      end
      for k in ipairs(specs) do
        local row = json.decode(errors.check(ctx.db:get(adopted[k])))
        specs[k] = row.spec
        specs[k].adopted = true
        errors.check(ctx.db:submitted(adopted[k]))
      end
      return specs
    end
    require("navette.backends").record_tasks(ctx, specs, M.name,
      function(k)
        return { job = first.id, index = k - 1, size = #specs,
                 first = first.id }
      end)
    local d = description(first, ctx, specs)
    local uid, err, sure = create(s, d, script, secret_handles(first, ctx))
    if not uid then create_failed(specs, err, sure, ctx) end
    _navette.jobs.fault_point("submit-accepted", first.id)
    local now, audited = sys.now(), {}
    errors.check(ctx.db:transaction(function()
      for k, spec in ipairs(specs) do
        errors.check(ctx.db:set_remote(spec.id, first.id .. ":" .. (k - 1),
                                       "queued"))
        ctx.db:phase(spec.id, "accepted", now)
        errors.check(ctx.db:submitted(spec.id))
        audited[k] = { spec, M.name .. " Indexed Job " .. first.id
                             .. " index " .. (k - 1) }
      end
      return true
    end))
    ctx.audit_many(audited)
    return specs
  end)
  if not done then error(got, 0) end
  return got
end

-- What a plan shows of the requests a submission sends (nothing is
-- sent): the Job, and the Secret with its values left out.
function M.plan_requests(specs, ctx)
  local first = specs[1]
  local d = description(first, ctx, #specs > 1 and specs or nil)
  local manifest, err = native.manifest(d)
  if not manifest then
    error(errors.new("recipe", "job '" .. first.name .. "': "
                     .. err.message, err.hint), 0)
  end
  local ns = d.namespace
  local keys = { "launcher.sh" }
  for _, item in ipairs(first.secrets or {}) do
    keys[#keys + 1] = "s." .. item.name
  end
  local out = {
    { method = "POST", path = job_path(ns), body = json.decode(manifest) },
    { method = "POST", path = "/api/v1/namespaces/" .. ns .. "/secrets",
      body = { apiVersion = "v1", kind = "Secret", type = "Opaque",
               metadata = { name = d.name, namespace = ns,
                            ownerReferences = "the Job's uid, once "
                                              .. "created" },
               stringData = "keys " .. table.concat(keys, ", ")
                            .. " (values not shown: the launcher, "
                            .. "`--launcher`)" } },
  }
  if not d.after then
    out[3] = { method = "PATCH", path = job_path(ns, d.name),
               body = json.decode(native.resume_patch()) }
  end
  return out
end

-- ---- observation ------------------------------------------------------------

-- The Job name and completion index of a row's remote id ("NAME" or
-- "NAME:INDEX").
local function remote_ref(remote_id)
  local name, index = tostring(remote_id):match("^([^:]+):(%d+)$")
  if name then return name, tonumber(index) end
  return tostring(remote_id), 0
end

local function no_remote(row)
  return not row.remote_id or row.remote_id == json.null
end

-- Following. What the cluster says of a profile's Jobs (those of its
-- namespace with its navette/project and navette/profile labels: its
-- scope) comes from one LIST of their Jobs, pods and events, kept up to
-- date by watching them from the LIST's resourceVersion
-- (allowWatchBookmarks): a look at a scope it read less than LIST_FRESH
-- seconds ago (WATCH_FRESH after a watch) takes what it has; a later one
-- watches the scope's Jobs, the next its pods, each from its own
-- resourceVersion, for up to WATCH_SECONDS. A quiet watch keeps what it
-- has (a bookmark moves its resourceVersion on); an event lists again,
-- as does a 410 (the version expired: compacted, or the API server
-- restarted), a watch answered otherwise (no verb watch in the Role: each
-- look lists), a Job asked for that the last LIST did not have (created
-- since), and a quiet watch RESYNC_EVERY seconds after the LIST (what no
-- watched object says: an Event, a quota's refusal). While the API
-- server does not answer, the scope keeps what it had, and is watched
-- from its versions once it answers. One watch a second for all of a
-- profile's jobs, however many a `run --wait` or a `watch` follows; the
-- wait between two looks is the watch's own. NAVETTE_DEBUG=1 traces
-- each LIST and watch on stderr.
local LIST_FRESH, WATCH_FRESH = REFRESH_EVERY, 0.25
local WATCH_SECONDS, RESYNC_EVERY = 1, 30
local debugging = sys.getenv("NAVETTE_DEBUG") ~= nil
local function trace(fmt, ...)
  if debugging then
    io.stderr:write("navette: kubernetes: ", fmt:format(...), "\n")
  end
end

-- The label selector of the scope of spec's Job name.
local function scope_of(spec, name)
  if spec.project and spec.profile then
    return "navette/project=" .. spec.project .. ",navette/profile="
           .. spec.profile
  end
  return "navette/job=" .. name
end

local scopes = {}
local function list(s, key, ns, selector, why)
  local got, err = s:look { namespace = ns, selector = selector,
                            events = true }
  if not got then
    trace("LIST %s in %s (%s) failed: %s", selector, ns, why, err.message)
    local c = scopes[key]
    if c then c.at, c.fresh = sys.now(), WATCH_FRESH end
    return nil, err
  end
  local now = sys.now()
  scopes[key] = { jobs = got.jobs, at = now, listed = now,
                  fresh = LIST_FRESH, next = "jobs",
                  rv = { jobs = got.resource_version,
                         pods = got.pods_resource_version } }
  trace("LIST %s in %s (%s): jobs at %s, pods at %s", selector, ns, why,
        got.resource_version, got.pods_resource_version)
  return got.jobs
end

-- The Jobs of a scope ({[name] = k8s look's job}), one of which is name
-- when given; force: listed now.
local function look(s, ns, selector, name, force)
  -- (a session is one cluster and identity: kept for the process)
  local key = tostring(s) .. "\0" .. ns .. "\0" .. selector
  local c = scopes[key]
  if not c or force then
    return list(s, key, ns, selector, c and "asked" or "first look")
  end
  if name and not c.jobs[name] then
    return list(s, key, ns, selector, "no Job " .. name .. " yet")
  end
  local now = sys.now()
  if now - c.at < c.fresh then return c.jobs end
  local kind = c.next
  c.next = kind == "jobs" and "pods" or "jobs"
  local seen
  local rv, err = s:watch { namespace = ns, kind = kind,
    selector = selector, resource_version = c.rv[kind],
    seconds = WATCH_SECONDS,
    on_event = function(what, object)
      if what == "BOOKMARK" then return true end
      seen = what .. " " .. tostring(object)
      return false
    end }
  if not rv then
    trace("watch %s from %s: %s", kind, c.rv[kind], err.message)
    if err.code == "expired" then
      return list(s, key, ns, selector, "410 Expired")
    elseif type(err.status) == "number" and err.status >= 400
           and err.status < 500 and err.status ~= 429 then
      -- (a refusal of the watch: a Role without the verb watch, a
      -- proxy that does not stream: each look lists)
      return list(s, key, ns, selector, "the watch was answered HTTP "
                  .. tostring(err.status))
    end
    -- (the API server does not answer, or not yet as it should: what
    -- the scope had is kept, to be watched from its versions again)
    c.at, c.fresh = sys.now(), WATCH_FRESH
    return nil, err
  end
  if seen then
    return list(s, key, ns, selector, kind .. " " .. seen)
  end
  trace("watch %s from %s: quiet, at %s", kind, c.rv[kind], rv)
  if sys.now() - c.listed >= RESYNC_EVERY then
    return list(s, key, ns, selector, "resync")
  end
  c.rv[kind], c.at, c.fresh = rv, sys.now(), WATCH_FRESH
  return c.jobs
end

-- Records the end of a task the cluster says is over (view: k8s look's
-- row), by its run record (if any) and the cluster's word.
local function finish(row, ctx, store, view, extra)
  local spec, db = row.spec, ctx.db
  local url = spec.outputs.url .. _navette.record.names.run_record
  local text = store and store:read(url, RECORD_MAX)
  local record = text and json.decode(text) or nil
  local state, failure, code = _navette.record.outcome(text, {
    state = view.state or (view.phase == "succeeded" and "succeeded"
                           or "failed"),
    phase = view.phase == "succeeded" and "running"
            or (view.failed_phase or view.phase),
    reason = "Kubernetes: " .. (view.reason or view.phase),
    hint = view.hint,
    stopped = view.stopped == true,
    phase_from_record = view.state == "cancelled",
    exit_code = view.exit_code,
    missing_reason = "the job ended but left no run record in storage",
    missing_hint = "read the pod's log (kubectl logs -n "
                   .. spec.kubernetes.namespace .. " " .. tostring(view.pod
                   or ("job/" .. remote_ref(row.remote_id))) .. "); check "
                   .. "the image's sh and curl, and that the POST policy "
                   .. "had not expired",
  })
  local last, ended = published.merge_phases(db, row.id, record
                                   and type(record.phases) == "table"
                                   and record.phases or {})
  ended = ended or sys.now()
  db:phase(row.id, state == "succeeded" and "succeeded" or "failed",
           math.max(ended, last))
  db:finish(row.id, state, code, failure, record and url or nil)
  extra.record, extra.record_url = record, record and url or nil
end

-- Why a job that runs after others cannot run (one of them failed or was
-- cancelled), or nil; and whether all of them succeeded.
local function producers(spec, ctx, refresh)
  local all = true
  for _, id in ipairs(spec.after or {}) do
    local text = ctx.db:get(id)
    local row = text and json.decode(text)
    if row and not final(row.state) then
      refresh(row, ctx)
      text = ctx.db:get(id)
      row = text and json.decode(text)
    end
    if not row or row.state == "failed" or row.state == "cancelled" then
      return { phase = "accepted", reason = "it runs after "
               .. (row and row.name or id) .. " (" .. id .. "), which "
               .. (row and ("ended " .. row.state) or "is unknown here"),
               hint = "see why that job ended (navette status), then run "
               .. "the recipe again" }, false
    end
    if row.state ~= "succeeded" then all = false end
  end
  return nil, all
end

-- Sets the time to live of a Job whose tasks are all read back.
local function set_ttl(s, ns, name, ttl)
  local patch = native.ttl_patch(ttl)
  s:request("PATCH", job_path(ns, name), patch,
            "application/merge-patch+json")
end

-- The rows of the tasks of job (a look's Job; row: one of them) that
-- have not ended in the database.
local function open_tasks(ctx, job, row)
  local ids = job.annotations and job.annotations["navette/tasks"]
  local out = {}
  for id in (ids or row.id):gmatch("[^,]+") do
    local text = ctx.db:get(id)
    local r = text and json.decode(text)
    if r and not final(r.state) then out[#out + 1] = r end
  end
  return out
end

local function fields(extra)
  if extra.view then
    local v = extra.view
    return { kubernetes = { job = extra.job, index = extra.index,
                            phase = v.phase, reason = v.reason,
                            pod = v.pod, node = v.node,
                            preempted = v.preempted or nil,
                            blocked = v.blocked or nil } }
  elseif extra.error then
    return { kubernetes = { job = extra.job, error = extra.error.message,
                            error_hint = extra.error.hint } }
  end
  return nil
end

local function info(extra, changed)
  return { changed = changed, fields = fields(extra), record = extra.record,
           record_url = extra.record_url }
end

local cache = {}

-- Brings the row of a job up to date (backends: refresh).
local function refresh(row, ctx, force)
  local spec = row.spec
  local extra = cache[row.id]
  if extra and (final(row.state)
                or (not force and sys.now() - extra.at < REFRESH_EVERY)) then
    return info(extra, false)
  end
  extra = { at = sys.now() }
  cache[row.id] = extra
  if final(row.state) or no_remote(row) then return info(extra, false) end
  local name, index = remote_ref(row.remote_id)
  extra.job, extra.index = name, index
  local cfg = spec.kubernetes
  local ok, s = pcall(session_for, spec)
  if not ok then
    extra.error = errors.from(s)
    return info(extra, false)
  end
  local store = published.walk_store(spec, ctx)
  if store then
    published.merge_phases(ctx.db, row.id, published.phases(store, spec))
  end
  local jobs, err = look(s, cfg.namespace, scope_of(spec, name), name,
                         force)
  local changed = store ~= nil
  local function done()
    if store then store:close() end
    return info(extra, changed)
  end
  if not jobs then
    extra.error = err
    return done()
  end
  local job = jobs[name]
  if not job then
    -- gone: deleted (by its time to live, or by hand) before navette
    -- read its end; the run record says how it ended, if it got there
    local view = { phase = row.phase or "accepted", state = "failed",
                   reason = "the Job " .. name .. " is no longer in "
                   .. "namespace " .. cfg.namespace .. " (deleted before "
                   .. "navette saw it end)", stopped = true,
                   hint = "kubectl get events -n " .. cfg.namespace }
    extra.view = view
    finish(row, ctx, store, view, extra)
    changed = true
    return done()
  end
  local held = job.suspended and not job.deleting
  local function resume()
    local st, body = s:request("PATCH", job_path(cfg.namespace, name),
                               native.resume_patch(),
                               "application/merge-patch+json")
    if st ~= 200 then
      extra.error = st and api_error(s, st, body, "patch", "jobs") or body
    end
  end
  if held and spec.after and #spec.after > 0 then
    -- held for its `after`: released, or ended (each of its tasks) with
    -- the reason once the Job is deleted
    local why, all = producers(spec, ctx, refresh)
    if why then
      if not delete_job(s, cfg.namespace, name) then
        extra.error = { message = "cannot delete the Job " .. name
                        .. " that can no longer run",
                        hint = "navette tries again at its next look" }
        return done()
      end
      for _, r in ipairs(open_tasks(ctx, job, row)) do
        ctx.db:finish(r.id, "cancelled", nil, why)
      end
      extra.view = { phase = "queued", reason = why.reason }
      changed = true
      return done()
    elseif all then
      resume()
    end
  elseif held then
    -- a submission stopped between the Job and its release (its answer
    -- lost, adopted since): released once its Secret is there; without
    -- it nothing can run, and the Job goes
    -- (asked by a dry run of creating an empty Secret of that name:
    -- 409 when it is there; its values are never read back)
    local st = s:request("POST", "/api/v1/namespaces/" .. cfg.namespace
                         .. "/secrets?dryRun=All", json.encode({
                           apiVersion = "v1", kind = "Secret",
                           metadata = { name = name } }))
    if st == 409 then
      resume()
    elseif (st == 201 or st == 200) and delete_job(s, cfg.namespace, name)
    then
      for _, r in ipairs(open_tasks(ctx, job, row)) do
        ctx.db:finish(r.id, "failed", nil, { phase = "accepted",
          reason = "the submission stopped before the Job's Secret was "
          .. "created: nothing ran", hint = "run it again" })
      end
      changed = true
      return done()
    end
  end
  local view = job.rows[index] or { phase = "accepted" }
  extra.view = view
  if view.done then
    -- (stopped from outside: its time limit, k8s_state.c's words; the
    -- record, if any, says only that a signal came)
    local stopped = view.reason and view.reason:find("time limit", 1, true)
                    ~= nil
    -- (a failure with an exit code, or of a job that ran, belongs to
    -- running; else to what came before: scheduling, the image)
    local failed_phase = (view.exit_code or row.state == "running")
                         and "running" or "accepted"
    finish(row, ctx, store, { phase = view.phase,
                              state = view.phase == "succeeded"
                                      and "succeeded" or "failed",
                              failed_phase = failed_phase,
                              reason = view.reason, hint = view.hint,
                              exit_code = view.exit_code, pod = view.pod,
                              stopped = stopped }, extra)
    if #open_tasks(ctx, job, row) == 0 then
      set_ttl(s, cfg.namespace, name, cfg.ttl or TTL_DEFAULT)
    end
    changed = true
  else
    local state = view.phase == "running" and "running" or "queued"
    ctx.db:set_remote(row.id, nil, state)
    changed = true
  end
  return done()
end
M.refresh = refresh

-- ---- cancel -----------------------------------------------------------------

-- Cancels a job: its Job deleted (propagationPolicy Background: the
-- garbage collector removes its pods and Secret); a task of a sweep, its
-- live pod (the index fails by the podFailurePolicy, the others go on),
-- or, when it is the last task open (with those of ctx.cancelling) and
-- has no live pod, the whole Job.
function M.cancel(row, ctx)
  local spec = row.spec
  local cfg = spec.kubernetes
  if final(row.state) then return row.state end
  local s = session_for(spec)
  local ok, got = pcall(function()
    if no_remote(row) then
      local name = spec.array and spec.array.job or row.id
      local remote = spec.array and (name .. ":" .. spec.array.index)
                     or name
      local st, gerr = s:request("GET", job_path(cfg.namespace, name))
      if not st then
        error(errors.new("backend", where_of(cfg) .. ": cannot look up "
                         .. "job " .. row.id .. " before cancelling it: "
                         .. gerr.message, "cancel it again once the API "
                         .. "server answers"), 0)
      end
      if st == 404 then
        ctx.db:finish(row.id, "cancelled", nil,
          { phase = row.phase, reason = "cancelled before the cluster "
            .. "answered", hint = "submit it again with navette run" })
        return "cancelled"
      end
      row.remote_id = remote
      ctx.db:set_remote(row.id, remote, nil)
    end
    local name, index = remote_ref(row.remote_id)
    local st, body, whole
    if spec.array then
      local jobs, err = look(s, cfg.namespace, scope_of(spec, name),
                             name, true)
      if not jobs then
        error(errors.new("backend", err.message, err.hint), 0)
      end
      local job = jobs[name]
      local view = job and job.rows[index]
      if not view or view.done then return "already finished" end
      -- a task without a pod yet: an Indexed Job runs every index it
      -- has, so it is cancelled with its Job when it is the last one
      -- open, its pod deleted once the Job controller made it (a Job
      -- just released, or a retry after its backoff); one held with its
      -- sweep cannot be cancelled alone
      -- (those this command cancels too count as cancelled)
      local open, others = open_tasks(ctx, job, row), 0
      for _, r in ipairs(open) do
        if r.id ~= row.id and not (ctx.cancelling or {})[r.id] then
          others = others + 1
        end
      end
      if not view.pod_live and others == 0 then
        whole = true
        st, body = s:request("DELETE", job_path(cfg.namespace, name),
                             native.delete_body())
        if st == 200 or st == 202 then
          -- (a task the cluster saw end is left to its next look: the
          -- Job gone, its run record says how it ended)
          errors.check(ctx.db:transaction(function()
            for _, r in ipairs(open) do
              local a = r.spec and r.spec.array
              local v = r.id ~= row.id and a and job.rows[a.index]
              if v and not v.done then
                ctx.db:finish(r.id, "cancelled", nil, { phase = r.phase,
                  reason = "cancelled (navette cancel) with its sweep: "
                  .. "the Job was deleted" })
              end
            end
            return true
          end))
        end
      else
        -- (a pod that ended or goes is not the task's: the Job controller
        -- makes another, after a backoff for a retry; the watch shows it)
        local deadline = sys.now() + POD_WAIT
        while not view.pod_live and not job.suspended
              and sys.now() < deadline do
          sys.sleep(0.2)
          local got, lerr = look(s, cfg.namespace, scope_of(spec, name),
                                 name)
          if not got then
            error(errors.new("backend", lerr.message, lerr.hint), 0)
          end
          job = got[name]
          view = job and job.rows[index]
          if not view or view.done then return "already finished" end
        end
        if not view.pod_live then
          error(errors.new("backend", where_of(cfg) .. ": job " .. row.id
            .. " (index " .. index .. " of Job " .. name .. ") has no pod "
            .. (job.suspended and "yet: its sweep is held until the jobs "
                .. "it runs after succeed, and an index of it cannot be "
                .. "left out" or ("after " .. POD_WAIT .. " s")),
            job.suspended and "cancel the whole sweep (navette cancel "
            .. "RUN, or each of its ids), or this task once it runs"
            or "cancel it again in a moment (the Job controller makes "
            .. "its pod, after a backoff for a retry)"), 0)
        end
        st, body = s:request("DELETE", "/api/v1/namespaces/"
                             .. cfg.namespace .. "/pods/" .. view.pod)
      end
    else
      st, body = s:request("DELETE", job_path(cfg.namespace, name),
                           native.delete_body())
    end
    if st == 404 then return "already finished" end
    if st ~= 200 and st ~= 202 then
      local err = st and api_error(s, st, body, "delete",
                                   spec.array and "pods" or "jobs") or body
      error(errors.new("backend", where_of(cfg) .. ": cannot cancel job "
                       .. row.id .. ": " .. err.message, (err.hint and
                       (err.hint .. "; ") or "") .. "the job was not "
                       .. "cancelled: cancel it again once the API "
                       .. "server answers"), 0)
    end
    ctx.db:finish(row.id, "cancelled", nil,
      { phase = row.phase, reason = "cancelled (navette cancel): the "
        .. ((spec.array and not whole) and "pod" or "Job") .. " was "
        .. "deleted" })
    return "cancelled"
  end)
  if not ok then error(got, 0) end
  return got
end

-- ---- reading back -----------------------------------------------------------

local shipped = {}

-- The job's log as its launcher shipped it; while no chunk is there, the
-- pod's own log through the API (what the container printed so far).
function M.log_chunk(view, offset, ctx)
  local data, spec, seen = published.shipped_log(shipped, view, offset,
                                                 ctx.db)
  if data == "" and seen.n == 0 and offset == 0 and not final(view.state)
     and view.kubernetes and view.kubernetes.pod and not seen.pod_log then
    seen.pod_log = true
    local ok, s = pcall(session_for, spec)
    if ok then
      data = s:log { namespace = spec.kubernetes.namespace,
                     pod = view.kubernetes.pod } or ""
      data = _navette.creds.redact(data)
    end
  end
  return data
end

-- What `status` and `jobs --profile` show of a job.
function M.describe(x)
  local k = x.kubernetes or {}
  local job = k.job or (x.remote_id and remote_ref(x.remote_id))
  return {
    line = "backend kubernetes · Job " .. tostring(job)
           .. (k.index and x.remote_id and tostring(x.remote_id):find(":")
               and (" index " .. k.index) or "")
           .. (k.pod and (" · pod " .. k.pod) or "")
           .. (k.node and (" on " .. k.node) or "")
           .. (k.reason and (" · " .. k.reason) or ""),
    note = k.error and ("(cannot reach the API server: " .. k.error
                        .. (k.error_hint and ("; " .. k.error_hint) or "")
                        .. ")") or nil,
    column = { title = "KUBERNETES", width = 28,
               text = x.remote_id and tostring(x.remote_id) or "-" },
    node = k.node,
  }
end

-- Completes listed rows (those of one profile): one look of the
-- profile's scope, one store.
function M.list_rows(rows, ctx)
  local walk = { stores = {} }
  local saved = ctx.walk
  ctx.walk = walk
  local ok, err = pcall(function()
    for _, r in ipairs(rows) do
      if not final(r.state) then
        local row = json.decode(errors.check(ctx.db:get(r.id)))
        local got = refresh(row, ctx)
        if got.changed then
          row = json.decode(errors.check(ctx.db:get(r.id)))
        end
        r.state, r.phase, r.failure = row.state, row.phase, row.failure
        r.kubernetes = got.fields and got.fields.kubernetes
      end
    end
  end)
  ctx.walk = saved
  for _, store in pairs(walk.stores) do
    if store then store:close() end
  end
  if not ok then error(err, 0) end
end

-- ---- what other modules ask of a backend ------------------------------------

-- The API server of the profile's context (isolation attributes it to
-- the profile: another profile's recipe may not call it through
-- navette.http), read from the kubeconfig as written, and only for a
-- project the user trusts (its kubeconfig paths are the clone's word).
function M.origins(profile, trusted)
  local cfg = profile.kubernetes
  if not trusted or not cfg then return {} end
  -- (a kubeconfig it cannot read names no server: never an error here)
  local ok, list = pcall(native.contexts, kubeconfig_paths(cfg))
  for _, c in ipairs(ok and list or {}) do
    if c.name == cfg.context or (not cfg.context and c.current) then
      return c.server ~= "" and { c.server } or {}
    end
  end
  return {}
end

function M.spec_credentials(spec)
  return { spec.kubernetes and spec.kubernetes.credential }
end

-- navette doctor's checks of a Kubernetes profile: the context and its
-- server, the credential (and when an exec credential expires), the
-- namespace, and whether the user may create Jobs and Secrets there (a
-- SelfSubjectAccessReview each).
function M.doctor(profile)
  local cfg = profile.kubernetes
  local out = {}
  local function add(name, status, detail, hint)
    out[#out + 1] = { name = name, status = status, detail = detail,
                      hint = hint }
  end
  local ok, s, i = pcall(open, cfg)
  if not ok then
    local e = errors.from(s)
    add("kubernetes", "fail", e.message, e.hint)
    return out
  end
  add("kubernetes", "ok", "context " .. tostring(i.context) .. " · "
      .. tostring(i.server) .. " · user " .. tostring(i.user) .. " ("
      .. tostring(i.auth) .. ")")
  if i.expires then
    local left = i.expires - sys.now()
    add("kubernetes credential", left > 300 and "ok" or "warn",
        "the exec credential expires in " .. math.floor(left) .. " s",
        "the plugin is asked again before it expires")
  end
  local st, body = s:request("GET", "/api/v1/namespaces/" .. cfg.namespace)
  if st == 200 then
    add("kubernetes namespace", "ok", cfg.namespace)
  elseif st == 403 then
    add("kubernetes namespace", "skip", cfg.namespace .. " (the user may "
        .. "not read namespaces: its access is checked below)")
  else
    local e = st and api_error(s, st, body, "get", "namespaces") or body
    add("kubernetes namespace", "fail", cfg.namespace .. ": "
        .. tostring(e.message), e.hint)
  end
  -- (watch: without it, following lists at each look; a warning)
  for _, what in ipairs({ { "create", "batch", "jobs" },
                          { "create", "", "secrets" },
                          { "delete", "batch", "jobs" },
                          { "list", "", "pods" },
                          { "watch", "", "pods", "warn" } }) do
    local allowed, reason = s:access_review { namespace = cfg.namespace,
      verb = what[1], group = what[2], resource = what[3] }
    local label = "kubernetes may " .. what[1] .. " " .. what[3]
    if allowed == nil then
      add(label, "fail", tostring(reason and reason.message), reason
          and reason.hint)
    elseif allowed then
      add(label, "ok", "in namespace " .. cfg.namespace)
    else
      add(label, what[4] or "fail", "not in namespace " .. cfg.namespace
          .. (reason and reason ~= "" and (": " .. reason) or ""),
          "ask the cluster's admin for a Role that lets you " .. what[1]
          .. " " .. what[3] .. " there")
    end
  end
  s:close()
  return out
end

return M
