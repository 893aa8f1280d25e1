-- A job's content key (navette.reuse.key, issue 32): its canonical
-- encoding is Python's json.dumps(parts, sort_keys=True,
-- separators=(",", ":"), ensure_ascii=False), so that any system and any
-- backend give one job the same key. The expected text and hash below
-- were computed by Python from the same parts, not by this code.
local t = test
local json = _navette.json
local key = require "navette.reuse.key"

local function spec()
  return {
    name = "train[lr=0.01]",
    project = "team", profile = "hpc", backend = "slurm", id = "team-x1",
    submitted_at = "2026-12-07T05:00:00Z",
    image = "reg.example.com/train@sha256:" .. ("ab"):rep(32),
    inputs = json.array({
      { name = "data", url = "s3://b/d.csv", sha256 = ("1"):rep(64) },
      { name = "model", from = "team-x0", output = "m.pt",
        record = "s3://b/team/team-x0/navette-run.json" } }),
    command = json.array({ "python3", "train.py", "--lr", "0.01" }),
    env = { EPOCHS = "3", NOTE = "é\n\t\"q\"\\\1\127" },
    params = { lr = "0.01" },
    success = { exit_codes = json.array({ 0 }),
                outputs = json.array({ "model.pt" }) },
    failure_condition = { log_patterns = json.array({}) },
    resources = { gpus = 2, cpus = 8, time_limit = 3600,
                  gres = "gpu:a100:2" },
  }
end

local CODE = { tree = ("c"):rep(40) }
local LOCKS = { ["requirements.txt"] = ("d"):rep(40) }
local PRODUCED = { model = ("2"):rep(64) }

local function key_of(s, code, locks, produced)
  return key.of(assert(key.parts(s, code or CODE, locks or LOCKS,
                                 produced or PRODUCED)))
end

t.test("fixed parts: Python's canonical text and its sha256", function()
  local parts = assert(key.parts(spec(), CODE, LOCKS, PRODUCED))
  local want = '{"code":{"tree":"' .. ("c"):rep(40) .. '"}'
    .. ',"command":["python3","train.py","--lr","0.01"],'
    .. '"env":{"EPOCHS":"3",'
    .. '"NOTE":"é\\n\\t\\"q\\"\\\\\\u0001\127"},'
    .. '"failure":{"log_patterns":[]},'
    .. '"image":"reg.example.com/train@sha256:' .. ("ab"):rep(32) .. '",'
    .. '"inputs":{"data":"' .. ("1"):rep(64) .. '",'
    .. '"model":"' .. ("2"):rep(64) .. '"},'
    .. '"locks":{"requirements.txt":"' .. ("d"):rep(40) .. '"}'
    .. ',"name":"train[lr=0.01]"'
    .. ',"params":{"lr":"0.01"},"project":"team",'
    .. '"resources":{"gpus":2,"gres":"gpu:a100:2"},'
    .. '"success":{"exit_codes":[0],"outputs":["model.pt"]},'
    .. '"v":1}'
  t.eq(key.canonical(parts), want)
  t.eq(key.of(parts), "sha256:e131959355f68f68fc1d031bf90f0218"
                      .. "07a38b9f0a477dc366747a88b956f288")
end)

t.test("what does not decide the outputs is not in the key", function()
  local base = key_of(spec())
  for _, change in ipairs({
    function(s) s.profile, s.backend = "cluster", "kubernetes" end,
    function(s) s.id, s.submitted_at = "team-y9", "2027-01-01T00:00:00Z" end,
    function(s) s.resources.cpus, s.resources.time_limit = 64, 60 end,
    function(s) s.resources.memory, s.resources.partition = "8G", "gpu" end,
    function(s) s.inputs[1].url = "s3://elsewhere/same-bytes.csv" end,
  }) do
    local s = spec()
    change(s)
    t.eq(key_of(s), base)
  end
end)

t.test("what decides the outputs changes the key", function()
  local base = key_of(spec())
  local seen = { [base] = true }
  for i, change in ipairs({
    function(s) s.env.EPOCHS = "5" end,
    function(s) s.params.lr = "0.02" end,
    function(s) s.inputs[1].sha256 = ("3"):rep(64) end,
    function(s) s.resources.gres = "gpu:h100:2" end,
    function(s) s.resources.gpus = 4 end,
    function(s) s.image = s.image:gsub("ab", "cd") end,
    function(s) s.command[3] = "--lr=0.01" end,
    function(s) s.success.outputs[2] = "log.txt" end,
    function(s) s.failure_condition.log_patterns[1] = "NaN" end,
  }) do
    local s = spec()
    change(s)
    local k = key_of(s)
    t.ok(not seen[k], "change " .. i .. " gives a key of its own")
    seen[k] = true
  end
  t.ok(key_of(spec(), { tree = ("e"):rep(40) }) ~= base, "the code")
  t.ok(key_of(spec(), { paths = { ["src/"] = ("c"):rep(40) } }) ~= base,
       "code.paths")
  t.ok(key_of(spec(), CODE, {}) ~= base, "a lock file")
  t.ok(key_of(spec(), CODE, LOCKS, { model = ("4"):rep(64) }) ~= base,
       "a producer's output")
end)

