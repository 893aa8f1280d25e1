-- A team's policy on a Slurm cluster with accounting (slurmdbd), through
-- slurmrestd's accounting API as the profile's Slurm user (an
-- administrator: root, or an operator): the team's account, with the
-- team's GPU quota on it (GrpTRES=gres/gpu=N); a QOS per role with a
-- quota (TEAM-ROLE: MaxTRESPerJob=gres/gpu=N, MaxJobsPerUser=N); a user
-- and an association per member who may submit, with their roles' QOS and
-- their GPU-hours (GrpTRESMins=gres/gpu=hours*60). Slurm itself holds a job past a
-- quota (its QOS reason) and refuses a user it does not know. Revoking a
-- member cancels their jobs and removes their user from accounting (Slurm
-- 22.05 removes no user with active jobs): their next submission gets
-- Slurm's invalid-account answer.
local errors = require "navette.errors"
local util = require "navette.util"
local team = require "navette.team"
local json = _navette.json

local M = {}

-- A session with the cluster as the profile's Slurm user, or as user
-- (its key mints that user's tokens: an hs256 credential).
local function session(policy, proj, user)
  local s = policy.services.slurm
  local profile = proj.profiles[s.profile or proj.default_profile]
  if not (profile and profile.backend == "slurm") then
    errors.raise("recipe", "services.slurm: profile "
                 .. tostring(profile and profile.name) .. " is not a "
                 .. "slurm profile", "name the cluster's profile")
  end
  local cfg = profile.slurm
  if user then
    cfg = {}
    for k, v in pairs(profile.slurm) do cfg[k] = v end
    cfg.user = user
  end
  local max = profile.max_token_lifespan or 3600
  return require("navette.backends.slurm").open(cfg, math.min(600, max),
                                                max), profile
end

local function db(sess, method, path, body)
  local text, err = sess:db(method, path, body and json.encode(body) or nil)
  if not text then
    errors.raise(err.code == "refused" and "refused" or "backend",
                 "Slurm accounting: " .. err.message, err.hint)
  end
  return json.decode(text)
end

local function account_of(policy)
  return policy.services.slurm.account or policy.name
end

local function qos_name(policy, role) return policy.name .. "-" .. role end

local function gpu(n) return { { type = "gres", name = "gpu", count = n } } end

-- The gpu count of a TRES list from an answer, or nil.
local function gpu_count(list)
  for _, t in ipairs(type(list) == "table" and list or {}) do
    if t.type == "gres" and t.name == "gpu" then return t.count end
  end
  return nil
end

-- The QOS the policy wants, by name: {name, per_job, per_user, minutes}.
function M.wanted_qos(policy)
  local out = {}
  for _, rname in ipairs(util.sorted_keys(policy.roles)) do
    local q = policy.roles[rname].quota
    if q and next(q) then
      out[qos_name(policy, rname)] = {
        name = qos_name(policy, rname), per_job = q.gpus_per_job,
        per_user = q.concurrent_jobs,
      }
    end
  end
  return out
end

local function qos_body(w)
  local max = { tres = { per = {} }, jobs = { active_jobs = { per = {} } } }
  if w.per_job then max.tres.per.job = gpu(w.per_job) end
  if w.per_user then max.jobs.active_jobs.per.user = w.per_user end
  return { QOS = { { name = w.name, description = "navette team quota",
                     limits = { max = max } } } }
end

local function qos_same(have, w)
  local max = type(have.limits) == "table" and have.limits.max or {}
  local tres = max.tres or {}
  local per = tres.per or {}
  local jobs = ((max.jobs or {}).active_jobs or {}).per or {}
  local function same(a, b)
    -- Slurm reports "no limit" as a large or negative number, or absent
    if b == nil then return a == nil or a < 0 or a >= 4294967294 end
    return a == b
  end
  return same(gpu_count(per.job), w.per_job)
         and same(jobs.user, w.per_user)
end

-- The QOS a member's association gets (their roles' with a quota).
local function member_qos(policy, m, wanted)
  local list = {}
  for _, r in ipairs(m.roles) do
    local n = qos_name(policy, r)
    if wanted[n] then list[#list + 1] = n end
  end
  table.sort(list)
  return list
end

-- The GPU-minutes a member may use (GrpTRESMins on their association):
-- the largest gpu_hours_per_day of their roles, in minutes, or nil.
-- Slurm counts usage as its priority settings say (PriorityDecayHalfLife,
-- PriorityUsageResetPeriod=DAILY for a daily budget).
local function member_minutes(policy, m)
  local best
  for _, r in ipairs(m.roles) do
    local q = policy.roles[r].quota
    if q and q.gpu_hours_per_day and (not best or q.gpu_hours_per_day > best) then
      best = q.gpu_hours_per_day
    end
  end
  return best and best * 60 or nil
end

-- Whether the token handed over in path lives 5 more minutes (a short
-- one is minted again by the next apply).
-- (its end is kept beside it, PATH.expires: a time, not a secret)
local function token_fresh(path)
  if not _navette.sys.stat(path) then return false end
  local expires = tonumber(_navette.sys.read_file(path .. ".expires") or "")
  return expires ~= nil and expires > _navette.sys.now() + 300
end

local function cluster_name(sess, policy)
  if policy.services.slurm.cluster then return policy.services.slurm.cluster end
  local answer = db(sess, "GET", "clusters")
  local list = answer.clusters or {}
  if #list ~= 1 then
    errors.raise("recipe", "services.slurm: slurmdbd knows " .. #list
                 .. " clusters", "name one: services.slurm.cluster")
  end
  return list[1].name
end

function M.changes(policy, proj)
  local sess = session(policy, proj)
  local changes, unchanged = {}, 0
  local acct = account_of(policy)
  local function change(op, what, run)
    changes[#changes + 1] = { service = "slurm", op = op, what = what,
                              run = run }
  end
  local cluster = cluster_name(sess, policy)
  local wanted = M.wanted_qos(policy)
  local have = {}
  for _, q in ipairs(db(sess, "GET", "qos").QOS or {}) do have[q.name] = q end
  for _, name in ipairs(util.sorted_keys(wanted)) do
    local w = wanted[name]
    if not have[name] or not qos_same(have[name], w) then
      change(have[name] and "~" or "+", "slurm QOS " .. name .. ": "
             .. "MaxTRESPerJob=gres/gpu=" .. tostring(w.per_job or "none")
             .. " MaxJobsPerUser=" .. tostring(w.per_user or "none"),
             function() db(sess, "POST", "qos", qos_body(w)) end)
    else
      unchanged = unchanged + 1
    end
  end
  -- the account, with the team's GPUs on it
  local assocs = db(sess, "GET", "associations").associations or {}
  local by_user, account_assoc = {}, nil
  for _, a in ipairs(assocs) do
    if a.account == acct and a.cluster == cluster then
      if type(a.user) ~= "string" or a.user == "" then account_assoc = a
      else by_user[a.user] = a end
    end
  end
  local accounts = {}
  for _, a in ipairs(db(sess, "GET", "accounts").accounts or {}) do
    accounts[a.name] = true
  end
  if not accounts[acct] then
    change("+", "slurm account " .. acct, function()
      db(sess, "POST", "accounts", { accounts = { { name = acct,
        description = "navette team " .. policy.name,
        organization = policy.name } } })
    end)
  end
  local team_gpus = policy.quota.gpus
  local have_gpus = account_assoc and gpu_count(((account_assoc.max or {})
                                                  .tres or {}).total)
  if not account_assoc or (team_gpus and have_gpus ~= team_gpus) then
    change(account_assoc and "~" or "+", "slurm association of account "
           .. acct .. " on " .. cluster .. (team_gpus and (": GrpTRES="
           .. "gres/gpu=" .. team_gpus) or ""), function()
      local a = { account = acct, cluster = cluster }
      if team_gpus then a.max = { tres = { total = gpu(team_gpus) } } end
      db(sess, "POST", "associations", { associations = { a } })
    end)
  else
    unchanged = unchanged + 1
  end
  for _, m in ipairs(team.members(policy)) do
    local may = not m.revoked and team.has(policy, m, "submit")
    local a = by_user[m.id]
    local qos = member_qos(policy, m, wanted)
    if may then
      local have_qos = {}
      for _, q in ipairs(a and a.QOS or (a and a.qos) or {}) do
        have_qos[#have_qos + 1] = q
      end
      table.sort(have_qos)
      local token_file = team.handoff_path(policy, m.id, "slurm-token")
      if not token_fresh(token_file) then
        change("+", "slurm token of " .. m.id .. " (user " .. m.id .. ", "
               .. policy.services.slurm.token_lifespan_s .. " s), handed "
               .. "over in " .. token_file, function()
          return "handed over in " .. M.hand_token(policy, proj, m,
            policy.services.slurm.token_lifespan_s)
        end)
      end
      local minutes = member_minutes(policy, m)
      local have_minutes = a and gpu_count((((a.max or {}).tres or {})
                                            .group or {}).minutes)
      if not a or table.concat(have_qos, ",") ~= table.concat(qos, ",")
         or (minutes and have_minutes ~= minutes) then
        change(a and "~" or "+", "slurm user " .. m.id .. " in account "
               .. acct .. (#qos > 0 and (" with QOS " .. table.concat(qos, ","))
               or "") .. (minutes and (", GrpTRESMins=gres/gpu=" .. minutes)
               or ""), function()
          db(sess, "POST", "users", { users = { { name = m.id,
            default = { account = acct } } } })
          local assoc = { account = acct, user = m.id, cluster = cluster }
          if #qos > 0 then
            assoc.qos = qos
            assoc.default = { qos = qos[1] }
          end
          if minutes then
            assoc.max = { tres = { group = { minutes = gpu(minutes) } } }
          end
          db(sess, "POST", "associations", { associations = { assoc } })
        end)
      else
        unchanged = unchanged + 1
      end
    elseif a then
      change("!", "slurm user " .. m.id .. " is in account " .. acct
             .. " but " .. (m.revoked and "revoked" or "may not submit")
             .. ": navette team revoke " .. m.id .. " removes them")
    end
  end
  -- (the session stays open for the changes' runs; collected after)
  return changes, unchanged
end

function M.revoke(policy, proj, m)
  local sess = session(policy, proj)
  -- the member's jobs, listed and cancelled as the member (a session's
  -- listing is its user's)
  local cancelled = 0
  local as_member = session(policy, proj, m.id)
  for _, j in ipairs(as_member:jobs() or {}) do
    if j.state == "PENDING" or j.state == "RUNNING"
       or j.state == "SUSPENDED" then
      if as_member:cancel(j.job_id) then cancelled = cancelled + 1 end
    end
  end
  as_member:close()
  -- Slurm removes no user with active jobs: wait (bounded) for the
  -- cancelled ones to end
  local deadline = _navette.sys.now() + 30
  local text, err
  repeat
    text, err = sess:db("DELETE", "user/" .. m.id)
    if text or _navette.sys.now() > deadline then break end
    _navette.sys.sleep(0.5)
  until false
  sess:close()
  if not text then
    if err.message:find("Nothing deleted", 1, true) then
      return "slurm: no user " .. m.id .. " in accounting"
    end
    errors.raise(err.code == "refused" and "refused" or "backend",
                 "Slurm accounting: " .. err.message, err.hint)
  end
  return "slurm: user " .. m.id .. " removed from accounting (" .. cancelled
         .. " job" .. (cancelled == 1 and "" or "s") .. " cancelled)"
end

-- The proof: a submission as the member with the token handed over for
-- them (MEMBER.slurm-token), which Slurm must refuse; a submission it
-- accepts is cancelled at once.
function M.prove(policy, proj, m)
  local token = team.handed(policy, m.id, "slurm-token", "bearer")
  if not token then return nil end
  local _, profile = session(policy, proj)
  local cfg = {}
  for k, v in pairs(profile.slurm) do cfg[k] = v end
  cfg.user = m.id
  local s, err = _navette.slurm.open { endpoint = cfg.endpoint,
    user = m.id, credential = token, lifespan = 60, max_lifespan = 3600,
    version = cfg.api_version, ca_bundle = cfg.ca_bundle, pin = cfg.pin }
  if not s then
    return { service = "slurm", credential = "token " .. m.id,
             refused = true, answer = err.message }
  end
  -- held: were it accepted, it would never run before its cancel
  local id, serr = s:submit("#!/bin/sh\ntrue\n", {
    name = "navette-revocation-check", partition = cfg.partition,
    account = account_of(policy), cpus = 1, time_limit = "60s",
    working_directory = "/tmp", hold = true,
    env = { PATH = "/usr/bin:/bin" } })
  if id then s:cancel(id) end
  s:close()
  return { service = "slurm", credential = "token " .. m.id,
           refused = id == nil,
           answer = id and ("job " .. id .. " accepted (cancelled)")
                   or serr.message }
end

-- The member's Slurm token, minted with the profile's key (an hs256
-- credential) for user m.id, handed over in MEMBER.slurm-token; nil when
-- the profile's credential is not a key.
function M.hand_token(policy, proj, m, lifespan)
  local _, profile = session(policy, proj)
  local key = errors.check(_navette.creds.load(profile.slurm.credential))
  if key:info().kind ~= "hs256" then return nil end
  local token = errors.check(_navette.creds.mint_jwt(key, m.id .. "-slurm",
    json.encode({ sun = m.id }), lifespan))
  local path = team.hand_over(policy, m.id, "slurm-token", token)
  errors.check(_navette.sys.write_file(path .. ".expires", string.format(
    "%d\n", math.floor(_navette.sys.now() + lifespan)), 384))
  return path
end

return M
