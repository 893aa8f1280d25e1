-- Moves the logs and run records of the project's old jobs to an archive
-- prefix of the profile's store, by the team's policy (POLICY below). A
-- job published under <project>/<job-id>/ is old when the run record
-- (navette-run.json) says it ended more than older_than_days before the
-- task's slot: the latest time the record names (its finished_at, its
-- last phase's time). Only navette's own objects move: the run record,
-- the log (navette.log and its shipped chunks, navette-log/) and the
-- status object (navette-status). The outputs, and the checkpoint a retry
-- resumes from, stay where they are.
--
-- For each old job, into ARCHIVE/<project>/<job-id>/:
--   1. each object is copied by the store itself (a server-side copy),
--      unless an earlier run left a copy of the same size and sha256;
--   2. each copy is read back and its sha256 and size compared with the
--      original's (the sha256 the original records, or its bytes read);
--   3. manifest.json is written LAST, listing every copy (key, original
--      key, size, sha256), and read back;
--   4. only then are the originals deleted, the run record last.
-- A lifecycle rule expires the archive after expire_days, where the
-- store supports one (written once; left alone when the bucket holds
-- rules navette did not write: the task's message says so).
--
-- Nothing is lost if it stops at any step: until the manifest is read
-- back no original is touched; a job whose copies exist without a
-- manifest is copied (or its copies checked) again; a job stopped while
-- its originals were being deleted still has its run record (deleted
-- last), so the next run finds it, checks the copies and finishes; a job
-- whose originals are gone is done and not looked at again.
--
--   navette maintain --once recipes/maintenance/archive-logs.lua
--   navette maintain --plan recipes/maintenance/archive-logs.lua
-- (a plan reads no object: a job's age is then the time its record was
-- published, and the copies are listed, not checked)
local navette = require "navette"

local POLICY = {
  older_than_days = 30,          -- jobs that ended before: archived
  archive_prefix = "_archive/",  -- a key prefix of the profile's store
  expire_days = 365,             -- the archive's lifecycle rule
  max_object_bytes = 64 * 1024 * 1024, -- largest object hashed by a read
}

-- navette's objects under a job's prefix (host/jobs/record.h's layout);
-- the record is deleted last
local RECORD, LOG, STATUS, CHUNKS = "navette-run.json", "navette.log",
                                    "navette-status", "navette-log/"
local MANIFEST = "manifest.json"

local function moves(name)
  return name == RECORD or name == LOG or name == STATUS
         or (name:sub(1, #CHUNKS) == CHUNKS and #name > #CHUNKS)
end

-- Seconds since the epoch of an ISO-8601 UTC time (2026-12-05T01:02:03Z,
-- fractions allowed), or nil.
local function epoch(iso)
  local y, mo, d, h, mi, s = tostring(iso):match(
    "^(%d%d%d%d)%-(%d%d)%-(%d%d)T(%d%d):(%d%d):(%d%d)[%.%d]*Z$")
  if not y then return nil end
  y, mo, d = tonumber(y), tonumber(mo), tonumber(d)
  -- days from 1970-01-01 of a civil date (proleptic Gregorian)
  if mo <= 2 then y = y - 1 end
  local era = y // 400
  local yoe = y - era * 400
  local doy = (153 * (mo + (mo > 2 and -3 or 9)) + 2) // 5 + d - 1
  local doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
  local days = era * 146097 + doe - 719468
  return days * 86400 + tonumber(h) * 3600 + tonumber(mi) * 60 + tonumber(s)
end

-- When the job ended, by its run record's text: the latest time the
-- record names as "at" (a phase's) or "finished_at"; nil when none.
local function record_end(text)
  local latest
  for key, at in text:gmatch('"([%w_]+)"%s*:%s*"(%d%d%d%d%-[%d%-T:%.]+Z)"')
  do
    if key == "at" or key == "finished_at" or key == "ended" then
      local t = epoch(at)
      if t and (not latest or t > latest) then latest = t end
    end
  end
  return latest
end

local function json_string(s)
  return '"' .. s:gsub('[%c"\\]', function(c)
    return string.format("\\u%04x", c:byte())
  end) .. '"'
end

-- {job-id = {name = object}} of navette's objects under <project>/.
local function jobs_of(project)
  local prefix = project .. "/"
  local jobs = {}
  for _, o in ipairs(navette.storage.list(prefix).objects) do
    local id, name = o.key:sub(#prefix + 1):match("^([^/]+)/(.+)$")
    if id and moves(name) then
      jobs[id] = jobs[id] or {}
      jobs[id][name] = o
    end
  end
  return jobs
end

-- Whether the job ended before cutoff; and when, for the message.
local function old(objects, cutoff, plan)
  local record = objects[RECORD]
  if not record then return false end -- running, or its record gone
  local ended
  if not plan then
    ended = record_end(navette.storage.read(record.key, 4 * 1024 * 1024))
  end
  if not ended then -- a plan reads nothing: the record's upload time
    local head = navette.storage.head(record.key)
    ended = head and head.mtime
  end
  return ended ~= nil and ended < cutoff
end

-- Copies the job's objects into dest (a prefix), each checked; returns
-- the manifest's entries of this run's copies, by name.
local function copy_job(objects, dest, plan)
  local copied = {}
  for name, o in pairs(objects) do
    local to = dest .. name
    local sha = navette.storage.sha256(o.key, {
      max_bytes = POLICY.max_object_bytes })
    local there = navette.storage.head(to)
    local reuse = not plan and there and there.size == o.size and sha
                  and navette.storage.sha256(to, {
                        read = true, max_bytes = POLICY.max_object_bytes })
                      == sha
    if not reuse then navette.storage.copy(o.key, to) end
    if not plan then
      -- the copy read back: its bytes, not only its metadata
      local got = navette.storage.sha256(to, { read = true,
                    max_bytes = POLICY.max_object_bytes })
      local size = navette.storage.head(to).size
      if got ~= sha or size ~= o.size then
        error("archive-logs: the copy " .. to .. " (" .. tostring(size)
              .. " bytes, sha256 " .. tostring(got) .. ") differs from "
              .. o.key .. " (" .. o.size .. " bytes, sha256 "
              .. tostring(sha) .. "): nothing of this job was deleted")
      end
    end
    copied[name] = { key = to, original = o.key, size = o.size,
                     sha256 = sha }
  end
  return copied
end

-- The manifest of every copy under dest (this run's and an earlier
-- one's, whose originals may be gone already), sorted by key.
local function manifest_text(job_id, dest, copied, ended_by)
  local entries = {}
  for name, e in pairs(copied) do entries[name] = e end
  for _, o in ipairs(navette.storage.list(dest).objects) do
    local name = o.key:sub(#dest + 1)
    if name ~= MANIFEST and not entries[name] then
      entries[name] = { key = o.key, size = o.size,
                        original = ended_by .. name,
                        sha256 = navette.storage.sha256(o.key, {
                          max_bytes = POLICY.max_object_bytes }) }
    end
  end
  local names = {}
  for name in pairs(entries) do names[#names + 1] = name end
  table.sort(names)
  local lines = {}
  for i, name in ipairs(names) do
    local e = entries[name]
    lines[i] = '    {"key": ' .. json_string(e.key) .. ', "original": '
               .. json_string(e.original) .. ', "size": '
               .. math.tointeger(e.size) .. ', "sha256": '
               .. json_string(e.sha256 or "") .. '}'
  end
  return '{\n  "job": ' .. json_string(job_id) .. ',\n  "objects": [\n'
         .. table.concat(lines, ",\n") .. '\n  ]\n}\n', #names
end

navette.task {
  name = "archive-logs",
  schedule = "daily 02:00",
  run = function(ctx)
    local archive = POLICY.archive_prefix
    local now = epoch(ctx.slot)
    local cutoff = now - POLICY.older_than_days * 86400
    local ok, why = navette.storage.lifecycle {
      prefix = archive, expire_days = POLICY.expire_days,
      id = "navette-archive-logs" }
    local rule = ok and ("lifecycle rule " .. why) or ("no lifecycle rule: "
                                                      .. why)
    local jobs = jobs_of(ctx.project)
    local ids = {}
    for id in pairs(jobs) do ids[#ids + 1] = id end
    table.sort(ids)
    local done, objects, bytes = 0, 0, 0
    for _, id in ipairs(ids) do
      local job = jobs[id]
      if old(job, cutoff, ctx.plan) then
        local source = ctx.project .. "/" .. id .. "/"
        local dest = archive .. source
        local copied = copy_job(job, dest, ctx.plan)
        local text, count = manifest_text(id, dest, copied, source)
        navette.storage.put_string(dest .. MANIFEST, text)
        if not ctx.plan and navette.storage.read(dest .. MANIFEST,
                                                 #text + 1) ~= text then
          error("archive-logs: " .. dest .. MANIFEST .. " does not read "
                .. "back as written: nothing of job " .. id
                .. " was deleted")
        end
        -- the originals, the run record last (it marks the job as not
        -- yet archived)
        for name, o in pairs(job) do
          if name ~= RECORD then navette.storage.delete(o.key) end
        end
        navette.storage.delete(job[RECORD].key)
        done = done + 1
        objects = objects + count
        for _, o in pairs(job) do bytes = bytes + o.size end
      end
    end
    local verb = ctx.plan and "would archive " or "archived "
    if done == 0 then
      return "nothing to archive (no job of " .. ctx.project
             .. " ended more than " .. POLICY.older_than_days
             .. " days ago); " .. rule
    end
    return verb .. done .. " job(s), " .. objects .. " object(s), "
           .. math.tointeger(bytes) .. " bytes to " .. archive .. "; "
           .. rule
  end,
}
