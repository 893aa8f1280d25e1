-- The backend contract (lua/navette/backends/init.lua) in use: a
-- throwaway backend, written as one file (fake_backend.lua) and
-- registered, is looked up by profile.backend and driven through the
-- runner (submit), the job views (status, log) and cancel, with no edit
-- anywhere else and no server.
local t = test
local json = _navette.json
local here = debug.getinfo(1, "S").source:match("^@(.*)/[^/]*$") or "."
local fixtures = assert(loadfile(here .. "/fixtures.lua"))()
local backends = require "navette.backends"
local runner = require "navette.runner"
local jobs = require "navette.jobview"

local function calls_of(fake, what)
  local out = {}
  for _, c in ipairs(fake.calls) do
    if c.what == what then out[#out + 1] = c.x end
  end
  return out
end

t.test("a registered backend is known by its name", function()
  fixtures.fake_backend()
  t.ok(backends.known("fake"), "fake is known")
  t.eq(backends.get("fake").name, "fake")
  local names = table.concat(backends.names(), ",")
  t.match(names, "^local,kubernetes,slurm,.*fake",
          "the folder's first: " .. names)
  t.eq(backends.get(nil).name, backends.DEFAULT, "no name: the default")
  local e = t.raises(function() backends.get("nowhere") end,
                     "no backend named 'nowhere'")
  t.match(e.hint, "fake", "the hint lists the backends")
  t.eq(backends.with("nodes"), "kubernetes or slurm or slurm_ssh or fake",
       "the backends that take --node")
end)

t.test("the folder's backends are its files, found in the library", function()
  local listed = _navette.core.library("navette.backends")
  table.sort(listed)
  t.eq(table.concat(listed, ","), "kubernetes,local,slurm,slurm_ssh",
       "the files of lua/navette/backends, not its init.lua")
  local top = table.concat(_navette.core.library("navette"), ",")
  t.match(top, "runner", "navette's own modules")
  t.ok(not top:find("local", 1, true), "not those of a subfolder: " .. top)
  t.eq(#_navette.core.library("navette.runne"), 0, "a prefix of a name is "
       .. "not a folder")
end)

t.test("every backend file has the contract's functions", function()
  for _, name in ipairs(backends.names()) do
    local b = backends.get(name)
    t.eq(b.name, name, "the file's name field")
    for _, fn in ipairs({ "submit", "cancel", "log_chunk" }) do
      t.eq(type(b[fn]), "function", name .. "." .. fn)
    end
    if b.profile_keys then
      t.eq(type(b.validate), "function", name .. ".validate")
    end
  end
end)

t.test("run, status, log and cancel go through the backend", function()
  local fake = fixtures.fake_backend()
  local dir = fixtures.repo(t, {
    ["navette.lua"] = fixtures.project(t),
    ["two.lua"] = fixtures.recipe({ "first", "second" }),
  })
  local run, specs = runner.run(dir .. "/two.lua", {})
  t.eq(run.profile.backend, "fake")
  t.eq(#specs, 2, "two jobs submitted")
  local submits = calls_of(fake, "submit")
  t.eq(#submits, 2, "the checking pass submitted nothing")
  for i, s in ipairs(submits) do
    t.eq(s.spec.backend, "fake")
    t.eq(s.spec.fake.color, "blue", "prepare added the profile's settings")
    t.eq(type(s.launcher), "string")
    t.eq(s.spec.launcher, s.launcher, "the launcher is in the spec")
    t.ok(s.launcher:find(s.spec.id, 1, true), "rendered for its id")
    t.eq(specs[i].id, s.spec.id)
  end

  local id = specs[1].id
  local row = jobs.row(id)
  t.eq(row.backend, "fake", "the row is the backend's")
  t.eq(row.spec.launcher, submits[1].launcher, "the row keeps the launcher")

  local v = jobs.get(id)
  t.eq(v.backend, "fake")
  t.eq(v.state, "running", "the backend's refresh is what status shows")
  t.eq(v.remote_id, "fake-" .. id:sub(-6))
  t.eq(v.fake.step, "started", "the backend's own fields are in the view")
  v = jobs.get(id)
  t.eq(v.state, "succeeded")
  t.eq(v.phases[#v.phases].phase, "succeeded")
  t.eq(v.fake.step, "ended")
  t.eq(backends.get(v.backend).describe(v).line, "backend fake · ended")
  t.eq(jobs.log_chunk(v, 0), "the fake log of " .. id .. "\n")
  t.eq(jobs.log_chunk(v, 4), "fake log of " .. id .. "\n")

  local other = specs[2].id
  t.eq(jobs.cancel(other), "cancelled")
  t.eq(jobs.get(other).state, "cancelled")
  t.eq(#calls_of(fake, "cancel"), 1)
  t.eq(jobs.cancel(id), "succeeded", "an ended job is the backend's to say")

  local listed = {}
  for _, r in ipairs(jobs.list(10)) do listed[r.id] = r end
  t.ok(listed[id] and listed[other], "both are listed")
  backends.unregister("fake")
end)

t.test("the audit log records each submission with the backend's word",
       function()
  fixtures.fake_backend()
  local dir = fixtures.repo(t, {
    ["navette.lua"] = fixtures.project(t),
    ["one.lua"] = fixtures.recipe({ "audited" }),
  })
  local _, specs = runner.run(dir .. "/one.lua", {})
  local lines = _navette.sys.read_file(_navette.core.home()
                                      .. "/audit/audit.jsonl")
                or ""
  local found
  for line in lines:gmatch("[^\n]+") do
    local ok, e = pcall(json.decode, line)
    if ok and type(e) == "table" and e.job == specs[1].id
       and e.action == "job.submit" then
      found = e
    end
  end
  t.ok(found, "a job.submit line for " .. specs[1].id)
  t.eq(found.detail, "fake")
  backends.unregister("fake")
end)

t.test("a profile's settings are its backend's to check", function()
  fixtures.fake_backend()
  local project = require "navette.project"
  local function load(settings)
    local dir = t.tmpdir()
    assert(_navette.sys.write_file(dir .. "/navette.lua",
                                   fixtures.project(t, settings)))
    return pcall(project.load, dir, dir)
  end
  local ok, p = load("{ color = 'red', nodes = { 'n1' } }")
  t.ok(ok, type(p) == "table" and tostring(p.message) or "loaded")
  t.eq(p.profiles.fake.fake.color, "red", "what validate returned")
  local err
  ok, err = load("{ colour = 'red' }")
  t.ok(not ok)
  t.match(err.message, "fake: unknown key 'colour'")
  ok, err = load("5")
  t.ok(not ok)
  t.match(err.message, "a fake profile needs")
  -- another backend's profile may not hold them
  local dir = t.tmpdir()
  assert(_navette.sys.write_file(dir .. "/navette.lua", [[return {
    profiles = { p = { backend = "local", fake = { color = "red" } } } }]]))
  ok, err = pcall(project.load, dir, dir)
  t.ok(not ok)
  t.match(err.message, "profile 'p': fake settings need backend = \"fake\"")
  backends.unregister("fake")
end)

t.test("a spec gets its backend's launch values, its own copy", function()
  local backend = { launch = { scheduler = "X", array_index = "X_INDEX",
                               requeue = { "x-requeue", "$1" } } }
  local spec = {}
  backends.give_launch(backend, spec)
  t.eq(spec.launch.scheduler, "X")
  t.eq(spec.launch.array_index, "X_INDEX")
  t.eq(spec.launch.requeue[1], "x-requeue", "the commands too")
  t.ok(spec.launch ~= backend.launch, "a copy of the table")
  t.ok(spec.launch.requeue ~= backend.launch.requeue, "and of its lists")
  spec.launch.requeue[1] = "changed"
  t.eq(backend.launch.requeue[1], "x-requeue", "the backend's stay")
  -- a recorded spec keeps the values it was accepted with (migrate gives
  -- them only to one recorded before spec.launch)
  local recorded = { launch = { scheduler = "old" } }
  backends.give_launch(backend, recorded)
  t.eq(recorded.launch.scheduler, "old")
  local plain = {}
  backends.give_launch({}, plain)
  t.eq(plain.launch, nil, "none for a backend without launch")
end)

t.test("slurm's launch values are the contract's, with requeue", function()
  local slurm = backends.get("slurm")
  t.eq(slurm.launch.array_index, "SLURM_ARRAY_TASK_ID")
  t.eq(slurm.launch.attempt, "SLURM_RESTART_COUNT")
  t.eq(type(slurm.launch.requeue), "table")
end)
