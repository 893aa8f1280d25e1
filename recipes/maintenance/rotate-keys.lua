-- Rotates the S3 key of a radosgw service user, weekly: a new key made by
-- radosgw through its admin API (signed with an admin's credential whose
-- user has the caps users=*), stored where the service's credential is
-- read from (its file, 0600, or its Keychain item on macOS), checked
-- against the server, then every other key of the user removed, and the
-- old key checked to be refused by the server. Each step that changes
-- something writes its audit line (storage.key_create, creds.store,
-- storage.key_remove; `navette maintain` adds task.run).
--
-- The project file declares both credentials and lists the recipe:
--   credentials = {
--     ["rgw-admin"]   = { kind = "s3", source = "env",
--                         env = { access_key_id = "RGW_ADMIN_KEY",
--                                 secret_access_key = "RGW_ADMIN_SECRET" } },
--     ["storage-svc"] = { kind = "s3", source = "file",
--                         path = "~/.navette/storage-svc.json" },
--   },
--   maintenance = { "recipes/maintenance/rotate-keys.lua" },
-- and the profile's s3.endpoint is the radosgw spoken to. Give the admin
-- its caps once: radosgw-admin caps add --uid=ADMIN --caps="users=*".
--
--   navette maintain --once recipes/maintenance/rotate-keys.lua
--   navette maintain --plan recipes/maintenance/rotate-keys.lua  (dry run)
--
-- Nothing is lost if it stops at any step, and the next run converges:
-- - before the new key is stored, the stored key is untouched and still
--   valid; the new key is only an extra key on the server, removed by the
--   next run (which removes every key but the one it stores);
-- - the store replaces the file atomically (a temp file renamed over it):
--   it holds the old key or the new one, never a mix;
-- - the old keys are removed only once the new one is stored and accepted
--   by the server, so the service always has a stored, working key;
-- - a key already removed (a run stopped during the removals) is skipped.
-- Before changing anything, a stored key that the server still accepts
-- but that the user does not have (another user's key, a wrong table
-- below) stops the run: storing over it would lose it.
local navette = require "navette"

local ROTATION = {
  user = "svc",               -- the radosgw user whose key rotates
  admin = "rgw-admin",        -- declared kind = "s3" credential, caps users=*
  credential = "storage-svc", -- declared kind = "s3" credential the service
                              -- reads (source file or keychain)
}

local function ending(id)
  return id and ("..." .. id:sub(-4)) or "?"
end

local function has(list, x)
  for _, v in ipairs(list) do
    if v == x then return true end
  end
  return false
end

navette.task {
  name = "rotate-storage-key",
  schedule = "weekly mon 04:00",
  run = function(ctx)
    local storage, creds = navette.storage, navette.creds
    local user, admin = ROTATION.user, ROTATION.admin

    -- The key in use now. Missing or no longer valid: the rotation
    -- repairs it (it stores a new one).
    local loaded, old = pcall(creds.get, ROTATION.credential)
    if not loaded then old = nil end
    local old_id = old and old:access_key_id()
    if old_id and not ctx.plan
       and not has(storage.keys { user = user, credential = admin }, old_id)
       and pcall(storage.check_credential, { credential = old }) then
      return false, "credential " .. ROTATION.credential .. " holds a live "
        .. "key (" .. ending(old_id) .. ") that radosgw user " .. user
        .. " does not have: nothing changed; check ROTATION in the recipe"
    end

    -- 1. A new key, made by radosgw.
    local new = storage.create_key { user = user, credential = admin }
    -- 2. Stored where the credential's source reads it.
    creds.store(ROTATION.credential, new)
    -- 3. It works: read back from the source, accepted by the server.
    local stored = creds.get(ROTATION.credential)
    storage.check_credential { credential = stored }
    if ctx.plan then
      return "would make a key for " .. user .. ", store it in "
        .. ROTATION.credential .. " and remove the user's other keys"
    end
    local new_id = stored:access_key_id()
    if new_id ~= new:access_key_id() then
      return false, "credential " .. ROTATION.credential .. " does not read "
        .. "back the new key: its other keys were left in place"
    end

    -- 4. Every other key of the user removed (also one that a run stopped
    -- after step 1 left behind).
    local removed = 0
    for _, id in ipairs(storage.keys { user = user, credential = admin }) do
      if id ~= new_id then
        local ok, e = pcall(storage.remove_key, { user = user,
          access_key = id, credential = admin })
        if ok then
          removed = removed + 1
        elseif e.code ~= "not_found" then -- gone already: fine
          error(e, 0)
        end
      end
    end

    -- 5. The old key is refused by the server.
    if old_id and old_id ~= new_id then
      local accepted, e = pcall(storage.check_credential,
                                { credential = old })
      if accepted then
        return false, "the old key " .. ending(old_id) .. " is still "
          .. "accepted by the server after its removal"
      end
      if e.code ~= "refused" then error(e, 0) end
    end

    -- 6. The audit lines were written by each step above.
    return "key " .. ending(new_id) .. " of " .. user .. " stored in "
      .. ROTATION.credential .. "; " .. removed .. " old key"
      .. (removed == 1 and "" or "s") .. " removed"
  end,
}
