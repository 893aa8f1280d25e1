-- `navette jobs`: recent jobs, newest first, with their shortest unique
-- ids and ages; with --profile, what that profile's backend knows now.
local term = require "navette.term"
local jobs = require "navette.jobview"
local common = require "navette.cli.common"
local sys, json = _navette.sys, _navette.json

local M = {
  name = "jobs",
  summary = { { "jobs", "recent jobs, newest first" } },
  usage = [[
usage: navette jobs [--run RUN] [--state S,...] [--project P] [--since AGE]
                   [--profile P] [--json] [--limit N] [-l]
  Lists recent jobs, newest first (50 unless --limit), with their age and
  project. Ids show as their shortest unique prefix (any command takes
  one); -l (--long) shows them whole, as --json does.
  --run RUN      the jobs of one run (its id, or a unique prefix)
  --state S,...  those in these states (queued, running, succeeded,
                 failed, cancelled)
  --project P    those of project P (`.`: the project of this folder)
  --since AGE    those submitted in the last AGE (90s, 30m, 2h, 7d)
  --profile P    that profile's jobs; those still queued or running on
                 Slurm are asked of Slurm first, and shown with their
                 Slurm job, state and node.]],
  flags = { json = "bool", limit = "value", profile = "value", long = "bool",
            l = "bool", run = "value", state = "value", project = "value",
            since = "value" },
  read_only = false, -- follows a job: see navette.cli
}

-- The shortest prefix of each listed id that names it alone among every
-- job of the home (at least SHORT_ID_MIN characters): id -> prefix.
local SHORT_ID_MIN = 12
local function short_ids(rows)
  local all = {}
  for i, r in ipairs(jobs.list(1000000)) do all[i] = r.id end
  table.sort(all)
  local need = {}
  for i, id in ipairs(all) do
    local n = SHORT_ID_MIN
    for _, other in pairs({ all[i - 1] or "", all[i + 1] or "" }) do
      local same = 0
      while same < #id and id:byte(same + 1) == other:byte(same + 1) do
        same = same + 1
      end
      n = math.max(n, same + 1)
    end
    -- never cut right after a separator (cx-20261203- reads as cut short)
    if id:sub(n, n) == "-" then n = n + 1 end
    need[id] = id:sub(1, n)
  end
  local shown = {}
  for _, r in ipairs(rows) do shown[r.id] = need[r.id] or r.id end
  return shown
end

local STATES = { queued = true, running = true, succeeded = true,
                 failed = true, cancelled = true }

