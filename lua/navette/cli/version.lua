-- `navette version`: the versions of navette and of its libraries.
local term = require "navette.term"
local common = require "navette.cli.common"
local json = _navette.json

local M = {
  name = "version",
  summary = { { "version", "versions of navette and its libraries" } },
  usage = [[
usage: navette version [--linked] [--json]
  Prints the versions of navette and of the libraries it runs on.
  libcurl, libgit2 and OpenSSL are loaded on first use and shown as
  built against; --linked loads them and shows the ones in use.]],
  flags = { json = "bool", linked = "bool" },
  read_only = true,
}

function M.run(argv)
  local opts = common.command_args(M, argv)
  if not opts then return 0 end
  local v = _navette.core.versions(opts.linked)
  -- the matchers of the redactor and of the code layers' gzip
  v.redact = _navette.creds.redact_engine(opts.linked)
  v.gzip = _navette.git.gzip_engine()
  if opts.json then term.print(json.encode(v, true)); return 0 end
  term.print("navette " .. v.navette)
  for _, k in ipairs({ "lua", "libgit2", "libcurl", "sqlite", "openssl",
                       "cjson", "zlib", "expat", "redact", "gzip" }) do
    if v[k] then term.printf("  %-8s %s\n", k, v[k]) end
  end
  return 0
end

return M
