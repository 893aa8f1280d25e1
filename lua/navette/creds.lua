-- navette.creds: named credentials, declared in the project file or a
-- profile with their source (never their value), loaded as opaque handles.
--
--   credentials = {
--     storage = { kind = "s3", source = "env" },   -- AWS_* variables
--     slurm   = { kind = "hs256", source = "file", path = "~/.navette/jwt.key" },
--     registry = { kind = "basic", source = "keychain",
--                  service = "navette-registry", account = "ci" },
--     sts     = { kind = "s3", source = "command",
--                 command = { "aws", "configure", "export-credentials" } },
--   }
local errors = require "navette.errors"
local util = require "navette.util"
local native, sys, json = _navette.creds, _navette.sys, _navette.json
local core = _navette.core

local creds = {}

creds.JOB_TOKEN_MARGIN = 600 -- seconds a job's token outlives its limit
creds.KINDS = { "s3", "bearer", "basic", "hs256", "pem", "ssh-cert" }
creds.SOURCES = { "env", "file", "keychain", "command" }
local DECL_KEYS = { "kind", "source", "env", "path", "service", "account",
                    "command", "host", "description", "certificate" }
creds.DECL_KEYS = DECL_KEYS -- for the LuaLS definitions (navette.luals)
local KIND_FIELDS = {
  s3 = { "access_key_id", "secret_access_key", "session_token" },
  bearer = { "token" }, basic = { "user", "password" },
  hs256 = { "key" }, pem = { "key" },
  -- an OpenSSH private key and its certificate (the
  -- ...-cert-v01@openssh.com line), whose validity C reads from its bytes
  ["ssh-cert"] = { "key", "certificate" },
}

local function listed(v, list)
  for _, x in ipairs(list) do if x == v then return true end end
  return false
end

-- Validates one declaration; `where` is the file that declares it (the
-- project file, or the user's own configuration: origin "user"; the
-- project's declarations load only once the project is trusted, which
-- the C loader checks by origin).
function creds.validate(name, d, where, origin)
  local function bad(msg, hint)
    error(errors.new("recipe", where .. ": credential '" .. name .. "': "
                     .. msg, hint), 0)
  end
  if type(name) ~= "string" or not name:match("^[%w][%w._-]*$")
     or #name > 64 then
    bad("names are letters, digits, '.', '_' and '-'")
  end
  if type(d) ~= "table" then bad("must be a table { kind = ..., source = ... }") end
  for _, k in ipairs({ "value", "secret", "password", "token" }) do
    if d[k] ~= nil then
      bad("a value must never be written in the project file",
          "declare where it comes from: source = env, file, keychain or "
          .. "command")
    end
  end
  for k in pairs(d) do
    if not listed(k, DECL_KEYS) then
      bad("unknown key '" .. tostring(k) .. "'" .. util.suggest(tostring(k),
          DECL_KEYS), "keys: " .. table.concat(DECL_KEYS, ", "))
    end
  end
  if not listed(d.kind, creds.KINDS) then
    bad("kind must be one of " .. table.concat(creds.KINDS, ", "))
  end
  if not listed(d.source, creds.SOURCES) then
    bad("source must be one of " .. table.concat(creds.SOURCES, ", "))
  end
  if d.host ~= nil and (type(d.host) ~= "string" or d.host == "") then
    bad("host must be a host name (\"api.example.com\" or "
        .. "\"host:port\")")
  end
  local out = { name = name, kind = d.kind, source = d.source,
                host = d.host, description = d.description,
                origin = origin or "project", declared_in = where }
  if d.source == "env" then
    if d.env ~= nil and type(d.env) ~= "table" then
      bad("env maps fields to variable names: env = { token = \"MY_TOKEN\" }")
    end
    out.env = {}
    for field, var in pairs(d.env or {}) do
      if not listed(field, KIND_FIELDS[d.kind]) then
        bad("env: a " .. d.kind .. " credential has no field '"
            .. tostring(field) .. "'", "fields: "
            .. table.concat(KIND_FIELDS[d.kind], ", "))
      end
      if type(var) ~= "string" or not var:match("^[%a_][%w_]*$") then
        bad("env." .. field .. " must be a variable name")
      end
      out.env[field] = var
    end
    if d.kind ~= "s3" and not next(out.env) then
      bad("an env source names its variables: env = { "
          .. KIND_FIELDS[d.kind][1] .. " = \"VARIABLE\" }")
    end
  elseif d.source == "file" then
    if type(d.path) ~= "string" then bad("a file source needs path") end
    local home = sys.getenv("HOME") or ""
    out.path = d.path:gsub("^~/", home .. "/")
    if d.certificate ~= nil then
      if d.kind ~= "ssh-cert" or type(d.certificate) ~= "string" then
        bad("certificate is the path of an ssh-cert's certificate "
            .. "(default: the key's path and -cert.pub)")
      end
      out.certificate = d.certificate:gsub("^~/", home .. "/")
    end
  elseif d.source == "keychain" then
    if type(d.service) ~= "string" or type(d.account) ~= "string" then
      bad("a keychain source needs service and account")
    end
    out.service, out.account = d.service, d.account
  elseif d.source == "command" then
    if type(d.command) ~= "table" or #d.command == 0 then
      bad("a command source needs command = { \"program\", ... }")
    end
    out.command = {}
    for i, a in ipairs(d.command) do
      if type(a) ~= "string" then bad("command items must be strings") end
      out.command[i] = a
    end
  end
  if d.certificate ~= nil and d.source ~= "file" then
    bad("certificate (a path) is for source file; other sources give "
        .. "the certificate as a field")
  end
  if d.account ~= nil and type(d.account) ~= "string" then
    bad("account must be a string")
  end
  return out
