-- The navette command line: picks the command named by the first
-- argument (lua/navette/cli/NAME.lua, listed in navette.cli.common), runs
-- it, prints through navette.term, and maps every error to the manual's
-- exit codes: 0 success; 1 the job failed or a check said no; 2 usage or
-- recipe error, or what it names does not exist; 3 refused, by navette's
-- preconditions or by a service that answered no; 4 a service or backend
-- unreachable or failing; 70 a bug in navette (core/runtime.c tells
-- the Lua VM's own errors in the library's functions); 130 Ctrl-C while
-- following jobs.
--
-- A command is a table {name, summary = {{synopsis, what}...} (its lines
-- in `navette help`), usage (its --help text), flags (what its run hands
-- to the parser, read by completion), read_only, run(argv) -> exit
-- status}. read_only (issue 11): true, or a set of verbs, for a command
-- that executes no program, whatever the project file or a recipe
-- declares: no credential command, no Keychain tool, no image builder.
-- cli.main calls core.forbid_exec() before it, and the C loaders refuse
-- (code not_run). Plan mode forbids the same.
--   read-only, forbidden: plan (plan mode), creds list, audit show and
--     verify, trust (it writes only the user's record), version,
--     completion, definitions, help, and the read verbs
--     of `image` (resolve, inspect, exists) unless a --credential names
--     what to load (navette.cli.image decides);
--   read-only, following jobs `run` submitted: status, logs, watch, jobs
--     (which asks a remote backend with --profile). They load only the
--     credentials named in that job's recorded spec: the declaration
--     that `run` accepted and ran then, never a project file read now,
--     so they can still read an S3 record or ask the backend;
--   acting, may execute: run, cancel, migrate, portability (evaluates
--     a recipe as run's checking pass does, reads the jobs' records),
--     doctor (loads the profile's credentials on request, as creds
--     check),
--     test (runs the project's
--     test files), agent (runs jobs), creds check NAME (loads NAME on
--     request: how to check one whose source is a command), storage
--     (its verbs load only the credential --credential names, or the
--     AWS_* variables), image push-code, pack and build, and the
--     backends' own commands (ssh trust runs ssh);
--   acting, executing nothing: lock (fetches libraries into the cache,
--     writes navette.lock; it evaluates recipes in plan mode, where the
--     C loaders refuse to execute all the same).
local errors = require "navette.errors"
local term = require "navette.term"
local jobs = require "navette.jobview"
local common = require "navette.cli.common"
local core, sys = _navette.core, _navette.sys

local cli = {}

local function unknown(message, name)
  local util = require "navette.util"
  term.error(errors.new("usage", message .. util.suggest(name, common.names()),
                        "see `navette help`"))
  return 2
end

function cli.main(argv)
  local name = argv[1]
  local rest = table.move(argv, 2, #argv, 1, {})
  if name == nil or name == "help" or name == "--help" or name == "-h" then
    local status = common.command("help").run(rest)
    return name == nil and 2 or status
  end
  if name == "--version" then name = "version" end
  local command = common.command(name)
  -- agent has no run here: the host runs it before Lua starts
  if not command or not command.run then
    return unknown("unknown command '" .. name .. "'", name)
  end
  local read_only = command.read_only
  if read_only == true
     or (type(read_only) == "table" and read_only[rest[1]]) then
    core.forbid_exec() -- for good: nothing later can lift it
  end
  local ok, result = core.pcall(command.run, rest)
  local problem = jobs.agent_problem
  if problem then
    -- a read went on without an agent: the states shown may be stale
    term.eprint("warning: the local agent is not running and could not "
                .. "be started: " .. tostring(problem.message)
                .. (problem.hint and ("\n  check: " .. problem.hint) or ""))
  end
  if ok then return result or 0 end
  local e = result
  term.error(e)
  if sys.getenv("NAVETTE_DEBUG") and e.traceback then
    term.eprint(e.traceback)
  end
  return errors.exit_status[e.code] or 4
end

return cli
