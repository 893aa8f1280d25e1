-- `navette cancel JOB`: stops a queued or running job, recorded in the
-- audit log, and waits a little for it to stop.
local term = require "navette.term"
local jobs = require "navette.jobview"
local common = require "navette.cli.common"
local sys = _navette.sys

local M = {
  name = "cancel",
  summary = { { "cancel JOB", "stop a queued or running job" } },
  usage = [[
usage: navette cancel JOB [--no-wait]
  Cancels a queued or running job (its whole process group), then waits
  up to 10 s for it to stop: prints the full id and `cancelled` once it
  has, `stopping` if it has not yet (--no-wait: do not wait).]],
  flags = { ["no-wait"] = "bool" },
  read_only = false,
}

-- How long `cancel` waits for a running job to stop before it says the
-- job is stopping (the agent sends SIGTERM, then SIGKILL after a grace).
local CANCEL_WAIT_S = 10

function M.run(argv)
  local opts, given = common.one_arg(M, argv, "JOB id")
  if not opts then return 0 end
  -- the full id from here on (a prefix names one job or is refused)
  local row = jobs.resolve(given)
  local id = row.id
  local ended = jobs.FINAL[row.state]
  local state = jobs.cancel(id)
  -- the audit line is mirrored to the store of the job's own profile
  local spec = row.spec or {}
  require("navette.audit").record({ action = "job.cancel", target = id,
    job = id, detail = state, profile = row.profile },
    spec.outputs and { name = row.profile, storage = spec.outputs.store,
                       s3 = spec.outputs.s3 })
  if state == "cancelling" and not opts["no-wait"] then
    local deadline = sys.now() + CANCEL_WAIT_S
    repeat
      sys.sleep(0.2)
      local v = jobs.get(id)
      if jobs.FINAL[v.state] then state = v.state end
    until state ~= "cancelling" or sys.now() > deadline
  end
  if state == "cancelling" then
    term.print(id .. ": " .. term.style("stdout", "yellow", "stopping")
               .. " (asked to stop; `navette watch " .. id
               .. "` shows when it has)")
  elseif state == "cancelled" and not ended then
    term.print(id .. ": " .. term.state_style("stdout", state))
  elseif jobs.FINAL[state] then
    term.print(id .. ": already " .. term.state_style("stdout", state)
               .. ", nothing to cancel")
  else
    term.print(id .. ": " .. state)
  end
  return 0
end

return M
