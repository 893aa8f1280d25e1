-- Running the failed and cancelled jobs of one run again (`navette rerun
-- RUN --failed`): the same jobs, at that run's commit, as a new run.
--
-- Design: the recipe is evaluated again, read from git at the run's
-- commit (not HEAD), through the same two passes and sandbox as `navette
-- run`, and only the jobs whose names failed are kept and submitted. The
-- other way, rebuilding submissions from the rows' stored specs, would
-- skip what a submission must do anew: the project's trust, credentials
-- and presigned URLs minted fresh (a stored spec's have expired), the
-- secret scan, quotas, the image checked in its registry, inputs hashed.
-- Evaluating again keeps every one of those checks, for the price of
-- what the recipe itself does when evaluated (an upload, an image build)
-- and of refusing a recipe that now declares a job otherwise (its
-- command, environment or parameters) than in the run.
--
-- What is pinned to the run: each job's commit (its stored spec's) and
-- image (the digest it ran, checked again in its registry); an input from
-- the store must hold the bytes it held (its sha256). A job that runs
-- after one that succeeded no longer waits for it (met), and an input
-- that is its output still points at that job's published outputs; a
-- job that runs after one run again waits for the new one.
local errors = require "navette.errors"
local refusal = require "navette.run.report"
local jobs = require "navette.jobview"
local util = require "navette.util"
local sys = _navette.sys

local M = {}

local function refused(message, hint)
  error(errors.new("refused", message, hint), 0)
end

-- The path of the run's recipe to load, from where it was given (the
-- folder `navette run` was called in, unknown now): absolute, else from
-- this folder, else from the repository's root.
local function recipe_path(spec)
  local given = spec.recipe
  if type(given) ~= "string" or given == "" then
    refused("the jobs of the run do not name their recipe",
            "run the recipe again with navette run")
  end
  local tries = { given }
  if given:sub(1, 1) ~= "/" and type(spec.repository_path) == "string" then
    tries[2] = util.join(spec.repository_path, given)
  end
  for _, path in ipairs(tries) do
    local st = sys.stat(path)
    if st and st.type == "file" then return path end
  end
  refused("the recipe of the run, " .. given .. ", is not in this folder "
          .. "or at the root of " .. tostring(spec.repository_path),
          "rerun from the folder `navette run` was called in, with the "
          .. "recipe file in place (its text is read from the run's "
          .. "commit)")
end

