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

-- ---- kinds other than s3, generated and staged values ----------------------

local function declare_kinds(paths)
  assert(sys.mkdir_p(core.home(), 448))
  local declared = {}
  for name, d in pairs(paths) do
    declared[name] = { name = name, kind = d[1], source = "file", path = d[2],
                       host = d[3] }
  end
  creds._set_context(declared, nil)
end

t.test("an hs256 or basic file outside navette's folders is never written",
       function()
  local dir = t.tmpdir()
  -- a file a key could be mistaken for: any bytes read as an hs256 key
  assert(sys.write_file(dir .. "/id_ed25519", "-----BEGIN KEY-----\n", 384))
  assert(sys.write_file(dir .. "/pw", "svc:old\n", 384))
  declare_kinds { key = { "hs256", dir .. "/id_ed25519" },
                  pw = { "basic", dir .. "/pw" } }
  local key = creds.generate { kind = "hs256" }
  t.raises(function() creds.store("key", key) end, "outside navette's folders")
  t.eq(sys.read_file(dir .. "/id_ed25519"), "-----BEGIN KEY-----\n")
  local pw = creds.generate { kind = "basic", user = "svc" }
  t.raises(function() creds.store("pw", pw) end, "outside navette's folders")
  t.eq(sys.read_file(dir .. "/pw"), "svc:old\n")
end)

t.test("generate: kinds, sizes and users are checked", function()
  declare_kinds {}
  t.raises(function() creds.generate { kind = "s3" } end,
           "kind must be \"hs256\" or \"basic\"")
  t.raises(function() creds.generate { kind = "basic" } end, "needs user")
  t.raises(function() creds.generate { kind = "hs256", user = "x" } end,
           "has no user")
  t.raises(function() creds.generate { kind = "hs256", length = 8 } end,
           "length must be an integer from 16 to 512")
  t.raises(function() creds.generate { kind = "basic", user = "a:b" } end,
           "no usable user name")
  t.raises(function() creds.generate { kind = "hs256", size = 32 } end,
           "unknown key 'size'")
  local a, b = creds.generate { kind = "hs256" }, creds.generate { kind = "hs256" }
  t.ok(not a:equals(b), "two keys differ")
  t.eq(a:info().kind, "hs256")
  t.eq(a:info().source, "generated")
end)

t.test("htpasswd: a bcrypt line of a basic handle, refused for a key",
       function()
  declare_kinds {}
  local pw = creds.generate { kind = "basic", user = "svc" }
  local line = creds.htpasswd(pw, 4)
  t.ok(line:match("^svc:%$2y%$04%$[./A-Za-z0-9]+$") and #line == 4 + 60,
       "line: " .. line)
  t.ok(creds.htpasswd(pw):match("^svc:%$2y%$10%$"), "cost 10 by default")
  t.raises(function() creds.htpasswd(pw, 20) end, "cost must be")
  t.raises(function() creds.htpasswd(creds.generate { kind = "hs256" }) end,
           "basic")
end)

t.test("stage keeps a value aside, staged reads it, store drops it",
       function()
  local dst = core.home() .. "/stage-test-" .. sys.random_hex(6)
  assert(sys.write_file(dst, "svc:old\n", 384))
  declare_kinds { svc = { "basic", dst, "127.0.0.1:9" } }
  t.eq(creds.staged("svc"), nil, "nothing staged yet")
  local new = creds.generate { kind = "basic", user = "svc" }
  local path = creds.stage("svc", new)
  t.eq(path, core.home() .. "/staged/svc")
  t.eq(sys.stat(path).mode & 511, 384, "0600")
  t.eq(sys.read_file(dst), "svc:old\n", "the credential is untouched")
  local back, where = creds.staged("svc")
  t.ok(back:equals(new), "staged reads back the same value")
  t.eq(where, path)
  t.raises(function() creds.stage("svc", creds.generate { kind = "hs256" }) end,
           "the handle of kind hs256")
  t.raises(function() creds.stage("nope", new) end, "no credential named")
  creds.store("svc", back)
  t.eq(sys.stat(path), nil, "the staged file is gone once stored")
  t.ok(creds.get("svc"):equals(new), "the credential holds the new value")
  local declared = creds.declared()
  t.eq(declared.svc.kind, "basic")
  t.eq(declared.svc.host, "127.0.0.1:9")
  t.eq(declared.svc.path, nil, "no path is handed out")
  sys.remove(dst)
end)
