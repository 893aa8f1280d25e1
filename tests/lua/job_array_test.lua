-- Job arrays without a server: which jobs of a run go to a backend as one
-- array (runner.array_group: the rest of a sweep, in chunks, never when
-- the profile spreads the jobs over nodes), what plan says of it, and the
-- one launcher of an array's tasks (host/jobs/launcher.c): each task's
-- own id, parameters, prefix, record head and signed form, chosen by
-- $SLURM_ARRAY_TASK_ID, and a task that differs otherwise refused.
local t = test
local here = debug.getinfo(1, "S").source:match("^@(.*)/[^/]*$") or "."
local fixtures = assert(loadfile(here .. "/fixtures.lua"))()
local backends = require "navette.backends"
local runner = require "navette.runner"
local json = _navette.json

local SWEEP = [[
local navette = require "navette"
navette.job { name = "prep", command = { "true" } }
local parts = navette.sweep { job = { name = "part", command = { "true" } },
                              matrix = { a = { 1, 2 }, b = { "x", "y", "z" } } }
navette.job { name = "join", after = { parts }, command = { "true" } }
]]

-- The fake backend, taking arrays (its submit_array is never reached
-- here: a plan stops before it).
local function array_backend()
  local fake = fixtures.fake_backend()
  fake.submit_array = function() error("not in a plan") end
  return fake
end

local function load_plan(settings)
  local dir = fixtures.repo(t, {
    ["navette.lua"] = fixtures.project(t, settings),
    ["sweep.lua"] = SWEEP,
  })
  return runner.load(dir .. "/sweep.lua", { plan = true })
end

