-- Submitting to Slurm through a session (navette.slurm.logic): one job,
-- or the tasks of a sweep as one job array. The job database keeps a row
-- per job, written before the request is sent: a submission whose
-- answer was lost leaves a row without a Slurm id, which the next run of
-- the same job looks up in Slurm by name (the navette id is the Slurm
-- job's name; an array's task is found by the array's name) and adopts
-- before it submits anything.
local errors = require "navette.errors"
local description = require "navette.slurm.description"
local secrets = require "navette.slurm.secrets"
local jobs_native, sys, json = _navette.jobs, _navette.sys, _navette.json

local submit = {}

-- Closes a session unless the caller keeps it (ctx.sessions: the run
-- closes those).
local function release(session, ctx)
  if not ctx.sessions then session:close() end
end

-- A submission of the same job whose answer never came (no Slurm id):
-- found in Slurm by its name, it is adopted instead of submitted again;
-- not found, it is marked failed. Returns the adopted row's id, or nil.
local function settle_pending(name, db, session, spec)
  local text = db:pending_remote(name, spec.profile, spec.name)
  local adopted
  for _, row in ipairs(text and json.decode(text) or {}) do
    if row.spec and row.spec.commit == spec.commit then
      -- a task of a job array is found by the array's name
      local array = row.spec.array
      local found, ferr = session:find { name = array and array.name
                                                or row.id }
      if found then
        db:set_remote(row.id, array and ((found.array_job_id
                      or found.job_id) .. "_" .. array.index)
                      or tostring(found.job_id), "queued")
        db:phase(row.id, "accepted", sys.now())
        adopted = adopted or row.id
      elseif ferr and ferr.code == "not_found" and row.id == spec.id then
        -- this very submission, resumed (runner.spec): never reached
        -- Slurm, so it is sent now under its recorded id
      elseif ferr and ferr.code == "not_found" then
        db:finish(row.id, "failed", nil,
          { phase = "accepted", reason = "the submission got no answer "
            .. "and Slurm has no job by this name",
            hint = "nothing ran: submit it again" })
      else
        error(errors.new("backend", "cannot look up job " .. row.id
                         .. " in Slurm: " .. (ferr and ferr.message or "?"),
                         ferr and ferr.hint), 0)
      end
    end
  end
  return adopted
end

-- The description of spec checked by the wire, or a recipe error.
local function checked(wire, spec, desc)
  local ok, cerr = wire.check_desc(desc)
  if not ok then
    error(errors.new("recipe", "job '" .. spec.name .. "': " .. cerr.message,
                     cerr.hint), 0)
  end
  return desc
end

-- The session opened to submit spec; refused before anything reached
-- Slurm (identity, most often): the job is recorded as failed where it
-- stopped, then the error raised.
local function session_or_fail(wire, spec, ctx)
  local ok, session = wire.session(spec, ctx)
  if ok then return session end
  local e = errors.from(session)
  if ctx.db:submit(spec.id, spec.project, spec.profile, spec.name,
                   json.encode(spec), wire.name) ~= nil then
    ctx.db:finish(spec.id, "failed", nil, { phase = "accepted",
                  reason = e.message, hint = e.hint })
  end
  error(e, 0)
end

-- What follows a request that failed: refused for sure (a 4xx answer):
-- the job failed and nothing runs; else the row stays pending (no Slurm
-- id) for the next run to find by name. Raises.
local function send_failed(wire, spec, err, refused, db)
  if not refused then
    error(errors.new("backend", wire.where(spec.slurm) .. ": the "
                     .. "submission of job '" .. spec.name .. "' got "
                     .. "no usable answer (" .. err.message .. "): it may "
                     .. "or may not be in Slurm", "check that "
                     .. wire.service .. " is reachable, then run the same "
                     .. "`navette run` again: it looks the job up in Slurm "
                     .. "by its name " .. spec.id .. " and submits it only "
                     .. "if Slurm has none"), 0)
  end
  secrets.delete(spec)
  db:finish(spec.id, "failed", nil,
    { phase = "accepted", reason = "Slurm refused the job: "
      .. err.message, hint = err.hint or "check the profile's slurm "
      .. "settings and the job's resources" })
  error(errors.new(err.code == "refused" and "refused" or "backend",
                   "Slurm refused job '" .. spec.name .. "': "
                   .. err.message, err.hint), 0)
end

-- Sends spec (its launcher: script) to Slurm through session; returns
-- the job's id and false, or nil and the error when its row cannot be
-- recorded. Closes nothing.
local function send_through(wire, session, spec, script, ctx)
  local db = ctx.db
  local desc = description.of(spec, ctx.nodes)
  desc.after = description.after_ids(db, spec)
  checked(wire, spec, desc)
  script = secrets.deliver(spec, script, ctx)
  -- recorded first: an answer lost from here on is found again by name
  local inserted, ierr = db:submit(spec.id, spec.project, spec.profile,
                                   spec.name, json.encode(spec), wire.name,
                                   ctx.submission and ctx.submission.key)
  if inserted == nil then
    secrets.delete(spec)
    return nil, ierr
  end
  local job_id, err, refused = session:submit(script, desc)
  if not job_id then send_failed(wire, spec, err, refused, db) end
  -- tests: accepted by Slurm, not yet recorded (core/fault.h)
  jobs_native.fault_point("submit-accepted", spec.name)
  local recorded, rerr = db:set_remote(spec.id, tostring(job_id), "queued")
  if not recorded then
    -- Slurm runs it; the next run of the same job finds it by name
    error(errors.new("backend", "Slurm accepted job '" .. spec.name
                     .. "' as " .. tostring(job_id) .. " but its id could "
                     .. "not be recorded: " .. rerr.message, "run the same "
                     .. "`navette run` again: it finds the job in Slurm by "
                     .. "its name " .. spec.id .. " and submits nothing "
                     .. "twice"), 0)
  end
  db:phase(spec.id, "accepted", sys.now())
  return spec.id, false
end

-- Sends spec to Slurm, or adopts an earlier submission of it whose
-- answer was lost; returns the job's id and whether it was adopted (or
-- nil and the error when its row cannot be recorded).
local function send(wire, spec, script, ctx)
  local session = session_or_fail(wire, spec, ctx)
  local ok, id, adopted = pcall(function()
    local found = settle_pending(wire.name, ctx.db, session, spec)
    if found then return found, true end
    return send_through(wire, session, spec, script, ctx)
  end)
  release(session, ctx)
  if not ok then error(id, 0) end
  return id, adopted
