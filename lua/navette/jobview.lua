-- The jobs as the CLI shows them, whatever their backend: one stable view
-- (the `--json` fields of doc/cli.md) built from the job database's row,
-- brought up to date by the job's backend, and, once the job is over, its
-- run record in storage.
local errors = require "navette.errors"
local backends = require "navette.backends"
local published = require "navette.published"
local core, json = _navette.core, _navette.json

local jobs = {}

-- the phases in order and the final states, as host/jobs/record.h has them
jobs.PHASES = { table.unpack(_navette.record.phases) }
jobs.FINAL = {}
for _, state in ipairs(_navette.record.states) do jobs.FINAL[state] = true end

-- The job database of this home, opened once per process (a sweep's
-- reads and writes go through one handle).
local db_of = {}
function jobs.db()
  local home = core.home()
  local db = db_of[home]
  if not db then
    db = errors.check(_navette.jobdb.open(home))
    db_of[home] = db
  end
  return db
end

-- What a backend's functions get besides their arguments.
local function context()
  return { db = jobs.db() }
end
jobs.context = context

-- Every read of the jobs first gives each backend a look (revive): the
-- local one makes sure an agent follows its jobs. What stopped it is kept
-- in jobs.agent_problem (the CLI warns); the read goes on with the rows
-- as they are.
function jobs.revive_agent()
  local problem
  for _, name in ipairs(backends.names()) do
    local b = backends.get(name)
    if b.revive then problem = problem or b.revive(context()) end
  end
  jobs.agent_problem = problem
end

function jobs.row(id)
  local text, err = jobs.db():get(id)
  if not text then return nil, err end
  return json.decode(text)
end

-- The outputs a run record lists, as a view shows them.
function jobs.outputs_of(record)
  local out = json.array()
  for i, o in ipairs(record.outputs or {}) do
    out[i] = { name = o.name, key = o.key, url = o.url, size = o.size,
               sha256 = o.sha256 }
  end
  return out
end

