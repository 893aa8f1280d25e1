-- `navette trust [--show | --revoke | --list] [DIR]`: the user's explicit
-- act that lets the project file of a checkout bind their secrets, files
-- and endpoints (navette.trust). It shows what it trusts; a change since
-- the last trust is shown as a diff.
local term = require "navette.term"
local common = require "navette.cli.common"
local sys, json = _navette.sys, _navette.json

local M = {
  name = "trust",
  summary = { { "trust [--show|--revoke|--list] [DIR]",
                "let this clone's navette.lua bind your secrets" } },
  usage = [[
usage: navette trust [--show | --revoke | --list] [DIR]
  navette.lua comes with a clone. What it binds of yours (credential
  sources, variables, paths and hosts; data set paths; its profiles'
  stores, endpoints and backends; its team repository) takes effect only
  once you trust it in that checkout: until then `navette plan` shows
  what it would bind and loads nothing, and `navette run` refuses
  (exit 3). Trust covers what it binds now: a change is refused, with
  its diff, until you trust again. The record is kept in your
  configuration ($XDG_CONFIG_HOME/navette/trusted/, else
  ~/.config/navette/trusted/), never in a repository.
  Without a flag, trusts the project holding DIR (default: here) and
  prints what it binds.
  --show     print what it binds and whether it is trusted; change nothing
  --revoke   forget the trust of that checkout
  --list     the checkouts you trust
  --json     machine-readable output]],
  flags = { show = "bool", revoke = "bool", list = "bool", json = "bool" },
  -- (it runs no program: it reads the project file and writes a record
  -- in the user's configuration)
  read_only = true,
}

local function print_bindings(text)
  if text == "" then
    term.print("  (it binds nothing of yours)")
    return
  end
  for line in text:gmatch("[^\n]+") do term.print("  " .. line) end
end

function M.run(argv)
  local opts, args = common.command_args(M, argv)
  if not opts then return 0 end
  local n = (opts.show and 1 or 0) + (opts.revoke and 1 or 0)
            + (opts.list and 1 or 0)
  if n > 1 then
    common.usage_error("--show, --revoke and --list exclude each other",
                       M.name)
  end
  if #args > 1 then common.usage_error("expected at most one DIR", M.name) end
  local trust = require "navette.trust"
  if opts.list then
    if #args > 0 then common.usage_error("--list takes no DIR", M.name) end
    local rows = trust.list()
    if opts.json then term.print(json.encode(json.array(rows), true)); return 0 end
    if #rows == 0 then term.print("no trusted checkout"); return 0 end
    for _, r in ipairs(rows) do
      term.printf("%s  %s%s\n", r.trusted_at or "?", r.root,
                  r.stale and "  (its navette.lua is gone)" or "")
    end
    return 0
  end
  local dir = args[1] or sys.cwd()
  local real = sys.realpath(dir)
  if not real then
    common.usage_error("no folder '" .. dir .. "'", M.name)
  end
  local proj = require("navette.project").at(real)
  if not proj.file then
    common.usage_error("no navette.lua in the repository holding " .. real,
                       M.name)
  end
  local st = trust.state(proj)
  if opts.revoke then
    local had = trust.revoke(proj.root)
    term.print((had and "no longer trusted: " or "was not trusted: ")
               .. proj.root)
    return 0
  end
  if opts.show then
    if opts.json then
      term.print(json.encode({ root = proj.root, file = proj.file,
                        state = st.state, bindings = proj.bindings or "",
                        diff = st.diff, trusted_at = st.trusted_at }, true))
      return 0
    end
    term.print(proj.file .. " binds:")
    print_bindings(proj.bindings or "")
    if st.state == "changed" then
      term.print("changed since you trusted it (" .. tostring(st.trusted_at)
                 .. "):")
      term.print(st.diff)
    end
    term.print("state: " .. (st.state == "none" and "nothing to trust"
                             or st.state))
    return 0
  end
  if st.state == "none" then
    term.print(proj.file .. " binds nothing of yours: nothing to trust")
    return 0
  end
  if st.state == "changed" then
    term.print("what changed since you trusted it (" .. tostring(st.trusted_at)
               .. "):")
    term.print(st.diff)
  end
  local path = trust.record(proj)
  if opts.json then
    term.print(json.encode({ root = proj.root, file = proj.file,
                             state = "trusted", bindings = proj.bindings,
                             record = path }, true))
    return 0
  end
  term.print("trusted " .. proj.file .. ", which binds:")
  print_bindings(proj.bindings)
  return 0
end

return M
