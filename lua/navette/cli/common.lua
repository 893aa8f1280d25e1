-- What the commands of the command line share: the list of commands (in
-- the order `navette help` shows them) and the lookup of one by name, the
-- flag parsing and usage errors, and the display of jobs: following them
-- until they end, their phases and times, their outcome, ages. A command
-- is a file lua/navette/cli/NAME.lua returning {name, summary, usage,
-- flags, read_only, run}; see lua/navette/cli/init.lua, the dispatcher.
-- A backend may bring commands of its own (backends/init.lua: commands),
-- found here from the backends, never by a backend's name.
local errors = require "navette.errors"
local term = require "navette.term"
local jobs = require "navette.jobview"
local sys, json = _navette.sys, _navette.json

local common = {}

-- `help` is not listed: the dispatcher answers it, completion writes its
-- own entry for it, and an unknown name is never suggested as `help`.
common.ORDER = { "run", "plan", "lock", "status", "logs", "watch", "cancel",
                 "rerun", "reuse", "jobs", "outputs", "gc",
                 "migrate", "portability", "doctor", "maintain", "team", "trust", "creds",
                 "audit", "storage", "image", "agent", "test", "completion",
                 "definitions", "version" }

local KNOWN = { help = true }
for _, name in ipairs(common.ORDER) do KNOWN[name] = true end

-- A backend's command (backends/init.lua: commands) as the dispatcher,
-- help and completion see a command: its flags parsed here, then its
-- run(args, ctx) called with what it may use of the command line.
local function backend_command(word, c, backend)
  local cmd = { name = word, summary = c.summary, usage = c.usage,
                flags = c.flags or {}, read_only = false, backend = backend }
  c.flags = cmd.flags -- (the very table the parser gets: completion)
  function cmd.run(argv)
    local opts, args = common.command_args(cmd, argv, true)
    if not opts then return args end
    local ctx = { backend = backend, opts = opts }
    function ctx.usage_error(message) common.usage_error(message, word) end
    -- The project of the working folder, refused unless the user trusts
    -- it on this machine (navette.trust): what needs it is `what`.
    function ctx.project(what)
      local proj = require("navette.project").at(sys.cwd())
      if not proj.file then
        errors.raise("usage", "no navette.lua here (nor in a folder above "
                     .. "it, up to the repository's root)",
                     "run `navette " .. word .. "` in the project's clone")
      end
      require("navette.trust").require(proj, what or ("navette " .. word))
      return proj
    end
    -- term.confirm's answer: true, false, or nil and "not a terminal"
    ctx.confirm = term.confirm
    return c.run(args, ctx)
  end
  return cmd
end

-- The commands the backends bring: {word = command}, in no order. A word
-- that is one of navette's own commands, or another backend's, is a bug.
local function backend_commands()
  local backends = require "navette.backends"
  local found = {}
  for _, bname in ipairs(backends.names()) do
    for word, c in pairs(backends.get(bname).commands or {}) do
      if KNOWN[word] or found[word] then
        error(errors.new("internal", "backend " .. bname .. ": its command '"
                         .. tostring(word) .. "' is already a command"), 0)
      end
      found[word] = backend_command(word, c, bname)
    end
  end
  return found
end

