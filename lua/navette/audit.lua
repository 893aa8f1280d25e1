-- navette.audit: one line per side effect in the hash-chained audit log
-- under NAVETTE_HOME, mirrored to the profile's storage under _audit/ (off
-- the laptop). Plan mode writes nothing. Every line passes the redactor.
local native, core, sys = _navette.audit, _navette.core, _navette.sys

local audit = {}
local batch -- profiles whose mirror waits for the end of a batch

local function store_path(url)
  if type(url) ~= "string" then return nil end
  local path = url:match("^file://(/.*)$")
  return path and path:gsub("%%(%x%x)", function(h)
    return string.char(tonumber(h, 16))
  end)
end

-- audit.record{action=, target=, profile=, credential=, job=, commit=,
-- result=, detail=} with the profile table (for the mirror). Failures to
-- write the audit log are reported but never hide the action's outcome.
-- The team member this run acts for ("alice <alice@example.com>
-- user@host"), set by the runner when the project has a team.lua that
-- names the git identity's email; nil: the line's identity is user@host.
audit.member_identity = nil

-- An append that failed: said with what to do (a deleted folder's hint
-- names its recovery), nil returned.
local function warn(err)
  _navette.out.write("stderr", "warning: audit log: " .. err.message
                     .. (err.hint and (" (" .. err.hint .. ")") or "")
                     .. "\n")
  return nil
end

function audit.record(entry, profile)
  if core.plan_mode() then return nil end
  entry.identity = entry.identity or audit.member_identity
  entry.profile = entry.profile or (profile and profile.name)
  entry.result = entry.result or "ok"
  local seq, err = native.append(entry)
  if not seq then return warn(err) end
  if profile and batch then
    batch[profile.name or "?"] = profile -- mirrored when the batch ends
  elseif profile then
    audit.mirror(profile)
  end
  return seq
end

-- audit.record_many({entry, ...}, profile): the entries (as
-- audit.record's) as consecutive lines, one lock and one sync for all (a
-- job array's tasks, submitted by one request).
function audit.record_many(entries, profile)
  if core.plan_mode() or #entries == 0 then return nil end
  for _, entry in ipairs(entries) do
    entry.identity = entry.identity or audit.member_identity
    entry.profile = entry.profile or (profile and profile.name)
    entry.result = entry.result or "ok"
  end
  local seq, err = native.append_many(entries)
  if not seq then return warn(err) end
  if profile and batch then
    batch[profile.name or "?"] = profile
  elseif profile then
    audit.mirror(profile)
  end
  return seq
end

-- Copies the audit log to the profile's store (a file:// folder or the
-- S3 bucket); a failure is a warning.
function audit.mirror(profile)
  local root = store_path(profile.storage)
  local ok, merr = true, nil
  if root then
    ok, merr = native.mirror(root)
  elseif profile.s3 then
    ok, merr = audit.mirror_s3(profile)
  end
  if not ok then
    _navette.out.write("stderr", "warning: audit mirror: "
                       .. (merr and merr.message or tostring(merr))
                       .. (type(merr) == "table" and merr.hint
                           and (" (" .. merr.hint .. ")") or "") .. "\n")
  end
end

-- A batch of records (a sweep's submissions): each line is written and
-- chained at once, and the mirror is made once per profile when the
-- returned value is closed, not once per line. Use as
--   local _ <close> = audit.batch()
-- A batch inside a batch joins it.
function audit.batch()
  if batch then return nil end
  batch = {}
  return setmetatable({}, { __close = function()
    local profiles = batch
    batch = nil
    for _, profile in pairs(profiles) do audit.mirror(profile) end
  end })
end

-- The mirror on an s3:// store: a consistent copy made under the audit
-- lock into a local folder (the file:// mirror), then uploaded under the
-- same keys.
function audit.mirror_s3(profile)
  local stage = core.home() .. "/tmp/audit-mirror"
  local ok, err = native.mirror("file://" .. stage)
  if not ok then return nil, err end
  local base = stage .. "/_audit"
  local store
  local opened, oerr = pcall(function()
    store = require("navette.s3store").open(profile)
  end)
  if not opened then return nil, oerr end
  for _, segment in ipairs(sys.listdir(base) or {}) do
    -- never a shorter log, or another chain, over the copy kept there
    local stored, rerr = store:read("_audit/" .. segment .. "/head", 4096)
    if not stored and rerr.code ~= "not_found" then
      store:dispose()
      return nil, rerr
    end
    local fine, cerr = native.mirror_check(stored or nil)
    if not fine then
      store:dispose()
      return nil, cerr
    end
    for _, name in ipairs(sys.listdir(base .. "/" .. segment) or {}) do
      local put, perr = store:put("_audit/" .. segment .. "/" .. name,
                                  base .. "/" .. segment .. "/" .. name)
      if not put then
        store:dispose()
        return nil, perr
      end
    end
  end
  store:dispose()
  return true
end

audit.verify = function() return native.verify() end

-- The damage verify finds, as an error object ("failed": exit 1) that
-- names the line and what to check; nil when the log is intact. A read
-- error of the files comes back as that error.
function audit.damage()
  local report, err = native.verify()
  if not report then
    return { code = err.code, message = err.message, hint = err.hint }
  end
  if report.ok then return nil end
  local where = (report.line or 0) > 0
    and ("line " .. tostring(report.line)) or "its genesis or head"
  return {
    code = "failed",
    message = "the audit log is damaged (" .. tostring(report.kind)
      .. " at " .. where .. "): " .. tostring(report.message)
      .. "; the lines it holds are not proven",
    hint = report.hint or (core.home() .. "/audit/ was changed outside "
      .. "navette: compare it with its mirror under _audit/ in the "
      .. "profile's store; `navette audit verify --json` gives the "
      .. "details"),
  }
end
audit.lines = function(job) return native.lines(job) end

return audit
