-- `navette help [COMMAND|TOPIC]`: the list of commands, one line each
-- (made from each command's summary; the backends' commands after
-- navette's own), one command's usage, or a page of
-- the manual (lua/navette/doc/TOPIC.md, compiled into the binary as the
-- module navette.doc.TOPIC, whose value is the page's text).
local errors = require "navette.errors"
local term = require "navette.term"
local common = require "navette.cli.common"

local M = {
  name = "help",
  summary = {
    { "help [COMMAND]", "this list, or a command's usage" },
    { "help TOPIC", "a part of the manual (`navette help topics`)" },
  },
  usage = [[
usage: navette help [COMMAND|TOPIC]
  Lists the commands, one line each; with COMMAND, prints its usage
  (the same as `navette COMMAND --help`); with TOPIC, prints that part
  of the manual (Markdown); `navette help topics` lists the topics.]],
  flags = {},
  read_only = true,
}

-- The topics: the pages of the manual, by file name.
function M.topics()
  return _navette.core.library("navette.doc")
end

-- The page of topic name, or nil when there is none.
local function page(name)
  if not name:match("^[a-z][a-z0-9-]*$") then return nil end
  for _, topic in ipairs(M.topics()) do
    if topic == name then return require("navette.doc." .. name) end
  end
  return nil
end

local function usage_text()
  local lines = { "usage: navette COMMAND [ARGS]", "", "commands:" }
  local order = common.names()
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
  lines[#lines + 1] = "navette help COMMAND (or COMMAND --help) for more; "
    .. "navette help topics for"
  lines[#lines + 1] = "the manual's topics."
  return table.concat(lines, "\n")
end

-- Each topic and its page's title ("# Title", its first line).
local function topics_text()
  local lines = { "topics (navette help TOPIC):" }
  for _, name in ipairs(M.topics()) do
    local title = page(name):match("^# ([^\n]+)") or ""
    lines[#lines + 1] = string.format("  %-12s %s", name, title)
  end
  return table.concat(lines, "\n")
end

-- A page as it is, its headings in bold where colour is allowed (lines
-- of a fenced block are never headings).
local function show(text)
  local fenced = false
  for line in (text .. "\n"):gmatch("([^\n]*)\n") do
    if line:match("^```") then fenced = not fenced end
    if not fenced and line:match("^#+ ") then
      line = term.style("stdout", "bold", line)
    end
    term.print(line)
  end
end

-- argv: what follows `help`. Exit 0, or 2 for a name that is neither a
-- command nor a topic.
function M.run(argv)
  local topic = argv[1]
  if topic == "--help" or topic == "-h" then topic = "help" end
  local command = topic and common.command(topic)
  if command then
    term.print(command.usage)
  elseif topic == "topics" then
    term.print(topics_text())
  elseif topic and page(topic) then
    show((page(topic):gsub("\n+$", "")))
  elseif topic then
    local util = require "navette.util"
    local known = common.names()
    table.move(M.topics(), 1, #M.topics(), #known + 1, known)
    known[#known + 1] = "topics"
    term.error(errors.new("usage", "no command or topic '" .. topic .. "'"
               .. util.suggest(topic, known),
               "see `navette help` and `navette help topics`"))
    return 2
  else
    term.print(usage_text())
  end
  return 0
end

return M