t.test("a sweep's jobs form one group; plain jobs none", function()
  local fake = array_backend()
  local run = load_plan()
  t.eq(runner.array_group(run, 1, fake), nil, "a plain job")
  local group = runner.array_group(run, 2, fake)
  t.eq(#group, 6)
  t.eq(group[1].name, "part[a=1,b=x]")
  t.eq(group[6].name, "part[a=2,b=z]")
  t.eq(runner.array_group(run, 8, fake), nil, "the job after the sweep")
  fake.submit_array = nil
  local none, why = runner.array_group(run, 2, fake)
  t.eq(none, nil, "a backend without arrays")
  t.eq(why, nil)
  backends.unregister("fake")
end)

t.test("a sweep larger than an array goes in chunks", function()
  local fake = array_backend()
  local run = load_plan()
  local max = require("navette.run.submit").ARRAY_MAX
  require("navette.run.submit").ARRAY_MAX = 4
  local first = runner.array_group(run, 2, fake)
  local rest = runner.array_group(run, 6, fake)
  require("navette.run.submit").ARRAY_MAX = max
  t.eq(#first, 4)
  t.eq(#rest, 2)
  t.eq(rest[1].name, "part[a=2,b=y]")
  backends.unregister("fake")
end)

t.test("a node per job: no array, and plan says why", function()
  local fake = array_backend()
  local run = load_plan("{ color = 'blue', nodes = { 'gpu-a', 'gpu-b' } }")
  local group, why = runner.array_group(run, 2, fake)
  t.eq(group, nil)
  t.match(why, "one node per job")
  local before = #_navette.core.plan()
  local specs = runner.submit(run)
  t.eq(#specs, 8)
  local notes = {}
  for i, a in ipairs(_navette.core.plan()) do
    if i > before and a.action == "note" or a.action == "submit-array" then
      notes[#notes + 1] = a.action .. ": " .. a.detail
    end
  end
  t.eq(#notes, 1)
  t.match(notes[1], "^note: sweep part: one submission per job, not one "
          .. "job array %(the profile's nodes are taken in turn")
  -- --node pins every job to one node: one array again
  run.nodes = { "gpu-a" }
  t.eq(#runner.array_group(run, 2, fake), 6)
  backends.unregister("fake")
end)

t.test("plan of an array: each task, then the one request", function()
  local fake = array_backend()
  local run = load_plan()
  local before = #_navette.core.plan()
  local specs = runner.submit(run)
  t.eq(#specs, 8)
  local lines = {}
  for i, a in ipairs(_navette.core.plan()) do
    if i > before and a.primitive == "jobs" then
      lines[#lines + 1] = a.action .. ": " .. a.detail
    end
  end
  t.match(lines[2], "^submit: .* %(part%[a=1,b=x%]%) on fake, task 0 of "
          .. "the job array$")
  t.match(lines[7], "task 5 of the job array$")
  t.eq(lines[8], "submit-array: 6 jobs of sweep part as one job array "
       .. "(one request)")
  t.match(specs[3].launcher, "NAVETTE_PARAM_B='y'", "each task's own "
          .. "launcher is shown")
  local _ = fake
  backends.unregister("fake")
end)

-- ---- the array's launcher ---------------------------------------------------

local function task_spec(k, params)
  local id = "demo-20261204-101010-abcdef0-00000" .. k
  return {
    id = id, name = "part[n=" .. k .. "]", project = "demo",
    profile = "p", backend = "slurm", commit = string.rep("a", 40),
    image = "host", command = { "sh", "-c", "true" }, params = params,
    inputs = json.array({}), success = { exit_codes = { 0 } },
    submitted_at = "2026-12-04T10:10:1" .. k .. "Z",
    -- (as the Slurm backend's prepare sets it)
    launch = { scheduler = "Slurm", array_index = "SLURM_ARRAY_TASK_ID" },
    transfer = {
      prefix = "root/demo/" .. id .. "/", output_url = "s3://b/demo/" .. id
      .. "/", code = { url = "http://s3/code?sig=1", sha256 = "ab" },
      inputs = json.array({}),
      post = { url = "http://s3/b", fields = {
        policy = "policy-of-" .. k, ["x-amz-signature"] = "sig-" .. k,
        ["x-amz-algorithm"] = "AWS4-HMAC-SHA256" } },
    },
  }
end

-- Runs the array's script up to its record head, as task k, and returns
-- what the task would hold: {id, prefix, param, signature, head}.
local function as_task(script, k)
  local path = t.tmpdir() .. "/head.sh"
  local head = script:match("^(.-\nNAVETTE_RECORD_HEAD=[^\n]*\n)")
  t.ok(head, "the script sets the record head after the case")
  assert(_navette.sys.write_file(path, head .. [[
printf '%s\n%s\n%s\n%s\n%s}\n' "$NAVETTE_JOB_ID" "$NAVETTE_PREFIX" \
  "${NAVETTE_PARAM_N:-}" "$nv_post_x_amz_signature" "$NAVETTE_RECORD_HEAD"
]]))
  local p = assert(io.popen("SLURM_ARRAY_TASK_ID=" .. k .. " sh '" .. path
                            .. "' 2>&1"))
  local out = p:read("a")
  p:close()
  local id, prefix, param, sig, record = out:match(
    "^([^\n]*)\n([^\n]*)\n([^\n]*)\n([^\n]*)\n([^\n]*)\n$")
  return { id = id, prefix = prefix, param = param, signature = sig,
           head = record and json.decode(record), out = out }
end

t.test("one launcher: each task's own values by its index", function()
  local specs = { task_spec(0, { n = "0" }), task_spec(1, { n = "1" }),
                  task_spec(2, { n = "2" }) }
  local script = assert(_navette.jobs.array_launcher(
    json.encode(json.array(specs))))
  t.match(script, "^#!/bin/sh\n# navette launcher for a job array of 3 "
          .. "tasks")
  local _, cases = script:gsub("\n%d+%)\n", "")
  t.eq(cases, 3, "one branch per task")
  local _, bodies = script:gsub("the fixed part of a node launcher", "")
  t.eq(bodies, 1, "the fixed part once")
  t.match(script, "%-%-form%-string 'x%-amz%-algorithm=''AWS4%-HMAC%-SHA256'",
          "a field alike in every task is written once")
  local task = as_task(script, 1)
  t.eq(task.id, specs[2].id, task.out)
  t.eq(task.prefix, "root/demo/" .. specs[2].id .. "/")
  t.eq(task.param, "1")
  t.eq(task.signature, "sig-1")
  t.eq(task.head.id, specs[2].id, "the record head is the task's")
  t.eq(task.head.name, "part[n=1]")
  t.eq(task.head.params.n, "1")
  t.eq(task.head.submitted_at, "2026-12-04T10:10:11Z")
  t.eq(task.head.commit, string.rep("a", 40), "shared fields are in it")
  t.eq(task.head.navette_run_record, 1)
  t.eq(as_task(script, 2).head.id, specs[3].id)
  local none = as_task(script, 3)
  t.match(none.out, "this job array has no task '3'")
end)

t.test("a task that differs in more than its parameters is refused",
       function()
  local specs = { task_spec(0, { n = "0" }), task_spec(1, { n = "1" }) }
  specs[2].command = { "sh", "-c", "false" }
  local script, err = _navette.jobs.array_launcher(
    json.encode(json.array(specs)))
  t.eq(script, nil)
  t.match(err.message, "differs from the array's first task in command")
  specs[2] = task_spec(1, { n = "1" })
  specs[2].transfer.post.url = "http://other/b"
  script, err = _navette.jobs.array_launcher(json.encode(json.array(specs)))
  t.eq(script, nil)
  t.match(err.message, "publishes otherwise")
  specs[2] = task_spec(1, { n = "1" })
  specs[2].transfer = nil
  script, err = _navette.jobs.array_launcher(json.encode(json.array(specs)))
  t.eq(script, nil)
  t.match(err.message, "publish to S3")
end)

t.test("a task that retries reads its own attempts list", function()
  local specs = {}
  for k = 0, 2 do
    specs[k + 1] = task_spec(k, { n = tostring(k) })
    specs[k + 1].retries = { max = 2, on = { "exit:3" } }
    specs[k + 1].transfer.attempts = { get = "http://s3/attempts-of-" .. k }
  end
  local script = assert(_navette.jobs.array_launcher(
    json.encode(json.array(specs))))
  local path = t.tmpdir() .. "/attempts.sh"
  local head = script:match("^(.-\nNAVETTE_RECORD_HEAD=[^\n]*\n)")
  assert(_navette.sys.write_file(path, head
    .. 'printf "%s\\n" "${NAVETTE_ATTEMPTS_GET:-none}"\n'))
  for k = 0, 2 do
    local p = assert(io.popen("SLURM_ARRAY_TASK_ID=" .. k .. " sh '" .. path
                              .. "' 2>&1"))
    t.eq(p:read("a"), "http://s3/attempts-of-" .. k .. "\n",
         "task " .. k .. "'s own list")
    p:close()
  end
  t.match(script, "NAVETTE_RETRY_MAX='?2'?", "the most attempts, shared")
end)
