-- Observing Slurm jobs through a session (navette.slurm.logic): a row
-- brought up to date with Slurm's state and what the launcher published
-- (its status object, log chunks and run record), the outcome of a job
-- that ended, a cancel, and what the CLI shows of a job.
local errors = require "navette.errors"
local util = require "navette.util"
local published = require "navette.published"
local description = require "navette.slurm.description"
local secrets = require "navette.slurm.secrets"
local sys, json = _navette.sys, _navette.json

local observe = {}

local REFRESH_EVERY = 1.0 -- seconds between two looks at a job

-- Slurm's states that stop a job from outside: its record (if any) does
-- not say how it ended.
local STOPPED = { TIMEOUT = true, NODE_FAIL = true, OUT_OF_MEMORY = true,
                  PREEMPTED = true, BOOT_FAIL = true, DEADLINE = true,
                  CANCELLED = true }

local function final(state)
  return state == "succeeded" or state == "failed" or state == "cancelled"
end

local function no_remote(row)
  return not row.remote_id or row.remote_id == json.null
end

-- The final outcome of a Slurm job that ended (state, failure, exit
-- code), by the record's rule in C (host/jobs/record.c): the launcher's
-- record (text) when it ran to its end, Slurm's reason when the job was
-- stopped from outside (time limit, node failure, cancel, memory).
local function outcome(view, job, text)
  return _navette.record.outcome(text, {
    state = view.state, phase = view.phase,
    reason = "Slurm: " .. view.detail,
    hint = view.hint ~= "" and view.hint or nil,
    stopped = STOPPED[job.state] == true,
    phase_from_record = job.state == "CANCELLED",
    exit_code = view.exit_code >= 0 and view.exit_code or nil,
    missing_reason = "the job ended but left no run record in storage",
    missing_hint = "read the node's output (navette-" .. job.job_id
                   .. ".out in the profile's working_directory); check "
                   .. "the node's curl and that its POST policy had not "
                   .. "expired",
  })
end

-- The fields a job's view gets from what Slurm says of it now: its state
-- (with the reason a pending job waits for), its node, its restarts
-- after a node failure; or why Slurm could not be asked.
local function fields(extra)
  if extra.job then
    local restarts = extra.job.restarts or 0
    return { slurm = { state = extra.job.state, reason = extra.job.reason,
                       nodes = extra.job.nodes,
                       restarts = extra.job.restarts,
                       detail = extra.view and extra.view.detail or nil },
             -- (each requeue is an attempt: see retries_by_requeue)
             attempt = restarts > 0 and math.tointeger(restarts + 1) or nil }
  elseif extra.error then
    return { slurm = { error = extra.error.message,
                       error_hint = extra.error.hint } }
  end
  return nil
end

-- What refresh returns: extra, kept for REFRESH_EVERY seconds, as the
-- contract has it (backends: refresh).
local function info(extra, changed)
  return { changed = changed, fields = fields(extra), record = extra.record,
           record_url = extra.record_url }
end

-- Why a job that runs after others ended before it started, naming the
-- first of those that failed or was cancelled; nil when none did.
local function after_failure(L, db, spec, ctx)
  for _, id in ipairs(spec.after or {}) do
    local text = db:get(id)
    local row = text and json.decode(text)
    if row and not final(row.state) and ctx then
      -- not looked at since it ended: brought up to date first
      L.refresh(row, ctx, true)
      text = db:get(id)
      row = text and json.decode(text)
    end
    if row and (row.state == "failed" or row.state == "cancelled") then
      return { phase = "accepted", reason = "it runs after " .. row.name
               .. " (" .. id .. "), which ended " .. row.state,
               hint = "see why that job ended (navette status), then run "
               .. "the recipe again" }
    end
  end
  return nil
end

