-- The jobs of the local backend as the CLI shows them: one stable view
-- (the `--json` fields of the README) built from the queue's row and, once
-- the job is over, its run record in storage.
local errors = require "navette.errors"
local core, json, native, sys = _navette.core, _navette.json,
                                _navette.jobs, _navette.sys

local jobs = {}

jobs.PHASES = { "submitted", "accepted", "image_ready", "data_ready",
                "running", "logs_visible", "outputs_published" }
jobs.FINAL = { succeeded = true, failed = true, cancelled = true }

-- Every read of the jobs first makes sure an agent follows the local
-- ones: one that died (killed, out of memory) would leave them `running`
-- for ever. A new one adopts each job whose launcher still runs and ends
-- the others from their status files before the read goes on. Checked at
-- most every AGENT_CHECK_S seconds; what stopped a start is kept in
-- jobs.agent_problem (the CLI warns), the read goes on with the queue's
-- rows as they are.
local AGENT_CHECK_S = 2
local agent_checked
function jobs.revive_agent()
  local now = sys.now()
  if agent_checked and now - agent_checked < AGENT_CHECK_S then return end
  agent_checked = now
  local started, err = native.revive_agent(core.home())
  jobs.agent_problem = started == nil and err or nil
  return started
end

function jobs.row(id)
  local text, err = native.get(core.home(), id)
  if not text then return nil, err end
  return json.decode(text)
end

-- The s3:// store a job published to, from what its spec says of it (the
-- credential is loaded from its declaration, in this process).
function jobs.s3_store(spec)
  local s3 = spec and spec.outputs and spec.outputs.s3
  if not s3 then return nil end
  local ok, store = pcall(require("navette.s3store").open,
                          { name = spec.profile, s3 = s3 })
  if not ok then return nil, store end
  return store
end

local function read_record(url, spec)
  if type(url) ~= "string" then return nil end
  if url:match("^s3://") then
    local store = jobs.s3_store(spec)
    if not store then return nil end
    local text = store:read(url, 4 * 1024 * 1024)
    store:close()
    return text and json.decode(text) or nil
  end
  local storage = _navette.storage
  local root, key = storage.find(url)
  if not root then return nil end
  local store = storage.open(root)
  if not store then return nil end
  local text = store:read(key, 4 * 1024 * 1024)
  store:close()
  return text and json.decode(text) or nil
end

-- The stable view of a job (README: "--json fields").
function jobs.view(row, extra)
  local spec = row.spec or {}
  local v = {
    id = row.id, name = row.name, project = row.project,
    profile = row.profile, state = row.state, phase = row.phase,
    phases = row.phases or json.array(),
    commit = spec.commit, image = spec.image,
    outputs = json.array(),
    output_prefix = spec.outputs and spec.outputs.url or nil,
    failure = row.failure,
    exit_code = row.exit_code,
    created = row.created, updated = row.updated,
    record_url = row.record_url,
    log_path = core.home() .. "/jobs/" .. row.id .. "/log",
    backend = row.backend or "local",
    remote_id = row.remote_id ~= json.null and row.remote_id or nil,
  }
  local remote = extra and extra.job
  if remote then
    -- what Slurm says of it now: its state (with the reason a pending
    -- job waits for), its node, its restarts after a node failure
    v.slurm = { state = remote.state, reason = remote.reason,
                nodes = remote.nodes, restarts = remote.restarts,
                detail = extra.view and extra.view.detail or nil }
  elseif extra and extra.error then
    v.slurm = { error = extra.error.message }
  end
  local record = read_record(row.record_url, spec)
  if record then
    for i, o in ipairs(record.outputs or {}) do
      v.outputs[i] = { name = o.name, key = o.key, url = o.url,
                       size = o.size, sha256 = o.sha256 }
    end
    v.log_url = record.log and record.log.url or nil
  end
  return v
end

