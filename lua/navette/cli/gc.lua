-- `navette gc`: prunes the finished jobs of this home older than a
-- duration: their rows in the job database, their folders under
-- NAVETTE_HOME/jobs and, with --store, what they published. What a
-- recipe may still reach is kept: the jobs whose outputs another job
-- takes (or that another runs after), and the newest finished job of
-- each name of each project. Each deletion is audited.
local errors = require "navette.errors"
local term = require "navette.term"
local jobs = require "navette.jobview"
local published = require "navette.published"
local common = require "navette.cli.common"
local util = require "navette.util"
local sys, core = _navette.sys, _navette.core

local M = {
  name = "gc",
  summary = { { "gc", "delete old finished jobs (--dry-run first)" } },
  usage = [[
usage: navette gc [--older-than AGE] [--store] [--dry-run] [--yes]
  Deletes the finished jobs (succeeded, failed, cancelled; never queued
  or running) that ended more than AGE ago (default 30d; 0s, 12h, 7d,
  4w): their rows in the job database and their folders under
  NAVETTE_HOME/jobs. --store also deletes what each published in its
  store (outputs, log, run record). Kept whatever their age: a job whose
  outputs another job's inputs name (or that another runs after), and
  the newest finished job of each name of each project.
  It first prints what it will delete (a line per job, counts and sizes),
  then asks on a terminal; without one it needs --yes. --dry-run prints
  and deletes nothing. Each deletion is audited (job.gc).]],
  flags = { ["older-than"] = "value", store = "bool", ["dry-run"] = "bool",
            yes = "bool" },
  read_only = false,
}

M.DEFAULT_AGE = "30d"
local UNITS = { s = 1, m = 60, h = 3600, d = 86400, w = 7 * 86400 }

-- "12h", "7d", "4w", "0s" -> seconds (0 allowed: every finished job)
local function age_of(text)
  local n, unit = tostring(text):match("^(%d+)([smhdw])$")
  if not n or #n > 9 then return nil end
  return tonumber(n) * UNITS[unit]
end

local function size_text(n)
  if n < 1024 then return n .. " B" end
  local units = { "KiB", "MiB", "GiB", "TiB" }
  local i = 0
  repeat n, i = n / 1024, i + 1 until n < 1024 or i == #units
  return string.format("%.1f %s", n, units[i])
end

