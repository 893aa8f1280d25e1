-- A team's policy on radosgw (navette team apply, revoke): one user per
-- member, made through the admin API with a key that radosgw generates
-- (handed over in NAVETTE_HOME/team/TEAM/MEMBER.s3.json, 0600), and, on
-- each bucket the roles name, bucket policy statements that give each
-- role exactly its prefixes: s3:GetObject under data-read, s3:PutObject
-- and s3:GetObject under data-write ({member}: the member's own prefix),
-- s3:GetObject on the store's jobs (their logs, records and outputs) with
-- read-logs. A role with admin gets s3:GetObject, s3:PutObject and
-- s3:DeleteObject under every prefix the roles name (a {member} prefix:
-- what is before it, every member's), and s3:GetObject on the store.
-- Nothing else is granted, so a shared dataset is read-only unless a role
-- says otherwise; radosgw itself refuses the rest (403 AccessDenied). The
-- statements navette writes carry Sids "navette-team-TEAM-..."; the
-- bucket's other statements are kept as they are. A revoked member's user
-- is suspended (403 UserSuspended), keys and data kept.
local errors = require "navette.errors"
local util = require "navette.util"
local team = require "navette.team"
local json = _navette.json

local M = {}

-- The profile, an admin client (the admin API) and an owner client (the
-- bucket policies: only a bucket's owner may set them, the profile's
-- store credential).
local function clients(policy, proj)
  local s = policy.services.s3
  local profile = proj.profiles[s.profile or proj.default_profile]
  local creds = require "navette.creds"
  require("navette.context").enter { profile = profile, project = proj }
  local s3store = require "navette.s3store"
  local decl = profile.credentials[s.admin]
  local admin = s3store.client(profile, creds.get(s.admin), decl.host)
  local owner_h, err = _navette.creds.load(profile.s3.credential)
  if not owner_h then
    errors.raise("refused", "the store credential of profile "
                 .. profile.name .. " cannot be loaded: " .. err.message,
                 err.hint)
  end
  local owner = s3store.client(profile, owner_h)
  return profile, admin, owner
end
M.clients = clients

local function check(value, err, what)
  return errors.check(value, err, what)
end

-- (the name's length first: team "vision" must not take team
-- "vision-x"'s statements for its own)
local function sid_prefix(policy)
  return "navette-team-" .. #policy.name .. "-" .. policy.name .. "-"
end

local function arn_user(id) return "arn:aws:iam:::user/" .. id end

-- What admin covers: every prefix the roles name ({member} prefixes cut
-- there: every member's), the shorter of two nested ones only.
-- -> { {bucket, prefix, url} } sorted
function M.admin_prefixes(policy)
  local all = {}
  for _, role in pairs(policy.roles) do
    for _, list in ipairs({ role.read, role.write }) do
      for _, d in ipairs(list) do
        -- (team.lua puts {member} right after a '/' of a prefix)
        local prefix = d.prefix:match("^(.-){member}") or d.prefix
        all[#all + 1] = { bucket = d.bucket, prefix = prefix }
      end
    end
  end
  table.sort(all, function(a, b)
    if a.bucket ~= b.bucket then return a.bucket < b.bucket end
    return a.prefix < b.prefix
  end)
  local out = {}
  for _, d in ipairs(all) do
    local last = out[#out]
    -- (sorted: a prefix of d comes before it)
    if not (last and last.bucket == d.bucket
            and d.prefix:sub(1, #last.prefix) == last.prefix) then
      out[#out + 1] = { bucket = d.bucket, prefix = d.prefix,
                        url = "s3://" .. d.bucket .. "/" .. d.prefix }
    end
  end
  return out
end

-- The statements the policy wants on each bucket: { bucket = {stmt...} }.
-- logs: {bucket, prefix} of the store the jobs' logs and records are in
-- (the s3 profile's storage root), which read-logs gives s3:GetObject on.
function M.statements(policy, logs)
  local by_bucket = {}
  local function add(bucket, st)
    by_bucket[bucket] = by_bucket[bucket] or {}
    table.insert(by_bucket[bucket], st)
  end
  for _, rname in ipairs(util.sorted_keys(policy.roles)) do
    local role = policy.roles[rname]
    local holders = {}
    for _, m in ipairs(team.members(policy, true)) do
      for _, r in ipairs(m.roles) do
        if r == rname then holders[#holders + 1] = m.id end
      end
    end
    if #holders > 0 then
      -- a prefix with {member} is each holder's own (one statement each);
      -- another is shared by every holder of the role
      local function grant(kind, list, actions, suffixes)
        for i, d in ipairs(list) do
          local own = d.prefix:find("{member}", 1, true) ~= nil
          for _, id in ipairs(holders) do
            local prefix = d.prefix:gsub("{member}", id)
            local resources = {}
            for _, suffix in ipairs(suffixes or { "" }) do
              resources[#resources + 1] = "arn:aws:s3:::" .. d.bucket .. "/"
                                          .. prefix .. "*" .. suffix
            end
            add(d.bucket, {
              Sid = sid_prefix(policy) .. kind .. "-" .. rname .. "-" .. i
                    .. (own and ("-" .. id) or ""),
              Effect = "Allow", Principal = { AWS = { arn_user(id) } },
              Action = actions, Resource = resources,
            })
          end
        end
      end
      grant("read", role.read, { "s3:GetObject" })
      grant("write", role.write, { "s3:GetObject", "s3:PutObject" })
      if role.grants.admin then
        grant("admin", M.admin_prefixes(policy),
              { "s3:GetObject", "s3:PutObject", "s3:DeleteObject" })
      end
      if logs and (role.grants["read-logs"] or role.grants.admin) then
        -- (under the whole store root: radosgw 16 matches no '*' inside
        -- a resource (bucket/root/*/navette.log grants nothing), so the
        -- jobs' outputs come with their logs and records)
        grant("logs", { { bucket = logs.bucket, prefix = logs.prefix } },
              { "s3:GetObject" })
      end
    end
  end
  -- one statement per Sid (a prefix without {member} is the same for
  -- every holder: their principals merge)
  for bucket, list in pairs(by_bucket) do
    local merged, order = {}, {}
    for _, st in ipairs(list) do
      local have = merged[st.Sid]
      if have then
        for _, p in ipairs(st.Principal.AWS) do
          table.insert(have.Principal.AWS, p)
        end
      else
        merged[st.Sid] = st
        order[#order + 1] = st.Sid
      end
    end
    table.sort(order)
    local out = {}
    for i, sid in ipairs(order) do
      table.sort(merged[sid].Principal.AWS)
      out[i] = merged[sid]
    end
    by_bucket[bucket] = out
  end
  return by_bucket
end

-- The policy document of bucket with ours replacing the team's current
-- statements, the others kept; whether anything changed; the count kept;
-- the user ids the team's current statements name.
local function merged_policy(policy, current_json, ours)
  local prefix = sid_prefix(policy)
  local current = current_json and json.decode(current_json) or nil
  local keep, had = {}, {}
  if type(current) == "table" and type(current.Statement) == "table" then
    for _, st in ipairs(current.Statement) do
      if type(st) == "table" and type(st.Sid) == "string"
         and st.Sid:sub(1, #prefix) == prefix then
        had[#had + 1] = st
      else
        keep[#keep + 1] = st
      end
    end
  end
  table.sort(had, function(a, b) return a.Sid < b.Sid end)
  -- radosgw gives a Principal's list back as written; compare as data
  local changed = json.encode(had) ~= json.encode(ours)
  local statements = {}
  for _, st in ipairs(keep) do statements[#statements + 1] = st end
  for _, st in ipairs(ours) do statements[#statements + 1] = st end
  local doc = #statements > 0
              and json.encode({ Version = "2012-10-17",
                                Statement = statements }) or nil
  local named = {}
  for _, st in ipairs(had) do
    local p = type(st.Principal) == "table" and st.Principal.AWS
    for _, arn in ipairs(type(p) == "table" and p or { p }) do
      local id = type(arn) == "string" and arn:match("^arn:aws:iam:::user/(.+)$")
      if id then named[id] = true end
    end
  end
  return doc, changed, #keep, named
end

-- The changes that bring radosgw to the policy: a list of {service, op
-- ("+", "~", "-", "!"), what, run} (run nil: a note, nothing to do).
-- opts.readmit: member ids whose suspended user may be enabled again.
function M.changes(policy, proj, opts)
  opts = opts or {}
  local changes, unchanged = {}, 0
  local profile, admin, owner = clients(policy, proj)
  local function change(op, what, run)
    changes[#changes + 1] = { service = "s3", op = op, what = what,
                              run = run }
  end
  local function hand_key(id)
    local key = check(admin:admin_create_key(id, "team-" .. id),
                      nil, "a key for " .. id)
    return "key " .. key:access_key_id():sub(-4) .. " handed over in "
           .. team.hand_over(policy, id, "s3.json", key)
  end
  for _, m in ipairs(team.members(policy)) do
    local info, err = admin:admin_user(m.id)
    if not info and err.code ~= "not_found" then
      errors.check(nil, err, "radosgw user " .. m.id)
    end
    if not info then
      if not m.revoked then
        change("+", "s3 user " .. m.id .. " (" .. m.name .. " <" .. m.email
               .. ">) and its key, handed over in "
               .. team.handoff_path(policy, m.id, "s3.json"), function()
          check(admin:admin_create_user(m.id, m.name, m.email))
          return hand_key(m.id)
        end)
      else
        unchanged = unchanged + 1
      end
    else
      if m.revoked and not info.suspended then
        change("~", "s3 user " .. m.id .. ": suspended (revoked in "
               .. team.FILE .. ")", function()
          check(admin:admin_suspend(m.id, true))
        end)
      elseif not m.revoked and info.suspended then
        if opts.readmit and opts.readmit[m.id] then
          change("~", "s3 user " .. m.id .. ": enabled again (--readmit)",
                 function() check(admin:admin_suspend(m.id, false)) end)
        else
          change("!", "s3 user " .. m.id .. " is suspended (revoked): left "
                 .. "so; remove the member from " .. team.FILE .. ", or "
                 .. "navette team apply --readmit " .. m.id)
        end
      elseif not m.revoked and #info.keys == 0 then
        change("+", "s3 key of user " .. m.id .. ", handed over in "
               .. team.handoff_path(policy, m.id, "s3.json"), function()
          return hand_key(m.id)
        end)
      else
        unchanged = unchanged + 1
      end
      for _, k in ipairs(m.keys) do
        local has = false
        for _, id in ipairs(info.keys) do has = has or id == k end
        if k:match("^[%w+/=._-]+$") and #k <= 128 and not has then
          change("!", "member " .. m.id .. " lists key " .. k:sub(1, 6)
                 .. "..., which radosgw user " .. m.id .. " does not have")
        end
      end
    end
  end
  local wanted = M.statements(policy, { bucket = profile.s3.bucket,
                                        prefix = profile.s3.root or "" })
  local buckets = {}
  for b in pairs(wanted) do buckets[#buckets + 1] = b end
  table.sort(buckets)
  -- users this machine made for the team (a key handed over here) whom
  -- the policy no longer names are suspended; a user the team's
  -- statements name and navette did not make here is only reported:
  -- whoever may write the bucket's policy could name any uid there (the
  -- store's owner, the admin user, another team's member)
  local made, named_by = {}, {}
  for _, f in ipairs(_navette.sys.listdir(team.handoff_dir(policy)) or {}) do
    local id = f:match("^(.+)%.s3%.json$")
    if id then made[id] = true end
  end
  for _, bucket in ipairs(buckets) do
    local current, err = owner:bucket_policy(bucket)
    if current == nil then
      errors.check(nil, err, "the policy of bucket " .. bucket
                   .. " (only its owner, the store credential of profile "
                   .. profile.name .. ", may read it)")
    end
    local doc, changed, kept, named = merged_policy(policy, current or nil,
                                                    wanted[bucket])
    for id in pairs(named) do named_by[id] = bucket end
    if changed then
      change("~", "s3 bucket policy of " .. bucket .. ": "
             .. #wanted[bucket] .. " statement"
             .. (#wanted[bucket] == 1 and "" or "s") .. " of team "
             .. policy.name .. (kept > 0 and (", " .. kept
             .. " other statement(s) kept") or ""), function()
        check(owner:put_bucket_policy(bucket, doc))
      end)
    else
      unchanged = unchanged + 1
    end
  end
  -- (their statements go with the bucket policies above; their user is
  -- suspended, keys and data kept, as a revoked member's)
  for _, id in ipairs(util.sorted_keys(made)) do
    if not policy.members[id] then
      local info = admin:admin_user(id)
      if info and not info.suspended then
        change("~", "s3 user " .. id .. " (made for team " .. policy.name
               .. ", not in " .. team.FILE .. " any more): suspended",
               function() check(admin:admin_suspend(id, true)) end)
      end
    end
  end
  for _, id in ipairs(util.sorted_keys(named_by)) do
    if not policy.members[id] and not made[id] then
      change("!", "s3 user " .. id .. " is named by team " .. policy.name
             .. "'s statements on bucket " .. named_by[id] .. " but not "
             .. "in " .. team.FILE .. ": their statements go; navette did "
             .. "not make this user here, so it is not suspended (an "
             .. "admin of the team suspends it if it was the team's)")
    end
  end
  return changes, unchanged
end

-- Revokes member m on radosgw: the user suspended. Returns what it did.
function M.revoke(policy, proj, m)
  local _, admin = clients(policy, proj)
  local info, err = admin:admin_user(m.id)
  if not info then
    if err.code == "not_found" then return "s3: no user " .. m.id end
    errors.check(nil, err, "radosgw user " .. m.id)
  end
  check(admin:admin_suspend(m.id, true))
  return "s3: user " .. m.id .. " suspended"
end

-- The proof: the member's handed-over key tried against radosgw. Returns
-- {service, credential, refused, answer} or nil when navette holds none.
function M.prove(policy, proj, m)
  local handle = team.handed(policy, m.id, "s3.json", "s3")
  if not handle then return nil end
  local profile = clients(policy, proj)
  local client = require("navette.s3store").client(profile, handle)
  local ok, e = client:check_credential()
  return { service = "s3", credential = "key ..."
           .. (handle:access_key_id() or "?"):sub(-4),
           refused = not ok, answer = ok and "accepted (HTTP 200)"
           or (e.s3_code or e.message) }
end

return M
