-- What a job published in storage, read back from the laptop: its run
-- record, its log, and what a node launcher publishes as it goes (its
-- status object and log chunks). Shared by the job views and every
-- backend, so neither needs the other to read them.
local util = require "navette.util"
local json = _navette.json
local NAMES = _navette.record.names -- the layout, from host/jobs/record.h

local published = {}

-- The s3:// store a job published to, from what its spec says of it (the
-- credential is loaded from its declaration, in this process); nil when
-- the spec names none, or nil and the error when it cannot be opened.
function published.s3_store(spec)
  local s3 = spec and spec.outputs and spec.outputs.s3
  if not s3 then return nil end
  local ok, store = pcall(require("navette.s3store").open,
                          { name = spec.profile,
                            s3 = require("navette.trust").recorded(s3) })
  if not ok then return nil, store end
  return store
end

-- The store handle and key of url (s3:// or file://), or nil and the
-- error (the caller closes the handle: `navette outputs` and `gc` get
-- and delete through it). spec.held: an s3:// store the caller holds
-- open, used as it is (one client for many reads), never closed here.
local function borrowed(store)
  return setmetatable({ close = function() end }, { __index = store })
end

local function store_of(url, spec)
  if url:match("^s3://") then
    if spec and spec.held then return borrowed(spec.held), url end
    local store, err = published.s3_store(spec)
    if not store then
      return nil, nil, { code = "io", message = tostring(err and
                         (err.message or err) or "no S3 store in the spec") }
    end
    return store, url
  end
  local storage = _navette.storage
  local root, key = storage.find(url)
  if not root then
    return nil, nil, { code = "not_found", message = "no store holds " .. url }
  end
  local store, err = storage.open(root)
  if not store then return nil, nil, err end
  return store, key
end

published.store = store_of

-- The text of an object of a job's store (s3:// or file://) at url, at
-- most max bytes (nil: the store's bound), or nil and the error (code
-- "not_found" when it is not there).
function published.read(url, spec, max)
  if type(url) ~= "string" then return nil end
  local store, key, err = store_of(url, spec)
  if not store then return nil, err end
  local text, rerr = store:read(key, max)
  store:close()
  return text, rerr
end

-- What the store says of the object at url (size, sha256...), or nil
-- and the error (code "not_found" when it is not there).
function published.head(url, spec)
  if type(url) ~= "string" then return nil end
  local store, key, err = store_of(url, spec)
  if not store then return nil, err end
  local info, herr = store:head(key)
  store:close()
  return info, herr
end

-- The run record at url, decoded, or nil and what is wrong with it:
-- "missing" (not in the store), "corrupt" (not a run record), or the
-- store's error.
function published.record(url, spec)
  local text, err = published.read(url, spec, 4 * 1024 * 1024)
  if not text then
    if type(url) ~= "string" then return nil end
    return nil, (err and err.code == "not_found") and "missing"
                or ("unreadable: " .. tostring(err and err.message or "?"))
  end
  local ok, record = pcall(json.decode, text)
  if not ok or type(record) ~= "table"
     or record.navette_run_record == nil then
    return nil, "corrupt"
  end
  return record
end

-- What a node launcher published of its phases (its navette-status
-- object: "PHASE TIME" lines), oldest first; {} before the first.
function published.phases(store, spec)
  local text = store:read(spec.outputs.url .. NAMES.status, 65536)
  local out = {}
  for phase, at in (text or ""):gmatch("([%w_]+) ([%dT:.Z-]+)\n") do
    out[#out + 1] = { phase = phase, at = at }
  end
  return out
end

-- Records the phases a launcher published ({phase, at} in ISO-8601) in
-- job id's row of db, all but the end, which the backend and the run
-- record say. Returns the time of the latest one (0 when none) and the
-- time of the end the list holds, if any.
function published.merge_phases(db, id, list)
  local last, ended = 0, nil
  for _, p in ipairs(list) do
    local at = type(p) == "table" and type(p.at) == "string"
               and util.parse_iso8601(p.at)
    if at and (p.phase == "succeeded" or p.phase == "failed"
               or p.phase == "cancelled") then
      ended = at
    elseif at and type(p.phase) == "string" then
      db:phase(id, p.phase, at)
      if at > last then last = at end
    end
  end
  return last, ended
end

-- The store of spec's outputs: one per S3 store for a whole listing
-- (ctx.walk = {stores = {}}, set by a backend's list_rows: its
-- connection serves every row, and closing it is list_rows' work), else
-- a fresh one the caller closes.
function published.walk_store(spec, ctx)
  local walk = ctx and ctx.walk
  local s3 = spec.outputs and spec.outputs.s3
  if not walk or not s3 then return published.s3_store(spec) end
  local key = tostring(spec.profile) .. "\0" .. json.encode(s3)
  local held = walk.stores[key]
  if held == nil then
    held = published.s3_store(spec) or false
    walk.stores[key] = held
  end
  if not held then return nil end
  return borrowed(held)
end

-- A job's log as its node launcher shipped it, from offset: the chunks
-- after those read already (seen[view.id] keeps how many, read once
-- each), or the published log when no chunk was shipped and the job is
-- over. -> the bytes, the job's spec and what was seen of it.
function published.shipped_log(seen_by_id, view, offset, db)
  local text = db:get(view.id)
  local row = text and json.decode(text)
  local spec = row and row.spec
  local seen = seen_by_id[view.id] or { n = 0, bytes = 0 }
  seen_by_id[view.id] = seen
  local store = spec and published.s3_store(spec)
  if not store then return "", spec, seen end
  local out = {}
  for _, c in ipairs(published.log_chunks(store, spec, seen.n)) do
    seen.n, seen.bytes = c.n, seen.bytes + #c.data
    out[#out + 1] = c.data
  end
  local data = table.concat(out)
  local over = view.state == "succeeded" or view.state == "failed"
               or view.state == "cancelled"
  if seen.n == 0 and offset == 0 and over and view.log_url then
    data = store:read(view.log_url) or ""
    seen.bytes = #data
  end
  store:close()
  return data, spec, seen
end

-- The log chunks a node launcher shipped after chunk number `after`
-- (navette-log/000001...), in order: a list of {n, data}.
function published.log_chunks(store, spec, after)
  local prefix = spec.outputs.prefix .. NAMES.log_chunks
  local listing = store:list(prefix)
  local chunks = {}
  for _, o in ipairs(listing and listing.objects or {}) do
    -- (the key ends in the chunks' folder and the chunk's number)
    local digits = o.key:match("(%d+)$")
    local n = digits and o.key:sub(-#digits - #NAMES.log_chunks, -#digits - 1)
              == NAMES.log_chunks and tonumber(digits)
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

return published
