-- navette.audit: one line per side effect in the hash-chained audit log
-- under NAVETTE_HOME, mirrored to the profile's storage under _audit/ (off
-- the laptop). Plan mode writes nothing. Every line passes the redactor.
local native, core, sys = _navette.audit, _navette.core, _navette.sys

local audit = {}

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
function audit.record(entry, profile)
  if core.plan_mode() then return nil end
  entry.profile = entry.profile or (profile and profile.name)
  entry.result = entry.result or "ok"
  local seq, err = native.append(entry)
  if not seq then
    _navette.out.write("stderr", "warning: audit log: " .. err.message
                       .. "\n")
    return nil
  end
  local root = profile and store_path(profile.storage)
  local ok, merr = true, nil
  if root then
    ok, merr = native.mirror(root)
  elseif profile and profile.s3 then
    ok, merr = audit.mirror_s3(profile)
  end
  if not ok then
    _navette.out.write("stderr", "warning: audit mirror: "
                       .. (merr and merr.message or tostring(merr)) .. "\n")
  end
  return seq
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
audit.lines = function(job) return native.lines(job) end

return audit
