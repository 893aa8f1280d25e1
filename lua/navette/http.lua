-- navette.http: HTTP requests under the profile's TLS policy. Verification
-- is always on: a profile may give a CA bundle and pin an endpoint's
-- public key (endpoints = { ["https://host:port"] = { ca_bundle = ...,
-- pin = "sha256//..." } }), never switch verification off. A credential is
-- sent only to the host its declaration names (host = "..."), and never
-- after a redirect to another host. A redirect into another profile's
-- endpoint is refused before it is followed (exit 3). A failure raises; try_request and
-- try_get return nil, err instead (errors.lua).
local errors = require "navette.errors"
local util = require "navette.util"
local native = _navette.net

local http = {}

-- the run's scope (navette.context): its profile, declared credentials
local scope = require("navette.context").scope

local OPTS = { "method", "headers", "body", "credential", "max_redirects",
               "timeout", "max_body" }
http.OPTIONS = OPTS -- for the LuaLS definitions (navette.luals)
local REFUSED = { insecure = true, verify = true, ssl_verify = true,
                  verify_peer = true, no_verify = true, tls_verify = true }

local origin_of = util.origin_of
http.origin_of = origin_of

function http.request(url, opts)
  opts = opts or {}
  if type(url) ~= "string" then
    errors.raise("recipe", "navette.http.request: url must be a string")
  end
  for k in pairs(opts) do
    if REFUSED[k] then
      errors.raise("refused", "navette.http: TLS verification cannot be "
                   .. "switched off ('" .. k .. "')", "give the profile a "
                   .. "CA bundle for this endpoint: endpoints = { [\"https:"
                   .. "//host:port\"] = { ca_bundle = \"ca.pem\" } }")
    end
    local known = false
    for _, o in ipairs(OPTS) do if o == k then known = true end end
    if not known then
      errors.raise("recipe", "navette.http: unknown option '" .. tostring(k)
                   .. "'", "options: " .. table.concat(OPTS, ", "))
    end
  end
  local origin = origin_of(url)
  if not origin then
    errors.raise("recipe", "navette.http: '" .. url .. "' is not a URL")
  end
  local isolation = require "navette.isolation"
  isolation.check_origin(scope().profile, url, "navette.http")
  -- the endpoint's TLS settings, found by address as isolation compares
  -- hosts (http://127.1:7480 is http://127.0.0.1:7480's endpoint)
  local endpoints = scope().profile and scope().profile.endpoints or {}
  local endpoint = endpoints[origin]
  if not endpoint then
    local key = isolation.origin_key(url)
    for o, settings in pairs(endpoints) do
      if key and isolation.origin_key(o) == key then endpoint = settings end
    end
  end
  endpoint = endpoint or {}
  local req = {
    url = url, method = opts.method, headers = opts.headers,
    body = opts.body, max_redirects = opts.max_redirects,
    -- a redirect into another profile's endpoint is refused as the URL
    -- itself would be, before it is followed
    redirect_check = function(next_url)
      if not origin_of(next_url) then
        return nil, "navette.http: " .. origin .. " redirects to a URL "
               .. "navette cannot read", "ask for the final URL"
      end
      local ok, e = pcall(isolation.check_origin, scope().profile, next_url,
                          "navette.http (a redirect from " .. origin .. ")")
      if ok then return true end
      e = errors.from(e)
      return nil, e.message, e.hint
    end,
    ca_bundle = endpoint.ca_bundle, pin = endpoint.pin,
    timeout_ms = opts.timeout and math.floor(opts.timeout * 1000) or nil,
    max_body = opts.max_body,
  }
  if opts.credential ~= nil then
    local name = opts.credential:name()
    local decl = scope().credentials[name]
    if not decl or not decl.host then
      errors.raise("refused", "credential '" .. name .. "' declares no "
                   .. "host, so it is sent nowhere", "bind it: host = "
                   .. "\"api.example.com\" in its declaration")
    end
    req.credential, req.credential_host = opts.credential, decl.host
  end
  local response, err = native.request(req)
  if not response then
    errors.raise(err.code == "refused" and "refused" or "backend",
                 err.message, err.hint)
  end
  return response
end

function http.get(url, opts)
  opts = opts or {}
  opts.method = "GET"
  return http.request(url, opts)
end

errors.add_try(http, { "request", "get" })

return http
