-- `navette watch JOB|RUN`: the phase timeline as it passes, until the
-- job ends, or every job of one `navette run` until all have ended.
local term = require "navette.term"
local jobs = require "navette.jobview"
local common = require "navette.cli.common"

local M = {
  name = "watch",
  summary = { { "watch JOB|RUN", "follow a job's phases until it ends" } },
  usage = [[
usage: navette watch JOB|RUN
  Prints the phase timeline as it passes, until the job ends. Given the
  id of a run (what `navette run` printed for a recipe of several jobs),
  follows every job of that run until all have ended: on a terminal, a
  line per job with its current phase, updated in place; otherwise one
  line per phase, each labelled with its job's name.
  JOB: a job's id or unique prefix, its name (the latest job of that name
  in this project), a glob of names (train[*]: the latest of each), or
  `last`; several jobs are followed like a run.
  Exit 0 when it (or every job of the run) succeeded, 1 otherwise.]],
  flags = {},
  read_only = false, -- follows a job: see navette.cli
}

function M.run(argv)
  local opts, given = common.one_arg(M, argv, "JOB id")
  if not opts then return 0 end
  local pick = jobs.pick(given)
  if pick.run or #pick.rows > 1 then
    local ids = {}
    for i, r in ipairs(pick.rows) do ids[i] = r.id end
    return M.watch_run(pick.run, ids, given)
  end
  local v = jobs.get(pick.rows[1].id)
  term.print("job " .. v.id .. " (" .. tostring(v.name) .. ")")
  local views, stopped = common.follow({ v.id }, false)
  if stopped then return common.interrupted({ v.id }) end
  v = views[v.id]
  common.print_outcome(v)
  return v.state == "succeeded" and 0 or 1
end

-- Every job of one run (or those a glob named: label), until all have
-- ended: on a terminal, the board of navette.cli.board.
function M.watch_run(run, ids, label)
  term.print((run and ("run " .. run) or ("jobs " .. label)) .. " ("
             .. #ids .. " jobs)")
  local views, stopped = require("navette.cli.board").follow(ids)
  if stopped then return common.interrupted(ids) end
  return common.print_outcomes(ids, views)
end

return M
