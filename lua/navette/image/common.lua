-- navette.image.common: what the modules of navette.image share: the
-- checks of their arguments, the client options of each registry (its
-- credential, bound to its host), the platform the nodes run, the
-- repository a call works on, and the audit record of a push.
local errors = require "navette.errors"
local util = require "navette.util"
local native, sys = _navette.image, _navette.sys

local M = {}

-- the run being evaluated, and the scope (navette.context)
local current = require("navette.context").current
local scope = require("navette.context").scope

-- Raises err (an error object of a native call), its message prefixed
-- with what.
local function fail(err, what)
  local message = err and err.message or "image operation failed"
  if what then message = what .. ": " .. message end
  errors.raise(err and err.code or "backend", message, err and err.hint)
end

-- value, unless it is nil: then raises err (fail).
local function check(value, err, what)
  if value == nil then fail(err, what) end
  return value
end

-- v, a non-empty string (nil when optional); else raises "recipe".
local function string_arg(fn, name, v, optional)
  if v == nil and optional then return nil end
  if type(v) ~= "string" or v == "" then
    errors.raise("recipe", "navette.image." .. fn .. ": " .. name
                 .. " must be a non-empty string")
  end
  return v
end

-- Raises "recipe" on a key of t not in keys (with a suggestion).
local function known_keys(fn, t, keys)
  util.check_keys(t, keys, function(k, suggestion, list)
    errors.raise("recipe", "navette.image." .. fn .. ": unknown key '"
                 .. tostring(k) .. "'" .. suggestion, "keys: " .. list)
  end)
end

-- Raises "recipe" unless spec, the table navette.image.FN takes, is a
-- table (the message ends with shape, when given, showing one) of the
-- keys listed.
local function table_spec(fn, spec, keys, shape)
  if type(spec) ~= "table" then
    errors.raise("recipe", "navette.image." .. fn .. " expects a table"
                 .. (shape or ""))
  end
  known_keys(fn, spec, keys)
end

-- The registries entry of one registry: its credential handle, from a
-- name, a handle, or the declared credential bound to that host.
local function registry_entry(registry, credential)
  local creds = require "navette.creds"
  local entry = {}
  if type(credential) == "string" then
    local decl = creds.declaration and creds.declaration(credential)
    if decl and decl.kind ~= "basic" and decl.kind ~= "bearer" then
      errors.raise("recipe", "credential '" .. credential .. "' is of kind "
                   .. tostring(decl.kind) .. ", not basic or bearer",
                   "a registry credential is basic (user, password) or "
                   .. "bearer (token)")
    end
    entry.credential = creds.get(credential)
    entry.credential_host = decl and decl.host or nil
  elseif credential ~= nil then
    -- a handle: sent to its declaration's host only (one not declared,
    -- a rotation's new secret, to the registry it was given for)
    local decl = creds.declaration and type(credential) == "userdata"
                 and creds.declaration(credential:name())
    if decl and decl.host then
      local function bare(h)
        h = h:lower():gsub("%.$", "")
        return h:match("^(.-):%d+$") or h
      end
      if decl.host:lower() ~= registry:lower()
         and not (not decl.host:find(":%d+$") and bare(decl.host) == bare(registry)) then
        errors.raise("refused", "credential '" .. credential:name() .. "' is "
                     .. "bound to " .. decl.host .. ", not to registry "
                     .. registry, "give the registry its own credential")
      end
      entry.credential_host = decl.host
    end
    entry.credential = credential
  elseif creds.for_host then
    local name = creds.for_host(registry, { "basic", "bearer" })
    if name then
      entry.credential = creds.get(name)
      entry.credential_host = creds.declaration(name).host
    end
  end
  return entry
end

-- The platform the nodes run, which images are built, layered, resolved
-- and checked for: the caller's, else the running recipe's profile's, else
-- linux/amd64. Never this machine's: an Apple Silicon Mac would make arm64
-- images that amd64 nodes fail to run ("exec format error").
M.DEFAULT_PLATFORM = "linux/amd64"
function M.target_platform(platform)
  if platform then return platform end
  local run = current()
  return run and run.profile and run.profile.platform
         or M.DEFAULT_PLATFORM
end

-- image.check_platform(info, platform, what): raises "refused" unless the
-- image of info (from inspect: its config_json) runs on platform (nil: the
-- target platform).
function M.check_platform(info, platform, what)
  local ok, err = native.platform_check(info.config_json,
                                        M.target_platform(platform),
                                        what or info.reference)
  if not ok then fail(err) end
  return true
end

-- Native options for refs (list of {registry, credential}) and opts.
local function native_options(opts, refs)
  local run = current()
  if run and run.profile then
    for _, r in ipairs(refs) do
      require("navette.isolation").check_registry(run.profile, r.registry,
                                                  "navette.image")
    end
  end
  local o = { platform = M.target_platform(opts.platform),
              registries = {},
              docker_config = opts.docker_config, progress = opts.progress,
              step = opts.step }
  for _, r in ipairs(refs) do
    if not o.registries[r.registry] then
      o.registries[r.registry] = registry_entry(r.registry, r.credential)
    elseif r.credential ~= nil then
      o.registries[r.registry] = registry_entry(r.registry, r.credential)
    end
  end
  if opts.ca_bundle then
    for _, e in pairs(o.registries) do e.ca_bundle = opts.ca_bundle end
  end
  return o
end

-- The repository: given, the scope's, the running recipe's, or the
-- current folder's.
local function repo_root(opts_repo)
  if opts_repo then return opts_repo end
  if scope().repo_root then return scope().repo_root end
  local run = current()
  if run and run.repo then return run.repo:workdir() end
  return sys.cwd()
end

-- Appends an audit record of an image action (best effort).
local function audit(action, target, result, detail)
  local a = _navette.audit
  if a and a.append then
    -- (the team member the run acts for, as audit.record names them)
    pcall(a.append, { action = action, target = target, result = result,
                      detail = detail,
                      identity = require("navette.audit").member_identity })
  end
end

M.fail, M.check, M.string_arg, M.known_keys = fail, check, string_arg,
                                              known_keys
M.native_options, M.repo_root, M.audit = native_options, repo_root, audit
M.table_spec = table_spec

return M
