-- Pinning what a job runs: its commit (clean, pushed, scanned for
-- secrets), its inputs (by sha256) and its image (by digest).
local util = require "navette.util"
local storage = require "navette.storage"
local backends = require "navette.backends"
local refusal = require "navette.run.report"
local note, refuse = refusal.note, refusal.refuse
local refuse_or_note = refusal.refuse_or_note
local worktree = require "navette.run.tree"
local NAMES = _navette.record.names
local json = _navette.json

local M = {}

-- The commit a job runs, refusing a dirty tree or an unpushed commit.
-- Once per run and code reference: the tree is checked once, each commit
-- resolved, scanned and looked up on the remote once (a sweep's jobs
-- share them).
function M.pin_commit(run, j)
  run.pinned = run.pinned or {}
  run.code_repos = run.code_repos or {}
  if j.library then
    -- the commit the lock pinned, fetched, checked and scanned when the
    -- library was used: its cache is the code's repository
    local lib = run.library_used[j.library.url]
    run.code_repos[lib.commit] = lib
    return lib.commit, lib.repo:commit(lib.commit)
  end
  -- a rerun's job runs the commit it ran (run/rerun.lua)
  local old = run.rerun and run.rerun.again[j.name]
  local ref = old and old.commit or j.code
  local pinned = run.pinned[ref]
  if pinned then return pinned[1], pinned[2] end
  local repo = run.repo
  -- a commit pinned already means the tree was found clean
  if not next(run.pinned) then
    worktree.check_tree(run)
    worktree.check_committed(run)
  end
  local commit, err = repo:resolve(ref)
  if not commit then
    refuse("job '" .. j.name .. "': code '" .. ref .. "': "
           .. err.message, err.hint or "check the commit reference")
  end
  M.scan_secrets(run, commit, j.name)
  -- (a survey asks whatever the profile requires: moving code needs it)
  if run.profile.require_pushed or run.survey then
    local present, rerr = repo:on_remote(commit, run.profile.remote)
    if present == nil then
      refuse_or_note(run, "code", j, "job '" .. j.name .. "': "
                     .. rerr.message, rerr.hint)
    elseif not present then
      refuse_or_note(run, "code", j, "job '" .. j.name .. "': commit "
             .. commit:sub(1, 12)
             .. " is not on the remote (as of the last fetch)",
             run.survey and "push it (git push): a node fetches the code "
             .. "from the remote" or "push it (git push), then run again: "
             .. "profile '" .. run.profile.name .. "' runs only pushed "
             .. "commits")
    end
  end
  local info = repo:commit(commit)
  run.pinned[ref] = { commit, info }
  return commit, info
end

-- An input read from the store: its URL, sha256 and size as they are now
-- (or as planned, for an upload of this very plan).
local function store_input(run, j, name, url, planned)
  local entry = { name = name, url = url }
  -- another profile's data is refused, even under survey (portability
  -- judges a profile's own recipe)
  require("navette.isolation").check_url(run.profile, url, "job '" .. j.name
                                         .. "': input '" .. name .. "'")
  if url:match("^s3://") and not run.profile.s3 then
    if note(run, "data", j, "job '" .. j.name .. "': input '"
                      .. name .. "' is in S3 (" .. url .. ") but profile '"
                      .. run.profile.name .. "' stores in "
                      .. run.profile.storage, "upload the input to this "
                      .. "profile's store (navette.storage.put)") then
      return entry
    end
    refuse("job '" .. j.name .. "': input '" .. name .. "' is in S3 ("
           .. url .. ") but profile '" .. run.profile.name .. "' stores "
           .. "in " .. run.profile.storage, "run it with a profile whose "
           .. "storage is s3://, or upload the input to this profile's "
           .. "store (navette.storage.put)")
  elseif url:match("^file://") and run.profile.s3 then
    if note(run, "data", j, "job '" .. j.name .. "': input '"
                      .. name .. "' is a file on this machine (" .. url
                      .. "), which the nodes of profile '"
                      .. run.profile.name .. "' do not see",
                      "upload it with navette.storage.put (the profile's "
                      .. "store is " .. run.profile.storage .. ")") then
      return entry
    end
    refuse("job '" .. j.name .. "': input '" .. name .. "' is a local "
           .. "file URL (" .. url .. ") but the job reads its inputs from "
           .. "S3", "upload it with navette.storage.put (the profile's "
           .. "store is " .. run.profile.storage .. ")")
  end
  local info, err = storage.try_head(url)
  if info then
    entry.sha256, entry.size = info.sha256, info.size
  elseif run.plan and planned[url] then
    entry.sha256, entry.size = planned[url].sha256, planned[url].size
  else
    refuse_or_note(run, "data", j, "job '" .. j.name .. "': input '"
           .. name .. "' is not in storage: " .. url
           .. (err and (" (" .. err.message .. ")") or ""),
           "upload it first (navette.storage.put in the recipe)")
  end
  return entry
end

