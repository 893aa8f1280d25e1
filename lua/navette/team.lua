-- navette.team: a team's policy (team.lua beside navette.lua, data like
-- it) and its convergence onto the real services: who the members are,
-- what each role may do, the quotas, and which services enforce them
-- (navette team apply, revoke). The services hold the rights; navette
-- writes them there and checks before sending, so a member who edits the
-- client gains nothing.
--
--   return {
--     name = "vision",
--     members = {
--       alice = { name = "Alice Martin", email = "alice@example.com",
--                 roles = { "developer" } },
--       bob   = { name = "Bob Stone", email = "bob@example.com",
--                 roles = { "developer", "image-maintainer" },
--                 keys = { "AKIA..." } },         -- key ids they use
--     },
--     roles = {
--       developer = { "submit", "read-logs", "image-pull",
--                     ["data-read"] = { "s3://team-data/datasets/" },
--                     ["data-write"] = { "s3://team-data/outputs/{member}/" },
--                     quota = { gpus_per_job = 1, concurrent_jobs = 1,
--                               gpu_hours_per_day = 8 } },
--       ["image-maintainer"] = { "image-pull", "image-push" },
--     },
--     quota = { gpus = 2 },                         -- the whole team's
--     services = {
--       s3 = { profile = "dev", admin = "rgw-admin" },
--       registry = { host = "registry.example.com:5000",
--                    repositories = { "vision/*" },
--                    acl_file = "/srv/registry-auth/acl.json" },
--       -- a service a backend keeps itself (its team_services): here
--       -- slurm_ssh's, an SSH certificate per member and a KRL
--       ssh = { profile = "login", ca = "team-ssh-ca",
--               krl = "/shared/ssh/vision.krl" },
--     },
--   }
local errors = require "navette.errors"
local util = require "navette.util"
local sys, core = _navette.sys, _navette.core

local team = {}

team.FILE = require("navette.project").TEAM_FILE
team.GRANTS = { "submit", "read-logs", "image-pull", "image-push", "admin" }
team.QUOTA_KEYS = { "gpus_per_job", "concurrent_jobs", "gpu_hours_per_day",
                    "gpus" }
local TOP_KEYS = { "name", "members", "roles", "quota", "services" }
local MEMBER_KEYS = { "name", "email", "roles", "keys", "revoked" }
local SERVICE_KEYS = {
  s3 = { "profile", "admin" },
  registry = { "host", "repositories", "acl_file", "profile" },
  slurm = { "profile", "account", "cluster", "token_lifespan",
            "revoke_running" },
}

local function listed(v, list)
  for _, x in ipairs(list) do if x == v then return true end end
  return false
end

local function fail(path, message, hint)
  error(errors.new("recipe", path .. ": " .. message, hint), 0)
end

-- A member, role or team name: what a radosgw user, a Unix and Slurm
-- user and a registry account all accept.
local function name_ok(s)
  return type(s) == "string" and s:match("^[a-z][a-z0-9_-]*$") ~= nil
         and #s <= 32
end

local function keys_of(path, where, t, known)
  util.check_keys(t, known, function(k, suggestion, list)
    fail(path, where .. "unknown key '" .. tostring(k) .. "'" .. suggestion,
         "keys: " .. list)
  end)
end

