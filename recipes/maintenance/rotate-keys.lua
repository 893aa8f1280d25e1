-- Rotates the team's keys, each in its own task:
--   rotate-storage-key       the S3 key of a radosgw service user, weekly;
--   rotate-registry-password the htpasswd password of a registry's user;
--   rotate-slurm-key         the cluster's JWT key (HS256);
-- the last two monthly. A task whose credentials this profile does not
-- declare says so and does nothing.
--
-- The S3 key: a new key made by radosgw through its admin API (signed
-- with an admin's credential whose user has the caps users=*), stored
-- where the service's credential is read from (its file, 0600, or its
-- Keychain item on macOS), checked against the server, then every other
-- key of the user removed, and the old key checked to be refused by the
-- server. Each step that changes something writes its audit line
-- (storage.key_create, creds.store, storage.key_remove; `navette
-- maintain` adds task.run).
--
-- The registry's password and the Slurm key change on a server navette
-- has no hand on (the registry's htpasswd file; the controller's key file
-- and its restart), so their rotation has two halves. A run
-- makes the new secret, stages it (NAVETTE_HOME/staged/NAME, 0600; the
-- credential itself is untouched and still works), and prints the steps
-- for the server's operator (the htpasswd line to put in; the key file to
-- install and the restart that makes slurmctld read it); the task fails
-- until they are done, so a timer's failure shows it. The next run (at
-- the next slot, or at once with `navette maintain --once --task NAME`) finds
-- the server accepting the staged secret, stores it as the credential,
-- and checks that the server now refuses the old one (audit lines
-- creds.stage, creds.store).
--
-- The project file declares the credentials and lists the recipe (the
-- files creds.store rewrites live in ~/.navette/PROJECT/, PROJECT being
-- the project's name):
--   credentials = {
--     ["rgw-admin"]   = { kind = "s3", source = "env",
--                         env = { access_key_id = "RGW_ADMIN_KEY",
--                                 secret_access_key = "RGW_ADMIN_SECRET" } },
--     ["storage-svc"] = { kind = "s3", source = "file",
--                         path = "~/.navette/PROJECT/storage-svc.json" },
--     ["registry-svc"] = { kind = "basic", source = "file",
--                          path = "~/.navette/PROJECT/registry-svc",
--                          host = "registry.example.com:5000" },
--     ["slurm-key"]   = { kind = "hs256", source = "file",
--                         path = "~/.navette/PROJECT/slurm-jwt.key" },
--   },
--   maintenance = { "recipes/maintenance/rotate-keys.lua" },
-- and each profile the tasks run with names those it uses (credentials =
-- { "rgw-admin", "storage-svc", "registry-svc" }; its slurm.credential
-- names "slurm-key"): a profile gets no project credential it does not
-- name. The profile's s3.endpoint is the radosgw spoken to, and its
-- slurm profile's credential the key that rotates. Give the admin its caps once:
-- radosgw-admin caps add --uid=ADMIN --caps="users=*". A credential of
-- kind basic or hs256 is stored only inside navette's folders (~/.navette,
-- NAVETTE_HOME, ~/.config/navette): its file cannot be told from another.
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
-- - a key already removed (a run stopped during the removals) is skipped;
-- - a staged secret is kept until the server accepts it: a run before the
--   operator's steps prints the same steps for the same secret, and one
--   after them stores it (a run stopped between the server's change and
--   the store is finished by the next).
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

local REGISTRY = {
  credential = "registry-svc", -- declared kind = "basic" credential, with
                               -- host = the registry ("host:port")
  user = "navette",            -- its user in the registry's htpasswd file
}

