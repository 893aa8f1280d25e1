-- `navette outputs JOB|RUN`: a job's published outputs (or those of every
-- job of a run) downloaded into a folder, each checked against the sha256
-- and size its run record lists before it takes its name there.
local errors = require "navette.errors"
local term = require "navette.term"
local jobs = require "navette.jobview"
local published = require "navette.published"
local common = require "navette.cli.common"
local sys, json = _navette.sys, _navette.json

local M = {
  name = "outputs",
  summary = { { "outputs JOB|RUN", "download a job's outputs, checked" } },
  usage = [[
usage: navette outputs JOB|RUN [--to DIR] [--json]
  Downloads the outputs a job published into DIR (default: a new folder
  ./JOB_ID), each checked against the sha256 and size its run record
  lists. Given a run's id, the outputs of each of its jobs go into
  DIR/JOB_NAME/ (default DIR: ./RUN_ID); given a glob of names
  (train[*]), those of the latest job of each name (default DIR:
  ./outputs). JOB is also a unique prefix, a name, or `last`. A file is
  written under a
  temporary name and takes its own only once checked: one whose bytes
  differ from the record (changed in the store since) is refused and
  removed. A file already in DIR is kept when it is the same (same
  sha256), refused otherwise. Exit 1 when an output is damaged in the
  store, 2 when one is missing, 3 when a file in DIR differs or a job
  has not ended.]],
  flags = { to = "value", json = "bool" },
  read_only = false, -- loads the store's credential as status does
}

-- An output's name as a path under DIR: relative, no empty, `.` or `..`
-- part (the name comes from the run record, read from the store).
local function safe_name(name)
  if type(name) ~= "string" or name == "" or name:sub(1, 1) == "/" then
    return false
  end
  for part in (name .. "/"):gmatch("([^/]*)/") do
    if part == "" or part == "." or part == ".." then return false end
  end
  return true
end

local function fail(code, message, hint)
  return errors.new(code, message, hint)
end

