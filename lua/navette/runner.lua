-- Running a recipe: find its repository and project, pick the profile,
-- evaluate the recipe in the sandbox (collecting the jobs it declares),
-- then turn each declaration into a job spec pinned to a clean commit and
-- hand it to the backend. Plan mode runs the same path with every side
-- effect recorded instead of done.
--
-- The work is done by the modules of navette/run/, one concern each:
--   report    refusals (audited) and portability's notes
--   declare   navette.job, navette.sweep, navette.outputs, context()
--   tree      a clean tree, recipe code read from the commit
--   load      the project, profile, sandbox and evaluation
--   pin       the commit, the secret scan, inputs and images
--   transfer  the code archive, signed URLs and their lifetimes
--   quota     the team member and the team's quotas
--   spec      a declaration made a job spec
--   submit    the specs handed to the backend, checked against the
--             checking pass, arrays
--   rerun     a run's failed jobs again, at its commit (navette rerun)
-- This file holds the two passes of a run and the names the commands
-- and tests call. Nothing the runner requires requires it back.
local refusal = require "navette.run.report"
local declaring = require "navette.run.declare"
local worktree = require "navette.run.tree"
local loading = require "navette.run.load"
local pinning = require "navette.run.pin"
local transfers = require "navette.run.transfer"
local quotas = require "navette.run.quota"
local jobspec = require "navette.run.spec"
local submitting = require "navette.run.submit"
local util = require "navette.util"
local rerunning = require "navette.run.rerun"
local core = _navette.core

local runner = {
  refuse = refusal.refuse,
  declare = declaring.declare,
  declare_sweep = declaring.declare_sweep,
  outputs = declaring.outputs,
  context = declaring.context,
  check_committed = worktree.check_committed,
  load = loading.load,
  findings_text = pinning.findings_text,
  scan_secrets = pinning.scan_secrets,
  pin_image = pinning.pin_image,
  url_lifetime = transfers.url_lifetime,
  sign_transfer = transfers.sign_transfer,
  member = quotas.member,
  check_quota = quotas.check_quota,
  note_concurrent = quotas.note_concurrent,
  spec = jobspec.spec,
  node_for = jobspec.node_for,
  render_launcher = submitting.render_launcher,
  array_group = submitting.array_group,
  first_difference = submitting.first_difference,
  array_json = submitting.array_json,
  submit = submitting.submit,
}

-- A run in two passes, so that a refused run has no side effect. The
-- first pass is a plan: the recipe is evaluated with every side effect
-- recorded instead of done (uploads, image pushes, credential commands),
-- and every precondition is checked (a clean tree, committed recipe code,
-- the secret scan, pushed commits, inputs and images, the profile's
-- policy); a refusal there leaves the store, the queue and the services as
-- they were, and the audit log holds only the refusal. The second pass
-- evaluates the recipe again and does it. opts: profile, nodes, at and
-- rerun (navette rerun: the commit the recipe is read at, and what
-- run.rerun.plan gave: only those jobs are kept), no_reuse and
-- rerun_names (globs of the jobs that run even when they could be reused:
-- navette.reuse). -> run, specs (run.reused: the jobs reused)
function runner.run(recipe, opts)
  opts = opts or {}
  -- what the recipe prints is shown once: the checking pass's only when
  -- it is refused
  local printed = {}
  local function keep(line) printed[#printed + 1] = line end
  local ok, check = pcall(function()
    local c = loading.load(recipe, { profile = opts.profile,
                                    nodes = opts.nodes, checking = true,
                                    print = keep, at = opts.at })
    if opts.rerun then rerunning.select(c, opts.rerun) end
    c.no_reuse, c.rerun_names = opts.no_reuse, opts.rerun_names
    if #c.jobs > 0 then submitting.submit(c) end
    return c
  end)
  if not ok then
    _navette.out.write("stdout", table.concat(printed))
    error(check, 0)
  end
  core.set_plan(false, true) -- (the checking pass's record is not shown)
  local run = loading.load(recipe, { profile = opts.profile,
                                    nodes = opts.nodes, at = opts.at })
  if opts.rerun then rerunning.select(run, opts.rerun) end
  -- the same jobs as checked, field by field (the command, its
  -- environment, inputs, image...): a recipe that declares others the
  -- second time (it reads the clock, a random number, or knows which
  -- pass it is in) is refused, naming what differs
  -- (the checking pass's jobs as declared: those reused left its list)
  local function shape(r)
    local names = {}
    for i, j in ipairs(r.declared_jobs or r.jobs) do
      names[i] = j.name .. "@" .. tostring(j.code)
    end
    return table.concat(names, ",")
  end
  local differs
  if shape(run) ~= shape(check) then
    differs = "other jobs (" .. shape(run) .. ") than when checked ("
              .. shape(check) .. ")"
  else
    -- (the jobs found the same, whole: submit takes their checked specs
    -- without comparing them again)
    run.same_jobs = {}
    for i, j in ipairs(run.jobs) do
      -- an image the recipe makes in the run (code_layer, build,
      -- debootstrap) is only planned in the checking pass, and pushed,
      -- by its digest, in this one: it is not compared
      local checked = (check.declared_jobs or check.jobs)[i]
      local skip = checked.image_planned
                   and { image = true, image_planned = true } or nil
      local field
      if util.same(j, checked, skip) then
        run.same_jobs[i] = not skip or nil
      else
        field = submitting.first_difference(j, checked, nil, 0, skip)
      end
      if field then
        differs = "job " .. j.name .. " with another " .. field
                  .. " than when checked"
        break
      end
    end
  end
  if differs then
    refusal.refuse("recipe " .. recipe .. " declared " .. differs,
           "a recipe must declare the same jobs each time it is evaluated: "
           .. "does it depend on the time or on a random number?", run)
  end
  run.scanned = check.scanned
  run.checked = check -- (its specs: see checked_specs)
  run.no_reuse, run.rerun_names = opts.no_reuse, opts.rerun_names
  -- (what the checking pass read of the reuse index, records and outputs)
  run.reuse_memo = check.reuse_memo
  local specs = #run.jobs > 0 and submitting.submit(run) or {}
  return run, specs
end

return runner
