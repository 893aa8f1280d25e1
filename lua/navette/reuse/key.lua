-- navette.reuse.key: a job's content key (issue 32): the sha256 of a
-- canonical encoding of everything that decides its outputs, and those
-- parts themselves, kept in the run record (key, key_parts) so that a
-- later run can say what differs.
--
-- The parts (version 1):
--   v          1
--   project    the project's name
--   name       the job's name (a sweep's task's, with its parameters):
--              two jobs of one recipe that happen to run the same command
--              are two jobs, and a job is explained against its name's
--              earlier runs
--   code       {tree = the commit's root tree id} (a commit that changes
--              nothing in the tree changes nothing), or {paths = {[path]
--              = the tree or blob id there}} for a job that narrows it
--              (code = { paths = {...} }), or {library = commit} for a
--              job a library declares
--   locks      {[path] = blob id}: the dependency lock files of the commit
--   image      the image's digest reference, or "host"
--   host       for a job on the host, the class of machines it runs on:
--              {profile, backend} (what they have installed decides
--              its outputs; an image's job carries no such part)
--   inputs     {[name] = sha256}: a store input by its content, another
--              job's output by the sha256 its run record gives
--   command, env, params
--   success    {exit_codes, outputs}; failure {log_patterns}
--   resources  those that change results: gpus, gres (a GPU's type);
--              not cpus, memory, time_limit, partition, account, qos
-- Not in it: the profile and backend for a job in an image (its key is
-- the same on every backend; reuse is per store), ids, times, who
-- submitted.
--
-- The encoding is JSON with nothing left to choice: object keys sorted
-- bytewise, no space, integers only (a sweep's other numbers are keyed
-- as text, "%.17g"; another is refused), strings with '"', '\\' and
-- the control characters escaped (\b \f \n \r \t, else \u00XX) and
-- every other byte as it is: what Python's json.dumps(v, sort_keys=True,
-- separators=(",", ":"), ensure_ascii=False) writes. The key is
-- "sha256:" and the hex sha256 of "navette-key/1\n" followed by that
-- text.
local M = {}

-- The canonical text of v (in C: _navette.json.canonical).
M.canonical = _navette.json.canonical

-- The key of parts: "sha256:<hex>".
function M.of(parts)
  return "sha256:" .. _navette.sys.sha256("navette-key/1\n"
                                          .. M.canonical(parts))
end

local RESULT_RESOURCES = { "gpus", "gres" }

-- v with each number that is not an integer as text ("%.17g": the same
-- digits on every platform), so that a sweep's learning rates can be in
-- a key.
local function numbers_as_text(v, depth)
  if math.type(v) == "float" then
    return math.tointeger(v) or string.format("%.17g", v)
  end
  if type(v) ~= "table" or depth > 32 then return v end
  local out = setmetatable({}, getmetatable(v))
  for k, x in pairs(v) do out[k] = numbers_as_text(x, depth + 1) end
  return out
end

-- The parts of spec's key. code: {tree = id} | {paths = {[p] = id}} |
-- {library = commit} (navette.reuse finds it in the commit); locks:
-- {[path] = blob}; produced: {[input name] = sha256} of the inputs that
-- are other jobs' outputs (their records'); nil when one is not known
-- yet (its producer runs now): such an input is {pending = the producer's
-- id, output = its path, record = the URL of the producer's run record},
-- and the name of the first is returned second: the key is known once
-- the producer has ended (M.complete).
function M.parts(spec, code, locks, produced)
  local inputs, missing = {}, nil
  for _, i in ipairs(spec.inputs or {}) do
    local sha = i.from and (produced or {})[i.name] or i.sha256
    if type(sha) ~= "string" and i.from then
      sha = { pending = i.from, output = i.output, record = i.record }
      missing = missing or i.name
    elseif type(sha) ~= "string" then
      return nil, i.name
    end
    inputs[i.name] = sha
  end
  local resources = {}
  for _, k in ipairs(RESULT_RESOURCES) do
    local v = spec.resources and spec.resources[k]
    if v ~= nil then
      resources[k] = numbers_as_text(v, 0)
    end
  end
  local success, failure = spec.success or {}, spec.failure_condition or {}
  return {
    v = 1,
    project = spec.project,
    name = spec.name,
    code = code,
    locks = locks or {},
    image = spec.image,
    -- (a job on the host runs what the profile's machines have)
    host = spec.image == "host" and { profile = spec.profile,
                                      backend = spec.backend } or nil,
    inputs = inputs,
    command = spec.command,
    env = spec.env or {},
    params = numbers_as_text(spec.params or {}, 0),
    success = { exit_codes = success.exit_codes or {},
                outputs = success.outputs or {} },
    failure = { log_patterns = failure.log_patterns or {} },
    resources = resources,
  }, missing
end

-- The key of parts whose pending inputs sha256_of(the pending entry)
-- now gives (from the producer's run record), or nil and the name of
-- the first (by name) it does not. parts is left as it was.
function M.complete(parts, sha256_of)
  local completed, missing = M.completed(parts, sha256_of)
  if missing then return nil, missing end
  return M.of(completed)
end

-- A copy of parts whose pending inputs sha256_of gives are replaced by
-- that sha256 (the others stay pending), and the name of the first it
-- does not give, if any.
function M.completed(parts, sha256_of)
  local inputs, missing = {}, nil
  for name, v in pairs(parts.inputs or {}) do
    local sha = type(v) == "table" and sha256_of(v)
    if type(sha) == "string" then
      v = sha
    elseif type(v) == "table" and (not missing or name < missing) then
      missing = name
    end
    inputs[name] = v
  end
  local copy = {}
  for k, v in pairs(parts) do copy[k] = v end
  copy.inputs = inputs
  return copy, missing
end

return M
