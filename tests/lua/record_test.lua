-- _navette.record: the job record's names, and its outcome rule called the
-- way a remote backend calls it. The rule must give what the Slurm
-- backend computed in Lua before it moved to C (`reference` below, kept
-- as the statement of that behaviour) for every kind of end.
local t = test
local record, json = _navette.record, _navette.json

t.test("the lists and the layout", function()
  t.eq(table.concat(record.phases, " "), "submitted accepted image_ready "
       .. "data_ready running logs_visible outputs_published")
  t.eq(table.concat(record.states, " "), "succeeded failed cancelled")
  t.eq(record.names.log, "navette.log")
  t.eq(record.names.log_chunks, "navette-log/")
  t.eq(record.names.status, "navette-status")
  t.eq(record.names.run_record, "navette-run.json")
  t.eq(record.names.log_chunk_digits, 6)
end)

local STOPPED = { TIMEOUT = true, NODE_FAIL = true, OUT_OF_MEMORY = true,
                  PREEMPTED = true, BOOT_FAIL = true, DEADLINE = true,
                  CANCELLED = true }

local function missing_hint(job)
  return "read the node's output (navette-" .. job.job_id .. ".out in the "
         .. "profile's working_directory); check the node's curl and that "
         .. "its POST policy had not expired"
end

-- What slurm.lua computed (its outcome(), then the exit code).
local function reference(view, job, text)
  local record = text and json.decode(text) or nil
  local state, failure = view.state, nil
  if record and not STOPPED[job.state] then
    state = record.state
    failure = record.failure ~= json.null and record.failure or nil
  elseif view.state ~= "succeeded" then
    failure = { phase = view.phase, reason = "Slurm: " .. view.detail,
                hint = view.hint ~= "" and view.hint or nil }
    if record and record.failure and record.failure ~= json.null
       and job.state == "CANCELLED" then
      failure.phase = record.failure.phase
    end
  elseif not record then
    state = "failed"
    failure = { phase = "outputs_published", reason = "the job ended but "
                .. "left no run record in storage", hint = missing_hint(job) }
  end
  local code = record and math.type(record.exit_code) == "integer"
               and record.exit_code or (view.exit_code >= 0
               and view.exit_code or nil)
  return state, failure, code
end

-- The same through the binding, as the Slurm backend calls it.
local function through_binding(view, job, text)
  return record.outcome(text, {
    state = view.state, phase = view.phase,
    reason = "Slurm: " .. view.detail,
    hint = view.hint ~= "" and view.hint or nil,
    stopped = STOPPED[job.state] == true,
    phase_from_record = job.state == "CANCELLED",
    exit_code = view.exit_code >= 0 and view.exit_code or nil,
    missing_reason = "the job ended but left no run record in storage",
    missing_hint = missing_hint(job),
  })
end

local records = {
  { "none", nil },
  { "succeeded", '{"state":"succeeded","exit_code":0,"failure":null}' },
  { "failed", '{"state":"failed","exit_code":3,"failure":{"phase":'
              .. '"outputs_published","reason":"required output \'a\' is '
              .. 'missing","hint":"write it"}}' },
  { "cancelled", '{"state":"cancelled","exit_code":null,"failure":{'
                 .. '"phase":"data_ready","reason":"cancelled while '
                 .. 'running","hint":""}}' },
  { "malformed", '{"state":' },
}

local views = {
  { job = "COMPLETED", state = "succeeded", phase = "succeeded",
    detail = "COMPLETED", hint = "", exit_code = 0 },
  { job = "FAILED", state = "failed", phase = "running",
    detail = "FAILED (NonZeroExitCode)",
    hint = "the command exited with code 3", exit_code = 3 },
  { job = "CANCELLED", state = "cancelled", phase = "running",
    detail = "CANCELLED", hint = "", exit_code = -1 },
  { job = "TIMEOUT", state = "failed", phase = "running",
    detail = "TIMEOUT", hint = "the job reached its time limit",
    exit_code = -1 },
  { job = "NODE_FAIL", state = "failed", phase = "accepted",
    detail = "NODE_FAIL on gpu-a", hint = "the node failed",
    exit_code = -1 },
}

t.test("the outcome is the Slurm backend's, for every kind of end",
       function()
  local n = 0
  for _, r in ipairs(records) do
    local rname, text = r[1], r[2]
    for _, view in ipairs(views) do
      local job = { state = view.job, job_id = 42 }
      local what = view.job .. " with record " .. rname
      local rs, rf, rc = reference(view, job, text)
      local s, f, c = through_binding(view, job, text)
      t.eq(s, rs, what .. ": state")
      t.eq(c, rc, what .. ": exit code")
      t.eq(f == nil, rf == nil, what .. ": failure")
      if f and rf then
        t.eq(f.phase, rf.phase, what .. ": phase")
        t.eq(f.reason, rf.reason, what .. ": reason")
        t.eq(f.hint, rf.hint, what .. ": hint")
      end
      n = n + 1
    end
  end
  t.eq(n, #records * #views)
end)

t.test("misuse raises", function()
  t.raises(function() record.outcome(nil, { state = "done" }) end,
           "ended.state")
  t.raises(function()
    record.outcome(nil, { state = "failed", phase = "nowhere" })
  end, "ended.phase")
  t.raises(function()
    record.outcome(nil, { state = "failed", phase = "running",
                          exit_code = 1.5 })
  end, "exit_code")
  t.raises(function() record.outcome(nil) end)
end)