-- A job a run reused (r: run.reused's entry) as --json shows it: the
-- earlier job's view, with reused_from (its id) and its name in this
-- run; from its record when this home does not know the job.
local function reused_view(r)
  local ok, v = pcall(jobs.get, r.from)
  if not ok then
    local rec = r.spec.record or {}
    v = { id = r.from, state = rec.state, commit = rec.commit,
          image = rec.image, output_prefix = r.spec.outputs.url,
          outputs = jobs.outputs_of(rec) }
  end
  v.name, v.reused_from = r.name, r.from
  return v
end

-- The views of the jobs run reused, in order (a list the views of the
-- jobs it submitted may follow).
function jobs.reused_views(run)
  local out = {}
  for i, r in ipairs(run.reused or {}) do out[i] = reused_view(r) end
  return out
end

-- The stable view of a job (doc/cli.md: "--json fields"). info: what its
-- backend's refresh said (its record, if read, and its own fields).
function jobs.view(row, info)
  local spec = row.spec or {}
  local v = {
    id = row.id, name = row.name, project = row.project,
    profile = row.profile, state = row.state, phase = row.phase,
    phases = row.phases or json.array(),
    commit = spec.commit, image = spec.image, run = spec.run,
    outputs = json.array(),
    output_prefix = spec.outputs and spec.outputs.url or nil,
    failure = row.failure,
    exit_code = row.exit_code,
    created = row.created, updated = row.updated,
    record_url = row.record_url,
    log_path = core.home() .. "/jobs/" .. row.id .. "/log",
    backend = row.backend or backends.DEFAULT,
    remote_id = row.remote_id ~= json.null and row.remote_id or nil,
    -- (retries: the attempt it is at, from 2 on)
    attempt = type(row.attempt) == "number" and row.attempt > 1
              and math.tointeger(row.attempt) or nil,
  }
  for k, x in pairs(info and info.fields or {}) do v[k] = x end
  local record = info and info.record
  if not record or row.record_url ~= info.record_url then
    local problem
    record, problem = published.record(row.record_url, spec)
    -- (a record the job published that is gone or damaged: said, never
    -- shown as a job without outputs)
    v.record_problem = problem
  end
  if record then
    v.outputs = jobs.outputs_of(record)
    -- (null in the record of a job whose log is not published)
    v.log_url = type(record.log) == "table" and record.log.url or nil
    -- (retries: the attempt it ended at, when its backend keeps none)
    local attempt = math.tointeger(record.attempt)
    if not v.attempt and attempt and attempt > 1 then v.attempt = attempt end
  end
  return v
end

-- The outputs of view that are no longer in the store as its run record
-- lists them (gone, or of another size), each marked missing = true or
-- changed = true; -> how many. An output the store cannot be asked about
-- (unreachable) is left unmarked.
function jobs.check_outputs(view, spec)
  local bad = 0
  for _, o in ipairs(view.outputs) do
    local info, err = published.head(o.url, spec)
    if not info and err and err.code == "not_found" then
      o.missing = true
      bad = bad + 1
    elseif info and o.size and info.size ~= o.size then
      o.changed = true
      bad = bad + 1
    end
  end
  return bad
end

-- Raises the error of a failed look-up of id; an ambiguous prefix lists
-- the jobs it matches (newest first, at most 10).
function jobs.lookup_error(id, err)
  local message, hint = err.message, err.hint
  if message:find("matches several jobs", 1, true) then
    local lines, more = {}, 0
    for _, r in ipairs(jobs.list(100000)) do
      if r.id:sub(1, #id) == id then
        if #lines < 10 then
          lines[#lines + 1] = string.format("  %s  %-9s  %s", r.id, r.state,
                                            tostring(r.name))
        else
          more = more + 1
        end
      end
    end
    if more > 0 then lines[#lines + 1] = "  ... and " .. more .. " more" end
    if #lines > 0 then message = message .. ":\n" .. table.concat(lines, "\n") end
  end
  error(errors.new(err.code == "invalid" and "usage" or err.code, message,
                   hint), 0)
end

-- The queue's row of a job id or unique prefix; raises when there is none.
local function row_of(id)
  local row, err = jobs.row(id)
  if not row then jobs.lookup_error(id, err) end
  return row
end

-- The project of the current folder (its repository's, named by its
-- navette.lua or after its folder), or nil outside a git repository.
function jobs.here()
  local repo = _navette.git.open(_navette.sys.cwd())
  if not repo then return nil end
  repo:close()
  local ok, p = pcall(function() return require("navette.project").at() end)
  return ok and type(p) == "table" and p.name or nil
end

-- A glob over job names: `*` any text, `?` one character; everything
-- else, brackets of sweep names included, stands for itself.
function jobs.glob_pattern(glob)
  local body = glob:gsub("[%^%$%(%)%%%.%[%]%+%-]", "%%%0")
  body = body:gsub("%*", ".*"):gsub("%?", ".")
  return "^" .. body .. "$"
end

local function rows_of_ids(ids)
  local rows = {}
  for i, id in ipairs(ids) do rows[i] = row_of(id) end
  return rows
end

-- What a user types to name jobs (README, "Naming jobs"), in this order:
--   `last`            the latest job of this folder's project (of all
--                     projects outside one);
--   a job's full id;
--   NAME or a glob    the latest job of each name that matches, in this
--                     folder's project (train, train[lr=0.1,seed=3],
--                     train[*]), oldest first;
--   a unique prefix of a job id, then of a run id (the run's jobs).
-- -> { kind = "job"|"run"|"name"|"last", rows = {...}, run = id|nil };
-- raises a not-found or usage error that says what was tried.
function jobs.pick(given)
  if given == "last" then
    local project = jobs.here()
    for _, r in ipairs(jobs.list(1000000)) do
      if not project or r.project == project then
        return { kind = "last", rows = { r } }
      end
    end
    error(errors.new("not_found", "no job yet" .. (project and
      (" in project " .. project) or ""), "start one with `navette run "
      .. "RECIPE`"), 0)
  end
  local row, err = jobs.row(given)
  if row and row.id == given then return { kind = "job", rows = { row } } end
  local project = jobs.here()
  local pattern = given:find("[*?]") and jobs.glob_pattern(given)
  local picked, seen = {}, {}
  for _, r in ipairs(jobs.list(1000000)) do -- newest first
    local name = type(r.name) == "string" and r.name
    if name and not seen[name] and (not project or r.project == project)
       and (name == given or (pattern and name:match(pattern))) then
      seen[name] = true
      table.insert(picked, 1, r)
    end
  end
  if #picked > 0 then return { kind = "name", rows = picked } end
  if row then return { kind = "job", rows = { row } } end
  if err and err.message:find("matches several jobs", 1, true) then
    jobs.lookup_error(given, err)
  end
  local run, ids = jobs.run(given)
  if run then return { kind = "run", run = run, rows = rows_of_ids(ids) } end
  if type(ids) == "table" and tostring(ids.message):find(
       "starts more than one run id", 1, true) then
    error(errors.new("usage", ids.message, "give more characters of "
                     .. "the run id (`navette jobs` lists them)"), 0)
  end
  error(errors.new("not_found", "no job, run or job name '" .. given .. "'"
    .. (project and (" in project " .. project) or ""), "a job is named "
    .. "by its id or a unique prefix, its name (the latest job of that "
    .. "name here), a glob like train[*], a run id, or `last`; "
    .. "`navette jobs` lists them"), 0)
end

-- The one job given names (see jobs.pick): a run or a glob of several
-- jobs is refused, listing them, so that the user picks one. command:
-- the command that needs one job (said in the hint).
function jobs.resolve(given, command)
  local pick = jobs.pick(given)
  if #pick.rows == 1 then return pick.rows[1] end
  local lines = {}
  for i, r in ipairs(pick.rows) do
    if i > 20 then
      lines[#lines + 1] = "  ... and " .. (#pick.rows - 20) .. " more"
      break
    end
    lines[#lines + 1] = string.format("  %s  %-9s  %s", r.id,
                                      tostring(r.state), tostring(r.name))
  end
  error(errors.new("usage", "'" .. given .. "' is "
    .. (pick.run and ("run " .. pick.run .. ", ") or "")
    .. #pick.rows .. " jobs; " .. (command or "this") .. " takes one:\n"
    .. table.concat(lines, "\n"), "name one job (its id, prefix or name)"
    .. ((command == "watch" or command == "cancel") and ""
        or "; `navette watch " .. given .. "` follows them all")), 0)
end

-- The view of a job: its row, brought up to date by its backend (read
-- again only when the backend wrote to it), and its run record (read
-- once: the backend's when it read it).
function jobs.get(id)
  jobs.revive_agent()
  local row = row_of(id)
  local b = backends.get(row.backend)
  local info = b.refresh and b.refresh(row, context()) or nil
  if info and info.changed then row = jobs.row(row.id) or row end
  return jobs.view(row, info)
end

-- The views of the jobs ids, by id, and how many of them have not ended:
-- one poll of a wait for them all.
function jobs.poll(ids)
  local views, running = {}, 0
  for _, id in ipairs(ids) do
    local v = jobs.get(id)
    views[id] = v
    if not jobs.FINAL[v.state] then running = running + 1 end
  end
  return views, running
end

function jobs.list(limit)
  jobs.revive_agent()
  local text, err = jobs.db():list(limit)
  if not text then error(errors.new("io", err.message, err.hint), 0) end
  return json.decode(text)
end

-- The jobs of one `navette run` (RUN: its id or a unique prefix) ->
-- run_id, ids (oldest first) | nil, err
function jobs.run(run)
  local full, text = jobs.db():run(run)
  if not full then return nil, text end
  return full, json.decode(text)
end

-- (batch: the ids the same command cancels, {[id] = true})
function jobs.cancel(id, batch)
  local row = row_of(id)
  local ctx = context()
  ctx.cancelling = batch
  local state, cerr = backends.get(row.backend).cancel(row, ctx)
  if not state then jobs.lookup_error(id, cerr) end
  return state
end

-- Bytes of the job's log from offset, as its backend reads it.
function jobs.log_chunk(view, offset)
  return backends.get(view.backend).log_chunk(view, offset, context())
end

-- Every few seconds while a caller waits for jobs (views): each backend
-- among theirs that keeps its jobs going checks it can (raises if not).
function jobs.supervise(views)
  local seen = {}
  for _, v in pairs(views) do
    local b = backends.get(v.backend)
    if b.supervise and not seen[b] and not jobs.FINAL[v.state] then
      seen[b] = true
      b.supervise(context())
    end
  end
end

return jobs
