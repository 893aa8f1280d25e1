-- navette.storage.keys: radosgw users' S3 keys (the admin API:
-- host/storage/rgw_admin.c), for recipes as navette.storage.keys,
-- create_key, remove_key and check_credential (public.lua).
-- What a key rotation needs: the key ids of a radosgw user, a new key
-- (made by the server: a handle, never a string), removing a key, and
-- whether the server accepts a credential. The endpoint is the profile's
-- s3.endpoint (region, CA bundle and pin as for its store); `credential`
-- names a declared kind = "s3" credential of an admin (a radosgw user
-- with the caps users=*). Plan mode records each call and does nothing.
local errors = require "navette.errors"
local util = require "navette.util"
local core = _navette.core

local M = {}

-- The run's scope (navette.context): its profile.
local scope = require("navette.context").scope

local KEY_FIELDS = {
  keys = { "user", "credential" },
  create_key = { "user", "credential", "name" },
  remove_key = { "user", "access_key", "credential" },
  check_credential = { "credential" },
}

-- Checks the options of fname (KEY_FIELDS) and that the profile's store is
-- s3://; returns the function's name for messages.
local function key_args(fname, opts)
  local what = "navette.storage." .. fname
  util.check_options(what, opts, KEY_FIELDS[fname], "{ "
                     .. table.concat(KEY_FIELDS[fname], " = ..., ")
                     .. " = ... }")
  for _, k in ipairs(KEY_FIELDS[fname]) do
    local v = opts[k]
    if k == "name" and v == nil then -- optional
    elseif k == "credential" and fname == "check_credential"
           and type(v) == "userdata" then -- a handle
    elseif type(v) ~= "string" or v == "" then
      errors.raise("recipe", what .. ": '" .. k .. "' must be a non-empty "
                   .. "string" .. (k == "credential" and fname
                   == "check_credential" and " or a credential handle"
                   or ""))
    end
  end
  if not (scope().profile and scope().profile.s3) then
    errors.raise("usage", what .. " needs a profile whose storage is "
                 .. "s3:// (its s3.endpoint is the radosgw spoken to)",
                 "run the recipe with --profile naming such a profile")
  end
  return what
end

-- A client of the profile's endpoint (its region, CA bundle and pin, as
-- for its store) signed with handle; host: where the credential may be
-- sent (its declaration's), nil: the endpoint's own.
local function key_client(handle, host)
  return require("navette.s3store").client(scope().profile, handle, host)
end

-- The admin's handle and a client signed with it.
local function admin_client(what, name)
  local creds = require "navette.creds"
  local d = creds.declaration(name)
  if d and d.kind ~= "s3" then
    errors.raise("recipe", what .. ": credential '" .. name .. "' is of "
                 .. "kind " .. d.kind .. ", not s3",
                 "the admin API is signed with an S3 key pair")
  end
  local handle = creds.get(name) -- raises when undeclared or unloadable
  return key_client(handle, d and d.host)
end

local function call(client, method, ...)
  local results = table.pack(client[method](client, ...))
  client:close()
  return table.unpack(results, 1, results.n)
end

-- The last characters of a key id, for the audit: the redactor masks a
-- loaded key's whole id (it names the key), never these.
local function id_ending(id)
  return "ending " .. id:sub(-4)
end

-- keys{ user = U, credential = ADMIN } -> { access key id, ... }
function M.keys(opts)
  local what = key_args("keys", opts)
  if core.plan_mode() then
    core.plan("storage", "keys", "radosgw user " .. opts.user)
    return {}
  end
  local ids, err = call(admin_client(what, opts.credential), "admin_keys",
                        opts.user)
  return errors.check(ids, err, what)
end

-- create_key{ user = U, credential = ADMIN [, name = N] } -> a credential
-- handle of kind s3 holding the new key (made by radosgw), called N
-- (default "U.new"); handle:access_key_id() is its id. Plan mode: a
-- stand-in handle (its value unknown), nothing made.
function M.create_key(opts)
  local what = key_args("create_key", opts)
  local name = opts.name or (opts.user:gsub("[^%w._-]", "_") .. ".new")
  if core.plan_mode() then
    core.plan("storage", "key create", "radosgw user " .. opts.user)
    return _navette.creds.not_run { name = name, kind = "s3",
                                    source = "minted",
                                    origin = "radosgw user " .. opts.user }
  end
  local handle, err = call(admin_client(what, opts.credential),
                           "admin_create_key", opts.user, name)
  handle = errors.check(handle, err, what)
  require("navette.audit").record({ action = "storage.key_create",
    target = "radosgw user " .. opts.user, credential = opts.credential,
    detail = "access key " .. id_ending(handle:access_key_id()) },
    scope().profile)
  return handle
end

-- remove_key{ user = U, access_key = ID, credential = ADMIN } -> true; a
-- key the user does not have (any more) raises not_found.
function M.remove_key(opts)
  local what = key_args("remove_key", opts)
  if core.plan_mode() then
    core.plan("storage", "key remove", "radosgw user " .. opts.user
              .. ", access key " .. opts.access_key)
    return true
  end
  local ok, err = call(admin_client(what, opts.credential),
                       "admin_remove_key", opts.user, opts.access_key)
  errors.check(ok, err, what)
  require("navette.audit").record({ action = "storage.key_remove",
    target = "radosgw user " .. opts.user, credential = opts.credential,
    detail = "access key " .. opts.access_key .. " ("
             .. id_ending(opts.access_key) .. ")" }, scope().profile)
  return true
end

-- check_credential{ credential = NAME or HANDLE } -> true when the server
-- accepts a signed ListBuckets with it; raises refused naming the
-- server's code (InvalidAccessKeyId, SignatureDoesNotMatch, AccessDenied).
function M.check_credential(opts)
  local what = key_args("check_credential", opts)
  local creds = require "navette.creds"
  local handle, name = opts.credential, opts.credential
  if type(handle) == "userdata" then
    name = handle:name()
  end
  if core.plan_mode() then
    core.plan("storage", "check credential", name)
    return true
  end
  if type(handle) == "string" then handle = creds.get(handle) end
  local d = creds.declaration(name)
  local ok, err = call(key_client(handle, d and d.host), "check_credential")
  if ok then return true end
  if err.code == "refused" then
    errors.raise("refused", what .. ": the server refuses credential "
                 .. name .. ": " .. (err.s3_code or "?") .. " ("
                 .. err.message .. ")", err.hint)
  end
  errors.check(nil, err, what)
end


-- The non-raising twins: try_keys(...) -> ids | nil, err (errors.lua).
errors.add_try(M, { "keys", "create_key", "remove_key", "check_credential" })

return M
