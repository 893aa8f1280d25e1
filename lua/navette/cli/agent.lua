-- `navette agent [status|stop]`: the local backend's agent in the
-- foreground, what it is, and a clean stop of it. The host answers all
-- three before Lua starts (host/lib/agent_main.c), so this command has
-- no run: it is here for `navette help` and completion.
local M = {
  name = "agent",
  summary = { { "agent", "run the local agent in the foreground" },
              { "agent status", "the agent's pid, since when, jobs, sandbox" },
              { "agent stop", "stop the agent (--force: while jobs run)" } },
  usage = [[
usage: navette agent [--quiet-if-running]
       navette agent status [--json]
       navette agent stop [--force]
  `agent` runs the local backend's agent in the foreground (for
  debugging); `navette run` starts one on demand, detached from the
  terminal. `status`: its pid, since when, the jobs running and queued,
  and the sandbox jobs on the host get (bwrap's version, or none).
  `stop` stops it; refused (exit 3) while jobs run or are queued, unless
  --force: running jobs then go on and the next agent adopts them.
  --quiet-if-running  another agent of this home is not an error
  --json              status as one JSON object
  --force             stop even while jobs run or are queued]],
  flags = { json = "bool", force = "bool" },
  read_only = false,
}

return M
