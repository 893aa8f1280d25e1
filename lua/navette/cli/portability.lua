-- `navette portability RECIPE [--profile P] [--to NODE|PROFILE]`: may the
-- recipe's jobs move to another node without a person? The five rules of
-- navette.portability, each with its evidence and, when it fails, the
-- action to take first. Exit 0 when every rule holds, 1 otherwise.
local term = require "navette.term"
local common = require "navette.cli.common"
local errors = require "navette.errors"
local json = _navette.json

-- The facts of a recipe, evaluated under profile_name (the profile the
-- jobs run on now) and, with --to PROFILE, under that profile (rules 1
-- and 4 are the target's); target: nil, {profile = N} or {node = N}.
local function gather_recipe(recipe, profile_name, target)
  local runner = require "navette.runner"
  local last_run = require("navette.portability").last_run
  local jobs = require "navette.jobview"
  local survey = {}
  local evaluated_under = target and target.profile or profile_name
  local run = runner.load(recipe, { profile = evaluated_under,
                                    checking = true, survey = survey,
                                    print = function() end })
  local specs = #run.jobs > 0 and runner.submit(run) or {}
  -- out of plan mode for what follows, which only reads (a store's GET
  -- in plan mode is recorded, not done); the evaluation's plan is not
  -- shown
  _navette.core.set_plan(false, true)
  -- (the profile the jobs ran on: the target's evaluation aside)
  local source = target and target.profile
                 and require("navette.project").profile(run.project,
                                                        profile_name).name
                 or run.profile.name
  local rows = jobs.list(100000)
  local facts = {
    project = run.project.name, profile = source, target = target,
    store = run.profile.storage, credentials = run.profile.credentials,
    home = _navette.sys.getenv("HOME"), jobs = {},
    evaluated_under = run.profile.name,
  }
  for _, spec in ipairs(specs) do
    local notes = {}
    for _, n in ipairs(survey) do
      if n.job == spec.name then notes[#notes + 1] = n end
    end
    facts.jobs[#facts.jobs + 1] = {
      name = spec.name, spec = spec, notes = notes,
      last = last_run(rows, run.project.name, source, spec.name),
      on_target = target and target.node
                  and last_run(rows, run.project.name, source, spec.name,
                               target.node) or nil,
    }
  end
  return facts, run
end

local M = {
  name = "portability",
  summary = { { "portability RECIPE [--to NODE|PROFILE]",
                "may its jobs change node? the five rules" } },
  usage = [[
usage: navette portability RECIPE [--profile P] [--to NODE|PROFILE] [--json]
  Evaluates RECIPE (as `run` checks it: nothing is uploaded or submitted)
  and judges the five rules for moving its jobs to another node, on
  evidence: the commit on the remote, the image in its registry, the
  inputs in the store, and the jobs' last succeeded run records on the
  profile (the node they ran on, the outputs and log they published).
    1 code, image and data   a pushed commit, a published image, inputs
                             in object storage
    2 no hand-installed      the job runs in an image, not on the node's
      dependency             own environment
    3 outputs off the node   the last run published its outputs to
                             object storage
    4 no rights tied to a    no credential file of one machine or address,
      machine                no node key read by the command
    5 logs centralised       the last run shipped its log to the store
  --to PROFILE judges rules 1 and 4 under that profile; --to NODE shows
  how that node differs from where the job last ran. Exit 0 when every
  rule holds (an automated move is allowed), 1 with the actions to take
  first.]],
  flags = { profile = "value", to = "value", json = "bool" },
  read_only = false,
}

-- Prints the verdict; returns the exit status.
function M.print(result, header)
  term.print(header)
  for _, r in ipairs(result.rules) do
    term.printf("%2d. %-30s %s\n", r.id, r.name, r.status == "holds"
                and "holds" or term.style("stdout", "bold", "FAILS"))
    for _, e in ipairs(r.evidence) do term.print("      " .. e) end
    if r.action then term.print("      -> " .. r.action) end
  end
  term.print("")
  if result.allowed then
    term.print("verdict: automated move allowed")
  else
    term.print("verdict: not yet; first:")
    for _, a in ipairs(result.actions) do
      term.print("  - " .. a.action .. (#a.jobs > 0 and (" (jobs: "
                 .. table.concat(a.jobs, ", ") .. ")") or "")
                 .. " [rule " .. a.rule .. "]")
    end
  end
end

function M.run(argv)
  local opts, recipe = common.one_arg(M, argv, "RECIPE")
  if not opts then return 0 end
  local last_run = require("navette.portability").last_run
  local target
  if opts.to then
    if not opts.to:match("^[%w._%[%],-]+$") then
      common.usage_error("--to expects a node or profile name, got '"
                         .. opts.to .. "'", M.name)
    end
    -- a profile of the project, else a node of the profile's backend
    local runner_project = require "navette.project"
    local sys = _navette.sys
    local real = sys.realpath(recipe)
    if not real then
      error(errors.new("usage", "no recipe file '" .. recipe .. "'",
                       "give the path of a .lua recipe"), 0)
    end
    local proj = runner_project.at(require("navette.util").dirname(real))
    if proj.profiles and proj.profiles[opts.to] then
      target = { profile = opts.to }
    else
      local profile = runner_project.profile(proj, opts.profile)
      if not require("navette.backends").get(profile.backend).nodes then
        common.usage_error("--to " .. opts.to .. ": no profile of that "
          .. "name, and profile " .. profile.name .. " (" .. profile.backend
          .. ") has no nodes to name", M.name)
      end
      target = { node = opts.to }
    end
  end
  local facts = gather_recipe(recipe, opts.profile, target)
  if #facts.jobs == 0 then
    error(errors.new("usage", "recipe " .. recipe .. " declares no job: "
                     .. "there is nothing to move", "give the recipe "
                     .. "whose jobs would change node"), 0)
  end
  local result = require("navette.portability").evaluate(facts)
  if opts.json then
    term.print(json.encode({
      recipe = recipe, project = facts.project, profile = facts.profile,
      evaluated_under = facts.evaluated_under,
      to = opts.to, allowed = result.allowed,
      verdict = result.allowed and "automated move allowed" or "actions",
      rules = json.array(result.rules), actions = result.actions,
    }, true))
  else
    M.print(result, "portability of " .. recipe .. " · project "
      .. facts.project .. " · profile " .. facts.profile
      .. (target and (" -> " .. (target.profile and ("profile "
          .. target.profile) or ("node " .. target.node))) or ""))
  end
  return result.allowed and 0 or 1
end

return M
