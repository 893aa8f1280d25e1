-- The runner without a server: what it asks of the profile's backend
-- (the fake of fake_backend.lua) and what it decides itself: the node of
-- each job, --node refused where the backend takes none, a taken id
-- redrawn with everything that follows from it (its launcher too), an
-- interrupted submission completed under its id, the checking pass's
-- specs sent only when the run would build the same ones, ids unique in a
-- run, URL lifetimes.
local t = test
local here = debug.getinfo(1, "S").source:match("^@(.*)/[^/]*$") or "."
local fixtures = assert(loadfile(here .. "/fixtures.lua"))()
local backends = require "navette.backends"
local runner = require "navette.runner"
local jobs = require "navette.jobview"

local function submits(fake)
  local out = {}
  for _, c in ipairs(fake.calls) do
    if c.what == "submit" then out[#out + 1] = c.x end
  end
  return out
end

t.test("a sweep is spread over the backend's nodes, --node wins",
       function()
  fixtures.fake_backend()
  local dir = fixtures.repo(t, {
    ["navette.lua"] = fixtures.project(t, "{ color = 'blue', nodes = "
                                          .. "{ 'n1', 'n2' } }"),
    ["three.lua"] = fixtures.recipe({ "a", "b", "c" }),
  })
  local run = runner.load(dir .. "/three.lua", { plan = true })
  local got = {}
  for k, j in ipairs(run.jobs) do
    got[k] = table.concat(runner.node_for(run, j, k) or {}, ",")
  end
  t.eq(table.concat(got, " "), "n1 n2 n1", "the profile's nodes in turn")
  run.nodes = { "gpu-[1-2]" }
  t.eq(runner.node_for(run, run.jobs[1], 1)[1], "gpu-[1-2]")
  run.nodes = nil
  run.jobs[1].resources = { nodes = 2 }
  t.eq(runner.node_for(run, run.jobs[1], 1), nil,
       "a job's own node count: the backend's description has it")

  local fake = fixtures.fake_backend()
  runner.run(dir .. "/three.lua", {})
  local nodes = {}
  for i, s in ipairs(submits(fake)) do nodes[i] = s.nodes[1] end
  t.eq(table.concat(nodes, " "), "n1 n2 n1", "what the backend was given")
  backends.unregister("fake")
end)

t.test("--node is refused for a backend without nodes", function()
  local dir = fixtures.repo(t, { ["one.lua"] = fixtures.recipe({ "x" }) })
  local run = runner.load(dir .. "/one.lua", { plan = true,
                                               nodes = { "n1" } })
  t.eq(run.profile.backend, "local")
  local e = t.raises(function() runner.submit(run) end)
  t.eq(e.code, "refused")
  t.eq(e.message, "--node applies to the kubernetes or slurm or slurm_ssh "
       .. "backend; "
       .. "profile 'local' is local")
end)

t.test("a taken id is redrawn with its prefix and launcher", function()
  local fake = fixtures.fake_backend()
  local taken
  local submit = fake.submit
  fake.submit = function(spec, launcher, ctx)
    -- another job holds the id the runner drew
    taken = spec.id
    assert(ctx.db:submit(spec.id, spec.project, spec.profile, "other",
                         "{}", "fake"))
    return submit(spec, launcher, ctx)
  end
  local dir = fixtures.repo(t, {
    ["navette.lua"] = fixtures.project(t),
    ["one.lua"] = fixtures.recipe({ "x" }),
  })
  local _, specs = runner.run(dir .. "/one.lua", {})
  local spec = specs[1]
  t.ok(spec.id ~= taken, "a new id")
  t.ok(spec.outputs.prefix:find(spec.id, 1, true), "its own prefix")
  t.ok(not spec.outputs.url:find(taken, 1, true), "not the other's")
  t.ok(spec.launcher:find(spec.id, 1, true), "a launcher for the new id")
  t.ok(not spec.launcher:find(taken, 1, true), "nothing of the taken id")
  t.eq(jobs.row(spec.id).spec.launcher, spec.launcher, "as recorded")
  t.eq(jobs.row(taken).name, "other", "the other job is left alone")
  backends.unregister("fake")
end)

t.test("an interrupted submission is completed under its id", function()
  local fake = fixtures.fake_backend()
  local dir = fixtures.repo(t, {
    ["navette.lua"] = fixtures.project(t),
    ["one.lua"] = fixtures.recipe({ "x" }),
  })
  fake.stop_after_record = true
  t.raises(function() runner.run(dir .. "/one.lua", {}) end,
           "the fake stopped after the row")
  local first = submits(fake)[1].spec.id
  local _, specs = runner.run(dir .. "/one.lua", {})
  local second = submits(fake)[2]
  t.eq(second.resumed and second.resumed.id, first,
       "the backend is given the interrupted row")
  t.eq(specs[1].id, first, "the same job, not a second one")
  t.eq(specs[1].adopted, true)
  -- complete now: a third run is a new job
  local _, again = runner.run(dir .. "/one.lua", {})
  t.ok(again[1].id ~= first, "a completed submission is never resumed")
  backends.unregister("fake")
end)

-- Counts job.new_id's draws until the returned function is called (it
-- gives the count); pick(n, id), when given, says what the n-th returns.
local function count_ids(pick)
  local job = require "navette.job"
  local real, n = job.new_id, 0
  job.new_id = function(...)
    n = n + 1
    local id = real(...)
    return pick and pick(n, id) or id
  end
  return function()
    job.new_id = real
    return n
  end