-- Records the end of a job Slurm says is over (view: wire.map_state's),
-- by its run record in store (if any) and Slurm's word; extra gets the
-- record the view shows.
local function finish(L, row, ctx, store, job, view, extra)
  local spec, db = row.spec, ctx.db
  local record, text
  local url = spec.outputs.url .. _navette.record.names.run_record
  if store then
    text = store:read(url, 4 * 1024 * 1024)
    record = text and json.decode(text) or nil
  end
  local state, failure, code = outcome(view, job, text)
  if state == "cancelled" and not record then
    -- ended by Slurm because a job it runs after cannot succeed
    failure = after_failure(L, db, spec, ctx) or failure
  end
  -- the record's phases first (the status object read above may be
  -- older than the end), then the end: never before the last phase
  -- (Slurm's end time has whole seconds)
  local final_phase = state == "succeeded" and "succeeded" or "failed"
  local last, ended = published.merge_phases(db, row.id, record
                                   and type(record.phases) == "table"
                                   and record.phases or {})
  ended = ended or (job.end_time > 0 and job.end_time or sys.now())
  db:phase(row.id, final_phase, math.max(ended, last))
  db:finish(row.id, state, code, failure, record and url or nil)
  -- a secret the node did not fetch (and delete): deleted now
  if store and spec.secrets_objects then secrets.delete(spec, store) end
  -- the view shows this very record: not read twice
  extra.record, extra.record_url = record, record and url or nil
end

-- What Slurm still says of a job that ended (its node, its restarts), if
-- anything.
local function look_again(wire, row, extra)
  if no_remote(row) then return end
  local ok, session = pcall(wire.status_session, row.spec.slurm)
  if ok then
    extra.job = session:job(description.remote_ref(row.remote_id))
    session:close()
  end
end

-- Seconds after its row was made before a job Slurm does not know is
-- taken as one it forgot (observe.forgotten_after; a test shortens it).
observe.forgotten_after = 60

-- A job Slurm no longer knows: it ended longer ago than the cluster's
-- MinJobAge (300 s by default) while nobody looked, the laptop closed.
-- Its end is its run record's; with none (it never reached its end),
-- a failure that says where to look. Returns true when the row ended.
local function forgotten(L, row, ctx, store, extra)
  local made = util.parse_iso8601(row.created)
  local url = row.spec.outputs.url .. _navette.record.names.run_record
  local text = store:read(url, 4 * 1024 * 1024)
  if not text and (not made
                   or sys.now() - made < observe.forgotten_after) then
    return false
  end
  local id = tostring(row.remote_id)
  local job = { job_id = id, state = "FORGOTTEN", nodes = "",
                restarts = 0, end_time = 0 }
  local view = {
    done = true, state = "failed", phase = row.phase or "accepted",
    exit_code = -1,
    detail = "no longer knows job " .. id .. " (it ended before "
      .. "the cluster's MinJobAge, while nobody looked) and its run "
      .. "record is not in storage",
    hint = "read the node's output (navette-" .. id .. ".out in the "
      .. "profile's working_directory), or run `sacct -j " .. id
      .. "` on the cluster" }
  finish(L, row, ctx, store, job, view, extra)
  extra.view = view
  return true
end

-- Brings the row of a Slurm job up to date: Slurm's state, the phases
-- the launcher published, and, once it is over, its outcome.
local function refresh(L, wire, cache, row, ctx, force)
  local spec = row.spec
  local extra = cache[row.id]
  local ended = final(row.state)
  if extra and (ended or (not force and sys.now() - extra.at < REFRESH_EVERY))
  then
    return info(extra, false)
  end
  extra = { at = sys.now() }
  cache[row.id] = extra
  if ended then
    look_again(wire, row, extra)
    return info(extra, false)
  end
  if no_remote(row) then return info(extra, false) end
  local store = published.walk_store(spec, ctx)
  if store then
    published.merge_phases(ctx.db, row.id, published.phases(store, spec))
  end
  local ok, session = pcall(wire.status_session, spec.slurm)
  local job, err
  if ok then
    job, err = session:job(description.remote_ref(row.remote_id))
    session:close()
  else
    err = errors.from(session)
  end
  if not job and err and err.code == "not_found" and store
     and forgotten(L, row, ctx, store, extra) then
    store:close()
    return info(extra, true)
  end
  if not job then
    extra.error = err
    if store then store:close() end
    return info(extra, store ~= nil)
  end
  extra.job = job
  local view = wire.map_state(job, spec.requeue == true)
  extra.view = view
  if view.done then
    finish(L, row, ctx, store, job, view, extra)
  else
    ctx.db:set_remote(row.id, nil, view.state)
  end
  if store then store:close() end
  return info(extra, true)
end

-- What Slurm knows now of the session user's jobs on the cluster of
-- spec.slurm (cfg): {[navette job id] = Slurm's job}, or nil and an error.
local function listing(wire, cfg)
  local ok, session = pcall(wire.status_session, cfg)
  if not ok then return nil, errors.from(session) end
  local list, err = session:jobs()
  session:close()
  if not list then return nil, err end
  local by = {}
  for _, j in ipairs(list) do
    if j.name then by[j.name] = j end
  end
  return by
end

-- A row without a Slurm id (a submission whose answer was lost: Slurm
-- may run it all the same) looked up by name before it is cancelled:
-- found, the row gets its id and true is returned; not found, the row is
-- cancelled and false returned.
local function cancel_unanswered(wire, session, row, ctx)
  local found, ferr = session:find { name = row.id }
  if not found and not (ferr and ferr.code == "not_found") then
    error(errors.new("backend", wire.where(row.spec.slurm) .. ": cannot "
                     .. "look up job " .. row.id .. " before cancelling "
                     .. "it: " .. (ferr and ferr.message or "?"), "check "
                     .. "that " .. wire.service .. " is reachable, then "
                     .. "cancel again"), 0)
  end
  if not found then
    ctx.db:finish(row.id, "cancelled", nil,
      { phase = row.phase, reason = "cancelled before Slurm answered",
        hint = "submit it again with navette run" })
    return false
  end
  row.remote_id = tostring(found.job_id)
  ctx.db:set_remote(row.id, row.remote_id, nil)
  return true
end

-- Cancels a Slurm job (its launcher publishes its log and record as it
-- stops); returns what to print.
local function cancel(L, wire, row, ctx)
  local session = wire.status_session(row.spec.slurm)
  if no_remote(row) then
    local ok, in_slurm = pcall(cancel_unanswered, wire, session, row, ctx)
    if not ok or not in_slurm then session:close() end
    if not ok then error(in_slurm, 0) end
    if not in_slurm then return "cancelled" end
  end
  local ok, was_done = session:cancel(description.remote_ref(row.remote_id))
  session:close()
  if not ok then
    error(errors.new("backend", wire.where(row.spec.slurm) .. ": cannot "
                     .. "cancel Slurm job " .. row.remote_id .. ": "
                     .. was_done.message, (was_done.hint and was_done.hint
                     .. "; " or "") .. "the job was not cancelled: cancel "
                     .. "it again once " .. wire.service .. " answers"), 0)
  end
  L.refresh(row, ctx, true)
  return was_done and "already finished" or "cancelling"
end

-- ---- reading back ------------------------------------------------------------

-- The job's log as its launcher shipped it: the chunks in order (read
-- once each), or the published log when no chunk was shipped.
local function log_chunk(shipped, view, offset, ctx)
  return (published.shipped_log(shipped, view, offset, ctx.db))
end

-- What `status` and `jobs --profile` show of a Slurm job (x: its view,
-- or a listed row completed by list_rows): its Slurm job, state and node.
local function describe(name, x)
  local sl = x.slurm or {}
  local job_id = sl.job_id
  return {
    line = "backend " .. name .. " · job " .. tostring(x.remote_id)
           .. (sl.state and (" · " .. sl.state .. ((sl.reason and
               sl.reason ~= "None" and sl.reason ~= "") and (" ("
               .. sl.reason .. ")") or "")) or "")
           .. ((sl.nodes and sl.nodes ~= "") and (" on " .. sl.nodes)
               or "")
           .. ((sl.restarts or 0) > 0 and (" · requeued "
               .. sl.restarts .. "x") or ""),
    note = sl.error and ("(cannot reach Slurm: " .. sl.error
                         .. (sl.error_hint and ("; " .. sl.error_hint) or "")
                         .. ")") or nil,
    column = {
      title = "SLURM", width = 24,
      text = job_id and (tostring(job_id)
             .. (sl.state and (" " .. sl.state) or "")
             .. ((sl.nodes and sl.nodes ~= "") and (" " .. sl.nodes)
                 or "")) or "-",
    },
    node = sl.nodes ~= "" and sl.nodes or nil,
  }
end

-- Completes the listed rows of Slurm jobs (those of one profile) with
-- their Slurm job: what Slurm and the node say now of those still going,
-- and the ended ones as Slurm still has them (state, node), from one
-- listing.
local list_walk
local function list_rows(L, wire, rows, ctx)
  -- one store per S3 store, and (wire.hold) one answer of Slurm's, for
  -- the whole walk
  local walk = { stores = {} }
  local saved = ctx.walk
  ctx.walk = walk
  if wire.hold then wire.hold(true) end
  local ok, err = pcall(list_walk, L, rows, ctx)
  if wire.hold then wire.hold(false) end
  ctx.walk = saved
  for _, store in pairs(walk.stores) do
    if store then store:close() end
  end
  if not ok then error(err, 0) end
end

-- (list_rows' walk over the rows)
function list_walk(L, rows, ctx)
  for _, r in ipairs(rows) do
    if not final(r.state) then
      -- (a listed row has no spec: the whole row is read)
      local row = errors.check(ctx.db:get(r.id))
      row = json.decode(row)
      local got = L.refresh(row, ctx)
      if got.changed then row = json.decode(errors.check(ctx.db:get(r.id))) end
      r.state, r.phase, r.failure = row.state, row.phase, row.failure
      r.slurm = got.fields and got.fields.slurm
    end
    r.slurm = r.slurm or {}
    r.slurm.job_id = math.tointeger(tonumber(r.remote_id))
                     or (r.remote_id ~= json.null and r.remote_id or nil)
  end
  local listed
  for _, r in ipairs(rows) do
    if not r.slurm.state and r.slurm.job_id then
      if listed == nil then
        local text = ctx.db:get(r.id)
        local row = text and json.decode(text)
        listed = row and row.spec and row.spec.slurm
                 and L.listing(row.spec.slurm) or false
      end
      local sj = listed and listed[r.id]
      if sj then
        r.slurm.state, r.slurm.nodes, r.slurm.reason =
          sj.state, sj.nodes, sj.reason
      end
    end
  end
end

-- Adds refresh, listing, cancel, log_chunk, describe and list_rows, over
-- wire (navette.slurm.logic), to L; each L keeps its own memory of the
-- jobs it looked at.
function observe.install(L, wire)
  local last_refresh, shipped = {}, {}
  function L.refresh(row, ctx, force)
    return refresh(L, wire, last_refresh, row, ctx, force)
  end
  function L.listing(cfg) return listing(wire, cfg) end
  function L.cancel(row, ctx) return cancel(L, wire, row, ctx) end
  function L.log_chunk(view, offset, ctx)
    return log_chunk(shipped, view, offset, ctx)
  end
  function L.describe(x) return describe(wire.name, x) end
  function L.list_rows(rows, ctx) return list_rows(L, wire, rows, ctx) end
end

return observe
