-- The s3:// store of a profile (storage = "s3://BUCKET/ROOT/"): the same
-- calls as a file:// store object (put, put_string, head, list, read, url,
-- delete, copy, get, close; lifecycle, which a file:// store lacks), over
-- _navette.s3, with keys relative to ROOT. It also
-- hands out what a job gets instead of keys: presigned GET URLs and a POST
-- policy scoped to a prefix. The credential is loaded as a handle from the
-- profile's declaration (never a Lua string). A store answers like the
-- file:// store object: nil, err, raising only on misuse such as a bad
-- key (errors.lua); open raises, try_open returns nil, err.
local errors = require "navette.errors"
local s3, sys, core = _navette.s3, _navette.sys, _navette.core

local M = {}

-- What a read under plan brings back at most (storage.read, whatever
-- bound the recipe gives): 16 MiB.
M.PLAN_READ_MAX = 16 * 1024 * 1024

-- "s3://BUCKET/KEY" -> bucket, key ("" when none); nil otherwise.
function M.split_url(url)
  if type(url) ~= "string" then return nil end
  local bucket, key = url:match("^s3://([^/]+)/?(.*)$")
  return bucket, key
end

local Store = {}
Store.__index = Store

-- The store of a plan whose credential was not loaded, because loading it
-- runs a program (a command source) and plan mode runs none: the same
-- calls, answered without a request. What would change the store is
-- recorded in the plan; an object is taken to be there with its sha256
-- unknown; URLs and the POST policy, which need the key, are named
-- instead of signed. Reading an object's bytes cannot be answered.
local Unsigned = setmetatable({}, { __index = Store })
Unsigned.__index = Unsigned

local function check(value, err, what)
  if value ~= nil then return value end
  return errors.check(nil, err, what)
end