end

-- The run's declarations and handles: its scope (navette.context).
local scope = require("navette.context").scope

-- The declaration of name (kind, source, host...; never a value), or nil.
function creds.declaration(name)
  return scope().credentials[name]
end

-- The name of the declared credential of one of kinds whose host is host
-- ("registry.example.com" or "127.0.0.1:5001": a declaration without a
-- port matches any port), or nil. Several: the first by name.
function creds.for_host(host, kinds)
  local bare = host:match("^%[.*%]") or host:match("^[^:]*")
  for _, name in ipairs(util.sorted_keys(scope().credentials)) do
    local d = scope().credentials[name]
    for _, k in ipairs(kinds) do
      if d.kind == k and d.host and (d.host == host or d.host == bare) then
        return name
      end
    end
  end
  return nil
end

-- Sources that execute a program to load (the declared command, the
-- Keychain's tool). In plan mode and in read-only commands the C loader
-- refuses them with code "not_run" (nv_creds_load checks the runtime's
-- flag, so no caller here can forget it); env and file sources are read.
creds.EXECUTING_SOURCES = { command = true, keychain = true }

-- Loads a declaration; a source this system does not have (the Keychain
-- off macOS) is named as such instead of the failure of its tool.
local function load(d)
  if d.source == "keychain" and sys.os ~= "macos" then
    return nil, { code = "refused",
                  message = "credential " .. tostring(d.name) .. ": the "
                            .. "keychain source exists on macOS only (this "
                            .. "system is " .. tostring(sys.os) .. ")",
                  hint = "on this system give it another source (env, "
                         .. "file or command), for example in a profile "
                         .. "of its own" }
  end
  return native.load(d)
end
creds._load = load -- (navette.creds.rotation reads what a source holds)

-- The plan's line saying what would run to load d (navette.creds_plan).
creds.plan_not_run = require("navette.creds_plan").not_run

-- The stand-in handle plan mode gives for a credential it did not run,
-- with the plan's line saying what would have run.
local function stand_in(d)
  creds.plan_not_run(d)
  return native.not_run { name = d.name, kind = d.kind, source = d.source,
                          origin = d.source == "command"
                                   and table.concat(d.command or {}, " ")
                                   or d.service }
end
creds._stand_in = stand_in

-- Where d's value would come from, for a plan (names, never a value).
local function where_from(d)
  if d.source == "env" then
    local vars = {}
    for _, v in pairs(d.env or {}) do vars[#vars + 1] = v end
    table.sort(vars)
    return "env " .. (#vars > 0 and table.concat(vars, ", ")
                      or "AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY")
  elseif d.source == "file" then
    return "file " .. tostring(d.path)
  elseif d.source == "keychain" then
    return "keychain " .. tostring(d.service) .. "/" .. tostring(d.account)
  end
  return "command " .. table.concat(d.command or {}, " ")
end

-- The handle a plan gives for d without loading it: it says `planned`,
-- and the plan says where the value would come from (once per run).
local function planned(d)
  scope().planned_not_run = scope().planned_not_run or {}
  if not scope().planned_not_run[d.name] then
    scope().planned_not_run[d.name] = true
    core.plan("creds", "would load", (d.name .. " from " .. where_from(d)
              .. (d.host and (" for " .. d.host) or "")):gsub("[%c\127]",
              "?"))
  end
  return native.not_run { name = d.name, kind = d.kind, source = d.source,
                          origin = where_from(d), planned = true }
end

-- One word for a credential's state in `creds list`: ok, old (past the
-- profile's maximum age), expired, missing (variable unset, no file),
-- unavailable (a source this system lacks), unsafe (a file others may
-- read, or not the user's), "not checked" (a source that runs a program,
-- which creds list never does), or error.
local function status_word(row, err)
  if row.ok then return "ok" end
  if row.untrusted then return "untrusted" end
  if row.not_run then return "not checked" end
  if row.expired then return "expired" end
  if row.warning then return "old" end
  local m = err and err.message or ""
  if m:find("macOS only", 1, true) then return "unavailable" end
  if m:find("expired", 1, true) then return "expired" end
  if m:find("is not set", 1, true) or m:find("No such file", 1, true)
     or m:find("cannot read it", 1, true) then
    return "missing"
  end
  if m:find("readable by group", 1, true) or m:find("owned by uid", 1, true)
     or m:find("symbolic link", 1, true) then
    return "unsafe"
  end
  return "error"
end

-- creds.get(name) -> handle (raises when it cannot be loaded)
function creds.get(name)
  if type(name) ~= "string" then
    errors.raise("recipe", "navette.creds.get: expects a credential name")
  end
  local held = scope().loaded[name]
  -- a plan's stand-in is never handed out once execution is allowed
  if held and not (held:info().not_run and not core.exec_forbidden()) then
    return held
  end
  local d = scope().credentials[name]
  if not d then
    require("navette.isolation").check_credential(scope().profile, name)
    local names = util.sorted_keys(scope().credentials)
    errors.raise("recipe", "no credential named '" .. name .. "'"
                 .. util.suggest(name, names), #names > 0
                 and ("declared: " .. table.concat(names, ", "))
                 or "declare it under credentials = { ... } in navette.lua")
  end
  local handle, err = load(d)
  if not handle and err.code == "not_run" and core.plan_mode() then
    -- plan carries on with a handle that names the credential; a
    -- primitive that needs its value refuses it
    handle = stand_in(d)
  elseif not handle and err.code == "untrusted" and core.plan_mode() then
    -- a project not trusted yet: its plan shows what it would bind
    handle = planned(d)
  elseif not handle and err.code == "untrusted" then
    local trust = require "navette.trust"
    if trust.current and trust.current.file then
      error(trust.refusal(trust.current, "credential " .. name), 0)
    end
    errors.raise("refused", err.message, err.hint)
  elseif not handle then
    errors.raise(err.code == "invalid" and "recipe" or "refused",
                 err.message, err.hint)
  end
  scope().loaded[name] = handle
  return handle
end

-- navette.creds.get as a recipe has it: under plan and in a run's
-- checking pass no value is loaded (a recipe could send it anywhere a
-- request is not recorded): the handle says `planned` and where the
-- value would come from; the pass that submits loads it.
function creds.recipe_get(name)
  if core.plan_mode() and type(name) == "string" then
    local d = scope().credentials[name]
    if d then
      local held = scope().loaded[name]
      if held then return held end
      -- The redactor still learns the value of a trusted project's
      -- credential (what every sink masks: a recipe printing it in a
      -- plan is masked as in a run); the recipe never holds it, and a
      -- plan runs no credential program (the loader says not_run).
      scope().primed = scope().primed or {}
      if not scope().primed[name] then
        scope().primed[name] = load(d) or false
      end
      local handle = planned(d)
      scope().loaded[name] = handle
      return handle
    end
  end
  return creds.get(name)
end

-- creds.jwt(key, {claims = {...}, lifespan = seconds, name = ...})
-- -> token handle. The lifespan is bounded by the profile's
-- max_token_lifespan (default 1 h).
function creds.jwt(key, opts)
  opts = opts or {}
  if type(opts.claims) ~= "table" then
    errors.raise("recipe", "navette.creds.jwt: claims must be a table")
  end
  local max = scope().profile and scope().profile.max_token_lifespan or 3600
  -- for a job, the token lives as long as the job may, plus a margin
  local default = 600
  if type(opts.job) == "table" and opts.job.resources
     and opts.job.resources.time_limit then
    default = opts.job.resources.time_limit + creds.JOB_TOKEN_MARGIN
  end
  local lifespan = util.parse_duration(opts.lifespan or default)
  if not lifespan then
    errors.raise("recipe", "navette.creds.jwt: lifespan must be a duration")
  end
  if lifespan > max then
    errors.raise("refused", "navette.creds.jwt: a lifespan of " .. lifespan
                 .. " s exceeds the profile's maximum of " .. max .. " s",
                 "ask for less, or raise max_token_lifespan in the profile")
  end
  local name = opts.name or (key:name() .. ".jwt")
  local token, err = native.mint_jwt(key, name, json.encode(opts.claims),
                                     lifespan)
  if not token then
    if err == "planned" then return nil end
    errors.raise(err.code == "invalid" and "recipe" or "refused",
                 err.message, err.hint)
  end
  local audit = _navette.audit
  if audit then
    audit.append({ action = "credential.mint", target = name,
                   credential = key:name(), result = "ok",
                   profile = scope().profile and scope().profile.name,
                   detail = "lifespan " .. lifespan .. " s" })
  end
  return token
end

-- creds.declared() -> { NAME = { kind, source, host } }: what the profile
-- declares (never a value, never a path).
function creds.declared()
  local out = {}
  for name, d in pairs(scope().credentials) do
    out[name] = { kind = d.kind, source = d.source, host = d.host }
  end
  return out
end

-- Loads every declared credential for `creds list/check`: returns rows of
-- metadata (never values) with `error` when it could not be loaded, and
-- `not_run` (with `note` and `hint`) for a source that runs a program
-- where none may run (`creds list` is read-only: navette.cli).
function creds.inspect(declared, max_age)
  local rows, now = {}, sys.now()
  for _, name in ipairs(util.sorted_keys(declared)) do
    local d = declared[name]
    local row = { name = name, kind = d.kind, source = d.source }
    local handle, err = load(d)
    if handle then
      local info = handle:info()
      handle:close()
      row.origin = info.origin
      row.loaded_at = sys.iso8601(info.loaded_at)
      if info.created_at then
        row.created_at = sys.iso8601(info.created_at)
        row.age_s = math.floor(now - info.created_at)
      end
      if info.expires_at then
        row.expires_at = sys.iso8601(info.expires_at)
        row.expires_in_s = math.floor(info.expires_at - now)
      end
      row.ok = true
      local cert = info.certificate -- an ssh-cert's (read from its bytes)
      if cert then
        row.certificate = {
          key_id = cert.key_id, serial = cert.serial,
          principals = cert.principals, type = cert.type,
          fingerprint = cert.fingerprint,
          ca_fingerprint = cert.ca_fingerprint,
          valid_from = sys.iso8601(cert.valid_after),
          valid_to = cert.valid_before and sys.iso8601(cert.valid_before)
                     or "forever",
        }
        if cert.valid_before and cert.valid_before <= now then
          row.ok = false
          row.expired = true
          row.warning = "its certificate expired at "
                        .. row.certificate.valid_to
          row.hint = "get a new one from your SSH CA, or name a signer "
                     .. "in the slurm_ssh profile (slurm_ssh.signer)"
        elseif cert.valid_after > now then
          row.not_yet = true
          row.note = "its certificate is valid only from "
                     .. row.certificate.valid_from .. ": this machine's "
                     .. "clock may be behind"
        end
      elseif d.kind == "ssh-cert" then
        row.note = "no certificate: the profile's signer must make one"
      end
      if max_age and row.age_s and row.age_s > max_age then
        row.ok = false
        row.warning = "older than the profile's maximum age of "
                      .. max_age .. " s: rotate it"
      end
    elseif err.code == "untrusted" then
      row.ok = false
      row.not_run = true
      row.untrusted = true
      row.note = "not loaded: the project is not trusted on this machine"
      row.hint = err.hint
    elseif err.code == "not_run" then
      row.ok = false
      row.not_run = true
      row.note = d.source .. " source: runs only when a job needs it"
      row.hint = err.hint
    else
      row.ok = false
      row.error = err.message
      row.hint = err.hint
    end
    row.status = status_word(row, err)
    rows[#rows + 1] = row
  end
  return rows
end

return creds
