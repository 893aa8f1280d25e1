-- The settings every way of reaching Slurm shares (backends/slurm.lua:
-- slurmrestd, backends/slurm_ssh.lua: a login node over SSH): the
-- profile keys that describe where and how jobs run (partition, account,
-- qos, nodes, working_directory, requeue, environment) and their checks,
-- what a backend's prepare does to a spec, and what the node launcher
-- takes from Slurm. A backend adds the keys of its own wire.
local errors = require "navette.errors"
local util = require "navette.util"
local logic = require "navette.slurm.logic"

local settings = {}

-- the keys of this file, in the order a backend's key list shows them
settings.KEYS = { "partition", "account", "qos", "nodes",
                  "working_directory", "requeue", "environment" }

-- the most jobs one job may run after (Slurm's dependency list, as
-- host/jobs/slurm.h bounds it)
settings.AFTER_MAX = 10000

-- Refuses a key of t that is not in keys (with the nearest one), through
-- fail(message, hint); label names the table ("slurm").
function settings.check_keys(t, keys, label, fail)
  local known = {}
  for _, key in ipairs(keys) do known[key] = true end
  for k in pairs(t) do
    if not known[k] then
      fail("unknown key '" .. tostring(k) .. "'" .. util.suggest(tostring(k),
           keys), label .. " keys are: " .. table.concat(keys, ", "))
    end
  end
end

-- The checked common settings of t (a profile's Slurm table), into out
-- (returned); fail(message, hint) raises.
function settings.check(t, fail, out)
  out = out or {}
  for _, k in ipairs({ "partition", "account", "qos" }) do
    if t[k] ~= nil and type(t[k]) ~= "string" then
      fail(k .. " must be a string")
    end
    out[k] = t[k]
  end
  local wd = t.working_directory or "/tmp"
  if type(wd) ~= "string" or wd:sub(1, 1) ~= "/" then
    fail("working_directory must be an absolute path on the nodes")
  end
  local nodes = require("navette.backends").node_list(t.nodes,
                                                  "^[%w._%[%],-]+$", fail)
  if t.requeue ~= nil and type(t.requeue) ~= "boolean" then
    fail("requeue must be a boolean")
  end
  local environment = require("navette.backends").environment(
    t.environment, fail)
  out.working_directory, out.nodes = wd, nodes
  out.requeue, out.environment = t.requeue == true, environment
  return out
end

-- A backend's prepare: checks the job's `after` (in the checking pass,
-- before any job of the run is sent), turns retries into requeue and
-- copies the profile's checked settings (cfg) into spec.slurm, which the
-- logic reads.
function settings.prepare(spec, profile, cfg)
  if spec.after and #spec.after > settings.AFTER_MAX then
    error(errors.new("recipe", "job '" .. spec.name .. "' runs after "
                     .. #spec.after .. " jobs; on Slurm at most "
                     .. settings.AFTER_MAX, "join them in stages: a job "
                     .. "after each part of them, then one after those"), 0)
  end
  logic.retries_by_requeue(spec)
  if spec.requeue == nil then spec.requeue = cfg.requeue end
  spec.slurm = {}
  for k, v in pairs(cfg) do spec.slurm[k] = v end
  spec.slurm.max_token_lifespan = profile.max_token_lifespan
end

-- What the node launcher takes from Slurm (the contract's launch,
-- host/jobs/launcher.h): the commands ask slurmctld through the node's
-- scontrol, $1 the job's id.
settings.launch = {
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

return settings
