-- `navette cancel JOB|RUN ...` and `navette cancel --all`: stops queued
-- or running jobs, each recorded in the audit log, and waits a little
-- for them to stop.
local term = require "navette.term"
local jobs = require "navette.jobview"
local common = require "navette.cli.common"
local sys = _navette.sys

local M = {
  name = "cancel",
  summary = { { "cancel JOB|RUN", "stop queued or running jobs" },
              { "cancel --all", "stop every job of this project" } },
  usage = [[
usage: navette cancel JOB|RUN ... [--no-wait]
       navette cancel --all [--yes] [--no-wait]
  Cancels queued or running jobs (each one's whole process group), then
  waits up to 10 s for them to stop: prints each full id and `cancelled`
  once it has, `stopping` if it has not yet (--no-wait: do not wait).
  JOB: a job's id or unique prefix, its name (the latest job of that name
  in this project), a glob of names (train[*]), or `last`; RUN: the id of
  a run (what `navette run` printed first): every job of it.
  --all   every queued or running job of this folder's project; on a
          terminal it asks first (--yes: do not ask)]],
  flags = { ["no-wait"] = "bool", all = "bool", yes = "bool" },
  read_only = false,
}

-- How long `cancel` waits for a running job to stop before it says the
-- job is stopping (the agent sends SIGTERM, then SIGKILL after a grace).
local CANCEL_WAIT_S = 10

-- The rows --all names: this project's jobs that have not ended.
local function all_of_project()
  local project = jobs.here()
  if not project then
    common.usage_error("cancel --all acts on the project of this folder, "
                       .. "and there is no navette.lua here", "cancel")
  end
  local rows = {}
  for _, r in ipairs(jobs.list(1000000)) do
    if r.project == project and not jobs.FINAL[r.state] then
      rows[#rows + 1] = r
    end
  end
  return rows, project
end

-- Asks the backend to stop row's job, audited; -> the state it answered.
local function cancel_one(row, batch)
  local state = jobs.cancel(row.id, batch)
  -- the audit line is mirrored to the store of the job's own profile
  local spec = row.spec or {}
  require("navette.audit").record({ action = "job.cancel", target = row.id,
    job = row.id, detail = state, profile = row.profile },
    spec.outputs and { name = row.profile, storage = spec.outputs.store,
                       s3 = spec.outputs.s3 })
  return state
end

local function say(id, state, ended)
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
end

function M.run(argv)
  local opts, args = common.command_args(M, argv)
  if not opts then return 0 end
  local rows = {}
  if opts.all then
    if #args > 0 then
      common.usage_error("--all takes no JOB: it names every job of this "
                         .. "project", "cancel")
    end
    local project
    rows, project = all_of_project()
    if #rows == 0 then
      term.print("no queued or running job in project " .. project)
      return 0
    end
    if not opts.yes then
      for _, r in ipairs(rows) do
        term.print(string.format("  %s  %-9s  %s", r.id, r.state,
                                 tostring(r.name)))
      end
      local yes = term.confirm("cancel these " .. #rows .. " jobs of "
                               .. "project " .. project .. "?")
      if yes == false then
        term.print("nothing cancelled")
        return 1
      end
    end
  else
    if #args == 0 then
      common.usage_error("expected a JOB or RUN (or --all)", "cancel")
    end
    local seen = {}
    for _, given in ipairs(args) do
      for _, r in ipairs(jobs.pick(given).rows) do
        if not seen[r.id] then
          seen[r.id] = true
          rows[#rows + 1] = r
        end
      end
    end
  end
  local states, ended, batch = {}, {}, {}
  for _, r in ipairs(rows) do batch[r.id] = true end
  for _, r in ipairs(rows) do
    ended[r.id] = jobs.FINAL[r.state]
    states[r.id] = cancel_one(r, batch)
  end
  local function stopping()
    for _, r in ipairs(rows) do
      if states[r.id] == "cancelling" then return true end
    end
    return false
  end
  if not opts["no-wait"] and stopping() then
    local deadline = sys.now() + CANCEL_WAIT_S
    repeat
      sys.sleep(0.2)
      for _, r in ipairs(rows) do
        if states[r.id] == "cancelling" then
          local v = jobs.get(r.id)
          if jobs.FINAL[v.state] then states[r.id] = v.state end
        end
      end
    until not stopping() or sys.now() > deadline
  end
  for _, r in ipairs(rows) do say(r.id, states[r.id], ended[r.id]) end
  return 0
end

return M
