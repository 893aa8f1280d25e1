-- The jobs of a run as a graph: each job runs after the jobs its `after`
-- names (its inputs taken from other jobs' outputs have joined `after`).
-- A recipe may name a job declared later; the run is checked once every
-- job is declared: each name must be a job of the run, and no job may
-- run after itself, directly or through others. Pure logic, no I/O.
local errors = require "navette.errors"

local M = {}

-- The cycle that the search met, from the first visit of `name` on the
-- stack to the top: "a runs after c, which runs after b, which runs
-- after a".
local function cycle_text(stack, name)
  local from = #stack
  while stack[from] ~= name do from = from - 1 end
  local text = stack[from]
  for i = from + 1, #stack do
    text = text .. (i == from + 1 and " runs after " or ", which runs after ")
           .. stack[i]
  end
  return text .. (#stack == from and " runs after " or ", which runs after ")
         .. name
end

-- jobs: a list of { name = ..., after = { names } }. -> the same jobs,
-- each after those it runs after, otherwise in the order given. Raises a
-- "recipe" error naming an unknown job or the first cycle found.
function M.order(jobs)
  local by_name = {}
  for _, j in ipairs(jobs) do by_name[j.name] = j end
  local state, stack, out = {}, {}, {}
  local function visit(j)
    if state[j.name] == "done" then return end
    if state[j.name] == "open" then
      errors.raise("recipe", "the jobs' dependencies form a cycle: "
                   .. cycle_text(stack, j.name), "a job cannot run after "
                   .. "itself, directly or through others: remove one of "
                   .. "these after = {...} or inputs")
    end
    state[j.name] = "open"
    stack[#stack + 1] = j.name
    for _, name in ipairs(j.after or {}) do
      local producer = by_name[name]
      if not producer then
        errors.raise("recipe", "job '" .. j.name .. "' runs after '"
                     .. name .. "', which is not a job of this run",
                     "name a job the recipe declares (or pass what "
                     .. "navette.job returned)")
      end
      visit(producer)
    end
    stack[#stack] = nil
    state[j.name] = "done"
    out[#out + 1] = j
  end
  for _, j in ipairs(jobs) do visit(j) end
  return out
end

return M
