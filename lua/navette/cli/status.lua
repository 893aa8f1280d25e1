-- `navette status JOB`: a job's state, phases with their times, commit,
-- image, the backend's line, and its outcome.
local term = require "navette.term"
local jobs = require "navette.jobview"
local common = require "navette.cli.common"
local json = _navette.json

local M = {
  name = "status",
  summary = { { "status JOB", "a job's state, phases, outputs, failure" } },
  usage = [[
usage: navette status JOB [--json]
  Shows a job's state, phases with timestamps, commit, image, outputs and
  failure. Exit 1 if it failed, or if its run record or an output it
  lists is missing or damaged in the store (said on stderr).
  JOB: a job's id or unique prefix, its name (the latest job of that name
  in this project), or `last`; a run id lists the run's jobs.]],
  flags = { json = "bool" },
  read_only = false, -- follows a job: see navette.cli
}

function M.run(argv)
  local opts, given = common.one_arg(M, argv, "JOB id")
  if not opts then return 0 end
  local v = jobs.get(jobs.resolve(given, "status").id)
  -- what the status shows is there: the run record, and each output it
  -- lists (a head per output)
  local row = jobs.row(v.id)
  local bad = jobs.check_outputs(v, row and row.spec)
  if opts.json then
    term.print(json.encode(v, true))
  else
    term.print("job     " .. v.id .. " (" .. tostring(v.name) .. ")")
    term.print("state   " .. term.state_style("stdout", v.state)
               .. (v.phase ~= v.state and (" · phase " .. v.phase) or "")
               .. (v.attempt and (" · attempt " .. v.attempt) or ""))
    term.print("project " .. tostring(v.project) .. " · profile "
               .. tostring(v.profile))
    term.print("commit  " .. tostring(v.commit))
    local again = row and row.spec and row.spec.rerun_of
    if again then term.print("rerun   of job " .. tostring(again)) end
    term.print("image   " .. tostring(v.image))
    local backend = require("navette.backends").get(v.backend)
    local shown = backend.describe and backend.describe(v)
    if shown then
      term.print(shown.line)
      if shown.note then term.print("  " .. shown.note) end
    end
    term.print("phases:")
    for _, p in ipairs(v.phases) do
      term.printf("  %s %s\n", jobs.FINAL[p.phase]
                  and term.state_style("stdout", p.phase, 18)
                  or string.format("%-18s", p.phase), p.at)
    end
    if v.exit_code ~= nil and v.exit_code ~= json.null then
      term.print("exit    " .. tostring(v.exit_code))
    end
    if jobs.FINAL[v.state] then common.print_outcome(v) end
  end
  if v.record_problem then
    term.eprint("navette: the run record of job " .. v.id .. " is "
                .. v.record_problem .. " (" .. tostring(v.record_url)
                .. "): its outputs cannot be listed\n  check: something "
                .. "removed or changed it in the store; the job's log is "
                .. "in NAVETTE_HOME/jobs/" .. v.id .. "/log, run the job "
                .. "again to publish its outputs anew")
  end
  for _, o in ipairs(v.outputs) do
    if o.missing or o.changed then
      term.eprint("navette: output " .. tostring(o.name) .. " of job "
                  .. v.id .. " is " .. (o.missing and "missing from" or
                  "not the one published in") .. " the store ("
                  .. tostring(o.url) .. ")\n  check: something removed or "
                  .. "replaced it after the job published it; run the job "
                  .. "again to publish it anew")
    end
  end
  if v.state == "failed" or v.state == "cancelled" then return 1 end
  if v.record_problem or bad > 0 then return 1 end
  return 0
end

return M
