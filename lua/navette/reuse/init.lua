-- navette.reuse: a job that ran before with the same content key
-- (navette.reuse.key) is not run again: its outputs are taken where they
-- are. Before a job is submitted, `navette run` (and `plan`) decides:
--   reuse   the profile's store indexes a job of this key (an entry under
--           "<project>/navette-reuse/<hex of the key>/<job id>", written
--           once the job has succeeded: at the end of `run --wait`, or by
--           the next run from the home that ran it), whose run record is
--           there, says succeeded with the same key, and lists outputs
--           that are each in the store with their recorded size and
--           sha256. Failing the index, the last succeeded job of the same
--           name this home ran, whose key (completed from its producers'
--           records when it had none) is the same; its entry is then
--           written, for the team. A job that failed, was cancelled or
--           never ran leaves no entry: a lookup reads only what may be
--           reused. `navette reuse forget` leaves a mark
--           ("<hex>/forgotten.<job id>") that no lookup or home goes
--           past.
--   run     otherwise, with the reason: what differs from the last
--           succeeded job of that name (inputs, code, env, image...), an
--           output missing or changed, `reuse = false`, --rerun, or "no
--           earlier run".
-- Reuse is per store: profiles share nothing implicitly; a team sharing
-- a profile's store shares its results.
local key = require "navette.reuse.key"
local util = require "navette.util"
local published = require "navette.published"
local json = _navette.json

local M = {}

M.FOLDER = "navette-reuse"

-- A key's hex digits ("sha256:" left out): its folder's name.
local function hex(k)
  return (tostring(k):gsub("^sha256:", ""))
end

-- The folder of key's entries in project's part of the store.
function M.folder(project, k)
  return project .. "/" .. M.FOLDER .. "/" .. hex(k) .. "/"
end

-- What the store said, kept for the run: a run's two passes (checking,
-- then submitting) ask the same questions a second apart, and the
-- second takes the first's answers (runner.run hands them over).
local function memo(run, what)
  run.reuse_memo = run.reuse_memo or {}
  run.reuse_memo[what] = run.reuse_memo[what] or {}
  return run.reuse_memo[what]
end

local function short(s)
  return hex(s):sub(1, 12)
end

-- The profile's store, for index entries (nil: none to read, as in a
-- plan of a project not trusted yet, or a store not made yet).
local function store(run)
  if run.reuse_store ~= nil then return run.reuse_store or nil end
  local profile = run.profile
  local s
  if run.project.trusted == false and not profile.builtin then
    s = false
  elseif profile.s3 then
    local ok, st = pcall(require("navette.storage")._s3)
    s = ok and st or false
  else
    s = _navette.storage.open(profile.storage, not run.plan) or false
  end
  run.reuse_store = s
  return s or nil
end
M.store = store

-- The code's part of the key and the commit's lock files (the tree
-- walked once per commit and run).
local function code_and_locks(run, j, spec)
  local lib = run.code_repos and run.code_repos[spec.commit]
  local repo = lib and lib.repo or run.repo
  local commits = memo(run, "code")
  local c = commits[spec.commit]
  if not c then
    c = { locks = {} }
    for _, l in ipairs(assert(repo:lockfiles(spec.commit))) do
      c.locks[l.path] = l.blob
    end
    c.tree = assert(repo:path_id(spec.commit, ""))
    commits[spec.commit] = c
  end
  if j.library then return { library = spec.commit }, c.locks end
  if not j.code_paths then return { tree = c.tree }, c.locks end
  local paths = {}
  for _, p in ipairs(j.code_paths) do
    local id, err = repo:path_id(spec.commit, p)
    if not id then
      require("navette.run.report").refuse("job '" .. j.name .. "': "
        .. "code.paths: " .. err.message, "name folders and files of the "
        .. "commit (" .. spec.commit:sub(1, 12) .. ")", run, j.name)
    end
    paths[p] = id
  end
  return { paths = paths }, c.locks
end

