-- `navette test FILE...`: runs Lua test files (navette.testing).
local common = require "navette.cli.common"

local M = {
  name = "test",
  summary = { { "test FILE...", "run Lua test files with the host" } },
  usage = [[
usage: navette test [--host] FILE...
  Runs Lua test files: each registers cases with test.test(name, fn) and
  checks with test.eq, test.ok, test.match, test.raises (test.skip(why)
  skips a case). A test file is untrusted like a recipe: it runs in the
  recipe sandbox with the public API. --host gives it navette's whole
  library (_navette and the internal modules): only for navette's own
  tests (tests/lua/), never for files you have not read.]],
  flags = { host = "bool" },
  read_only = false,
}

function M.run(argv)
  local opts, args = common.command_args(M, argv)
  if not opts then return 0 end
  if #args == 0 then common.usage_error("expected test files", "test") end
  return require("navette.testing").run_files(args, { host = opts.host })
end

return M
