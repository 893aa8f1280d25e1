-- The key-rotation primitives against the real radosgw (run by
-- test_rotate_keys.sh with `navette test --host`, which sets the
-- environment): navette.storage.keys, create_key, remove_key,
-- check_credential and navette.creds.store, through the trusted modules
-- (require "navette.storage.keys"), as public.lua hands them to recipes.
-- The declarations are a trusted project's (the trust gate is
-- trust_test.lua's); creds.store writes into project rot's own folder,
-- ROT_DIR (~/.navette/rot), never elsewhere (ROT_OUTSIDE).
local t = test
local sys, core = _navette.sys, _navette.core
core.set_trusted(true)
local creds = require "navette.creds"
local rotation = require "navette.creds.rotation"
local storage = require "navette.storage.keys"

local function env(name)
  local v = sys.getenv(name)
  assert(v and v ~= "", name .. " is not set (run test_rotate_keys.sh)")
  return v
end

local ENDPOINT, USER, DIR = env("ROT_ENDPOINT"), env("ROT_USER"), env("ROT_DIR")
local OUTSIDE = env("ROT_OUTSIDE")
local FIRST_ID = env("ROT_SVC_AK")
local SVC_FILE = DIR .. "/svc.json"

local declared = {
  ["rgw-admin"] = creds.validate("rgw-admin", { kind = "s3", source = "env",
    env = { access_key_id = "ROT_ADMIN_AK",
            secret_access_key = "ROT_ADMIN_SK" } }, "test"),
  tester = creds.validate("tester", { kind = "s3", source = "env",
    env = { access_key_id = "S3_ACCESS_KEY",
            secret_access_key = "S3_SECRET_KEY" } }, "test"),
  ["storage-svc"] = creds.validate("storage-svc", { kind = "s3",
    source = "file", path = SVC_FILE }, "test"),
  ["env-svc"] = creds.validate("env-svc", { kind = "s3", source = "env" },
                               "test"),
  junk = creds.validate("junk", { kind = "s3", source = "file",
    path = DIR .. "/junk" }, "test"),
  -- a first store creates a file only in navette's folders
  fresh = creds.validate("fresh", { kind = "s3", source = "file",
    path = DIR .. "/fresh-" .. sys.random_hex(4) .. ".json" }, "test"),
  outside = creds.validate("outside", { kind = "s3", source = "file",
    path = OUTSIDE .. "/fresh.json" }, "test"),
  jwt = creds.validate("jwt", { kind = "hs256", source = "file",
    path = OUTSIDE .. "/jwt.key" }, "test"),
  ["cmd-svc"] = creds.validate("cmd-svc", { kind = "s3", source = "command",
    command = { "/bin/false" } }, "test"),
}
local BUCKET = env("ROT_BUCKET")
local profile = { name = "rot", storage = "s3://" .. BUCKET .. "/",
  s3 = { bucket = BUCKET, root = "", endpoint = ENDPOINT,
         region = "us-east-1", path_style = true,
         credential = declared.tester } }
require("navette.context").enter { credentials = declared, profile = profile,
                                   project = { name = "rot" } }

local ADMIN = "rgw-admin"

local function has(list, x)
  for _, v in ipairs(list) do if v == x then return true end end
  return false
end

local function keys()
  return storage.keys { user = USER, credential = ADMIN }
end

