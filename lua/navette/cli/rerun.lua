-- `navette rerun RUN --failed`: runs the failed and cancelled jobs of one
-- run again, at that run's commit, as a new run (navette.run.rerun says
-- how, and why the recipe is evaluated again).
local common = require "navette.cli.common"

local M = {
  name = "rerun",
  summary = { { "rerun RUN --failed",
                "run a run's failed and cancelled jobs again" } },
  usage = [[
usage: navette rerun RUN --failed [--wait] [--json]
  Runs again the failed and cancelled jobs of run RUN (the id `navette
  run` printed, or `last`: the run of this project's latest job), as a
  new run: the recipe is read and evaluated at RUN's
  commit, not HEAD, each job runs that commit and the image it ran, with
  a new id and its old one as rerun_of. The jobs that succeeded are not
  run again: a job that takes their outputs reads them as published.
  Refused while a job of RUN is queued or running, and when none failed.
  --failed   required: `rerun RUN` alone (every job) is not done yet
  --wait     follow the jobs until they end; exit 1 if one failed
  --json     print the jobs as JSON (see README, "--json fields")]],
  flags = { failed = "bool", wait = "bool", json = "bool" },
  read_only = false,
}

function M.run(argv)
  local opts, given = common.one_arg(M, argv, "RUN id")
  if not opts then return 0 end
  if not opts.failed then
    common.usage_error("rerun needs --failed: running every job of a run "
                       .. "again is not done yet (to run them all: "
                       .. "navette run RECIPE)", "rerun")
  end
  local rerun = require "navette.run.rerun"
  local info = rerun.plan(given)
  local runner = require "navette.runner"
  local run, specs = runner.run(info.recipe, { profile = info.profile,
                                               at = info.commit,
                                               rerun = info })
  opts.rerun_of = info.run
  return require("navette.cli.run").submitted(run, specs, opts)
end

return M
