-- Slurm's job logic (navette.slurm.logic) driven through a fake session,
-- as a backend's wire hands it one, against a real job database: a
-- submission whose answer was lost, then adopted by the next run; an
-- array found only in part; `after` on the tasks of an array; a cancel
-- before Slurm gave an id; and the outcome of each way a Slurm job ends,
-- through the real state mapping and record rule.
local t = test
local logic = require "navette.slurm.logic"
local published = require "navette.published"
local jobdb, json, native = _navette.jobdb, _navette.json, _navette.slurm

local FINAL = { COMPLETED = true, FAILED = true, CANCELLED = true,
                TIMEOUT = true, NODE_FAIL = true, OUT_OF_MEMORY = true,
                PREEMPTED = true, BOOT_FAIL = true, DEADLINE = true }

-- A fake Slurm: its jobs, and sessions onto it. slurm.lose: the next
-- submission's answer is lost after Slurm took the job ("after") or
-- before it reached Slurm ("before"); slurm.refuse: the next is refused.
local function fake_slurm()
  local slurm = { jobs = {}, next_id = 100, submits = {}, cancels = {},
                  opened = 0, closed = 0 }
  local S = {}
  S.__index = S

  local function copy(job)
    local c = {}
    for k, v in pairs(job) do c[k] = v end
    return c
  end

  local function add(fields)
    local job = { state = "PENDING", reason = "Priority", nodes = "",
                  exit_code = 0, exit_signal = 0, restarts = 0,
                  requeue = false, time_limit_min = 10, start_time = 0,
                  end_time = 0 }
    for k, v in pairs(fields) do job[k] = v end
    slurm.jobs[#slurm.jobs + 1] = job
    return job
  end

  function S:submit(script, desc)
    assert(not self.is_closed, "submit on a closed session")
    slurm.submits[#slurm.submits + 1] = { script = script, desc = desc }
    if slurm.refuse then
      slurm.refuse = nil
      return nil, { code = "refused", message = "Invalid account" }, true
    end
    local lose = slurm.lose
    slurm.lose = nil
    if lose == "before" then
      return nil, { code = "io", message = "connection reset" }, false
    end
    local id = slurm.next_id
    if desc.array then
      local last = tonumber(desc.array:match("^0%-(%d+)$"))
      for k = 0, last do
        add { job_id = id + k, name = desc.name, array_job_id = id,
              array_task_id = k }
      end
      slurm.next_id = id + last + 1
    else
      add { job_id = id, name = desc.name }
      slurm.next_id = id + 1
    end
    if lose == "after" then
      return nil, { code = "io", message = "connection reset" }, false
    end
    return id
  end

  function S:find(q)
    assert(q.name, "find by name")
    local found, n
    for _, job in ipairs(slurm.jobs) do
      if job.name == q.name then found, n = job, (n or 0) + 1 end
    end
    if not found then
      return nil, { code = "not_found", message = "no job " .. q.name }
    end
    return copy(found), n
  end

  -- the job id, or the task of array id
  local function lookup(id, task)
    for _, job in ipairs(slurm.jobs) do
      if task and job.array_job_id == id and job.array_task_id == task
         or not task and job.job_id == id then
        return job
      end
    end
    return nil
  end

  function S:job(id, task)
    local job = lookup(id, task)
    if not job then return nil, { code = "not_found", message = "none" } end
    return copy(job)
  end

  function S:jobs()
    local out = {}
    for i, job in ipairs(slurm.jobs) do out[i] = copy(job) end
    return out
  end

  function S:cancel(id, task)
    slurm.cancels[#slurm.cancels + 1] = task and (id .. "_" .. task)
                                        or tostring(id)
    local job = lookup(id, task)
    if not job then return nil, { code = "not_found", message = "none" } end
    local was_done = FINAL[job.state] == true
    if not was_done then job.state, job.end_time = "CANCELLED", 1000 end
    return true, was_done
  end

  function S:close()
    if not self.is_closed then slurm.closed = slurm.closed + 1 end
    self.is_closed = true
  end

  function slurm.session()
    slurm.opened = slurm.opened + 1
    return setmetatable({}, S)
  end
  -- Slurm's job by its name (the newest), to be changed by a test
  function slurm.named(name)
    local found
    for _, job in ipairs(slurm.jobs) do
      if job.name == name then found = job end
    end
    return found
  end
  return slurm
end

-- The logic over a fake Slurm, as a wire would make it (the state
-- mapping and the description's check are the real ones).
local function setup()
  local slurm = fake_slurm()
  local L = logic.new {
    name = "slurm", service = "fake-slurm",
    where = function(cfg) return "fake Slurm at " .. cfg.endpoint end,
    session = function() return true, slurm.session() end,
    status_session = function() return slurm.session() end,
    check_desc = native.check_desc,
    map_state = native.map_state,
  }
  local db = assert(jobdb.open(t.tmpdir()))
  local audited = {}
  local ctx = {
    db = db, submissions = {},
    audit = function(spec) audited[#audited + 1] = spec.id end,
    audit_secret = function() end,
    audit_many = function(list)
      for _, a in ipairs(list) do audited[#audited + 1] = a[1].id end
    end,
  }
  return L, slurm, db, ctx, audited
end

local drawn = 0
-- A spec as the runner and prepare make it (a fresh id each time, as a
-- new run draws one).
local function spec_of(name, extra)
  drawn = drawn + 1
  local id = "demo-" .. drawn .. "-" .. string.format("%06x", drawn)
  local spec = { id = id, name = name, project = "demo",
                 profile = "cluster", commit = "c0ffee",
                 slurm = { endpoint = "https://slurm.test:6820",
                           user = "alice", working_directory = "/tmp",
                           environment = {} },
                 outputs = { url = "s3://bucket/demo/" .. id .. "/" } }
  for k, v in pairs(extra or {}) do spec[k] = v end
  return spec
end

local function row(db, id)
  local text = db:get(id)
  return text and json.decode(text)
end

t.test("an answer lost: the next submission adopts the job", function()
  local L, slurm, db, ctx, audited = setup()
  local first = spec_of("train")
  slurm.lose = "after"
  t.raises(function() L.submit(first, "#!/bin/sh\n", ctx) end,
           "got no usable answer")
  local r = row(db, first.id)
  t.eq(r.state, "queued")
  t.eq(r.remote_id, json.null, "no Slurm id: pending")
  t.eq(#slurm.jobs, 1, "Slurm took the job all the same")
  t.eq(#audited, 0, "nothing audited for a lost answer")

  -- the next run of the same job draws a new id
  local again = spec_of("train")
  local got = L.submit(again, "#!/bin/sh\n", ctx)
  t.eq(got.id, first.id, "the earlier submission, adopted")
  t.eq(got.adopted, true)
  t.eq(#slurm.submits, 1, "nothing submitted twice")
  r = row(db, first.id)
  t.eq(r.remote_id, "100")
  t.eq(r.phase, "accepted")
  t.eq(row(db, again.id), nil, "no row for the new id")
  t.eq(slurm.opened, slurm.closed, "every session closed")
end)

t.test("an answer lost before Slurm took it: failed, then sent", function()
  local L, slurm, db, ctx = setup()
  local first = spec_of("eval")
  slurm.lose = "before"
  t.raises(function() L.submit(first, "#!/bin/sh\n", ctx) end,
           "may or may not be in Slurm")
  local again = spec_of("eval")
  local got = L.submit(again, "#!/bin/sh\n", ctx)
  t.eq(got.id, again.id, "sent anew")
  t.eq(got.adopted, nil)
  local r = row(db, first.id)
  t.eq(r.state, "failed")
  t.eq(r.failure.reason, "the submission got no answer and Slurm has no "
       .. "job by this name")
  t.eq(row(db, again.id).remote_id, "100")
  t.eq(#slurm.jobs, 1)
end)

t.test("a refused submission fails its job", function()
  local L, slurm, db, ctx = setup()
  local spec = spec_of("train")
  slurm.refuse = true
  t.raises(function() L.submit(spec, "#!/bin/sh\n", ctx) end,
           "Slurm refused job 'train': Invalid account")
  local r = row(db, spec.id)
  t.eq(r.state, "failed")
  t.eq(r.failure.reason, "Slurm refused the job: Invalid account")
end)

-- The specs of a sweep of n tasks.
local function sweep(n)
  local specs = {}
  for k = 1, n do specs[k] = spec_of("part[k=" .. k .. "]") end
  return specs
end

-- A sweep of n tasks sent as one array whose answer was lost.
local function array_lost(L, slurm, db, ctx, n)
  local specs = sweep(n)
  slurm.lose = "after"
  t.raises(function() L.submit_array(specs, "#!/bin/sh\n", ctx) end,
           "the submission of the job array .* got no usable answer")
  for _, spec in ipairs(specs) do
    t.eq(row(db, spec.id).remote_id, json.null, spec.name .. ": pending")
  end
  return specs
end

t.test("an array's answer lost: the next run adopts each task", function()
  local L, slurm, db, ctx = setup()
  local specs = array_lost(L, slurm, db, ctx, 3)
  local same = sweep(3)
  local drawn_ids = {}
  for k = 1, 3 do same[k].name, drawn_ids[k] = specs[k].name, same[k].id end
  local got = L.submit_array(same, "#!/bin/sh\n", ctx)
  t.eq(#slurm.submits, 1, "nothing sent again")
  for k = 1, 3 do
    t.eq(got[k].id, specs[k].id, "task " .. k .. ": the earlier one")
    t.eq(got[k].adopted, true)
    local r = row(db, specs[k].id)
    t.eq(r.remote_id, "100_" .. (k - 1))
    t.eq(r.phase, "accepted")
    t.eq(row(db, drawn_ids[k]), nil, "no row for the new id")
  end
  t.eq(slurm.opened, slurm.closed, "every session closed")
end)

t.test("an array partly found is refused, saying so", function()
  local L, slurm, db, ctx = setup()
  local specs = array_lost(L, slurm, db, ctx, 3)
  -- the same sweep and one task more: three found, one not
  local grown = sweep(4)
  for k = 1, 3 do grown[k].name = specs[k].name end
  t.raises(function() L.submit_array(grown, "#!/bin/sh\n", ctx) end,
           "of the 4 jobs of sweep 'part%[k=1%]'%.%.%., 3 were found in "
           .. "Slurm from an earlier submission and the others not")
  t.eq(#slurm.submits, 1, "nothing sent")
  t.eq(row(db, grown[4].id), nil, "no task recorded")
  for k = 1, 3 do
    t.eq(row(db, specs[k].id).remote_id, "100_" .. (k - 1),
         "the found tasks get their Slurm ids, to be cancelled")
  end
end)

t.test("after on tasks: their Slurm ids, or the whole array", function()
  local L, slurm, db, ctx = setup()
  local specs = sweep(3)
  L.submit_array(specs, "#!/bin/sh\n", ctx)
  local desc = slurm.submits[1].desc
  t.eq(desc.array, "0-2")
  t.eq(desc.name, specs[1].id .. "-array")
  for k, spec in ipairs(specs) do
    t.eq(row(db, spec.id).remote_id, "100_" .. (k - 1))
    t.eq(row(db, spec.id).phase, "accepted")
  end
  t.eq(slurm.opened, slurm.closed, "the array's session closed")
  local prep = spec_of("prep")
  L.submit(prep, "#!/bin/sh\n", ctx)
  t.eq(row(db, prep.id).remote_id, "103")

  L.submit(spec_of("some", { after = { specs[1].id, specs[3].id } }),
           "#!/bin/sh\n", ctx)
  t.eq(slurm.submits[3].desc.after, "100_0,100_2", "tasks by their ids")
  L.submit(spec_of("all", { after = { prep.id, specs[2].id, specs[1].id,
                                       specs[3].id } }), "#!/bin/sh\n", ctx)
  t.eq(slurm.submits[4].desc.after, "103,100", "every task: the array")
  L.submit(spec_of("none"), "#!/bin/sh\n", ctx)
  t.eq(slurm.submits[5].desc.after, nil)

  -- a job it runs after has no Slurm id: stopped before it is sent
  local lost = spec_of("lost")
  slurm.lose = "before"
  t.raises(function() L.submit(lost, "#!/bin/sh\n", ctx) end)
  t.raises(function()
    L.submit(spec_of("late", { after = { lost.id } }), "#!/bin/sh\n", ctx)
  end, "runs after " .. lost.id:gsub("%p", "%%%0") .. ", which has no "
     .. "Slurm job id")
  t.eq(#slurm.submits, 6, "the late job not sent")
end)

t.test("a cancel before Slurm gave an id", function()
  local L, slurm, db, ctx = setup()
  -- Slurm has it: found by name, cancelled there
  local taken = spec_of("taken")
  slurm.lose = "after"
  t.raises(function() L.submit(taken, "#!/bin/sh\n", ctx) end)
  t.eq(L.cancel(row(db, taken.id), ctx), "cancelling")
  t.eq(table.concat(slurm.cancels, " "), "100", "cancelled in Slurm")
  t.eq(slurm.named(taken.id).state, "CANCELLED")
  local r = row(db, taken.id)
  t.eq(r.remote_id, "100")
  t.eq(r.state, "cancelled")

  -- Slurm has none: the row cancelled, nothing asked of Slurm
  local never = spec_of("never")
  slurm.lose = "before"
  t.raises(function() L.submit(never, "#!/bin/sh\n", ctx) end)
  t.eq(L.cancel(row(db, never.id), ctx), "cancelled")
  t.eq(#slurm.cancels, 1, "no cancel sent")
  r = row(db, never.id)
  t.eq(r.state, "cancelled")
  t.eq(r.failure.reason, "cancelled before Slurm answered")
  t.eq(slurm.opened, slurm.closed, "every session closed")
end)

-- A store holding objects by URL (published.s3_store's, for a spec).
local function fake_store(objects)
  return {
    read = function(_, url) return objects[url] end,
    list = function() return { objects = {} } end,
    delete = function() end,
    close = function() end,
  }
end

-- Submits a job, has Slurm end it as `job` says, with `record` (a run
-- record) in its store, and refreshes it; returns its row.
local function ended(job, record, extra)
  local L, slurm, db, ctx = setup()
  local spec = spec_of("train", extra)
  L.submit(spec, "#!/bin/sh\n", ctx)
  local objects = {}
  if record then
    objects[spec.outputs.url .. "navette-run.json"] = json.encode(record)
  end
  local saved = published.s3_store
  published.s3_store = function() return fake_store(objects) end
  for k, v in pairs(job) do slurm.named(spec.id)[k] = v end
  local ok, e = pcall(L.refresh, row(db, spec.id), ctx, true)
  published.s3_store = saved
  assert(ok, e)
  return row(db, spec.id)
end

local RAN = { nodes = "node-a", start_time = 900, end_time = 1000 }
local function ran(fields)
  local job = {}
  for k, v in pairs(RAN) do job[k] = v end
  for k, v in pairs(fields) do job[k] = v end
  return job
end

t.test("each final state", function()
  local ok_record = { state = "succeeded", exit_code = 0,
                      failure = json.null }
  local r = ended(ran { state = "COMPLETED" }, ok_record)
  t.eq(r.state, "succeeded")
  t.eq(r.exit_code, 0)
  t.eq(r.phase, "succeeded")

  r = ended(ran { state = "COMPLETED" })
  t.eq(r.state, "failed", "completed without a run record")
  t.eq(r.failure.reason, "the job ended but left no run record in storage")

  r = ended(ran { state = "FAILED", reason = "NonZeroExitCode",
                  exit_code = 3 },
            { state = "failed", exit_code = 3,
              failure = { phase = "running", reason = "exit status 3" } })
  t.eq(r.state, "failed")
  t.eq(r.exit_code, 3)
  t.eq(r.failure.reason, "exit status 3", "the record's word")

  r = ended(ran { state = "FAILED", reason = "NonZeroExitCode",
                  exit_code = 3 })
  t.eq(r.state, "failed", "no record: Slurm's word")
  t.eq(r.exit_code, 3)
  t.eq(r.failure.reason, "Slurm: FAILED (NonZeroExitCode)")
  t.match(r.failure.hint, "exited with code 3")

  r = ended(ran { state = "CANCELLED", reason = "None" })
  t.eq(r.state, "cancelled")

  r = ended(ran { state = "TIMEOUT", reason = "TimeLimit" }, ok_record)
  t.eq(r.state, "failed", "stopped from outside: not the record's")
  t.eq(r.failure.reason, "Slurm: TIMEOUT (TimeLimit)")
  t.match(r.failure.hint, "time limit %(10 min%)")

  r = ended(ran { state = "OUT_OF_MEMORY" })
  t.eq(r.state, "failed")
  t.match(r.failure.hint, "ran out of memory")

  for _, st in ipairs({ "NODE_FAIL", "PREEMPTED" }) do
    r = ended(ran { state = st })
    t.eq(r.state, "failed", st .. " without requeue")
    t.eq(r.failure.reason, "Slurm: " .. st .. " on node-a")
    r = ended(ran { state = st }, nil, { requeue = true })
    t.eq(r.state, "queued", st .. " with requeue: back in the queue")
    t.eq(r.failure, json.null)
  end

  r = ended({ state = "BOOT_FAIL", end_time = 1000 })
  t.eq(r.state, "failed")
  t.eq(r.failure.phase, "accepted", "it never ran")

  r = ended(ran { state = "DEADLINE" })
  t.eq(r.state, "failed")
  t.match(r.failure.hint, "deadline")

  r = ended(ran { state = "SPECIAL_EXIT", exit_code = 2 })
  t.eq(r.state, "failed")
  t.eq(r.exit_code, 2)
  t.match(r.failure.hint, "special exit")

  r = ended(ran { state = "REVOKED" })
  t.eq(r.state, "cancelled")

  r = ended(ran { state = "RUNNING" })
  t.eq(r.state, "running", "not over")
end)

-- A job Slurm forgot (ended longer ago than MinJobAge while the laptop
-- was closed): ended by its run record, or, with none and once its row
-- is old enough, failed saying where to look; never left running.
t.test("a job Slurm no longer knows", function()
  local observe = require "navette.slurm.observe"
  local function forgotten(record, after)
    local L, slurm, db, ctx = setup()
    local spec = spec_of("train")
    L.submit(spec, "#!/bin/sh\n", ctx)
    slurm.jobs = {}
    local objects = {}
    if record then
      objects[spec.outputs.url .. "navette-run.json"] = json.encode(record)
    end
    local saved, saved_after = published.s3_store, observe.forgotten_after
    published.s3_store = function() return fake_store(objects) end
    observe.forgotten_after = after or saved_after
    local ok, e = pcall(L.refresh, row(db, spec.id), ctx, true)
    published.s3_store, observe.forgotten_after = saved, saved_after
    assert(ok, e)
    t.eq(slurm.opened, slurm.closed, "every session closed")
    return row(db, spec.id)
  end
  local r = forgotten { state = "succeeded", exit_code = 0,
                        failure = json.null }
  t.eq(r.state, "succeeded", "its record says how it ended")
  t.eq(r.exit_code, 0)
  r = forgotten { state = "failed", exit_code = 4,
                  failure = { phase = "running", reason = "exit status 4" } }
  t.eq(r.state, "failed")
  t.eq(r.failure.reason, "exit status 4", "the record's word")
  r = forgotten(nil)
  t.eq(r.state, "queued", "no record, a row just made: not yet taken "
       .. "as forgotten")
  r = forgotten(nil, 0)
  t.eq(r.state, "failed", "no record: failed")
  t.match(r.failure.reason, "^Slurm: no longer knows job 100 ")
  t.match(r.failure.hint, "sacct %-j 100")
end)

-- A listing of many rows: one store for the walk (its connection serves
-- every row) and the wire told the walk's start and end (hold), so that
-- a wire keeping Slurm's answer a while keeps it for the whole walk.
t.test("a listing's walk: one store, one hold", function()
  local L, slurm, db, ctx = setup()
  local specs = {}
  for i = 1, 6 do
    specs[i] = spec_of("part", { outputs = {
      url = "s3://bucket/demo/part" .. i .. "/",
      s3 = { endpoint = "http://s3.test", region = "r" } } })
    L.submit(specs[i], "#!/bin/sh\n", ctx)
    slurm.named(specs[i].id).state = "RUNNING"
  end
  local opened, closed, holds = 0, 0, {}
  local saved = published.s3_store
  published.s3_store = function()
    opened = opened + 1
    local store = fake_store({})
    store.close = function() closed = closed + 1 end
    return store
  end
  -- the wire as logic.new got it: observe reads hold from that table
  L = logic.new {
    name = "slurm", service = "fake-slurm",
    where = function(cfg) return "fake Slurm at " .. cfg.endpoint end,
    session = function() return true, slurm.session() end,
    status_session = function() return slurm.session() end,
    check_desc = native.check_desc, map_state = native.map_state,
    hold = function(on) holds[#holds + 1] = on end,
  }
  local rows = json.decode(assert(db:list(100)))
  local ok, e = pcall(L.list_rows, rows, ctx)
  published.s3_store = saved
  assert(ok, e)
  t.eq(#rows, 6)
  for _, r in ipairs(rows) do t.eq(r.state, "running") end
  t.eq(opened, 1, "one store for the six rows")
  t.eq(closed, 1, "closed once, at the walk's end")
  t.eq(table.concat({ tostring(holds[1]), tostring(holds[2]) }, " "),
       "true false", "held for the walk, then let go")
  t.eq(#holds, 2)
  t.eq(ctx.walk, nil, "nothing of the walk left in ctx")
end)

t.test("a job cancelled by Slurm because one it runs after failed",
       function()
  local L, slurm, db, ctx = setup()
  local prep = spec_of("prep")
  L.submit(prep, "#!/bin/sh\n", ctx)
  local join = spec_of("join", { after = { prep.id } })
  L.submit(join, "#!/bin/sh\n", ctx)
  local p = slurm.named(prep.id)
  p.state, p.exit_code, p.nodes, p.end_time = "FAILED", 1, "node-a", 990
  local j = slurm.named(join.id)
  j.state, j.reason, j.end_time = "CANCELLED", "DependencyNeverSatisfied", 995
  L.refresh(row(db, join.id), ctx, true)
  local r = row(db, join.id)
  t.eq(r.state, "cancelled")
  t.eq(r.failure.reason, "it runs after prep (" .. prep.id .. "), which "
       .. "ended failed")
  t.eq(row(db, prep.id).state, "failed", "brought up to date first")
end)
