-- Declarations: navette.job, navette.sweep and navette.outputs add jobs to
-- the run being evaluated; navette.context() tells a recipe its run.
local errors = require "navette.errors"
local context = require "navette.context"
local util = require "navette.util"
local job = require "navette.job"
local refusal = require "navette.run.report"
local current_run = refusal.current_run

local M = {}

-- The job of the run named `name`, or nil.
local function declared_job(run, name)
  for _, other in ipairs(run.jobs) do
    if other.name == name then return other end
  end
  return nil
end

-- Refuses a name the run already has.
local function check_new_name(run, j, what)
  local other = declared_job(run, j.name)
  if other then
    errors.raise("recipe", what .. ": a job named '" .. j.name
                 .. "' is already declared at " .. other.declared_at)
  end
end

local function add_job(run, j, what)
  check_new_name(run, j, what)
  run.jobs[#run.jobs + 1] = j
  return j
end

-- What a recipe gets back for a declared job: what was validated, and
-- output(path), which names one of the job's outputs as another job's
-- input (that job then runs after it).
local function handle(j)
  local h = {}
  for k, v in pairs(j) do h[k] = v end
  -- (a library's cache and repository are the runner's, never a recipe's)
  h.library = nil
  h.output = function(self, path)
    if type(self) ~= "table" or type(self.name) ~= "string" then
      errors.raise("recipe", "output: call it as job:output(\"path\")")
    end
    if type(path) ~= "string" then
      errors.raise("recipe", "job:output(path): path must be a string, "
                   .. "the output's name under the job's prefix")
    end
    return { job = self.name, output = path }
  end
  return h
end

-- navette.outputs(jobs, path): output `path` of each job of a list (what
-- navette.sweep returned, or jobs), as one input: NAME/1, NAME/2... for
-- the job that takes it.
function M.outputs(list, path)
  if type(list) ~= "table" or #list == 0 then
    errors.raise("recipe", "navette.outputs: the first argument is a list "
                 .. "of jobs (what navette.sweep returned)")
  end
  if type(path) ~= "string" then
    errors.raise("recipe", "navette.outputs: path must be a string, the "
                 .. "output's name under each job's prefix")
  end
  local out = {}
  for i, x in ipairs(list) do
    if type(x) ~= "table" or type(x.name) ~= "string" then
      errors.raise("recipe", "navette.outputs: item " .. i .. " is not a "
                   .. "job (what navette.job or navette.sweep returned)")
    end
    out[i] = { job = x.name, output = path }
  end
  return out
end

-- The jobs whose outputs j takes as inputs run before it: they join
-- j.after.
local function inputs_after(j)
  local seen = {}
  for _, name in ipairs(j.after) do seen[name] = true end
  local function add(input)
    if not seen[input.job] then
      seen[input.job] = true
      j.after[#j.after + 1] = input.job
    end
  end
  for _, name in ipairs(util.sorted_keys(j.inputs)) do
    local input = j.inputs[name]
    if type(input) == "table" and input.list then
      for _, x in ipairs(input) do add(x) end
    elseif type(input) == "table" then
      add(input)
    end
  end
end

-- code = "library" in a job a library declares: the library's commit
-- (lib: what library.use pinned; nil for the project's recipes).
local function library_code(j, lib, what)
  if j.code ~= "library" then return end
  if not lib then
    errors.raise("recipe", what .. ": job '" .. j.name .. "': code = "
                 .. "\"library\" is for a job that a library declares",
                 "a recipe's job runs a commit of the recipe's repository: "
                 .. "drop code, or name a revision (a branch, tag or "
                 .. "commit id)")
  end
  -- (plain values, so that the two passes' jobs compare equal: the
  -- repository object stays with the run's library.use)
  j.library = { url = lib.url, commit = lib.commit, dir = lib.dir }
end

function M.declare(decl, lib)
  local j = job.validate(decl)
  local run = current_run("navette.job")
  library_code(j, lib, "navette.job")
  inputs_after(j)
  return handle(add_job(run, j, "navette.job"))
end

-- navette.sweep: every job of the sweep is validated before the first is
-- declared. -> the list of the declared jobs
function M.declare_sweep(decl, lib)
  local run = current_run("navette.sweep")
  local declared = {}
  -- (every item holds the one job table of the sweep: it is validated
  -- once, and each job is a copy of what that gave)
  local validated = {}
  for i, item in ipairs(require("navette.sweep").expand(decl)) do
    validated[item.decl] = validated[item.decl] or job.validate(item.decl)
    local j = util.clone(validated[item.decl])
    library_code(j, lib, "navette.sweep")
    j.name = j.name .. item.suffix
    j.params = item.params
    declared[i] = j
  end
  for _, j in ipairs(declared) do
    inputs_after(j)
    if #j.name > 255 then
      errors.raise("recipe", "navette.sweep: the job name " .. j.name
                   .. " is longer than 255 bytes", "use shorter parameter "
                   .. "names or values")
    end
    check_new_name(run, j, "navette.sweep")
  end
  -- (the jobs of one sweep may go to the backend as one job array)
  run.sweeps = (run.sweeps or 0) + 1
  for i, j in ipairs(declared) do
    j.sweep = run.sweeps
    declared[i] = handle(add_job(run, j, "navette.sweep"))
  end
  return declared
end

-- Read-only facts about the run in progress (navette.context()).
function M.context()
  local run = context.current()
  if not run then return nil end
  return {
    project = run.project.name,
    profile = run.profile.name,
    -- true only under `navette plan`: the checking pass of a run must not
    -- show itself, or a recipe could act differently when checked
    plan = run.plan_command,
    recipe = run.recipe,
    -- the images the profile names (profile `images`), by name; the
    -- boundary hands the recipe a sealed copy
    images = run.profile.images or {},
  }
end

return M
