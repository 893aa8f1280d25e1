-- `navette team show|apply|revoke`: a team's policy (team.lua beside the
-- project file) converged onto the services that enforce it, and a
-- member's revocation, proved against each service.
local errors = require "navette.errors"
local term = require "navette.term"
local util = require "navette.util"
local common = require "navette.cli.common"
local sys, json = _navette.sys, _navette.json

local M = {
  name = "team",
  summary = {
    { "team show", "the team's members, roles, quotas and findings" },
    { "team apply [--plan]", "converge the services to team.lua" },
    { "team revoke MEMBER", "cut a member off every service, and prove it" },
  },
  usage = [[
usage: navette team show [--json]
       navette team apply [--plan] [--readmit MEMBER] [--json]
       navette team revoke MEMBER [--json]
  The team's policy is team.lua beside navette.lua, or the file of a team
  repository navette.lua names (team = { git = URL, ref = TAG }), read
  at the commit navette.lock pins (`navette lock`): members (name, email,
  roles, key ids), roles (submit, read-logs, image-pull, image-push,
  admin, data-read and data-write prefixes, quota) and the services that
  enforce it (services.s3: radosgw users and bucket policies;
  services.registry: the token service's ACL file; services.slurm: the
  account, QOS, users and associations of a cluster with accounting;
  services.ssh: an SSH certificate per member, signed by the team's CA,
  the login node's sshd lines and files, a KRL).
  show      the policy and its findings (a credential two members share)
  apply     reads each service, prints every change (+ create, ~ change,
            ! needs you), then makes them; --plan stops after printing.
            A second apply says "no changes". A member's new secrets are
            handed over in NAVETTE_HOME/team/TEAM/ (0600). --readmit
            enables a suspended member's user again.
  revoke    suspends the member's S3 user, removes their registry login,
            cancels their Slurm jobs and removes their Slurm user (with
            services.slurm.revoke_running = "leave": cancels only their
            pending jobs and blocks new ones, the user removed once the
            running ones end), adds their SSH key ids to the KRL,
            writes the audit line, then tries each of their
            credentials navette holds against each service and prints
            the refusals and the time from the command to the last
            one. Exit 1 when a credential is still accepted.
  apply and revoke act on team.lua as commit HEAD has it (--plan reads
  the working tree's). When the policy names an admin, they need an
  admin's git identity (user.email); exit 3 otherwise.]],
  flags = { plan = "bool", json = "bool", readmit = "value" },
  read_only = false,
}

-- plan: read the team repository from the cache and the lock alone;
-- change: the command changes the services (a team.lua must be committed)
local function load_policy(plan, change)
  local project = require "navette.project"
  local team = require "navette.team"
  local proj = project.at()
  if not proj.file then
    common.usage_error("no project file (navette.lua) here or above", M.name)
  end
  local policy = team.load(proj, { mode = plan and "plan" or "run",
                                   committed = change })
  if not policy then
    error(errors.new("usage", "no " .. team.FILE .. " beside " .. proj.file,
                     "write the team's policy there: navette team --help"), 0)
  end
  return proj, policy, team
end

-- When the policy names an admin, only an admin changes the services:
-- the git identity (user.email) must be an active member holding admin.
-- (The services refuse whoever lacks their admin credentials; this says
-- so before anything is sent, and the audit lines name the admin.)
local function check_admin(policy, proj, verb)
  local team = require "navette.team"
  local admins = {}
  local function active(m)
    return not m.revoked and not team.marked_revoked(policy, m.id)
  end
  -- (the check holds when a role grants admin, whoever holds it now: a
  -- policy whose admins are all revoked is changed by none)
  local granted = false
  for _, r in pairs(policy.roles) do granted = granted or r.grants.admin end
  if not granted then return end
  for _, m in ipairs(team.members(policy)) do
    if active(m) and team.has(policy, m, "admin") then
      admins[#admins + 1] = m.id
    end
  end
  local repo = _navette.git.open(proj.root)
  local email = _navette.git.config("user.email", repo or nil)
  local m = email and email ~= "" and team.member_of(policy, email)
  if m and active(m) and team.has(policy, m, "admin") then
    local user, host = sys.identity()
    require("navette.audit").member_identity = m.id .. " <" .. m.email
      .. "> " .. tostring(user) .. "@" .. tostring(host)
    return
  end
  error(errors.new("refused", "team " .. verb .. ": only an admin of team "
                   .. policy.name .. " (" .. (#admins > 0 and
                   table.concat(admins, ", ") or "none active: give a member "
                   .. "admin in a reviewed " .. team.FILE)
                   .. ") changes its services; your git identity "
                   .. ((email and email ~= "") and email or "(no user.email)")
                   .. (m and (" is member " .. m.id .. (active(m)
                       and ", without admin" or ", revoked"))
                       or " is no member of it"),
                   "run it as an admin (git config user.email), or give "
                   .. "the member a role with admin in " .. team.FILE
                   .. " (reviewed); `team apply --plan` is open to all"),
        0)
end

-- (a module navette.team.<name>, or a backend's own team service)
local function service_module(policy, proj, name)
  return require("navette.team").service(policy, proj, name)
end

local function show(opts)
  local _, policy, team = load_policy()
  local findings = team.findings(policy)
  if opts.json then
    local members = {}
    for _, m in ipairs(team.members(policy)) do
      members[#members + 1] = { id = m.id, name = m.name, email = m.email,
                                roles = m.roles, revoked = m.revoked }
    end
    term.print(json.encode({ team = policy.name, source = policy.pinned
                             or policy.path,
                             members = json.array(members),
                             findings = json.array(findings) }, true))
    return #findings > 0 and 1 or 0
  end
  term.print("team " .. policy.name .. " (" .. policy.path
             .. (policy.pinned and (", ref " .. policy.pinned.ref) or "")
             .. ")")
  for _, m in ipairs(team.members(policy)) do
    term.printf("  %-12s %-24s %s%s\n", m.id, m.email,
                table.concat(m.roles, ", "), m.revoked and " (revoked)" or "")
  end
  for _, name in ipairs(util.sorted_keys(policy.roles)) do
    local r = policy.roles[name]
    local rights = util.sorted_keys(r.grants)
    for _, d in ipairs(r.read) do rights[#rights + 1] = "read " .. d.url end
    for _, d in ipairs(r.write) do rights[#rights + 1] = "write " .. d.url end
    term.printf("  role %-14s %s\n", name, table.concat(rights, "; "))
  end
  for _, f in ipairs(findings) do term.print("  finding: " .. f) end
  return #findings > 0 and 1 or 0
end

local function apply(opts)
  local proj, policy, team = load_policy(opts.plan, not opts.plan)
  local audit = require "navette.audit"
  local readmit = opts.readmit and { [opts.readmit] = true } or nil
  if opts.readmit and not policy.members[opts.readmit] then
    common.usage_error("--readmit: no member '" .. opts.readmit .. "'", M.name)
  end
  if opts.readmit and policy.members[opts.readmit].revoked then
    common.usage_error("--readmit: " .. opts.readmit .. " is revoked in "
                       .. policy.path .. ": remove revoked = true there",
                       M.name)
  end
  if opts.plan then
    -- as safe as reading: no credential's program runs
    _navette.core.forbid_exec()
  end
  if not opts.plan then check_admin(policy, proj, "apply") end
  team.apply_revocations(policy, not opts.plan and opts.readmit or nil,
                         opts.plan)
  local changes, unchanged, active = {}, 0, {}
  for _, name in ipairs(team.service_names(policy)) do
    active[#active + 1] = name
    local list, same = service_module(policy, proj, name).changes(
      policy, proj, { readmit = readmit })
    for _, c in ipairs(list) do changes[#changes + 1] = c end
    unchanged = unchanged + same
  end
  local findings = team.findings(policy)
  for _, f in ipairs(findings) do
    changes[#changes + 1] = { service = "team", op = "!", what = f }
  end
  local todo = 0
  for _, c in ipairs(changes) do if c.run then todo = todo + 1 end end
  local out = { team = policy.name, plan = opts.plan == true,
                services = json.array(active), changes = {} }
  if not opts.json then
    term.print(term.style("stdout", "bold", "team " .. policy.name)
               .. (opts.plan and " (plan: nothing is changed)" or "")
               .. ": " .. (todo == 0 and "no changes" or (todo .. " change"
               .. (todo == 1 and "" or "s"))) .. " (" .. unchanged
               .. " already as the policy says; services: "
               .. table.concat(active, ", ") .. ")")
  end
  for _, c in ipairs(changes) do
    local row = { service = c.service, op = c.op, what = c.what }
    if c.run and not opts.plan then
      local ok, result = pcall(c.run)
      if not ok then
        local e = errors.from(result)
        audit.record({ action = "team.apply", target = c.service,
                       result = "failed", detail = c.what .. ": "
                       .. e.message })
        error(e, 0)
      end
      row.done = true
      row.note = result
      audit.record({ action = "team.apply", target = c.service,
                     result = "ok", detail = c.what })
    end
    out.changes[#out.changes + 1] = row
    if not opts.json then
      term.print("  " .. c.op .. " " .. c.what
                 .. (row.note and ("\n      " .. row.note) or ""))
    end
  end
  out.changes = json.array(out.changes)
  if opts.json then term.print(json.encode(out, true)) end
  return 0
end

local function revoke(id, opts)
  local started = sys.now()
  local proj, policy, team = load_policy(false, true)
  local audit = require "navette.audit"
  local m = policy.members[id]
  if not m then
    common.usage_error("no member '" .. tostring(id) .. "'"
                       .. util.suggest(tostring(id),
                                       util.sorted_keys(policy.members)),
                       M.name)
  end
  check_admin(policy, proj, "revoke")
  local done, proofs, failed = {}, {}, 0
  -- remembered first: a service that fails below must not leave the
  -- member's rights to be given back by the next apply
  team.mark_revoked(policy, id)
  for _, name in ipairs(team.service_names(policy)) do
    local ok, result = pcall(function()
      return service_module(policy, proj, name).revoke(policy, proj, m)
    end)
    if ok then
      done[#done + 1] = result
    else
      local e = errors.from(result)
      failed = failed + 1
      done[#done + 1] = name .. ": NOT REVOKED: " .. e.message
    end
  end
  audit.record({ action = "team.revoke", target = id, result = "ok",
                 detail = table.concat(done, "; ") })
  local last = started
  for _, name in ipairs(team.service_names(policy)) do
    local p = service_module(policy, proj, name).prove(policy, proj, m)
    if p then
      p.after_s = sys.now() - started
      last = math.max(last, sys.now())
      if not p.refused then failed = failed + 1 end
      proofs[#proofs + 1] = p
    else
      proofs[#proofs + 1] = { service = name, credential = "(none held "
        .. "here)", refused = json.null, answer = "navette holds no "
        .. "credential of " .. id .. " for it: not tried" }
    end
  end
  local seconds = last - started
  if opts.json then
    term.print(json.encode({ member = id, done = json.array(done),
                             proofs = json.array(proofs),
                             seconds = seconds, ok = failed == 0 }, true))
  else
    term.print("revoked " .. id .. ":")
    for _, d in ipairs(done) do term.print("  " .. d) end
    term.print("proof (each credential of " .. id .. " tried again):")
    for _, p in ipairs(proofs) do
      term.printf("  %-9s %-18s %s%s\n", p.service, p.credential,
                  p.refused == true and "refused: " or
                  (p.refused == false and "STILL ACCEPTED: " or ""),
                  p.answer)
    end
    term.printf("from the command to the last refusal: %.2f s\n", seconds)
    if failed > 0 then
      term.eprint("error: " .. failed .. " credential(s) of " .. id
                  .. " still accepted")
    end
  end
  if not m.revoked then
    local where = policy.pinned
      and (policy.pinned.file .. " of the team repository "
           .. policy.pinned.url .. " (or remove the member), tag it, run "
           .. "`navette lock` here")
      or (policy.path .. " (or remove the member)")
    term.eprint("note: mark " .. id .. " revoked = true in " .. where
                .. " and commit: this machine remembers the revocation, "
                .. "another admin's apply would not")
  end
  return failed > 0 and 1 or 0
end

function M.run(argv)
  local opts, args = common.command_args(M, argv, true)
  if not opts then return args end
  local verb = table.remove(args, 1)
  if verb == "show" and #args == 0 then return show(opts) end
  if verb == "apply" and #args == 0 then return apply(opts) end
  if verb == "revoke" and #args == 1 then return revoke(args[1], opts) end
  common.usage_error("unknown or malformed team command: " .. verb, M.name)
end

return M
