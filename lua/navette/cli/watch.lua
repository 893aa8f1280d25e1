-- `navette watch JOB|RUN`: the phase timeline as it passes, until the
-- job ends, or every job of one `navette run` until all have ended.
local term = require "navette.term"
local jobs = require "navette.jobview"
local common = require "navette.cli.common"

local M = {
  name = "watch",
  summary = { { "watch JOB|RUN", "follow a job's phases until it ends" } },
  usage = [[
usage: navette watch JOB|RUN
  Prints the phase timeline as it passes, until the job ends. Given the
  id of a run (what `navette run` printed for a recipe of several jobs),
  follows every job of that run until all have ended: on a terminal, a
  line per job with its current phase, updated in place; otherwise one
  line per phase, each labelled with its job's name.
  JOB: a job's id or unique prefix, its name (the latest job of that name
  in this project), a glob of names (train[*]: the latest of each), or
  `last`; several jobs are followed like a run.
  Exit 0 when it (or every job of the run) succeeded, 1 otherwise.]],
  flags = {},
  read_only = false, -- follows a job: see navette.cli
}

function M.run(argv)
  local opts, given = common.one_arg(M, argv, "JOB id")
  if not opts then return 0 end
  local pick = jobs.pick(given)
  if pick.run or #pick.rows > 1 then
    local ids = {}
    for i, r in ipairs(pick.rows) do ids[i] = r.id end
    return M.watch_run(pick.run or given, ids)
  end
  local v = jobs.get(pick.rows[1].id)
  term.print("job " .. v.id .. " (" .. tostring(v.name) .. ")")
  local views, stopped = common.follow({ v.id }, false)
  if stopped then return common.interrupted({ v.id }) end
  v = views[v.id]
  common.print_outcome(v)
  return v.state == "succeeded" and 0 or 1
end

-- On a terminal, a run's jobs as a board redrawn in place: a line per
-- job (its name, its state, its current phase, the time of that phase)
-- over a count of the jobs by state; a run of more than BOARD_LINES jobs shows
-- the count alone. Lines are redrawn only when they changed.
local BOARD_LINES = 30

local function board_lines(ids, views)
  local lines, count, order = {}, {}, {}
  for _, id in ipairs(ids) do
    local v = views[id]
    local state = v and v.state or "submitted"
    if not count[state] then order[#order + 1] = state end
    count[state] = (count[state] or 0) + 1
    if #ids <= BOARD_LINES then
      local last = v and v.phases and v.phases[#v.phases]
      local phase = last and not jobs.FINAL[state] and last.phase or ""
      lines[#lines + 1] = "  " .. term.pad(v and v.name or id, 28) .. " "
        .. term.state_style("stdout", state, 10) .. " "
        .. term.pad(phase, 14) .. " "
        .. (last and common.short_time(last.at) or "")
    end
  end
  local parts = {}
  for _, state in ipairs(order) do
    parts[#parts + 1] = count[state] .. " " .. state
  end
  lines[#lines + 1] = "  " .. #ids .. " jobs: " .. table.concat(parts, ", ")
  return lines
end

local function board(ids)
  local out, shown = _navette.out, {}
  return function(views)
    local lines = board_lines(ids, views)
    if #shown > 0 then out.raw("stdout", "\27[" .. #shown .. "A") end
    for i, line in ipairs(lines) do
      if shown[i] ~= line then
        out.raw("stdout", "\r\27[K")
        out.write("stdout", line)
      end
      out.write("stdout", "\n")
    end
    shown = lines
  end
end

-- Every job of one run, until all have ended.
function M.watch_run(run, ids)
  term.print("run " .. run .. " (" .. #ids .. " jobs)")
  local tty = _navette.out.tty("stdout")
  local views, stopped = common.follow(ids, tty and board(ids) or false)
  if stopped then return common.interrupted(ids) end
  local status = 0
  for _, id in ipairs(ids) do
    common.print_outcome(views[id], #ids > 1)
    if views[id].state ~= "succeeded" then status = 1 end
  end
  return status
end

return M
