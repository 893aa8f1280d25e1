-- navette.retest{ job = {...}, nodes = {...}, baseline = PREFIX }: the
-- re-test of every node after an update (a driver, a kernel, an image).
-- The smoke job is submitted once per node (pinned there), followed to
-- its end, and each run record is compared with that node's baseline in
-- the profile's store (the record of its last good re-test): state,
-- phases reached, each output's sha256, and the node's fingerprint
-- (image, OS, kernel, runtime, driver, CUDA, interpreter), which is shown
-- and never decides. A node without a baseline gets one; a node that
-- passes gets its new record as the next baseline; a regression keeps the
-- old one. Meant for a task's body (`navette maintain`); the waiting does
-- not count against the recipe's time bound.
local errors = require "navette.errors"
local util = require "navette.util"
local core, json, sys = _navette.core, _navette.json, _navette.sys

local M = {}

local KEYS = { "job", "nodes", "baseline", "timeout" }
M.KEYS = KEYS

local bad = errors.raiser("recipe", "navette.retest: ")

-- The nodes to test: given, else the profile's node list.
local function nodes_of(spec, profile)
  local nodes = spec.nodes
  if nodes == nil then
    local b = require("navette.backends").get(profile.backend)
    nodes = b.nodes and b.nodes(profile)
  end
  if type(nodes) == "string" then nodes = { nodes } end
  if type(nodes) ~= "table" or #nodes == 0 then
    bad("no nodes to test", "give nodes = { \"gpu-a\", ... }, or a "
        .. "profile whose backend lists its nodes (slurm.nodes)")
  end
  for i, n in ipairs(nodes) do
    if type(n) ~= "string" or not n:match("^[%w][%w._-]*$") or #n > 63 then
      bad("nodes[" .. i .. "] must be a node name (letters, digits, '.', "
          .. "'_', '-')")
    end
  end
  return nodes
end

-- The baseline's key of a node's job.
local function baseline_key(prefix, run, node, name)
  return prefix .. run.project.name .. "/" .. run.profile.name .. "/"
         .. node .. "/" .. name .. ".json"
end

