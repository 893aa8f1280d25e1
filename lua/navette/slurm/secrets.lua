-- The secrets of a Slurm job: each sealed here (jobs.secret_seal:
-- encrypted under a password drawn for it) and put in the store outside
-- the job's prefix; the launcher sent to Slurm carries the password and
-- presigned GET and DELETE URLs that last the job's URLs' lifetime: the
-- node fetches the object once, deletes it, and decrypts it into a
-- folder of its own. The spec (jobs.db) keeps the objects' keys only, so
-- that `navette status` deletes one a job left (it never started, say)
-- once the job is over. For a job on the host of the node (an image's
-- container would need the folder mounted: not yet).
local errors = require "navette.errors"
local published = require "navette.published"
local jobs_native, sys, json = _navette.jobs, _navette.sys, _navette.json
local core = _navette.core

local secrets = {}

-- The backend's `secrets` (backends: the contract).
function secrets.allowed(_, spec)
  if spec and spec.container then return false, " for a job in an image" end
  return true
end

local function secrets_key(spec, name)
  return "_secrets/" .. spec.project .. "/" .. spec.id .. "/" .. name
end

-- Deletes the secrets' objects of spec (best effort: what is gone is
-- gone), through store when given.
function secrets.delete(spec, store)
  local own = not store
  store = store or published.s3_store(spec)
  if not store then return end
  for _, key in ipairs(spec.secrets_objects or {}) do store:delete(key) end
  if own then store:close() end
end

-- Seals and uploads spec's secrets; returns the script to send (the
-- launcher rendered again with their URLs and passwords, which no record
-- keeps) or the script as it was for a job without secrets.
function secrets.deliver(spec, script, ctx)
  if not spec.secrets then return script end
  local store = require("navette.storage")._s3()
  local lifetime = spec.transfer and spec.transfer.lifetime
  if not lifetime then
    error(errors.new("backend", "job '" .. spec.name .. "' has secrets "
                     .. "but no transfer URLs", "submit again with this "
                     .. "version of navette"), 0)
  end
  local tmp_dir = core.home() .. "/tmp"
  errors.check(sys.mkdir_p(tmp_dir))
  local delivery = json.array({})
  spec.secrets_objects = json.array({})
  for _, item in ipairs(spec.secrets) do
    local tmp = tmp_dir .. "/secret-" .. sys.random_hex(8)
    local pass, err = jobs_native.secret_seal(ctx.secret(item.credential),
                                              tmp)
    local put
    if pass then
      local key = secrets_key(spec, item.name)
      put, err = store:put(key, tmp)
      if put then spec.secrets_objects[#spec.secrets_objects + 1] = key end
    end
    sys.remove(tmp)
    local get, del
    if put then
      local bucket, full = store:locate(put.url)
      get, err = store.client:presign("GET", bucket, full, lifetime)
      if get then
        del, err = store.client:presign("DELETE", bucket, full, lifetime)
      end
    end
    if not del then
      secrets.delete(spec, store)
      error(errors.new("backend", "cannot deliver secret " .. item.name
                       .. " of job '" .. spec.name .. "': " .. err.message,
                       err.hint), 0)
    end
    delivery[#delivery + 1] = { name = item.name, get = get, delete = del,
                                password = pass }
  end
  -- the launcher as runner.render_launcher makes it, with the delivery
  local saved = { spec.launcher, spec.redact_fingerprints }
  spec.launcher, spec.redact_fingerprints = nil, nil
  spec.secrets_delivery = delivery
  local text = json.encode(spec)
  spec.secrets_delivery = nil
  spec.launcher, spec.redact_fingerprints = saved[1], saved[2]
  return errors.check(jobs_native.launcher(text))
end

return secrets
