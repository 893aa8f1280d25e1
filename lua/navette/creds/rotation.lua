-- navette.creds.rotation: new values of credentials, for a rotation.
-- store writes a value where a declared source reads it (a file, the
-- Keychain); generate makes a secret, htpasswd hashes one navette made,
-- stage keeps one aside until a server's operator installs it, and
-- staged reads it back. Recipes call them as navette.creds.store,
-- generate, htpasswd, stage and staged (public.lua); loading is
-- navette.creds's. Side effects honour plan mode and are audited.
local errors = require "navette.errors"
local util = require "navette.util"
local creds = require "navette.creds"
local native, sys = _navette.creds, _navette.sys
local core = _navette.core

local M = {}

-- The run's declarations and handles: its scope (navette.context).
local scope = require("navette.context").scope

-- The project's name (store writes into its own folder), or nil.
local function project_name()
  local proj = scope().project
  return proj and proj.name
end

-- Handles of values navette made or staged (generate, staged): the only
-- ones htpasswd hashes.
local made = setmetatable({}, { __mode = "k" })

-- The folders navette owns for the project's credential files, where
-- creds.store writes: ~/.navette/PROJECT/ and ~/.config/navette/
-- credentials/PROJECT/ (each ending with '/'). Never NAVETTE_HOME, whose
-- audit log, queue, staged values and team hand-overs are navette's
-- state, nor another project's folder.
local function navette_folders()
  local home = sys.getenv("HOME") or ""
  local project = project_name() or "project"
  local out = {}
  if home ~= "" then out[#out + 1] = home .. "/.navette/" .. project .. "/" end
  local config = require("navette.trust").config_dir()
  if config then
    out[#out + 1] = config .. "/credentials/" .. project .. "/"
  end
  return out
end

-- Whether path lies in one of dirs (no '.' or '..' step in it).
local function inside(path, dirs)
  if ("/" .. path .. "/"):find("/%.%.?/") then return false end
  for _, dir in ipairs(dirs) do
    if path:sub(1, #dir) == dir then return true end
  end
  return false
end

-- Where a value staged for declaration d lives: keyed by the file that
-- declares it (its checkout) and the declaration itself, so that another
-- project declaring the same name never reads it.
local function staged_path(d)
  local identity = table.concat({ tostring(d.declared_in), d.name, d.kind,
    d.source, tostring(d.path), tostring(d.service), tostring(d.account),
    table.concat(d.command or {}, "\0") }, "\n")
  return core.home() .. "/staged/" .. sys.sha256(identity):sub(1, 16) .. "-"
         .. d.name
end

-- Whether h is a credential handle.
local function is_handle(h)
  return type(h) == "userdata" and pcall(function() return h:name() end)
end

-- The declaration of credential name, raising for a name not declared.
local function declared_or_raise(what, name)
  if type(name) ~= "string" then
    errors.raise("recipe", what .. ": name must be the name of a declared "
                 .. "credential")
  end
  local d = scope().credentials[name]
  if not d then
    require("navette.isolation").check_credential(scope().profile, name)
    local names = util.sorted_keys(scope().credentials)
    errors.raise("recipe", what .. ": no credential named '" .. name .. "'"
                 .. util.suggest(name, names),
                 "declare it under credentials = { ... } in navette.lua")
  end
  return d
end

-- The declaration of credential name, which handle is to become the value
-- of (store, stage): a handle of the declared kind.
local function next_value_of(what, name, handle)
  local d = declared_or_raise(what, name)
  if not is_handle(handle) then
    errors.raise("recipe", what .. "(name, handle): handle must be a "
                 .. "credential handle (navette.creds.get, generate or "
                 .. "staged, navette.storage.create_key)")
  end
  local kind = handle:info().kind
  if kind ~= d.kind then
    errors.raise("refused", what .. ": credential " .. name .. " is of "
                 .. "kind " .. d.kind .. ", the handle of kind " .. kind)
  end
  return d
end

-- creds.store(name, handle) -> true: writes handle's value where the
-- declared source of credential name reads it, so that the next
-- creds.get(name) loads it (a rotation's new key): a file source's file,
-- replaced atomically (a temp file of mode 0600 beside it, synced,
-- renamed), in the format that source reads for the kind; a keychain
-- source's item (macOS, security add-generic-password -U). env and command
-- sources are refused: navette cannot change what they read. Forgets the
-- handle this run holds for name (handles already given out stay as they
-- are). Plan mode: recorded, nothing written. Audited ("creds.store").
function M.store(name, handle)
  local what = "navette.creds.store"
  local d = next_value_of(what, name, handle)
  -- The project file says where to write: even trusted, a recipe writes
  -- only into the folder navette keeps for this project's credentials,
  -- never over navette's state (the audit log, the queue, staged values,
  -- hand-overs) or another project's key, and only over a file that
  -- holds a credential of this kind now (or nothing yet).
  local allowed = navette_folders()
  if d.source == "file" and not inside(d.path, allowed) then
    errors.raise("refused", what .. ": credential " .. name .. " is read "
                 .. "from " .. d.path .. ", outside the folders navette "
                 .. "keeps for project " .. tostring(project_name())
                 .. "'s credentials (" .. table.concat(allowed, ", ")
                 .. ")", "keep the credential's file there (path = \"~/"
                 .. ".navette/" .. tostring(project_name()) .. "/" .. name
                 .. "\"), or write the new value to " .. d.path
                 .. " yourself")
  end
  if d.source == "env" then
    errors.raise("refused", what .. ": credential " .. name .. " comes "
                 .. "from environment variables, which navette cannot "
                 .. "change for the programs that read them",
                 "set the new value where those variables are set (your "
                 .. "shell profile, the CI's secrets), or declare the "
                 .. "credential with source = \"file\" and a path")
  elseif d.source == "command" then
    errors.raise("refused", what .. ": credential " .. name .. " is "
                 .. "printed by a command (" .. table.concat(d.command, " ")
                 .. "), which navette cannot write to",
                 "store the new value where that command reads it, or "
                 .. "declare the credential with source = \"file\"")
  elseif d.source == "keychain" and sys.os ~= "macos" then
    errors.raise("refused", what .. ": credential " .. name .. " is in "
                 .. "the Keychain, which exists on macOS only (this "
                 .. "system is " .. tostring(sys.os) .. ")",
                 "run the rotation on the Mac, or give the credential a "
                 .. "file source in this system's profile")
  end
  local where = d.source == "file" and d.path
                or ("keychain " .. d.service .. "/" .. d.account)
  if core.plan_mode() then
    core.plan("creds", "store", name .. " -> " .. where)
    return true
  end
  local exists = d.source ~= "file" or sys.stat(d.path) ~= nil
  if d.source == "file" and not exists then
    -- nothing there yet: a new file only in navette's own folders (a
    -- project file may name ~/.bash_profile), whose folder exists
    if not inside(d.path, allowed) then
      errors.raise("refused", what .. ": " .. d.path .. " does not exist, "
                   .. "and navette creates a credential file only under "
                   .. table.concat(allowed, ", "),
                   "put the credential's file there (path = "
                   .. "\"~/.navette/" .. name .. ".json\"), or create it "
                   .. "yourself with the current key first")
    end
    if not sys.stat(util.dirname(d.path)) then
      errors.raise("refused", what .. ": the folder of " .. d.path
                   .. " does not exist", "create it (mkdir -m 700 "
                   .. util.dirname(d.path) .. ")")
    end
  else
    local current, lerr = creds._load(d)
    if current then
      current:close()
    elseif not (d.source == "keychain"
                and lerr.message:find("exit status 44", 1, true)) then
      -- (security's 44: no such item, which may be created)
      errors.raise("refused", what .. ": " .. where .. " does not hold a "
                   .. "credential of kind " .. d.kind .. " now, so navette "
                   .. "does not overwrite it (" .. lerr.message .. ")",
                   "check the path or item of credential " .. name
                   .. "; fix what is there, or remove it, first")
    end
  end
  local ok, err
  if d.source == "file" then
    ok, err = native.store_file(handle, d.path)
  else
    ok, err = native.store_keychain(handle, d.service, d.account)
  end
  if not ok then
    errors.raise(err.code == "invalid" and "recipe" or err.code,
                 what .. ": " .. err.message, err.hint)
  end
  scope().loaded[name] = nil
  native.cache_clear()
  -- a staged value is dropped once a value is stored: it was the one, or
  -- a newer rotation replaced it
  sys.remove(staged_path(d))
  local audit = _navette.audit and require "navette.audit"
  if audit then
    audit.record({ action = "creds.store", target = where,
                   credential = name,
                   detail = "source " .. d.source },
                 scope().profile)
  end
  return true
end

-- ---- rotations that a server's operator finishes ---------------------------
--
-- A registry's htpasswd password and a Slurm JWT key change on the server
-- by a hand navette does not have (a file on the registry's host, the
-- controller's key and `scontrol reconfigure`). Their rotation has two
-- halves: the new secret is made and staged (kept aside, the credential's
-- source untouched), the operator installs it on the server, and a later
-- run, finding the server accepts the staged value, stores it as the
-- credential (creds.store drops the staged file). Staged values live in
-- NAVETTE_HOME/staged/NAME, 0600, in the format of a file source.

-- creds.generate{ kind = "hs256" | "basic", user = ..., length = N,
-- name = ... } -> handle: a new random secret (an hs256 key of N bytes, a
-- basic password of N characters [A-Za-z0-9] for user), N 16..512,
-- default 32. Nothing is written.
local GENERATE_KEYS = { "kind", "user", "length", "name" }
M.GENERATE_KEYS = GENERATE_KEYS
function M.generate(opts)
  local what = "navette.creds.generate"
  util.check_options(what, opts, GENERATE_KEYS, "{ kind = \"hs256\" } or "
                     .. "{ kind = \"basic\", user = ... }")
  if opts.kind ~= "hs256" and opts.kind ~= "basic" then
    errors.raise("recipe", what .. ": kind must be \"hs256\" or \"basic\"",
                 "an s3 key is made by the storage server "
                 .. "(navette.storage.create_key)")
  end
  if opts.kind == "basic" and type(opts.user) ~= "string" then
    errors.raise("recipe", what .. ": a basic credential needs user = "
                 .. "\"name\" (the user the server knows)")
  elseif opts.kind == "hs256" and opts.user ~= nil then
    errors.raise("recipe", what .. ": an hs256 key has no user")
  end
  local length = opts.length or 32
  if math.type(length) ~= "integer" or length < 16 or length > 512 then
    errors.raise("recipe", what .. ": length must be an integer from 16 "
                 .. "to 512")
  end
  local name = opts.name or "generated"
  if type(name) ~= "string" or not name:match("^[%w][%w._-]*$")
     or #name > 64 then
    errors.raise("recipe", what .. ": name: letters, digits, '.', '_' and "
                 .. "'-'")
  end
  local handle, err = native.generate(opts.kind, name, opts.user, length)
  if not handle then
    errors.raise(err.code == "invalid" and "recipe" or err.code,
                 what .. ": " .. err.message, err.hint)
  end
  made[handle] = true
  return handle
end

-- creds.htpasswd(handle [, cost]) -> "user:$2y$..." : the htpasswd line of
-- a basic credential that navette made or staged (creds.generate,
-- creds.staged: never a loaded one, which may be a person's password to
-- be cracked offline), bcrypt at cost 10..14 (default 10), a fresh salt,
-- as `htpasswd -nB` prints it.
function M.htpasswd(handle, cost)
  local what = "navette.creds.htpasswd"
  if not is_handle(handle) then
    errors.raise("recipe", what .. "(handle [, cost]): handle must be a "
                 .. "credential handle of kind basic")
  end
  if cost ~= nil and (math.type(cost) ~= "integer" or cost < 10
                      or cost > 14) then
    errors.raise("recipe", what .. ": cost must be an integer from 10 to 14",
                 "a lower cost makes the hash cheap to crack")
  end
  if not made[handle] then
    errors.raise("refused", what .. ": " .. handle:name() .. " was not "
                 .. "made by navette.creds.generate nor staged: navette "
                 .. "hashes only a secret it made, never a loaded one "
                 .. "(it may be a person's password)",
                 "make the new password with navette.creds.generate{ kind "
                 .. "= \"basic\", user = ... }, or read the staged one "
                 .. "with navette.creds.staged")
  end
  local line, err = native.htpasswd(handle, cost)
  if not line then
    errors.raise(err.code == "invalid" and "recipe" or err.code,
                 what .. ": " .. err.message, err.hint)
  end
  return line
end

-- creds.stage(name, handle) -> path: keeps handle aside as the next value
-- of credential name (same kind), in NAVETTE_HOME/staged/NAME (0600, the
-- format of a file source: an hs256 key's raw bytes, "user:password");
-- replaces a staged value. The credential's source is not touched. Plan
-- mode: recorded, nothing written. Audited ("creds.stage").
function M.stage(name, handle)
  local what = "navette.creds.stage"
  local d = next_value_of(what, name, handle)
  local path = staged_path(d)
  if core.plan_mode() then
    core.plan("creds", "stage", name .. " -> " .. path)
    return path
  end
  local ok, err = sys.mkdir_p(util.dirname(path), 448) -- 0700
  if ok then ok, err = native.store_file(handle, path) end
  if not ok then
    errors.raise(err.code == "invalid" and "recipe" or err.code,
                 what .. ": " .. tostring(err.message or err), err.hint)
  end
  local audit = _navette.audit and require "navette.audit"
  if audit then
    audit.record({ action = "creds.stage", target = path, credential = name,
                   detail = "kind " .. d.kind }, scope().profile)
  end
  return path
end

-- creds.staged(name) -> handle, path | nil: the value staged for
-- credential name, or nil when none is.
function M.staged(name)
  local what = "navette.creds.staged"
  local d = declared_or_raise(what, name)
  local path = staged_path(d)
  if not sys.stat(path) then return nil end
  local handle, err = native.load { name = name, kind = d.kind,
                                    source = "file", path = path,
                                    origin = "navette" }
  if not handle then
    errors.raise("refused", what .. ": " .. err.message,
                 "remove " .. path .. " to start the rotation again")
  end
  made[handle] = true
  return handle, path
end

return M
