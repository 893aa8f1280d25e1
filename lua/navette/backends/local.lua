-- The local backend: jobs run on this machine by the agent (host/jobs/
-- agent.c), a process that outlives the CLI, takes the queued rows of the
-- job database in turn and writes their phases and outcome back. The CLI
-- records a job, makes sure an agent runs, and reads the rows back.
local errors = require "navette.errors"
local published = require "navette.published"
local native, core, sys, json = _navette.jobs, _navette.core, _navette.sys,
                                _navette.json

local M = { name = "local" }

-- ---- the profile's settings: ["local"] = { path = { ... } } -----------------

-- The PATH a job on the host gets (inside its sandbox), unless the
-- profile says otherwise: never the PATH of whichever command started
-- the agent.
M.DEFAULT_PATH = { "/usr/local/bin", "/usr/bin", "/bin" }
M.profile_keys = { "path" }
M.settings_doc = "Local backend settings: path = { \"/usr/local/bin\", ... }, "
  .. "the PATH of jobs on the host (see `navette help profiles`)."

function M.validate(t, where)
  local function fail(message, hint)
    error(errors.new("recipe", where.path .. ": profile '" .. where.profile
                     .. "': local: " .. message, hint), 0)
  end
  if t == nil then return { path = M.DEFAULT_PATH } end
  if type(t) ~= "table" then
    fail("the local settings are a table: [\"local\"] = { path = { ... } }")
  end
  for k in pairs(t) do
    if k ~= "path" then
      fail("unknown key '" .. tostring(k) .. "'", "local keys are: "
           .. table.concat(M.profile_keys, ", "))
    end
  end
  if t.path == nil then return { path = M.DEFAULT_PATH } end
  local hint = "path is a list of absolute folders, for example { "
               .. "\"/opt/conda/bin\", \"/usr/bin\", \"/bin\" }; a job "
               .. "sees only the system's folders (/usr, /opt, ...)"
  if type(t.path) ~= "table" or #t.path == 0 then
    fail("path must be a non-empty list of folders", hint)
  end
  local path = {}
  for k, dir in pairs(t.path) do
    if math.type(k) ~= "integer" or k < 1 or k > #t.path then
      fail("path must be a list, not a table with names", hint)
    end
    if type(dir) ~= "string" or not dir:match("^/") or dir:find("[:%c]")
       or #dir > 1024 or dir:find("/%.%.?/") or dir:find("/%.%.?$") then
      fail("path entry " .. k .. " (" .. tostring(dir) .. ") is not an "
           .. "absolute folder without ':', '.' or '..'", hint)
    end
    path[k] = dir
  end
  return { path = path }
end

-- What reaches the agent of the profile's settings: PATH, joined.
function M.prepare(spec, profile)
  local settings = profile["local"] or {}
  spec["local"] = { path = table.concat(settings.path or M.DEFAULT_PATH, ":") }
end

-- a job's `after`: the agent holds it until those jobs have succeeded
-- (host/jobs/jobdb.c, nv_jobdb_claim)
M.dependencies = true

