-- navette.isolation: profiles share nothing implicitly. Each profile owns
-- what it names: its storage root (s3://BUCKET/PREFIX/ or a file://
-- folder), the credentials it declares or grants itself, the registries of
-- its images and of its credentials' hosts, and the endpoints of its
-- cluster, its S3 service and its endpoints table. A run in one profile
-- that names what another profile owns, and it does not, is refused
-- before anything is sent (code refused, exit 3), naming both profiles:
-- dev reading prod's bucket, prod loading a credential only dev has.
-- What no profile names (a public dataset's bucket, a registry no profile
-- lists) is not anyone's, and stays usable.
local errors = require "navette.errors"
local util = require "navette.util"

local M = {}

local function with_slash(s)
  return s:sub(-1) == "/" and s or s .. "/"
end

-- A storage URL as {scheme, bucket, path} (path: the key or the file
-- path, "" for a bucket's root), or nil.
local function parse_storage(url)
  if type(url) ~= "string" then return nil end
  local bucket, key = url:match("^s3://([^/]+)/?(.*)$")
  if bucket then return { scheme = "s3", bucket = bucket, path = key } end
  local path = url:match("^file://(/.*)$")
  if path then
    -- '.' and '..' steps resolved, so that a path cannot step out of a
    -- root it seems to be in
    local parts = {}
    for part in path:gmatch("[^/]+") do
      if part == ".." then parts[#parts] = nil
      elseif part ~= "." then parts[#parts + 1] = part end
    end
    return { scheme = "file", bucket = "",
             path = table.concat(parts, "/") .. (path:sub(-1) == "/"
                                                 and "/" or "") }
  end
  return nil
end

-- Whether the storage URL u lies in root (both parsed).
local function inside(u, root)
  return u.scheme == root.scheme and u.bucket == root.bucket
         and (root.path == "" or u.path:sub(1, #root.path) == root.path
              or with_slash(u.path) == root.path)
end

local function origin_of(url)
  return require("navette.http").origin_of(url)
end

-- "host:port" of a registry or a credential's host, lower case.
local function host_of(h)
  return type(h) == "string" and h:lower() or nil
end

-- What profile p names, by kind.
local function owned(p)
  local o = { storage = {}, credentials = {}, registries = {}, origins = {} }
  local root = parse_storage(p.storage)
  if root then
    root.path = root.path ~= "" and with_slash(root.path) or ""
    o.storage[1] = root
  end
  for name, d in pairs(p.credentials or {}) do
    o.credentials[name] = true
    if d.host and (d.kind == "basic" or d.kind == "bearer") then
      o.registries[host_of(d.host)] = true
    end
  end
  for _, ref in pairs(p.images or {}) do
    local parsed = _navette.image.parse(ref)
    if parsed then o.registries[host_of(parsed.registry)] = true end
  end
  local function origin(url)
    local x = type(url) == "string" and origin_of(url)
    if x then o.origins[x] = true end
  end
  if p.s3 then origin(p.s3.endpoint) end
  if p.slurm then origin(p.slurm.endpoint) end
  for x in pairs(p.endpoints or {}) do o.origins[x] = true end
  return o
end

-- index(proj): each profile of proj gets profile.isolation, the table of
-- what every profile of the project owns (built once, shared).
function M.index(proj)
  local owners = {}
  for name, p in pairs(proj.profiles) do owners[name] = owned(p) end
  local shared = { owners = owners, project = proj.credentials or {} }
  for name, p in pairs(proj.profiles) do
    p.isolation = { name = name, shared = shared }
  end
end

local function refuse(message, hint)
  errors.raise("refused", message .. ": profiles share nothing implicitly",
               hint)
end

-- The other profiles (sorted) for which owns(owned_table) is true, when
-- profile p's own table says no; nil when p owns it or nobody else does.
local function others(p, owns)
  local iso = p and p.isolation
  if not iso then return nil end
  local mine = iso.shared.owners[iso.name]
  if mine and owns(mine) then return nil end
  local list = {}
  for _, name in ipairs(util.sorted_keys(iso.shared.owners)) do
    if name ~= iso.name and owns(iso.shared.owners[name]) then
      list[#list + 1] = name
    end
  end
  return #list > 0 and list or nil
end

local function quoted(list)
  return "'" .. table.concat(list, "', '") .. "'"
end

-- check_url(p, url, what): refuses a storage URL inside another profile's
-- storage root and outside p's.
function M.check_url(p, url, what)
  local u = parse_storage(url)
  if not u then return end
  local list = others(p, function(o)
    for _, root in ipairs(o.storage) do
      if inside(u, root) then return true end
    end
    return false
  end)
  if list then
    refuse((what and (what .. ": ") or "") .. url .. " is in the storage "
           .. "of profile " .. quoted(list) .. ", not of profile '"
           .. p.isolation.name .. "' (" .. tostring(p.storage) .. ")",
           "run the recipe with --profile " .. list[1] .. ", or copy the "
           .. "data into profile " .. p.isolation.name .. "'s store")
  end
end

-- check_registry(p, registry, what): refuses a registry ("host:port")
-- another profile names and p does not.
function M.check_registry(p, registry, what)
  local host = host_of(registry)
  if not host then return end
  local list = others(p, function(o) return o.registries[host] == true end)
  if list then
    refuse((what and (what .. ": ") or "") .. "registry " .. registry
           .. " belongs to profile " .. quoted(list) .. " (its images or "
           .. "credentials), not to profile '" .. p.isolation.name .. "'",
           "name it in profile " .. p.isolation.name .. "'s images or "
           .. "credentials if it is this profile's too")
  end
end

-- check_origin(p, url, what): refuses an HTTP endpoint (a cluster, an S3
-- service, an endpoints entry) another profile names and p does not.
function M.check_origin(p, url, what)
  local origin = type(url) == "string" and origin_of(url)
  if not origin then return end
  local list = others(p, function(o) return o.origins[origin] == true end)
  if list then
    refuse((what and (what .. ": ") or "") .. origin .. " is an endpoint "
           .. "of profile " .. quoted(list) .. ", not of profile '"
           .. p.isolation.name .. "'",
           "run the recipe with --profile " .. list[1])
  end
end

-- check_credential(p, name): raises when credential name is not p's but
-- another profile's, or a project-level one p does not name.
function M.check_credential(p, name)
  local iso = p and p.isolation
  if not iso or (p.credentials and p.credentials[name]) then return end
  local list = others(p, function(o) return o.credentials[name] == true end)
  if list then
    refuse("credential '" .. name .. "' belongs to profile "
           .. quoted(list) .. ", not to profile '" .. iso.name .. "'",
           "declare this profile's own credential, or name it in profile "
           .. iso.name .. "'s credentials = { \"" .. name .. "\" } if it "
           .. "may use it")
  elseif iso.shared.project[name] then
    refuse("credential '" .. name .. "' is declared by the project, and "
           .. "profile '" .. iso.name .. "' does not name it",
           "add it to the profile: credentials = { \"" .. name .. "\" }")
  end
end

return M
