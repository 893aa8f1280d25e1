-- navette.task{ name, schedule, run = function(ctx) ... end }: a
-- maintenance step a recipe declares beside its jobs, run by `navette
-- maintain` when its schedule says it is due (host/tasks/schedule.c). The
-- declaration is checked against task.FIELDS, like navette.job's; the
-- tasks of a recipe are kept here, keyed by the run that evaluated it
-- (runner.current), never in a table the recipe can reach. A task's body
-- is the recipe's own function: navette calls it in the recipe's sandbox,
-- under the recipe's time and memory bound (core.call_bounded), with the
-- runtime in plan mode under `maintain --plan`, and audits each run
-- ("task.run", ok or failed).
local errors = require "navette.errors"
local util = require "navette.util"
local core, sys, native = _navette.core, _navette.sys, _navette.tasks

local task = {}

-- run -> { list of validated tasks } (weak: a run's tasks go with it)
local declared = setmetatable({}, { __mode = "k" })
-- the task whose body runs now (nil between bodies)
local running = nil

local bad = errors.raiser("recipe", "navette.task: ")

local SCHEDULE_HINT = "write \"daily HH:MM\", \"weekly DAY HH:MM\" (DAY: "
  .. "mon ... sun) or \"every N\" with a unit m, h or d (\"every 6h\"); "
  .. "times are the machine's local time"

local check_name = util.name_check(bad)

local function check_schedule(v, out, key)
  local canonical, info = native.parse(v)
  if not canonical then
    -- info is the native error: its message says what is wrong
    local why = info.message:gsub("^schedule '.-': ", "")
    local shown = #v > 64 and (v:sub(1, 64) .. "...") or v
    bad("'" .. key .. "' = " .. string.format("%q", shown) .. ": " .. why,
        SCHEDULE_HINT)
  end
  out.schedule = canonical
  out.schedule_info = info
end

-- The fields of navette.task{...}, in the order they are checked: what
-- validation, its messages and the LuaLS definitions are made from (as
-- job.FIELDS).
task.FIELDS = {
  { name = "name", type = "string", kind = "string", required = true,
    check = check_name,
    doc = "The task's name in the recipe: letters, digits, '.', '_' and "
          .. "'-', at most 63; its state is kept under it." },
  { name = "schedule", type = "string", kind = "string",
    required = "schedule = \"daily 03:00\"", check = check_schedule,
    doc = "When it runs, in the machine's local time: \"daily HH:MM\", "
          .. "\"weekly DAY HH:MM\" (DAY: mon, tue, wed, thu, fri, sat, sun) "
          .. "or \"every N\" with a unit m, h or d (\"every 6h\"); missed "
          .. "slots are caught up by one run." },
  { name = "run", type = "fun(ctx: navette.task.Context): (boolean|string)?",
    kind = "function", required = "run = function(ctx) ... end",
    doc = "The body, called by `navette maintain` with ctx; it fails by "
          .. "raising an error or returning false (and a message), "
          .. "otherwise it succeeds (a string it returns is kept as the "
          .. "run's message)." },
}

local function names(fields)
  local list = {}
  for i, f in ipairs(fields) do list[i] = f.name end
  return list
end

-- The normalised declaration (a new table): name, schedule (canonical),
-- schedule_info, run, declared_at.
function task.validate(spec)
  if type(spec) ~= "table" then
    bad("expects a table: navette.task{ name = ..., schedule = ..., "
        .. "run = function(ctx) ... end }")
  end
  util.check_keys(spec, names(task.FIELDS), function(k, suggestion, list)
    if type(k) ~= "string" then
      bad("keys must be names, found a " .. type(k) .. " key")
    end
    bad("unknown key '" .. k .. "'" .. suggestion, "navette.task takes: "
        .. list)
  end)
  local t = {}
  for _, f in ipairs(task.FIELDS) do
    local value = spec[f.name]
    if value == nil then
      bad("'" .. f.name .. "' is required",
          f.required ~= true and f.required or nil)
    end
    if type(value) ~= f.kind then
      bad("'" .. f.name .. "' must be a " .. f.kind .. ", got a "
          .. type(value))
    end
    if f.check then f.check(value, t, f.name) else t[f.name] = value end
  end
  t.declared_at = errors.where():gsub(": $", "")
  return t
end

-- navette.task{...} (through public.lua's boundary): validates and keeps
-- the task with the run being evaluated; returns {name, schedule}.
function task.declare(spec)
  local run = require("navette.context").current()
  if running then
    errors.raise("recipe", "navette.task: a task cannot declare another "
                 .. "(inside task '" .. running .. "')",
                 "declare every task at the top of the recipe")
  end
  if not run then
    errors.raise("usage", "navette.task was called outside a recipe run",
                 "tasks are declared by a recipe and run by `navette "
                 .. "maintain`")
  end
  local t = task.validate(spec)
  local list = declared[run] or {}
  declared[run] = list
  for _, other in ipairs(list) do
    if other.name == t.name then
      bad("a task named '" .. t.name .. "' is already declared at "
          .. other.declared_at)
    end
  end
  list[#list + 1] = t
  return { name = t.name, schedule = t.schedule }
end

-- The tasks the evaluation of run declared, in order (a list, maybe
-- empty).
function task.of(run)
  return declared[run] or {}
end

local function iso(t)
  if not t or t <= 0 then return nil end
  return sys.iso8601(t)
end

-- Calls the body of t, declared by run, for one slot. info: {slot,
-- missed, plan, recipe (relative), state (the row before: last_run,
-- result, message)}. Returns {ok, message, duration, actions (what plan
-- mode recorded instead of doing)}. Never raises for the body's own
-- failure: that is the result.
function task.execute(run, t, info)
  local state = info.state or {}
  local ctx = core.seal({
    name = t.name, schedule = t.schedule,
    slot = iso(info.slot), missed = info.missed,
    last_run = iso(state.last_run),
    last_result = state.result ~= "" and state.result or nil,
    last_message = state.message ~= "" and state.message or nil,
    plan = info.plan and true or false,
    profile = run.profile.name, project = run.project.name,
    recipe = info.recipe,
  })
  local recorded, jobs_before = #core.plan(), #run.jobs
  local started = sys.now()
  local context = require "navette.context"
  running = t.name
  local before = context.set_current(run)
  local ok, result, message = core.call_bounded(t.run, ctx)
  running = nil
  context.set_current(before)
  local out = { duration = sys.now() - started, actions = {} }
  for i = recorded + 1, #core.plan() do
    out.actions[#out.actions + 1] = core.plan()[i]
  end
  if not ok then
    local e = errors.from(result)
    out.ok, out.message, out.hint = false, e.message, e.hint
  elseif result == false then
    out.ok = false
    out.message = type(message) == "string" and message
                  or "the task returned false"
  else
    out.ok = true
    out.message = type(result) == "string" and result or nil
  end
  if #run.jobs > jobs_before then
    -- declared, never submitted: say so rather than drop them quietly
    local names = {}
    for i = jobs_before + 1, #run.jobs do names[#names + 1] = run.jobs[i].name end
    for i = #run.jobs, jobs_before + 1, -1 do run.jobs[i] = nil end
    out.ok = false
    out.message = "task '" .. t.name .. "' declared job(s) "
      .. table.concat(names, ", ") .. ": a task cannot submit jobs"
    out.hint = "declare jobs in a recipe run by `navette run` (`navette "
      .. "maintain` runs tasks only); a task may use navette.storage, "
      .. "navette.image, navette.http and navette.creds"
  end
  return out
end

return task