end

-- Submits the job (ctx: see backends): sent to Slurm, or, when an
-- earlier submission of it got no answer but Slurm has it, that one
-- adopted (its own spec, its own URLs) and nothing sent again.
local function submit_one(wire, spec, launcher, ctx)
  local sub = ctx.submission or {}
  local id, adopted
  if sub.resumed and type(sub.resumed.remote_id) == "string" then
    -- Slurm's id was recorded; only the end of the submission was lost
    id, adopted = sub.resumed.id, true
  else
    id, adopted = send(wire, spec, launcher, ctx)
  end
  if not id then
    error(errors.new("backend", "cannot record job '" .. spec.name
                     .. "': " .. adopted.message, adopted.hint), 0)
  end
  if adopted then
    local text = ctx.db:get(id)
    local row = text and json.decode(text)
    spec = row and row.spec or spec
    spec.adopted = true
    _navette.out.write("stderr", "note: job '" .. spec.name .. "' was "
                       .. "already submitted as " .. id .. " (Slurm job "
                       .. tostring(row and row.remote_id) .. "); its "
                       .. "answer had been lost: nothing was submitted "
                       .. "again\n")
  else
    ctx.audit(spec, wire.name)
    for _, item in ipairs(spec.secrets or {}) do
      ctx.audit_secret(spec, item)
    end
  end
  errors.check(ctx.db:submitted(id))
  return spec
end

-- ---- job arrays ----------------------------------------------------------------

-- Records the tasks' rows before the request (each with its spec, whose
-- `array` says how Slurm knows it: an answer lost from here on is found
-- again by the array's name), after each task's earlier submission whose
-- answer was lost has been looked for. -> the ids of the adopted ones,
-- by task (then none is recorded), and how many
local function array_rows(wire, specs, session, ctx, name)
  local adopted, n = {}, 0
  for k, spec in ipairs(specs) do
    adopted[k] = settle_pending(wire.name, ctx.db, session, spec)
    if adopted[k] then n = n + 1 end
  end
  if n > 0 and n < #specs then
    error(errors.new("backend", "of the " .. #specs .. " jobs of sweep '"
                     .. specs[1].name .. "'..., " .. n .. " were found in "
                     .. "Slurm from an earlier submission and the others "
                     .. "not", "see `navette jobs`; cancel what is left "
                     .. "of that submission, then run again"), 0)
  end
  if n > 0 then return adopted, n end
  require("navette.backends").record_tasks(ctx, specs, wire.name,
    function(k)
      return { name = name, index = k - 1, size = #specs,
               first = specs[1].id }
    end)
  return adopted, 0