-- An S3 client of profile's endpoint (region, addressing, and the CA
-- bundle or pin of its s3 table or of its endpoints table) signing with
-- handle, which is sent only to host (nil: the endpoint's own).
function M.client(profile, handle, host)
  local cfg = profile.s3
  -- (the profile's endpoints are keyed by normalised origin, with port)
  local origin = require("navette.util").origin_of(cfg.endpoint)
  local ep = profile.endpoints and origin and profile.endpoints[origin] or {}
  return s3.open { endpoint = cfg.endpoint, region = cfg.region,
                   path_style = cfg.path_style, credential = handle,
                   credential_host = host,
                   ca_bundle = cfg.ca_bundle or ep.ca_bundle,
                   pin = cfg.pin or ep.pin }
end

-- Opens the store of profile (profile.s3 as project.lua validated it).
-- credential: an already loaded handle (else loaded from the declaration).
function M.open(profile, credential)
  local cfg = profile.s3
  if not cfg then
    errors.raise("usage", "profile '" .. tostring(profile.name)
                 .. "' has no s3:// storage")
  end
  if not credential then
    local handle, err = _navette.creds.load(cfg.credential)
    if not handle and (err.code == "not_run" or err.code == "untrusted")
       and core.plan_mode() then
      -- a plan carries on without it: see Unsigned below
      require("navette.creds_plan").not_run(cfg.credential)
      return setmetatable({ bucket = cfg.bucket, root = cfg.root,
                            profile = profile, not_run = err }, Unsigned)
    end
    if not handle then
      errors.raise("refused", "the S3 credential of profile '"
                   .. tostring(profile.name) .. "' cannot be loaded: "
                   .. err.message, err.hint or
                   "export AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or "
                   .. "name a declared credential in the profile's s3 table")
    end
    credential = handle
  end
  local client = M.client(profile, credential, cfg.credential.host)
  return setmetatable({ client = client, bucket = cfg.bucket,
                        root = cfg.root, profile = profile }, Store)
end

function Store:full_key(key)
  local full = self.root .. key
  check(s3.check_key(full))
  return full
end

function Store:url(key)
  return "s3://" .. self.bucket .. "/" .. self.root .. key
end

-- The bucket and full key of an s3:// URL, or of a key of this store.
function Store:locate(target)
  local bucket, key = M.split_url(target)
  if bucket then
    check(s3.check_bucket(bucket))
    check(s3.check_key(key))
    return bucket, key
  end
  return self.bucket, self:full_key(target)
end

local function with_url(store, info, bucket, key)
  info.url = "s3://" .. bucket .. "/" .. key
  if bucket == store.bucket and key:sub(1, #store.root) == store.root then
    info.key = key:sub(#store.root + 1)
  end
  return info
end

function Store:put(key, path)
  local full = self:full_key(key)
  local info, err = self.client:put(self.bucket, full, path)
  if not info then return nil, err end
  return with_url(self, info, self.bucket, full)
end

-- A temporary file under NAVETTE_HOME (the S3 client streams from and to
-- files); removed by the caller.
local function temp_path()
  local dir = core.home() .. "/tmp"
  check(sys.mkdir_p(dir))
  return dir .. "/s3-" .. sys.pid() .. "-" .. sys.random_hex(8)
end

function Store:put_string(key, s)
  local tmp = temp_path()
  check(sys.write_file(tmp, s))
  local info, err = self:put(key, tmp)
  sys.remove(tmp)
  return info, err
end

-- head(key or s3:// URL) -> info | nil, err (not_found when missing)
function Store:head(target)
  local bucket, key = self:locate(target)
  local info, err = self.client:head(bucket, key)
  if not info then return nil, err end
  return with_url(self, info, bucket, key)
end

-- read(key or URL, max_bytes) -> bytes | nil, err
function Store:read(target, max_bytes)
  local bucket, key = self:locate(target)
  local function too_large(size)
    return nil, { code = "refused", message = "object " .. key .. " is "
                  .. size .. " bytes, more than " .. max_bytes }
  end
  if max_bytes then
    -- (asked first: an object over the bound is never downloaded)
    local head, herr = self.client:head(bucket, key)
    if not head then return nil, herr end
    if head.size > max_bytes then return too_large(head.size) end
  end
  local tmp = temp_path()
  -- (read_into: a read, done in plan mode too; an interrupted one leaves
  -- its partial file and state beside tmp, removed here)
  -- the bound holds as the body streams, whatever HEAD said; a plan
  -- reads to show, never more than PLAN_READ_MAX
  local bound = max_bytes
  if core.plan_mode() and (not bound or bound > M.PLAN_READ_MAX) then
    bound = M.PLAN_READ_MAX
  end
  local info, err = self.client:read_into(bucket, key, tmp, nil, bound)
  if not info then
    local dir, base = tmp:match("^(.*)/([^/]*)$")
    sys.remove(tmp)
    sys.remove(dir .. "/." .. base .. ".navette-partial")
    sys.remove(dir .. "/." .. base .. ".navette-partial.state")
    if bound and tostring(err.message):find("over the cap", 1, true) then
      -- the service sent more than it said, or than the bound: a refusal
      return nil, { code = "refused", message = "object " .. key .. " sent "
                    .. "more than " .. bound .. " bytes" .. (bound ~= max_bytes
                    and " (what a plan reads at most)" or "")
                    .. "; the read was stopped there",
                    hint = bound ~= max_bytes and "read it with `navette run`"
                           or "ask for a larger bound, or check what the "
                              .. "service holds at " .. key }
    end
    return nil, err
  end
  if max_bytes and info.size > max_bytes then
    sys.remove(tmp)
    return too_large(info.size)
  end
  local data, rerr = sys.read_file(tmp)
  sys.remove(tmp)
  if not data then return nil, rerr end
  return data
end

-- list(prefix, {max = N}) -> {objects = {...}, truncated = bool}: every
-- page, keys relative to the store's root.
function Store:list(prefix, opts)
  local full = self.root .. (prefix or "")
  local objects, token = {}, nil
  local max = opts and opts.max or math.huge
  repeat
    local page, err = self.client:list(self.bucket, full ~= "" and full
                                       or nil, { continuation = token })
    if not page then return nil, err end
    for _, o in ipairs(page.objects) do
      objects[#objects + 1] = with_url(self, o, self.bucket, o.key)
      if #objects >= max then return { objects = objects,
                                       truncated = true } end
    end
    token = page.truncated and page.continuation or nil
  until not token
  return { objects = objects, truncated = false }
end

function Store:delete(target)
  local bucket, key = self:locate(target)
  return self.client:delete(bucket, key)
end

-- copy(from key or URL, to key) -> info of the copy (a server-side
-- CopyObject: the bytes never come here; the metadata, its sha256 with
-- it, travels with them) | nil, err
function Store:copy(from, to)
  local sb, sk = self:locate(from)
  local dk = self:full_key(to)
  local info, err = self.client:copy(sb, sk, self.bucket, dk)
  if not info then return nil, err end
  return with_url(self, info, self.bucket, dk)
end

-- get(key or URL, path) -> info with the sha256 of the bytes received
-- (checked against the recorded one when the object carries it) | nil, err
function Store:get(target, path)
  local bucket, key = self:locate(target)
  local info, err = self.client:get(bucket, key, path)
  if not info then return nil, err end
  return with_url(self, info, bucket, key)
end

-- lifecycle(prefix, days, id) -> {outcome, rules} | nil, err: the rule
-- expiring the store's objects under prefix (a key prefix of this store)
-- after days (s3_lifecycle.h: a bucket's rules written by others are
-- left alone).
function Store:lifecycle(prefix, days, id)
  local full = self.root .. prefix
  check(s3.check_key(full .. "x")) -- (a prefix may end in '/')
  return self.client:lifecycle(self.bucket, id, full, days)
end

-- A presigned GET URL of an object (key or URL) valid for expires_s.
function Store:presign_get(target, expires_s)
  local bucket, key = self:locate(target)
  return self.client:presign("GET", bucket, key, expires_s)
end

-- The POST form that lets its holder upload under prefix (a key of this
-- store) only, bodies up to max_bytes, for expires_s: {url, fields}.
function Store:post_policy(prefix, expires_s, max_bytes)
  local full = self.root .. prefix
  check(s3.check_key(full .. "x"))
  -- the form may also say the body's sha256 (x-amz-meta-sha256), as every
  -- put of navette does, so head() reports it
  local text, err = self.client:post_policy(self.bucket, full, expires_s,
                                            max_bytes, nil, { "sha256" })
  if not text then return nil, err end
  return _navette.json.decode(text)
end

-- ---- Unsigned (plan mode, credential not run) ---------------------------

function Unsigned:unavailable(what)
  return nil, { code = "refused", message = what .. ": "
                .. self.not_run.message, hint = self.not_run.hint }
end

function Unsigned:put(key, path)
  local full = self:full_key(key)
  core.plan("s3", "put", "s3://" .. self.bucket .. "/" .. full .. " <- "
            .. path)
  return with_url(self, { planned = true }, self.bucket, full)
end

function Unsigned:put_string(key, s)
  local full = self:full_key(key)
  core.plan("s3", "put", "s3://" .. self.bucket .. "/" .. full .. " <- ("
            .. #s .. " bytes)")
  return with_url(self, { planned = true }, self.bucket, full)
end

-- Taken to be there, its sha256 and size unknown (nil).
function Unsigned:head(target)
  local bucket, key = self:locate(target)
  return with_url(self, { unknown = true }, bucket, key)
end

function Unsigned:read(target)
  return self:unavailable("cannot read " .. tostring(target)
                          .. " in this plan")
end

function Unsigned:list(prefix)
  return self:unavailable("cannot list " .. self:url(prefix or "")
                          .. " in this plan")
end

function Unsigned:delete(target)
  local bucket, key = self:locate(target)
  core.plan("s3", "delete", "s3://" .. bucket .. "/" .. key)
  return true
end

function Unsigned:copy(from, to)
  local sb, sk = self:locate(from)
  local dk = self:full_key(to)
  core.plan("s3", "copy", "s3://" .. sb .. "/" .. sk .. " -> s3://"
            .. self.bucket .. "/" .. dk)
  return with_url(self, { planned = true }, self.bucket, dk)
end

function Unsigned:get(target)
  return self:unavailable("cannot read " .. tostring(target)
                          .. " in this plan")
end

function Unsigned:lifecycle(prefix, days)
  core.plan("s3", "lifecycle", "s3://" .. self.bucket .. ": expire "
            .. self.root .. prefix .. " after " .. days .. " days")
  return { outcome = "planned", rules = 0 }
end

function Unsigned:presign_get(target)
  local bucket, key = self:locate(target)
  return "(a GET URL of s3://" .. bucket .. "/" .. key .. ", signed when "
         .. "the job is submitted)"
end

function Unsigned:post_policy(prefix)
  return { url = "(a POST policy for s3://" .. self.bucket .. "/"
                 .. self.root .. prefix .. ", signed when the job is "
                 .. "submitted)", fields = {} }
end

function Unsigned:dispose() end
function Unsigned:close() end

-- close() is harmless on a store shared by a run (storage.lua's), which
-- dispose() closes.
function Store:dispose()
  if self.client then self.client:close() end
  self.client = nil
end

function Store:close()
  if not self.shared then self:dispose() end
end

errors.add_try(M, { "open" })

return M
