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

-- The real path of an absolute path: its longest existing ancestor
-- resolved (symlinks followed), the rest as written.
local function real(path)
  local sys = _navette.sys
  local head, tail = path, ""
  for _ = 1, 256 do
    local r = sys.realpath(head)
    if r then return (r == "/" and "" or r) .. tail end
    if head == "/" or head == "" then break end
    local base = head:match("([^/]*)/*$")
    tail = "/" .. base .. tail
    head = head:sub(1, #head - #base):gsub("/+$", "")
    if head == "" then head = "/" end
  end
  return path
end

-- A storage URL as {scheme, bucket, path} (path: the key, or the file's
-- real path without its leading '/'; "" for a bucket's root), nil when it
-- is no storage URL, false when it is a file:// URL the store would not
-- read either. A file:// URL is read as the store reads it
-- (file://localhost/, %XX decoded, "." and ".." steps resolved).
local function parse_storage(url)
  if type(url) ~= "string" then return nil end
  local lower = url:sub(1, 8):lower()
  if lower:sub(1, 5) == "s3://" then
    local bucket, key = url:match("^[sS]3://([^/]+)/?(.*)$")
    if not bucket then return false end
    return { scheme = "s3", bucket = bucket:lower(), path = key }
  end
  if lower:sub(1, 7) == "file://" then
    local path = _navette.storage.path_from_url(url)
    if not path then return false end
    return { scheme = "file", bucket = "", path = real(path):sub(2) }
  end
  return nil
end

-- Whether the storage URL u lies in root (both parsed).
local function inside(u, root)
  return u.scheme == root.scheme and u.bucket == root.bucket
         and (root.path == "" or u.path:sub(1, #root.path) == root.path
              or with_slash(u.path) == root.path)
end


-- A host as isolation compares it: its canonical form (_navette.net.host:
-- 127.1, 2130706433, 0x7f000001 and [::ffff:7f00:1] are 127.0.0.1, a name
-- is lowered and loses its trailing dot), and every loopback form as one
-- host, "loopback": localhost is both 127.0.0.1 and ::1, and a service
-- listening on all addresses (0.0.0.0, ::) answers 127.0.0.2 and [::1]
-- as well, so which loopback address a profile wrote says nothing of
-- which service it reaches. A host the parser refuses is compared as
-- written, lowered (libcurl refuses it too).
local function host_key(h)
  local r = _navette.net.host(h)
  if not r then return h:lower() end
  return r.loopback and "loopback" or r.canonical
end

-- A registry's or a credential's host as "host:port" (the host as
-- host_key gives it, the port as a number: "05000" is 5000), or "host"
-- alone when no port is given (it then stands for every port).
local function host_of(h)
  if type(h) ~= "string" or h == "" then return nil end
  local host, port = h:match("^(.-):(%d+)$")
  if not host or host == "" or (host:find(":", 1, true)
                                and not host:match("^%[.*%]$")) then
    host, port = h, nil -- an IPv6 address without brackets has no port
  end
  host = host_key(host)
  return port and (host .. ":" .. tonumber(port)) or host
end

-- The origin of a URL, normalised as http.origin_of does (the port of
-- its scheme when none is given), and the key isolation compares it by:
-- host_key's host and the port, whatever the scheme (http:// and
-- https:// to one host and port reach one service).
local function origin_norm(url)
  local o = require("navette.util").origin_of(url)
  if not o then return nil end
  local scheme, host, port = o:match("^(%a[%w+.-]*)://(.-):(%d+)$")
  if not scheme or host == "" then return o, o end
  return scheme .. "://" .. host:gsub("%.$", "") .. ":" .. tonumber(port),
         host_key(host) .. ":" .. tonumber(port)
end

-- origin_key(url) -> "host:port" as isolation compares endpoints (nil for
-- what is no URL): for looking an endpoint's settings up by address.
function M.origin_key(url)
  if type(url) ~= "string" then return nil end
  local _, key = origin_norm(url)
  return key
end

-- What profile p names, by kind (trusted: its project's bindings may be
-- used).
local function owned(p, trusted)
  local o = { storage = {}, credentials = {}, registries = {}, origins = {} }
  local root = parse_storage(p.storage)
  if root and root.scheme == "file" and root.path ~= "" then
    root.path = root.path .. "/"
  end
  if root then
    root.path = root.path ~= "" and with_slash(root.path) or ""
    o.storage[1] = root
  end
  for name, d in pairs(p.credentials or {}) do
    o.credentials[name] = true
    local host = (d.kind == "basic" or d.kind == "bearer") and host_of(d.host)
    if host then o.registries[host] = true end
  end
  for _, ref in pairs(p.images or {}) do
    local parsed = _navette.image.parse(ref)
    local host = parsed and host_of(parsed.registry)
    if host then o.registries[host] = true end
  end
  local function origin(url)
    if type(url) ~= "string" then return end
    local _, key = origin_norm(url)
    if key then o.origins[key] = true end
  end
  if p.s3 then origin(p.s3.endpoint) end
  -- what the profile's backend reaches (its contract: origins)
  local b = require("navette.backends").get(p.backend)
  for _, url in ipairs(b.origins and b.origins(p, trusted) or {}) do
    origin(url)
  end
  for x in pairs(p.endpoints or {}) do origin(x) end
  return o
end

-- index(proj): each profile of proj gets profile.isolation, the table of
-- what every profile of the project owns (built once, shared).
function M.index(proj)
  local owners = {}
  for name, p in pairs(proj.profiles) do
    owners[name] = owned(p, proj.trusted)
  end
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

-- check_url(p, url, what): refuses a storage URL that belongs to another
-- profile: the profile whose root holding it is the longest (a profile on
-- s3://shared/ does not own what one on s3://shared/secret/ keeps), when
-- that is not p. A file:// URL the store cannot read is refused too.
function M.check_url(p, url, what)
  local iso = p and p.isolation
  local u = parse_storage(url)
  if u == nil or not iso then return end
  local prefix = (what and (what .. ": ") or "")
  if u == false then
    refuse(prefix .. tostring(url) .. " is not a storage URL navette "
           .. "reads", "write file:///ABSOLUTE/PATH or s3://BUCKET/KEY")
  end
  local best, owners = -1, {}
  for _, name in ipairs(util.sorted_keys(iso.shared.owners)) do
    for _, root in ipairs(iso.shared.owners[name].storage) do
      if inside(u, root) then
        if #root.path > best then
          best, owners = #root.path, { name }
        elseif #root.path == best then
          owners[#owners + 1] = name
        end
      end
    end
  end
  if #owners == 0 then return end
  for _, name in ipairs(owners) do
    if name == iso.name then return end
  end
  refuse(prefix .. url .. " is in the storage of profile "
         .. quoted(owners) .. ", not of profile '" .. iso.name .. "' ("
         .. tostring(p.storage) .. ")", "run the recipe with --profile "
         .. owners[1] .. ", or copy the data into profile " .. iso.name
         .. "'s store")
end

-- check_registry(p, registry, what): refuses a registry ("host:port")
-- another profile names and p does not.
function M.check_registry(p, registry, what)
  local host = host_of(registry)
  if not host then return end
  local bare = host:match("^(.-):%d+$") or host
  local list = others(p, function(o)
    if o.registries[host] or o.registries[bare] then return true end
    -- a registry named here without a port: any port of that host
    if bare == host then
      for h in pairs(o.registries) do
        if (h:match("^(.-):%d+$") or h) == bare then return true end
      end
    end
    return false
  end)
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
  if type(url) ~= "string" then return end
  local origin, key = origin_norm(url)
  if not origin then return end
  local list = others(p, function(o) return o.origins[key] == true end)
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
