-- A team's policy on an image registry whose token service reads an ACL
-- file (navette team apply, revoke): a login per member who holds
-- image-pull, image-push or admin (a password navette generates, handed
-- over in NAVETTE_HOME/team/TEAM/MEMBER.registry, 0600; the file keeps
-- its bcrypt hash), and per member and repository pattern the actions the
-- roles give: pull; pull and push; or pull, push and delete (admin). The
-- registry itself refuses a push without the push right (the token it
-- gets grants pull only), and a manifest's DELETE without delete. The file
-- is navette's: one it did not write is never replaced. A revoked member
-- leaves it: the token service then refuses their login (401).
local errors = require "navette.errors"
local util = require "navette.util"
local team = require "navette.team"
local json, sys = _navette.json, _navette.sys

local M = {}

local function marker(policy)
  return "navette team apply: team " .. policy.name
end

-- The ACL file as it is (a table), or nil when there is none; refuses a
-- file navette did not write.
local function current(policy)
  local path = policy.services.registry.acl_file
  local st = sys.stat(path)
  if not st then return nil end
  local text = st.type == "file" and sys.read_file(path)
  if not text then
    errors.raise("refused", "the registry ACL file " .. path .. " cannot "
                 .. "be read: left alone", "check the path and its "
                 .. "permissions (services.registry.acl_file)")
  end
  local ok, doc = pcall(json.decode, text)
  if not ok or type(doc) ~= "table" or doc.generated_by ~= marker(policy) then
    errors.raise("refused", "the registry ACL file " .. path .. " was not "
                 .. "written by navette for team " .. policy.name
                 .. ": left alone", "move it aside, or point "
                 .. "services.registry.acl_file at the file navette keeps")
  end
  return doc
end

-- The actions member m gets on the team's repositories (admin: delete
-- too, which the registry asks for a manifest's DELETE).
function M.actions_of(policy, m)
  if team.has(policy, m, "admin") then return { "pull", "push", "delete" } end
  if team.has(policy, m, "image-push") then return { "pull", "push" } end
  if team.has(policy, m, "image-pull") then return { "pull" } end
  return nil
end

-- The document the policy wants; users whose hash is missing get a new
-- password (new[id] = handle), handed over by write().
local function wanted(policy, now)
  local reg = policy.services.registry
  local doc = { generated_by = marker(policy), users = {}, acl = {} }
  local fresh = {}
  for _, m in ipairs(team.members(policy, true)) do
    local actions = M.actions_of(policy, m)
    if actions then
      local had = now and now.users and now.users[m.id]
      if had and type(had.password) == "string" then
        doc.users[m.id] = { password = had.password }
      else
        local handle = require("navette.creds.rotation").generate {
          kind = "basic", user = m.id, name = m.id .. "-registry" }
        local line = require("navette.creds.rotation").htpasswd(handle)
        doc.users[m.id] = { password = line:match("^[^:]*:(.*)$") }
        fresh[m.id] = handle
      end
      for _, pat in ipairs(reg.repositories) do
        doc.acl[#doc.acl + 1] = { account = m.id, name = pat,
                                  actions = actions }
      end
    end
  end
  return doc, fresh
end

-- What differs between two documents, for people (hashes left out).
local function summary(doc)
  local parts = {}
  local by = {}
  for _, e in ipairs(doc.acl or {}) do
    by[e.account] = by[e.account] or {}
    by[e.account][#by[e.account] + 1] = e.name .. " " .. table.concat(e.actions, ",")
  end
  for _, id in ipairs(util.sorted_keys(by)) do
    parts[#parts + 1] = id .. " (" .. table.concat(by[id], "; ") .. ")"
  end
  return #parts > 0 and table.concat(parts, ", ") or "nobody"
end

local function write(policy, doc, fresh)
  local path = policy.services.registry.acl_file
  local handed = {}
  for _, id in ipairs(util.sorted_keys(fresh)) do
    handed[#handed + 1] = team.hand_over(policy, id, "registry", fresh[id])
  end
  errors.check(sys.write_file(path, json.encode(doc, true) .. "\n", 384))
  return #handed > 0 and ("logins handed over in "
                          .. table.concat(handed, ", ")) or nil
end

local function comparable(doc)
  if not doc then return "" end
  return json.encode({ users = util.sorted_keys(doc.users or {}),
                       acl = doc.acl or {} })
end

function M.changes(policy)
  -- (proj and opts, given to every service, are not needed here)
  local reg = policy.services.registry
  local now = current(policy)
  local doc, fresh = wanted(policy, now)
  if comparable(now) == comparable(doc) then return {}, 1 end
  local logins = util.sorted_keys(fresh)
  return { { service = "registry", op = now and "~" or "+",
             what = "registry " .. reg.host .. " ACL (" .. reg.acl_file
                    .. "): " .. summary(doc)
                    .. (#logins > 0 and ("; new login for "
                        .. table.concat(logins, ", ")) or ""),
             run = function() return write(policy, doc, fresh) end } }, 0
end

function M.revoke(policy, _, m)
  local now = current(policy)
  if not (now and now.users and now.users[m.id]) then
    return "registry: " .. m.id .. " has no login in the ACL"
  end
  now.users[m.id] = nil
  local acl = {}
  for _, e in ipairs(now.acl or {}) do
    if e.account ~= m.id then acl[#acl + 1] = e end
  end
  now.acl = acl
  errors.check(sys.write_file(policy.services.registry.acl_file,
                              json.encode(now, true) .. "\n", 384))
  return "registry: " .. m.id .. "'s login and rights removed from the ACL"
end

function M.prove(policy, _, m)
  local handle = team.handed(policy, m.id, "registry", "basic")
  if not handle then return nil end
  local ok, e = require("navette.image").try_check_credential {
    registry = policy.services.registry.host, credential = handle }
  return { service = "registry", credential = "login " .. m.id,
           refused = not ok, answer = ok and "accepted"
           or (e and e.message or "refused") }
end

return M