end

-- What becomes of the tasks when the one request fails: refused for sure
-- (a 4xx answer): each failed; else each left pending, for the next run
-- to find by the array's name.
local function array_failed(wire, db, specs, err, refused, name)
  local first = specs[1]
  if refused then
    for _, spec in ipairs(specs) do
      db:finish(spec.id, "failed", nil,
        { phase = "accepted", reason = "Slurm refused the job array: "
          .. err.message, hint = err.hint or "check the profile's slurm "
          .. "settings and the job's resources" })
    end
    error(errors.new(err.code == "refused" and "refused" or "backend",
                     "Slurm refused the job array of sweep '"
                     .. first.name .. "'...: " .. err.message, err.hint), 0)
  end
  error(errors.new("backend", wire.where(first.slurm)
                   .. ": the submission of the job array " .. name .. " ("
                   .. #specs .. " jobs) got no usable answer ("
                   .. err.message .. "): it may or may not be in Slurm",
                   "check that " .. wire.service .. " is reachable, then "
                   .. "run the same `navette run` again: it looks the "
                   .. "array up in Slurm by its name and submits it only "
                   .. "if Slurm has none"), 0)
end

-- The description of the job array of specs (the tasks of one sweep).
local function array_description(wire, specs, ctx, name)
  local first = specs[1]
  local desc = description.of(first, ctx.nodes)
  desc.name, desc.comment = name, "navette array of " .. #specs
                                   .. " jobs from " .. first.id
  desc.env.NAVETTE_JOB_ID = nil
  desc.stdout = first.slurm.working_directory .. "/navette-%A_%a.out"
  desc.array = "0-" .. (#specs - 1)
  desc.after = description.after_ids(ctx.db, first)
  return checked(wire, first, desc)
end

-- Submits the specs (the tasks of one sweep, script their one launcher)
-- as one job array: one request, task k-1 being specs[k], each task a
-- job of its own for navette (its row, Slurm id "ARRAY_TASK", prefix,
-- record). ctx: as submit's, with submissions[k] for each spec. -> the
-- specs (those of an earlier submission adopted, when its answer had
-- been lost).
local function array_through(wire, session, specs, script, ctx)
  local first = specs[1]
  local name = first.id .. "-array"
  local adopted, n = array_rows(wire, specs, session, ctx, name)
  if n > 0 then
    for k, spec in ipairs(specs) do
      specs[k] = submit_one(wire, spec, script, { db = ctx.db, sessions =
        ctx.sessions, submission = { resumed = { id = adopted[k],
        remote_id = "adopted" } }, audit = ctx.audit })
    end
    return specs
  end
  local desc = array_description(wire, specs, ctx, name)
  local array_id, err, refused = session:submit(script, desc)
  if not array_id then array_failed(wire, ctx.db, specs, err, refused, name) end
  jobs_native.fault_point("submit-accepted", name)
  -- each task's Slurm id and phase, and its submission complete, in one
  -- transaction (a run killed before it finds the array by its name)
  local now, audited = sys.now(), {}
  errors.check(ctx.db:transaction(function()
    for k, spec in ipairs(specs) do
      errors.check(ctx.db:set_remote(spec.id, array_id .. "_" .. (k - 1),
                                     "queued"))
      ctx.db:phase(spec.id, "accepted", now)
      errors.check(ctx.db:submitted(spec.id))
      audited[k] = { spec, wire.name .. " array " .. array_id .. " task "
                           .. (k - 1) }
    end
    return true
  end))
  ctx.audit_many(audited)
  return specs
end

-- array_through over the session for specs, closed after unless kept.
local function submit_array(wire, specs, script, ctx)
  local ok, session = wire.session(specs[1], ctx)
  if not ok then error(errors.from(session), 0) end
  local done, got = pcall(array_through, wire, session, specs, script, ctx)
  release(session, ctx)
  if not done then error(got, 0) end
  return got
end

-- Adds submit and submit_array, over wire (navette.slurm.logic), to L.
function submit.install(L, wire)
  function L.submit(spec, launcher, ctx)
    return submit_one(wire, spec, launcher, ctx)
  end
  function L.submit_array(specs, script, ctx)
    return submit_array(wire, specs, script, ctx)
  end
end

return submit