-- The record of a job (its run record's URL), read once per run.
local function record_at(run, url, reading)
  local records = memo(run, "records")
  local got = records[url]
  if got == nil then
    local r, problem = published.record(url, reading)
    got = r or { problem = problem or "missing" }
    records[url] = got
  end
  if got.problem then return nil, got.problem end
  return got
end

-- What published reads this profile's records and outputs with: the
-- run's own s3:// store (one client for every question), or file:// URLs
-- as they are.
local function reading(run)
  return { held = run.profile.s3 and store(run) or nil }
end

-- The sha256 of output `path` of the job whose record is r.
local function output_sha(r, path)
  for _, o in ipairs(r.outputs or {}) do
    if o.name == path then return o.sha256, o end
  end
end

-- Why record r of a job cannot be reused for key k (nil: it can): it
-- did not succeed, has another key, or an output is gone or changed.
local function unusable(run, r, k)
  local id = tostring(r.id)
  if r.state ~= "succeeded" then
    return "job " .. id .. " of the same key " .. (r.state
           and ("ended " .. tostring(r.state)) or "has not ended")
  end
  if r.project ~= run.project.name or M.key_of_record(run, r) ~= k then
    return "job " .. id .. " has another key"
  end
  local like = reading(run)
  for _, o in ipairs(r.outputs or {}) do
    local heads = memo(run, "heads")
    local h = heads[o.url] or { published.head(o.url, like) }
    heads[o.url] = h
    local info, err = h[1], h[2]
    if not info then
      if err and err.code == "not_found" then
        return "its output " .. tostring(o.name) .. " is missing (job "
               .. id .. ")"
      end
      return "its output " .. tostring(o.name) .. " cannot be checked: "
             .. tostring(err and err.message or "?")
    end
    if info.size ~= o.size then
      return "its output " .. tostring(o.name) .. " changed (size "
             .. tostring(o.size) .. " -> " .. tostring(info.size)
             .. ", job " .. id .. ")"
    end
    if (info.sha256 or "") == "" then
      return "its output " .. tostring(o.name) .. " has no sha256 in the "
             .. "store to check (job " .. id .. ")"
    end
    if info.sha256 ~= o.sha256 then
      return "its output " .. tostring(o.name) .. " changed (sha256 "
             .. short(o.sha256) .. " -> " .. short(info.sha256) .. ", job "
             .. id .. ")"
    end
  end
  return nil
end

local MAX_PER_KEY = 64

-- The index's objects by key (its hex), listed once per run: a sweep of
-- 1,000 new jobs costs one LIST, not 1,000. nil and the error when the
-- store cannot list it.
local function index_objects(run, s)
  local index = memo(run, "index")
  if not index.by_key then
    local list, err = s:list(run.project.name .. "/" .. M.FOLDER .. "/")
    if not list and not (err and err.code == "not_found") then
      return nil, err
    end
    index.by_key, index.forgotten, index.before = {}, {}, {}
    for _, o in ipairs(list and list.objects or {}) do
      local name = tostring(o.key or o.url)
      local _, gone = name:match("navette%-reuse/(%x+)/forgotten%.([%w-]+)$")
      local whole = name:match("navette%-reuse/(%x+)/forgotten$")
      if gone then index.forgotten[gone] = true end
      if whole then
        -- (a key forgotten: its jobs created up to then, in any home)
        local text = s:read(o.url or o.key, 64)
        index.before[whole] = text and text:match("^[%dT:.Z-]+") or "~"
      end
      local hex = not gone and not whole
                  and name:match("navette%-reuse/(%x+)/[%w-]+$")
      if hex then
        local objs = index.by_key[hex] or {}
        if #objs < MAX_PER_KEY then objs[#objs + 1] = o end
        index.by_key[hex] = objs
      end
    end
  end
  return index.by_key, index.forgotten
end

-- Whether the job id, created at `created`, of key k was forgotten
-- (navette reuse forget: the job, or the key up to that time), as the
-- index listed this run says.
local function forgotten(run, id, created, k)
  local index = memo(run, "index")
  if index.forgotten and index.forgotten[id] then return true end
  local before = index.before and index.before[hex(k)]
  return before ~= nil and tostring(created) <= before
end

-- The entries of key k in the store, newest first; nil and the error
-- when the store cannot list them.
local function entries(run, k)
  local seen = memo(run, "entries")
  if seen[k] then return seen[k] end
  local s = store(run)
  if not s then return {} end
  local by_key, err = index_objects(run, s)
  if not by_key then return nil, err end
  local out = {}
  for _, o in ipairs(by_key[hex(k)] or {}) do
    local text = s:read(o.url or o.key, 16384)
    local e = text and _navette.reuse.parse_index(text)
    -- (an entry pointing out of this profile's store is not followed)
    if e and e.key == k and e.project == run.project.name
       and not forgotten(run, e.job, e.created, k)
       and pcall(require("navette.isolation").check_url, run.profile,
                 e.record, "a reuse entry") then
      out[#out + 1] = e
    end
  end
  table.sort(out, function(a, b)
    if a.created ~= b.created then return a.created > b.created end
    return a.job > b.job
  end)
  seen[k] = out
  return out
end
M.entries = entries

-- The sha256 of the output a consumer's pending input p names ({pending
-- = the producer's id, output, record}), from the producer's run record
-- in this profile's store; nil when it did not succeed (or is not there).
local function produced_sha(run, p)
  if type(p.record) ~= "string" then return nil end
  local pr = record_at(run, p.record, reading(run))
  return pr and pr.state == "succeeded" and pr.id == p.pending
         and output_sha(pr, p.output) or nil
end

-- The key of the job of record r: its own, or completed from its
-- producers' records when it was submitted before they ended.
local function key_of_record(run, r)
  if type(r.key) == "string" then return r.key end
  if type(r.key_parts) ~= "table" then return nil end
  return key.complete(r.key_parts, function(p)
    return produced_sha(run, p)
  end)
end
M.key_of_record = key_of_record

-- r's key parts, its pending inputs completed where its producers'
-- records say what they were.
local function parts_of_record(run, r)
  if type(r.key_parts) ~= "table" then return nil end
  return (key.completed(r.key_parts, function(p)
    return produced_sha(run, p)
  end))
end

-- This home's recent jobs of the project and profile, by name, newest
-- first, read once per run: those that succeeded, and those not ended.
local function rows_by_name(run)
  local rows = memo(run, "rows")
  if not rows.done then
    rows.done, rows.succeeded, rows.going, rows.ended = true, {}, {}, {}
    local jobs = require "navette.jobview"
    local text = jobs.db():list(2000)
    for _, row in ipairs(text and json.decode(text) or {}) do
      local into = row.state == "succeeded"
                   and type(row.record_url) == "string" and rows.succeeded
                   or not jobs.FINAL[row.state] and rows.going
                   or row.state ~= "succeeded" and rows.ended or nil
      if into and row.project == run.project.name and row.name
         and row.profile == run.profile.name then
        local list = into[row.name] or {}
        list[#list + 1] = row
        into[row.name] = list
      end
    end
  end
  return rows
end

-- A job of this home, of name and key k, that has not ended (which =
-- "going") or that failed or was cancelled ("ended"): its id and state.
local function job_of_key(run, which, name, k)
  for i, row in ipairs(rows_by_name(run)[which][name] or {}) do
    if i > 8 then break end
    local full = require("navette.jobview").row(row.id)
    if full and full.spec and full.spec.key == k then
      return row.id, row.state
    end
  end
end

-- The last job of this name, project and profile this home ran that
-- succeeded: its row and its record.
local function last_succeeded(run, name)
  for _, row in ipairs(rows_by_name(run).succeeded[name] or {}) do
    local r = record_at(run, row.record_url, reading(run))
    if r then return row, r end
  end
end

-- The index entry of the job of spec (when its key is known), written
-- in the store; an error is not the run's: the job is submitted anyway.
function M.publish(run, spec)
  if not spec.key or spec.reuse == false then return end
  local s = store(run)
  if not s then return end
  local text = json.encode({ navette_reuse = 1, key = spec.key,
    job = spec.id, name = spec.name, project = spec.project,
    profile = spec.profile,
    record = spec.outputs.url .. _navette.record.names.run_record,
    created = _navette.sys.iso8601() })
  local ok, info, err = pcall(s.put_string, s, M.folder(spec.project,
                              spec.key) .. spec.id, text)
  if not ok or not info then
    run.reuse_notes = run.reuse_notes or {}
    run.reuse_notes[#run.reuse_notes + 1] = "job " .. spec.name .. ": its "
      .. "reuse entry was not written (" .. tostring(ok and
      (err and err.message) or info) .. "): another home will not find it"
  end
end

-- Indexes the jobs of specs that succeeded (views: by id, as `run
-- --wait` saw them end); a job submitted before its producers ended (no
-- key then) by the key its producers' records complete. (Failing that,
-- the next run from this home finds them.)
function M.index_succeeded(run, specs, views)
  for _, spec in ipairs(specs) do
    local v = views[spec.id]
    if spec.key_parts and spec.reuse ~= false and v
       and v.state == "succeeded" and v.record_url then
      local k = spec.key
      if not k then
        local r = record_at(run, v.record_url, spec)
        k = r and key_of_record(run, r)
      end
      if k then
        M.publish(run, { key = k, id = spec.id, name = spec.name,
                         project = spec.project, profile = spec.profile,
                         outputs = spec.outputs })
      end
    end
  end
end

-- What differs between parts a (earlier) and b (now), as lines.
function M.explain(a, b)
  local out = {}
  local function add(s) out[#out + 1] = s end
  local function shown(v)
    if type(v) == "table" then
      return v.pending and ("(output " .. tostring(v.output) .. " of "
                            .. tostring(v.pending) .. ")")
             or key.canonical(v)
    end
    return tostring(v)
  end
  local function map(field, what, fmt)
    local x, y = a[field] or {}, b[field] or {}
    local names = util.sorted_keys(x)
    for _, n in ipairs(util.sorted_keys(y)) do
      if x[n] == nil then names[#names + 1] = n end
    end
    for _, n in ipairs(names) do
      local p, q = x[n], y[n]
      if p == nil then
        add(what .. "." .. n .. ": added (" .. fmt(q) .. ")")
      elseif q == nil then
        add(what .. "." .. n .. ": removed")
      elseif key.canonical(p) ~= key.canonical(q) then
        add(what .. "." .. n .. ": " .. fmt(p) .. " -> " .. fmt(q))
      end
    end
  end
  local function sha(v)
    return type(v) == "string" and ("sha256 " .. short(v) .. "…")
           or shown(v)
  end
  map("inputs", "inputs", sha)
  local ca, cb = a.code or {}, b.code or {}
  if ca.tree and cb.tree and ca.tree ~= cb.tree then
    add("code: the commit's tree changed (" .. short(ca.tree) .. " -> "
        .. short(cb.tree) .. "; narrow it with code.paths)")
  elseif ca.paths and cb.paths then
    for _, p in ipairs(util.sorted_keys(cb.paths)) do
      if ca.paths[p] ~= cb.paths[p] then
        add("code: " .. p .. " changed (code.paths)")
      end
    end
  elseif ca.library and cb.library and ca.library ~= cb.library then
    add("code: the library's commit " .. short(ca.library) .. " -> "
        .. short(cb.library))
  elseif key.canonical(ca) ~= key.canonical(cb) then
    add("code: declared otherwise (" .. (cb.paths and "code.paths"
        or cb.library and "a library's" or "the whole tree") .. ")")
  end
  map("locks", "locks", function(v) return "blob " .. short(v) end)
  if a.image ~= b.image then
    add("image: " .. tostring(a.image) .. " -> " .. tostring(b.image))
  end
  if key.canonical(a.command or {}) ~= key.canonical(b.command or {}) then
    add("command: " .. table.concat(a.command or {}, " ") .. " -> "
        .. table.concat(b.command or {}, " "))
  end
  map("env", "env", shown)
  map("params", "params", shown)
  for _, f in ipairs({ "success", "failure", "resources", "project" }) do
    if key.canonical(a[f] or {}) ~= key.canonical(b[f] or {}) then
      add(f .. ": " .. key.canonical(a[f] or {}) .. " -> "
          .. key.canonical(b[f] or {}))
    end
  end
  if a.v ~= b.v then add("the key's version: " .. tostring(a.v) .. " -> "
                         .. tostring(b.v)) end
  return out
end

-- Each glob of --rerun names a job of the run, or the run is refused
-- (a typo would otherwise reuse what the user asked to run).
function M.check_rerun(run)
  local jobs = require "navette.jobview"
  for _, g in ipairs(run.rerun_names or {}) do
    local pattern, hit = jobs.glob_pattern(g), false
    for _, j in ipairs(run.jobs) do
      if j.name:match(pattern) then hit = true break end
    end
    if not hit then
      local names = {}
      for i, j in ipairs(run.jobs) do
        if i > 10 then names[#names + 1] = "..." break end
        names[#names + 1] = j.name
      end
      require("navette.errors").raise("usage", "--rerun '" .. g
        .. "' names no job of " .. tostring(run.recipe), "its jobs: "
        .. table.concat(names, ", ") .. " (a glob: 'train[*]')")
    end
  end
end

-- Whether a glob of --rerun names j.
local function forced(run, name)
  for _, g in ipairs(run.rerun_names or {}) do
    if name:match(require("navette.jobview").glob_pattern(g)) then
      return g
    end
  end
end

-- What a reused job stands for in the run: the spec its consumers read
-- (its id, name and outputs' URL) and the record's outputs by path.
local function reused_spec(r, entry_record)
  local prefix = entry_record:sub(1, -(#_navette.record.names.run_record
                                       + 1))
  return { id = r.id, name = r.name, reused = true, commit = r.commit,
           image = r.image, outputs = { url = prefix }, record = r }
end

-- Decides whether the job j (its spec built) runs or is reused; keys
-- spec (key, key_parts, locks). -> {reuse = spec of the earlier job,
-- from = its id, key} | {run = reason}
function M.decide(run, j, spec)
  local code, locks = code_and_locks(run, j, spec)
  local produced = {}
  for _, i in ipairs(spec.inputs or {}) do
    local p = i.from and run.reused_by_id and run.reused_by_id[i.from]
    if p then produced[i.name] = output_sha(p.record, i.output) end
  end
  local parts, pending = key.parts(spec, code, locks, produced)
  spec.key_parts = parts
  spec.locks = locks
  spec.key = parts and not pending and key.of(parts) or nil
  if j.reuse == false then spec.reuse = false end
  local function ran(reason) return { run = reason } end
  if run.no_reuse then return ran("--no-reuse") end
  local glob = forced(run, j.name)
  if glob then return ran("--rerun " .. glob) end
  if j.reuse == false then return ran("reuse = false") end
  if pending then
    return ran("its input " .. pending .. " comes from a job that runs "
               .. "now")
  end
  -- a job that runs after another that runs now runs too (what it waits
  -- for is done anew)
  for _, name in ipairs(j.after or {}) do
    local d = run.decisions and run.decisions[name]
    if d and d.run then return ran("it runs after " .. name
                                   .. ", which runs now") end
  end
  if not parts then return ran("an input's sha256 is not known yet") end
  if not store(run) then
    return ran("reuse not looked up: the store cannot be read"
               .. (run.project.trusted == false
                   and " before the project is trusted" or ""))
  end
  local found, lerr = entries(run, spec.key)
  if not found then
    return ran("the reuse index could not be read ("
               .. tostring(lerr and lerr.message or lerr) .. ")")
  end
  local why
  for _, e in ipairs(found) do
    local r, problem = record_at(run, e.record, reading(run))
    if not r then
      why = why or ("job " .. e.job .. " of the same key: its record is "
                    .. tostring(problem) .. (problem == "missing"
                    and " (it has not ended, or was removed)" or ""))
    else
      local bad = unusable(run, r, spec.key)
      if not bad then
        return { reuse = reused_spec(r, e.record), from = r.id,
                 key = spec.key }
      end
      why = why or bad
    end
  end
  -- the last job of this name this home ran, when it succeeded with this
  -- key (its own, or completed from its producers' records) and was not
  -- indexed yet (nobody waited for it), or its entry was lost; not when
  -- it was forgotten
  local row, last = last_succeeded(run, j.name)
  if last and not forgotten(run, last.id, row.created, spec.key)
     and key_of_record(run, last) == spec.key then
    local bad = unusable(run, last, spec.key)
    if not bad then
      if not run.plan then
        M.publish(run, { key = spec.key, id = last.id, name = last.name,
                         project = run.project.name,
                         profile = run.profile.name,
                         outputs = { url = row.record_url:sub(1,
                           -(#_navette.record.names.run_record + 1)) } })
      end
      return { reuse = reused_spec(last, row.record_url), from = last.id,
               key = spec.key }
    end
    why = why or bad
  end
  if why then return ran(why) end
  local going = job_of_key(run, "going", j.name, spec.key)
  if going then
    return ran("job " .. going .. " of the same key has not ended (a run "
               .. "does not wait for another run's jobs)")
  end
  local ended, state = job_of_key(run, "ended", j.name, spec.key)
  if ended and not last then
    return ran("job " .. ended .. " of the same key ended " .. state)
  end
  if not last then return ran("no earlier run") end
  local before = parts_of_record(run, last)
  local lines = before and M.explain(before, parts) or {}
  if #lines == 0 then
    return ran("its last run (" .. tostring(last.id) .. ") has no key "
               .. "to compare")
  end
  return ran(table.concat(lines, "; "))
end

-- The run's decisions, job by job in the order declared, as plan --json
-- gives them: {name, decision = "reuse" | "run", from, reason}.
function M.decisions(run)
  local out = json.array({})
  for _, j in ipairs(run.declared_jobs or run.jobs) do
    local d = (run.decisions or {})[j.name]
    if d then
      out[#out + 1] = { name = j.name, decision = d.reuse and "reuse"
                        or "run", from = d.from, reason = d.run }
    end
  end
  return out
end

-- Audits a reuse (job.reuse): which job stands for this one.
function M.audit(run, name, d)
  return require("navette.audit").record({ action = "job.reuse",
    target = name, job = d.from, commit = d.reuse.commit,
    detail = "key " .. tostring(d.key) .. ", outputs of " .. d.from },
    run.profile)
end

return M
