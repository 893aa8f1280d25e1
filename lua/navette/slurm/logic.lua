-- Slurm's job logic, once, for every way of reaching Slurm: settling a
-- submission whose answer was lost (the job adopted when Slurm has it),
-- job arrays, the Slurm ids of the jobs one runs after, the outcome of a
-- job that ended, cancel, refresh, describe and the listed rows. A
-- backend (backends/slurm.lua: Slurm's REST API) is the wire under it: it
-- opens sessions and hands them over in a wire table; the logic never
-- knows how a session reaches Slurm.
--
-- The session interface (a table or userdata with these methods; errors
-- are tables {code, message, hint?}):
--   session:submit(script, desc) -> job_id | nil, err, refused
--       script: the batch script (the launcher); desc: the job
--       description (navette.slurm.description: name, comment,
--       partition, account, qos, time_limit, cpus, memory, gpus, gres,
--       nodes, working_directory, stdout, requeue, env = {NAME = value},
--       after = "12,14_2" or nil, array = "0-N" or nil). job_id: Slurm's
--       id (an array's id for an array). On failure `refused` is true
--       when Slurm said no for certain (nothing runs: the job fails), and
--       false when the answer was lost or unusable (Slurm may have the
--       job: its row stays pending, to be found by name).
--   session:find{ name = NAME } -> job, matches | nil, err
--       the newest of the user's jobs named NAME (an array: one of its
--       tasks), matches: how many had that name; err.code "not_found"
--       only when a complete answer of Slurm's has none, any other code
--       when Slurm could not be asked (read as "not found", it would
--       have a job whose answer was lost submitted twice).
--   session:job(id, task) -> job | nil, err
--       Slurm's job id, or task `task` of array id (task nil: a job).
--   session:jobs() -> { job, ... } | nil, err: the user's jobs.
--   session:cancel(id, task) -> true, was_done | nil, err
--       was_done: the job had already ended.
--   session:close(): closing twice is harmless.
-- A job is a table: job_id, name, state (Slurm's: PENDING, RUNNING,
-- COMPLETED, FAILED, CANCELLED, TIMEOUT, NODE_FAIL, OUT_OF_MEMORY,
-- PREEMPTED, ...), reason, nodes, exit_code, exit_signal, restarts,
-- requeue, time_limit_min, start_time, end_time (epoch seconds, 0 when
-- none), array_job_id and array_task_id for a task of an array.
--
-- The wire table new() takes:
--   name                      the backend's name (the rows' backend)
--   service                   what answers, in messages (the REST
--                             API's server, a login node...)
--   where(cfg)                -> "SERVICE at ADDRESS": the cluster of
--                             cfg (a spec's `slurm`), in messages
--   session(spec, ctx)        -> true, session | false, err: the session
--                             that submits spec; kept in ctx.sessions
--                             when given (the run closes those), else
--                             the logic closes it
--   status_session(cfg)       -> session, raising: for a look, a listing
--                             or a cancel; the logic closes it
--   check_desc(desc)          -> true | nil, err: desc can be sent
--   map_state(job, requeue)   -> view {state, phase, done, detail, hint,
--                             exit_code (-1: none)}: what Slurm's state
--                             of job means for navette
--   hold?(on)                 a listing's walk over its rows begins (true)
--                             or ends (false): a wire that keeps Slurm's
--                             answer a while (one squeue for every look)
--                             keeps it until the walk ends
-- A spec's `slurm` (set by the backend's prepare) holds the settings the
-- logic reads: partition, account, qos, working_directory, environment.
local description = require "navette.slurm.description"
local secrets = require "navette.slurm.secrets"

local logic = {}

-- The spec changes a Slurm backend's prepare makes for retries.
logic.retries_by_requeue = description.retries_by_requeue
-- The backend's `secrets` (backends: the contract).
logic.secrets = secrets.allowed

local WIRE = { name = "string", service = "string", where = "function",
               session = "function", status_session = "function",
               check_desc = "function", map_state = "function" }

-- The backend functions of the contract (backends/init.lua) that the
-- logic gives, over wire: submit, submit_array, refresh, listing,
-- cancel, log_chunk, describe, list_rows.
function logic.new(wire)
  for k, kind in pairs(WIRE) do
    assert(type(wire[k]) == kind, "slurm logic: wire." .. k .. " must be a "
           .. kind)
  end
  local L = {}
  require("navette.slurm.submit").install(L, wire)
  require("navette.slurm.observe").install(L, wire)
  return L
end

-- The logic over wire as a backend's part of the contract, put in M (the
-- backend's table): submission (a sweep as one job array), sealed
-- secrets, observation and reading back. Returns the logic.
function logic.backend(M, wire)
  local L = logic.new(wire)
  for _, k in ipairs({ "submit", "submit_array", "refresh", "listing",
                       "cancel", "log_chunk", "describe", "list_rows" }) do
    M[k] = L[k]
  end
  -- a sweep's jobs go to Slurm as one job array (runner.array_group)
  M.arrays = true
  M.secrets = logic.secrets
  return L
end

return logic
