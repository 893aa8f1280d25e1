-- navette.task: the declaration's checks (each message naming the key
-- and the recipe's line), the tasks kept per evaluated run, the body
-- called by navette (its result, its failure, the sealed ctx, the time
-- bound, no job declared from a body), the schedule natives and the
-- project file's `maintenance` key.
local t = test
local here = debug.getinfo(1, "S").source:match("^@(.*)/[^/]*$") or "."
local fixtures = assert(loadfile(here .. "/fixtures.lua"))()
local runner = require "navette.runner"
local task = require "navette.task"
local core, native = _navette.core, _navette.tasks

local PROJECT = [[return { name = "demo" }]]

-- Evaluates source as recipe r.lua of a fresh repository (plan mode);
-- returns the run and its tasks.
local function load(source)
  local dir = fixtures.repo(t, { ["navette.lua"] = PROJECT,
                                 ["r.lua"] = source })
  local run = runner.load(dir .. "/r.lua", { plan = true })
  return run, task.of(run), dir
end

local function refused(source, pattern)
  t.raises(function() load(source) end, pattern)
end

local HEAD = "local navette = require 'navette'\n"

t.test("a recipe's tasks are kept with its run, in order", function()
  local run, tasks = load(HEAD .. [[
local a = navette.task { name = "rotate", schedule = "daily 03:00",
                         run = function(ctx) return "rotated" end }
navette.task { name = "archive", schedule = "every 24h",
               run = function(ctx) end }
navette.task { name = "retest", schedule = "weekly mon 04:00",
               run = function(ctx) end }
assert(a.name == "rotate" and a.schedule == "daily 03:00")
assert(a.run == nil, "the body is not handed back")
assert(not pcall(function() a.name = "x" end), "sealed")
]])
  t.eq(#tasks, 3)
  t.eq(tasks[1].name, "rotate")
  t.eq(tasks[2].schedule, "every 1d", "written canonically")
  t.eq(tasks[3].schedule_info.kind, "weekly")
  t.eq(tasks[3].schedule_info.weekday, 1)
  t.match(tasks[1].declared_at, "r%.lua:2$")
  -- another evaluation has its own
  local _, again = load(HEAD)
  t.eq(#again, 0)
  t.eq(#task.of(run), 3)
end)

t.test("each mistake is a recipe error naming the key and the line",
       function()
  refused(HEAD .. "\nnavette.task { name = 'x', schedul = 'daily 03:00', "
          .. "run = print }", "^[^\n]*r%.lua:3: navette%.task: unknown key "
          .. "'schedul' %(did you mean 'schedule'%?%)")
  refused(HEAD .. "navette.task { schedule = 'daily 03:00', run = print }",
          "r%.lua:2: navette%.task: 'name' is required")
  local e = t.raises(function()
    load(HEAD .. "navette.task { name = 'x', run = print }")
  end, "r%.lua:2: navette%.task: 'schedule' is required")
  t.match(e.hint, "schedule = \"daily 03:00\"")
  t.eq(e.code, "recipe")
  refused(HEAD .. "navette.task { name = 'x', schedule = 'daily 03:00' }",
          "'run' is required")
  refused(HEAD .. "navette.task { name = 'x', schedule = 'daily 03:00', "
          .. "run = 'echo hi' }", "'run' must be a function, got a string")
  refused(HEAD .. "navette.task { name = 5, schedule = 'daily 03:00', "
          .. "run = print }", "'name' must be a string, got a number")
  refused(HEAD .. "navette.task { name = 'a b', schedule = 'daily 03:00', "
          .. "run = print }", "'name' = 'a b': use letters, digits")
  refused(HEAD .. "navette.task { name = '" .. string.rep("n", 64)
          .. "', schedule = 'daily 03:00', run = print }", "at most 63")
  refused(HEAD .. "navette.task 'rotate'", "expects a table")
  refused(HEAD .. "navette.task { [1] = 2, name = 'x', schedule = 'every "
          .. "6h', run = print }", "keys must be names")
  for bad, why in pairs({
    ["dayly 03:00"] = "unknown form",
    ["daily 3:00"] = "HH:MM",
    ["daily 24:00"] = "HH:MM",
    ["weekly monday 04:00"] = "the day must be",
    ["every 6"] = "needs a unit",
    ["every 0h"] = "from 1m to 366d",
    ["every 400d"] = "from 1m to 366d",
  }) do
    e = t.raises(function()
      load(HEAD .. "\n\nnavette.task { name = 'x', schedule = '" .. bad
           .. "', run = print }")
    end, "r%.lua:4: navette%.task: 'schedule' = \"" .. bad:gsub("%p", "%%%0")
      .. "\": .*" .. why)
    t.match(e.hint, "local time", bad)
  end
  refused(HEAD .. "navette.task { name = 'x', schedule = 'every 6h', "
          .. "run = print }\nnavette.task { name = 'x', schedule = "
          .. "'daily 01:00', run = print }", "r%.lua:3: navette%.task: a "
          .. "task named 'x' is already declared at [^\n]*r%.lua:2")
end)

t.test("the public API holds task, sealed", function()
  refused(HEAD .. "navette.task = function() end", "sealed")
  refused(HEAD .. "rawset(navette, 'task', print)", "sealed")
end)

t.test("outside a run, navette.task says where it belongs", function()
  t.raises(function()
    task.declare({ name = "x", schedule = "every 6h", run = print })
  end, "navette%.task was called outside a recipe run")
end)

t.test("a body runs with a sealed ctx; its result is the run's", function()
  local run, tasks = load(HEAD .. [[
navette.task { name = "ok", schedule = "every 6h", run = function(ctx)
  return ctx.name .. " " .. ctx.schedule .. " " .. ctx.slot .. " "
         .. ctx.missed .. " " .. tostring(ctx.plan) .. " " .. ctx.profile
         .. " " .. ctx.project .. " " .. ctx.recipe .. " "
         .. tostring(ctx.last_result)
end }
navette.task { name = "no", schedule = "every 6h", run = function(ctx)
  return false, "not today"
end }
navette.task { name = "boom", schedule = "every 6h", run = function(ctx)
  local x = nil
  return x.field
end }
navette.task { name = "write", schedule = "every 6h", run = function(ctx)
  ctx.name = "other"
end }
navette.task { name = "job", schedule = "every 6h", run = function(ctx)
  navette.job { name = "j", command = { "true" } }
end }
navette.task { name = "nested", schedule = "every 6h", run = function(ctx)
  navette.task { name = "n", schedule = "every 6h", run = print }
end }
]])
  local slot = 1780000000
  local function exec(i, state)
    return task.execute(run, tasks[i], { slot = slot, missed = 2,
      plan = false, recipe = "r.lua", state = state })
  end
  local out = exec(1, { result = "failed", message = "x", last_run = 1 })
  t.ok(out.ok)
  t.eq(out.message, "ok every 6h " .. _navette.sys.iso8601(slot)
       .. " 2 false local demo r.lua failed")
  out = exec(2)
  t.eq(out.ok, false)
  t.eq(out.message, "not today")
  out = exec(3)
  t.eq(out.ok, false)
  t.match(out.message, "r%.lua:13: attempt to index")
  out = exec(4)
  t.eq(out.ok, false)
  t.match(out.message, "sealed")
  out = exec(5)
  t.eq(out.ok, false)
  t.match(out.message, "declared job%(s%) j: a task cannot submit jobs")
  t.match(out.hint, "navette run")
  t.eq(#run.jobs, 0, "the job is not left in the run")
  out = exec(6)
  t.eq(out.ok, false)
  t.match(out.message, "a task cannot declare another")
  t.eq(require("navette.context").current(), nil, "the run is no longer current")
end)

t.test("a body is bounded in time like the recipe", function()
  local run, tasks = load(HEAD .. [[
navette.task { name = "spin", schedule = "every 6h", run = function(ctx)
  while true do end
end }
]])
  core.set_limits(1)
  local out = task.execute(run, tasks[1], { slot = 1, missed = 1,
                                            recipe = "r.lua" })
  core.set_limits(120)
  t.eq(out.ok, false)
  t.ok(out.duration < 10, "stopped at its bound")
  t.match(out.message, "1 s")
end)

t.test("in plan mode a body's actions are recorded, not done", function()
  local run, tasks, dir = load(HEAD .. [[
navette.task { name = "put", schedule = "every 6h", run = function(ctx)
  navette.storage.put_string("notes/a.txt", "hello")
  return tostring(ctx.plan)
end }
]])
  local out = task.execute(run, tasks[1], { slot = 1, missed = 1,
                                            plan = true, recipe = "r.lua" })
  t.ok(out.ok, out.message)
  t.eq(out.message, "true")
  t.eq(#out.actions, 1)
  t.eq(out.actions[1].primitive, "storage")
  t.eq(out.actions[1].action, "put")
  t.eq(_navette.sys.stat(dir .. "/notes"), nil)
end)

t.test("the schedule natives", function()
  local canonical, info = native.parse("every 90m")
  t.eq(canonical, "every 90m")
  t.eq(info.every, 5400)
  local none, err = native.parse("every 90")
  t.eq(none, nil)
  t.eq(err.code, "invalid")
  t.match(err.message, "needs a unit")
  t.eq(native.parse("daily 03:00\0 rm"), nil, "a NUL is refused")
  local due, slot, missed = native.due("every 1h", 0, 1000)
  t.eq(due, true); t.eq(slot, 1000); t.eq(missed, 1)
  due, slot, missed = native.due("every 1h", 3600, 3600 * 5 + 10)
  t.eq(due, true); t.eq(missed, 5); t.eq(slot, 3600 * 5)
  t.eq(native.after_run("every 1h", slot, 3600 * 5 + 10), 3600 * 6)
  t.eq((native.due("every 1h", 3600 * 6, 3600 * 5 + 20)), false)
  t.raises(function() native.due("hourly", 0, 0) end, "schedule")
end)

t.test("the project file's maintenance key", function()
  local project = require "navette.project"
  local function with(value)
    local dir = fixtures.repo(t, { ["navette.lua"] = "return { name = 'p', "
                                   .. "maintenance = " .. value .. " }" })
    return project.load(dir, dir)
  end
  local p = with("{ 'recipes/maintenance/rotate-keys.lua', 'b.lua' }")
  t.eq(p.maintenance[1], "recipes/maintenance/rotate-keys.lua")
  t.eq(#p.maintenance, 2)
  t.eq(with("'one.lua'").maintenance[1], "one.lua")
  t.raises(function() with("{ '/etc/x.lua' }") end,
           "maintenance%[1%] = '/etc/x%.lua' must be relative")
  t.raises(function() with("{ 'a.lua', '../x.lua' }") end,
           "maintenance%[2%] = '%.%./x%.lua' leaves the project's folder")
  t.raises(function() with("{ 'notes.txt' }") end, "is not a %.lua recipe")
  t.raises(function() with("{ 3 }") end, "must be a recipe's path")
  t.raises(function() with("{ x = 'a.lua' }") end, "must be a list")
  t.raises(function() with("true") end, "must be a list")
  t.raises(function()
    local dir = fixtures.repo(t, { ["navette.lua"] =
      "return { maintainance = {} }" })
    project.load(dir, dir)
  end, "unknown key 'maintainance' %(did you mean 'maintenance'%?%)")
end)

t.test("the task database and the lock are handles", function()
  core.set_plan(false) -- (the evaluations above left plan mode on)
  local home = t.tmpdir()
  local none, err = native.open(home, true)
  t.eq(none, nil)
  t.eq(err.code, "not_found", "read-only on a home without tasks.db")
  local db = assert(native.open(home))
  t.match(tostring(db), "^taskdb %(" .. home:gsub("%p", "%%%0") .. "%)$")
  t.eq(db:get("p", "r.lua", "a"), false, "no row yet")
  t.eq(db:put({ project = "p", recipe = "r.lua", name = "a",
                schedule = "every 6h", result = "ok",
                message = string.rep("é", 600), next_due = 42, runs = 1 }),
       true)
  local row = db:get("p", "r.lua", "a")
  t.eq(row.next_due, 42)
  t.eq(row.runs, 1)
  t.ok(#row.message <= 1023 and utf8.len(row.message), "cut, still UTF-8")
  t.eq(#db:list(), 1)
  t.eq(#db:list("other"), 0)
  t.raises(function() db:put({ project = "p", recipe = "r.lua",
                               name = string.rep("n", 64),
                               schedule = "every 6h" }) end, "too long")
  core.set_plan(true)
  t.eq(db:put({ project = "p", recipe = "r.lua", name = "b",
                schedule = "every 6h" }), false, "plan mode writes nothing")
  core.set_plan(false)
  t.eq(db:get("p", "r.lua", "b"), false)
  db:close()
  db:close() -- harmless
  t.eq(tostring(db), "taskdb (closed)")
  t.raises(function() db:list() end, "closed task database")

  local lock = assert(native.lock(home))
  t.eq(tostring(lock), "maintain lock (held)")
  local again, lerr = native.lock(home)
  t.eq(again, nil)
  t.eq(lerr.code, "refused")
  t.eq(lerr.holder, _navette.sys.pid())
  lock:close()
  lock:close()
  t.eq(tostring(lock), "maintain lock (released)")
  again = assert(native.lock(home))
  again:close()
end)

t.test("the launchd and systemd files say what the schedules need",
       function()
  local service = require "navette.service_units"
  local infos = {}
  for i, s in ipairs({ "weekly mon 04:00", "every 7m", "daily 03:00",
                       "every 2h", "daily 03:00" }) do
    infos[i] = select(2, native.parse(s))
  end
  local slots, every = service.wakeups(infos)
  t.eq(#slots, 2, "daily 03:00 once")
  t.eq(every, 420, "the shortest interval")
  local facts = { project = "p", name = "navette-maintain-p",
                  label = "org.navette.maintain.p",
                  program = "/opt/my tools/navette",
                  argv = { "maintain", "--once", "50%$HOME\"x" },
                  workdir = "/srv/a&b", home = "/h/<n>", slots = slots,
                  every = every, log = "/h/<n>/maintain.log" }
  local unit, timer = service.systemd_units(facts)
  t.match(unit, "\nExecStart=\"/opt/my tools/navette\" \"maintain\" "
          .. "\"%-%-once\" \"50%%%%%$%$HOME\\\"x\"\n")
  t.match(unit, "\nWorkingDirectory=/srv/a&b\n")
  t.match(timer, "\nOnCalendar=%*%-%*%-%* 03:00:00\nOnCalendar=Mon %*%-%*%-%* "
          .. "04:00:00\nOnCalendar=%*%-%*%-%* %*:00/6:00\nOnActiveSec=1min\n"
          .. "OnUnitActiveSec=7min\nPersistent=true\n")
  local plist = service.launchd_plist(facts)
  t.match(plist, "<string>/srv/a&amp;b</string>")
  t.match(plist, "<string>50%%%$HOME&quot;x</string>")
  t.match(plist, "<key>Weekday</key>\n\t\t\t<integer>1</integer>\n\t\t\t"
          .. "<key>Hour</key>\n\t\t\t<integer>4</integer>")
  t.match(plist, "<key>StartInterval</key>\n\t<integer>420</integer>")
  t.ok(not plist:match("<!%-%-.*%-%-.*%-%->"), "no -- inside a comment")
  t.match(plist, service.MARKER:gsub("%p", "%%%0"))
end)

t.test("no line of a unit or the plist can be injected", function()
  local service = require "navette.service_units"
  local base = { project = "p", name = "navette-maintain-p",
                 label = "org.navette.maintain.p", program = "/usr/bin/navette",
                 argv = { "maintain", "--once" }, workdir = "/srv/p",
                 home = "/h/nv$x", slots = {}, every = 3600,
                 log = "/h/maintain.log" }
  -- systemd expands no variable in Environment=: "$" is written once
  local unit = service.systemd_units(base)
  t.match(unit, '\nEnvironment="NAVETTE_HOME=/h/nv%$x"\n')
  for _, k in ipairs({ "workdir", "home", "program", "project" }) do
    local facts = {}
    for key, v in pairs(base) do facts[key] = v end
    facts[k] = "/srv/evil\nExecStartPre=/bin/touch /tmp/pwned\n#"
    t.raises(function() service.systemd_units(facts) end,
             "holds a control character")
    t.raises(function() service.launchd_plist(facts) end,
             "holds a control character")
  end
  local facts = {}
  for key, v in pairs(base) do facts[key] = v end
  facts.argv = { "maintain", "--once", "recipes/x\001.lua" }
  t.raises(function() service.systemd_units(facts) end,
           "argument 3 holds a control character")
end)