-- "s3://bucket/prefix/" (prefix may hold {member}) -> bucket, prefix
local function data_prefix(path, where, url)
  local bucket, prefix
  if type(url) == "string" then
    bucket, prefix = url:match("^s3://([a-z0-9][a-z0-9.-]+)/(.*)$")
  end
  if not bucket then
    fail(path, where .. "'" .. tostring(url) .. "' is not an s3:// "
         .. "prefix", "write \"s3://BUCKET/PREFIX/\"")
  end
  if prefix:find("%*") or prefix:find("[%c\"]") then
    fail(path, where .. "'" .. url .. "': a prefix holds no '*', quote or "
         .. "control character (it covers everything under it)")
  end
  local rest = prefix:gsub("{member}", "")
  if rest:find("[{}]") then
    fail(path, where .. "'" .. url .. "': the only placeholder is {member}")
  end
  local before = prefix:match("^(.-){member}")
  if before and not before:match("^.+/$") then
    -- (an admin role gets what is before {member}: the whole bucket, or
    -- users/ for users/x-{member}/, would be more than the members')
    fail(path, where .. "'" .. url .. "': {member} must be a whole "
         .. "folder under a prefix of the bucket",
         "write \"s3://" .. bucket .. "/outputs/{member}/\"")
  end
  return bucket, prefix
end

local function validate_quota(path, where, q)
  if type(q) ~= "table" then fail(path, where .. "quota must be a table") end
  keys_of(path, where .. "quota: ", q, team.QUOTA_KEYS)
  local out = {}
  for k, v in pairs(q) do
    if math.type(v) ~= "integer" or v < 0 or v > 1000000 then
      fail(path, where .. "quota." .. k .. " must be a whole number")
    end
    out[k] = v
  end
  return out
end

local function validate_role(path, name, r)
  local where = "role '" .. name .. "': "
  if type(r) ~= "table" then fail(path, where .. "must be a table") end
  local role = { name = name, grants = {}, read = {}, write = {} }
  for k, v in pairs(r) do
    if math.type(k) == "integer" then
      if not listed(v, team.GRANTS) then
        fail(path, where .. "unknown right '" .. tostring(v) .. "'"
             .. util.suggest(tostring(v), team.GRANTS),
             "rights: " .. table.concat(team.GRANTS, ", ")
             .. ", data-read = {...}, data-write = {...}")
      end
      role.grants[v] = true
    elseif k == "data-read" or k == "data-write" then
      if type(v) ~= "table" or #v == 0 then
        fail(path, where .. k .. " must list s3:// prefixes")
      end
      for i, url in ipairs(v) do
        local bucket, prefix = data_prefix(path, where .. k .. "[" .. i
                                           .. "]: ", url)
        local list = k == "data-read" and role.read or role.write
        list[#list + 1] = { bucket = bucket, prefix = prefix, url = url }
      end
    elseif k == "quota" then
      role.quota = validate_quota(path, where, v)
    else
      fail(path, where .. "unknown key '" .. tostring(k) .. "'",
           "a role lists rights (" .. table.concat(team.GRANTS, ", ")
           .. ") and may have data-read, data-write and quota")
    end
  end
  return role
end

local function validate_member(path, id, m, roles)
  local where = "member '" .. tostring(id) .. "': "
  if not name_ok(id) then
    fail(path, where .. "member ids are lower-case letters, digits, '_' "
         .. "and '-', starting with a letter, at most 32")
  end
  if type(m) ~= "table" then fail(path, where .. "must be a table") end
  keys_of(path, where, m, MEMBER_KEYS)
  if type(m.name) ~= "string" or m.name == "" or m.name:find("%c") then
    fail(path, where .. "name must be the person's name")
  end
  if type(m.email) ~= "string" or not m.email:match("^[^@%s]+@[^@%s]+$")
     or m.email:find("[%c\127]") then
    fail(path, where .. "email must be an address")
  end
  if type(m.roles) ~= "table" or #m.roles == 0 then
    fail(path, where .. "roles must list the member's roles")
  end
  for _, r in ipairs(m.roles) do
    if not roles[r] then
      fail(path, where .. "no role '" .. tostring(r) .. "'"
           .. util.suggest(tostring(r), util.sorted_keys(roles)))
    end
  end
  local keys = {}
  for i, k in ipairs(m.keys or {}) do
    if type(k) ~= "string" or k == "" or #k > 512 then
      fail(path, where .. "keys[" .. i .. "] must be a key id")
    end
    keys[i] = k
  end
  if m.revoked ~= nil and type(m.revoked) ~= "boolean" then
    fail(path, where .. "revoked must be a boolean")
  end
  return { id = id, name = m.name, email = m.email:lower(),
           roles = m.roles, keys = keys, revoked = m.revoked == true }
end

local function validate_services(path, s, proj)
  if type(s) ~= "table" then fail(path, "services must be a table") end
  -- (besides those of SERVICE_KEYS, the services a backend drives
  -- itself: its contract's team_services)
  local backends = require "navette.backends"
  local driven = backends.team_services()
  local known = util.sorted_keys(SERVICE_KEYS)
  for name in pairs(driven) do
    if not SERVICE_KEYS[name] then known[#known + 1] = name end
  end
  table.sort(known)
  keys_of(path, "services: ", s, known)
  local out = {}
  for name, t in pairs(s) do
    local where = "services." .. name .. ": "
    if type(t) ~= "table" then fail(path, where .. "must be a table") end
    local entry
    if not SERVICE_KEYS[name] then
      local p = (proj.profiles or {})[t.profile or proj.default_profile]
      entry = p and backends.team_service(backends.get(p.backend), name)
      if not (entry and entry.apply) then
        fail(path, where .. "profile " .. tostring(t.profile
             or proj.default_profile) .. " cannot keep it",
             "name a profile of backend "
             .. table.concat(driven[name], " or ") .. " (profile = ...)")
      end
    end
    keys_of(path, where, t, SERVICE_KEYS[name]
            or { "profile", table.unpack(entry.keys or {}) })
    if t.profile ~= nil and not (proj.profiles or {})[t.profile] then
      fail(path, where .. "no profile '" .. tostring(t.profile) .. "'"
           .. util.suggest(tostring(t.profile),
                           util.sorted_keys(proj.profiles or {})))
    end
    if entry and entry.validate then
      t = entry.validate(t, {
        path = path,
        profile = proj.profiles[t.profile or proj.default_profile],
        fail = function(message, hint)
          fail(path, where .. message, hint)
        end })
    end
    out[name] = t
  end
  if out.s3 then
    local p = proj.profiles[out.s3.profile or proj.default_profile]
    if not (p and p.s3) then
      fail(path, "services.s3: the profile must have s3:// storage (its "
           .. "s3.endpoint is the radosgw the users are made on)")
    end
    if type(out.s3.admin) ~= "string" or not p.credentials[out.s3.admin] then
      fail(path, "services.s3.admin must name a credential of profile "
           .. p.name .. " (a radosgw user with the caps users=*)")
    end
  end
  if out.slurm then
    local p = proj.profiles[out.slurm.profile or proj.default_profile]
    local b = p and require("navette.backends").get(p.backend)
    if not (b and b.team_services and b.team_services.slurm) then
      fail(path, "services.slurm: the profile must be a slurm profile "
           .. "(its user an administrator of the cluster's accounting)")
    end
    if out.slurm.account ~= nil and not name_ok(out.slurm.account) then
      fail(path, "services.slurm.account must be an account name")
    end
    -- a member's token lives no longer than the profile lets a token
    -- live (max_token_lifespan): apply mints a new one when it nears its
    -- end
    local max = p.max_token_lifespan or 3600
    local life = util.parse_duration(out.slurm.token_lifespan or max)
    if not life or life < 600 or life > max then
      fail(path, "services.slurm.token_lifespan must be a duration of 10 "
           .. "minutes to profile " .. p.name .. "'s max_token_lifespan ("
           .. max .. " s)")
    end
    out.slurm.token_lifespan_s = math.floor(life)
    -- what `team revoke` does with the member's running jobs (pending
    -- ones are always cancelled)
    local running = out.slurm.revoke_running or "cancel"
    if running ~= "cancel" and running ~= "leave" then
      fail(path, "services.slurm.revoke_running must be \"cancel\" or "
           .. "\"leave\"", "what team revoke does with the member's "
           .. "running jobs (their pending ones are always cancelled)")
    end
    out.slurm.revoke_running = running
  end
  if out.registry then
    local r = out.registry
    if type(r.host) ~= "string" or r.host == "" then
      fail(path, "services.registry.host must be the registry's host:port")
    end
    if type(r.acl_file) ~= "string" or r.acl_file:sub(1, 1) ~= "/"
       or not r.acl_file:match("%.json$")
       or ("/" .. r.acl_file .. "/"):find("/%.%.?/") then
      fail(path, "services.registry.acl_file must be an absolute path "
           .. "ending in .json, without '.' or '..' steps",
           "the token service's ACL file (navette writes it)")
    end
    if type(r.repositories) ~= "table" or #r.repositories == 0 then
      fail(path, "services.registry.repositories must list repository "
           .. "patterns (\"team/*\")")
    end
    for i, pat in ipairs(r.repositories) do
      if type(pat) ~= "string" or not pat:match("^[a-z0-9][a-z0-9._/-]*%*?$") then
        fail(path, "services.registry.repositories[" .. i .. "] must be "
             .. "a repository name, or a prefix ending with '*'")
      end
    end
  end
  return out
end

-- ---- a team repository ------------------------------------------------------
-- The policy may live in a repository of its own, shared by the team's
-- projects and reviewed there: navette.lua's
--   team = { git = URL, ref = "v3" [, file = "team.lua"] }
-- It is pinned by commit in navette.lock ([team "URL"], written by
-- `navette lock`), fetched into the libraries' cache, and read at that
-- commit: a moved tag is refused, as a library's is.

local POLICY_MAX = 1024 * 1024
local FILE_DEFAULT = "team.lua"

-- Pins the project's team repository and reads its policy file there.
-- opts.mode: "run" (fetch, check against the lock of commit HEAD; the
-- cache serves when the remote is unreachable), "plan" (the cache and
-- the lock alone), "lock" (fetch, take the commit the ref points to now);
-- opts.from_folder: check against the folder's lock (`lock --check`).
-- -> the file's text, its name in messages (URL@COMMIT12:FILE), the pin
-- {url, ref, commit, file}
function team.fetch_source(proj, opts)
  local library = require "navette.library"
  local src = proj.team_source
  local mode = opts.mode or "run"
  local repo = errors.check(_navette.git.open(proj.root))
  local function refuse(message, hint)
    error(errors.new("refused", "team repository " .. message, hint), 0)
  end
  local locked -- (the lock's entry, read once)
  local pin = library.pin_source(src, {
    root = proj.root, mode = mode, what = "team repository",
    entry = function()
      local _, entry = library.read_lock_at(proj.root, repo,
                                            opts.from_folder)
      locked = entry and entry.url == src.url and entry or nil
      return locked
    end,
    again = "run `navette lock` and commit " .. library.LOCK_FILE,
    check = "`navette lock --check`",
    asker = "navette.lua",
    refuse = refuse,
    fetch = library.fetch_once,
  })
  if mode ~= "lock" then
    -- (the file is pinned too: another policy of the same commit is not
    -- this one)
    -- (pin_source read the entry, and refused when there was none)
    if (locked.file or FILE_DEFAULT) ~= src.file then
      refuse(src.url .. ": " .. library.LOCK_FILE .. " pins its file "
             .. (locked.file or FILE_DEFAULT) .. ", navette.lua names "
             .. src.file, "run `navette lock` and commit "
             .. library.LOCK_FILE)
    end
  end
  local text, err = pin.repo:read_file(pin.commit, src.file, POLICY_MAX)
  if not text then
    refuse(src.url .. ": " .. src.file .. " at commit "
           .. pin.commit:sub(1, 12) .. ": " .. err.message, "name the "
           .. "policy's path in the repository with team.file")
  end
  return text, src.url .. "@" .. pin.commit:sub(1, 12) .. ":" .. src.file,
         { url = src.url, ref = src.ref, commit = pin.commit,
           file = src.file }
end

-- Raises unless the team file at path is as commit HEAD has it: what
-- changes the services is the reviewed policy (a plan may read the
-- working tree's, to review a change before it is committed).
function team.check_committed(proj, path)
  local repo = _navette.git.open(proj.root)
  local committed
  if repo then
    local top = repo:workdir():gsub("/$", "")
    committed = repo:read_file("HEAD", path:sub(#top + 2), POLICY_MAX)
  end
  local here = sys.read_file(path, POLICY_MAX)
  if committed == nil or committed ~= here then
    error(errors.new("refused", path .. (committed == nil
      and " is not in commit HEAD" or " has changes not committed")
      .. ": the services are converged to the committed policy only",
      "commit it (git add " .. team.FILE .. " && git commit), or review "
      .. "the change with `navette team apply --plan`"), 0)
  end
end

-- The policy of the project proj, validated, or nil when there is none:
-- team.lua at its root, or the file of the team repository navette.lua
-- names (opts.mode: see fetch_source; read afresh at each call, so that a
-- long-lived process sees a new lock).
-- opts.committed: a team.lua must be as commit HEAD has it.
function team.load(proj, opts)
  opts = opts or {}
  local path = util.join(proj.root, team.FILE)
  local st = sys.stat(path)
  local value, pinned
  if proj.team_source then
    if st then
      fail(path, "navette.lua names a team repository (team = { git = "
           .. proj.team_source.url .. " }), and the project has its own "
           .. team.FILE, "keep one policy: remove " .. path .. ", or "
           .. "navette.lua's team")
    end
    local text, shown, pin = team.fetch_source(proj, opts)
    path, pinned = shown, pin
    value = require("navette.project").evaluate_data(path, text, proj.root)
  elseif not st then
    return nil
  else
    if opts.committed then team.check_committed(proj, path) end
    value = require("navette.project").evaluate_data(path)
  end
  if type(value) ~= "table" then
    fail(path, "the team file must return a table",
         "write: return { name = \"team\", members = { ... }, roles = { ... } }")
  end
  keys_of(path, "", value, TOP_KEYS)
  if not name_ok(value.name) then
    fail(path, "name must be the team's name (lower-case letters, digits, "
         .. "'_' and '-')")
  end
  if type(value.roles) ~= "table" then fail(path, "roles must be a table") end
  local policy = { name = value.name, path = path, pinned = pinned,
                   roles = {}, members = {},
                   quota = value.quota and validate_quota(path, "", value.quota)
                           or {} }
  for name, r in pairs(value.roles) do
    if not name_ok(name) then
      fail(path, "role '" .. tostring(name) .. "': role names are "
           .. "lower-case letters, digits, '_' and '-'")
    end
    policy.roles[name] = validate_role(path, name, r)
  end
  if type(value.members) ~= "table" then
    fail(path, "members must be a table of id = { name, email, roles }")
  end
  for id, m in pairs(value.members) do
    policy.members[id] = validate_member(path, id, m, policy.roles)
  end
  policy.services = validate_services(path, value.services or {}, proj)
  return policy
end

-- The services the policy names, in the order apply and revoke go
-- through them: s3, registry, slurm, then those a backend drives itself
-- (by name).
local MODULE_SERVICES = { "s3", "registry", "slurm" }
function team.service_names(policy)
  local out = {}
  for _, name in ipairs(MODULE_SERVICES) do
    if policy.services[name] then out[#out + 1] = name end
  end
  for _, name in ipairs(util.sorted_keys(policy.services)) do
    if not SERVICE_KEYS[name] then out[#out + 1] = name end
  end
  return out
end

-- What converges service `name`: {changes(policy, proj, opts), revoke(
-- policy, proj, m), prove(policy, proj, m)}: the module
-- navette.team.<name>, or the team service of the backend of the
-- service's profile (backends/init.lua: team_services).
function team.service(policy, proj, name)
  if SERVICE_KEYS[name] then return require("navette.team." .. name) end
  local backends = require "navette.backends"
  local s = policy.services[name]
  local p = proj.profiles[s.profile or proj.default_profile]
  local e = backends.team_service(backends.get(p.backend), name)
  return { changes = e.apply, revoke = e.revoke,
           prove = e.prove or function() return nil end }
end

-- Whether member m holds right (a grant word) through one of its roles.
function team.has(policy, m, right)
  for _, r in ipairs(m.roles) do
    if policy.roles[r].grants[right] then return true end
  end
  return false
end

-- The members in id order (revoked ones too), and the active ones.
function team.members(policy, active_only)
  local out = {}
  for _, id in ipairs(util.sorted_keys(policy.members)) do
    local m = policy.members[id]
    if not (active_only and m.revoked) then out[#out + 1] = m end
  end
  return out
end

-- Findings about the policy itself: a key id listed by two members (a
-- shared credential), an email used twice.
function team.findings(policy)
  local found, seen_key, seen_mail = {}, {}, {}
  for _, m in ipairs(team.members(policy)) do
    for _, k in ipairs(m.keys) do
      if seen_key[k] then
        found[#found + 1] = "members " .. seen_key[k] .. " and " .. m.id
          .. " share the credential " .. k:sub(1, 6) .. "...: each member "
          .. "has their own"
      else
        seen_key[k] = m.id
      end
    end
    if seen_mail[m.email] then
      found[#found + 1] = "members " .. seen_mail[m.email] .. " and " .. m.id
        .. " have the same email " .. m.email
    else
      seen_mail[m.email] = m.id
    end
  end
  return found
end

-- The member a git email or a key id names, or nil.
function team.member_of(policy, email, key_id)
  for _, m in ipairs(team.members(policy)) do
    if email and m.email == email:lower() then return m end
    for _, k in ipairs(m.keys) do
      if key_id and k == key_id then return m end
    end
  end
  return nil
end

-- Where apply hands a member's new secrets over (0600 files): the folder
-- NAVETTE_HOME/team/TEAM/.
function team.handoff_dir(policy)
  return core.home() .. "/team/" .. policy.name
end

-- The file a member's secret for a service is handed over in:
-- handoff_dir/ID.SUFFIX ("s3.json", "registry", "slurm-token").
function team.handoff_path(policy, id, suffix)
  return team.handoff_dir(policy) .. "/" .. id .. "." .. suffix
end

-- Writes handle there (0600, the format of a file source); its path.
function team.hand_over(policy, id, suffix, handle)
  errors.check(sys.mkdir_p(team.handoff_dir(policy), 448))
  local path = team.handoff_path(policy, id, suffix)
  errors.check(_navette.creds.store_file(handle, path))
  return path
end

-- The handle of kind handed over for id, or nil when there is none.
function team.handed(policy, id, suffix, kind)
  local path = team.handoff_path(policy, id, suffix)
  if not sys.stat(path) then return nil end
  return errors.check(_navette.creds.load { name = id .. "-"
    .. suffix:match("^[^.]*"),
    kind = kind, source = "file", path = path, origin = "navette" })
end

-- Revocations this machine made (navette team revoke) are remembered in
-- NAVETTE_HOME/team/TEAM/revoked/MEMBER, so that an apply of a team.lua
-- not yet updated never gives a revoked member their rights back; the
-- member counts as revoked until --readmit.
local function revoked_marker(policy, id)
  return team.handoff_dir(policy) .. "/revoked/" .. id
end

-- Whether this machine revoked member id (and no --readmit since).
function team.marked_revoked(policy, id)
  return sys.stat(revoked_marker(policy, id)) ~= nil
end

function team.mark_revoked(policy, id)
  local path = revoked_marker(policy, id)
  errors.check(sys.mkdir_p(util.dirname(path), 448))
  errors.check(sys.write_file(path, sys.iso8601(sys.now()) .. "\n", 384))
end

-- Applies the markers to policy (m.revoked set), but readmit's, whose
-- marker goes (kept when keep_marker: a plan reads, it removes nothing).
function team.apply_revocations(policy, readmit, keep_marker)
  for id, m in pairs(policy.members) do
    local path = revoked_marker(policy, id)
    if sys.stat(path) then
      if readmit == id then
        if not keep_marker then errors.check(sys.remove(path)) end
      else
        m.revoked, m.revoked_here = true, true
      end
    end
  end
end

return team