local function audit_actions()
  local path = core.home() .. "/audit/audit.jsonl"
  local text = sys.read_file(path) or ""
  local actions = {}
  for line in text:gmatch("[^\n]+") do
    local a = line:match('"action":"([^"]+)"')
    if a then actions[#actions + 1] = a end
  end
  return actions, text
end

local created -- the key made by the create test, for the later ones

t.test("keys lists the user's access key ids", function()
  local ids = keys()
  t.eq(#ids, 1)
  t.ok(ids[1] == FIRST_ID, "the user's first key is listed")
end)

t.test("a user without the users caps is refused, with the caps hint",
       function()
  local e = t.raises(function()
    storage.keys { user = USER, credential = "tester" }
  end, "AccessDenied")
  t.eq(e.code, "refused")
  t.match(e.hint, "radosgw%-admin caps add %-%-uid=")
  t.match(e.hint, 'users=%*')
  local ids, err = storage.try_keys { user = USER, credential = "tester" }
  t.eq(ids, nil)
  t.eq(err.code, "refused")
end)

t.test("an unknown user is not_found", function()
  local e = t.raises(function()
    storage.keys { user = "no-such-user-x", credential = ADMIN }
  end, "no user 'no%-such%-user%-x'")
  t.eq(e.code, "not_found")
  e = t.raises(function()
    storage.create_key { user = "no-such-user-x", credential = ADMIN }
  end)
  t.eq(e.code, "not_found")
end)

t.test("misuse raises recipe errors", function()
  t.eq(t.raises(function() storage.keys { user = USER } end,
                "credential").code, "recipe")
  t.eq(t.raises(function()
    storage.keys { user = USER, credential = ADMIN, uesr = "x" }
  end, "unknown key 'uesr'").code, "recipe")
  t.eq(t.raises(function()
    storage.keys { user = "a&uid=b", credential = ADMIN }
  end, "bad radosgw user id").code, "invalid")
end)

t.test("create_key: a new key, as an opaque handle", function()
  local before = keys()
  local h = storage.create_key { user = USER, credential = ADMIN }
  t.eq(tostring(h), "<secret:" .. USER .. ".new>")
  t.raises(function() return "x" .. h end, "cannot be turned into text")
  local info = h:info()
  t.eq(info.kind, "s3")
  t.eq(info.source, "minted")
  t.eq(info.access_key_id, nil) -- info() stays metadata
  local id = h:access_key_id()
  t.ok(type(id) == "string" and #id >= 16, "its access key id is readable")
  t.ok(not has(before, id), "it is a new id")
  local after = keys()
  t.eq(#after, #before + 1)
  t.ok(has(after, id), "the server lists it")
  created = h
end)

t.test("check_credential: the new key works, a real put and get with it",
       function()
  t.eq(storage.check_credential { credential = created }, true)
  local client = _navette.s3.open { endpoint = ENDPOINT,
                                    credential = created }
  t.ok(client:create_bucket(BUCKET .. "-svc"), "bucket of the service user")
  local tmp = t.tmpdir()
  assert(sys.write_file(tmp .. "/in", "rotated\n"))
  t.ok(client:put(BUCKET .. "-svc", "a.txt", tmp .. "/in"), "put")
  t.ok(client:get(BUCKET .. "-svc", "a.txt", tmp .. "/out"), "get")
  t.eq(sys.read_file(tmp .. "/out"), "rotated\n")
  client:close()
end)

t.test("creds.store writes the file source, 0600, read back by get",
       function()
  local old = creds.get("storage-svc")
  t.eq(old:access_key_id(), FIRST_ID)
  t.eq(rotation.store("storage-svc", created), true)
  local st = sys.stat(SVC_FILE)
  t.eq(st.mode & 511, 384) -- 0600
  local now = creds.get("storage-svc")
  t.eq(now:access_key_id(), created:access_key_id())
  t.ok(now:equals(created), "the stored value is the new key's")
  t.ok(old:access_key_id() == FIRST_ID, "the old handle is unchanged")
  -- no temp file left beside it
  for _, name in ipairs(sys.listdir(DIR)) do
    t.ok(not name:find("tmp", 1, true), "left over: " .. name)
  end
end)

t.test("creds.store refuses env and command sources, and a wrong kind",
       function()
  t.match(t.raises(function() rotation.store("env-svc", created) end,
                   "environment variables").hint, "source = \"file\"")
  t.raises(function() rotation.store("cmd-svc", created) end,
           "printed by a command")
  t.raises(function() rotation.store("nope", created) end,
           "no credential named 'nope'")
  t.raises(function() rotation.store("storage-svc", "a string") end,
           "credential handle")
  -- what is at the path now must be a credential of the kind, or nothing
  assert(sys.write_file(DIR .. "/junk", "not a credential\n", 384))
  t.raises(function() rotation.store("junk", created) end,
           "does not hold a credential of kind s3")
  t.eq(sys.read_file(DIR .. "/junk"), "not a credential\n")
  t.raises(function() rotation.store("outside", created) end,
           "outside the folders navette keeps for project rot")
  t.eq(sys.stat(OUTSIDE .. "/fresh.json"), nil, "nothing created outside")
  t.eq(rotation.store("fresh", created), true)
  t.ok(creds.get("fresh"):equals(created), "a first store creates it")
  -- kinds whose source reads any text are stored only in navette's
  -- folders (their file cannot be told from another)
  local key = _navette.creds.load { name = "k", kind = "hs256",
                                    source = "env",
                                    env = { key = "ROT_ADMIN_SK" } }
  t.raises(function() rotation.store("jwt", key) end,
           "outside the folders navette keeps for project rot")
end)

t.test("remove_key: the old key is then refused by the server", function()
  local old = _navette.creds.load { name = "old", kind = "s3", source = "env",
                              env = { access_key_id = "ROT_SVC_AK",
                                      secret_access_key = "ROT_SVC_SK" } }
  t.eq(storage.check_credential { credential = old }, true)
  t.eq(storage.remove_key { user = USER, access_key = FIRST_ID,
                            credential = ADMIN }, true)
  local e = t.raises(function()
    storage.check_credential { credential = old }
  end, "InvalidAccessKeyId")
  t.eq(e.code, "refused")
  t.ok(not has(keys(), FIRST_ID), "no longer listed")
  -- again: not_found (the user has no such key), not a refusal
  e = t.raises(function()
    storage.remove_key { user = USER, access_key = FIRST_ID,
                         credential = ADMIN }
  end, "has no access key")
  t.eq(e.code, "not_found")
  -- a key of another user is not removed through this one
  e = t.raises(function()
    storage.remove_key { user = USER, access_key = sys.getenv("S3_ACCESS_KEY"),
                         credential = ADMIN }
  end)
  t.eq(e.code, "not_found")
  t.eq(storage.check_credential { credential = "tester" }, true)
end)

t.test("a wrong secret is refused with SignatureDoesNotMatch", function()
  local path = t.tmpdir() .. "/wrong.json"
  assert(sys.write_file(path, '{"Version": 1, "AccessKeyId": "'
    .. created:access_key_id()
    .. '", "SecretAccessKey": "not-the-secret-at-all-0000"}', 384))
  local h = _navette.creds.load { name = "wrong", kind = "s3",
                                  source = "file", path = path }
  t.raises(function() storage.check_credential { credential = h } end,
           "SignatureDoesNotMatch")
  local ok, err = storage.try_check_credential { credential = h }
  t.eq(ok, nil)
  t.eq(err.code, "refused")
end)

t.test("plan mode records and does nothing", function()
  local before = keys()
  local file_before = sys.read_file(SVC_FILE)
  core.set_plan(true)
  local n0 = #core.plan()
  local h = storage.create_key { user = USER, credential = ADMIN }
  t.ok(h:info().not_run, "a stand-in handle")
  t.eq(h:access_key_id(), nil)
  t.eq(rotation.store("storage-svc", h), true)
  t.eq(storage.remove_key { user = USER, access_key = before[1],
                            credential = ADMIN }, true)
  t.eq(#storage.keys { user = USER, credential = ADMIN }, 0)
  t.eq(storage.check_credential { credential = "storage-svc" }, true)
  local recorded = {}
  for i = n0 + 1, #core.plan() do
    local a = core.plan()[i]
    recorded[#recorded + 1] = a.primitive .. " " .. a.action
  end
  core.set_plan(false)
  t.eq(table.concat(recorded, ", "), "storage key create, creds store, "
       .. "storage key remove, storage keys, storage check credential")
  t.eq(#keys(), #before)
  t.eq(sys.read_file(SVC_FILE), file_before)
end)

t.test("the audit log has the lines, with no secret", function()
  local actions, text = audit_actions()
  t.ok(has(actions, "storage.key_create"), "key_create audited")
  t.ok(has(actions, "storage.key_remove"), "key_remove audited")
  t.ok(has(actions, "creds.store"), "store audited")
  t.ok(not text:find(sys.getenv("ROT_SVC_SK"), 1, true), "no old secret")
  t.ok(not text:find(sys.getenv("ROT_ADMIN_SK"), 1, true), "no admin secret")
  t.match(text, "ending " .. created:access_key_id():sub(-4))
end)
