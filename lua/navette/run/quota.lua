-- The team's member behind a run, and the quotas the team layer sets.
local job = require "navette.job"
local refusal = require "navette.run.report"
local refuse = refusal.refuse
local sys = _navette.sys

local M = {}

-- Builds the spec of declaration j: everything the backend needs, pinned.
-- The id is that of an interrupted submission of the same job when there
-- is one (run.submissions[spec].resumed: its row), else a new one.
-- The team member the run acts for: the member of the project's
-- team.lua whose email is the git identity's (user.email), or nil (no
-- team.lua, or an email it does not list). Each job's spec, its Slurm
-- comment and the audit lines carry it.
function M.member(run)
  if run.member == nil then
    run.member = false
    -- (a process may run several projects' recipes: the audit lines carry
    -- this run's member or none, never another project's)
    require("navette.audit").member_identity = nil
    local team = require "navette.team"
    -- (`navette lock` pins the team repository; its --check checks the
    -- folder's lock; plan reads the cache)
    local lm = run.libraries_mode
    local policy = team.load(run.project, {
      mode = (lm == "lock" or lm == "check") and lm
             or (run.plan_command and "plan" or "run"),
      from_folder = lm == "lock" or lm == "check" })
    if policy then
      team.apply_revocations(policy) -- (this machine's revocations too)
      local email = _navette.git.config("user.email", run.repo)
      local m = email and email ~= "" and team.member_of(policy, email)
      if m then
        local user, host = sys.identity()
        run.member = { id = m.id, email = m.email, team = policy.name,
                       revoked = m.revoked, roles = m.roles,
                       policy = policy }
        require("navette.audit").member_identity = m.id .. " <" .. m.email
          .. "> " .. tostring(user) .. "@" .. tostring(host)
      end
    end
  end
  return run.member or nil
end

-- navette's own check of the team's quota before anything is sent (the
-- services enforce it too: Slurm holds such a job with its QOS reason):
-- a job asking more GPUs than the member's roles allow per job is
-- refused, with the numbers.
function M.check_quota(run, j, member)
  local gpus = j.resources and j.resources.gpus
  if not gpus or gpus == 0 then return end
  local allowed, from
  for _, r in ipairs(member.roles) do
    local q = member.policy.roles[r].quota
    if q and q.gpus_per_job and (not allowed or q.gpus_per_job > allowed) then
      allowed, from = q.gpus_per_job, r
    end
  end
  local team_gpus = member.policy.quota.gpus
  if allowed and gpus > allowed then
    refuse("job '" .. j.name .. "' asks for " .. gpus .. " GPU"
           .. (gpus == 1 and "" or "s") .. "; team " .. member.team
           .. "'s quota gives " .. member.id .. " " .. allowed .. " per job "
           .. "(role " .. from .. ": quota.gpus_per_job = " .. allowed
           .. ")", "ask for at most " .. allowed .. ", or ask an admin of "
           .. "team " .. member.team .. " for a role with more", run, j.name)
  elseif team_gpus and gpus > team_gpus then
    refuse("job '" .. j.name .. "' asks for " .. gpus .. " GPUs; team "
           .. member.team .. " has " .. team_gpus .. " in all (quota.gpus)",
           "ask for at most " .. team_gpus, run, j.name)
  end
end

-- The other half of the quota check, before a real submission: when the
-- member's roles cap their jobs at once (quota.concurrent_jobs) and the
-- backend counts the member's jobs (its contract: member_jobs), a run
-- that would go past the cap is told so with the numbers. Not refused:
-- the backend holds the extra jobs (Slurm: QOSMaxJobsPerUserLimit) and
-- starts them as the others end, which is what a queue is for.
function M.note_concurrent(run, backend)
  local member = M.member(run)
  if run.plan or not member or not backend.member_jobs then
    return
  end
  local allowed, from
  for _, r in ipairs(member.roles) do
    local q = member.policy.roles[r].quota
    if q and q.concurrent_jobs
       and (not allowed or q.concurrent_jobs > allowed) then
      allowed, from = q.concurrent_jobs, r
    end
  end
  if not allowed then return end
  local counts = backend.member_jobs(run.profile)
  if not counts then return end -- (the submission says what is wrong)
  local running, pending = counts.running, counts.pending
  local new = #run.jobs
  if running + pending + new > allowed then
    require("navette.term").eprint("note: " .. member.id .. " has "
      .. running .. " job" .. (running == 1 and "" or "s") .. " running and "
      .. pending .. " pending, and submits " .. new .. " more; team "
      .. member.team .. "'s quota runs " .. allowed .. " of "
      .. member.id .. "'s jobs at once (role " .. from
      .. ": quota.concurrent_jobs = " .. allowed .. "): " .. counts.held)
  end
end

return M