-- Every command's name: ORDER's, then those the backends bring (sorted).
function common.names()
  local out = table.move(common.ORDER, 1, #common.ORDER, 1, {})
  local more = {}
  for word in pairs(backend_commands()) do more[#more + 1] = word end
  table.sort(more)
  return table.move(more, 1, #more, #out + 1, out)
end

-- The command named name (its module, or a backend's command), or nil
-- when there is none.
function common.command(name)
  if KNOWN[name] then return require("navette.cli." .. name) end
  if type(name) ~= "string" or not name:match("^[a-z][a-z0-9-]*$") then
    return nil
  end
  return backend_commands()[name]
end

function common.usage_error(message, command)
  error(errors.new("usage", message, command and
                   ("see `navette " .. command .. " --help`")
                   or "see `navette help`"), 0)
end

-- Parses argv against flags {name = "bool"|"value"}; returns opts, args.
-- A command hands its own flags table, the one completion reads.
function common.parse(command, argv, flags)
  return require("navette.args").parse(argv, flags, function(message)
    common.usage_error(message, command)
  end)
end

-- A command's argv parsed against its flags: returns opts and args. With
-- --help (or, when verbs is true, with no verb) it prints the command's
-- usage instead and returns nil and the exit status (2 for no verb).
function common.command_args(command, argv, verbs)
  local opts, args = common.parse(command.name, argv, command.flags)
  if opts.help or (verbs and #args == 0) then
    term.print(command.usage)
    return nil, opts.help and 0 or 2
  end
  return opts, args
end

-- A command on one argument (status, logs, watch and cancel on a JOB id,
-- portability on a RECIPE): its options and the argument; nil when --help
-- was printed. what names the argument in the usage error.
function common.one_arg(command, argv, what)
  local opts, args = common.command_args(command, argv)
  if not opts then return nil end
  if #args ~= 1 then
    common.usage_error("expected one " .. what, command.name)
  end
  return opts, args[1]
end

-- run and plan: their one RECIPE and its options. Returns opts, the
-- recipe, the nodes asked for (or nil); nil when --help was printed.
function common.recipe_args(command, argv)
  local opts, recipe = common.one_arg(command, argv, "RECIPE")
  if not opts then return nil end
  if opts.node and not opts.node:match("^[%w._%[%],-]+$") then
    common.usage_error("--node expects a node name (or list), got '"
                       .. opts.node .. "'", command.name)
  end
  return opts, recipe, opts.node and { opts.node }
end

local function short_time(iso)
  return iso and iso:match("T([%d:%.]+)Z$") or "?"
end
common.short_time = short_time

local function print_phase(label, phase, at)
  term.printf("  %s%-18s %s\n", label, phase, short_time(at))
end

-- Follows jobs (ids) until all end; prints phases as they pass unless
-- quiet, each line labelled (with several jobs) by labels[id] or the
-- job's name. quiet may be a function(views), called after each look at
-- the jobs instead (a board drawn in place). Returns the final views,
-- and true when Ctrl-C stopped the following (the jobs go on in the
-- agent: see common.interrupted).
function common.follow(ids, quiet, labels)
  local draw = type(quiet) == "function" and quiet or nil
  local seen, views, done = {}, {}, {}
  local remaining, polls = #ids, 0
  sys.trap_interrupt(true)
  while remaining > 0 do
    if sys.interrupted() then
      sys.trap_interrupt(false)
      return views, true
    end
    for _, id in ipairs(ids) do
      if not done[id] then
        local v = jobs.get(id)
        views[id] = v
        seen[id] = seen[id] or {}
        for _, p in ipairs(v.phases) do
          if not seen[id][p.phase] then
            seen[id][p.phase] = true
            if not quiet then
              local label = #ids > 1 and string.format("%-24s ",
                            labels and labels[id] or v.name or id) or ""
              if jobs.FINAL[p.phase] then
                -- styled by its name, then padded by its own length
                term.printf("  %s%s %s\n", label,
                            term.state_style("stdout", p.phase, 18),
                            short_time(p.at))
              else
                print_phase(label, p.phase, p.at)
              end
            end
          end
        end
        if jobs.FINAL[v.state] then
          done[id] = true
          remaining = remaining - 1
          if v.state == "cancelled" and not quiet
             and not seen[id].cancelled then
            -- cancelled before it started: no phase says so
            term.printf("  %s%s\n", #ids > 1 and string.format("%-24s ",
                        labels and labels[id] or v.name or id) or "",
                        term.state_style("stdout", "cancelled"))
          end
        end
      end
    end
    if draw then draw(views) end
    if remaining > 0 then
      sys.sleep(0.1)
      polls = polls + 1
      if polls % 30 == 0 then
        -- every few seconds: can the jobs go on (a local agent there)?
        -- One that cannot is an error with its cause, not a wait
        -- without end
        jobs.supervise(views)
      end
    end
  end
  sys.trap_interrupt(false)
  return views
end

-- After Ctrl-C stopped common.follow: the jobs still run; says how to
-- follow them again. Returns the exit status of an interrupted command
-- (130).
function common.interrupted(ids)
  term.eprint("")
  term.eprint("interrupted: " .. (#ids > 1 and "the jobs keep" or
              "the job keeps") .. " running (navette cancel ID stops it)")
  for _, id in ipairs(ids) do
    term.eprint("  follow it: navette watch " .. id)
    term.eprint("  its log:   navette logs " .. id .. " --follow")
  end
  return 130
end

-- common.follow for a command that goes on after following: Ctrl-C says
-- how to follow again, then raises `interrupted`. Returns the views.
function common.follow_or_raise(ids, quiet, labels)
  local views, stopped = common.follow(ids, quiet, labels)
  if stopped then
    common.interrupted(ids)
    error(errors.new("interrupted", "interrupted while following the jobs"),
          0)
  end
  return views
end

-- A field of a job's view, or nil when absent or JSON null (a view keeps
-- null for --json; what is printed must not see it as a value).
local function given(x)
  if x == nil or x == json.null then return nil end
  return x
end

-- What an exit status a shell gives says, beyond its number.
local SIGNALS = { [1] = "SIGHUP", [2] = "SIGINT", [6] = "SIGABRT",
                  [9] = "SIGKILL", [11] = "SIGSEGV", [13] = "SIGPIPE",
                  [15] = "SIGTERM" }
local function exit_meaning(code)
  if code == 127 then
    return "command not found: the first word of the job's command is "
           .. "not on its PATH, or a script's #! interpreter is missing"
  elseif code == 126 then
    return "found but not executable: a script needs its execute bit "
           .. "(chmod +x, committed) or a shell to run it (sh script.sh)"
  elseif code > 128 and code < 160 then
    local n = code - 128
    return "killed by signal " .. n .. (SIGNALS[n] and (" (" .. SIGNALS[n]
           .. (n == 9 and ": often the memory limit or the OOM killer"
               or "") .. ")") or "")
  end
end

-- A failure's reason, with what its exit status means.
local function reason_text(reason)
  reason = tostring(reason)
  local code = tonumber(reason:match("exited with status (%d+)$"))
  local meaning = code and exit_meaning(code)
  return meaning and (reason .. " (" .. meaning .. ")") or reason
end

-- The redacting stream a job's log goes through before it is shown
-- (`navette logs`, the tail of a failure): what this process masks, and
-- the job's own secrets by the fingerprints its spec keeps.
function common.log_redactor(v)
  local row = jobs.row(v.id)
  if row and row.spec and type(row.spec.redact_fingerprints) == "string"
  then
    _navette.creds.add_fingerprints(row.spec.redact_fingerprints)
  end
  return _navette.creds.redact_stream()
end

-- How many of a failed job's last log lines its outcome shows, read from
-- at most the last TAIL_BYTES of a log file kept here.
local TAIL_LINES, TAIL_BYTES = 20, 64 * 1024
-- (and the bytes of a line it shows at most: the rest is cut)
local TAIL_WIDTH = 300

-- The last n lines of v's log, redacted as `navette logs` shows them:
-- a list (empty for an empty log), or nil and why it cannot be read.
function common.log_tail(v, n)
  local ok, lines = pcall(function()
    local redact = common.log_redactor(v)
    local ring, pending, offset, partial = {}, "", 0, false
    local st = type(v.log_path) == "string" and sys.stat(v.log_path)
    if st and st.type == "file" and st.size > TAIL_BYTES then
      -- a long log: its end only, the line cut at the start dropped
      offset, partial = st.size - TAIL_BYTES, true
    end
    local function put(text)
      pending = pending .. text
      local start = 1
      for line, e in pending:gmatch("([^\n]*)\n()") do
        if partial then
          partial = false
        else
          ring[#ring + 1] = line
          if #ring > n then table.remove(ring, 1) end
        end
        start = e
      end
      pending = pending:sub(start)
    end
    while true do
      local chunk = jobs.log_chunk(v, offset)
      if #chunk == 0 then break end
      offset = offset + #chunk
      put(redact:write(chunk))
    end
    put(redact:flush())
    if pending ~= "" and not partial then put("\n") end
    return ring
  end)
  if ok then return lines end
  local e = lines
  return nil, type(e) == "table" and tostring(e.message) or tostring(e)
end

-- The block of a job that failed: its last log lines (indented, escaped
-- on a terminal as `navette logs` escapes them), the recipe's hint or
-- navette's, and the way to the whole log.
local function print_failure_help(v, failure)
  local lines, problem = common.log_tail(v, TAIL_LINES)
  if not lines then
    term.print("  its log cannot be read: " .. problem)
  elseif #lines == 0 then
    term.print("  its log is empty")
  else
    term.print("  last lines of its log:")
    local tty = _navette.out.tty("stdout")
    for _, line in ipairs(lines) do
      if #line > TAIL_WIDTH then
        -- cut before a UTF-8 continuation byte, never inside a character
        local cut = TAIL_WIDTH
        while cut > 1 and (line:byte(cut + 1) or 0) & 0xC0 == 0x80 do
          cut = cut - 1
        end
        line = line:sub(1, cut) .. " …"
      end
      term.print("    " .. (tty and _navette.out.escape(line) or line))
    end
  end
  local hint = failure and given(failure.hint)
  if type(hint) == "string" then
    term.print("  check: " .. (hint:gsub("ID", v.id)))
  end
  -- a recipe's own hint does not replace the way to the log
  if type(hint) ~= "string" or not hint:find("navette logs", 1, true) then
    term.print("  its log: navette logs " .. v.id)
  end
end

-- The end of a job: its outputs, or where and why it stopped, with (a
-- failure) the last lines of its log and what to check; then its run
-- record. A failure, or named (one of a run's jobs), heads it with the
-- job's name and id.
function common.print_outcome(v, named)
  local failure = type(given(v.failure)) == "table" and v.failure or nil
  local reason = failure and given(failure.reason)
  -- a cancel that stopped the job says so in one line; a job that
  -- ended cancelled for another reason shows that failure
  local cancel = v.state == "cancelled" and (type(reason) ~= "string"
                 or reason:match("^cancelled") ~= nil)
  local failed = v.state == "failed"
                 or (v.state == "cancelled" and not cancel)
  if named or failed then
    term.print("job " .. tostring(given(v.name) or "?") .. " (" .. v.id
               .. "):")
  end
  if v.state == "succeeded" then
    term.print("outputs under " .. tostring(given(v.output_prefix) or "?")
               .. ":")
    for _, o in ipairs(v.outputs) do
      term.printf("  %-32s %10d B  sha256 %s%s\n", o.name, o.size,
                  o.sha256:sub(1, 16) .. "…", o.missing and "  MISSING"
                  or o.changed and "  CHANGED" or "")
    end
    if v.record_problem then
      term.print("  (unknown: the run record is " .. v.record_problem .. ")")
    elseif #v.outputs == 0 then
      term.print("  (no output files)")
    end
  elseif cancel then
    -- one line: the reason says where it stopped; nothing to check
    reason = type(reason) == "string" and reason:gsub("^cancelled ?", "")
             or ""
    term.print(term.state_style("stdout", "cancelled")
               .. (reason ~= "" and (" " .. reason) or ""))
  elseif failed then
    term.print(term.state_style("stdout", v.state) .. " at "
               .. tostring(failure and given(failure.phase) or "?") .. ": "
               .. reason_text(reason or "no reason recorded"))
    print_failure_help(v, failure)
  end
  local record_url = given(v.record_url)
  if record_url then
    term.print("run record: " .. tostring(record_url))
  elseif jobs.FINAL[v.state] and v.state ~= "succeeded" then
    term.print("run record: not published (the job ended before its "
               .. "outputs reached the store)")
  end
end

-- The outcome of each of a run's jobs (ids, their final views), each
-- headed by its name. Returns the exit status: 0 when all succeeded.
function common.print_outcomes(ids, views)
  local status = 0
  for _, id in ipairs(ids) do
    term.print("")
    common.print_outcome(views[id], true)
    if views[id].state ~= "succeeded" then status = 1 end
  end
  return status
end

-- Seconds as a short age ("42s", "5m", "3h", "2d"); "-" for none.
function common.age_text(s)
  if not s then return "-" end
  local neg = s < 0
  s = math.abs(s)
  local text
  if s < 120 then text = s .. "s"
  elseif s < 7200 then text = math.floor(s / 60) .. "m"
  elseif s < 172800 then text = math.floor(s / 3600) .. "h"
  else text = math.floor(s / 86400) .. "d" end
  return neg and ("-" .. text) or text
end

return common
