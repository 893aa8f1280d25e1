-- `navette reuse`: the reuse index of the project's profile store
-- (lua/navette/reuse): list its keys, show one (its jobs, and the parts
-- the key was made of), forget a key or a job's entry (audited), so that
-- the next run runs it.
local errors = require "navette.errors"
local term = require "navette.term"
local common = require "navette.cli.common"
local reuse = require "navette.reuse"
local json = _navette.json

local M = {
  name = "reuse",
  summary = { { "reuse list|show|forget", "the results runs reuse, by key" } },
  usage = [[
usage: navette reuse list [--profile P] [--json]
       navette reuse show KEY [--profile P] [--json]
       navette reuse forget KEY|JOB [--profile P]
  A job is reused when a job of the same key (its code, inputs, image,
  command, env, parameters...) succeeded and its outputs are still in the
  store: `navette run` then submits nothing for it. The index lives in
  the profile's store, under the project's prefix (navette-reuse/), so a
  team sharing the store shares its results.
  list     each key (first 12 digits), the job it points at, its name
  show     the jobs of KEY (full, or a unique prefix of 12 digits or more)
           and the key's parts, from the newest job's run record
  forget   removes KEY's entries, or those of job JOB, and marks each
           job forgotten: the next run runs it, from any home (audited:
           reuse.forget)]],
  flags = { profile = "value", json = "bool" },
  read_only = false,
}

-- The project of the working folder, its profile and a run-like table
-- navette.reuse reads the store with.
local function scope(opts)
  local project = require "navette.project"
  local proj = project.at(_navette.sys.cwd())
  if not proj.file then
    errors.raise("usage", "no navette.lua here (nor in a folder above it, "
                 .. "up to the repository's root)", "run `navette reuse` "
                 .. "in the project's clone")
  end
  local profile = project.profile(proj, opts.profile)
  if not profile.builtin then
    require("navette.trust").require(proj, "navette reuse (profile "
                                     .. profile.name .. ")")
  end
  require("navette.context").enter { profile = profile, project = proj }
  local run = { project = proj, profile = profile, plan = true }
  local s = reuse.store(run)
  if not s then
    errors.raise("not_found", "the store of profile " .. profile.name
                 .. " (" .. profile.storage .. ") cannot be read",
                 "has a job run there yet? check the profile's storage")
  end
  return run, s
end

-- Every entry of the project's index: {entry, object}, newest first.
local function all_entries(run, s)
  local prefix = run.project.name .. "/" .. reuse.FOLDER .. "/"
  local list = errors.check(s:list(prefix))
  local out = {}
  for _, o in ipairs(list.objects or {}) do
    -- (a forgotten job's mark is no entry)
    if tostring(o.key or o.url):match("/forgotten[%.%w-]*$") then
      goto next
    end
    local text = s:read(o.url or o.key, 16384)
    local e, err = nil, nil
    if text then e, err = _navette.reuse.parse_index(text) end
    out[#out + 1] = { entry = e, object = o, problem = err and err.message }
    ::next::
  end
  table.sort(out, function(a, b)
    local x, y = a.entry and a.entry.created or "",
                 b.entry and b.entry.created or ""
    if x ~= y then return x > y end
    return tostring(a.object.key) < tostring(b.object.key)
  end)
  return out
end

local function matches(e, given)
  if not e then return false end
  if e.job == given then return true end
  local hex = given:gsub("^sha256:", "")
  return #hex >= 12 and hex:match("^[0-9a-f]+$") ~= nil
         and e.key:sub(8, 7 + #hex) == hex
end

local function list(opts)
  local run, s = scope(opts)
  local rows = all_entries(run, s)
  if opts.json then
    local out = json.array({})
    for _, r in ipairs(rows) do
      out[#out + 1] = r.entry or { object = r.object.key,
                                   problem = r.problem }
    end
    term.print(json.encode(out, true))
    return 0
  end
  if #rows == 0 then
    term.print("no reuse entry for project " .. run.project.name
               .. " in " .. run.profile.storage)
  end
  for _, r in ipairs(rows) do
    local e = r.entry
    if e then
      term.print(e.key:sub(1, 19) .. "  " .. e.job .. "  " .. e.name
                 .. "  " .. e.created)
    else
      term.print("?  " .. tostring(r.object.key) .. "  (" .. r.problem
                 .. ")")
    end
  end
  return 0
end

local function show(opts, given)
  local run, s = scope(opts)
  local found = {}
  for _, r in ipairs(all_entries(run, s)) do
    if matches(r.entry, given) then found[#found + 1] = r.entry end
  end
  if #found == 0 then
    errors.raise("not_found", "no reuse entry of key " .. given,
                 "see `navette reuse list`")
  end
  local record = require("navette.published").record(found[1].record,
    { held = run.profile.s3 and s or nil })
  if opts.json then
    term.print(json.encode({ key = found[1].key, entries = json.array(found),
                             key_parts = record and record.key_parts,
                             state = record and record.state }, true))
    return 0
  end
  term.print("key " .. found[1].key)
  for _, e in ipairs(found) do
    term.print("  job " .. e.job .. "  " .. e.name .. "  " .. e.created
               .. (e == found[1] and record and ("  " .. tostring(
                   record.state)) or ""))
  end
  if record and record.key_parts then
    term.print("parts (from the run record of " .. found[1].job .. "):")
    term.print(json.encode(record.key_parts, true))
  end
  return 0
end

local function forget(opts, given)
  local run, s = scope(opts)
  local gone, marked = 0, {}
  local now = _navette.sys.iso8601()
  for _, r in ipairs(all_entries(run, s)) do
    if matches(r.entry, given) then
      local ok, err = s:delete(r.object.url or r.object.key)
      if not ok and not (err and err.code == "not_found") then
        errors.check(nil, err, "navette reuse forget")
      end
      -- the mark: no lookup takes the job (or the key's jobs made until
      -- now) again, and no home that ran one indexes it again
      local folder = reuse.folder(run.project.name, r.entry.key)
      local mark = r.entry.job == given
                   and (folder .. "forgotten." .. r.entry.job)
                   or (folder .. "forgotten")
      if not marked[mark] then
        errors.check(s:put_string(mark, now))
        marked[mark] = true
      end
      gone = gone + 1
      require("navette.audit").record({ action = "reuse.forget",
        target = r.entry.name, job = r.entry.job,
        detail = "key " .. r.entry.key }, run.profile)
    end
  end
  if gone == 0 then
    errors.raise("not_found", "no reuse entry of key or job " .. given,
                 "see `navette reuse list`")
  end
  term.print("forgot " .. gone .. " entr" .. (gone == 1 and "y" or "ies")
             .. ": the next run runs " .. (gone == 1 and "that job" or
             "those jobs"))
  return 0
end

function M.run(argv)
  local opts, args = common.command_args(M, argv, true)
  if not opts then return args end
  local verb = args[1]
  if verb == "list" and #args == 1 then return list(opts) end
  if verb == "show" and #args == 2 then return show(opts, args[2]) end
  if verb == "forget" and #args == 2 then return forget(opts, args[2]) end
  common.usage_error("expected list, show KEY or forget KEY|JOB",
                     M.name)
end

return M