end

t.test("the run takes the checking pass's specs only when it would "
       .. "build the same ones", function()
  local fake = fixtures.fake_backend()
  local dir = fixtures.repo(t, {
    ["navette.lua"] = fixtures.project(t),
    ["two.lua"] = fixtures.recipe({ "a", "b" }),
    -- the same name, another command each time it is evaluated
    ["clock.lua"] = "local navette = require 'navette'\n"
      .. "navette.job { name = 'a', command = { 'echo', "
      .. "tostring(os.clock()) } }\n",
    -- an upload, which the checking pass only records
    ["put.lua"] = "local navette = require 'navette'\n"
      .. "navette.storage.put_string('note.txt', 'x')\n"
      .. "navette.job { name = 'a', command = { 'echo', 'a' } }\n",
  })
  local drawn = count_ids()
  local _, specs = runner.run(dir .. "/two.lua", {})
  t.eq(drawn(), 2, "one id per job: the checking pass's specs are sent")
  for i, s in ipairs(submits(fake)) do
    t.eq(s.spec.id, specs[i].id)
    t.ok(s.launcher:find(s.spec.id, 1, true), "a launcher for its id")
    t.eq(jobs.row(s.spec.id).spec.launcher, s.launcher, "as recorded")
  end
  -- declared otherwise the second time: what was checked is not what
  -- would run, so the run is refused, naming the field (issue 26, L7)
  local ok, err = pcall(runner.run, dir .. "/clock.lua", {})
  t.ok(not ok, "refused")
  t.eq(err.code, "refused")
  t.match(err.message, "declared job a with another command%.2 than when "
          .. "checked")
  t.eq(#submits(fake), 2, "nothing submitted")
  drawn = count_ids()
  runner.run(dir .. "/put.lua", {})
  t.eq(drawn(), 2, "an upload in the recipe: built again")
  backends.unregister("fake")
end)

t.test("the jobs of a run never share an id, though a draw repeats",
       function()
  fixtures.fake_backend()
  local dir = fixtures.repo(t, {
    ["navette.lua"] = fixtures.project(t),
    ["three.lua"] = fixtures.recipe({ "a", "b", "c" }),
  })
  local first
  local drawn = count_ids(function(n, id)
    first = first or id
    return n <= 3 and first or id -- the first three draws alike
  end)
  local run = runner.load(dir .. "/three.lua", { plan = true })
  local ok, specs = pcall(runner.submit, run)
  local n = drawn()
  t.ok(ok, specs)
  t.ok(n >= 5, "drawn again (" .. n .. " draws)")
  local seen = {}
  for _, s in ipairs(specs) do
    t.ok(not seen[s.id], "a new id for " .. s.name)
    seen[s.id] = true
  end
  backends.unregister("fake")
end)

t.test("a job's URLs live its time limit plus the margin, bounded",
       function()
  local profile = { name = "p", max_url_lifetime = 3600, url_margin = 600 }
  t.eq(runner.url_lifetime(profile, { name = "j", resources = {} }), 3600,
       "no time limit: the profile's maximum")
  t.eq(runner.url_lifetime(profile, { name = "j",
                                      resources = { time_limit = 60.5 } }),
       661)
  local e = t.raises(function()
    runner.url_lifetime(profile, { name = "j",
                                   resources = { time_limit = 3001 } })
  end, "exceeds the profile's max_url_lifetime")
  t.eq(e.code, "refused")
end)
