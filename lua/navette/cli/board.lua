-- The board of a run's jobs, as `navette watch RUN` and `navette run
-- --wait` draw it on a terminal: a line per job (its name, its state, its
-- current phase, the time of that phase) over a count of the jobs by
-- state, redrawn in place as they move. Not a command (see
-- navette.cli.common's ORDER).
local term = require "navette.term"
local jobs = require "navette.jobview"
local common = require "navette.cli.common"

local board = {}

-- A run of more than LINES jobs shows the count alone.
local LINES = 30

-- the phase column: as wide as the longest phase
local PHASE_WIDTH = 0
for _, phase in ipairs(jobs.PHASES) do
  PHASE_WIDTH = math.max(PHASE_WIDTH, #phase)
end

-- The board's lines for the jobs ids, as views (by id) show them; a job
-- without a view yet is submitted.
function board.lines(ids, views)
  local lines, count, order = {}, {}, {}
  for _, id in ipairs(ids) do
    local v = views[id]
    local state = v and v.state or "submitted"
    if not count[state] then order[#order + 1] = state end
    count[state] = (count[state] or 0) + 1
    if #ids <= LINES then
      local last = v and v.phases and v.phases[#v.phases]
      local phase = last and not jobs.FINAL[state] and last.phase or ""
      lines[#lines + 1] = "  " .. term.pad(v and v.name or id, 28) .. " "
        .. term.state_style("stdout", state, 10) .. " "
        .. term.pad(phase, PHASE_WIDTH) .. " "
        .. (last and common.short_time(last.at) or "")
    end
  end
  local parts = {}
  for _, state in ipairs(order) do
    parts[#parts + 1] = count[state] .. " " .. state
  end
  lines[#lines + 1] = "  " .. #ids .. (#ids == 1 and " job: " or " jobs: ")
                      .. table.concat(parts, ", ")
  return lines
end

-- A drawer of the board of ids for common.follow: each call moves the
-- cursor up over the board it drew last and rewrites the lines that
-- changed.
function board.drawer(ids)
  local out, shown = _navette.out, {}
  return function(views)
    local lines = board.lines(ids, views)
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

-- Follows the jobs ids until all end: on a terminal the board redrawn in
-- place, otherwise a line per phase labelled by its job's name (see
-- common.follow, which this returns).
function board.follow(ids)
  local tty = _navette.out.tty("stdout")
  return common.follow(ids, tty and board.drawer(ids) or false)
end

return board