local SLURM = {
  credential = "slurm-key", -- declared kind = "hs256": the cluster's key
                            -- (the slurm profile's credential)
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

-- "skipped: ..." when one of names is not declared in this profile.
local function not_declared(names)
  local declared = navette.creds.declared()
  for _, name in ipairs(names) do
    if not declared[name] then
      return "skipped: this profile declares no credential " .. name
    end
  end
  return nil
end

navette.task {
  name = "rotate-storage-key",
  schedule = "weekly mon 04:00",
  run = function(ctx)
    local storage, creds = navette.storage, navette.creds
    local user, admin = ROTATION.user, ROTATION.admin
    local skip = not_declared { ROTATION.admin, ROTATION.credential }
    if skip then return skip end

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

-- The second half of a staged rotation, when the server accepts the
-- staged secret: it becomes the credential, and the old one must be
-- refused. check(handle) raises refused when the server does not accept
-- handle. Returns the task's result.
local function finish(name, staged, check, what)
  local creds = navette.creds
  local loaded, old = pcall(creds.get, name)
  creds.store(name, staged)
  local stored = creds.get(name)
  check(stored)
  if loaded and not old:equals(stored) then
    local accepted, e = pcall(check, old)
    if accepted then
      return false, "the old " .. what .. " of " .. name .. " is still "
        .. "accepted: the server holds both; remove the old one there"
    end
    if e.code ~= "refused" then error(e, 0) end
  end
  return "the new " .. what .. " is stored in " .. name .. "; the server "
    .. "refuses the old one"
end

-- Whether the server accepts handle (false on a refusal; other errors
-- raise: an unreachable server proves nothing).
local function accepted(check, handle)
  local ok, e = pcall(check, handle)
  if ok then return true end
  if e.code ~= "refused" then error(e, 0) end
  return false
end

-- The body of a task rotating a credential whose server an operator
-- changes: r.credential (its name), r.what ("password", "key"),
-- r.check(handle) (raises refused when the server does not accept
-- handle), r.generate (creds.generate's options), r.steps(staged, path)
-- (the operator's steps, lines).
local function staged_rotation(ctx, r)
  local creds = navette.creds
  local staged, path = creds.staged(r.credential)
  if ctx.plan then
    return "would " .. (staged
      and ("store the staged " .. r.what .. " in " .. r.credential
           .. " once the server accepts it")
      or ("stage a new " .. r.what .. " of " .. r.credential
          .. " and print the steps"))
  end
  if staged and accepted(r.check, staged) then
    return finish(r.credential, staged, r.check, r.what)
  end
  if not staged then
    staged = creds.generate(r.generate)
    path = creds.stage(r.credential, staged)
  end
  return false, table.concat(r.steps(staged, path), "\n")
end

navette.task {
  name = "rotate-registry-password",
  schedule = "weekly mon 04:20",
  run = function(ctx)
    local name = REGISTRY.credential
    local skip = not_declared { name }
    if skip then return skip end
    local registry = navette.creds.declared()[name].host
    if not registry then
      return false, "credential " .. name .. " names no host: give it "
        .. "host = \"REGISTRY:PORT\" (the registry whose password rotates)"
    end
    return staged_rotation(ctx, {
      credential = name, what = "password",
      check = function(handle)
        return navette.image.check_credential { registry = registry,
                                                credential = handle }
      end,
      generate = { kind = "basic", user = REGISTRY.user, name = name },
      steps = function(staged, path) return {
        "a new password of " .. REGISTRY.user .. " for " .. registry
          .. " is staged in " .. path .. "; " .. name .. " still holds the "
          .. "old one. To finish the rotation:",
        "  1. on the registry's host, replace the line of " .. REGISTRY.user
          .. " in the registry's htpasswd file (auth.htpasswd.path in its "
          .. "config.yml) with this one (a bcrypt hash, not the password):",
        "       " .. navette.creds.htpasswd(staged),
        "     the registry (distribution) reads the file again when it "
          .. "changes; from then on the old password is refused",
        "  2. run this task again (navette maintain --once --task "
          .. "rotate-registry-password): it checks that the registry "
          .. "accepts the new password, stores it in " .. name .. ", and "
          .. "checks that the old one is refused",
      } end,
    })
  end,
}

navette.task {
  name = "rotate-slurm-key",
  schedule = "weekly mon 04:40",
  run = function(ctx)
    local name = SLURM.credential
    local skip = not_declared { name }
    if skip then return skip end
    return staged_rotation(ctx, {
      credential = name, what = "key",
      check = function(handle)
        return navette.slurm.check_credential { credential = handle }
      end,
      generate = { kind = "hs256", length = 32, name = name },
      steps = function(_, path) return {
        "a new JWT key (HS256, 32 bytes) for credential " .. name .. " is "
          .. "staged in " .. path .. "; " .. name .. " still holds the old "
          .. "one. To make the cluster use it:",
        "  1. on the controller, install it where AuthAltParameters="
          .. "jwt_key= points in slurm.conf (and in slurmdbd.conf, where "
          .. "slurmdbd has one), owned by SlurmUser, mode 0600:",
        "       install -m 600 -o SLURMUSER " .. path .. " JWT_KEY_PATH",
        "  2. restart slurmctld (systemctl restart slurmctld), and slurmdbd "
          .. "where it has the key: they read it when they start only "
          .. "(scontrol reconfigure does not read it again)",
        "     from then on tokens of the old key are refused, navette's too "
          .. "until step 4",
        "  3. slurmrestd (rest_auth/jwt) passes each client's token on and "
          .. "needs nothing; one started with a token of its own "
          .. "(SLURM_JWT=... in its environment) is restarted with a token "
          .. "of the new key (scontrol token)",
        "  4. run this task again (navette maintain --once --task "
          .. "rotate-slurm-key): it checks that the cluster accepts the new "
          .. "key, stores it in " .. name .. ", and checks that the old one "
          .. "is refused",
      } end,
    })
  end,
}