-- An input that is an output of a job of the run (submitted before this
-- one): where it will be, and the run record that will list it with its
-- sha256 (read when the job starts, after that job has succeeded: by the
-- agent from a file:// store, by the launcher through presigned GETs of
-- both, made at submission, from an s3:// one).
local function output_input(run, j, name, from)
  local producer = run.specs[from.job]
  return { name = name, url = producer.outputs.url .. from.output,
           from = producer.id, output = from.output,
           record = producer.outputs.url .. NAMES.run_record }
end

function M.describe_inputs(run, j)
  local planned = storage._planned()
  local out = {}
  for _, name in ipairs(util.sorted_keys(j.inputs)) do
    local input = j.inputs[name]
    if type(input) == "table" and input.list then
      -- staged as NAME/1, NAME/2... in the list's order
      for i, x in ipairs(input) do
        out[#out + 1] = output_input(run, j, name .. "/" .. i, x)
      end
    else
      out[#out + 1] = type(input) == "table"
                      and output_input(run, j, name, input)
                      or store_input(run, j, name, input, planned)
    end
  end
  return json.array(out)
end

-- A secret scan's findings as lines "  path:line: reason [rule]", the
-- first 20 and how many more.
function M.findings_text(findings)
  local lines = {}
  for i, f in ipairs(findings) do
    if i > 20 then
      lines[#lines + 1] = "  ... and " .. (#findings - 20) .. " more"
      break
    end
    lines[#lines + 1] = "  " .. f.path .. (f.line > 0
      and (":" .. f.line) or "") .. ": " .. f.reason .. " [" .. f.rule
      .. "]"
  end
  return table.concat(lines, "\n")
end

-- Nothing leaves the laptop as code if the commit's tree holds something
-- that looks like a secret (scanned once per commit and run). source: the
-- repository of another commit ({path, name}: a library's cache).
function M.scan_secrets(run, commit, target, source)
  run.scanned = run.scanned or {}
  if run.scanned[commit] then return end
  local report, err = _navette.creds.scan_commit(
    source and source.path or run.repo:workdir(), commit)
  if not report then
    refuse("cannot scan commit " .. commit:sub(1, 12) .. " for secrets: "
           .. err.message, err.hint, run, target)
  end
  if #report.findings > 0 then
    refuse((source and (source.name .. ": ") or "") .. "commit "
           .. commit:sub(1, 12) .. " holds what looks like "
           .. "secrets:\n" .. M.findings_text(report.findings),
           "remove them from the repository (and rotate them), or exempt "
           .. "a path with a written reason in .navette-secrets-allow",
           run, target)
  end
  run.scanned[commit] = true
end

-- The image a job runs in, pinned: its reference resolved to a digest
-- (a tag is never what a node pulls), checked to exist in the registry the
-- node pulls from, and the container runtime that runs it (for the local
-- backend, one of this machine's). Returns the pinned reference and the
-- container part of the spec, or nil for a host job.
function M.pin_image(run, j, commit)
  if not j.image then return nil end
  local profile = run.profile
  local runtime = profile.container and profile.container.runtime
  local backend = backends.get(profile.backend)
  if backend.container_runtime then
    local found, wanted = backend.container_runtime(runtime)
    if not found then
      refuse("job '" .. j.name .. "' declares the image " .. j.image
             .. " but this machine has no container runtime ("
             .. wanted .. ")", "install podman "
             .. "(or docker), or remove `image` to run the job on the "
             .. "host, recorded as such", run, j.name)
    end
    runtime = found
  end
  runtime = runtime or "podman"
  if j.image_planned then -- pushed by this very plan: no digest yet
    return j.image, { runtime = runtime, image = j.image }
  end
  -- (once per run and reference: a sweep's jobs share their image, and
  -- its registry is asked once, not once per job)
  run.pinned_images = run.pinned_images or {}
  local pinned = run.pinned_images[j.image]
  if not pinned then
    local clean
    pinned, clean = M.resolve_image(run, j)
    -- (a reference noted, not refused, is resolved, and noted, per job)
    if clean then run.pinned_images[j.image] = pinned end
  end
  local container = { runtime = runtime, image = pinned }
  -- a code layer of this very commit: the code is in the image
  if j.image_code and j.image_code.commit == commit then
    container.workdir = j.image_code.path
  end
  return pinned, container
end

-- The digest reference of job j's image, checked to be in its registry
-- and built for the profile's platform, and true; refused, or noted
-- where the run notes instead: then the reference as far as it got.
function M.resolve_image(run, j)
  local image = require "navette.image"
  local profile = run.profile
  local parsed, perr0 = image.try_parse(j.image)
  if not parsed then
    refuse("job '" .. j.name .. "': image " .. j.image .. ": "
           .. perr0.message)
  end
  local digest = parsed.digest
  if not digest then
    local got, e = image.try_resolve(j.image,
                                     { platform = profile.platform })
    if not got then
      refuse_or_note(run, "image", j, "job '" .. j.name .. "': cannot "
             .. "resolve the image " .. j.image .. " to a digest: "
             .. e.message, e.hint or "check the reference and the "
             .. "registry's credential")
      return j.image
    end
    digest = got
  end
  local pinned = parsed.name .. "@" .. digest
  -- present (its manifest and config read), and built for the nodes
  local info, ierr = image.try_inspect(pinned,
                                        { platform = profile.platform })
  if not info then
    refuse_or_note(run, "image", j, "job '" .. j.name .. "': the image "
           .. pinned .. " is not in its registry: " .. ierr.message,
           "push it first (navette image push-code, or image.build in "
           .. "the recipe): the node pulls it by digest from there")
    return pinned
  end
  local pok, e = image.try_check_platform(info, profile.platform,
                                         "the image " .. pinned)
  if not pok then
    refuse_or_note(run, "image", j, "job '" .. j.name .. "': "
           .. e.message .. " (profile '" .. profile.name .. "' runs "
           .. (profile.platform or image.DEFAULT_PLATFORM) .. ")", e.hint)
    return pinned
  end
  return pinned, true
end

return M
