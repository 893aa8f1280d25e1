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
  if root then
    local ok, merr = native.mirror(root)
    if not ok then
      _navette.out.write("stderr", "warning: audit mirror: "
                         .. merr.message .. "\n")
    end
  end
  return seq
end

audit.verify = function() return native.verify() end
audit.lines = function(job) return native.lines(job) end

return audit
