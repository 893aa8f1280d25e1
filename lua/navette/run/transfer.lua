-- Moving a job's code and data: the code archive, the signed URLs the
-- node reads and writes through, and how long they live.
local errors = require "navette.errors"
local storage = require "navette.storage"
local refusal = require "navette.run.report"
local refuse = refusal.refuse
local core, sys, json = _navette.core, _navette.sys, _navette.json

local M = {}

-- How long a job's URLs and POST policy last: its time limit plus the
-- profile's margin, bounded by the profile (a job without a time limit gets
-- the profile's maximum).
function M.url_lifetime(profile, j)
  local limit = j.resources and j.resources.time_limit
  if not limit then return profile.max_url_lifetime end
  local lifetime = math.ceil(limit + profile.url_margin)
  if lifetime > profile.max_url_lifetime then
    refuse("job '" .. j.name .. "': its time limit (" .. math.floor(limit)
           .. " s) plus the URL margin (" .. profile.url_margin .. " s) "
           .. "exceeds the profile's max_url_lifetime ("
           .. profile.max_url_lifetime .. " s)", "lower resources."
           .. "time_limit, or raise max_url_lifetime in profile '"
           .. profile.name .. "' (at most 7 days)")
  end
  return lifetime
end

-- The code of a commit as the node gets it: a deterministic tar.gz of its
-- tree, stored once per commit under _code/ (content-addressed by the
-- commit; a second run finds it there).
local function code_archive(run, store, spec)
  local key = "_code/" .. spec.project .. "/" .. spec.commit .. ".tar.gz"
  local info = store:head(key)
  if info and info.sha256 then return key, info end
  local tmp = core.home() .. "/tmp/code-" .. spec.commit .. "-"
              .. sys.random_hex(4) .. ".tar.gz"
  local plan = core.plan_mode()
  if not plan then errors.check(sys.mkdir_p(core.home() .. "/tmp")) end
  -- in plan mode only hashed, not written
  -- (a library's commit from its cache)
  local lib = run.code_repos and run.code_repos[spec.commit]
  local repo = lib and lib.repo or run.repo
  local made, err = repo:archive(spec.commit, not plan and tmp or nil)
  if not made then
    if not plan then sys.remove(tmp) end
    refuse("cannot pack commit " .. spec.commit:sub(1, 12) .. ": "
           .. err.message, err.hint)
  end
  if plan then
    core.plan("storage", "put", store:url(key) .. " <- commit "
              .. spec.commit:sub(1, 12) .. " (" .. made.size .. " bytes)")
    return key, made
  end
  local put, perr = store:put(key, tmp)
  sys.remove(tmp)
  if not put then
    error(errors.new(perr.code == "refused" and "refused" or "backend",
                     "cannot upload the code of commit "
                     .. spec.commit:sub(1, 12) .. ": " .. perr.message,
                     perr.hint), 0)
  end
  require("navette.audit").record({ action = "storage.put",
    target = put.url, detail = "code of " .. spec.commit:sub(1, 12)
    .. ", sha256 " .. put.sha256 }, run.profile)
  return key, put
end

-- What a job on S3 storage gets instead of keys: presigned GET URLs of its
-- code and inputs (read-only by construction) and a POST policy allowing
-- uploads under its own prefix only, for lifetime seconds. code: {key,
-- sha256, size} of its archive in store. Also what `migrate` signs anew.
function M.sign_transfer(profile, store, spec, lifetime, code)
  local function signed(what, value, err)
    if value then return value end
    refuse("cannot sign " .. what .. ": " .. err.message, err.hint)
  end
  local inputs = {}
  for i, input in ipairs(spec.inputs) do
    inputs[i] = { name = input.name, url = input.url,
                  sha256 = input.sha256 or "", size = input.size,
                  get = signed("input " .. input.name,
                               store:presign_get(input.url, lifetime)) }
    if input.from then
      -- another job's output: its sha256 is in that job's run record,
      -- which the launcher reads first (both keys are known now)
      inputs[i].from, inputs[i].output = input.from, input.output
      inputs[i].record_get = signed("the run record of job " .. input.from,
                                    store:presign_get(input.record,
                                                      lifetime))
    end
  end
  local post = signed("the output policy",
                      store:post_policy(spec.outputs.prefix, lifetime,
                                        profile.max_output_bytes))
  return {
    kind = "s3",
    prefix = profile.s3.root .. spec.outputs.prefix,
    output_url = spec.outputs.url,
    -- (none when the code is in the job's image)
    code = code and { key = code.key, sha256 = code.sha256,
                      size = code.size,
                      url = signed("the code archive",
                                   store:presign_get(code.key, lifetime)) }
           or nil,
    inputs = json.array(inputs),
    post = post,
    max_output_bytes = profile.max_output_bytes,
    checkpoint = spec.checkpoint and {
      every = spec.checkpoint.every,
      get = signed("the checkpoint", store:presign_get(spec.outputs.prefix
        .. _navette.record.names.checkpoint_archive, lifetime)) } or nil,
    -- (why earlier attempts ended, for the record of a retried one)
    attempts = spec.retries and {
      get = signed("the attempts list", store:presign_get(spec.outputs.prefix
        .. _navette.record.names.attempts, lifetime)) } or nil,
    lifetime = lifetime,
    expires_at = math.floor(sys.now()) + lifetime,
  }
end

-- The code archive of spec's commit, once per run and commit (a sweep's
-- jobs share it): {key, sha256, size}.
function M.commit_archive(run, store, spec)
  run.code_archives = run.code_archives or {}
  local known = run.code_archives[spec.commit]
  if not known then
    local key, code = code_archive(run, store, spec)
    known = { key = key, sha256 = code.sha256, size = code.size }
    run.code_archives[spec.commit] = known
  end
  return known
end

function M.transfer(run, spec, j)
  local store = storage._s3()
  -- a plan without the store's credential signs nothing (placeholders)
  if store.not_run then run.unsigned = true end
  local lifetime = M.url_lifetime(run.profile, j)
  if spec.container and spec.container.workdir then
    return M.sign_transfer(run.profile, store, spec, lifetime, nil)
  end
  return M.sign_transfer(run.profile, store, spec, lifetime,
                              M.commit_archive(run, store, spec))
end

return M
