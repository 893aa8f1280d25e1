-- navette.creds.store (the write-back of a rotated key) where a project
-- file, which may come from a clone being tried, names the path: a file
-- that does not exist is created only in navette's own folders (never
-- ~/.bash_profile), a file that holds something else is never
-- overwritten, and what is written is JSON whose punctuation is escaped
-- (a key made by a hostile server cannot put "$(...)" in a file a shell
-- might read).
--
-- Since issue 26 it writes only into the folder navette keeps for the
-- project's credentials ($XDG_CONFIG_HOME/navette/credentials/PROJECT/ or
-- ~/.navette/PROJECT/): never into NAVETTE_HOME (the audit log, the queue,
-- staged values, hand-overs) nor another project's folder. These tests
-- load declarations as a trusted project's (the gate is trust_test.lua's).
local t = test
local sys, core = _navette.sys, _navette.core
local creds = require "navette.creds"
local rotation = require "navette.creds.rotation"
core.set_trusted(true)

-- The folder creds.store writes into for project "demo" (the test's
-- XDG_CONFIG_HOME, a folder of the build tree: never the user's home).
local function own_folder(project)
  local dir = require("navette.trust").config_dir() .. "/credentials/"
              .. (project or "demo")
  assert(sys.mkdir_p(dir, 448))
  return dir
end

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
  require("navette.context").enter { credentials = declared,
                                     project = { name = "demo" } }
  return creds.get("src")
end

t.test("a new file outside navette's folders is refused", function()
  local dir = t.tmpdir()
  local handle = declare(dir, dir .. "/.bash_profile")
  t.raises(function() rotation.store("dst", handle) end,
           "outside the folders navette keeps for project demo")
  t.eq(sys.stat(dir .. "/.bash_profile"), nil, "nothing was written")
end)

t.test("a path with .. is refused even under an allowed folder", function()
  local dir = t.tmpdir()
  local handle = declare(dir, own_folder() .. "/../escape-"
                              .. sys.random_hex(4) .. ".json")
  t.raises(function() rotation.store("dst", handle) end, "outside the folders")
end)

t.test("a file holding something else is not overwritten", function()
  local dir = t.tmpdir()
  local notes = own_folder() .. "/notes-" .. sys.random_hex(4)
  assert(sys.write_file(notes, "my notes\n", 384))
  local handle = declare(dir, notes)
  t.raises(function() rotation.store("dst", handle) end,
           "does not hold a credential of kind s3")
  t.eq(sys.read_file(notes), "my notes\n")
  sys.remove(notes)
end)

t.test("never navette's state nor another project's folder (M5)", function()
  local dir = t.tmpdir()
  -- an s3 credential file where navette keeps its state, and in another
  -- project's folder: each holds a credential, and neither is written
  assert(sys.mkdir_p(core.home() .. "/audit", 448))
  local targets = { core.home() .. "/audit/audit.jsonl",
                    core.home() .. "/staged/other",
                    core.home() .. "/team/vision/alice.json",
                    own_folder("other") .. "/key.json" }
  for _, target in ipairs(targets) do
    assert(sys.mkdir_p(target:match("^(.*)/[^/]*$"), 448))
    s3_file(target, "OTHER-SECRET-VALUE-0001")
    local handle = declare(dir, target)
    t.raises(function() rotation.store("dst", handle) end,
             "outside the folders navette keeps for project demo")
    t.ok(sys.read_file(target):find("OTHER-SECRET-VALUE-0001", 1, true),
         "unchanged: " .. target)
  end
end)

t.test("in navette's folder: created, 0600, punctuation escaped", function()
  local dir = t.tmpdir()
  local dst = own_folder() .. "/store-test-" .. sys.random_hex(6) .. ".json"
  local handle = declare(dir, dst)
  t.eq(rotation.store("dst", handle), true)
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
  local dst = own_folder() .. "/store-test-" .. sys.random_hex(6) .. ".json"
  local handle = declare(dir, dst)
  rotation.store("dst", handle)
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
                       host = d[3], declared_in = d[4] or "/work/a/navette.lua" }
  end
  require("navette.context").enter { credentials = declared,
                                     project = { name = "demo" } }
end

t.test("an hs256 or basic file outside navette's folders is never written",
       function()
  local dir = t.tmpdir()
  -- a file a key could be mistaken for: any bytes read as an hs256 key
  assert(sys.write_file(dir .. "/id_ed25519", "-----BEGIN KEY-----\n", 384))
  assert(sys.write_file(dir .. "/pw", "svc:old\n", 384))
  declare_kinds { key = { "hs256", dir .. "/id_ed25519" },
                  pw = { "basic", dir .. "/pw" } }
  local key = rotation.generate { kind = "hs256" }
  t.raises(function() rotation.store("key", key) end, "outside the folders")
  t.eq(sys.read_file(dir .. "/id_ed25519"), "-----BEGIN KEY-----\n")
  local pw = rotation.generate { kind = "basic", user = "svc" }
  t.raises(function() rotation.store("pw", pw) end, "outside the folders")
  t.eq(sys.read_file(dir .. "/pw"), "svc:old\n")
end)

t.test("generate: kinds, sizes and users are checked", function()
  declare_kinds {}
  t.raises(function() rotation.generate { kind = "s3" } end,
           "kind must be \"hs256\" or \"basic\"")
  t.raises(function() rotation.generate { kind = "basic" } end, "needs user")
  t.raises(function() rotation.generate { kind = "hs256", user = "x" } end,
           "has no user")
  t.raises(function() rotation.generate { kind = "hs256", length = 8 } end,
           "length must be an integer from 16 to 512")
  t.raises(function() rotation.generate { kind = "basic", user = "a:b" } end,
           "no usable user name")
  t.raises(function() rotation.generate { kind = "hs256", size = 32 } end,
           "unknown key 'size'")
  local a, b = rotation.generate { kind = "hs256" }, rotation.generate { kind = "hs256" }
  t.ok(not a:equals(b), "two keys differ")
  t.eq(a:info().kind, "hs256")
  t.eq(a:info().source, "generated")
end)

t.test("htpasswd: a bcrypt line of a basic handle, refused for a key",
       function()
  declare_kinds {}
  local pw = rotation.generate { kind = "basic", user = "svc" }
  local line = rotation.htpasswd(pw, 11)
  t.ok(line:match("^svc:%$2y%$11%$[./A-Za-z0-9]+$") and #line == 4 + 60,
       "line: " .. line)
  t.ok(rotation.htpasswd(pw):match("^svc:%$2y%$10%$"), "cost 10 by default")
  t.raises(function() rotation.htpasswd(pw, 20) end, "cost must be")
  -- a cheap hash is a password handed to an offline cracker (M4)
  t.raises(function() rotation.htpasswd(pw, 4) end, "from 10 to 14")
  t.raises(function() rotation.htpasswd(pw, 9) end, "from 10 to 14")
  t.raises(function() rotation.htpasswd(rotation.generate { kind = "hs256" }) end,
           "basic")
end)

t.test("htpasswd hashes only what navette made or staged (M4)", function()
  -- a person's real password, loaded from its source, is never hashed for
  -- the recipe to carry away
  local dir = t.tmpdir()
  assert(sys.write_file(dir .. "/pw", "alice:correct-horse-battery\n", 384))
  declare_kinds { mine = { "basic", dir .. "/pw" } }
  local loaded = creds.get("mine")
  t.raises(function() rotation.htpasswd(loaded) end,
           "was not made by navette.creds.generate nor staged")
  t.raises(function() rotation.htpasswd(loaded, 14) end, "nor staged")
end)

t.test("stage keeps a value aside, staged reads it, store drops it",
       function()
  local dst = own_folder() .. "/stage-test-" .. sys.random_hex(6)
  assert(sys.write_file(dst, "svc:old\n", 384))
  declare_kinds { svc = { "basic", dst, "127.0.0.1:9" } }
  t.eq(rotation.staged("svc"), nil, "nothing staged yet")
  local new = rotation.generate { kind = "basic", user = "svc" }
  local path = rotation.stage("svc", new)
  t.ok(path:sub(1, #core.home() + 8) == core.home() .. "/staged/"
       and path:match("/%x+%-svc$"), "staged by declaration: " .. path)
  t.eq(sys.stat(path).mode & 511, 384, "0600")
  t.eq(sys.read_file(dst), "svc:old\n", "the credential is untouched")
  local back, where = rotation.staged("svc")
  t.ok(back:equals(new), "staged reads back the same value")
  t.eq(where, path)
  t.raises(function() rotation.stage("svc", rotation.generate { kind = "hs256" }) end,
           "the handle of kind hs256")
  t.raises(function() rotation.stage("nope", new) end, "no credential named")
  t.ok(rotation.htpasswd(back):match("^svc:%$2y%$"), "a staged value is hashed")
  -- a clone declaring the same name, in another checkout, or the same
  -- checkout declaring another source, does not read it (M3)
  declare_kinds { svc = { "basic", dst, "127.0.0.1:9", "/tmp/clone/navette.lua" } }
  t.eq(rotation.staged("svc"), nil, "another checkout's svc has nothing staged")
  declare_kinds { svc = { "basic", dst .. "-x", "127.0.0.1:9" } }
  t.eq(rotation.staged("svc"), nil, "another declaration has nothing staged")
  declare_kinds { svc = { "basic", dst, "127.0.0.1:9" } }
  rotation.store("svc", back)
  t.eq(sys.stat(path), nil, "the staged file is gone once stored")
  t.ok(creds.get("svc"):equals(new), "the credential holds the new value")
  local declared = creds.declared()
  t.eq(declared.svc.kind, "basic")
  t.eq(declared.svc.host, "127.0.0.1:9")
  t.eq(declared.svc.path, nil, "no path is handed out")
  sys.remove(dst)
end)
