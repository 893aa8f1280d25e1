-- A throwaway backend for the Lua tests, written as a file of
-- lua/navette/backends/ would be, and nothing else: the tests load it and
-- register it, then drive the runner, the job views and cancel through it.
-- Its jobs never run: each look (refresh) moves a job one step, from
-- queued to running to succeeded, and what it was given is kept in
-- M.calls for the tests to read.
local json = _navette.json
local errors = require "navette.errors"

local M = { name = "fake", profile_keys = { "color", "nodes" } }

-- it takes spec.after (and keeps it, like every spec, in M.calls)
M.dependencies = true

-- set by a test: the next submission stops after its row is written, as
-- a run killed there would
M.stop_after_record = false

M.calls = {}
local function called(what, x)
  M.calls[#M.calls + 1] = { what = what, x = x }
end

function M.validate(t, where)
  if type(t) ~= "table" then
    errors.raise("recipe", where.path .. ": profile '" .. where.profile
                 .. "': fake: a fake profile needs fake = { color = ... }")
  end
  for k in pairs(t) do
    local known = false
    for _, key in ipairs(M.profile_keys) do known = known or k == key end
    if not known then
      errors.raise("recipe", where.path .. ": profile '" .. where.profile
                   .. "': fake: unknown key '" .. tostring(k) .. "'")
    end
  end
  if type(t.color) ~= "string" then
    errors.raise("recipe", where.path .. ": profile '" .. where.profile
                 .. "': fake: color must be a string")
  end
  return { color = t.color, nodes = t.nodes or {} }
end

function M.prepare(spec, profile)
  spec.fake = { color = profile.fake.color }
end

function M.nodes(profile)
  return profile.fake.nodes
end

function M.submit(spec, launcher, ctx)
  called("submit", { spec = spec, launcher = launcher, nodes = ctx.nodes,
                     resumed = ctx.submission and ctx.submission.resumed })
  local sub = ctx.submission or {}
  if sub.resumed then
    spec = sub.resumed.spec
    spec.adopted = true
  else
    local ok, err
    for _ = 1, 5 do
      ok, err = ctx.db:submit(spec.id, spec.project, spec.profile, spec.name,
                              json.encode(spec), M.name, sub.key)
      if ok ~= nil or err.code ~= "refused" then break end
      ctx.redraw(spec)
    end
    if ok == nil then error(errors.new("backend", err.message), 0) end
    if M.stop_after_record then
      M.stop_after_record = false
      error(errors.new("backend", "the fake stopped after the row"), 0)
    end
  end
  ctx.audit(spec, M.name)
  errors.check(ctx.db:submitted(spec.id))
  return spec
end

function M.refresh(row, ctx)
  called("refresh", row)
  if row.state == "queued" then
    ctx.db:set_remote(row.id, "fake-" .. row.id:sub(-6), "running")
    ctx.db:phase(row.id, "running", _navette.sys.now())
    return { changed = true, fields = { fake = { step = "started" } } }
  elseif row.state == "running" then
    ctx.db:phase(row.id, "succeeded", _navette.sys.now())
    ctx.db:finish(row.id, "succeeded", 0, nil, nil)
    return { changed = true, fields = { fake = { step = "ended" } } }
  end
  return { changed = false, fields = { fake = { step = "over" } } }
end

function M.cancel(row, ctx)
  called("cancel", row)
  if row.state ~= "queued" and row.state ~= "running" then return row.state end
  errors.check(ctx.db:finish(row.id, "cancelled", nil,
                             { phase = row.phase, reason = "cancelled" }))
  return "cancelled"
end

function M.log_chunk(view, offset)
  return ("the fake log of " .. view.id .. "\n"):sub(offset + 1)
end

function M.describe(x)
  local f = x.fake or {}
  return { line = "backend fake · " .. tostring(f.step),
           column = { title = "FAKE", width = 8, text = tostring(f.step) } }
end

function M.list_rows(rows)
  for _, r in ipairs(rows) do r.fake = { step = "listed" } end
end

return M
