-- `navette maintain`: runs the scheduled tasks (navette.task) of the
-- maintenance recipes that are due, keeps their state in
-- $NAVETTE_HOME/tasks.db (_navette.tasks), one run at a time per
-- NAVETTE_HOME (maintain.lock); lists them; installs the launchd agent or
-- systemd timer that runs `maintain --once` on time.
--
-- A recipe is evaluated as `navette plan` evaluates it (its own jobs and
-- uploads are recorded, never done: maintain runs tasks only), which
-- collects its tasks; then, out of plan mode unless --plan, each due
-- task's body is called. Its code comes from the commit (HEAD), as a
-- run's does: a recipe file the commit lacks is refused.
local errors = require "navette.errors"
local term = require "navette.term"
local util = require "navette.util"
local common = require "navette.cli.common"
local task = require "navette.task"
local core, sys, json, git, native = _navette.core, _navette.sys,
  _navette.json, _navette.git, _navette.tasks

local M = {
  name = "maintain",
  summary = {
    { "maintain [RECIPE...]", "run the scheduled tasks that are due" },
    { "maintain --install", "run them on time (launchd, systemd timer)" },
  },
  usage = [[
usage: navette maintain [RECIPE...] [--once] [--list] [--json] [--plan]
                        [--task NAME] [--profile P] [--install|--uninstall]
  Runs the tasks (navette.task) of the recipes given, else of those the
  project file lists under `maintenance`, when their schedule says they
  are due. A task that missed several slots runs once; a failed task is
  retried at its next slot. Without --once, stays and runs each task as
  it falls due (Ctrl-C stops it). One maintain runs at a time per
  NAVETTE_HOME (another exits 3).
  --once       run what is due now and exit (1 when a task failed)
  --list       every task: schedule, last run and result, next due
  --json       the same as data
  --plan       the due tasks in plan mode: what they would do, doing
               nothing (no state written)
  --task NAME  with --once or --plan: that task only, now, due or not
               (its next slot is counted from this run)
  --profile P  the profile the recipes run with
  --install    write and load a launchd agent (macOS) or a systemd user
               service and timer that run `navette maintain --once`
  --uninstall  unload and remove what --install wrote]],
  flags = { once = "bool", list = "bool", json = "bool", plan = "bool",
            profile = "value", install = "bool", uninstall = "bool",
            task = "value" },
  read_only = false,
}

-- Times shown to people: the machine's local time (schedules are).
local function local_time(t)
  if not t or t <= 0 then return "-" end
  return os.date("%Y-%m-%d %H:%M", math.floor(t))
end

local function iso(t)
  if not t or t <= 0 then return json.null end
  return sys.iso8601(t)
end

-- views without their "_" fields (kept for the text output only)
local function data(list)
  local out = {}
  for i, v in ipairs(list) do
    out[i] = {}
    for k, x in pairs(v) do
      if type(k) ~= "string" or k:sub(1, 1) ~= "_" then out[i][k] = x end
    end
  end
  return out
end

-- A recipe's error as shown: its message names the recipe already when
-- the recipe's own code raised it.
local function recipe_error(e)
  local message = e.message:find(e.recipe, 1, true) and e.message
                  or (e.recipe .. ": " .. e.message)
  return errors.new(e.code, message, e.hint)
end

local function first_line(s)
  return s and (s:match("^[^\n]*")) or nil
end

-- ---- which recipes -----------------------------------------------------------

-- The project holding the working folder (its file and root).
local function cwd_project()
  return require("navette.project").at()
end

-- What tells one checkout's tasks (their state, the installed unit) from
-- another's of the same project name: NAME-XXXXXXXX, the first eight hex
-- digits of the sha256 of the project folder's real path.
local function checkout_key(proj)
  local root = sys.realpath(proj.root) or proj.root
  return proj.name .. "-" .. sys.sha256(root):sub(1, 8)
end

-- The recipes (absolute paths) and the project they were named from.
local function recipes_of(args)
  local proj = cwd_project()
  if #args > 0 then
    local list = {}
    for i, a in ipairs(args) do list[i] = util.join(sys.cwd(), a) end
    return list, proj, true
  end
  if not proj.file then
    common.usage_error("no RECIPE given and no project file (navette.lua) "
                       .. "here or above", "maintain")
  end
  if not proj.maintenance or #proj.maintenance == 0 then
    error(errors.new("usage", "no RECIPE given and " .. proj.file
                     .. " lists no maintenance recipe",
                     "add maintenance = { \"recipes/maintenance/NAME.lua\" } "
                     .. "to the project file, or name the recipes"), 0)
  end
  local list = {}
  for i, p in ipairs(proj.maintenance) do list[i] = util.join(proj.root, p) end
  return list, proj, false