-- Bytes and files under path (a job's folder), without following links.
local function tree_size(path)
  local st = sys.stat(path)
  if not st then return 0, 0 end
  if st.type ~= "directory" then return st.size or 0, 1 end
  local bytes, files = 0, 0
  for _, name in ipairs(sys.listdir(path) or {}) do
    if name ~= "." and name ~= ".." then
      local b, f = tree_size(path .. "/" .. name)
      bytes, files = bytes + b, files + f
    end
  end
  return bytes, files
end

-- The store of a job's spec and the objects under its prefix (every
-- page), or nil and the error.
local function store_objects(spec)
  local out = spec.outputs or {}
  local id = spec.id
  if type(out.url) ~= "string" or type(out.prefix) ~= "string"
     or out.prefix:sub(-1) ~= "/" or not out.prefix:find(id, 1, true) then
    return nil, { message = "its spec names no output prefix of its own" }
  end
  -- (the store found by the run record's URL: a file:// store's root
  -- is where it finds one; keys are relative to it)
  local record = _navette.record.names.run_record
  local store, key, err = published.store(out.url .. record, spec)
  if not store then return nil, err end
  local prefix = key:match("^s3://") and out.prefix
                 or key:sub(1, #key - #record)
  local objects, after = {}, nil
  repeat
    local page, lerr = store:list(prefix, after and
                                  { start_after = after } or nil)
    if not page then
      store:close()
      return nil, lerr
    end
    for _, o in ipairs(page.objects) do objects[#objects + 1] = o end
    after = page.truncated and page.next_start_after or nil
  until not after
  return store, objects
end

-- The rows to delete (oldest first) and the kept ones among those old
-- enough, each with why.
local function candidates(older_than)
  local rows = jobs.list(100000000)
  local now = sys.now()
  local spec_of, newest, old = {}, {}, {}
  for _, r in ipairs(rows) do
    local full = jobs.row(r.id)
    spec_of[r.id] = full and full.spec or {}
    spec_of[r.id].id = spec_of[r.id].id or r.id
    if jobs.FINAL[r.state] then
      -- (rows come newest first: the first of a name is its newest)
      local key = tostring(r.project) .. "\0" .. tostring(r.name)
      if not newest[key] then newest[key] = r.id end
      local t = util.parse_iso8601(r.updated) or util.parse_iso8601(r.created)
      if t and now - t >= older_than then old[r.id] = r end
    end
  end
  local kept = {}
  for key, id in pairs(newest) do
    if old[id] then
      kept[id] = "the newest " .. key:match("%z(.*)$") .. " of its project"
    end
  end
  -- a job stays while a job that stays takes its outputs or runs after
  -- it (until nothing changes: a chain of them stays whole)
  local changed = true
  while changed do
    changed = false
    for _, r in ipairs(rows) do
      if not old[r.id] or kept[r.id] then
        local spec = spec_of[r.id]
        local named = {}
        for _, input in ipairs(spec.inputs or {}) do
          if type(input) == "table" then
            if input.from then named[input.from] = true end
            for id in pairs(old) do
              local prefix = spec_of[id].outputs and spec_of[id].outputs.url
              if type(input.url) == "string" and type(prefix) == "string"
                 and input.url:sub(1, #prefix) == prefix then
                named[id] = true
              end
            end
          end
        end
        for _, id in ipairs(spec.after or {}) do named[id] = true end
        for id in pairs(named) do
          if old[id] and not kept[id] and id ~= r.id then
            kept[id] = "job " .. r.id .. " (" .. tostring(r.name)
                       .. ") takes its outputs"
            changed = true
          end
        end
      end
    end
  end
  local delete, keep = {}, {}
  for i = #rows, 1, -1 do
    local r = rows[i]
    if old[r.id] then
      if kept[r.id] then
        keep[#keep + 1] = { row = r, why = kept[r.id] }
      else
        delete[#delete + 1] = r
      end
    end
  end
  return delete, keep, spec_of
end

-- Asks on the terminal; true when the answer is yes.
local function confirm(question)
  _navette.out.write("stdout", question .. " [y/N] ")
  local answer = io.read("l")
  return answer ~= nil and answer:lower():match("^%s*y") ~= nil
end

-- Deletes one job: its objects (--store), its folder, then its row (a
-- row never goes before its folder: see jobdb.h), audited.
local function delete_job(r, plan)
  local spec = plan.spec
  if plan.store then
    for _, o in ipairs(plan.objects) do
      local ok, err = plan.store:delete(o.key)
      if not ok and not (err and err.code == "not_found") then
        return nil, errors.new(err and err.code or "io", "job " .. r.id
                               .. ": cannot delete " .. tostring(o.url or
                               o.key) .. " from its store: "
                               .. tostring(err and err.message), "check "
                               .. "the store's rights, then run gc again")
      end
    end
  end
  local folder = core.home() .. "/jobs/" .. r.id
  if sys.stat(folder) then
    local ok, err = sys.remove_tree(folder)
    if not ok then
      return nil, errors.new("io", "job " .. r.id .. ": cannot remove "
                             .. folder .. ": " .. tostring(err and
                             err.message or err), "check its permissions, "
                             .. "then run gc again")
    end
  end
  local ok, err = jobs.db():delete(r.id)
  if not ok and err.code ~= "not_found" then
    return nil, errors.new(err.code or "io", "job " .. r.id .. ": "
                           .. tostring(err.message), err.hint)
  end
  require("navette.audit").record({ action = "job.gc", target = r.id,
    job = r.id, profile = r.profile,
    detail = "row, folder" .. (plan.store and (", " .. #plan.objects
             .. " objects") or "") .. " (" .. r.state .. ", ended "
             .. tostring(r.updated) .. ")" },
    spec.outputs and { name = r.profile, storage = spec.outputs.store,
                       s3 = spec.outputs.s3 })
  return true
end

function M.run(argv)
  local opts, args = common.command_args(M, argv)
  if not opts then return 0 end
  if #args > 0 then common.usage_error("gc takes no argument", M.name) end
  local age_text = opts["older-than"] or M.DEFAULT_AGE
  local older_than = age_of(age_text)
  if not older_than then
    common.usage_error("--older-than takes an age: a whole number and s, "
                       .. "m, h, d or w (0s, 12h, 7d, 4w)", M.name)
  end
  local delete, keep, spec_of = candidates(older_than)
  local plans, total_rows, total_bytes, total_objects = {}, 0, 0, 0
  local problems = {}
  for _, r in ipairs(delete) do
    local plan = { spec = spec_of[r.id] }
    plan.bytes = tree_size(core.home() .. "/jobs/" .. r.id)
    if opts.store then
      local store, objects = store_objects(plan.spec)
      if store then
        plan.store, plan.objects = store, objects
        plan.store_bytes = 0
        for _, o in ipairs(objects) do
          plan.store_bytes = plan.store_bytes + (o.size or 0)
        end
      else
        plan.skip = "its store cannot be listed: "
                    .. tostring(objects and objects.message or objects)
      end
    end
    plans[r.id] = plan
    if not plan.skip then
      total_rows = total_rows + 1
      total_bytes = total_bytes + plan.bytes
      total_objects = total_objects + (plan.objects and #plan.objects or 0)
    end
  end
  term.print("jobs that ended more than " .. age_text .. " ago: "
             .. (#delete + #keep) .. " (" .. #keep .. " kept)")
  for _, r in ipairs(delete) do
    local plan = plans[r.id]
    term.print(string.format("  %-9s %s  %-16s ended %s  %s%s", r.state,
               r.id, tostring(r.name), tostring(r.updated):sub(1, 16),
               size_text(plan.bytes),
               plan.skip and ("  SKIPPED: " .. plan.skip) or plan.objects
               and ("; store: " .. #plan.objects .. " objects, "
               .. size_text(plan.store_bytes)) or ""))
  end
  for _, k in ipairs(keep) do
    term.print("  kept      " .. k.row.id .. "  " .. tostring(k.row.name)
               .. ": " .. k.why)
  end
  term.print(total_rows .. " job" .. (total_rows == 1 and "" or "s")
             .. " to delete: their rows and folders ("
             .. size_text(total_bytes) .. ")" .. (opts.store and (", "
             .. total_objects .. " store objects") or ""))
  local function close_stores()
    for _, plan in pairs(plans) do
      if plan.store then plan.store:close() end
    end
  end
  if total_rows == 0 or opts["dry-run"] then
    close_stores()
    if opts["dry-run"] then term.print("(dry run: nothing deleted)") end
    return 0
  end
  if not opts.yes then
    if not (sys.isatty(0) and _navette.out.tty("stdout")) then
      close_stores()
      error(errors.new("refused", "gc deletes " .. total_rows .. " job"
                       .. (total_rows == 1 and "" or "s") .. " and asks "
                       .. "first, but there is no terminal to ask on",
                       "pass --yes to delete them, or --dry-run to only "
                       .. "list them"), 0)
    end
    if not confirm("delete them?") then
      close_stores()
      term.print("nothing deleted")
      return 1
    end
  end
  local done = 0
  do
    local _ <close> = require("navette.audit").batch()
    for _, r in ipairs(delete) do
      local plan = plans[r.id]
      if not plan.skip then
        local ok, err = delete_job(r, plan)
        if ok then
          done = done + 1
        else
          problems[#problems + 1] = err
        end
      end
    end
  end
  close_stores()
  term.print("deleted " .. done .. " job" .. (done == 1 and "" or "s"))
  for _, e in ipairs(problems) do term.error(e) end
  return #problems > 0 and errors.exit_status[problems[1].code] or 0
end

return M