t.test("a job on the host: keyed by its profile's machines", function()
  local function host(profile, backend)
    local s = spec()
    s.image, s.profile, s.backend = "host", profile, backend
    return s
  end
  local parts = assert(key.parts(host("local", "local"), CODE, LOCKS,
                                 PRODUCED))
  t.eq(key.canonical(parts.host), '{"backend":"local","profile":"local"}')
  t.ok(key_of(host("local", "local")) ~= key_of(host("hpc", "slurm")),
       "another profile's machines")
  t.eq(key_of(host("hpc", "slurm")), key_of(host("hpc", "slurm")))
  t.eq(assert(key.parts(spec(), CODE, LOCKS, PRODUCED)).host, nil)
end)

t.test("an input another job has not produced yet: no key", function()
  local parts, missing = key.parts(spec(), CODE, LOCKS, {})
  t.eq(missing, "model")
  -- (what the key waits for, completed once the producer has ended)
  t.eq(parts.inputs.model.pending, "team-x0")
  t.eq(parts.inputs.model.output, "m.pt")
  t.eq(parts.inputs.model.record, "s3://b/team/team-x0/navette-run.json")
  -- completed from the producer's record: the key it would have had
  local asked
  t.eq(key.complete(parts, function(p)
    asked = p.pending .. " " .. p.output
    return PRODUCED.model
  end), key_of(spec(), CODE, LOCKS, PRODUCED))
  t.eq(asked, "team-x0 m.pt")
  t.eq(key.complete(parts, function() return nil end), nil)
end)

t.test("the encoding leaves nothing to choice", function()
  t.eq(key.canonical({ b = 1, a = json.array({}), c = {}, d = false }),
       '{"a":[],"b":1,"c":{},"d":false}')
  t.eq(key.canonical({ "x", 2, { z = json.null } }), '["x",2,{"z":null}]')
  t.raises(function() key.canonical({ x = 0.5 }) end, "not an integer")
  t.raises(function() key.canonical({ [true] = 1 }) end, "not text")
end)

-- The canonical text is written in C (_navette.json.canonical); this is
-- the reference it must equal, byte for byte, as Lua code (the encoder
-- navette used before): the same keys whatever the release.
local ESC = { ['"'] = '\\"', ["\\"] = "\\\\", ["\b"] = "\\b",
              ["\f"] = "\\f", ["\n"] = "\\n", ["\r"] = "\\r",
              ["\t"] = "\\t" }
local function ref_string(s)
  return '"' .. s:gsub('[%c"\\]', function(c)
    if c == "\127" then return c end
    return ESC[c] or string.format("\\u%04x", c:byte())
  end) .. '"'
end
local function ref(v)
  local tv = type(v)
  if tv == "string" then return ref_string(v) end
  if tv == "boolean" then return v and "true" or "false" end
  if tv == "number" then return string.format("%d", v) end
  if v == nil or v == json.null then return "null" end
  local n = 0
  for k in pairs(v) do
    if math.type(k) ~= "integer" or k < 1 then n = -1; break end
    n = n + 1
  end
  if (getmetatable(v) ~= nil and next(v) == nil)
     or (next(v) ~= nil and n == #v) then
    local out = {}
    for i, x in ipairs(v) do out[i] = ref(x) end
    return "[" .. table.concat(out, ",") .. "]"
  end
  local keys = {}
  for k in pairs(v) do keys[#keys + 1] = k end
  table.sort(keys)
  local out = {}
  for i, k in ipairs(keys) do out[i] = ref_string(k) .. ":" .. ref(v[k]) end
  return "{" .. table.concat(out, ",") .. "}"
end

t.test("the canonical text is the reference encoder's, byte for byte",
       function()
  local values = {
    { name = "train[lr=0.1]", params = { lr = "0.10000000000000001" },
      env = { EPOCHS = "3", PATH = "/usr/bin" }, code = { tree = "abc" },
      command = { "sh", "-c", "echo \"$X\" \\ \t\n" },
      inputs = { data = "sha256:00ff" }, locks = json.array({}),
      success = { exit_codes = { 0 }, outputs = json.array({}) },
      resources = { gpus = 2, gres = "gpu:a100:2" } },
    { "\0\1\31\127é✓", -9007199254740993, math.maxinteger,
      math.mininteger, 0, true, false, json.null },
    { [""] = 1, a = { b = { c = { d = {} } } }, ["a\0b"] = 2, ["ab"] = 3,
      ["B"] = 4, ["é"] = 5, ["~"] = 6 },
    setmetatable({}, {}), {}, "",
  }
  for i, v in ipairs(values) do
    t.eq(key.canonical(v), ref(v), "value " .. i)
  end
end)
