-- A declared job made a spec: everything the backend and the node need,
-- pinned, with its id, transfers, retries and secrets.
local errors = require "navette.errors"
local util = require "navette.util"
local job = require "navette.job"
local backends = require "navette.backends"
local jobs = require "navette.jobview"
local pinning = require "navette.run.pin"
local quotas = require "navette.run.quota"
local refusal = require "navette.run.report"
local refuse = refusal.refuse
local transfers = require "navette.run.transfer"
local core, sys, json = _navette.core, _navette.sys, _navette.json

local M = {}

-- What makes two submissions the same one: the project, profile and
-- backend, the recipe file, the job's name, the commit, and everything the
-- job runs with (image digest, inputs with their sha256, command, env,
-- resources, outputs template, success and failure rules, logs, requeue,
-- who submits it). Not the id, the time, or the signed URLs, which each
-- attempt draws anew. A submission is recorded with this key before
-- anything is sent and the key is cleared once it is complete, so a run
-- killed part way leaves a row that the next run of the same job at the
-- same commit completes instead of minting a second job. A completed
-- submission is never resumed: running a recipe again runs its jobs again.
local function submission_key(run, j, spec)
  return _navette.jobs.submit_key(json.encode({
    spec.project, spec.profile, spec.backend, run.recipe_real, spec.name,
    spec.commit, spec.image, spec.container or false, spec.inputs,
    spec.outputs.store, j.outputs, spec.command, spec.env or false,
    spec.resources or false, spec.success, spec.failure_condition,
    spec.logs or false, spec.requeue or false, spec.submitted_by,
    run.nodes or false, spec.retries or false, spec.checkpoint or false,
    spec.secrets or false,
  }))
end

-- A new job id that no job of this run has: ids drawn in the same
-- second differ only in their random part, so the 1,000 tasks of a sweep
-- may draw one id twice (with 24 random bits: once in about 35 runs), and
-- the array's rows would then fail as duplicates before anything is sent.
function M.new_job_id(run)
  run.drawn = run.drawn or {}
  local id
  repeat
    id = job.new_id(run.project.name)
  until not run.drawn[id]
  run.drawn[id] = true
  return id
end

-- Gives spec the id `id` and what follows from it: the output prefix and
-- URL, and on S3 the presigned transfer URLs under that prefix. Called
-- again when a drawn id turns out to be taken, so that nothing of the
-- spec still points at the other job's prefix.
function M.place(run, spec, j, id)
  spec.id = id
  -- built in C: the id's grammar and the store's key rules checked there
  local prefix = errors.check(_navette.storage.job_prefix(j.outputs,
                                                          run.project.name, id))
  spec.outputs.prefix = prefix
  spec.outputs.url = run.profile.storage:gsub("/$", "") .. "/" .. prefix
  if spec.outputs.s3 then spec.transfer = transfers.transfer(run, spec, j) end
end

-- A job's retries and checkpoint into its spec, on a backend whose
-- contract has them (`retries`, `checkpoints`: true, or a function of
-- the profile giving true, or false and where not); refused elsewhere
-- before anything is submitted.
local function retries_and_checkpoint(run, j, spec, backend)
  for _, f in ipairs({ { "retries", "retries" },
                       { "checkpoint", "checkpoints" } }) do
    local field, capability = f[1], f[2]
    local can, where = backend[capability], nil
    if j[field] and type(can) == "function" then
      can, where = can(run.profile)
    end
    if j[field] and not can then
      refuse("job '" .. j.name .. "': " .. field .. " = {...} is not "
             .. "supported on the " .. run.profile.backend .. " backend"
             .. (where or "") .. " yet", "run it with a profile of the "
             .. "local backend on a file:// store, or leave " .. field
             .. " out", run, j.name)
    end
    if j[field] then spec[field] = j[field] end
  end
  if spec.retries then spec.retries.on = json.array(spec.retries.on) end
end

-- The secrets of j as its spec lists them ({name, credential, kind}
-- each, sorted by name; never a value), or nil: each names a credential
-- the profile declares, on a backend that delivers them. The plan says
-- where each would come from and loads nothing.
local function job_secrets(run, j, spec, backend)
  local names = util.sorted_keys(j.secrets or {})
  if #names == 0 then return nil end
  local can, where = backend.secrets, nil
  if type(can) == "function" then can, where = can(run.profile, spec) end
  if not can then
    refuse("job '" .. j.name .. "': secrets = {...} is not supported on "
           .. "the " .. run.profile.backend .. " backend" .. (where or "")
           .. " yet", "run it with a profile of the "
           .. backends.with("secrets") .. " backend (a job on the host), "
           .. "or leave secrets out", run, j.name)
  end
  local declared = run.profile.credentials or {}
  local list = json.array({})
  for _, name in ipairs(names) do
    local credential = j.secrets[name]
    local d = declared[credential]
    if not d then
      require("navette.isolation").check_credential(run.profile,
                                                    credential)
      local known = util.sorted_keys(declared)
      refuse("job '" .. j.name .. "': secret " .. name .. " names the "
             .. "credential '" .. credential .. "', which profile '"
             .. run.profile.name .. "' does not declare"
             .. util.suggest(credential, known), #known > 0
             and ("the profile's credentials: " .. table.concat(known, ", "))
             or "declare it in navette.lua: credentials = { "
             .. util.lua_key(credential) .. " = { kind = \"bearer\", source = \"env\", "
             .. "env = { token = \"VARIABLE\" } } }", run, j.name)
    end
    list[#list + 1] = { name = name, credential = credential,
                        kind = d.kind }
    if run.plan_command then
      core.plan("secrets", "deliver", name .. " <- credential "
                .. credential .. " (file $NAVETTE_SECRETS/" .. name
                .. ") to job " .. j.name)
    end
  end
  return list