-- What a remote launcher published of its phases (its navette-status
-- object: "PHASE TIME" lines), oldest first; {} before the first.
function jobs.remote_phases(store, spec)
  local text = store:read(spec.outputs.url .. "navette-status", 65536)
  local out = {}
  for phase, at in (text or ""):gmatch("([%w_]+) ([%dT:.Z-]+)\n") do
    out[#out + 1] = { phase = phase, at = at }
  end
  return out
end

-- The log chunks a remote launcher shipped after chunk number `after`
-- (navette-log/000001...), in order: a list of {n, data}.
function jobs.remote_log_chunks(store, spec, after)
  local prefix = spec.outputs.prefix .. "navette-log/"
  local listing = store:list(prefix)
  local chunks = {}
  for _, o in ipairs(listing and listing.objects or {}) do
    local n = tonumber(o.key:match("navette%-log/(%d+)$"))
    if n and n > (after or 0) then chunks[#chunks + 1] = { n = n, url = o.url } end
  end
  table.sort(chunks, function(a, b) return a.n < b.n end)
  local out = {}
  for i, c in ipairs(chunks) do
    -- a gap: a chunk still being written; stop before it
    if c.n ~= (after or 0) + i then break end
    local data = store:read(c.url, 64 * 1024 * 1024)
    if not data then break end
    out[#out + 1] = { n = c.n, data = data }
  end
  return out
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
function jobs.resolve(id)
  local row, err = jobs.row(id)
  if not row then jobs.lookup_error(id, err) end
  return row
end

function jobs.get(id)
  jobs.revive_agent()
  local row = jobs.resolve(id)
  if row.backend == "slurm" then
    local extra = require("navette.slurm").refresh(row)
    return jobs.view(jobs.row(row.id) or row, extra)
  end
  return jobs.view(row)
end

function jobs.list(limit)
  jobs.revive_agent()
  local text, err = native.list(core.home(), limit)
  if not text then error(errors.new("io", err.message, err.hint), 0) end
  return json.decode(text)
end

function jobs.cancel(id)
  local row = jobs.row(id)
  if row and row.backend == "slurm" then
    return require("navette.slurm").cancel(row)
  end
  local state, err = native.cancel(core.home(), id)
  if not state then jobs.lookup_error(id, err) end
  jobs.revive_agent() -- an agent stops a running job
  return state
end

-- Bytes of the job's log from offset (local file, else the published one).
-- A remote job's log as its launcher shipped it: the chunks in order
-- (read once each), or the published log when no chunk was shipped.
local remote_logs = {}
local function remote_log_chunk(view, offset)
  local row = jobs.row(view.id)
  local spec = row and row.spec
  local store = spec and jobs.s3_store(spec)
  if not store then return "" end
  local seen = remote_logs[view.id] or { n = 0, bytes = 0 }
  remote_logs[view.id] = seen
  local out = {}
  for _, c in ipairs(jobs.remote_log_chunks(store, spec, seen.n)) do
    seen.n, seen.bytes = c.n, seen.bytes + #c.data
    out[#out + 1] = c.data
  end
  local data = table.concat(out)
  if seen.n == 0 and offset == 0 and jobs.FINAL[view.state]
     and view.log_url then
    data = store:read(view.log_url) or ""
    seen.bytes = #data
  end
  store:close()
  return data
end

function jobs.log_chunk(view, offset)
  if view.backend ~= "local" then return remote_log_chunk(view, offset) end
  local data = sys.read_from(view.log_path, offset, 1024 * 1024)
  if data then return data end
  if offset == 0 and view.log_url and view.log_url:match("^s3://") then
    local store = jobs.s3_store((jobs.row(view.id) or {}).spec)
    local text = store and store:read(view.log_url)
    if store then store:close() end
    return text or ""
  elseif offset == 0 and view.log_url then
    local storage = _navette.storage
    local root, key = storage.find(view.log_url)
    local store = root and storage.open(root)
    if store then
      local text = store:read(key)
      store:close()
      return text or ""
    end
  end
  return ""
end

return jobs
