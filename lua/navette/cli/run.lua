-- `navette run RECIPE`: evaluates a recipe, submits its jobs to the
-- profile's backend, and with --wait follows them to their end.
local term = require "navette.term"
local jobs = require "navette.jobview"
local common = require "navette.cli.common"
local json = _navette.json

local M = {
  name = "run",
  summary = { { "run RECIPE", "submit a recipe's jobs (--wait to follow)" } },
  usage = [[
usage: navette run RECIPE [--profile P] [--node NAME] [--wait] [--json]
                   [--rerun NAME]... [--no-reuse]
  Evaluates RECIPE and submits every job it declares to the profile's
  backend (default profile: the project's default, else `local`). A job
  that ran before with the same key (code, inputs, image, command, env...)
  and whose outputs are still there is reused, not submitted; a job that
  runs although one of its name ran before says why.
  --rerun G  run the jobs whose names match G even if they could be
             reused (a name or a glob such as 'train[*]'; repeatable)
  --no-reuse run every job
  --node N   run on node N (slurm backend; a node list like gpu-[1-2])
  --wait     follow the jobs until they end (on a terminal, a line per
             job redrawn in place), then show how each ended: a failure
             with the last lines of its log; exit 1 if one failed
  --json     print the jobs as JSON (see `navette help cli`)]],
  flags = { profile = "value", wait = "bool", json = "bool", node = "value",
            rerun = "values", ["no-reuse"] = "bool" },
  read_only = false,
}

function M.run(argv)
  local opts, recipe, nodes = common.recipe_args(M, argv)
  if not opts then return 0 end
  local runner = require "navette.runner"
  local run, specs = runner.run(recipe, { profile = opts.profile,
    nodes = nodes, no_reuse = opts["no-reuse"], rerun_names = opts.rerun })
  if #(run.declared_jobs or run.jobs) == 0 then
    if not opts.json then
      term.print("recipe " .. recipe .. " declared no job")
    else
      term.print("[]")
    end
    return 0
  end
  return M.submitted(run, specs, opts)
end

-- What run and rerun print of the jobs they submitted (specs), and with
-- --wait their outcome; -> the exit status. opts: json, wait, rerun_of
-- (the run a rerun runs again).
function M.submitted(run, specs, opts)
  local ids = {}
  for _, s in ipairs(specs) do ids[#ids + 1] = s.id end
  local reused = run.reused or {}
  local decisions = run.decisions or {}
  -- (--json lists the jobs reused first, then those submitted)
  if not opts.json then
    -- the run's id first: watch, and the jobs of a run, take it
    term.print((specs[1] and ("run " .. tostring(specs[1].run) .. " · ")
                or "nothing to submit · ") .. "recipe "
               .. run.recipe .. " · project " .. run.project.name
               .. " · profile " .. run.profile.name
               .. (opts.rerun_of and (" · rerun of " .. opts.rerun_of)
                   or ""))
    for _, r in ipairs(reused) do
      term.print("reused  " .. term.style("stdout", "bold", r.name)
                 .. "  from " .. r.from)
    end
    for _, s in ipairs(specs) do
      term.print("job " .. term.style("stdout", "bold", s.name)
                 .. " submitted: " .. s.id)
      term.print("  commit " .. s.commit:sub(1, 12) .. " · image "
                 .. s.image .. " · outputs " .. s.outputs.url)
      if s.rerun_of then term.print("  rerun of " .. s.rerun_of) end
      local d = decisions[s.name]
      if d and d.run then term.print("  runs: " .. d.run) end
    end
    for _, note in ipairs(run.reuse_notes or {}) do
      term.print("note: " .. note)
    end
  end
  if #ids == 0 then
    -- every job reused: their outputs are where the earlier jobs put them
    if opts.json then
      term.print(json.encode(json.array(jobs.reused_views(run)), true))
    else
      term.print("every job was reused: nothing was submitted (--rerun "
                 .. "NAME or --no-reuse runs them again)")
    end
    return 0
  end
  if not opts.wait then
    if opts.json then
      local views = jobs.reused_views(run)
      for _, id in ipairs(ids) do
        local v = jobs.get(id)
        v.reuse = decisions[v.name] and decisions[v.name].run
        views[#views + 1] = v
      end
      term.print(json.encode(json.array(views), true))
    elseif #ids > 1 then
      term.print("follow with: navette watch " .. specs[1].run
                 .. "  (the run: its " .. #ids .. " jobs)")
    else
      term.print("follow with: navette watch " .. ids[1])
    end
    return 0
  end
  -- on a terminal the board of `navette watch RUN`; --json quiet
  local views, stopped
  if opts.json then
    views, stopped = common.follow(ids, true)
  else
    views, stopped = require("navette.cli.board").follow(ids)
  end
  if stopped then return common.interrupted(ids) end
  require("navette.reuse").index_succeeded(run, specs, views)
  if not opts.json then return common.print_outcomes(ids, views) end
  local status, list = 0, jobs.reused_views(run)
  for _, id in ipairs(ids) do
    list[#list + 1] = views[id]
    if views[id].state ~= "succeeded" then status = 1 end
  end
  term.print(json.encode(json.array(list), true))
  return status
end

return M
