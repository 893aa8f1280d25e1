-- `navette help [COMMAND]`: the list of commands, one line each (made
-- from each command's summary), or one command's usage.
local errors = require "navette.errors"
local term = require "navette.term"
local common = require "navette.cli.common"

local M = {
  name = "help",
  summary = { { "help [COMMAND]", "this list, or a command's usage" } },
  usage = [[
usage: navette help [COMMAND]
  Lists the commands, one line each; with COMMAND, prints its usage
  (the same as `navette COMMAND --help`).]],
  flags = {},
  read_only = true,
}

local function usage_text()
  local lines = { "usage: navette COMMAND [ARGS]", "", "commands:" }
  local order = table.move(common.ORDER, 1, #common.ORDER, 1, {})
  order[#order + 1] = "help"
  for _, name in ipairs(order) do
    for _, entry in ipairs(common.command(name).summary) do
      local line = string.format("  navette %-22s %s", entry[1], entry[2])
      if #entry[1] > 22 then
        -- a long synopsis: what it does goes under it, in its column
        lines[#lines + 1] = "  navette " .. entry[1]
        line = string.rep(" ", 33) .. entry[2]
      end
      lines[#lines + 1] = line
    end
  end
  lines[#lines + 1] = ""
  lines[#lines + 1] = "navette help COMMAND (or COMMAND --help) for more."
  return table.concat(lines, "\n")
end

-- argv: what follows `help`. Exit 0, or 2 for a command that is not one.
function M.run(argv)
  local topic = argv[1]
  if topic == "--help" or topic == "-h" then topic = "help" end
  local command = topic and common.command(topic)
  if command then
    term.print(command.usage)
  elseif topic then
    local util = require "navette.util"
    term.error(errors.new("usage", "no command '" .. topic .. "'"
               .. util.suggest(topic, common.ORDER), "see `navette help`"))
    return 2
  else
    term.print(usage_text())
  end
  return 0
end

return M
