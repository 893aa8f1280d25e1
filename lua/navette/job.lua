-- navette.job{...}: validation of a job declaration. Every message names
-- the key and the recipe's line; defaults are filled here so the rest of
-- the library sees one shape.
local errors = require "navette.errors"
local util = require "navette.util"

local job = {}

local FIELDS = { "name", "code", "image", "inputs", "outputs", "command",
                 "requeue",
                 "env", "resources", "success", "failure", "logs" }
-- partition, account, qos, gres and nodes are the queue's (Slurm); the
-- local backend records them and runs on this machine
local RESOURCE_KEYS = { "cpus", "memory", "gpus", "time_limit", "partition",
                        "account", "qos", "gres", "nodes" }
local SUCCESS_KEYS = { "exit_code", "exit_codes", "outputs" }
local FAILURE_KEYS = { "log_patterns", "hint" }
local LOG_KEYS = { "max_bytes", "publish" }

local function bad(message, hint)
  errors.raise("recipe", "navette.job: " .. message, hint)
end

local function check_keys(t, known, what)
  for k in pairs(t) do
    if type(k) ~= "string" then
      bad(what .. ": keys must be names, found a " .. type(k) .. " key")
    end
    local ok = false
    for _, name in ipairs(known) do if k == name then ok = true end end
    if not ok then
      bad("unknown key '" .. k .. "' in " .. what .. util.suggest(k, known),
          what .. " takes: " .. table.concat(known, ", "))
    end
  end
end

local function want(value, kind, key)
  if type(value) ~= kind then
    bad("'" .. key .. "' must be a " .. kind .. ", got a " .. type(value))
  end
end

local function string_list(value, key)
  want(value, "table", key)
  local out = {}
  for i, v in ipairs(value) do
    if type(v) ~= "string" then
      bad("'" .. key .. "[" .. i .. "]' must be a string, got a "
          .. type(v))
    end
    out[i] = v
  end
  for k in pairs(value) do
    if math.type(k) ~= "integer" or k < 1 or k > #out then
      bad("'" .. key .. "' must be a list { \"a\", \"b\" }")
    end
  end
  return out
end

-- Output keys and prefixes follow the store's key rules; checked here so
-- a bad prefix is a recipe error, before anything runs.
local function check_key_like(s, key)
  if s == "" or #s > 900 then bad("'" .. key .. "' must be 1..900 bytes") end
  if s:sub(1, 1) == "/" then
    bad("'" .. key .. "' must be relative, not '" .. s .. "'",
        "an output prefix is a key in the store, like \"results/{id}/\"")
  end
  if s:find("[%z\1-\31\\]") then
    bad("'" .. key .. "' holds a control character or a backslash")
  end
  for segment in (s:gsub("/$", "") .. "/"):gmatch("([^/]*)/") do
    if segment == "" or segment == "." or segment == ".." then
      bad("'" .. key .. "' = '" .. s .. "': '..', '.' and empty segments "
          .. "are not allowed", "outputs stay under the job's own prefix")
    end
  end
end

local function input_url(v, name)
  if type(v) == "table" and type(v.url) == "string" then return v.url end
  if type(v) ~= "string" then
    bad("input '" .. name .. "' must be a storage URL string (or what "
        .. "navette.storage.put returned), got a " .. type(v))
  end
  if not v:match("^file:///") and not v:match("^s3://") then
    bad("input '" .. name .. "' = '" .. v .. "' is not a storage URL",
        "inputs come from object storage: file:///... or s3://bucket/key")
  end
  return v
end

