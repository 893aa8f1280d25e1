-- `navette watch JOB`: the phase timeline as it passes, until the job
-- ends.
local term = require "navette.term"
local jobs = require "navette.jobs"
local common = require "navette.cli.common"

local M = {
  name = "watch",
  summary = { { "watch JOB", "follow a job's phases until it ends" } },
  usage = [[
usage: navette watch JOB
  Prints the phase timeline as it passes, until the job ends.
  Exit 0 when it succeeded, 1 otherwise.]],
  flags = {},
  read_only = false, -- follows a job: see navette.cli
}

function M.run(argv)
  local opts, args = common.parse(M.name, argv, M.flags)
  if opts.help then term.print(M.usage); return 0 end
  if #args ~= 1 then common.usage_error("expected one JOB id", "watch") end
  local v = jobs.get(args[1])
  term.print("job " .. v.id .. " (" .. tostring(v.name) .. ")")
  local views, stopped = common.follow({ v.id }, false)
  if stopped then return common.interrupted({ v.id }) end
  v = views[v.id]
  common.print_outcome(v)
  return v.state == "succeeded" and 0 or 1
end

return M