end

-- The handles of the credentials the run's jobs read as secrets, loaded
-- once (the redactor learns each value as it loads, so the jobs' log
-- filters and every sink of this process mask it). The checking pass
-- loads them too, so a missing one refuses the run before anything is
-- done; `navette plan` loads none.
function M.load_secrets(run)
  if run.plan_command then return end
  run.secret_handles = run.secret_handles or {}
  for _, j in ipairs(run.jobs) do
    for _, credential in pairs(j.secrets or {}) do
      if not run.secret_handles[credential]
         and (run.profile.credentials or {})[credential] then
        run.secret_handles[credential] =
          require("navette.creds").get(credential)
      end
    end
  end
end

function M.spec(run, j)
  local commit, info = pinning.pin_commit(run, j)
  run.identity = run.identity or { sys.identity() }
  local user, host = run.identity[1], run.identity[2]
  local member = quotas.member(run)
  if member and member.revoked then
    refuse("team member " .. member.id .. " is revoked in team.lua: no "
           .. "job is submitted for them", "ask an admin of team "
           .. member.team, run, j.name)
  end
  if member then quotas.check_quota(run, j, member) end
  run.repository = run.repository or run.repo:remote_url()
                   or run.repo:workdir()
  local repository = run.repository
  local resources = j.resources
  local image, container = pinning.pin_image(run, j, commit)
  local spec = {
    name = j.name,
    project = run.project.name,
    profile = run.profile.name,
    backend = run.profile.backend,
    commit = commit,
    commit_time = info and info.time,
    dirty = false,
    repository = j.library and j.library.url or repository,
    repository_path = j.library and j.library.dir or run.repo:workdir(),
    -- (a library's cache: a bare repository)
    repository_bare = j.library and true or nil,
    recipe = run.recipe,
    image = image or "host",
    image_requested = image and image ~= j.image and j.image or nil,
    container = container,
    inputs = pinning.describe_inputs(run, j),
    outputs = { store = run.profile.storage },
    command = j.command,
    env = next(j.env) and j.env or nil,
    params = j.params,
    libraries = require("navette.library").spec_field(run),
    resources = next(resources) and resources or nil,
    success = { exit_codes = json.array(j.success.exit_codes),
                outputs = json.array(j.success.outputs) },
    failure_condition = { log_patterns = json.array(j.failure.log_patterns),
                          hint = j.failure.hint },
    logs = j.logs,
    submitted_by = (member and (member.id .. " <" .. member.email .. "> ")
                    or "") .. user .. "@" .. host,
    member = member and { id = member.id, email = member.email,
                          team = member.team } or nil,
    submitted_at = sys.iso8601(),
  }
  -- what the backend adds: how to reach the job again, its defaults
  local backend = backends.get(run.profile.backend)
  if #j.after > 0 then
    -- the ids of the jobs it runs after (declared, so submitted, before)
    if not backend.dependencies then
      refuse("job '" .. j.name .. "': after = {...} is not supported on "
             .. "the " .. run.profile.backend .. " backend yet",
             "run it with a profile of the " .. backends.with("dependencies")
             .. " backend, or submit the jobs one run after another", run,
             j.name)
    end
    spec.after = json.array({})
    for _, name in ipairs(j.after) do
      -- (run.ids has this run's jobs only: a rerun's job no longer waits
      -- for one of the old run that succeeded)
      spec.after[#spec.after + 1] = run.ids[name]
    end
    if #spec.after == 0 then spec.after = nil end
  end
  if run.rerun then require("navette.run.rerun").amend(run, j, spec) end
  spec.requeue = j.requeue
  retries_and_checkpoint(run, j, spec, backend)
  backends.give_launch(backend, spec)
  if backend.prepare then backend.prepare(spec, run.profile) end
  spec.secrets = job_secrets(run, j, spec, backend)
  spec.requeue = spec.requeue or nil
  local key = submission_key(run, j, spec)
  local resumed = false
  if not run.plan then
    local text = errors.check(jobs.db():interrupted(key))
    resumed = text and json.decode(text)
  end
  run.submissions = run.submissions or setmetatable({}, { __mode = "k" })
  run.submissions[spec] = { key = key, resumed = resumed or nil, job = j }
  if run.nodes and not backend.nodes then
    refuse("--node applies to the " .. backends.with("nodes")
           .. " backend; profile '" .. run.profile.name .. "' is "
           .. run.profile.backend)
  end
  local s3 = run.profile.s3
  if s3 then
    -- where the CLI reads the record and log back (never a secret)
    spec.outputs.s3 = { endpoint = s3.endpoint, region = s3.region,
                        path_style = s3.path_style, ca_bundle = s3.ca_bundle,
                        pin = s3.pin, credential = s3.credential,
                        bucket = s3.bucket, root = s3.root }
  end
  M.place(run, spec, j, resumed and resumed.id or M.new_job_id(run))
  return spec
end

-- The node list the k-th job of a run is sent to: --node's, else the
-- job's own resources.nodes (nil here: the description has them), else
-- the profile's node list taken in turn, one node per job, so a sweep is
-- spread over the nodes the profile names.
function M.node_for(run, j, k)
  if run.nodes then return run.nodes end
  if j.resources and j.resources.nodes then return nil end
  local backend = backends.get(run.profile.backend)
  local list = backend.nodes and backend.nodes(run.profile)
  if list and #list > 0 then return { list[(k - 1) % #list + 1] } end
  return nil
end

return M