-- Returns the normalised declaration (a new table).
function job.validate(spec)
  if type(spec) ~= "table" then
    bad("expects a table: navette.job{ name = ..., command = {...} }")
  end
  check_keys(spec, FIELDS, "navette.job")
  local j = {}

  if spec.name == nil then bad("'name' is required") end
  want(spec.name, "string", "name")
  if not spec.name:match("^[%w][%w._-]*$") or #spec.name > 63 then
    bad("'name' = '" .. spec.name .. "': use letters, digits, '.', '_' "
        .. "and '-' (at most 63)")
  end
  j.name = spec.name

  if spec.code ~= nil then want(spec.code, "string", "code") end
  j.code = spec.code or "HEAD"

  -- an image: a reference, or what navette.image.code_layer/build gave
  -- (then its code may be the job's: see runner.spec)
  if type(spec.image) == "table" then
    local img = spec.image
    if img.planned then
      j.image = img.to or img.reference or "(planned image)"
      j.image_planned = true
    elseif type(img.reference) == "string" then
      j.image = img.reference
    else
      bad("'image' must be a reference string or what navette.image."
          .. "code_layer{...} or build{...} returned")
    end
    if type(img.into) == "string" and type(img.commit) == "string" then
      j.image_code = { path = img.into, commit = img.commit }
    end
  elseif spec.image ~= nil then
    want(spec.image, "string", "image")
    j.image = spec.image
  end

  j.inputs = {}
  if spec.inputs ~= nil then
    want(spec.inputs, "table", "inputs")
    for name, v in pairs(spec.inputs) do
      if type(name) ~= "string" or not name:match("^[%w_][%w._-]*$") then
        bad("input names are letters, digits, '.', '_' and '-' (found '"
            .. tostring(name) .. "')")
      end
      j.inputs[name] = input_url(v, name)
    end
  end

  if spec.outputs ~= nil then
    want(spec.outputs, "string", "outputs")
    check_key_like(spec.outputs, "outputs")
  end
  j.outputs = spec.outputs or "{project}/{id}/"
  if j.outputs:sub(-1) ~= "/" then j.outputs = j.outputs .. "/" end

  if spec.command == nil then
    bad("'command' is required", "command = { \"python\", \"train.py\" }")
  end
  j.command = string_list(spec.command, "command")
  if #j.command == 0 then bad("'command' must not be empty") end
  for i, a in ipairs(j.command) do
    if _navette.creds.redact(a) ~= a then
      bad("'command[" .. i .. "]' holds what looks like a secret",
          "a command line is shown in plans, records and logs: never "
          .. "put a secret in it")
    end
  end

  j.env = {}
  if spec.env ~= nil then
    want(spec.env, "table", "env")
    for k, v in pairs(spec.env) do
      if type(k) ~= "string" or not _navette.jobs.env_name_ok(k) then
        bad("env name '" .. tostring(k) .. "' is not allowed",
            "names are letters, digits and '_'; NAVETTE_*, PATH, HOME "
            .. "and the like are set by navette")
      end
      if type(v) == "number" or type(v) == "boolean" then v = tostring(v) end
      if type(v) ~= "string" then
        bad("env '" .. k .. "' must be a string, got a " .. type(v))
      end
      if _navette.creds.redact(v) ~= v then
        bad("env '" .. k .. "' holds what looks like a secret",
            "env is never for secrets: a job gets short-lived access "
            .. "through navette.creds and storage URLs")
      end
      j.env[k] = v
    end
  end

  local r = spec.resources or {}
  want(r, "table", "resources")
  check_keys(r, RESOURCE_KEYS, "resources")
  j.resources = {}
  if r.cpus ~= nil then
    if type(r.cpus) ~= "number" or r.cpus <= 0 then
      bad("'resources.cpus' must be a positive number")
    end
    j.resources.cpus = r.cpus
  end
  if r.gpus ~= nil then
    if math.type(r.gpus) ~= "integer" or r.gpus < 0 then
      bad("'resources.gpus' must be a whole number >= 0")
    end
    j.resources.gpus = r.gpus
  end
  if r.memory ~= nil then
    local bytes = util.parse_size(r.memory)
    if not bytes then
      bad("'resources.memory' = " .. tostring(r.memory)
          .. " is not a size", "for example \"16GiB\" or \"512MiB\"")
    end
    j.resources.memory = bytes
  end
  if r.time_limit ~= nil then
    local secs = util.parse_duration(r.time_limit)
    if not secs then
      bad("'resources.time_limit' = " .. tostring(r.time_limit)
          .. " is not a duration", "for example 600, \"30m\" or \"2h\"")
    end
    j.resources.time_limit = secs
  end
  for _, k in ipairs({ "partition", "account", "qos", "gres" }) do
    if r[k] ~= nil then
      if type(r[k]) ~= "string" or not r[k]:match("^[%w._:,=/-]+$")
         or #r[k] > 128 then
        bad("'resources." .. k .. "' must be a name (letters, digits, "
            .. "._:,=/-)")
      end
      j.resources[k] = r[k]
    end
  end
  if r.nodes ~= nil then
    local list = type(r.nodes) == "string" and { r.nodes }
                 or string_list(r.nodes, "resources.nodes")
    for i, n in ipairs(list) do
      if not n:match("^[%w._%[%],-]+$") or #n > 128 then
        bad("'resources.nodes[" .. i .. "]' = '" .. n .. "' is not a node "
            .. "name", "for example \"gpu-a\" or \"gpu-[1-4]\"")
      end
    end
    j.resources.nodes = list
  end

  if spec.requeue ~= nil then want(spec.requeue, "boolean", "requeue") end
  j.requeue = spec.requeue -- nil: the profile's default

  local s = spec.success or {}
  want(s, "table", "success")
  check_keys(s, SUCCESS_KEYS, "success")
  j.success = { exit_codes = { 0 }, outputs = {} }
  if s.exit_code ~= nil then
    if math.type(s.exit_code) ~= "integer" or s.exit_code < 0
       or s.exit_code > 255 then
      bad("'success.exit_code' must be a whole number from 0 to 255")
    end
    j.success.exit_codes = { s.exit_code }
  end
  if s.exit_codes ~= nil then
    j.success.exit_codes = {}
    for i, c in ipairs(s.exit_codes) do
      if math.type(c) ~= "integer" or c < 0 or c > 255 then
        bad("'success.exit_codes[" .. i .. "]' must be a whole number "
            .. "from 0 to 255")
      end
      j.success.exit_codes[i] = c
    end
  end
  if s.outputs ~= nil then
    j.success.outputs = string_list(s.outputs, "success.outputs")
    for _, o in ipairs(j.success.outputs) do
      check_key_like(o, "success.outputs")
    end
  end

  local f = spec.failure or {}
  want(f, "table", "failure")
  check_keys(f, FAILURE_KEYS, "failure")
  j.failure = { log_patterns = {} }
  if f.log_patterns ~= nil then
    j.failure.log_patterns = string_list(f.log_patterns,
                                         "failure.log_patterns")
  end
  if f.hint ~= nil then want(f.hint, "string", "failure.hint") end
  j.failure.hint = f.hint

  local l = spec.logs or {}
  want(l, "table", "logs")
  check_keys(l, LOG_KEYS, "logs")
  j.logs = { max_bytes = 64 * 1024 * 1024, publish = true }
  if l.max_bytes ~= nil then
    local b = util.parse_size(l.max_bytes)
    if not b then bad("'logs.max_bytes' must be a size") end
    j.logs.max_bytes = b
  end
  if l.publish ~= nil then
    want(l.publish, "boolean", "logs.publish")
    j.logs.publish = l.publish
  end

  j.declared_at = errors.where():gsub(": $", "")
  return j
end

-- "<project>-<yyyymmdd>-<hhmmss>-<commit7>-<random6>": lowercase,
-- DNS-1123, at most 63 characters.
function job.new_id(project_slug, commit)
  local now = _navette.sys.now()
  local stamp = os.date("!%Y%m%d-%H%M%S", math.floor(now))
  local tail = "-" .. stamp .. "-" .. commit:sub(1, 7) .. "-"
               .. _navette.sys.random_hex(3)
  local head = project_slug:sub(1, 63 - #tail):gsub("-+$", "")
  if head == "" then head = "job" end
  return head .. tail
end

function job.is_valid_id(id)
  return #id <= 63 and id:match("^[a-z0-9][a-z0-9-]*[a-z0-9]$") ~= nil
end

return job
