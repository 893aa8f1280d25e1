-- The Slurm job description of a spec, as a session's submit takes it
-- (see navette.slurm.logic): its resources, the launcher's environment,
-- its requeue and the retries it stands for, and the Slurm ids of the
-- jobs it runs after. Nothing here depends on how the description
-- reaches Slurm.
local errors = require "navette.errors"
local util = require "navette.util"
local sys, json = _navette.sys, _navette.json

local description = {}

-- ---- retries and checkpoints ------------------------------------------------

-- Slurm requeues a job whose node fails, or that is preempted, when the
-- job allows it (requeue): navette's retries of those kinds are that
-- requeue. A timeout or an exit status Slurm would not retry: the
-- launcher does, on the node, by asking Slurm to requeue the job
-- (NAVETTE_RETRY_ON names those kinds). So navette never submits a job
-- again itself, one failure is retried once, by one of the two, and
-- nothing waits for the laptop. The launcher counts the attempts
-- (SLURM_RESTART_COUNT) and fails one past retries.max.
local REQUEUED = { node_fail = true, preempted = true }
-- The launcher stops the command this long before the time limit, so
-- that it saves a last checkpoint, or the launcher requeues a job that
-- retries on timeout. (Slurm's own warning, `signal`, reaches job steps
-- only, never the batch script: Slurm's REST API refuses its "B:".)
local WARN_BEFORE = 60

-- A spec with retries needs Slurm's requeue: set, or refused when the
-- job says requeue = false.
function description.retries_by_requeue(spec)
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

-- ---- the description ----------------------------------------------------------

-- The Slurm job description of a spec (the launcher is its batch script;
-- nodes: the run's --node, if any).
function description.of(spec, nodes)
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

-- The Slurm ids of the jobs spec runs after ("12,13", a task of an array
-- "14_2", a whole array "15" when it runs after each of its tasks); nil
-- when it runs after none. Each was submitted before it, so each has its
-- Slurm id; one without (its submission failed) stops the run here,
-- before this job is sent.
function description.after_ids(db, spec)
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
-- array) -> the job or array id, and the task index or nil (the
-- arguments of a session's job and cancel).
function description.remote_ref(remote_id)
  local array, task = tostring(remote_id):match("^(%d+)_(%d+)$")
  if array then return tonumber(array), tonumber(task) end
  return tonumber(remote_id), nil
end

return description
