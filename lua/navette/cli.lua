-- The navette command line. Parses arguments, runs the command, prints
-- through navette.term, and maps every error to the README's exit codes:
-- 0 success; 1 the job failed or a check said no; 2 usage or recipe error,
-- or what it names does not exist; 3 refused, by navette's preconditions
-- or by a service that answered no; 4 a service or backend unreachable or
-- failing; 130 Ctrl-C while following jobs.
local errors = require "navette.errors"
local term = require "navette.term"
local jobs = require "navette.jobs"
local core, sys, json = _navette.core, _navette.sys, _navette.json

local cli = {}

local HELP = {
  run = [[
usage: navette run RECIPE [--profile P] [--node NAME] [--wait] [--json]
  Evaluates RECIPE and submits every job it declares to the profile's
  backend (default profile: the project's default, else `local`).
  --node N   run on node N (slurm backend; a node list like gpu-[1-2])
  --wait     follow the jobs until they end; exit 1 if one failed
  --json     print the jobs as JSON (see README, "--json fields")]],
  plan = [[
usage: navette plan RECIPE [--profile P] [--json]
  Runs RECIPE in plan mode: nothing is uploaded, exported or submitted;
  prints what would be done, with each job's spec and launcher.]],
  status = [[
usage: navette status JOB [--json]
  Shows a job's state, phases with timestamps, commit, image, outputs and
  failure. JOB may be a unique prefix of the id. Exit 1 if it failed.]],
  logs = [[
usage: navette logs JOB [--follow] [--tail N] [--json]
  Prints the job's log (its stdout and stderr, as one stream).
  --follow   keep printing until the job ends
  --tail N   start with the last N lines only
  --json     one JSON object per line: {time, stream, job, line}, where
             time is when navette read the line and stream is "output"]],
  watch = [[
usage: navette watch JOB
  Prints the phase timeline as it passes, until the job ends.
  Exit 0 when it succeeded, 1 otherwise.]],
  cancel = [[
usage: navette cancel JOB [--no-wait]
  Cancels a queued or running job (its whole process group), then waits
  up to 10 s for it to stop: prints the full id and `cancelled` once it
  has, `stopping` if it has not yet (--no-wait: do not wait).]],
  jobs = [[
usage: navette jobs [--profile P] [--json] [--limit N] [-l]
  Lists recent jobs, newest first (50 unless --limit), with their age.
  Ids show as their shortest unique prefix (any command takes one);
  -l (--long) shows them whole, as --json does. --profile keeps
  that profile's jobs; those still queued or running on Slurm are asked
  of Slurm first, and shown with their Slurm job, state and node.]],
  agent = [[
usage: navette agent
  Runs the local backend's agent in the foreground (for debugging).
  `navette run` starts one on demand, detached from the terminal.]],
  test = [[
usage: navette test [--host] FILE...
  Runs Lua test files: each registers cases with test.test(name, fn) and
  checks with test.eq, test.ok, test.match, test.raises (test.skip(why)
  skips a case). A test file is untrusted like a recipe: it runs in the
  recipe sandbox with the public API. --host gives it navette's whole
  library (_navette and the internal modules): only for navette's own
  tests (tests/lua/), never for files you have not read.]],
  creds = [[
usage: navette creds list [--profile P] [--json]
       navette creds check NAME [--profile P] [--json]
  Shows the credentials the project declares: names, kinds, sources, ages
  and expiries, never values. `check` loads one and exits 1 when it is
  expired or older than the profile's max_credential_age, 3 when its
  source refuses (a file readable by others, a missing variable).]],
  storage = [[
usage: navette storage cp|ls|rm|mb|presign|post-policy|sign ... [--endpoint URL]
  Object storage over S3 (see `navette storage help`).]],
  image = [[
usage: navette image resolve|inspect|exists|push-code|pack|build ...
  Images pinned by digest; push-code pushes a commit as a code layer
  (see `navette image help`).]],
  audit = [[
usage: navette audit verify [--json]
       navette audit show [--job ID] [--json]
  The audit log: one hash-chained line per side effect (submit, cancel,
  upload, refusal, credential minted). `verify` checks the chain and names
  the first edited, removed, reordered or truncated line (exit 1); `show`
  on a damaged log names the damage after the lines it read (exit 1).]],
  migrate = [[
usage: navette migrate JOB --to NODE [--no-wait] [--json]
  Submits the same definition as JOB (same commit, image digest and
  inputs) on NODE (slurm backend), waits for both, and compares their run
  records: logs present, the same declared outputs present, and the
  outputs' sha256 equal (where the job is deterministic). Exit 0 when the
  comparison holds, 1 otherwise.]],
  completion = [[
usage: navette completion bash|zsh|fish
  Prints the shell's completion script for navette, made from the
  commands' own flag tables. For example, in ~/.bashrc:
  source <(navette completion bash)]],
  definitions = [[
usage: navette definitions [FILE]
  Writes the LuaLS definitions of the recipe API (navette.job's fields,
  the primitives and their options) to FILE, or prints them; made from
  the tables the validators use. See README, "Editor support".]],
  version = [[
usage: navette version [--linked] [--json]
  Prints the versions of navette and of the libraries it runs on.
  libcurl, libgit2 and OpenSSL are loaded on first use and shown as
  built against; --linked loads them and shows the ones in use.]],
  help = [[
usage: navette help [COMMAND]
  Lists the commands, one line each; with COMMAND, prints its usage
  (the same as `navette COMMAND --help`).]],
}

local ORDER = { "run", "plan", "status", "logs", "watch", "cancel", "jobs",
                "migrate", "creds", "audit", "storage", "image", "agent", "test",
                "completion", "definitions", "version" }

-- `navette help`: one line per command (and per verb of creds and audit),
-- its synopsis and what it does; a command without a line here shows its
-- usage line.
local SUMMARY = {
  run = { { "run RECIPE", "submit a recipe's jobs (--wait to follow)" } },
  plan = { { "plan RECIPE", "show what run would do, doing nothing" } },
  status = { { "status JOB", "a job's state, phases, outputs, failure" } },
  logs = { { "logs JOB", "a job's log (--follow, --tail N, --json)" } },
  watch = { { "watch JOB", "follow a job's phases until it ends" } },
  cancel = { { "cancel JOB", "stop a queued or running job" } },
  jobs = { { "jobs", "recent jobs, newest first" } },
  migrate = { { "migrate JOB --to NODE", "rerun a Slurm job on NODE, compare" } },
  creds = { { "creds list", "declared credentials and their status" },
            { "creds check NAME", "load one credential, check its age" } },
  audit = { { "audit verify", "check the audit log's hash chain" },
            { "audit show", "list the audit log's lines" } },
  storage = { { "storage VERB ...", "object storage over S3 (cp, ls, rm...)" } },
  image = { { "image VERB ...", "images by digest, code layers" } },
  agent = { { "agent", "run the local agent in the foreground" } },
  test = { { "test FILE...", "run Lua test files with the host" } },
  completion = { { "completion SHELL", "shell completions (bash, zsh, fish)" } },
  definitions = { { "definitions [FILE]", "LuaLS definitions for recipes" } },
  version = { { "version", "versions of navette and its libraries" } },
  help = { { "help [COMMAND]", "this list, or a command's usage" } },
}

local function usage_text()
  local lines = { "usage: navette COMMAND [ARGS]", "", "commands:" }
  local order = table.move(ORDER, 1, #ORDER, 1, {})
  order[#order + 1] = "help"
  for _, c in ipairs(order) do
    for _, entry in ipairs(SUMMARY[c] or {}) do
      lines[#lines + 1] = string.format("  navette %-22s %s", entry[1],
                                        entry[2])
    end
    if not SUMMARY[c] and HELP[c] then
      lines[#lines + 1] = "  " .. HELP[c]:match("^usage: ([^\n]*)")
    end
  end
  lines[#lines + 1] = ""
  lines[#lines + 1] = "navette help COMMAND (or COMMAND --help) for more."
  return table.concat(lines, "\n")
end

local function usage_error(message, command)
  error(errors.new("usage", message, command and
                   ("see `navette " .. command .. " --help`")
                   or "see `navette help`"), 0)
end

-- Parses argv against flags {name = "bool"|"value"}; returns opts, args.
local function parse(command, argv, flags)
  return require("navette.args").parse(argv, flags, function(message)
    usage_error(message, command)
  end)
end

local function short_time(iso)
  return iso and iso:match("T([%d:%.]+)Z$") or "?"
end

-- ---- run / plan -----------------------------------------------------------

local function print_phase(label, phase, at)
  term.printf("  %s%-18s %s\n", label, phase, short_time(at))
end

-- Follows jobs (ids) until all end; prints phases as they pass unless
-- quiet, each line labelled (with several jobs) by labels[id] or the
-- job's name. Returns the final views, and true when Ctrl-C stopped the
-- following (the jobs go on in the agent: see interrupted()).
local function follow(ids, quiet, labels)
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

-- After Ctrl-C stopped follow(): the jobs still run; says how to follow
-- them again. Returns the exit status of an interrupted command (130).
local function interrupted(ids)
  term.eprint("")
  term.eprint("interrupted: " .. (#ids > 1 and "the jobs keep" or
              "the job keeps") .. " running (navette cancel ID stops it)")
  for _, id in ipairs(ids) do
    term.eprint("  follow it: navette watch " .. id)
    term.eprint("  its log:   navette logs " .. id .. " --follow")
  end
  return 130
end

-- A field of a job's view, or nil when absent or JSON null (a view keeps
-- null for --json; what is printed must not see it as a value).
local function given(x)
  if x == nil or x == json.null then return nil end
  return x
end

local function print_outcome(v)
  local failure = type(given(v.failure)) == "table" and v.failure or nil
  if v.state == "succeeded" then
    term.print("outputs under " .. tostring(given(v.output_prefix) or "?")
               .. ":")
    for _, o in ipairs(v.outputs) do
      term.printf("  %-32s %10d B  sha256 %s\n", o.name, o.size,
                  o.sha256:sub(1, 16) .. "…")
    end
    if #v.outputs == 0 then term.print("  (no output files)") end
  elseif v.state == "cancelled" then
    -- one line: the reason says where it stopped; nothing to check
    local reason = failure and given(failure.reason)
    reason = type(reason) == "string" and reason:gsub("^cancelled ?", "")
             or ""
    term.print(term.state_style("stdout", "cancelled")
               .. (reason ~= "" and (" " .. reason) or ""))
  elseif failure then
    term.print(term.state_style("stdout", v.state) .. " at "
               .. tostring(given(failure.phase) or "?") .. ": "
               .. tostring(given(failure.reason) or "no reason recorded"))
    local hint = given(failure.hint)
    if type(hint) == "string" then
      term.print("  check: " .. (hint:gsub("ID", v.id)))
    end
  end
  local record_url = given(v.record_url)
  if record_url then
    term.print("run record: " .. tostring(record_url))
  elseif jobs.FINAL[v.state] and v.state ~= "succeeded" then
    term.print("run record: not published (the job ended before its "
               .. "outputs reached the store)")
  end
end

local function cmd_run(argv, plan)
  local command = plan and "plan" or "run"
  local opts, args = parse(command, argv, { profile = "value",
                           wait = not plan and "bool" or nil,
                           json = "bool",
                           node = "value" })
  if opts.help then term.print(HELP[command]); return 0 end
  if #args ~= 1 then usage_error("expected one RECIPE", command) end
  local runner = require "navette.runner"
  if opts.node and not opts.node:match("^[%w._%[%],-]+$") then
    usage_error("--node expects a node name (or list), got '" .. opts.node
                .. "'", command)
  end
  local nodes = opts.node and { opts.node }
  local run, specs
  if plan then
    run = runner.load(args[1], { profile = opts.profile, plan = true,
                                 nodes = nodes })
    specs = runner.submit(run)
  else
    run, specs = runner.run(args[1], { profile = opts.profile,
                                       nodes = nodes })
  end
  if #run.jobs == 0 and not plan then
    if not opts.json then
      term.print("recipe " .. args[1] .. " declared no job")
    else
      term.print("[]")
    end
    return 0
  end

  if plan then
    -- the same view of a job's environment as the embedding API's plan
    require("navette.api").shown_specs(specs)
    if opts.json then
      term.print(json.encode({ project = run.project.name,
                               profile = run.profile.name,
                               actions = core.plan(),
                               jobs = json.array(specs) }, true))
      return 0
    end
    term.print(term.style("stdout", "bold", "plan") .. " of " .. args[1]
               .. " · project " .. run.project.name .. " · profile "
               .. run.profile.name .. " (nothing was done)")
    for i, a in ipairs(core.plan()) do
      term.printf("%3d. %s %s: %s\n", i, a.primitive, a.action, a.detail)
    end
    for _, s in ipairs(specs) do
      term.print("")
      term.print(term.style("stdout", "bold", "job " .. s.name) .. " (id "
                 .. s.id .. ")")
      term.print("  commit   " .. s.commit)
      term.print("  image    " .. s.image)
      for _, input in ipairs(s.inputs) do
        term.print("  input    " .. input.name .. " <- " .. input.url)
      end
      term.print("  outputs  " .. s.outputs.url)
      term.print("  command  " .. table.concat(s.command, " "))
      term.print("  launcher:")
      term.write((s.launcher:gsub("([^\n]*)\n", "    | %1\n")))
    end
    return 0
  end

  local ids = {}
  for _, s in ipairs(specs) do ids[#ids + 1] = s.id end
  if not opts.json then
    term.print("recipe " .. args[1] .. " · project " .. run.project.name
               .. " · profile " .. run.profile.name)
    for _, s in ipairs(specs) do
      term.print("job " .. term.style("stdout", "bold", s.name)
                 .. " submitted: " .. s.id)
      term.print("  commit " .. s.commit:sub(1, 12) .. " · image "
                 .. s.image .. " · outputs " .. s.outputs.url)
    end
  end
  if not opts.wait then
    if opts.json then
      local views = {}
      for i, id in ipairs(ids) do views[i] = jobs.get(id) end
      term.print(json.encode(json.array(views), true))
    else
      term.print("follow with: navette watch " .. ids[1])
    end
    return 0
  end
  local views, stopped = follow(ids, opts.json)
  if stopped then return interrupted(ids) end
  local status = 0
  local list = {}
  for i, id in ipairs(ids) do
    local v = views[id]
    list[i] = v
    if v.state ~= "succeeded" then status = 1 end
    if not opts.json then print_outcome(v) end
  end
  if opts.json then term.print(json.encode(json.array(list), true)) end
  return status
end

-- ---- status / watch / logs / cancel / jobs ------------------------------

local function cmd_status(argv)
  local opts, args = parse("status", argv, { json = "bool" })
  if opts.help then term.print(HELP.status); return 0 end
  if #args ~= 1 then usage_error("expected one JOB id", "status") end
  local v = jobs.get(args[1])
  if opts.json then
    term.print(json.encode(v, true))
  else
    term.print("job     " .. v.id .. " (" .. tostring(v.name) .. ")")
    term.print("state   " .. term.state_style("stdout", v.state)
               .. (v.phase ~= v.state and (" · phase " .. v.phase) or ""))
    term.print("project " .. tostring(v.project) .. " · profile "
               .. tostring(v.profile))
    term.print("commit  " .. tostring(v.commit))
    term.print("image   " .. tostring(v.image))
    local backend = require("navette.backends").get(v.backend)
    local shown = backend.describe and backend.describe(v)
    if shown then
      term.print(shown.line)
      if shown.note then term.print("  " .. shown.note) end
    end
    term.print("phases:")
    for _, p in ipairs(v.phases) do
      term.printf("  %s %s\n", jobs.FINAL[p.phase]
                  and term.state_style("stdout", p.phase, 18)
                  or string.format("%-18s", p.phase), p.at)
    end
    if v.exit_code ~= nil and v.exit_code ~= json.null then
      term.print("exit    " .. tostring(v.exit_code))
    end
    if jobs.FINAL[v.state] then print_outcome(v) end
  end
  if v.state == "failed" or v.state == "cancelled" then return 1 end
  return 0
end

local function cmd_watch(argv)
  local opts, args = parse("watch", argv, {})
  if opts.help then term.print(HELP.watch); return 0 end
  if #args ~= 1 then usage_error("expected one JOB id", "watch") end
  local v = jobs.get(args[1])
  term.print("job " .. v.id .. " (" .. tostring(v.name) .. ")")
  local views, stopped = follow({ v.id }, false)
  if stopped then return interrupted({ v.id }) end
  v = views[v.id]
  print_outcome(v)
  return v.state == "succeeded" and 0 or 1
end

local function cmd_logs(argv)
  local opts, args = parse("logs", argv, { follow = "bool", json = "bool",
                                           tail = "value" })
  if opts.help then term.print(HELP.logs); return 0 end
  if #args ~= 1 then usage_error("expected one JOB id", "logs") end
  local tail = opts.tail and math.tointeger(tonumber(opts.tail))
  if opts.tail and (not tail or tail < 0) then
    usage_error("--tail must be a whole number of lines", "logs")
  end
  local v = jobs.get(args[1])
  local offset = 0
  local row = jobs.row(v.id)
  if row and row.spec and type(row.spec.redact_fingerprints) == "string" then
    _navette.creds.add_fingerprints(row.spec.redact_fingerprints)
  end
  -- chunks may cut a secret in two: a redacting stream sees them whole
  local redact = _navette.creds.redact_stream()

  -- what is shown: the text as it is, or (--json, --tail) line by line;
  -- with --tail, the lines already there wait in a ring until the end of
  -- the log is reached, then the last N show
  local by_line = opts.json or tail ~= nil
  local ring, tailing, pending = {}, tail ~= nil, ""
  local function line_out(line)
    if tailing then
      ring[#ring + 1] = line
      if #ring > tail then table.remove(ring, 1) end
    elseif opts.json then
      term.print(json.encode({ time = sys.iso8601(), stream = "output",
                               job = v.id, line = line }))
    else
      term.write(line .. "\n")
    end
  end
  local function put(text)
    if not by_line then term.write(text); return end
    pending = pending .. text
    local start = 1
    for line, e in pending:gmatch("([^\n]*)\n()") do
      line_out(line)
      start = e
    end
    pending = pending:sub(start)
  end
  local function reached_end(final)
    if final and pending ~= "" then line_out(pending); pending = "" end
    if tailing then
      tailing = false
      for _, line in ipairs(ring) do line_out(line) end
      ring = {}
    end
  end

  local at_line_end = false
  while true do
    local chunk = jobs.log_chunk(v, offset)
    if #chunk > 0 then
      offset = offset + #chunk
      put(redact:write(chunk))
      at_line_end = chunk:sub(-1) == "\n"
    elseif not opts.follow or jobs.FINAL[v.state] then
      -- one last read after the end, then stop
      if opts.follow then
        chunk = jobs.log_chunk(v, offset)
        put(redact:write(chunk))
      end
      put(redact:flush())
      reached_end(true)
      break
    else
      -- the log is quiet: a complete line held back is shown now (a
      -- line cut in the middle waits, so no secret shows in halves)
      if at_line_end then put(redact:flush()) end
      reached_end(false)
      sys.sleep(0.2)
      v = jobs.get(v.id)
    end
  end
  return 0
end

-- How long `cancel` waits for a running job to stop before it says the
-- job is stopping (the agent sends SIGTERM, then SIGKILL after a grace).
local CANCEL_WAIT_S = 10

local function cmd_cancel(argv)
  local opts, args = parse("cancel", argv, { ["no-wait"] = "bool" })
  if opts.help then term.print(HELP.cancel); return 0 end
  if #args ~= 1 then usage_error("expected one JOB id", "cancel") end
  -- the full id from here on (a prefix names one job or is refused)
  local row = jobs.resolve(args[1])
  local id = row.id
  local ended = jobs.FINAL[row.state]
  local state = jobs.cancel(id)
  -- the audit line is mirrored to the store of the job's own profile
  local spec = row.spec or {}
  require("navette.audit").record({ action = "job.cancel", target = id,
    job = id, detail = state, profile = row.profile },
    spec.outputs and { name = row.profile, storage = spec.outputs.store,
                       s3 = spec.outputs.s3 })
  if state == "cancelling" and not opts["no-wait"] then
    local deadline = sys.now() + CANCEL_WAIT_S
    repeat
      sys.sleep(0.2)
      local v = jobs.get(id)
      if jobs.FINAL[v.state] then state = v.state end
    until state ~= "cancelling" or sys.now() > deadline
  end
  if state == "cancelling" then
    term.print(id .. ": " .. term.style("stdout", "yellow", "stopping")
               .. " (asked to stop; `navette watch " .. id
               .. "` shows when it has)")
  elseif state == "cancelled" and not ended then
    term.print(id .. ": " .. term.state_style("stdout", state))
  elseif jobs.FINAL[state] then
    term.print(id .. ": already " .. term.state_style("stdout", state)
               .. ", nothing to cancel")
  else
    term.print(id .. ": " .. state)
  end
  return 0
end

local function age_text(s)
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

-- The shortest prefix of each listed id that names it alone among every
-- job of the home (at least SHORT_ID_MIN characters): id -> prefix.
local SHORT_ID_MIN = 12
local function short_ids(rows)
  local all = {}
  for i, r in ipairs(jobs.list(1000000)) do all[i] = r.id end
  table.sort(all)
  local need = {}
  for i, id in ipairs(all) do
    local n = SHORT_ID_MIN
    for _, other in pairs({ all[i - 1] or "", all[i + 1] or "" }) do
      local common = 0
      while common < #id and id:byte(common + 1) == other:byte(common + 1) do
        common = common + 1
      end
      n = math.max(n, common + 1)
    end
    -- never cut right after a separator (cx-20261203- reads as cut short)
    if id:sub(n, n) == "-" then n = n + 1 end
    need[id] = id:sub(1, n)
  end
  local shown = {}
  for _, r in ipairs(rows) do shown[r.id] = need[r.id] or r.id end
  return shown
end

local function cmd_jobs(argv)
  local opts, args = parse("jobs", argv, { json = "bool", limit = "value",
                                            profile = "value", long = "bool",
                                            l = "bool" })
  opts.long = opts.long or opts.l
  if opts.help then term.print(HELP.jobs); return 0 end
  if #args > 0 then usage_error("jobs takes no argument", "jobs") end
  local limit = opts.limit and math.tointeger(tonumber(opts.limit))
  if opts.limit and (not limit or limit < 1) then
    usage_error("--limit must be a positive whole number", "jobs")
  end
  limit = limit or 50
  local rows = jobs.list(opts.profile and 100000 or limit)
  -- the backend whose column shows (one profile's jobs: one backend)
  local remote
  if opts.profile then
    local backends = require "navette.backends"
    local kept, mine = {}, {}
    for _, r in ipairs(rows) do
      if r.profile == opts.profile and #kept < limit then
        local b = backends.get(r.backend)
        if b.list_rows then
          remote = remote or b
          mine[b] = mine[b] or {}
          table.insert(mine[b], r)
        end
        kept[#kept + 1] = r
      end
    end
    rows = kept
    -- what each backend knows now of its listed jobs
    for b, list in pairs(mine) do b.list_rows(list, jobs.context()) end
  end
  if opts.json then
    local list = {}
    for i, r in ipairs(rows) do
      list[i] = { id = r.id, name = r.name, project = r.project,
                  profile = r.profile, state = r.state, phase = r.phase,
                  created = r.created, updated = r.updated,
                  failure = r.failure,
                  backend = r.backend or require("navette.backends").DEFAULT }
      -- what the backend added (list_rows), under its name
      if remote then list[i][remote.name] = r[remote.name] end
    end
    term.print(json.encode(json.array(list), true))
    return 0
  end
  if #rows == 0 then
    term.print(opts.profile and ("no jobs of profile " .. opts.profile)
               or "no jobs yet")
    return 0
  end
  -- ids as their shortest unique prefix among every job of this home
  -- (JOB accepts one, like git's short ids); -l shows them whole
  local shown = {}
  if opts.long then
    for _, r in ipairs(rows) do shown[r.id] = r.id end
  else
    shown = short_ids(rows)
  end
  local id_width = 2
  for _, r in ipairs(rows) do id_width = math.max(id_width, #shown[r.id]) end
  local now = sys.now()
  local util = require "navette.util"
  local function age(r)
    local t = type(r.created) == "string" and util.parse_iso8601(r.created)
    return t and age_text(math.max(0, math.floor(now - t))) or "-"
  end
  local header = term.pad("ID", id_width) .. " " .. term.pad("STATE", 9)
                 .. " " .. term.pad("AGE", 4) .. " " .. term.pad("PHASE", 17)
  local column = remote and remote.describe(rows[1]).column
  term.print(header .. " " .. (column and (term.pad(column.title,
             column.width) .. " ") or "") .. "NAME")
  for _, r in ipairs(rows) do
    local line = term.pad(shown[r.id], id_width) .. " "
                 .. term.state_style("stdout", r.state, 9) .. " "
                 .. term.pad(age(r), 4) .. " " .. term.pad(r.phase, 17)
    if column then
      local b = require("navette.backends").get(r.backend)
      local where = b == remote and b.describe(r).column.text or "-"
      line = line .. " " .. term.pad(where, column.width)
    end
    term.print(line .. " " .. tostring(r.name))
  end
  return 0
end

-- The project of the working folder (for commands without a recipe).
local function here_project(profile_name)
  local project = require "navette.project"
  local cwd = sys.cwd()
  local repo = _navette.git.open(cwd)
  local root = repo and repo:workdir() or nil
  if repo then repo:close() end
  local proj = project.load(cwd, root)
  return proj, project.profile(proj, profile_name)
end

local function cmd_creds(argv)
  local opts, args = parse("creds", argv, { profile = "value",
                                            json = "bool" })
  if opts.help or #args == 0 then
    term.print(HELP.creds)
    return opts.help and 0 or 2
  end
  local verb = table.remove(args, 1)
  local proj, profile = here_project(opts.profile)
  local creds = require "navette.creds"
  local declared = profile.credentials
  if verb == "check" then
    if #args ~= 1 then usage_error("expected one credential NAME", "creds") end
    if not declared[args[1]] then
      local util = require "navette.util"
      usage_error("no credential named '" .. args[1] .. "' in profile "
                  .. profile.name .. util.suggest(args[1],
                  util.sorted_keys(declared)), "creds")
    end
    declared = { [args[1]] = declared[args[1]] }
  elseif verb ~= "list" or #args > 0 then
    usage_error("expected `creds list` or `creds check NAME`", "creds")
  end
  local rows = creds.inspect(declared, profile.max_credential_age)
  if opts.json then
    term.print(json.encode(json.array(rows), true))
  elseif #rows == 0 then
    term.print("project " .. proj.name .. " declares no credentials "
               .. "(credentials = { ... } in navette.lua)")
  else
    -- one word per row; what went wrong is told under the table
    term.printf("%-20s %-7s %-9s %-6s %-8s %s\n", "NAME", "KIND", "SOURCE",
                "AGE", "EXPIRES", "STATUS")
    for _, r in ipairs(rows) do
      term.printf("%-20s %-7s %-9s %-6s %-8s %s\n", r.name, r.kind,
                  r.source, age_text(r.age_s), age_text(r.expires_in_s),
                  term.style("stdout", r.ok and "green" or r.not_run
                             and "yellow" or "bold_red", r.status))
    end
    local told = false
    for _, r in ipairs(rows) do
      if not r.ok then
        if not told then term.print(""); told = true end
        term.print(r.name .. ": " .. (r.not_run and ("not checked ("
                   .. r.note .. ")") or tostring(r.warning or r.error)))
        if r.hint then term.print("  check: " .. r.hint) end
      end
    end
  end
  -- a credential not run is no failure: list never runs one
  for _, r in ipairs(rows) do
    if not r.ok and not r.not_run then return r.error and 3 or 1 end
  end
  return 0
end

local function cmd_audit(argv)
  local opts, args = parse("audit", argv, { json = "bool", job = "value" })
  if opts.help or #args == 0 then
    term.print(HELP.audit)
    return opts.help and 0 or 2
  end
  local audit = require "navette.audit"
  local verb = args[1]
  if #args > 1 then usage_error("too many arguments", "audit") end
  if verb == "verify" then
    local report, err = audit.verify()
    if not report then error(errors.new(err.code, err.message, err.hint), 0) end
    if opts.json then
      term.print(json.encode(report, true))
    elseif report.ok then
      term.print("audit log intact: " .. tostring(report.lines) .. " line(s)")
    else
      term.print(term.style("stdout", "red", "audit log damaged") .. ": "
                 .. tostring(report.kind) .. " at line "
                 .. tostring(report.line) .. ": "
                 .. tostring(report.message))
    end
    return report.ok and 0 or 1
  elseif verb == "show" then
    local lines, err = audit.lines(opts.job)
    if not lines then error(errors.new(err.code, err.message, err.hint), 0) end
    -- a line that is not a record is left out; the damage is raised below
    local records = {}
    for _, l in ipairs(lines) do
      local e = json.decode(l)
      if type(e) == "table" and math.type(e.seq) == "integer" then
        records[#records + 1] = e
      end
    end
    if opts.json then
      term.print(json.encode(json.array(records), true))
    else
      for _, e in ipairs(records) do
        term.printf("%5s %s %-16s %-8s %s%s\n", tostring(e.seq),
                    tostring(e.time), tostring(e.action),
                    tostring(e.result), tostring(e.target),
                    e.job ~= nil and e.job ~= json.null
                      and ("  job " .. tostring(e.job)) or "")
      end
    end
    local damage = audit.damage()
    if damage then error(errors.new(damage.code, damage.message,
                                    damage.hint), 0) end
    return 0
  end
  usage_error("expected `audit verify` or `audit show`", "audit")
end

local function cmd_version(argv)
  local opts = parse("version", argv, { json = "bool", linked = "bool" })
  if opts.help then term.print(HELP.version); return 0 end
  local v = _navette.core.versions(opts.linked)
  if opts.json then term.print(json.encode(v, true)); return 0 end
  term.print("navette " .. v.navette)
  for _, k in ipairs({ "lua", "libgit2", "libcurl", "sqlite", "openssl",
                       "cjson", "zlib", "expat" }) do
    if v[k] then term.printf("  %-8s %s\n", k, v[k]) end
  end
  return 0
end

local function cmd_test(argv)
  local opts, args = parse("test", argv, { host = "bool" })
  if opts.help then term.print(HELP.test); return 0 end
  if #args == 0 then usage_error("expected test files", "test") end
  return require("navette.testing").run_files(args, { host = opts.host })
end

-- Read-only commands (issue 11): they execute no program, whatever the
-- project file or a recipe declares: no credential command, no Keychain
-- tool, no image builder. cli.main calls core.forbid_exec() before them,
-- and the C loaders refuse (code not_run). Plan mode forbids the same.
--   read-only, forbidden: plan (plan mode), creds list, audit show and
--     verify, version, completion, definitions, help, and the read verbs
--     of `image` (resolve, inspect, exists) unless a --credential names
--     what to load (image_cli.lua);
--   read-only, following jobs `run` submitted: status, logs, watch, jobs
--     (which asks a remote backend with --profile). They load only the
--     credentials named in that job's recorded spec: the declaration
--     that `run` accepted and ran then, never a project file read now,
--     so they can still read an S3 record or ask the backend;
--   acting, may execute: run, cancel, migrate, test (runs the project's
--     test files), agent (runs jobs), creds check NAME (loads NAME on
--     request: how to check one whose source is a command), storage
--     (its verbs load only the credential --credential names, or the
--     AWS_* variables), image push-code, pack and build.
local READ_ONLY = { plan = true, version = true, completion = true,
                    definitions = true }
local READ_ONLY_VERBS = { creds = { list = true },
                          audit = { show = true, verify = true } }

local COMMANDS = {
  run = function(a) return cmd_run(a, false) end,
  plan = function(a) return cmd_run(a, true) end,
  status = cmd_status, watch = cmd_watch, logs = cmd_logs,
  cancel = cmd_cancel, jobs = cmd_jobs, version = cmd_version,
  creds = cmd_creds, audit = cmd_audit,
  storage = function(a) return require("navette.storage_cli").main(a) end,
  image = function(a) return require("navette.image_cli").main(a) end,
  migrate = function(a) return require("navette.migrate").main(a) end,
  test = cmd_test,
  completion = function(a) return require("navette.completion").main(a) end,
  definitions = function(a) return require("navette.luals").main(a) end,
}

-- for the commands kept in their own modules (migrate)
cli.follow = function(ids, quiet, labels)
  local views, stopped = follow(ids, quiet, labels)
  if stopped then
    interrupted(ids)
    error(errors.new("interrupted", "interrupted while following the jobs"),
          0)
  end
  return views
end
cli.print_outcome = function(v) return print_outcome(v) end
cli.parse = function(command, argv, flags) return parse(command, argv, flags) end
cli.HELP = HELP
cli.ORDER = ORDER
cli.COMMANDS = COMMANDS

function cli.main(argv)
  local command = argv[1]
  local rest = table.move(argv, 2, #argv, 1, {})
  if command == nil or command == "help" or command == "--help"
     or command == "-h" then
    local topic = rest[1]
    if topic == "--help" or topic == "-h" then topic = "help" end
    if topic and HELP[topic] then
      term.print(HELP[topic])
    elseif topic then
      local util = require "navette.util"
      term.error(errors.new("usage", "no command '" .. topic .. "'"
                 .. util.suggest(topic, ORDER), "see `navette help`"))
      return 2
    else
      term.print(usage_text())
    end
    return command == nil and 2 or 0
  end
  if command == "--version" then command = "version" end
  local fn = COMMANDS[command]
  if not fn then
    local util = require "navette.util"
    term.error(errors.new("usage", "unknown command '" .. command .. "'"
               .. util.suggest(command, ORDER), "see `navette help`"))
    return 2
  end
  local verbs = READ_ONLY_VERBS[command]
  if READ_ONLY[command] or (verbs and verbs[rest[1]]) then
    core.forbid_exec() -- for good: nothing later can lift it
  end
  local ok, result = core.pcall(fn, rest)
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
