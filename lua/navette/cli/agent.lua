-- `navette agent`: the local backend's agent in the foreground. The host
-- runs it before Lua starts (host/lib/agent_main.c), so this command has
-- no run: it is here for `navette help` and completion.
local M = {
  name = "agent",
  summary = { { "agent", "run the local agent in the foreground" } },
  usage = [[
usage: navette agent
  Runs the local backend's agent in the foreground (for debugging).
  `navette run` starts one on demand, detached from the terminal.]],
  flags = {},
  read_only = false,
}

return M
