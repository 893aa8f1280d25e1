-- Submitting a run: each job (or a sweep's jobs as one array) handed to
-- its backend, every spec checked against the checking pass's.
local errors = require "navette.errors"
local job = require "navette.job"
local storage = require "navette.storage"
local backends = require "navette.backends"
local jobs = require "navette.jobview"
local pinning = require "navette.run.pin"
local quotas = require "navette.run.quota"
local jobspec = require "navette.run.spec"
local transfers = require "navette.run.transfer"
local util = require "navette.util"
local core, json = _navette.core, _navette.json

local M = {}

-- The launcher of a spec, rendered from the spec as the job sees it
-- (without the launcher itself and the log filter's fingerprints).
function M.render_launcher(spec)
  local launcher, fingerprints = spec.launcher, spec.redact_fingerprints
  spec.launcher, spec.redact_fingerprints = nil, nil
  local text = json.encode(spec)
  spec.launcher, spec.redact_fingerprints = launcher, fingerprints
  return errors.check(_navette.jobs.launcher(text))
end

-- The tasks of one job array at most (host/jobs/launcher.h).
M.ARRAY_MAX = 1000

-- The jobs from run.jobs[i] on that go to the backend as one job array:
-- the rest of a sweep (at most ARRAY_MAX), when the backend takes arrays
-- and they differ only in their parameters. -> the list | nil, why not
-- (nil, nil: not a sweep, or a backend without arrays).
function M.array_group(run, i, backend)
  local j = run.jobs[i]
  if not (backend.submit_array and j.sweep) then return nil end
  local group, k = {}, i
  while run.jobs[k] and run.jobs[k].sweep == j.sweep
        and #group < M.ARRAY_MAX do
    group[#group + 1] = run.jobs[k]
    k = k + 1
  end
  if #group < 2 then return nil end
  if j.checkpoint then
    return nil, "each job has a checkpoint of its own"
  end
  if next(j.secrets or {}) then
    return nil, "each job has secrets of its own"
  end
  local list = backend.nodes and backend.nodes(run.profile)
  if not run.nodes and not (j.resources and j.resources.nodes)
     and list and #list > 1 then
    return nil, "the profile's nodes are taken in turn, one node per job"
  end
  return group
end

-- What every submission of a run hands the backend (backends: ctx).
local function submit_context(run, sessions, sub, nodes)
  return {
    db = jobs.db(), submission = sub, sessions = sessions, nodes = nodes,
    redraw = function(s)
      jobspec.place(run, s, sub.job, jobspec.new_job_id(run))
      s.launcher = M.render_launcher(s) -- (its id and prefix are new)
    end,
    -- (each returns the line's seq, nil when it could not be written)
    audit = function(s, detail)
      return require("navette.audit").record({ action = "job.submit",
        target = s.name, job = s.id, commit = s.commit,
        detail = detail }, run.profile)
    end,
    -- the handle of a credential a job reads as a secret (loaded by
    -- load_secrets), and the audit line of its delivery
    secret = function(credential)
      local h = run.secret_handles and run.secret_handles[credential]
      if not h then
        errors.raise("refused", "credential " .. credential .. " was not "
                     .. "loaded for the job's secrets")
      end
      return h
    end,
    audit_secret = function(s, item)
      return require("navette.audit").record({ action = "secret.deliver",
        target = item.name, job = s.id, detail = "credential "
        .. item.credential .. ", backend " .. s.backend }, run.profile)
    end,
    -- the same for several jobs ({spec, detail} each), as one write
    audit_many = function(list)
      local entries = {}
      for i, x in ipairs(list) do
        entries[i] = { action = "job.submit", target = x[1].name,
                       job = x[1].id, commit = x[1].commit, detail = x[2] }
      end
      require("navette.audit").record_many(entries, run.profile)
    end,
  }
end

local same_value = util.same

-- (runner.lua reads it here)
M.first_difference = util.first_difference

-- The checking pass's specs, which the run takes as they are instead of
-- building them again, by name; nil when it must build them (then it
-- does, as the checking pass did). They are taken when the run would
-- build the same ones: the project, profile and libraries are the same
-- and the recipe declared the same jobs, field by field; its evaluation
-- in the checking pass did nothing that a plan records instead of doing
-- (no upload, push, request or credential left unrun: nothing the two
-- evaluations saw differed by), and the store signed for real; each code
-- reference resolves to the commit checked (the tree is checked again,
-- as for any run); no earlier submission of these jobs was interrupted
-- (such a job resumes under its recorded id, which runner.spec finds);
-- and the code archive the run uploads is the one the checking pass
-- hashed. A taken spec keeps the checking pass's id, submission time and
-- signed URLs (made under a second before); what its log filter masks is
-- read again, as the run knows it now.
local function checked_specs(run)
  local check = run.checked
  if not check or check.recorded ~= 0 or check.unsigned
     or #(check.reused or {}) > 0
     or not check.specs or #check.jobs ~= #run.jobs
     or not same_value(run.project, check.project)
     or not same_value(run.profile, check.profile) then
    return nil
  end
  local libraries = require("navette.library").spec_field(run)
  for i, j in ipairs(run.jobs) do
    local spec = check.specs[j.name]
    -- (runner.run compared the jobs already: run.same_jobs)
    if not spec or not check.submissions[spec]
       or not ((run.same_jobs or {})[i] or same_value(j, check.jobs[i]))
       or not same_value(spec.libraries, libraries) then
      return nil
    end
  end
  local db = jobs.db()
  for _, j in ipairs(run.jobs) do
    local spec = check.specs[j.name]
    if pinning.pin_commit(run, j) ~= spec.commit
       or errors.check(db:interrupted(check.submissions[spec].key)) then
      return nil
    end
    local code = spec.transfer and spec.transfer.code
    if code then
      local got = transfers.commit_archive(run, storage._s3(), spec)
      if got.key ~= code.key or got.sha256 ~= code.sha256
         or got.size ~= code.size then
        return nil
      end
    end
  end
  local taken = {}
  for _, j in ipairs(run.jobs) do
    local spec = check.specs[j.name]
    spec.redact_fingerprints = errors.check(_navette.creds.fingerprints())
    run.submissions = run.submissions or setmetatable({}, { __mode = "k" })
    run.submissions[spec] = { key = check.submissions[spec].key, job = j }
    run.drawn = run.drawn or {}
    run.drawn[spec.id] = true -- (a redrawn id is none of these)
    taken[j.name] = spec
  end
  run.run_id = check.run_id
  return taken
end

-- The spec of j with the run's id and what its log filter masks (built
-- once: the reuse decision builds it first).
local function run_spec(run, j)
  local taken = run.taken and run.taken[j.name]
  if taken then return taken end
  run.built = run.built or {}
  if run.built[j] then return run.built[j] end
  local spec = jobspec.spec(run, j)
  run.built[j] = spec
  -- the run's own id, in each of its jobs (navette watch RUN)
  run.run_id = run.run_id or job.new_run_id(run.project.name)
  spec.run = spec.run or run.run_id
  -- what the job's log filter must mask, without the values themselves
  spec.redact_fingerprints = errors.check(_navette.creds.fingerprints())
  return spec
end

-- Decides for run.jobs[i], and the rest of its sweep, whether each runs
-- or is reused (navette.reuse): a reused job leaves run.jobs, and the
-- earlier job's spec stands for it in run.specs (its consumers read its
-- outputs). run.decisions[name]: the decision; run.reused: the reused, in
-- order.
local function decide(run, i)
  local reuse = require "navette.reuse"
  local first = run.jobs[i]
  local k = i
  while run.jobs[k] and (k == i or (first.sweep
                                    and run.jobs[k].sweep == first.sweep)) do
    local j = run.jobs[k]
    if run.decisions[j.name] then return end
    local spec = run_spec(run, j)
    local d = reuse.decide(run, j, spec)
    run.decisions[j.name] = d
    if d.reuse then
      table.remove(run.jobs, k)
      run.specs[j.name], run.ids[j.name] = d.reuse, nil
      run.reused_by_id[d.from] = d.reuse
      run.reused[#run.reused + 1] = { name = j.name, from = d.from,
                                      spec = d.reuse, key = d.key }
      if run.plan then
        core.plan("jobs", "reuse", j.name .. " from " .. d.from)
      elseif not run.checking then
        reuse.audit(run, j.name, d)
      end
    else
      k = k + 1
    end
  end
end

local function submit_one(run, j, k, backend, sessions)
  local spec = run_spec(run, j)
  -- (a spec taken from the checking pass has its launcher)
  local launcher = spec.launcher or M.render_launcher(spec)
  spec.launcher = launcher
  if run.plan then
    core.plan("jobs", "submit", spec.id .. " (" .. spec.name .. ") on "
              .. run.profile.name)
    -- the requests the backend would send (its contract: plan_requests)
    if backend.plan_requests then
      spec.requests = backend.plan_requests({ spec },
        { nodes = jobspec.node_for(run, j, k) })
    end
    return spec
  end
  local sub = run.submissions[spec]
  return backend.submit(spec, launcher, submit_context(run, sessions, sub,
                        jobspec.node_for(run, j, k)))
end

-- The jobs of group as one job array: each its own spec (id, prefix,
-- signed URLs, row), one launcher for all of them, one request. A task
-- whose submission was interrupted sends the group job by job instead
-- (each then finds its task in Slurm). -> the specs
local function submit_array(run, group, k, backend, sessions)
  local specs, resumed = {}, false
  for i, j in ipairs(group) do
    specs[i] = run_spec(run, j)
    resumed = resumed or run.submissions[specs[i]].resumed ~= nil
    if run.plan then
      -- (each task's own launcher is what `navette plan` shows)
      if not run.checking then
        specs[i].launcher = M.render_launcher(specs[i])
      end
      core.plan("jobs", "submit", specs[i].id .. " (" .. specs[i].name
                .. ") on " .. run.profile.name .. ", task " .. (i - 1)
                .. " of the job array")
    end
  end
  -- one launcher for all, made (so checked) in the checking pass too,
  -- and taken from there with its specs
  local group_key = group[1].name .. "\0" .. group[#group].name
  local script = run.taken and run.checked.scripts
                 and run.checked.scripts[group_key]
  if not script and not resumed
     and (specs[1].transfer or not run.plan) then
    script = errors.check(_navette.jobs.array_launcher(
      M.array_json(specs)))
  end
  if run.checking then
    run.scripts = run.scripts or {}
    run.scripts[group_key] = script
  end
  if run.plan then
    core.plan("jobs", "submit-array", #specs .. " jobs of sweep "
              .. group[1].name:match("^[^%[]*") .. " as one job array "
              .. "(one request)")
    if backend.plan_requests then
      specs[1].requests = backend.plan_requests(specs,
        { nodes = jobspec.node_for(run, group[1], k) })
    end
    return specs
  end
  if resumed then
    for i, j in ipairs(group) do
      specs[i].launcher = M.render_launcher(specs[i])
      specs[i] = backend.submit(specs[i], specs[i].launcher,
        submit_context(run, sessions, run.submissions[specs[i]],
                       jobspec.node_for(run, j, k + i - 1)))
    end
    return specs
  end
  local ctx = submit_context(run, sessions, nil,
                             jobspec.node_for(run, group[1], k))
  ctx.submissions = {}
  for i, spec in ipairs(specs) do ctx.submissions[i] = run.submissions[spec] end
  return backend.submit_array(specs, script, ctx)
end

-- The specs of an array's tasks as JSON, as each task sees its own.
function M.array_json(specs)
  local saved = {}
  for i, spec in ipairs(specs) do
    saved[i] = spec.redact_fingerprints
    spec.redact_fingerprints = nil
  end
  local text = json.encode(json.array(specs))
  for i, spec in ipairs(specs) do spec.redact_fingerprints = saved[i] end
  return text
end

-- Submits every declared job through the profile's backend; returns the
-- list of specs. Each job's launcher is rendered once, here, and goes in
-- its spec (shown by plan, sent by the backend, run by the agent); a
-- sweep sent as one job array has one launcher for all its jobs.
function M.submit(run)
  local specs = {}
  run.ids, run.specs = {}, {}
  -- a rerun's jobs take the outputs of the run's succeeded jobs as they
  -- were published (run/rerun.lua)
  for name, spec in pairs(run.rerun and run.rerun.succeeded or {}) do
    run.specs[name] = spec
  end
  local backend = backends.get(run.profile.backend)
  -- what the backend keeps open for this run (sessions with a cluster),
  -- closed when it is submitted (the garbage collector closes them when
  -- an error stops it)
  local sessions = setmetatable({}, { __close = function(t)
    for _, s in pairs(t) do s:close() end
  end })
  local _ <close> = sessions
  local _ <close> = require("navette.audit").batch()
  jobspec.load_secrets(run)
  run.taken = checked_specs(run)
  quotas.note_concurrent(run, backend)
  run.declared_jobs = { table.unpack(run.jobs) }
  require("navette.reuse").check_rerun(run)
  run.decisions, run.reused, run.reused_by_id = {}, {}, {}
  local i = 1
  while i <= #run.jobs do
    -- (a survey looks at every job: portability)
    if not run.survey then decide(run, i) end
    if i > #run.jobs then break end
    local j = run.jobs[i]
    local group, why = M.array_group(run, i, backend)
    local done
    if group then
      done = submit_array(run, group, #specs + 1, backend, sessions)
    else
      if why and run.plan and j.sweep ~= (run.jobs[i - 1] or {}).sweep then
        core.plan("jobs", "note", "sweep " .. j.name:match("^[^%[]*")
                  .. ": one submission per job, not one job array ("
                  .. why .. ")")
      end
      done = { submit_one(run, j, #specs + 1, backend, sessions) }
    end
    for _, spec in ipairs(done) do
      -- (for the jobs that run after it, or take its outputs)
      run.ids[spec.name], run.specs[spec.name] = spec.id, spec
      specs[#specs + 1] = spec
    end
    i = i + #done
  end
  return specs
end

return M