local function phases_of(record)
  local out, seen = {}, {}
  for _, p in ipairs(type(record.phases) == "table" and record.phases or {}) do
    local name = type(p) == "table" and p.phase or nil
    if name and not seen[name] then
      seen[name] = true
      out[#out + 1] = name
    end
  end
  return out, seen
end

local function outputs_of(record)
  local out = {}
  for _, o in ipairs(type(record.outputs) == "table" and record.outputs or {}) do
    if type(o) == "table" and o.name then out[o.name] = o end
  end
  return out
end

-- Compares a node's record with its baseline (nil: none yet). Pure: the
-- tests call it. Returns regressed, rows {what, before, after, verdict}.
function M.compare(baseline, record)
  local rows, regressed = {}, false
  local function row(what, before, after, verdict, bad_row)
    rows[#rows + 1] = { what = what, before = before, after = after,
                        verdict = verdict }
    if bad_row then regressed = true end
  end
  local state = record and record.state or "no record"
  row("state", baseline and tostring(baseline.state) or "-", state,
      state == "succeeded" and "ok" or "REGRESSION",
      state ~= "succeeded")
  if not record then return regressed, rows end
  if baseline then
    local _, now = phases_of(record)
    for _, p in ipairs((phases_of(baseline))) do
      if not now[p] then
        row("phase " .. p, "reached", "missing", "REGRESSION", true)
      end
    end
    local before, after = outputs_of(baseline), outputs_of(record)
    for _, name in ipairs(util.sorted_keys(before)) do
      local a, b = before[name], after[name]
      if not b then
        row("output " .. name, "present", "missing", "REGRESSION", true)
      elseif a.sha256 ~= b.sha256 then
        row("output " .. name, tostring(a.sha256):sub(1, 12),
            tostring(b.sha256):sub(1, 12), "REGRESSION: sha256 differs",
            true)
      else
        row("output " .. name, tostring(a.sha256):sub(1, 12),
            tostring(b.sha256):sub(1, 12), "same")
      end
    end
    for _, name in ipairs(util.sorted_keys(after)) do
      if not before[name] then
        row("output " .. name, "-", tostring(after[name].sha256):sub(1, 12),
            "new")
      end
    end
    local fp = require("navette.portability").fingerprint_diff(
      baseline.node, record.node)
    if baseline.image ~= nil or record.image ~= nil then
      table.insert(fp, 1, { what = "image", a = tostring(baseline.image),
                            b = tostring(record.image),
                            same = baseline.image == record.image })
    end
    for _, d in ipairs(fp) do
      row("node " .. d.what, d.a, d.b, d.same and "same" or "changed")
    end
  end
  return regressed, rows
end

-- Follows the jobs (ids) to their end: their views, by id.
local function follow(ids, timeout)
  local jobs = require "navette.jobview"
  local deadline = sys.now() + timeout
  while true do
    local views, left = jobs.poll(ids)
    if left == 0 then return views end
    if sys.now() > deadline then
      errors.raise("backend", "navette.retest: " .. left .. " smoke job(s) "
                   .. "did not end within " .. timeout .. " s",
                   "see `navette status` of " .. table.concat(ids, ", ")
                   .. "; raise timeout")
    end
    jobs.supervise(views)
    sys.sleep(2)
  end
end

function M.retest(spec)
  if type(spec) ~= "table" then
    bad("expects a table { job = { ... }, nodes = { ... } }")
  end
  util.check_keys(spec, KEYS, function(k)
    bad("unknown key '" .. tostring(k) .. "'" .. util.suggest(tostring(k),
        KEYS), "keys: " .. table.concat(KEYS, ", "))
  end)
  local run = require("navette.context").current()
  if not run then bad("is called from a recipe or a task's body") end
  if type(spec.job) ~= "table" or type(spec.job.name) ~= "string" then
    bad("job must be a navette.job declaration with its name")
  end
  local backends = require "navette.backends"
  if not backends.get(run.profile.backend).nodes then
    bad("profile " .. run.profile.name .. " (" .. run.profile.backend
        .. ") has no nodes to test", "run it with a profile of the "
        .. backends.with("nodes") .. " backend")
  end
  local nodes = nodes_of(spec, run.profile)
  local prefix = spec.baseline or "_baselines/"
  if type(prefix) ~= "string" or not prefix:match("/$")
     or prefix:find("..", 1, true) then
    bad("baseline must be a key prefix ending in '/'")
  end
  local timeout = spec.timeout and util.parse_duration(spec.timeout) or 1800
  if not timeout or timeout <= 0 then bad("timeout must be a duration") end

  -- one job per node, pinned there, in a run of their own that shares
  -- the run's context (project, profile, repository)
  local job = require "navette.job"
  local declared = {}
  for i, node in ipairs(nodes) do
    local decl = util.deep_copy(spec.job)
    decl.name = decl.name .. "-" .. node
    decl.resources = decl.resources or {}
    decl.resources.nodes = node
    -- (a re-test runs, whatever ran before: never reused)
    if decl.reuse == nil then decl.reuse = false end
    local ok, j = pcall(job.validate, decl)
    if not ok then error(j, 0) end
    declared[i] = j
  end
  local sub = setmetatable({ jobs = declared, checked = false },
                           { __index = run })
  local specs = require("navette.run.submit").submit(sub)
  local report = { rows = json.array({}), regressions = 0,
                   nodes = json.array({}) }
  if core.plan_mode() then
    for i, s in ipairs(specs) do
      report.nodes[i] = { node = nodes[i], job = s.name, planned = true }
    end
    report.ok = true
    report.text = "would submit " .. #specs .. " smoke job(s): "
      .. table.concat(nodes, ", ")
    return core.seal(report)
  end
  local ids = {}
  for i, s in ipairs(specs) do ids[i] = s.id end
  local views = core.unbounded(follow, ids, timeout)
  local storage = require "navette.storage"
  local published = require "navette.published"
  local lines = {}
  for i, s in ipairs(specs) do
    local node, view = nodes[i], views[s.id]
    local record = view.record_url and published.record(view.record_url, s)
    local key = baseline_key(prefix, run, node, spec.job.name)
    local text = storage.try_read(key, 4 * 1024 * 1024)
    local baseline = text and json.decode(text) or nil
    local regressed, rows = M.compare(baseline, record)
    local verdict = regressed and "REGRESSION"
                    or (baseline and "ok" or "baseline recorded")
    if regressed then report.regressions = report.regressions + 1 end
    if record and not regressed then
      storage.put_string(key, json.encode(record))
    end
    report.nodes[i] = { node = node, job = s.id, verdict = verdict,
                        baseline = baseline and baseline.id or json.null }
    lines[#lines + 1] = node .. ": " .. verdict .. " (job " .. s.id
      .. (baseline and (", baseline " .. tostring(baseline.id)) or "") .. ")"
    for _, r in ipairs(rows) do
      r.node = node
      report.rows[#report.rows + 1] = r
      lines[#lines + 1] = string.format("  %-22s %-14s %-14s %s", r.what,
                                        r.before, r.after, r.verdict)
    end
  end
  report.ok = report.regressions == 0
  report.text = (report.ok and "no regression on " or (report.regressions
    .. " node(s) regressed of ")) .. #nodes .. " node(s)\n"
    .. table.concat(lines, "\n")
  return core.seal(report)
end

return M
