-- navette.storage.copy, delete, sha256 and lifecycle on a file:// store
-- (the s3:// side runs against radosgw in test_archive_logs.sh): what
-- they return, their checks (a target outside the store, bad options),
-- plan mode recording and changing nothing, and a file:// store's answer
-- to lifecycle (false and why, not an error).
local t = test
local storage = require "navette.storage"
local core = _navette.core

local function file_store()
  local dir = t.tmpdir()
  local root = "file://" .. dir .. "/store"
  local store = assert(_navette.storage.open(root, true))
  store:close()
  require("navette.context").enter({ profile = { name = "t", storage = root },
                         repo_root = dir, recipe_dir = dir, planned = {} })
  return dir, root
end

local function planned(fn)
  local before = #core.plan()
  core.set_plan(true)
  local ok, err = pcall(fn)
  core.set_plan(false)
  if not ok then error(err, 0) end
  local out = {}
  for i = before + 1, #core.plan() do
    local p = core.plan()[i]
    out[#out + 1] = type(p) == "table" and table.concat({ p.kind or "",
      p.action or "", p.detail or "" }, " ") or tostring(p)
  end
  return table.concat(out, "\n")
end

t.test("copy: the same bytes under another key, with their sha256",
       function()
  file_store()
  local put = storage.put_string("jobs/a/navette.log", "line\n")
  local info = storage.copy("jobs/a/navette.log", "_archive/jobs/a/navette.log")
  t.eq(info.key, "_archive/jobs/a/navette.log")
  t.eq(info.size, 5)
  t.eq(info.sha256, put.sha256)
  t.eq(storage.read("_archive/jobs/a/navette.log"), "line\n")
  -- the original stays
  t.eq(storage.read("jobs/a/navette.log"), "line\n")
  -- a URL inside the store names the same object
  info = storage.copy(storage.url("jobs/a/navette.log"), "b/copy")
  t.eq(info.sha256, put.sha256)
end)

t.test("copy: a missing source fails, a target outside the store is "
       .. "refused", function()
  file_store()
  local e = t.raises(function() storage.copy("none/here", "x/y") end)
  t.eq(e.code, "not_found")
  local _, err = storage.try_copy("none/here", "x/y")
  t.eq(err.code, "not_found")
  e = t.raises(function()
    storage.copy("file:///etc/passwd", "x/passwd")
  end, "not in the profile's store")
  t.eq(e.code, "refused")
  e = t.raises(function()
    storage.copy("s3://bucket/key", "x/y")
  end, "not in the profile's store")
  t.eq(e.code, "refused")
  t.raises(function() storage.copy("a", storage.url("b")) end,
           "to is a key of the store")
  t.raises(function() storage.copy(nil, "b") end, "key of the store")
end)

t.test("delete: the object goes; one already gone is no error", function()
  file_store()
  storage.put_string("jobs/a/navette-status", "running x\n")
  t.eq(storage.delete("jobs/a/navette-status"), true)
  t.eq(storage.head("jobs/a/navette-status"), nil)
  t.eq(storage.delete("jobs/a/navette-status"), true)
  t.raises(function() storage.delete("file:///etc/passwd") end,
           "not in the profile's store")
end)

t.test("sha256: recorded, or the bytes read back; bounded", function()
  file_store()
  local put = storage.put_string("jobs/a/navette.log", "hello\n")
  local sha, how = storage.sha256("jobs/a/navette.log")
  t.eq(sha, put.sha256)
  t.eq(how, "recorded")
  sha, how = storage.sha256("jobs/a/navette.log", { read = true })
  t.eq(sha, "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03")
  t.eq(how, "read")
  t.raises(function()
    storage.sha256("jobs/a/navette.log", { read = true, max_bytes = 3 })
  end, "more than 3")
  t.raises(function() storage.sha256("jobs/a/navette.log", { reed = true }) end,
           "unknown key 'reed'")
  local e = t.raises(function() storage.sha256("jobs/none") end)
  t.eq(e.code, "not_found")
end)

t.test("lifecycle: a file:// store has none (false and why); bad options "
       .. "raise", function()
  file_store()
  local ok, why = storage.lifecycle { prefix = "_archive/", expire_days = 365 }
  t.eq(ok, false)
  t.match(why, "file:// store has no lifecycle")
  t.raises(function() storage.lifecycle { prefix = "", expire_days = 1 } end,
           "whole store")
  t.raises(function() storage.lifecycle { prefix = "a/", expire_days = 0 } end,
           "expire_days")
  t.raises(function() storage.lifecycle { prefix = "a/", expire_days = 1.5 } end,
           "expire_days")
  t.raises(function()
    storage.lifecycle { prefix = "a/", expire_days = 1, id = "a b" }
  end, "'id'")
  t.raises(function()
    storage.lifecycle { prefix = "a/", expire_days = 1, days = 3 }
  end, "unknown key 'days'")
end)

t.test("plan mode: copy and delete are recorded, nothing changes",
       function()
  file_store()
  storage.put_string("jobs/a/navette.log", "x\n")
  local shown = planned(function()
    local info = storage.copy("jobs/a/navette.log", "_archive/a.log")
    t.eq(info.planned, true)
    t.eq(storage.delete("jobs/a/navette.log"), true)
  end)
  t.match(shown, "copy")
  t.match(shown, "_archive/a.log")
  t.match(shown, "delete")
  t.eq(storage.head("_archive/a.log"), nil)
  t.eq(storage.read("jobs/a/navette.log"), "x\n")
end)