-- The filters the options name, as one test of a row (nil: none).
local function filter_of(opts)
  local util = require "navette.util"
  local tests = {}
  if opts.run then
    local full, ids = jobs.run(opts.run)
    if not full then
      local err = type(ids) == "table" and ids or {}
      common.usage_error(tostring(err.message or ("no run '" .. opts.run
                         .. "'")) .. " (a run id is what `navette run` "
                         .. "printed first)", "jobs")
    end
    local of_run = {}
    for _, id in ipairs(ids) do of_run[id] = true end
    tests[#tests + 1] = function(r) return of_run[r.id] end
  end
  if opts.state then
    local wanted = {}
    for s in opts.state:gmatch("[^,]+") do
      if not STATES[s] then
        common.usage_error("no state '" .. s .. "'"
                           .. util.suggest(s, util.sorted_keys(STATES))
                           .. " (states: queued, running, succeeded, "
                           .. "failed, cancelled)", "jobs")
      end
      wanted[s] = true
    end
    tests[#tests + 1] = function(r) return wanted[r.state] end
  end
  if opts.project then
    local name = opts.project
    if name == "." then name = require("navette.project").at().name end
    tests[#tests + 1] = function(r) return r.project == name end
  end
  if opts.since then
    local secs = util.parse_duration(opts.since)
    if not secs then
      common.usage_error("--since takes an age: 90s, 30m, 2h or 7d", "jobs")
    end
    local from = sys.now() - secs
    tests[#tests + 1] = function(r)
      local t = type(r.created) == "string" and util.parse_iso8601(r.created)
      return t and t >= from
    end
  end
  if #tests == 0 then return nil end
  return function(r)
    for _, test in ipairs(tests) do
      if not test(r) then return false end
    end
    return true
  end
end

function M.run(argv)
  local opts, args = common.command_args(M, argv)
  if not opts then return 0 end
  opts.long = opts.long or opts.l
  if #args > 0 then common.usage_error("jobs takes no argument", "jobs") end
  local limit = opts.limit and math.tointeger(tonumber(opts.limit))
  if opts.limit and (not limit or limit < 1) then
    common.usage_error("--limit must be a positive whole number", "jobs")
  end
  limit = limit or 50
  local keep = filter_of(opts)
  local rows = jobs.list((opts.profile or keep) and 100000 or limit)
  if keep then
    local kept = {}
    for _, r in ipairs(rows) do
      -- (with --profile, the limit is applied below)
      if keep(r) and (opts.profile or #kept < limit) then
        kept[#kept + 1] = r
      end
    end
    rows = kept
  end
  -- the backend whose column shows (one profile's jobs: one backend)
  local remote
  if opts.profile then
    local backends = require "navette.backends"
    local kept, mine = {}, {}
    for _, r in ipairs(rows) do
      if r.profile == opts.profile and #kept < limit then
        local b = backends.get(r.backend)
        if b.list_rows then
          remote = remote or b
          mine[b] = mine[b] or {}
          table.insert(mine[b], r)
        end
        kept[#kept + 1] = r
      end
    end
    rows = kept
    -- what each backend knows now of its listed jobs
    for b, list in pairs(mine) do b.list_rows(list, jobs.context()) end
  end
  if opts.json then
    local list = {}
    for i, r in ipairs(rows) do
      list[i] = { id = r.id, name = r.name, project = r.project,
                  profile = r.profile, state = r.state, phase = r.phase,
                  created = r.created, updated = r.updated,
                  failure = r.failure,
                  backend = r.backend or require("navette.backends").DEFAULT }
      -- what the backend added (list_rows), under its name
      if remote then list[i][remote.name] = r[remote.name] end
    end
    term.print(json.encode(json.array(list), true))
    return 0
  end
  if #rows == 0 then
    term.print(keep and "no job matches" or opts.profile
               and ("no jobs of profile " .. opts.profile) or "no jobs yet")
    return 0
  end
  -- ids as their shortest unique prefix among every job of this home
  -- (JOB accepts one, like git's short ids); -l shows them whole
  local shown = {}
  if opts.long then
    for _, r in ipairs(rows) do shown[r.id] = r.id end
  else
    shown = short_ids(rows)
  end
  local id_width = 2
  for _, r in ipairs(rows) do id_width = math.max(id_width, #shown[r.id]) end
  local now = sys.now()
  local util = require "navette.util"
  local function age(r)
    local t = type(r.created) == "string" and util.parse_iso8601(r.created)
    return t and common.age_text(math.max(0, math.floor(now - t))) or "-"
  end
  local project_width = 7
  for _, r in ipairs(rows) do
    project_width = math.max(project_width, #tostring(r.project))
  end
  project_width = math.min(project_width, 20)
  -- (the phase column as wide as its longest phase: most are final)
  local phase_width = 5
  for _, r in ipairs(rows) do
    phase_width = math.max(phase_width, #tostring(r.phase))
  end
  local header = term.pad("ID", id_width) .. " " .. term.pad("STATE", 9)
                 .. " " .. term.pad("AGE", 4) .. " "
                 .. term.pad("PROJECT", project_width) .. " "
                 .. term.pad("PHASE", phase_width)
  local column = remote and remote.describe(rows[1]).column
  term.print(header .. " " .. (column and (term.pad(column.title,
             column.width) .. " ") or "") .. "NAME")
  for _, r in ipairs(rows) do
    local line = term.pad(shown[r.id], id_width) .. " "
                 .. term.state_style("stdout", r.state, 9) .. " "
                 .. term.pad(age(r), 4) .. " "
                 .. term.pad(tostring(r.project):sub(1, project_width),
                             project_width) .. " "
                 .. term.pad(r.phase, phase_width)
    if column then
      local b = require("navette.backends").get(r.backend)
      local where = b == remote and b.describe(r).column.text or "-"
      line = line .. " " .. term.pad(where, column.width)
    end
    term.print(line .. " " .. tostring(r.name))
  end
  return 0
end

return M
