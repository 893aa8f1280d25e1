-- navette.job{...}: validation of a job declaration. Every message names
-- the key and the recipe's line; defaults are filled here so the rest of
-- the library sees one shape.
local errors = require "navette.errors"
local util = require "navette.util"

local job = {}

local bad = errors.raiser("recipe", "navette.job: ")

local function check_keys(t, known, what)
  util.check_keys(t, known, function(k, suggestion, list)
    if type(k) ~= "string" then
      bad(what .. ": keys must be names, found a " .. type(k) .. " key")
    end
    bad("unknown key '" .. k .. "' in " .. what .. suggestion,
        what .. " takes: " .. list)
  end)
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
  local function output_of(x, where)
    if type(x.job) ~= "string" or type(x.output) ~= "string" then
      bad("input '" .. where .. "' must be what job:output(\"path\") "
          .. "returned")
    end
    check_key_like(x.output, "input '" .. where .. "': output")
    if x.output:find("[%%#?]") then
      -- (the output's URL is its prefix's and this name, joined)
      bad("input '" .. where .. "': output '" .. x.output .. "' holds '%', "
          .. "'#' or '?'", "rename the output the job writes")
    end
    return { job = x.job, output = x.output }
  end
  if type(v) == "table" and v.job ~= nil then
    -- an output of another job of the run (what job:output(path) gave)
    return output_of(v, name)
  end
  if type(v) == "table" and type(v[1]) == "table" and v[1].job ~= nil then
    -- one output of each of several jobs (navette.outputs): NAME/1...
    local list, n = {}, 0
    for _ in pairs(v) do n = n + 1 end
    if n ~= #v or n > 10000 then
      bad("input '" .. name .. "' must be a list of job outputs "
          .. "(what navette.outputs returned)")
    end
    for i, x in ipairs(v) do
      if type(x) ~= "table" then
        bad("input '" .. name .. "[" .. i .. "]' must be a job's output")
      end
      list[i] = output_of(x, name .. "[" .. i .. "]")
    end
    list.list = true
    return list
  end
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

-- Checks of the fields below that a type alone does not say. Each takes
-- (value, out, key): it raises with the key's name, or stores the
-- normalised value in out.
local check_name = util.name_check(bad)

