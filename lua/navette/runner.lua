-- Running a recipe: find its repository and project, pick the profile,
-- evaluate the recipe in the sandbox (collecting the jobs it declares),
-- then turn each declaration into a job spec pinned to a clean commit and
-- hand it to the backend. Plan mode runs the same path with every side
-- effect recorded instead of done.
local errors = require "navette.errors"
local util = require "navette.util"
local project = require "navette.project"
local job = require "navette.job"
local storage = require "navette.storage"
local core, sys, git, json = _navette.core, _navette.sys, _navette.git,
                             _navette.json

local runner = {}

-- The run in progress (navette.job appends to it).
runner.current = nil

function runner.declare(decl)
  local j = job.validate(decl)
  local run = runner.current
  if not run then
    errors.raise("usage", "navette.job was called outside a recipe run",
                 "run the recipe with `navette run` or `navette plan`")
  end
  for _, other in ipairs(run.jobs) do
    if other.name == j.name then
      errors.raise("recipe", "navette.job: a job named '" .. j.name
                   .. "' is already declared at " .. other.declared_at)
    end
  end
  run.jobs[#run.jobs + 1] = j
  return j
end

local function refuse(message, hint, run, target)
  if run then
    require("navette.audit").record({ action = "policy.refuse",
      target = target or run.recipe, result = "refused",
      detail = message:match("^[^\n]*") }, run.profile)
  end
  error(errors.new("refused", message, hint), 0)
end

-- Loads and evaluates the recipe. opts: profile, plan.
function runner.load(recipe, opts)
  opts = opts or {}
  local st = sys.stat(recipe)
  if not st or st.type ~= "file" then
    error(errors.new("usage", "no recipe file '" .. recipe .. "'",
                     "give the path of a .lua recipe"), 0)
  end
  local real = errors.check(sys.realpath(recipe))
  local recipe_dir = util.dirname(real)

  local repo, err = git.open(recipe_dir)
  if not repo then
    refuse("the recipe is not in a git repository (" .. err.message .. ")",
           "code comes from a commit: `git init`, commit, then run again")
  end
  local proj = project.load(recipe_dir, repo:workdir())
  local profile = project.profile(proj, opts.profile)

  core.set_plan(opts.plan and true or false)
  local run = {
    recipe = recipe, recipe_real = real, recipe_dir = recipe_dir,
    repo = repo, project = proj, profile = profile, jobs = {},
    plan = opts.plan and true or false,
  }
  storage._set_context({ profile = profile, repo_root = repo:workdir(),
                         recipe_dir = recipe_dir, planned = {} })
  require("navette.creds")._set_context(profile.credentials, profile)
  require("navette.http")._set_context(profile)

  local env = core.sandbox(recipe_dir)
  local chunk = errors.check(core.load_recipe(real, env, recipe))
  runner.current = run
  local ok, result = core.call_bounded(chunk)
  runner.current = nil
  if not ok then error(errors.from(result), 0) end
  return run
end

-- The commit a job runs, refusing a dirty tree or an unpushed commit.
local function pin_commit(run, j)
  local repo = run.repo
  local dirty = repo:status()
  if #dirty > 0 then
    local lines = {}
    for i, e in ipairs(dirty) do
      if i > 20 then
        lines[#lines + 1] = "  ... and " .. (#dirty - 20) .. " more"
        break
      end
      lines[#lines + 1] = "  " .. e.status .. ": " .. e.path
    end
    refuse("the working tree of " .. repo:workdir() .. " is not clean:\n"
           .. table.concat(lines, "\n"),
           "commit (or stash) these changes: a job runs a commit, never "
           .. "the working folder", run, j.name)
  end
  local commit, err = repo:resolve(j.code)
  if not commit then
    refuse("job '" .. j.name .. "': code '" .. j.code .. "': "
           .. err.message, err.hint or "check the commit reference")
  end
  runner.scan_secrets(run, commit, j.name)
  if run.profile.require_pushed then
    local present, rerr = repo:on_remote(commit, run.profile.remote)
    if present == nil then
      refuse("job '" .. j.name .. "': " .. rerr.message, rerr.hint)
    elseif not present then
      refuse("job '" .. j.name .. "': commit " .. commit:sub(1, 12)
             .. " is not on the remote (as of the last fetch)",
             "push it (git push), then run again: profile '"
             .. run.profile.name .. "' runs only pushed commits", run,
             j.name)
    end
  end
  return commit, repo:commit(commit)
end

local function describe_inputs(run, j)
  local planned = storage._planned()
  local out = {}
  for _, name in ipairs(util.sorted_keys(j.inputs)) do
    local url = j.inputs[name]
    local entry = { name = name, url = url }
    if url:match("^s3://") then
      refuse("input '" .. name .. "': s3:// inputs need a profile with S3 "
             .. "storage, not available in this version")
    end
    local info, err = storage.head(url)
    if info then
      entry.sha256, entry.size = info.sha256, info.size
    elseif run.plan and planned[url] then
      entry.sha256, entry.size = planned[url].sha256, planned[url].size
    else
      refuse("job '" .. j.name .. "': input '" .. name .. "' is not in "
             .. "storage: " .. url .. (err and (" (" .. err.message .. ")")
             or ""), "upload it first (navette.storage.put in the recipe)")
    end
    out[#out + 1] = entry
  end
  return json.array(out)
end

-- Nothing leaves the laptop as code if the commit's tree holds something
-- that looks like a secret (scanned once per commit and run).
function runner.scan_secrets(run, commit, target)
  run.scanned = run.scanned or {}
  if run.scanned[commit] then return end
  local report, err = _navette.creds.scan_commit(run.repo:workdir(), commit)
  if not report then
    refuse("cannot scan commit " .. commit:sub(1, 12) .. " for secrets: "
           .. err.message, err.hint, run, target)
  end
  if #report.findings > 0 then
    local lines = {}
    for i, f in ipairs(report.findings) do
      if i > 20 then
        lines[#lines + 1] = "  ... and " .. (#report.findings - 20)
                            .. " more"
        break
      end
      lines[#lines + 1] = "  " .. f.path .. (f.line > 0
        and (":" .. f.line) or "") .. ": " .. f.reason .. " [" .. f.rule
        .. "]"
    end
    refuse("commit " .. commit:sub(1, 12) .. " holds what looks like "
           .. "secrets:\n" .. table.concat(lines, "\n"),
           "remove them from the repository (and rotate them), or exempt "
           .. "a path with a written reason in .navette-secrets-allow",
           run, target)
  end
  run.scanned[commit] = true
end

-- Builds the spec of declaration j: everything the backend needs, pinned.
function runner.spec(run, j)
  local commit, info = pin_commit(run, j)
  local id = job.new_id(run.project.name, commit)
  local prefix = j.outputs:gsub("{project}", run.project.name)
                          :gsub("{id}", id)
  local user, host = sys.identity()
  local repository = run.repo:remote_url() or run.repo:workdir()
  local resources = j.resources
  return {
    id = id,
    name = j.name,
    project = run.project.name,
    profile = run.profile.name,
    backend = run.profile.backend,
    commit = commit,
    commit_time = info and info.time,
    dirty = false,
    repository = repository,
    repository_path = run.repo:workdir(),
    recipe = run.recipe,
    image = j.image or "host",
    inputs = describe_inputs(run, j),
    outputs = {
      store = run.profile.storage,
      prefix = prefix,
      url = run.profile.storage:gsub("/$", "") .. "/" .. prefix,
    },
    command = j.command,
    env = next(j.env) and j.env or nil,
    resources = next(resources) and resources or nil,
    success = { exit_codes = json.array(j.success.exit_codes),
                outputs = json.array(j.success.outputs) },
    failure_condition = { log_patterns = json.array(j.failure.log_patterns),
                          hint = j.failure.hint },
    logs = j.logs,
    submitted_by = user .. "@" .. host,
    submitted_at = sys.iso8601(),
  }
end

-- Submits every declared job; returns the list of specs.
function runner.submit(run)
  local specs = {}
  for _, j in ipairs(run.jobs) do
    if j.image and run.profile.backend == "local" then
      refuse("job '" .. j.name .. "' declares image " .. j.image
             .. " but the local backend of this version runs jobs on the "
             .. "host only", "remove `image` to run on the host, recorded "
             .. "as such")
    end
    local spec = runner.spec(run, j)
    local launcher = errors.check(_navette.jobs.launcher(json.encode(spec)))
    -- what the job's log filter must mask, without the values themselves
    spec.redact_fingerprints = errors.check(_navette.creds.fingerprints())
    if run.plan then
      core.plan("jobs", "submit", spec.id .. " (" .. spec.name .. ") on "
                .. run.profile.name)
      spec.launcher = launcher
    else
      local ok, err
      for _ = 1, 5 do
        ok, err = _navette.jobs.submit(core.home(), spec.id, spec.project,
                                       spec.profile, spec.name,
                                       json.encode(spec))
        if ok ~= nil or err.code ~= "refused" then break end
        spec.id = job.new_id(run.project.name, spec.commit) -- id taken
      end
      if ok == nil then
        error(errors.new("backend", "cannot submit job '" .. spec.name
                         .. "': " .. err.message, err.hint), 0)
      end
      require("navette.audit").record({ action = "job.submit",
        target = spec.name, job = spec.id, commit = spec.commit },
        run.profile)
    end
    specs[#specs + 1] = spec
  end
  return specs
end

return runner
