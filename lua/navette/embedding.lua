-- The Lua half of the embedding API (navette.h: navette_plan, navette_run,
-- navette_job_status). Each function returns a table that the C side
-- encodes as JSON; the work itself is the runner's and the jobs module's,
-- the same code the CLI's plan, run --wait and status go through.
local errors = require "navette.errors"
local jobs = require "navette.jobview"
local core, sys, json = _navette.core, _navette.sys, _navette.json

local api = {}

-- How often a wait asks the backends whether the jobs can go on (seconds).
local AGENT_CHECK_S = 2

-- A plan shows a job's environment as the recipe wrote it (env holds
-- plain strings: job.lua refuses a value that looks like a secret), and
-- the launcher rendered from that view (as `navette plan`). Only a value
-- that is a secret's opaque handle would show as <hidden>, whatever its
-- name: the decision is on the value, not the key.
function api.shown_specs(specs)
  for _, spec in ipairs(specs) do
    spec.redact_fingerprints = nil
    if spec.env then
      local shown = {}
      for k, v in pairs(spec.env) do
        shown[k] = type(v) == "userdata" and "<hidden>" or v
      end
      spec.env = shown
      spec.launcher = require("navette.runner").render_launcher(spec)
    end
  end
  return specs
end

-- opts: profile. -> {project, profile, actions, jobs}
function api.plan(recipe, opts)
  local runner = require "navette.runner"
  local run = runner.load(recipe, { profile = opts and opts.profile,
                                    plan = true })
  local specs = api.shown_specs(runner.submit(run))
  return { project = run.project.name, profile = run.profile.name,
           actions = core.plan(), jobs = json.array(specs),
           reuse = require("navette.reuse").decisions(run) }
end

-- Polls the jobs until each has ended. Every few seconds their backends
-- check that they can go on (a local job's agent: one that cannot be
-- started raises at once, with the cause, instead of leaving the wait at
-- `submitted`).
function api.wait(ids)
  local last_check = sys.now()
  while true do
    local views, remaining = jobs.poll(ids)
    if remaining == 0 then return views end
    if sys.now() - last_check >= AGENT_CHECK_S then
      last_check = sys.now()
      jobs.supervise(views)
    end
    sys.sleep(0.1)
  end
end

-- opts: profile, wait. -> {project, profile, jobs = [views]}, and whether
-- every job succeeded (always true without wait).
function api.run(recipe, opts)
  opts = opts or {}
  local runner = require "navette.runner"
  local run, specs = runner.run(recipe, { profile = opts.profile })
  local ids = {}
  for i, s in ipairs(specs) do ids[i] = s.id end
  local views = opts.wait and api.wait(ids) or {}
  -- (the jobs reused instead of submitted first, as `run --json` has them)
  local list, ok = jobs.reused_views(run), true
  for _, id in ipairs(ids) do
    local v = views[id] or jobs.get(id)
    list[#list + 1] = v
    if opts.wait and v.state ~= "succeeded" then ok = false end
  end
  return { project = run.project.name, profile = run.profile.name,
           jobs = json.array(list) }, ok
end

function api.status(id)
  return jobs.get(id)
end

-- The C entry: api.call(name, ...) -> status, json | status, nil, err.
-- status is the CLI's exit status for the outcome (doc/cli.md, "Exit codes").
function api.call(name, ...)
  local ok, result, good = core.pcall(api[name], ...)
  if not ok then
    local e = errors.from(result)
    return errors.exit_status[e.code] or 4, nil, e
  end
  return good == false and 1 or 0, json.encode(result)
end

return api