-- after: the jobs this one runs after, as navette.job or navette.sweep
-- returned them (or their names); kept as a list of names, each once
local function check_after(v, out, key)
  local names, seen = {}, {}
  local function add(x, where)
    local name = type(x) == "string" and x
                 or type(x) == "table" and type(x.name) == "string" and x.name
    if not name then
      if type(x) == "table" and #x > 0 then -- what navette.sweep returned
        for i, y in ipairs(x) do add(y, where .. "[" .. i .. "]") end
        return
      end
      bad("'" .. where .. "' must be a job (what navette.job or "
          .. "navette.sweep returned) or a job's name")
    end
    if not seen[name] then
      seen[name] = true
      names[#names + 1] = name
    end
  end
  for i, x in ipairs(v) do add(x, key .. "[" .. i .. "]") end
  local n = 0
  for _ in pairs(v) do n = n + 1 end
  if n ~= #v then bad("'" .. key .. "' must be a list of jobs") end
  out.after = names
end

-- an image: a reference, or what navette.image.code_layer/build gave
-- (then its code may be the job's: see runner.spec)
local function check_image(img, out)
  if type(img) ~= "table" then
    want(img, "string", "image")
    out.image = img
    return
  end
  if img.planned then
    out.image = img.to or img.reference or "(planned image)"
    out.image_planned = true
  elseif type(img.reference) == "string" then
    out.image = img.reference
  else
    bad("'image' must be a reference string or what navette.image."
        .. "code_layer{...} or build{...} returned")
  end
  if type(img.into) == "string" and type(img.commit) == "string" then
    out.image_code = { path = img.into, commit = img.commit }
  end
end

local function check_inputs(v, out)
  out.inputs = {}
  for name, input in pairs(v) do
    if type(name) ~= "string" or not name:match("^[%w_][%w._-]*$") then
      bad("input names are letters, digits, '.', '_' and '-' (found '"
          .. tostring(name) .. "')")
    end
    out.inputs[name] = input_url(input, name)
  end
end

local function check_outputs(v, out, key)
  check_key_like(v, key)
  out.outputs = v:sub(-1) == "/" and v or v .. "/"
end

local function check_command(v, out, key)
  local list = string_list(v, key)
  if #list == 0 then bad("'" .. key .. "' must not be empty") end
  for i, a in ipairs(list) do
    if _navette.creds.redact(a) ~= a then
      bad("'" .. key .. "[" .. i .. "]' holds what looks like a secret",
          "a command line is shown in plans, records and logs: never "
          .. "put a secret in it")
    end
  end
  out.command = list
end

local function check_env(v, out)
  out.env = {}
  for k, value in pairs(v) do
    local ok, why = false, "a name is a string"
    if type(k) == "string" then ok, why = _navette.jobs.env_name_ok(k) end
    if not ok then
      bad("env name '" .. tostring(k) .. "' is not allowed: " .. why,
          "rename the variable; names are letters, digits and '_', and "
          .. "navette, the shell and the loader keep some for themselves")
    end
    if type(value) == "number" or type(value) == "boolean" then
      value = tostring(value)
    end
    if type(value) ~= "string" then
      bad("env '" .. k .. "' must be a string, got a " .. type(value))
    end
    if _navette.creds.redact(value) ~= value then
      bad("env '" .. k .. "' holds what looks like a secret",
          "env is never for secrets: a job gets short-lived access "
          .. "through navette.creds and storage URLs")
    end
    out.env[k] = value
  end
end

-- secrets: the variable a job reads each by (its file: NAME_FILE) ->
-- the name of a credential the profile declares (runner.spec checks it
-- against the profile). Never a value: a value here is refused.
job.SECRETS_MAX = 32
local function check_secrets(v, out, key)
  out.secrets = {}
  local n = 0
  for name, credential in pairs(v) do
    n = n + 1
    local ok, why = false, "a name is a string"
    if type(name) == "string" then
      ok, why = _navette.jobs.env_name_ok(name)
      if ok then ok, why = _navette.jobs.env_name_ok(name .. "_FILE") end
    end
    if not ok then
      bad("secret name '" .. tostring(name) .. "' is not allowed: " .. why,
          "a secret's name is a variable name (letters, digits and '_'); "
          .. "the job finds its file at $" .. "NAVETTE_SECRETS/NAME and "
          .. "NAME_FILE names it, so neither may be one navette, the "
          .. "shell or the loader keeps (NAVETTE_*, PATH, HOME, LD_*...)")
    end
    if type(credential) ~= "string"
       or not credential:match("^[%w_][%w._-]*$") or #credential > 64 then
      bad("'" .. key .. "." .. name .. "' must be the name of a "
          .. "credential (a string such as \"hub\")",
          "secrets = { " .. name .. " = \"hub\" } names a credential "
          .. "that the profile declares; never put the value itself here")
    end
    for _, var in ipairs({ name, name .. "_FILE" }) do
      if out.env and out.env[var] ~= nil then
        bad("'" .. key .. "." .. name .. "': env declares " .. var
            .. " too", "the job gets " .. name .. "_FILE from navette; "
            .. "remove " .. var .. " from env")
      end
    end
    out.secrets[name] = credential
  end
  if n > job.SECRETS_MAX then
    bad("'" .. key .. "' declares " .. n .. " secrets (at most "
        .. job.SECRETS_MAX .. ")", "put related values in one credential")
  end
end

-- counts the queue takes as a C int (NaN and infinities fail the test)
local COUNT_MAX = 2 ^ 31 - 1

local function check_cpus(v, out, key)
  if type(v) ~= "number" or not (v > 0 and v <= COUNT_MAX) then
    bad("'" .. key .. "' must be a positive number (at most "
        .. math.tointeger(COUNT_MAX) .. ")")
  end
  out.cpus = v
end

local function check_gpus(v, out, key)
  if math.type(v) ~= "integer" or v < 0 or v > COUNT_MAX then
    bad("'" .. key .. "' must be a whole number >= 0 (at most "
        .. math.tointeger(COUNT_MAX) .. ")")
  end
  out.gpus = v
end

-- A field parse reads (a size, a duration) into a number of at least
-- least, stored as out[slot]; else what it is not, and an example.
local function parsed(parse, slot, what, example, least)
  return function(v, out, key)
    local n = parse(v)
    if not n or (least and n < least) then
      bad("'" .. key .. "' = " .. tostring(v) .. " is not " .. what, example)
    end
    out[slot] = n
  end
end

local check_memory = parsed(util.parse_size, "memory", "a size",
                            "for example \"16GiB\" or \"512MiB\"")
local check_time_limit = parsed(util.parse_duration, "time_limit",
                                "a duration",
                                "for example 600, \"30m\" or \"2h\"")

-- partition, account, qos, gres: names the queue (Slurm) knows
local function queue_name(name)
  return function(v, out, key)
    if type(v) ~= "string" or not v:match("^[%w._:,=/-]+$") or #v > 128 then
      bad("'" .. key .. "' must be a name (letters, digits, ._:,=/-)")
    end
    out[name] = v
  end
end

local function check_nodes(v, out, key)
  local list = type(v) == "string" and { v } or string_list(v, key)
  for i, n in ipairs(list) do
    if not n:match("^[%w._%[%],-]+$") or #n > 128 then
      bad("'" .. key .. "[" .. i .. "]' = '" .. n .. "' is not a node "
          .. "name", "for example \"gpu-a\" or \"gpu-[1-4]\"")
    end
  end
  out.nodes = list
end

-- code: a revision, or {ref = revision, paths = {...}} (reuse's key
-- narrowed to those paths of the commit)
local function check_code(v, out, key)
  if type(v) == "string" then
    out.code = v
    return
  end
  want(v, "table", key)
  check_keys(v, { "ref", "paths" }, key)
  if v.ref ~= nil and (type(v.ref) ~= "string" or v.ref == "") then
    bad("'" .. key .. ".ref' must be a revision, such as \"HEAD\"")
  end
  out.code = v.ref or "HEAD"
  local paths = string_list(v.paths, key .. ".paths")
  if #paths == 0 then
    bad("'" .. key .. ".paths' must name at least one folder or file",
        "for example code = { paths = { \"src/\", \"train.yaml\" } }")
  end
  for i, p in ipairs(paths) do
    if p == "" or p:sub(1, 1) == "/" or ("/" .. p .. "/"):find("/%.%.?/")
       or #p > 1024 then
      bad("'" .. key .. ".paths[" .. i .. "]' = '" .. p .. "' is not a "
          .. "path of the repository", "a relative path such as \"src/\"")
    end
  end
  out.code_paths = paths
end

local function exit_code_ok(c)
  return math.type(c) == "integer" and c >= 0 and c <= 255
end

local function check_exit_code(v, out, key)
  if not exit_code_ok(v) then
    bad("'" .. key .. "' must be a whole number from 0 to 255")
  end
  out.exit_codes = { v }
end

local function check_exit_codes(v, out, key)
  out.exit_codes = {}
  for i, c in ipairs(v) do
    if not exit_code_ok(c) then
      bad("'" .. key .. "[" .. i .. "]' must be a whole number from 0 to 255")
    end
    out.exit_codes[i] = c
  end
end

local function check_required_outputs(v, out, key)
  out.outputs = string_list(v, key)
  for _, o in ipairs(out.outputs) do check_key_like(o, key) end
end

local function check_log_patterns(v, out, key)
  out.log_patterns = string_list(v, key)
end

local function check_max_bytes(v, out, key)
  local b = util.parse_size(v)
  if not b then bad("'" .. key .. "' must be a size") end
  out.max_bytes = b
end

-- retries: how many more times the job runs, and after which failures
local RETRY_KINDS = { node_fail = true, preempted = true, timeout = true }
local RETRY_HINT = "the kinds: node_fail, preempted, timeout, exit:N (N "
                   .. "from 1 to 255), as in on = { \"preempted\", "
                   .. "\"exit:137\" }"

local function check_retry_max(v, out, key)
  if math.type(v) ~= "integer" or v < 1 or v > 100 then
    bad("'" .. key .. "' must be a whole number from 1 to 100",
        "the job runs at most 1 + max times")
  end
  out.max = v
end

local function check_retry_on(v, out, key)
  local list = string_list(v, key)
  for i, kind in ipairs(list) do
    local code = kind:match("^exit:(%d%d?%d?)$")
    code = code and tonumber(code)
    if not (RETRY_KINDS[kind] or (code and code >= 1 and code <= 255)) then
      bad("'" .. key .. "[" .. i .. "]' = '" .. kind .. "' is not a "
          .. "failure navette retries", RETRY_HINT)
    end
  end
  out.on = list
end

local check_checkpoint_every = parsed(util.parse_duration, "every",
                                      "a duration of a second or more",
                                      "for example 300, \"5m\" or \"1h\"",
                                      1)

-- The fields of navette.job{...}, in the order they are checked: the one
-- definition that validation, its messages, the LuaLS definitions
-- (navette.luals) and the docs are made from. A field has a name, a type
-- as LuaLS writes it, a doc line, and: `kind` (the Lua type its value
-- must have), `check` (what a type does not say; stores the normalised
-- value), `default` (the normalised value when absent), `required` (true,
-- or the hint when it is missing), or `fields` (a table of its own, whose
-- fields are checked the same way).
job.FIELDS = {
  { name = "name", type = "string", kind = "string", required = true,
    check = check_name,
    doc = "The job's name in the run: letters, digits, '.', '_' and '-', at "
          .. "most 63." },
  { name = "code", type = "string|{ref: string?, paths: string[]}",
    check = check_code, default = "HEAD",
    doc = "The commit the job runs (a revision: a branch, tag or commit "
          .. "id); the tree must be clean and the commit pushed. In a job "
          .. "a library declares, \"library\" is the library's locked "
          .. "commit. { ref = \"HEAD\", paths = { \"src/\", ... } } runs "
          .. "the same commit, and keys the job (reuse) by those folders "
          .. "and files only: a change elsewhere reuses it." },
  { name = "reuse", type = "boolean", kind = "boolean", default = true,
    doc = "false: the job always runs, never taken from an earlier run "
          .. "with the same key (a benchmark, a job reading the clock)." },
  { name = "image", type = "string|navette.image.Result",
    check = check_image,
    doc = "The image: a reference (pinned to its digest when submitted), or "
          .. "what navette.image.code_layer{} or build{} returned. Without "
          .. "it the job runs on the host (recorded as `host`)." },
  { name = "inputs", type = "table<string, string|navette.storage.Object>",
    kind = "table", check = check_inputs, default = {},
    doc = "Read-only inputs by name: storage URLs (file:///... or "
          .. "s3://bucket/key) or what navette.storage.put returned; the "
          .. "job finds them at `$NAVETTE_INPUTS/<name>`." },
  { name = "outputs", type = "string", kind = "string",
    check = check_outputs, default = "{project}/{id}/",
    doc = "The key prefix, in the profile's store, where the job's outputs, "
          .. "log and run record are published ({project} and {id} are "
          .. "replaced)." },
  { name = "command", type = "string[]", required =
      "command = { \"python\", \"train.py\" }", check = check_command,
    doc = "The command and its arguments (no shell); never a secret: it is "
          .. "shown in plans, records and logs." },
  { name = "after", type = "(navette.job.Spec|string)[]", kind = "table",
    check = check_after, default = {},
    doc = "Jobs of the run this one starts after: it runs once each has "
          .. "succeeded, and ends cancelled when one fails or is "
          .. "cancelled (what navette.job or navette.sweep returned, "
          .. "declared before it)." },
  { name = "requeue", type = "boolean", kind = "boolean",
    doc = "Whether the queue may run the job again after a node failure "
          .. "(default: the profile's)." },
  { name = "retries", type = "navette.job.Retries",
    doc = "Runs the job again (same id, same prefix) after the failures "
          .. "`on` names, at most `max` more times; the run record lists "
          .. "every attempt.",
    fields = {
      { name = "max", type = "integer", check = check_retry_max,
        doc = "How many more times the job may run (1 to 100; default 1 "
              .. "when `retries` is given)." },
      { name = "on", type = "string[]", check = check_retry_on,
        doc = "The failures retried: \"node_fail\", \"preempted\", "
              .. "\"timeout\", \"exit:N\" (required with `retries`)." },
    } },
  { name = "checkpoint", type = "navette.job.Checkpoint",
    doc = "A folder ($NAVETTE_CHECKPOINT) restored from the job's "
          .. "checkpoint before the command starts and saved while it runs "
          .. "and when it ends, so an attempt resumes where the last one "
          .. "stopped.",
    fields = {
      { name = "every", type = "integer|string",
        check = check_checkpoint_every,
        doc = "How often it is saved: seconds or a duration such as "
              .. "\"5m\" (default 300 when `checkpoint` is given)." },
    } },
  { name = "env", type = "table<string, string|number|boolean>",
    kind = "table", check = check_env, default = {},
    doc = "Environment variables of the job, never secrets. Names are "
          .. "letters, digits and '_'; `NAVETTE_*` and the names navette "
          .. "sets or the shell or the loader gives a meaning to (`PATH`, "
          .. "`HOME`, `IFS`, `OPTIND`, `ENV`, `LD_*`, `DYLD_*`, "
          .. "`BASH_*`...) are refused." },
  { name = "secrets", type = "table<string, string>", kind = "table",
    check = check_secrets, default = {},
    doc = "Secrets the job reads, by variable name: each names a "
          .. "credential of the profile (`{ HF_TOKEN = \"hub\" }`). The "
          .. "job gets a file per secret, mode 0400, at "
          .. "`$NAVETTE_SECRETS/HF_TOKEN`, named by `HF_TOKEN_FILE`; the "
          .. "value is never in the environment, the spec or the log. At "
          .. "most 32; names as for `env`." },
  { name = "resources", type = "navette.job.Resources",
    doc = "What the job needs; partition, account, qos, gres and nodes are "
          .. "the queue's (Slurm): the local backend records them.",
    fields = {
      { name = "cpus", type = "number", check = check_cpus,
        doc = "CPU cores (a positive number)." },
      { name = "memory", type = "string|integer", check = check_memory,
        doc = "Memory: bytes or a size such as \"16GiB\" or \"512MiB\"." },
      { name = "gpus", type = "integer", check = check_gpus,
        doc = "GPUs (a whole number >= 0)." },
      { name = "time_limit", type = "integer|string",
        check = check_time_limit,
        doc = "Time limit: seconds or a duration such as \"30m\" or "
              .. "\"2h\"." },
      { name = "partition", type = "string", check = queue_name("partition"),
        doc = "Slurm partition." },
      { name = "account", type = "string", check = queue_name("account"),
        doc = "Slurm account." },
      { name = "qos", type = "string", check = queue_name("qos"),
        doc = "Slurm quality of service." },
      { name = "gres", type = "string", check = queue_name("gres"),
        doc = "Slurm generic resources, such as \"gpu:a100:2\"." },
      { name = "nodes", type = "string|string[]", check = check_nodes,
        doc = "Nodes to run on: a name or list such as \"gpu-a\" or "
              .. "\"gpu-[1-4]\"." },
    } },
  { name = "success", type = "navette.job.Success",
    doc = "When the job counts as succeeded.",
    fields = {
      { name = "exit_code", type = "integer", check = check_exit_code,
        doc = "The one exit status that means success (0 to 255)." },
      { name = "exit_codes", type = "integer[]", check = check_exit_codes,
        default = { 0 },
        doc = "The exit statuses that mean success (each 0 to 255)." },
      { name = "outputs", type = "string[]", check = check_required_outputs,
        default = {},
        doc = "Outputs (keys under the job's prefix) that must exist." },
    } },
  { name = "failure", type = "navette.job.Failure",
    doc = "How a failure is explained.",
    fields = {
      { name = "log_patterns", type = "string[]", check = check_log_patterns,
        default = {},
        doc = "Lua patterns that, found in the log, mark the job failed "
              .. "(even on exit 0)." },
      { name = "hint", type = "string", kind = "string",
        doc = "What to check when the job fails (shown with the failure)." },
    } },
  { name = "logs", type = "navette.job.Logs",
    doc = "The job's log.",
    fields = {
      { name = "max_bytes", type = "integer|string", check = check_max_bytes,
        default = 64 * 1024 * 1024,
        doc = "The most the published log keeps (its end): bytes or a "
              .. "size such as \"64MiB\"." },
      { name = "publish", type = "boolean", kind = "boolean", default = true,
        doc = "Whether the log is published beside the outputs." },
    } },
}

local function names(fields)
  local list = {}
  for i, f in ipairs(fields) do list[i] = f.name end
  return list
end

-- Checks spec's fields into out; prefix names them ("resources.").
local function check_fields(fields, spec, out, prefix)
  for _, f in ipairs(fields) do
    local key = prefix .. f.name
    local value = spec[f.name]
    if f.fields then
      local t = value or {}
      want(t, "table", key)
      check_keys(t, names(f.fields), key)
      out[f.name] = {}
      check_fields(f.fields, t, out[f.name], key .. ".")
    elseif value == nil then
      if f.required then
        bad("'" .. key .. "' is required",
            f.required ~= true and f.required or nil)
      end
      if out[f.name] == nil then out[f.name] = util.deep_copy(f.default) end
    else
      if f.kind then want(value, f.kind, key) end
      if f.check then f.check(value, out, key) else out[f.name] = value end
    end
  end
end

-- Every string of a job reaches JSON (plans, the queue, run records) and
-- C strings (the launcher): a NUL would cut it short there and a byte
-- that is not UTF-8 would make the JSON invalid. Both are refused, naming
-- the key, in what validation kept (keys included).
local function check_text(v, key)
  if type(v) == "string" then
    local nul = v:find("%z")
    if nul then
      bad("'" .. key .. "' holds a NUL byte at byte offset " .. (nul - 1),
          "a NUL cannot pass to a program, a file name or JSON")
    end
    local ok, at = utf8.len(v)
    if not ok then
      bad(string.format("'%s' holds bytes that are not UTF-8 text (0x%02x "
                        .. "at byte offset %d)", key, v:byte(at), at - 1),
          "write the text in UTF-8")
    end
  elseif type(v) == "table" then
    for k, x in pairs(v) do
      local sub = math.type(k) == "integer" and key .. "[" .. k .. "]"
                  or key .. "." .. tostring(k)
      check_text(k, sub)
      check_text(x, sub)
    end
  end
end

-- retries and checkpoint are absent unless given (a group of fields is
-- otherwise filled); given, they get their defaults here.
local function optional_groups(spec, j)
  if spec.retries == nil then
    j.retries = nil
  elseif not j.retries.on or #j.retries.on == 0 then
    bad("'retries.on' is required: the failures to retry", RETRY_HINT)
  else
    j.retries.max = j.retries.max or 1
  end
  if spec.checkpoint == nil then
    j.checkpoint = nil
  else
    j.checkpoint.every = j.checkpoint.every or 300
  end
end

-- Returns the normalised declaration (a new table).
function job.validate(spec)
  if type(spec) ~= "table" then
    bad("expects a table: navette.job{ name = ..., command = {...} }")
  end
  check_keys(spec, names(job.FIELDS), "navette.job")
  local j = {}
  check_fields(job.FIELDS, spec, j, "")
  optional_groups(spec, j)
  for k, v in pairs(j) do check_text(v, k) end
  j.declared_at = errors.where():gsub(": $", "")
  return j
end

-- "<project>-<time6>-<random5>": lowercase, DNS-1123, at most 63
-- characters. time6 is the second it was drawn, counted from 2020-01-01
-- UTC in base 36 over six digits (until 2089), so the ids of a project
-- sort by time as text does; random5 is five base-36 digits (about 60
-- million values) that set the jobs of one second apart. A sweep's jobs
-- then differ from the eighth character after the project's name on,
-- where the old ids (date, time and commit in full) differed from the
-- 33rd. The commit and the date are in the job's record and in `jobs`.
local EPOCH = 1577836800 -- 2020-01-01T00:00:00Z
local B36 = "0123456789abcdefghijklmnopqrstuvwxyz"
local function base36(n, width)
  local out = {}
  for i = width, 1, -1 do
    local d = n % 36
    out[i] = B36:sub(d + 1, d + 1)
    n = n // 36
  end
  return table.concat(out)
end

local function new_id(project_slug)
  local now = math.floor(_navette.sys.now()) - EPOCH
  local draw = tonumber(_navette.sys.random_hex(4), 16)
  local tail = "-" .. base36(math.max(now, 0), 6) .. "-"
               .. base36(draw, 5)
  local head = project_slug:sub(1, 63 - #tail):gsub("-+$", "")
  if head == "" then head = "job" end
  return head .. tail
end
job.new_id = new_id

-- The id of one `navette run`: "<project>-run-<time6>-..." (no prefix
-- of it is a job id's, nor the reverse). Drawn apart from job ids.
function job.new_run_id(project_slug)
  return new_id(project_slug:sub(1, 40) .. "-run")
end

-- the grammar is C's (core/jobid.h), which every boundary checks
function job.is_valid_id(id)
  return (_navette.jobs.id_ok(id))
end

return job
