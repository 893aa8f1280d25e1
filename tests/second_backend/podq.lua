-- podq: a throwaway backend of the tests, written as a file of
-- lua/navette/backends/ is (tests/integration/core/test_second_backend.sh
-- copies it there, with its C client and binding, and adds the one
-- wiring line): a toy Job controller. A job is a manifest in the
-- controller's inbox folder whose container runs the launcher (the
-- container starts the launcher); a sweep's jobs are one indexed manifest,
-- the task's index in JOB_COMPLETION_INDEX. The controller answers with
-- ID.status files ({"state": ...}), which refresh reads back. Its
-- endpoint is never called: it is what isolation attributes to the
-- profile, and its credential what the job needs.
local errors = require "navette.errors"
local util = require "navette.util"
local json = _navette.json
local sys = _navette.sys
local wire = _navette.podq

local M = { name = "podq" }

local KEYS = { "endpoint", "inbox", "credential", "image" }
M.profile_keys = KEYS
M.settings_doc = "podq settings (backend = \"podq\"): a test's toy Job "
  .. "controller."

function M.validate(t, where)
  local function fail(message)
    error(errors.new("recipe", where.path .. ": profile '" .. where.profile
                     .. "': podq: " .. message), 0)
  end
  if type(t) ~= "table" then
    fail("a podq profile needs podq = { endpoint, inbox, credential }")
  end
  util.check_keys(t, KEYS, function(k, suggestion)
    fail("unknown key '" .. tostring(k) .. "'" .. suggestion)
  end)
  if type(t.endpoint) ~= "string" or not t.endpoint:match("^https?://") then
    fail("endpoint must be the controller's URL")
  end
  if type(t.inbox) ~= "string" or t.inbox:sub(1, 1) ~= "/" then
    fail("inbox must be an absolute folder")
  end
  local cred = type(t.credential) == "string"
               and where.credentials[t.credential]
  if not cred then fail("credential must name a declared credential") end
  if not where.storage:match("^s3://") then
    fail("the podq backend needs s3:// storage (signed URLs)")
  end
  return { endpoint = t.endpoint, inbox = t.inbox, credential = cred,
           image = t.image or "example.invalid/podq/base:1" }
end

-- What the launcher needs of this controller (backends/init.lua).
function M.prepare(spec, profile)
  spec.podq = { endpoint = profile.podq.endpoint, inbox = profile.podq.inbox,
                credential = profile.podq.credential,
                image = profile.podq.image }
end

-- (the launcher: the controller's index of a task, and a container that
-- starts the launcher rather than one the launcher starts)
M.launch = { scheduler = "podq", array_index = "JOB_COMPLETION_INDEX",
             in_container = true }

-- (the contract's questions)
function M.origins(profile) return { profile.podq.endpoint } end
function M.spec_credentials(spec) return { spec.podq.credential } end
M.check_credential_doc = "True when the podq controller would take the "
  .. "credential (a test's: a declared one)."
function M.check_credential(opts)
  if type(opts) ~= "table" or type(opts.credential) ~= "string" then
    errors.raise("recipe", "navette.podq.check_credential{credential = "
                 .. "NAME}")
  end
  return true
end

-- Writes the manifest of the jobs whose launcher is script into the inbox,
-- named after the first.
local function post(specs, script)
  local first = specs[1]
  local text = wire.manifest(first.id, first.podq.image, script, #specs)
  assert(sys.mkdir_p(first.podq.inbox, 448))
  assert(sys.write_file(first.podq.inbox .. "/" .. first.id .. ".json",
                        text))
end

-- Records, audits and sends specs (one job, or a sweep's tasks).
local function send(specs, script, ctx)
  for k, spec in ipairs(specs) do
    local sub = ctx.submissions and ctx.submissions[k] or ctx.submission
                or {}
    local ok, err = ctx.db:submit(spec.id, spec.project, spec.profile,
                                  spec.name, json.encode(spec), M.name,
                                  sub.key)
    if ok == nil then error(errors.new("backend", err.message), 0) end
  end
  post(specs, script)
  for k, spec in ipairs(specs) do
    ctx.audit(spec, M.name)
    errors.check(ctx.db:set_remote(spec.id, specs[1].id .. "/" .. (k - 1),
                                   "queued"))
    errors.check(ctx.db:submitted(spec.id))
  end
  return specs
end

function M.submit(spec, launcher, ctx)
  return send({ spec }, launcher, ctx)[1]
end

M.arrays = true
function M.submit_array(specs, script, ctx)
  return send(specs, script, ctx)
end

-- The controller's answer for row: its task's status file.
function M.refresh(row, ctx)
  local first, index = tostring(row.remote_id):match("^(.*)/(%d+)$")
  if not first or row.state == "succeeded" or row.state == "failed" then
    return { changed = false }
  end
  local text = sys.read_file(row.spec.podq.inbox .. "/" .. first .. "."
                             .. index .. ".status")
  if not text then return { changed = false } end
  local state, err = wire.state(text)
  if not state then error(errors.new("backend", err.message), 0) end
  if state == "running" and row.state ~= "running" then
    ctx.db:phase(row.id, "running", sys.now())
    ctx.db:set_remote(row.id, row.remote_id, "running")
    return { changed = true }
  elseif state == "succeeded" or state == "failed" then
    ctx.db:phase(row.id, state, sys.now())
    ctx.db:finish(row.id, state, state == "succeeded" and 0 or 1,
                  state == "failed" and { phase = "running",
                                          reason = "the pod failed" } or nil)
    return { changed = true }
  end
  return { changed = false }
end

function M.cancel(row, ctx)
  errors.check(ctx.db:finish(row.id, "cancelled", nil,
                             { phase = row.phase, reason = "cancelled" }))
  return "cancelled"
end

function M.log_chunk() return "" end

-- (a command of its own: `navette podq inbox PROFILE`, the manifests
-- waiting in the profile's inbox; found from this file alone)
M.commands = {
  podq = {
    summary = { { "podq inbox PROFILE", "a podq profile's manifests" } },
    usage = [[
usage: navette podq inbox PROFILE
  Prints how many manifests wait in the podq profile's inbox folder.]],
    run = function(args, ctx)
      if args[1] ~= "inbox" or #args ~= 2 then
        ctx.usage_error("expected: inbox PROFILE")
      end
      local profile = ctx.project("navette podq inbox").profiles[args[2]]
      if not profile or not profile.podq then
        ctx.usage_error("'" .. args[2] .. "' is not a podq profile")
      end
      local n = 0
      for _, f in ipairs(sys.listdir(profile.podq.inbox) or {}) do
        if f:match("%.json$") then n = n + 1 end
      end
      require("navette.term").print(n .. " manifests in "
                                    .. profile.podq.inbox)
      return 0
    end,
  },
}

return M
