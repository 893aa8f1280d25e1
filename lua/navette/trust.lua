-- Trusting a project: what of a project file binds the user's own
-- secrets, files and endpoints, and the user's record, per checkout, that
-- they trusted it. navette.lua comes with a clone, so it is untrusted:
-- its credential declarations (sources, variables, paths, hosts), its
-- data sets, its profiles' stores, endpoints and backends, and its team
-- repository take effect only once the user ran `navette trust` in that
-- checkout, for exactly what it binds then (as `direnv allow` and `mise
-- trust` do). The record lives in the user's configuration, outside
-- every repository: $XDG_CONFIG_HOME/navette/trusted/ (~/.config/navette/
-- trusted/), one file per checkout named by the sha256 of its path,
-- holding the bindings' text, so that a change is shown as a diff.
--
-- The gate itself is in C: a credential the project file declares is
-- loaded only while the runtime's trusted flag is set (core.set_trusted,
-- creds_lua.c), whatever Lua asks.
local errors = require "navette.errors"
local util = require "navette.util"
local sys, core, json = _navette.sys, _navette.core, _navette.json

local trust = {}

-- The project keys that bind the user's own secrets, files or services.
-- A profile binds through every key but these (a key added later binds
-- until it is listed here: the safe default).
local PROJECT_BINDING = { "credentials", "datasets", "profiles", "team" }
local PROFILE_NOT_BINDING = {
  description = true, max_credential_age = true, max_token_lifespan = true,
  max_url_lifetime = true, url_margin = true, max_output_bytes = true,
  require_pushed = true, pinned = true, platform = true,
}
trust.PROFILE_NOT_BINDING = PROFILE_NOT_BINDING

local function scalar(v)
  if type(v) == "string" then
    return string.format("%q", v):gsub("\\\n", "\\n")
  elseif type(v) == "number" or type(v) == "boolean" then
    return tostring(v)
  end
  return "<" .. type(v) .. ">"
end

local function key_text(k)
  if type(k) == "string" and k:match("^[%a_][%w_]*$") then return "." .. k end
  if math.type(k) == "integer" then return "[" .. k .. "]" end
  return "[" .. scalar(k) .. "]"
end