end

-- ---- evaluating a recipe -----------------------------------------------------

-- Evaluates recipe (in plan mode) and returns its run and tasks, each
-- task with its key: recipe (relative to the project's root). acting:
-- the runtime leaves plan mode afterwards, for the bodies, once the
-- recipe's code is known to be the commit's.
local function load_recipe(recipe, opts, acting)
  local runner = require "navette.runner"
  -- a fresh plan record per evaluation: a maintain that stays for weeks
  -- does not keep every evaluation's
  core.set_plan(true, true)
  local run = runner.load(recipe, { profile = opts.profile, plan = true })
  if acting then
    runner.check_committed(run)
    -- the project file chooses the endpoints and the credentials' paths
    -- the bodies act on: the commit's, never an edit in the working tree
    local file, root = run.project.file, run.repo:workdir():gsub("/$", "")
    if file and file:sub(1, #root + 1) == root .. "/" then
      local rel = file:sub(#root + 2)
      for _, e in ipairs(run.repo:status()) do
        if e.path == rel then
          runner.refuse("the project file " .. file .. " is not as "
            .. "committed (" .. e.status .. "): the tasks act on its "
            .. "endpoints and credentials", "commit it (or `git checkout "
            .. "-- " .. rel .. "`), then run maintain again", run)
        end
      end
    end
    core.set_plan(false)
  end
  -- what navette.context() tells the bodies
  run.plan_command = not acting
  run.plan = not acting
  local root = run.project.root:gsub("/$", "")
  local rel = run.recipe_real
  if rel:sub(1, #root + 1) == root .. "/" then rel = rel:sub(#root + 2) end
  return run, task.of(run), rel
end

-- The state row of a task (a fresh one when it never ran), its schedule
-- brought up to date: a changed schedule recomputes when it is next due.
local function state_of(db, run, rel, t)
  local row
  if db then
    local got, err = db:get(checkout_key(run.project), rel, t.name)
    if got == nil then errors.check(nil, err, "task state") end
    row = got or nil
  end
  if not row then
    row = { project = checkout_key(run.project), recipe = rel, name = t.name,
            schedule = t.schedule, last_run = 0, last_slot = 0,
            duration = 0, result = "", message = "", next_due = 0,
            runs = 0, failures = 0 }
  end
  if row.schedule ~= t.schedule then
    -- (from when the last run ended, as after a run: one that outlasted
    -- its interval is not due again at once)
    row.schedule = t.schedule
    row.next_due = row.last_run > 0
      and (native.after_run(t.schedule, row.last_slot,
                            row.last_run + (tonumber(row.duration) or 0))
           or 0)
      or 0
  end
  return row
end

-- One task's entry in --list and --json.
local function view(row, t, due, slot, missed, now)
  return {
    project = row.project:match("^(.*)%-%x%x%x%x%x%x%x%x$") or row.project,
    checkout = row.project, recipe = row.recipe, name = row.name,
    schedule = t and t.schedule or row.schedule,
    last_run = iso(row.last_run), last_slot = iso(row.last_slot),
    result = row.result ~= "" and row.result or json.null,
    message = row.message ~= "" and row.message or json.null,
    next_due = row.next_due > 0 and iso(row.next_due) or iso(now),
    due = due and true or false,
    slot = due and iso(slot) or json.null,
    missed = due and missed or 0,
    runs = row.runs, failures = row.failures,
  }
end

-- ---- one pass ------------------------------------------------------------------

-- Calls visit(run, rel, t, row, now, due, slot, missed) for each task of
-- each recipe (loaded acting or not): its state row and whether it is
-- due now. A recipe that fails, loading or in visit, is added to failed
-- as {recipe, code, message, hint}, and its error handed to on_error.
local function each_task(recipes, opts, db, acting, visit, failed, on_error)
  for _, recipe in ipairs(recipes) do
    local ok, err = pcall(function()
      local run, tasks, rel = load_recipe(recipe, opts, acting)
      for _, t in ipairs(tasks) do
        local now = sys.now()
        local row = state_of(db, run, rel, t)
        local due, slot, missed = native.due(t.schedule, row.next_due, now)
        visit(run, rel, t, row, now, due, slot, missed)
      end
    end)
    if not ok then
      local e = errors.from(err)
      failed[#failed + 1] = { recipe = recipe, code = e.code,
                              message = e.message, hint = e.hint }
      if on_error then on_error(e) end
    end
  end
end

-- Runs (or, with opts.plan, plans) the due tasks of every recipe.
-- Returns {tasks = views, errors = {recipe, code, message}}, the exit
-- status, and the soonest next due time.
local function pass(recipes, opts, db)
  local audit = require "navette.audit"
  local result = { tasks = {}, errors = {} }
  local status, soonest = 0, nil
  local acting = not opts.plan
  local function visit(run, rel, t, row, now, due, slot, missed)
    if opts.task then
      -- the task asked for runs now, due or not; no other runs
      if t.name ~= opts.task then
        due = false
      elseif not due then
        due, slot, missed = true, now, 0
      end
      if t.name == opts.task then result.matched = true end
    end
    local v = view(row, t, due, slot, missed, now)
    v.ran = false
    if due then
      local out = task.execute(run, t, { slot = slot, missed = missed,
        plan = opts.plan, recipe = rel, state = row })
      v.ran = true
      v.result = out.ok and "ok" or "failed"
      v.message = out.message or json.null
      v.hint = out.hint
      v.duration = out.duration
      if opts.plan then
        v.actions = json.array(out.actions)
      else
        row.last_run, row.last_slot = now, slot
        row.duration = out.duration
        row.result = v.result
        row.message = out.message or ""
        row.runs = row.runs + 1
        if not out.ok then row.failures = row.failures + 1 end
        row.next_due = native.after_run(t.schedule, slot, sys.now()) or 0
        errors.check(db:put(row))
        v.last_run, v.last_slot = iso(row.last_run), iso(row.last_slot)
        v.runs, v.failures = row.runs, row.failures
        audit.record({ action = "task.run",
                       target = rel .. ":" .. t.name,
                       result = v.result,
                       detail = first_line(out.message)
                                or ("slot " .. sys.iso8601(slot)) },
                     run.profile)
      end
      v.next_due = iso(row.next_due)
      v._next_due = row.next_due
      if not out.ok and status == 0 then status = 1 end
      -- back out of plan mode if a body's call left it elsewhere
      if acting then core.set_plan(false) end
    end
    if row.next_due > 0 and (not soonest or row.next_due < soonest) then
      soonest = row.next_due
    end
    result.tasks[#result.tasks + 1] = v
  end
  local function on_error(e)
    local code = errors.exit_status[e.code] or 4
    if status == 0 or status == 1 then status = code end
  end
  each_task(recipes, opts, db, acting, visit, result.errors, on_error)
  if opts.task and not result.matched and #result.errors == 0 then
    local names = {}
    for _, v in ipairs(result.tasks) do names[#names + 1] = v.name end
    errors.raise("usage", "maintain --task: no task named '" .. opts.task
                 .. "'" .. util.suggest(opts.task, names),
                 #names > 0 and ("tasks: " .. table.concat(names, ", "))
                 or "the recipes declare no task")
  end
  return result, status, soonest
end

local function print_pass(result, opts)
  local ran = 0
  for _, v in ipairs(result.tasks) do
    if v.ran then
      ran = ran + 1
      local what = v.result == "ok"
        and term.style("stdout", "green", "ok")
        or term.style("stdout", "red", "failed")
      term.printf("task %s (%s): %s in %.1f s%s\n", v.name, v.recipe, what,
                  v.duration or 0,
                  v.missed > 1 and (" (caught up " .. v.missed
                                    .. " missed slots once)") or "")
      if v.message ~= json.null then
        term.print("  " .. tostring(v.message):gsub("\n", "\n  "))
      end
      if v.hint then term.print("  check: " .. v.hint) end
      if opts.plan then
        for i, a in ipairs(v.actions or {}) do
          term.printf("  %3d. %s %s: %s\n", i, a.primitive, a.action,
                      a.detail)
        end
        if #(v.actions or {}) == 0 then term.print("  (no action recorded)") end
      else
        term.print("  next due " .. local_time(v._next_due))
      end
    end
  end
  for _, e in ipairs(result.errors) do
    term.error(recipe_error(e))
  end
  if ran == 0 and #result.errors == 0 then
    term.print("nothing due (" .. #result.tasks .. " task"
               .. (#result.tasks == 1 and "" or "s") .. ")")
  end
end

-- ---- --list ------------------------------------------------------------------

local function list(recipes, opts, db)
  local rows, failed = {}, {}
  local function add(_, _, t, row, now, due, slot, missed)
    rows[#rows + 1] = view(row, t, due, slot, missed, now)
    rows[#rows]._next_due = row.next_due > 0 and row.next_due or now
    rows[#rows]._last_run = row.last_run
  end
  each_task(recipes, opts, db, false, add, failed)
  if opts.json then
    term.print(json.encode({ tasks = json.array(data(rows)),
                             errors = json.array(failed) }, true))
  else
    term.printf("%-24s %-20s %-17s %-7s %-17s %s\n", "TASK", "SCHEDULE",
                "LAST RUN", "RESULT", "NEXT DUE", "RECIPE")
    for _, r in ipairs(rows) do
      term.printf("%-24s %-20s %-17s %-7s %-17s %s\n", r.name, r.schedule,
                  local_time(r._last_run),
                  r.result ~= json.null and r.result or "-",
                  r.due and "now" or local_time(r._next_due), r.recipe)
      if r.result == "failed" and r.message ~= json.null then
        term.print("  " .. first_line(r.message))
      end
    end
    if #rows == 0 then term.print("(no task declared)") end
    term.print("(times are this machine's local time)")
    for _, e in ipairs(failed) do
      term.error(recipe_error(e))
    end
  end
  if #failed > 0 then return errors.exit_status[failed[1].code] or 4 end
  return 0
end

-- ---- --install, --uninstall ----------------------------------------------------

local function install(recipes, proj, named, opts)
  local service = require "navette.service_units"
  local manager = service.manager()
  local infos = {}
  for _, recipe in ipairs(recipes) do
    local _, tasks = load_recipe(recipe, opts, false)
    for _, t in ipairs(tasks) do infos[#infos + 1] = t.schedule_info end
  end
  if #infos == 0 then
    error(errors.new("usage", "the maintenance recipes declare no task",
                     "declare one with navette.task{ name = ..., schedule "
                     .. "= ..., run = function(ctx) ... end }"), 0)
  end
  -- (the recipes were evaluated in plan mode: installing acts)
  core.set_plan(false)
  local program = errors.check(native.program())
  local argv = { "maintain", "--once" }
  if opts.profile then
    argv[#argv + 1] = "--profile"
    argv[#argv + 1] = opts.profile
  end
  if named then
    for _, r in ipairs(recipes) do argv[#argv + 1] = r end
  end
  local slots, every = service.wakeups(infos)
  local slug = checkout_key(proj)
  local facts = { project = proj.name, name = service.name(slug),
                  label = service.label(slug), program = program,
                  argv = argv, workdir = proj.root, home = core.home(),
                  slots = slots, every = every,
                  log = core.home() .. "/maintain.log" }
  local dir, paths = service.paths(manager, slug)
  local texts
  if manager == "launchd" then
    texts = { service.launchd_plist(facts) }
  else
    texts = { service.systemd_units(facts) }
  end
  for _, p in ipairs(paths) do
    if sys.stat(p) and not service.ours(p) then
      error(errors.new("refused", p .. " exists and was not written by "
                       .. "navette", "move it aside, then install again"), 0)
    end
  end
  errors.check(sys.mkdir_p(dir))
  for i, p in ipairs(paths) do
    errors.check(sys.write_file(p, texts[i], 420))
    term.print("wrote " .. p)
  end
  local commands = service.load_commands(manager, slug, paths)
  local loaded, why = true, nil
  for i, c in ipairs(commands) do
    local ok, message = service.command(c)
    -- (launchctl bootout of an agent not loaded yet fails: fine)
    if not ok and not (manager == "launchd" and i == 1) then
      loaded, why = false, message
      break
    end
  end
  if loaded then
    term.print("loaded: " .. (manager == "launchd"
      and ("launchd agent " .. facts.label)
      or ("systemd user timer " .. facts.name .. ".timer")))
  else
    term.print("not loaded here (" .. tostring(why) .. "); to load it, run:")
    for _, c in ipairs(commands) do
      term.print("  " .. table.concat(c, " "))
    end
  end
  require("navette.audit").record({ action = "maintain.install",
    target = paths[1], result = "ok",
    detail = manager .. (loaded and "" or " (written, not loaded)") })
  return 0
end

local function uninstall(proj)
  local service = require "navette.service_units"
  local manager = service.manager()
  local slug = checkout_key(proj)
  local _, paths = service.paths(manager, slug)
  local present = {}
  for _, p in ipairs(paths) do
    if sys.stat(p) then
      if not service.ours(p) then
        error(errors.new("refused", p .. " was not written by navette: "
                         .. "left alone", "remove it yourself if it is "
                         .. "yours to remove"), 0)
      end
      present[#present + 1] = p
    end
  end
  if #present == 0 then
    term.print("nothing to remove: no " .. manager .. " file of project "
               .. proj.name)
    return 0
  end
  for _, c in ipairs(service.unload_commands(manager, slug)) do
    local ok, message = service.command(c)
    if not ok then term.eprint("note: " .. message) end
  end
  for _, p in ipairs(present) do
    errors.check(sys.remove(p))
    term.print("removed " .. p)
  end
  require("navette.audit").record({ action = "maintain.uninstall",
    target = present[1], result = "ok", detail = manager })
  return 0
end

-- ---- the command ----------------------------------------------------------------

function M.run(argv)
  local opts, args = common.command_args(M, argv)
  if not opts then return 0 end
  if opts.install and opts.uninstall then
    common.usage_error("--install and --uninstall exclude each other",
                       M.name)
  end
  if (opts.install or opts.uninstall)
     and (opts.once or opts.list or opts.plan or opts.json) then
    common.usage_error("--install and --uninstall take no --once, --list, "
                       .. "--plan or --json", M.name)
  end
  if opts.list and (opts.once or opts.plan) then
    common.usage_error("--list runs nothing: it takes no --once or --plan",
                       M.name)
  end
  if opts.task and not (opts.once or opts.plan) then
    common.usage_error("--task NAME goes with --once or --plan", M.name)
  end
  if opts.list or opts.plan then core.forbid_exec() end
  if opts.uninstall then
    if #args > 0 then
      common.usage_error("--uninstall takes no RECIPE", M.name)
    end
    return uninstall(cwd_project())
  end
  local recipes, proj, named = recipes_of(args)
  if opts.install then return install(recipes, proj, named, opts) end

  local home = core.home()
  if opts.list or opts.plan then
    -- read only: a home where no task ever ran has no state yet
    local db, err = native.open(home, true)
    if not db and err.code ~= "not_found" then errors.check(nil, err) end
    local _ <close> = db
    if opts.list then return list(recipes, opts, db) end
    local result, status = pass(recipes, opts, db)
    if opts.json then
      term.print(json.encode({ plan = true, tasks = json.array(data(result.tasks)),
                               errors = json.array(result.errors) }, true))
    else
      term.print(term.style("stdout", "bold", "maintain --plan")
                 .. " (nothing was done, no state written)")
      print_pass(result, opts)
    end
    return status
  end

  local lock <close> = errors.check(native.lock(home))
  local db <close> = errors.check(native.open(home, false))
  if opts.once then
    local result, status = pass(recipes, opts, db)
    if opts.json then
      term.print(json.encode({ plan = false, tasks = json.array(data(result.tasks)),
                               errors = json.array(result.errors) }, true))
    else
      print_pass(result, opts)
    end
    return status
  end
  -- stay: run what is due, sleep until the next due time (looked at again
  -- at least every minute: the wall clock may jump, the laptop sleep)
  sys.trap_interrupt(true)
  while not sys.interrupted() do
    local result, _, soonest = pass(recipes, opts, db)
    if opts.json then
      for _, v in ipairs(result.tasks) do
        if v.ran then term.print(json.encode(data({ v })[1])) end
      end
      for _, e in ipairs(result.errors) do term.print(json.encode(e)) end
    else
      local any = false
      for _, v in ipairs(result.tasks) do any = any or v.ran end
      if any or #result.errors > 0 then print_pass(result, opts) end
    end
    local wake = math.min(soonest or math.huge, sys.now() + 60)
    while not sys.interrupted() and sys.now() < wake do
      sys.sleep(math.min(1, wake - sys.now()))
    end
  end
  sys.trap_interrupt(false)
  term.eprint("interrupted: maintain stopped")
  return 130
end

return M