-- The bytes of output o (of job v) fetched to path: a temporary name
-- beside it first, checked, then renamed. -> "fetched" | "identical",
-- or nil and the error.
local function fetch_one(v, spec, o, path)
  local what = "output " .. tostring(o.name) .. " of job " .. v.id
  local st = sys.stat(path)
  if st then
    local sha = st.type == "file" and sys.sha256_file(path)
    if sha == o.sha256 then return "identical" end
    return nil, fail("refused", path .. " is already there and is not "
                     .. what .. " (sha256 " .. tostring(sha or st.type)
                     .. ", the output's " .. tostring(o.sha256) .. ")",
                     "download into another folder (--to DIR), or move "
                     .. path .. " away first")
  end
  local dir, base = path:match("^(.*)/([^/]+)$")
  local ok, merr = sys.mkdir_p(dir)
  if not ok then
    return nil, fail("io", "cannot make " .. dir .. ": "
                     .. tostring(merr and merr.message or merr),
                     "check the permissions of the folder")
  end
  local tmp = dir .. "/." .. base .. ".navette-part-" .. sys.random_hex(4)
  local store, key, serr = published.store(o.url, spec)
  if not store then
    return nil, fail(serr.code or "io", "cannot open the store of " .. what
                     .. ": " .. tostring(serr.message), serr.hint)
  end
  -- streamed to the file by the store (file:// and s3:// alike)
  local info, gerr = store:get(key, tmp)
  store:close()
  local actual, size = info and info.sha256, info and info.size
  if not info then
    sys.remove(tmp)
    actual = tostring(gerr.message):match("sha256 (%x+), recorded")
    if not actual then
      if gerr.code == "not_found" then
        return nil, fail("not_found", what .. " is missing from the store ("
                         .. tostring(o.url) .. ")", "something removed it "
                         .. "after the job published it; run the job "
                         .. "again to publish it anew")
      end
      return nil, fail(gerr.code or "io", "cannot download " .. what
                       .. " (" .. tostring(o.url) .. "): "
                       .. tostring(gerr.message), gerr.hint)
    end
  end
  if actual ~= o.sha256 or (size and size ~= o.size) then
    sys.remove(tmp)
    return nil, fail("failed", what .. " is not the one the job published:"
                     .. " sha256 " .. actual .. (size and (", " .. size
                     .. " bytes") or "") .. "; its run record lists sha256 "
                     .. tostring(o.sha256) .. ", " .. tostring(o.size)
                     .. " bytes (refused: nothing written to " .. path
                     .. ")", "the object was changed in the store after "
                     .. "the job published it (" .. tostring(o.url)
                     .. "); run the job again to publish it anew")
  end
  -- (rename replaces: the name is looked at again just before)
  local renamed, rerr = not sys.stat(path) and os.rename(tmp, path)
  if not renamed then
    sys.remove(tmp)
    return nil, fail(rerr and "io" or "refused", "cannot write " .. path
                     .. (rerr and (": " .. rerr) or ": it appeared while "
                     .. "the output was downloaded"),
                     "download into another folder (--to DIR)")
  end
  return "fetched"
end

-- Every output of job id into dir; each file's result is added to
-- results, each failure to problems.
local function fetch_job(id, dir, results, problems, quiet)
  local v = jobs.get(id)
  local row = jobs.row(v.id)
  local spec = row and row.spec or {}
  local function problem(e)
    problems[#problems + 1] = e
    results[#results + 1] = { job = v.id, name = json.null,
                              state = "refused", error = e.message }
  end
  if not jobs.FINAL[v.state] then
    return problem(fail("refused", "job " .. v.id .. " is " .. v.state
                        .. ": its outputs are published when it ends",
                        "`navette watch " .. v.id .. "`, then run this "
                        .. "again"))
  end
  if v.record_problem then
    return problem(fail("failed", "the run record of job " .. v.id .. " is "
                        .. v.record_problem .. " (" .. tostring(v.record_url)
                        .. "): its outputs cannot be listed",
                        "something removed or changed it in the store; run "
                        .. "the job again to publish its outputs anew"))
  end
  if not v.record_url then
    return problem(fail("failed", "job " .. v.id .. " ended " .. v.state
                        .. " before its outputs reached the store: there "
                        .. "is nothing to download", "`navette status "
                        .. v.id .. "` says where it stopped"))
  end
  if not quiet then
    term.print("job " .. tostring(v.name) .. " (" .. v.id .. ") -> " .. dir
               .. "/")
    if #v.outputs == 0 then term.print("  (no output files)") end
  end
  for _, o in ipairs(v.outputs) do
    local path = dir .. "/" .. tostring(o.name)
    local state, err
    if safe_name(o.name) then
      state, err = fetch_one(v, spec, o, path)
    else
      err = fail("failed", "the run record of job " .. v.id .. " lists an "
                 .. "output named '" .. tostring(o.name) .. "', not a "
                 .. "path under a folder: not downloaded", "something "
                 .. "changed the run record in the store; run the job "
                 .. "again")
    end
    results[#results + 1] = { job = v.id, name = o.name, path = path,
                              size = o.size, sha256 = o.sha256,
                              state = state or "refused",
                              error = err and err.message or nil }
    if err then
      problems[#problems + 1] = err
    elseif not quiet then
      term.printf("  %-32s %10d B  sha256 %s  %s\n", o.name, o.size,
                  o.sha256:sub(1, 16) .. "…", state == "identical"
                  and "already there" or "fetched")
    end
  end
end

-- A job's folder under a run's DIR: its name, or its id when the name
-- is no plain folder name or another job of the run has it too.
local function folder_names(rows)
  local names, seen = {}, {}
  for _, row in ipairs(rows) do
    local id = row.id
    local name = row.name
    if type(name) ~= "string" or not name:match("^[%w][%w._-]*$") then
      name = id
    end
    names[id] = name
    seen[name] = (seen[name] or 0) + 1
  end
  for id, name in pairs(names) do
    if seen[name] > 1 then names[id] = id end
  end
  return names
end

function M.run(argv)
  local opts, given = common.one_arg(M, argv, "JOB or RUN id")
  if not opts then return 0 end
  if opts.to == "" then
    common.usage_error("--to expects a folder", M.name)
  end
  -- a job, or several: a run's jobs, or a glob's (see jobs.pick)
  local pick = jobs.pick(given)
  local ids = {}
  for i, r in ipairs(pick.rows) do ids[i] = r.id end
  local results, problems = {}, {}
  local quiet = opts.json
  if pick.run or #ids > 1 then
    local label = pick.run or given
    local dir = (opts.to or (pick.run or "outputs")):gsub("/+$", "")
    local names = folder_names(pick.rows)
    if not quiet then
      term.print((pick.run and "run " or "jobs ") .. label .. " ("
                 .. #ids .. " jobs) -> " .. dir .. "/")
    end
    for _, id in ipairs(ids) do
      fetch_job(id, dir .. "/" .. names[id], results, problems, quiet)
    end
  else
    local id = ids[1]
    local dir = (opts.to or id):gsub("/+$", "")
    fetch_job(id, dir == "" and "/" or dir, results, problems, quiet)
  end
  if opts.json then term.print(json.encode(json.array(results), true)) end
  -- every refusal said; the first one's code is the exit status
  for _, e in ipairs(problems) do term.error(e) end
  return #problems > 0 and errors.exit_status[problems[1].code] or 0
end

return M