-- Lines "path = value" for each leaf of v under prefix, into out.
local function flatten(prefix, v, out, depth)
  if type(v) ~= "table" then
    out[#out + 1] = prefix .. " = " .. scalar(v)
    return
  end
  if depth > 16 then
    out[#out + 1] = prefix .. " = <too deep>"
    return
  end
  local keys = {}
  for k in next, v do keys[#keys + 1] = k end
  table.sort(keys, function(a, b)
    if type(a) == type(b) and (type(a) == "string" or type(a) == "number")
    then return a < b end
    return type(a) < type(b)
  end)
  if #keys == 0 then out[#out + 1] = prefix .. " = {}" end
  for _, k in ipairs(keys) do
    flatten(prefix .. key_text(k), v[k], out, depth + 1)
  end
end

-- The bindings of the table a project file returned: sorted lines, one
-- per value ("profiles.prod.s3.endpoint = \"https://...\""); "" when it
-- binds nothing.
function trust.bindings(value)
  local out = {}
  if type(value) ~= "table" then return "" end
  for _, k in ipairs(PROJECT_BINDING) do
    local v = value[k]
    if k == "profiles" and type(v) == "table" then
      for name, p in next, v do
        if type(p) == "table" then
          for pk, pv in next, p do
            if not PROFILE_NOT_BINDING[pk] then
              flatten("profiles" .. key_text(name) .. key_text(pk), pv, out,
                      2)
            end
          end
        else
          flatten("profiles" .. key_text(name), p, out, 1)
        end
      end
    elseif v ~= nil then
      flatten(k, v, out, 0)
    end
  end
  table.sort(out)
  return table.concat(out, "\n") .. (#out > 0 and "\n" or "")
end

-- The user's configuration folder: $XDG_CONFIG_HOME/navette, else
-- ~/.config/navette (on macOS too: a folder people look for).
function trust.config_dir()
  local config = sys.getenv("XDG_CONFIG_HOME")
  if not config or config == "" or config:sub(1, 1) ~= "/" then
    local home = sys.getenv("HOME")
    if not home or home == "" then return nil end
    config = home .. "/.config"
  end
  return config .. "/navette"
end

local function record_path(root)
  local dir = trust.config_dir()
  if not dir then return nil end
  return dir .. "/trusted/" .. sys.sha256(root) .. ".json"
end

local function read_record(root)
  local path = record_path(root)
  if not path then return nil end
  local text = sys.read_file(path, 4 * 1024 * 1024)
  if not text then return nil end
  local ok, rec = pcall(json.decode, text)
  if not ok or type(rec) ~= "table" or rec.root ~= root
     or type(rec.bindings) ~= "string" or type(rec.sha256) ~= "string"
     or sys.sha256(rec.bindings) ~= rec.sha256 then
    return nil, path
  end
  return rec, path
end

-- The changes from old to new bindings, as "- line" and "+ line"
-- (both are sorted lines, so this is the whole difference).
function trust.diff(old, new)
  local seen_old, seen_new, out = {}, {}, {}
  for l in old:gmatch("[^\n]+") do seen_old[l] = true end
  for l in new:gmatch("[^\n]+") do seen_new[l] = true end
  for l in old:gmatch("[^\n]+") do
    if not seen_new[l] then out[#out + 1] = "  - " .. l end
  end
  for l in new:gmatch("[^\n]+") do
    if not seen_old[l] then out[#out + 1] = "  + " .. l end
  end
  return table.concat(out, "\n")
end

-- The trust state of proj (project.load's, with bindings and root):
-- { state = "none" (binds nothing) | "trusted" | "untrusted" (never
-- trusted here) | "changed" (trusted, then its bindings changed),
-- diff = text for "changed", record = path }.
function trust.state(proj)
  if not proj.file or (proj.bindings or "") == "" then
    return { state = "none" }
  end
  local rec, path = read_record(proj.root)
  if not rec then return { state = "untrusted", record = path } end
  if rec.bindings == proj.bindings then
    return { state = "trusted", record = path, trusted_at = rec.trusted_at }
  end
  return { state = "changed", record = path, trusted_at = rec.trusted_at,
           diff = trust.diff(rec.bindings, proj.bindings) }
end

-- Whether proj's bindings may be used; sets the runtime's flag (the C
-- gate of credential loading) to match, and returns the state.
function trust.apply(proj)
  local st = trust.state(proj)
  local ok = st.state == "none" or st.state == "trusted"
  core.set_trusted(ok)
  proj.trusted = ok
  proj.trust = st
  trust.current = proj
  return ok, st
end

-- The refusal of something that needs proj's bindings while they are not
-- trusted: what needs them, and the diff of a change.
function trust.refusal(proj, what)
  local st = proj.trust or trust.state(proj)
  local message
  if st.state == "changed" then
    message = what .. ": " .. proj.file .. " changed what it binds since "
              .. "you trusted it" .. (st.trusted_at and (" (" .. st.trusted_at
              .. ")") or "") .. ":\n" .. st.diff
  else
    message = what .. ": " .. proj.file .. " is not trusted on this "
              .. "machine, and it binds credentials, files or endpoints "
              .. "of yours"
  end
  return errors.new("refused", message, "read what it binds with `navette "
                    .. "trust --show` (in " .. proj.root .. "), then trust "
                    .. "it with `navette trust`")
end

-- Raises the refusal unless proj's bindings may be used.
function trust.require(proj, what)
  local st = proj.trust or trust.state(proj)
  if st.state == "none" or st.state == "trusted" then return end
  error(trust.refusal(proj, what), 0)
end

-- Records that the user trusts proj's bindings as they are now.
function trust.record(proj)
  local path = record_path(proj.root)
  if not path then
    errors.raise("refused", "navette trust: HOME is not set, so there is "
                 .. "no configuration folder to keep the record in",
                 "set HOME (or XDG_CONFIG_HOME)")
  end
  errors.check(sys.mkdir_p(util.dirname(path), 448)) -- 0700
  local rec = { root = proj.root, file = proj.file,
                bindings = proj.bindings, sha256 = sys.sha256(proj.bindings),
                trusted_at = sys.iso8601(sys.now()) }
  errors.check(sys.write_file(path, json.encode(rec) .. "\n", 384)) -- 0600
  return path
end

-- Forgets the record of the checkout at root; true when there was one.
function trust.revoke(root)
  local path = record_path(root)
  if not path or not sys.stat(path) then return false end
  errors.check(sys.remove(path))
  return true
end

-- Every record: { root, file, trusted_at, stale = root gone }, by root.
function trust.list()
  local dir = trust.config_dir()
  local out = {}
  if not dir then return out end
  local names = sys.listdir(dir .. "/trusted") or {}
  for _, n in ipairs(names) do
    if n:match("%.json$") then
      local text = sys.read_file(dir .. "/trusted/" .. n, 4 * 1024 * 1024)
      local ok, rec = pcall(json.decode, text or "")
      if ok and type(rec) == "table" and type(rec.root) == "string" then
        out[#out + 1] = { root = rec.root, file = rec.file,
                          trusted_at = rec.trusted_at,
                          stale = sys.stat(rec.file or "") == nil }
      end
    end
  end
  table.sort(out, function(a, b) return a.root < b.root end)
  return out
end

-- A store's or backend's settings read back from a job's recorded spec
-- (jobs.db: navette's own state), whose credential declaration is loaded
-- again to follow the job: the run that recorded it loaded it, trusted,
-- and following needs no project file. A copy; the spec is unchanged.
function trust.recorded(cfg)
  local c
  if type(cfg.credential) == "table" then
    c = {}
    for k, v in pairs(cfg.credential) do c[k] = v end
    c.origin = "navette"
  end
  return setmetatable({ credential = c }, { __index = cfg })
end

return trust