-- What a rerun of the run `given` (its id or a unique prefix, or `last`:
-- the run of this project's latest job) runs: ->
-- { run = run id, recipe, profile, commit (the run's: its first job's),
-- again = {name -> old spec} (failed or cancelled), succeeded = {name ->
-- old spec}, count }; refuses a run that names none, is not over, has
-- nothing to run again or is another project's.
function M.plan(given)
  jobs.revive_agent()
  -- `last`: the run of this project's latest job
  if given == "last" then
    local row = jobs.pick("last").rows[1]
    given = type(row.run) == "string" and row.run or given
  end
  local run_id, ids = jobs.run(given)
  if not run_id then
    local e = ids or {}
    local message = tostring(e.message or ("no run '" .. given .. "'"))
    error(errors.new("usage", message, e.hint or "give the run id that "
                     .. "`navette run` printed (`navette jobs` shows the "
                     .. "jobs, `navette status JOB` a job's run)"), 0)
  end
  local info = { run = run_id, again = {}, succeeded = {},
                 count = #ids, order = {} }
  local going, first = {}, nil
  for _, id in ipairs(ids) do
    local v = jobs.get(id)
    local row = jobs.row(v.id)
    local spec = row and row.spec
    if type(spec) ~= "table" or not spec.name then
      refused("job " .. id .. " of run " .. run_id .. " has no stored "
              .. "spec", "run the recipe again with navette run")
    end
    first = first or spec
    if not jobs.FINAL[v.state] then
      going[#going + 1] = v.id .. " (" .. tostring(v.name) .. ", "
                          .. v.state .. ")"
    elseif v.state == "succeeded" then
      info.succeeded[spec.name] = spec
    else
      info.again[spec.name] = spec
      info.order[#info.order + 1] = spec.name
    end
  end
  if #going > 0 then
    refused("run " .. run_id .. " is not over: " .. #going .. " of its "
            .. #ids .. " jobs are queued or running:\n  "
            .. table.concat(going, "\n  "), "wait for it (navette watch "
            .. run_id .. ") or cancel it first (navette cancel JOB)")
  end
  if #info.order == 0 then
    refused("nothing to rerun: all " .. #ids .. " jobs of " .. run_id
            .. " succeeded", "rerun runs a run's failed and cancelled "
            .. "jobs; to run every job again: navette run "
            .. tostring(first.recipe))
  end
  local here = require("navette.project").at()
  if here.name ~= first.project then
    refused("run " .. run_id .. " is of project " .. tostring(first.project)
            .. ", not of this folder's project (" .. here.name .. ")",
            "rerun it from a checkout of project " .. tostring(first.project))
  end
  info.commit, info.profile = first.commit, first.profile
  info.recipe = recipe_path(first)
  return info
end

-- The old spec of a job run again, by its name, or nil.
function M.old(run, name)
  return run.rerun and run.rerun.again[name]
end

-- Keeps, of the jobs the recipe declared (run.jobs, evaluated at the
-- run's commit), those run again, each with the image it ran; refuses a
-- job of the run the recipe no longer declares, one declared otherwise,
-- or one that runs after a job the run does not have.
function M.select(run, info)
  run.rerun = info
  local kept, declared = {}, {}
  for _, j in ipairs(run.jobs) do
    declared[j.name] = true
    local old = info.again[j.name]
    if old then
      if j.library and j.library.commit ~= old.commit then
        refusal.refuse("job '" .. j.name .. "' ran commit "
          .. tostring(old.commit):sub(1, 12) .. " of its library, which "
          .. "navette.lock now pins at " .. j.library.commit:sub(1, 12),
          "run the recipe again with navette run", run, j.name)
      end
      -- the digest it ran, never a tag resolved anew
      if old.container and old.container.image then
        j.image, j.image_planned = old.container.image, nil
      end
      kept[#kept + 1] = j
    end
  end
  for _, name in ipairs(info.order) do
    if not declared[name] then
      refusal.refuse("recipe " .. run.recipe .. " at commit "
        .. info.commit:sub(1, 12) .. " does not declare job '" .. name
        .. "' of run " .. info.run, "a recipe must declare the same jobs "
        .. "each time: does it depend on the time, or on the store?", run,
        name)
    end
  end
  for _, j in ipairs(kept) do
    for _, name in ipairs(j.after) do
      if not info.again[name] and not info.succeeded[name] then
        refusal.refuse("job '" .. j.name .. "' runs after '" .. name
          .. "', which is not a job of run " .. info.run, "run the recipe "
          .. "again with navette run", run, j.name)
      end
    end
  end
  run.jobs = kept
end

-- A spec run again: the link to the job it runs again, checked to run
-- what that job ran (its command, environment, parameters, the bytes of
-- its inputs from the store).
function M.amend(run, j, spec)
  local old = M.old(run, j.name)
  if not old then return end
  spec.rerun_of = old.id
  local diff = util.first_difference
  for _, field in ipairs({ "command", "env", "params" }) do
    local d = diff(spec[field], old[field], field)
    if d then
      refusal.refuse("job '" .. j.name .. "' is declared with another "
        .. d .. " than in run " .. run.rerun.run, "a recipe must declare "
        .. "the same jobs each time; run it again with navette run", run,
        j.name)
    end
  end
  local was = {}
  for _, input in ipairs(old.inputs or {}) do was[input.name] = input end
  for _, input in ipairs(spec.inputs or {}) do
    local before = was[input.name]
    if not input.from and before and before.sha256 and input.sha256
       and before.sha256 ~= input.sha256 then
      refusal.refuse("job '" .. j.name .. "': input '" .. input.name
        .. "' (" .. input.url .. ") changed since run " .. run.rerun.run
        .. " (sha256 " .. before.sha256:sub(1, 12) .. ", now "
        .. input.sha256:sub(1, 12) .. ")", "the job would read other "
        .. "data: put the old object back, or run the recipe again with "
        .. "navette run", run, j.name)
    end
  end
end

return M
