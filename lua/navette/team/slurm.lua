-- A team's policy on a Slurm cluster with accounting (slurmdbd), through
-- slurmrestd's accounting API as the profile's Slurm user (an
-- administrator: root, or an operator): the team's account, with the
-- team's GPU quota on it (GrpTRES=gres/gpu=N); a QOS per role with a
-- quota (TEAM-ROLE: MaxTRESPerJob=gres/gpu=N, MaxJobsPerUser=N); a user
-- and an association per member who may submit, with their roles' QOS and
-- their GPU-hours (GrpTRESMins=gres/gpu=hours*60). A member with the
-- admin right is a coordinator of the account (Slurm lets them cancel,
-- hold and release its jobs); one who may not submit gets a user with no
-- association (Slurm refuses their jobs: invalid account). Slurm itself
-- holds a job past a quota (its QOS reason) and refuses a user it does
-- not know. Revoking a member cancels their jobs and removes their user
-- from accounting (Slurm 22.05 removes no user with active jobs): their
-- next submission gets Slurm's invalid-account answer. With
-- services.slurm.revoke_running = "leave", their running (and suspended)
-- jobs are left to finish: their user stays, blocked by the QOS
-- TEAM-nosubmit (MaxSubmitJobsPerUser=0: Slurm refuses each new job at
-- submission), and is removed by the next apply or revoke once those jobs
-- have ended.
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
  local backends = require "navette.backends"
  local backend = profile and backends.get(profile.backend)
  -- (a backend whose cluster keeps Slurm's accounts: its contract)
  local service = backends.team_service(backend, "slurm")
  if not (service and service.open) then
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
  return service.open(cfg, math.min(600, max), max), profile
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

-- The QOS of a member who may no longer submit but whose running jobs
-- are left to finish (revoke_running = "leave"): MaxSubmitJobsPerUser=0,
-- which Slurm checks at submission ("Job violates accounting/QOS policy
-- (job submit limit, ...)"); a job already running is not touched. (A
-- limit of the association itself, MaxSubmitJobs, crashed slurmrestd
-- 22.05; cpu=0 per job only holds the job.)
local function nosubmit_qos(policy) return policy.name .. "-nosubmit" end

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
  local blocked = nosubmit_qos(policy)
  if out[blocked] then
    errors.raise("recipe", "team " .. policy.name .. ": role "
                 .. blocked:sub(#policy.name + 2) .. "'s QOS would be "
                 .. blocked .. ", the QOS of a blocked member",
                 "rename the role")
  end
  if policy.services.slurm.revoke_running == "leave" then
    out[blocked] = { name = blocked, submit_per_user = 0, blocked = true }
  end
  return out
end

-- The limits a QOS holds (an answer's entry): {per_job, per_user,
-- submit_per_user}, nil where it has none (Slurm reports "no limit" as a
-- large or negative number, null or absent).
local function qos_limits(have)
  local max = type(have.limits) == "table" and have.limits.max or {}
  local per = (max.tres or {}).per or {}
  local function limit(n)
    if type(n) ~= "number" or n < 0 or n >= 4294967294 then return nil end
    return n
  end
  return { per_job = limit(gpu_count(per.job)),
           per_user = limit((((max.jobs or {}).active_jobs or {}).per
                             or {}).user),
           submit_per_user = limit(((max.jobs or {}).per or {}).user) }
end

-- The QOS's body for slurmrestd; with have (the QOS as slurmdbd holds
-- it), each limit it holds that w no longer wants is cleared: slurmdbd
-- keeps a limit left out of an update, and takes -1 (INFINITE) as "no
-- limit", a TRES count of -1 as that TRES removed (as sacctmgr's -1).
local function qos_body(w, have)
  local old = have and qos_limits(have) or {}
  local function value(key)
    if w[key] then return w[key] end
    if old[key] then return -1 end
  end
  local max = { tres = { per = {} }, jobs = { active_jobs = { per = {} } } }
  local per_job = value("per_job")
  if per_job then max.tres.per.job = gpu(per_job) end
  max.jobs.active_jobs.per.user = value("per_user")
  local submit = value("submit_per_user")
  if submit then max.jobs.per = { user = submit } end
  return { QOS = { { name = w.name, description = w.blocked
                     and "navette team: no new job (a revoked member)"
                     or "navette team quota",
                     limits = { max = max } } } }
end

local function qos_same(have, w)
  local old = qos_limits(have)
  return old.per_job == w.per_job and old.per_user == w.per_user
         and old.submit_per_user == w.submit_per_user
end

-- What apply says of a QOS: its limits, and (with have, as slurmdbd
-- holds it) those it loses.
local function qos_text(w, have)
  if w.blocked then return "MaxSubmitJobsPerUser=0" end
  local old = have and qos_limits(have) or {}
  local text = "MaxTRESPerJob=gres/gpu=" .. tostring(w.per_job or "none")
               .. " MaxJobsPerUser=" .. tostring(w.per_user or "none")
  local gone = {}
  if old.per_job and not w.per_job then gone[#gone + 1] = "MaxTRESPerJob" end
  if old.per_user and not w.per_user then gone[#gone + 1] = "MaxJobsPerUser" end
  if old.submit_per_user then gone[#gone + 1] = "MaxSubmitJobsPerUser" end
  if #gone > 0 then text = text .. "; " .. table.concat(gone, ", ")
                           .. " removed" end
  return text
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

-- Whether the user (an answer's entry) coordinates account directly.
local function is_coordinator(user, account)
  for _, c in ipairs(type(user) == "table" and user.coordinators or {}) do
    if c.name == account then return true end
  end
  return false
end

-- Slurm's states of a job that has ended.
local ENDED = {}
for _, state in ipairs { "COMPLETED", "CANCELLED", "FAILED", "TIMEOUT",
                         "NODE_FAIL", "PREEMPTED", "BOOT_FAIL", "DEADLINE",
                         "OUT_OF_MEMORY" } do
  ENDED[state] = true
end

-- The count of m's jobs still active (pending, running, suspended...),
-- listed as m (the profile's key mints m's token).
local function active_jobs(policy, proj, m)
  local as_member = session(policy, proj, m.id)
  local n = 0
  for _, j in ipairs(as_member:jobs() or {}) do
    if not ENDED[j.state] then n = n + 1 end
  end
  as_member:close()
  return n
end

-- Removes user from accounting, waiting (bounded by wait_s) for their
-- cancelled jobs to end: Slurm removes no user with active jobs. A
-- sentence for revoke's and apply's output.
local function remove_user(sess, user, wait_s)
  local deadline = _navette.sys.now() + wait_s
  local text, err
  repeat
    text, err = sess:db("DELETE", "user/" .. user)
    if text or _navette.sys.now() >= deadline then break end
    _navette.sys.sleep(0.5)
  until false
  if not text then
    if err.message:find("Nothing deleted", 1, true) then
      return "slurm: no user " .. user .. " in accounting"
    end
    errors.raise(err.code == "refused" and "refused" or "backend",
                 "Slurm accounting: " .. err.message, (err.hint or "")
                 .. (err.message:find("active", 1, true) and " (the user "
                 .. "still has jobs: Slurm removes them once those end)"
                 or ""))
  end
  return "slurm: user " .. user .. " removed from accounting"
end

-- M.changes' state: the session, the policy and project, the account and
-- cluster, the QOS wanted, and the changes planned so far (a list) with
-- the count of what is already as the policy wants it (unchanged).

-- Plans one change of st: op ("+", "~", "-", "!"), the line what, and
-- run (nil: a note, nothing to do).
local function change(st, op, what, run)
  st.changes[#st.changes + 1] = { service = "slurm", op = op, what = what,
                                  run = run }
end

-- The QOS of the team's roles (M.wanted_qos): each missing one created,
-- each that differs updated.
local function qos_changes(st)
  local sess, wanted = st.sess, st.wanted
  local have = {}
  for _, q in ipairs(db(sess, "GET", "qos").QOS or {}) do have[q.name] = q end
  for _, name in ipairs(util.sorted_keys(wanted)) do
    local w = wanted[name]
    if not have[name] or not qos_same(have[name], w) then
      change(st, have[name] and "~" or "+", "slurm QOS " .. name .. ": "
             .. qos_text(w, have[name]), function()
        db(sess, "POST", "qos", qos_body(w, have[name]))
      end)
    else
      st.unchanged = st.unchanged + 1
    end
  end
end

-- The team's account and its association on the cluster, with the team's
-- GPUs (quota.gpus) on it. Sets st.by_user (the account's associations
-- by user) and st.account_assoc (the account's own).
local function account_changes(st)
  local sess, policy, acct, cluster = st.sess, st.policy, st.acct,
                                      st.cluster
  local assocs = db(sess, "GET", "associations").associations or {}
  local by_user, account_assoc = {}, nil
  for _, a in ipairs(assocs) do
    if a.account == acct and a.cluster == cluster then
      if type(a.user) ~= "string" or a.user == "" then account_assoc = a
      else by_user[a.user] = a end
    end
  end
  st.by_user, st.account_assoc = by_user, account_assoc
  local accounts = {}
  for _, a in ipairs(db(sess, "GET", "accounts").accounts or {}) do
    accounts[a.name] = true
  end
  if not accounts[acct] then
    change(st, "+", "slurm account " .. acct, function()
      db(sess, "POST", "accounts", { accounts = { { name = acct,
        description = "navette team " .. policy.name,
        organization = policy.name } } })
    end)
  end
  local team_gpus = policy.quota.gpus
  local have_gpus = account_assoc and gpu_count(((account_assoc.max or {})
                                                  .tres or {}).total)
  if not account_assoc then
    change(st, "+", "slurm association of account " .. acct .. " on "
           .. cluster .. (team_gpus and (": GrpTRES=gres/gpu=" .. team_gpus)
           or ""), function()
      local a = { account = acct, cluster = cluster }
      if team_gpus then a.max = { tres = { total = gpu(team_gpus) } } end
      db(sess, "POST", "associations", { associations = { a } })
    end)
  elseif have_gpus ~= team_gpus then
    -- slurmrestd 22.05 changes no account's association: its update
    -- carries the parent account that slurmdbd holds, which slurmdbd
    -- takes for a move to the same parent and skips (answering no error)
    change(st, "!", "slurm association of account " .. acct .. " on "
           .. cluster .. " has GrpTRES=gres/gpu="
           .. tostring(have_gpus or "none")
           .. ", team.lua " .. (team_gpus and ("quota.gpus = " .. team_gpus)
           or "no quota.gpus") .. "; slurmrestd 22.05 changes no account's "
           .. "association: sacctmgr -i modify account " .. acct
           .. " where cluster=" .. cluster .. " set GrpTRES=gres/gpu="
           .. (team_gpus or -1))
  else
    st.unchanged = st.unchanged + 1
  end
end

-- A fresh Slurm token for member m (who may submit or administer), handed
-- over unless the one handed over last is still fresh.
local function token_change(st, m)
  local policy, proj = st.policy, st.proj
  local token_file = team.handoff_path(policy, m.id, "slurm-token")
  if not token_fresh(token_file) then
    change(st, "+", "slurm token of " .. m.id .. " (user " .. m.id .. ", "
           .. policy.services.slurm.token_lifespan_s .. " s), handed "
           .. "over in " .. token_file, function()
      return "handed over in " .. M.hand_token(policy, proj, m,
        policy.services.slurm.token_lifespan_s)
    end)
  end
end

-- The association of member m, who may submit (f: the facts of
-- member_changes): in the account, with their roles' QOS and GPU minutes.
local function association_change(st, m, f)
  local sess, policy, acct, blocked = st.sess, st.policy, st.acct,
                                      st.blocked
  local a, qos, have_qos = f.assoc, f.qos, f.have_qos
  local minutes = member_minutes(policy, m)
  local have_minutes = a and gpu_count((((a.max or {}).tres or {})
                                        .group or {}).minutes)
  -- the QOS of a role whose quota went (TEAM-ROLE, no longer wanted)
  local stale = {}
  for _, q in ipairs(have_qos) do
    if q ~= blocked and q:sub(1, #policy.name + 1) == policy.name .. "-"
       and not st.wanted[q] then
      stale[#stale + 1] = q
    end
  end
  -- no role QOS: the member keeps what the account's association
  -- gives (a blocked member, or one whose roles' quota went, gets it
  -- back)
  local same_qos = #qos == 0 and not f.is_blocked and #stale == 0
                   or table.concat(have_qos, ",") == table.concat(qos, ",")
  if a and same_qos and have_minutes == minutes then
    st.unchanged = st.unchanged + 1
    return
  end
  change(st, a and "~" or "+", "slurm user " .. m.id .. " in account "
         .. acct .. (#qos > 0 and (" with QOS " .. table.concat(qos, ","))
         or "") .. (minutes and (", GrpTRESMins=gres/gpu=" .. minutes)
         or "") .. (#stale > 0 and ("; QOS " .. table.concat(stale, ",")
         .. " removed") or "") .. ((have_minutes and not minutes)
         and "; GrpTRESMins removed" or "") .. (f.is_blocked
         and " (readmitted: no longer " .. blocked .. ")" or ""),
         function()
    db(sess, "POST", "users", { users = { { name = m.id,
      default = { account = acct } } } })
    local assoc = { account = acct, user = m.id, cluster = st.cluster }
    local list = qos
    if #list == 0 and (f.is_blocked or #stale > 0) then
      list = st.account_assoc and (st.account_assoc.qos
                                   or st.account_assoc.QOS) or {}
    end
    if #list > 0 then
      assoc.qos = list
      assoc.default = { qos = list[1] }
    end
    -- GrpTRESMins goes along whenever the association holds it
    -- (slurmrestd 22.05 crashes on an update that leaves out a TRES
    -- limit the association holds); -1 removes it
    if minutes or have_minutes then
      assoc.max = { tres = { group = { minutes = gpu(minutes or -1) } } }
    end
    db(sess, "POST", "associations", { associations = { assoc } })
  end)
end

-- Member m who may not submit (revoked, or no right to): a revoked user
-- left blocked is removed once their jobs have ended; one still in the
-- account, or a revoked coordinator, is a note for navette team revoke.
local function outsider_change(st, m, f)
  local acct = st.acct
  if f.assoc and m.revoked and f.is_blocked then
    -- revoked, running jobs left to finish (revoke_running = "leave"):
    -- the user goes once they have ended
    local left = active_jobs(st.policy, st.proj, m)
    if left == 0 then
      change(st, "-", "slurm user " .. m.id .. " (revoked, blocked by "
             .. st.blocked .. ") removed from accounting: their running "
             .. "jobs have ended", function()
        return remove_user(st.sess, m.id, 0)
      end)
    else
      st.unchanged = st.unchanged + 1
    end
  elseif f.assoc then
    change(st, "!", "slurm user " .. m.id .. " is in account " .. acct
           .. " but " .. (m.revoked and "revoked" or "may not submit")
           .. ": navette team revoke " .. m.id .. " removes them")
  elseif m.revoked and st.users[m.id] and f.coordinator then
    change(st, "!", "slurm user " .. m.id .. " is a coordinator of account "
           .. acct .. " but revoked: navette team revoke " .. m.id
           .. " removes them")
  end
end

-- Member m as a coordinator of the account: added when they hold the
-- admin right; one who no longer does is a note (REST removes none).
local function coordinator_change(st, m, f)
  local acct = st.acct
  if f.admin then
    if not f.coordinator then
      change(st, "+", "slurm coordinator " .. m.id .. " of account " .. acct
             .. (f.may and "" or (" (a user with no association: submits "
             .. "nothing)")), function()
        local u = { name = m.id, coordinators = { { name = acct,
                                                    direct = 1 } } }
        if f.may then u.default = { account = acct } end
        db(st.sess, "POST", "users", { users = { u } })
      end)
    else
      st.unchanged = st.unchanged + 1
    end
  elseif f.coordinator and not m.revoked then
    -- dbv0.0.38 adds coordinators (POST users) but has no call that
    -- removes one (slurmdb_coord_remove is not reachable over REST)
    change(st, "!", "slurm user " .. m.id .. " is a coordinator of account "
           .. acct .. " but holds no admin right; slurmrestd 22.05 "
           .. "removes no coordinator: sacctmgr remove coordinator "
           .. "user=" .. m.id .. " account=" .. acct)
  end
end

-- The changes for one member m of the policy: their token, their
-- association (or its removal, or a note), their coordinatorship.
local function member_changes(st, m)
  local policy = st.policy
  local f = { may = not m.revoked and team.has(policy, m, "submit"),
              admin = not m.revoked and team.has(policy, m, "admin"),
              assoc = st.by_user[m.id],
              qos = member_qos(policy, m, st.wanted), have_qos = {} }
  for _, q in ipairs(f.assoc and (f.assoc.qos or f.assoc.QOS) or {}) do
    f.have_qos[#f.have_qos + 1] = q
  end
  table.sort(f.have_qos)
  f.is_blocked = #f.have_qos == 1 and f.have_qos[1] == st.blocked
  f.coordinator = is_coordinator(st.users[m.id], st.acct)
  if f.may or f.admin then token_change(st, m) end
  if f.may then
    association_change(st, m, f)
  else
    outsider_change(st, m, f)
  end
  coordinator_change(st, m, f)
end

-- Users of the account whom the policy no longer names (a member
-- removed from the team file): their association goes, as the rest of
-- their rights went with the file's statements and ACL entries; Slurm
-- removes none with active jobs in the account, which are theirs to end
-- (or navette team revoke's, while they are still in the file). A
-- coordinator the file does not name is a note.
local function departed_changes(st)
  local sess, policy, acct, cluster = st.sess, st.policy, st.acct,
                                      st.cluster
  for _, user in ipairs(util.sorted_keys(st.by_user)) do
    if not policy.members[user] then
      change(st, "-", "slurm user " .. user .. " is in account " .. acct
             .. " but not in " .. team.FILE .. ": association removed",
             function()
        local text, err = sess:db("DELETE", "association?account="
          .. util.url_encode(acct) .. "&user=" .. util.url_encode(user)
          .. "&cluster=" .. util.url_encode(cluster))
        if not text then
          errors.raise("backend", "Slurm accounting: the association of "
                       .. user .. " in account " .. acct .. ": "
                       .. err.message, "Slurm removes no association "
                       .. "with active jobs: end them (scancel -u " .. user
                       .. " -A " .. acct .. ") and apply again")
        end
      end)
    end
  end
  for _, name in ipairs(util.sorted_keys(st.users)) do
    if not policy.members[name] and is_coordinator(st.users[name], acct) then
      change(st, "!", "slurm user " .. name .. " is a coordinator of "
             .. "account " .. acct .. " but not in " .. team.FILE
             .. "; slurmrestd 22.05 removes no coordinator: sacctmgr "
             .. "remove coordinator user=" .. name .. " account=" .. acct)
    end
  end
end

-- The changes that bring slurmdbd to the policy: a list of {service, op
-- ("+", "~", "-", "!"), what, run} (run nil: a note, nothing to do), and
-- the count of what already is as wanted. In order: the roles' QOS, the
-- account and its association, each member, those the file dropped.
function M.changes(policy, proj)
  local sess = session(policy, proj)
  local st = { sess = sess, policy = policy, proj = proj,
               acct = account_of(policy), changes = {}, unchanged = 0 }
  st.cluster = cluster_name(sess, policy)
  st.wanted = M.wanted_qos(policy)
  qos_changes(st)
  account_changes(st)
  st.users = {}
  for _, u in ipairs(db(sess, "GET", "users").users or {}) do
    st.users[u.name] = u
  end
  st.blocked = nosubmit_qos(policy)
  for _, m in ipairs(team.members(policy)) do member_changes(st, m) end
  departed_changes(st)
  -- (the session stays open for the changes' runs; collected after)
  return st.changes, st.unchanged
end

local function plural(n, word)
  return n .. " " .. word .. (n == 1 and "" or "s")
end

-- Pending jobs are always cancelled. Running ones too by default; with
-- revoke_running = "leave" they (and suspended ones: started work, paused
-- by preemption or an operator, whose resumption is theirs to decide)
-- are left to finish, and the member's association gets only the QOS
-- TEAM-nosubmit, so that Slurm refuses their next job at submission.
-- A coordinator with jobs left is the exception: slurmrestd 22.05
-- removes a coordinator only with the user, which Slurm keeps while the
-- user has jobs, so their running jobs are cancelled too (a revoked
-- member keeps no power over the team's jobs).
function M.revoke(policy, proj, m)
  local sess = session(policy, proj)
  local acct = account_of(policy)
  local leave = policy.services.slurm.revoke_running == "leave"
  -- (a user accounting does not know is no coordinator)
  local user = sess:db("GET", "user/" .. m.id)
  local coordinator = user ~= nil
                      and is_coordinator((json.decode(user).users or {})[1], acct)
  -- the member's jobs, listed and cancelled as the member (a session's
  -- listing is its user's)
  local as_member = session(policy, proj, m.id)
  local jobs = as_member:jobs() or {}
  local cancelled, left = 0, {}
  for _, j in ipairs(jobs) do
    if j.state == "PENDING" then
      if as_member:cancel(j.job_id) then cancelled = cancelled + 1 end
    elseif not ENDED[j.state] then
      left[#left + 1] = j -- running, suspended, completing...
    end
  end
  local why = ""
  if not leave or coordinator then
    if leave and #left > 0 then
      why = " (also the running ones: " .. m.id .. " coordinates account "
            .. acct .. ", and slurmrestd 22.05 drops a coordinator only "
            .. "with their user)"
    end
    for _, j in ipairs(left) do
      if as_member:cancel(j.job_id) then cancelled = cancelled + 1 end
    end
    left = {}
  end
  as_member:close()
  if #left == 0 then
    local said = remove_user(sess, m.id, 30)
    sess:close()
    if said:find("^slurm: no user") then return said end
    return said .. " (" .. plural(cancelled, "job") .. " cancelled" .. why
           .. ")"
  end
  -- jobs left running: the user stays, blocked
  local blocked = nosubmit_qos(policy)
  db(sess, "POST", "qos", qos_body({ name = blocked, submit_per_user = 0,
                                     blocked = true }))
  -- the association's GrpTRESMins, as slurmdbd holds it, goes along:
  -- slurmrestd 22.05 crashed on an update that left out a TRES limit the
  -- association holds (team.lua's may have changed since the last apply)
  local cluster = cluster_name(sess, policy)
  local assoc = { account = acct, user = m.id, cluster = cluster,
                  qos = { blocked }, default = { qos = blocked } }
  -- (none found: an error answer, and nothing to carry)
  local text = sess:db("GET", "association?account=" .. util.url_encode(acct)
                       .. "&user=" .. util.url_encode(m.id) .. "&cluster="
                       .. util.url_encode(cluster))
  local held = text and json.decode(text).associations or {}
  local minutes = held[1] and gpu_count((((held[1].max or {}).tres or {})
                                         .group or {}).minutes)
                  or member_minutes(policy, m)
  if minutes then
    assoc.max = { tres = { group = { minutes = gpu(minutes) } } }
  end
  db(sess, "POST", "associations", { associations = { assoc } })
  sess:close()
  return "slurm: user " .. m.id .. " blocked (QOS " .. blocked
         .. ": Slurm refuses their new jobs); " .. plural(cancelled,
         "pending job") .. " cancelled, " .. plural(#left, "running job")
         .. " left to finish (revoke_running = \"leave\"): the next "
         .. "navette team apply or revoke removes the user once they end"
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
