-- navette.creds.store (the write-back of a rotated key) where a project
-- file, which may come from a clone being tried, names the path: a file
-- that does not exist is created only in navette's own folders (never
-- ~/.bash_profile), a file that holds something else is never
-- overwritten, and what is written is JSON whose punctuation is escaped
-- (a key made by a hostile server cannot put "$(...)" in a file a shell
-- might read).
local t = test
local sys, core = _navette.sys, _navette.core
local creds = require "navette.creds"

local HOSTILE = "AbC$(touch /tmp/navette-pwned)`id`;x'y\"z"

local function s3_file(path, secret)
  local text = string.format('{"Version": 1, "AccessKeyId": "AKIAEXAMPLE0001", '
    .. '"SecretAccessKey": "%s"}\n', secret:gsub('[\\"]', "\\%0"))
  assert(sys.write_file(path, text, 384))
  return path
end

local function declare(dir, dst)
  assert(sys.mkdir_p(core.home(), 448))
  local src = s3_file(dir .. "/src.json", HOSTILE)
  local declared = {
    src = { name = "src", kind = "s3", source = "file", path = src },
    dst = { name = "dst", kind = "s3", source = "file", path = dst },
  }
  creds._set_context(declared, nil)
  return creds.get("src")
end

t.test("a new file outside navette's folders is refused", function()
  local dir = t.tmpdir()
  local handle = declare(dir, dir .. "/.bash_profile")
  t.raises(function() creds.store("dst", handle) end,
           "does not exist, and navette creates a credential file only under")
  t.eq(sys.stat(dir .. "/.bash_profile"), nil, "nothing was written")
end)

t.test("a path with .. is refused even under an allowed folder", function()
  local dir = t.tmpdir()
  local handle = declare(dir, core.home() .. "/../escape-" .. sys.random_hex(4) .. ".json")
  t.raises(function() creds.store("dst", handle) end, "does not exist")
end)

t.test("a file holding something else is not overwritten", function()
  local dir = t.tmpdir()
  assert(sys.write_file(dir .. "/notes", "my notes\n", 384))
  local handle = declare(dir, dir .. "/notes")
  t.raises(function() creds.store("dst", handle) end,
           "does not hold a credential of kind s3")
  t.eq(sys.read_file(dir .. "/notes"), "my notes\n")
end)

t.test("in navette's folder: created, 0600, punctuation escaped", function()
  local dir = t.tmpdir()
  local dst = core.home() .. "/store-test-" .. sys.random_hex(6) .. ".json"
  local handle = declare(dir, dst)
  t.eq(creds.store("dst", handle), true)
  local text = sys.read_file(dst)
  local mode = sys.stat(dst).mode & 511
  sys.remove(dst)
  t.eq(mode, 384, "0600")
  t.ok(not text:find("$(", 1, true), "no shell substitution in: " .. text)
  t.ok(not text:find("`", 1, true), "no backquote")
  t.ok(text:find("\\u0024(", 1, true) or text:find("\\u0024\\u0028", 1, true),
       "escaped: " .. text)
end)

t.test("the escaped file reads back as the same key", function()
  local dir = t.tmpdir()
  local dst = core.home() .. "/store-test-" .. sys.random_hex(6) .. ".json"
  local handle = declare(dir, dst)
  creds.store("dst", handle)
  local back = creds.get("dst")
  local same = back:equals(handle)
  sys.remove(dst)
  t.ok(same, "the value read back is the stored one")
end)
