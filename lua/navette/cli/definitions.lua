-- `navette definitions [FILE]`: the LuaLS definitions of the recipe API,
-- made by navette.luals from the tables the validators use.
local errors = require "navette.errors"
local term = require "navette.term"
local common = require "navette.cli.common"

local M = {
  name = "definitions",
  summary = { { "definitions [FILE]", "LuaLS definitions for recipes" } },
  usage = [[
usage: navette definitions [FILE]
  Writes the LuaLS definitions of the recipe API (navette.job's fields,
  the primitives and their options) to FILE, or prints them; made from
  the tables the validators use. See `navette help editors`.]],
  flags = {},
  read_only = true,
}

function M.run(argv)
  local opts, rest = common.command_args(M, argv)
  if not opts then return 0 end
  if #rest > 1 then
    error(errors.new("usage", "expected at most one FILE",
                     "see `navette definitions --help`"), 0)
  end
  local text = require("navette.luals").generate()
  if #rest == 0 then term.write(text); return 0 end
  -- written whole or not at all (a temporary file, then a rename)
  local ok, err = _navette.sys.write_file(rest[1], text)
  if not ok then
    error(errors.new("refused", "cannot write " .. rest[1] .. ": "
                     .. tostring(err and err.message)), 0)
  end
  return 0
end

return M
