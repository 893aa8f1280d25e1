-- A command made of verbs (`navette storage VERB`, `navette image VERB`):
-- the help, the usage errors, the flag parsing with the flags every verb
-- shares, and the main that picks the verb. A command gives its name, its
-- verbs in the order shown, each verb's help (its first line
-- "usage: navette NAME VERB ..."), the text of the shared options, those
-- options' flags, and then its commands (verb -> function(argv) ->
-- exit status). Errors are raised as error objects; navette.cli maps them
-- to exit codes.
local errors = require "navette.errors"
local term = require "navette.term"
local util = require "navette.util"

local subcommand = {}

local Command = {}
Command.__index = Command

-- subcommand.new{name=, verbs=, help=, common=, common_flags=}; set
-- .commands before main is called.
function subcommand.new(def)
  return setmetatable(def, Command)
end

function Command:usage_text()
  local lines = { "usage: navette " .. self.name .. " VERB ARGS [options]",
                  "", "verbs:" }
  local first = "^usage: navette " .. self.name .. " ([^\n]*)"
  for _, v in ipairs(self.verbs) do
    lines[#lines + 1] = "  " .. self.help[v]:match(first)
  end
  lines[#lines + 1] = ""
  lines[#lines + 1] = self.common
  lines[#lines + 1] = ""
  lines[#lines + 1] = "navette " .. self.name .. " VERB --help for more."
  return table.concat(lines, "\n")
end

-- A verb's help with the shared options.
function Command:verb_help(verb)
  return self.help[verb] .. "\n\n" .. self.common
end

-- Prints the verb's help; returns 0, the exit status of --help.
function Command:print_help(verb)
  term.print(self:verb_help(verb))
  return 0
end

function Command:usage_error(message, verb)
  error(errors.new("usage", message, verb and
                   ("see `navette " .. self.name .. " " .. verb
                    .. " --help`")
                   or ("see `navette " .. self.name .. " help`")), 0)
end

-- Parses a verb's argv: its flags {name = "bool"|"value"} and the shared
-- ones. Returns opts, args.
function Command:parse(verb, argv, flags)
  local all = {}
  for k, v in pairs(self.common_flags) do all[k] = v end
  for k, v in pairs(flags or {}) do all[k] = v end
  return require("navette.args").parse(argv, all, function(message)
    self:usage_error(message, verb)
  end)
end

-- argv without the command's name; returns the exit status (errors
-- raise). No verb prints the usage and exits 2; help [VERB] exits 0.
function Command:main(argv)
  local verb = argv[1]
  local rest = table.move(argv, 2, #argv, 1, {})
  if verb == nil or verb == "help" or verb == "--help" or verb == "-h" then
    local topic = rest[1]
    if topic and self.help[topic] then
      term.print(self:verb_help(topic))
    elseif topic then
      self:usage_error("no " .. self.name .. " verb '" .. topic .. "'"
                       .. util.suggest(topic, self.verbs))
    else
      term.print(self:usage_text())
    end
    return verb == nil and 2 or 0
  end
  local fn = self.commands[verb]
  if not fn then
    self:usage_error("unknown " .. self.name .. " verb '" .. verb .. "'"
                     .. util.suggest(verb, self.verbs))
  end
  return fn(rest)
end

return subcommand