-- retries and checkpoints: the agent runs a failed job again and saves
-- its checkpoint folder into the store itself, which needs a file://
-- store (on s3:// the launcher publishes by itself: not done there yet)
local function on_file_store(profile)
  if profile.s3 then return false, " with an s3:// store" end
  return true
end
M.retries = on_file_store
M.checkpoints = on_file_store

-- secrets: files the run writes, 0400, in a folder of the job's own on a
-- tmpfs (host/jobs/secrets.h), which the agent mounts read-only in the
-- job's sandbox and removes when the job ends: for a job on the host
function M.secrets(_, spec)
  if spec and spec.container then return false, " for a job in an image" end
  return true
end

-- Writes the secrets of spec into its folder (made empty): the values
-- go from the run's handles to the files in C, never through the spec
-- or jobs.db, which hold the folder's path and the names.
local function deliver_secrets(spec, ctx)
  if not spec.secrets then return end
  local dir, err = native.secrets_dir(core.home(), spec.id)
  if not dir then
    error(errors.new("backend", "cannot make the folder of job '"
                     .. spec.name .. "''s secrets: " .. err.message,
                     err.hint), 0)
  end
  spec.secrets_dir = dir
  for _, item in ipairs(spec.secrets) do
    local ok, werr = native.secret_write(dir, item.name,
                                         ctx.secret(item.credential))
    if not ok then
      native.secrets_remove(dir, spec.id)
      error(errors.new("backend", "cannot write secret " .. item.name
                       .. " of job '" .. spec.name .. "': "
                       .. werr.message, werr.hint), 0)
    end
  end
end

local function remove_secrets(spec)
  if spec and spec.secrets_dir then
    native.secrets_remove(spec.secrets_dir, spec.id)
  end
end

-- The runtime that runs a job's image here: the profile's (name), else
-- podman or docker, whichever this machine has.
function M.container_runtime(name)
  if name then
    if sys.which(name) then return name end
    return nil, name
  end
  local found = sys.which("podman") and "podman"
                or sys.which("docker") and "docker"
  if found then return found end
  return nil, "podman or docker"
end

-- Records the job (or completes an interrupted submission of it) and
-- makes sure an agent runs it.
function M.submit(spec, _, ctx)
  local sub, db = ctx.submission or {}, ctx.db
  if sub.resumed then
    -- recorded by a run killed before its submission completed: that
    -- row is the job, completed here (never a second one)
    spec = sub.resumed.spec or spec
    spec.adopted = true
    -- (written again where the recorded spec says: a restart may have
    -- emptied the tmpfs since)
    local recorded = spec.secrets_dir
    deliver_secrets(spec, ctx)
    if recorded and spec.secrets_dir ~= recorded then
      remove_secrets(spec)
      error(errors.new("backend", "job '" .. spec.name .. "' was recorded "
                       .. "with its secrets in " .. recorded .. ", which "
                       .. "this process cannot use", "cancel " .. spec.id
                       .. " and run the recipe again"), 0)
    end
    _navette.out.write("stderr", "note: job '" .. spec.name .. "' was "
                       .. "already recorded as " .. spec.id .. " by a "
                       .. "run that was interrupted: that submission "
                       .. "is completed, nothing new is queued\n")
  else
    local ok, err
    for _ = 1, 5 do
      -- (written before the row exists: the agent finds them there)
      deliver_secrets(spec, ctx)
      ok, err = db:submit(spec.id, spec.project, spec.profile, spec.name,
                          json.encode(spec), M.name, sub.key)
      if ok ~= nil or err.code ~= "refused" then break end
      -- the id is taken: another is drawn, with its own prefix
      remove_secrets(spec)
      ctx.redraw(spec)
    end
    if ok == nil then
      remove_secrets(spec)
      error(errors.new("backend", "cannot submit job '" .. spec.name
                       .. "': " .. err.message, err.hint), 0)
    end
  end
  -- The row is held (the agent does not start it) until its audit lines
  -- are written: a job never runs unaudited. When they cannot be (a full
  -- disk, a damaged log), the run stops here and the next run completes
  -- the submission.
  local audited = ctx.audit(spec, sub.resumed
                            and "completes an interrupted submission" or nil)
  for _, item in ipairs(spec.secrets or {}) do
    audited = ctx.audit_secret(spec, item) and audited
  end
  if not audited then
    error(errors.new("backend", "job '" .. spec.name .. "' is recorded as "
                     .. spec.id .. " but not started: its audit line could "
                     .. "not be written (see the warning above)", "free "
                     .. "space under NAVETTE_HOME and check `navette audit "
                     .. "verify`, then run the recipe again: it completes "
                     .. "this submission"), 0)
  end
  errors.check(db:audited(spec.id))
  native.fault_point("submit-before-agent", spec.name)
  local started, aerr = native.ensure_agent(core.home())
  if started == nil then
    error(errors.new("backend", "job '" .. spec.name .. "' is queued as "
                     .. spec.id .. " but the agent cannot start: "
                     .. aerr.message, (aerr.hint and aerr.hint .. "; "
                     or "") .. "run `navette run` again to complete the "
                     .. "submission"), 0)
  end
  errors.check(db:submitted(spec.id))
  return spec
end

function M.cancel(row, ctx)
  local state, err = ctx.db:cancel(row.id)
  if not state then return nil, err end
  -- a job cancelled before it started: no agent removes its secrets
  if state == "cancelled" then remove_secrets(row.spec) end
  M.revive(ctx) -- an agent stops a running job
  return state
end

-- Before every read of the jobs: an agent that died (killed, out of
-- memory) would leave its jobs `running` for ever; a new one adopts each
-- job whose launcher still runs and ends the others from their status
-- files before the read goes on. Checked at most every CHECK_S seconds;
-- returns what stopped the last start.
local CHECK_S = 2
local checked, problem
-- The secrets folders of jobs that ended without the agent (cancelled
-- while they waited for a job that failed: the queue ends them): removed
-- when the jobs are read. Once per process.
local swept = false
local function sweep_secrets(ctx)
  if swept then return end
  swept = true
  for _, root in ipairs(native.secrets_roots(core.home())) do
    for _, id in ipairs(sys.listdir(root) or {}) do
      local text = native.id_ok(id) and ctx.db:get(id)
      local row = text and json.decode(text)
      if row and (row.state == "succeeded" or row.state == "failed"
                  or row.state == "cancelled") then
        native.secrets_remove(root .. "/" .. id, id)
      end
    end
  end
end

function M.revive(ctx)
  sweep_secrets(ctx)
  local now = sys.now()
  if checked and now - checked < CHECK_S then return problem end
  checked = now
  local started, err = native.revive_agent(ctx.db)
  problem = started == nil and err or nil
  return problem
end

-- While a caller waits: is an agent there? One that cannot be started is
-- an error with its cause, not a wait without end.
function M.supervise()
  local started, err = native.ensure_agent(core.home())
  errors.check(started, err, "the local agent")
end

-- The log file the agent writes, else (the job's folder pruned) the log
-- it published.
-- Whether the job reached a phase where its log exists (logs_visible).
local function log_expected(view)
  for _, p in ipairs(view.phases or {}) do
    if p.phase == "logs_visible" then return true end
  end
  return false
end

function M.log_chunk(view, offset, ctx)
  local data = sys.read_from(view.log_path, offset, 1024 * 1024)
  if data then return data end
  local copy
  if offset == 0 and view.log_url then
    local row = view.log_url:match("^s3://") and ctx.db:get(view.id)
    local spec = row and json.decode(row).spec
    copy = published.read(view.log_url, spec)
  end
  if copy then return copy end
  -- a log the job had, gone from its folder and from the store: said,
  -- never shown as an empty log
  if offset == 0 and log_expected(view) then
    error(errors.new("io", "the log of job " .. view.id .. " is missing: "
                     .. view.log_path .. " is gone"
                     .. (view.log_url and (", and so is its copy in the "
                                           .. "store (" .. view.log_url .. ")")
                         or " (and the job published none)"),
                     "something removed it from NAVETTE_HOME (and the store);"
                     .. " the job's outputs and run record are where `navette"
                     .. " status " .. view.id .. "` says"), 0)
  end
  return ""
end

return M
