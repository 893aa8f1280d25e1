-- Credentials as opaque handles (_navette.creds): a handle shows only its
-- name, refuses every way of being turned into text, exposes metadata but
-- never the value, and can be closed. Also the declaration checks of
-- navette.creds.validate.
-- (these tests load declarations as a trusted project's: the trust gate
-- itself is trust_test.lua's)
_navette.core.set_trusted(true)
local t = test
local sys, json, core, native = _navette.sys, _navette.json, _navette.core,
                                _navette.creds

-- (built from parts: no secret-shaped literal in the tree)
local SECRET = "s3cr3t" .. "-Zq9-hunter2-value"
local OTHER = "another-Xw7-secret-value"

local function secret_file(dir, name, text, mode)
  local path = dir .. "/" .. name
  assert(sys.write_file(path, text, mode or 384)) -- 0600
  return path
end

local function load_token(path, name)
  local h, err = native.load({ name = name or "api", kind = "bearer",
                               source = "file", path = path })
  t.ok(h, err and err.message or "loaded")
  return h
end

local function hides(v, what)
  local s = type(v) == "table" and tostring(v.message) or tostring(v)
  t.ok(not s:find(SECRET, 1, true), (what or "value")
       .. " must not show the secret: " .. s)
end

-- every string reachable from v (tables walked)
local function strings_in(v, out, seen)
  out, seen = out or {}, seen or {}
  if type(v) == "string" then
    out[#out + 1] = v
  elseif type(v) == "table" and not seen[v] then
    seen[v] = true
    for k, x in pairs(v) do
      strings_in(k, out, seen)
      strings_in(x, out, seen)
    end
  end
  return out
end

t.test("tostring and string.format show only the name", function()
  local path = secret_file(t.tmpdir(), "token", SECRET .. "\n")
  local h = load_token(path)
  t.eq(tostring(h), "<secret:api>")
  t.eq(string.format("%s", h), "<secret:api>")
  t.eq(string.format("[%10s]", h), "[" .. string.format("%10s", "<secret:api>") .. "]")
  t.eq(tonumber(h), nil)
  t.eq(type(h), "userdata")
  h:close()
end)

t.test("concatenation refuses", function()
  local h = load_token(secret_file(t.tmpdir(), "token", SECRET .. "\n"))
  for what, fn in pairs({
    ["'x' .. h"] = function() return "x" .. h end,
    ["h .. 'x'"] = function() return h .. "x" end,
    ["h .. h"] = function() return h .. h end,
    ["1 .. h"] = function() return 1 .. h end,
    ["table.concat"] = function() return table.concat({ h }) end,
    ["table.concat sep"] = function() return table.concat({ "a", h }, ",") end,
  }) do
    local e = t.raises(fn)
    hides(e, what)
  end
  t.raises(function() return "x" .. h end, "cannot be turned into text")
  t.raises(function() return h .. "x" end, "cannot be turned into text")
  h:close()
end)

t.test("string functions, length and calls refuse", function()
  local h = load_token(secret_file(t.tmpdir(), "token", SECRET .. "\n"))
  for what, fn in pairs({
    ["string.rep"] = function() return string.rep(h, 2) end,
    ["string.sub"] = function() return string.sub(h, 1) end,
    ["string.byte"] = function() return string.byte(h) end,
    ["string.len"] = function() return string.len(h) end,
    ["string.upper"] = function() return string.upper(h) end,
    ["string.find"] = function() return string.find(h, "s") end,
    ["string.gsub"] = function() return string.gsub(h, ".", "%0") end,
    ["string.format %q"] = function() return string.format("%q", h) end,
    ["string.format %d"] = function() return string.format("%d", h) end,
    ["#h"] = function() return #h end,
    ["h:sub"] = function() return h:sub(1) end,
    ["h()"] = function() return h() end,
    ["utf8.len"] = function() return utf8.len(h) end,
  }) do
    local e = t.raises(fn)
    hides(e, what)
  end
  t.raises(function() return #h end, "cannot be turned into text")
  t.raises(function() return h() end, "cannot be turned into text")
  h:close()
end)

t.test("json.encode refuses a handle", function()
  local h = load_token(secret_file(t.tmpdir(), "token", SECRET .. "\n"))
  hides(t.raises(function() return json.encode({ h }) end, "cannot encode"))
  hides(t.raises(function() return json.encode(h) end, "cannot encode"))
  hides(t.raises(function() return json.encode({ auth = { h } }) end,
                 "cannot encode"))
  h:close()
end)

t.test("a handle raised as an error does not become its value", function()
  local h = load_token(secret_file(t.tmpdir(), "token", SECRET .. "\n"))
  local ok, e = pcall(error, h)
  t.eq(ok, false)
  t.eq(tostring(e), "<secret:api>")
  hides(e, "pcall(error, h)")
  ok, e = pcall(function() error(h) end)
  t.eq(ok, false)
  hides(e, "error(h)")
  ok, e = core.pcall(function() error(h) end)
  t.eq(ok, false)
  for _, s in ipairs(strings_in(e)) do
    t.ok(not s:find(SECRET, 1, true), "core.pcall error: " .. s)
  end
  hides(e, "core.pcall(error(h))")
  h:close()
end)

t.test("the metatable is hidden", function()
  local h = load_token(secret_file(t.tmpdir(), "token", SECRET .. "\n"))
  t.eq(getmetatable(h), false)
  t.raises(function() setmetatable(h, {}) end)
  t.eq(h.value, nil)
  t.eq(h.token, nil)
  t.eq(h.__tostring, nil)
  h:close()
end)

t.test("info has metadata and never the value", function()
  local dir = t.tmpdir()
  local path = secret_file(dir, "token", SECRET .. "\n")
  local h = load_token(path)
  local before = sys.now()
  local info = h:info()
  t.eq(info.name, "api")
  t.eq(info.kind, "bearer")
  t.eq(info.source, "file")
  t.eq(info.origin, path)
  t.eq(type(info.loaded_at), "number")
  t.ok(math.abs(info.loaded_at - before) < 60, "loaded_at is now")
  t.eq(type(info.created_at), "number")
  t.eq(info.expires_at, nil)
  t.eq(type(info.fields), "table")
  t.eq(#info.fields, 1)
  t.eq(info.fields[1], "token")
  t.eq(h:name(), "api")
  for _, s in ipairs(strings_in(info)) do
    t.ok(not s:find(SECRET, 1, true), "info holds the secret in " .. s)
    t.ok(not s:find("hunter2", 1, true), "info holds part of the secret")
  end
  h:close()

  -- an s3 credential: field names, no values
  local s3 = secret_file(dir, "s3.json", json.encode({
    Version = 1, AccessKeyId = "AKIDLUA", SecretAccessKey = SECRET,
    SessionToken = OTHER }))
  local hs, err = native.load({ name = "storage", kind = "s3",
                                source = "file", path = s3 })
  t.ok(hs, err and err.message)
  local i2 = hs:info()
  t.eq(#i2.fields, 3)
  for _, s in ipairs(strings_in(i2)) do
    t.ok(not s:find(SECRET, 1, true), "s3 info holds the secret")
    t.ok(not s:find(OTHER, 1, true), "s3 info holds the token")
    t.ok(not s:find("AKIDLUA", 1, true), "s3 info holds the key id")
  end
  hs:close()
end)

t.test("an env credential names its variable, not its value", function()
  local h, err = native.load({ name = "path", kind = "bearer", source = "env",
                               env = { token = "PATH" } })
  t.ok(h, err and err.message)
  t.eq(tostring(h), "<secret:path>")
  local info = h:info()
  t.eq(info.source, "env")
  t.eq(info.origin, "$PATH")
  local value = sys.getenv("PATH")
  for _, s in ipairs(strings_in(info)) do
    t.ok(not s:find(value, 1, true), "info holds the variable's value")
  end
  h:close()
  local none, e = native.load({ name = "nope", kind = "bearer", source = "env",
                                env = { token = "NAVETTE_TEST_UNSET_VAR_X" } })
  t.eq(none, nil)
  t.eq(e.code, "refused")
  t.match(e.message, "NAVETTE_TEST_UNSET_VAR_X")
end)

t.test("equals compares values without showing them", function()
  local dir = t.tmpdir()
  local a = secret_file(dir, "a", SECRET .. "\n")
  local b = secret_file(dir, "b", OTHER .. "\n")
  local c = secret_file(dir, "c", SECRET) -- same after trimming
  local h1, h2, h3, h4 = load_token(a, "one"), load_token(a, "two"),
                         load_token(b, "three"), load_token(c, "four")
  t.eq(h1:equals(h2), true)
  t.eq(h2:equals(h1), true)
  t.eq(h1:equals(h1), true)
  t.eq(h1:equals(h3), false)
  t.eq(h3:equals(h1), false)
  t.eq(h1:equals(h4), true)
  t.eq(h1 == h2, false) -- distinct handles; no __eq leaking a comparison
  t.raises(function() return h1:equals("x") end)
  t.raises(function() return h1:equals(SECRET) end)
  for _, h in ipairs({ h1, h2, h3, h4 }) do h:close() end
end)

t.test("a closed handle raises on use; closing twice is fine", function()
  local h = load_token(secret_file(t.tmpdir(), "token", SECRET .. "\n"))
  local h2 = load_token(secret_file(t.tmpdir(), "token", SECRET .. "\n"))
  h:close()
  t.raises(function() return h:info() end, "closed")
  t.raises(function() return h:name() end, "closed")
  t.raises(function() return h:equals(h2) end, "closed")
  t.raises(function() return h2:equals(h) end, "closed")
  h:close()
  t.eq(tostring(h), "<secret:closed>")
  t.raises(function() return "x" .. h end, "cannot be turned into text")
  h2:close()

  local outer
  do
    local h3 <close> = load_token(secret_file(t.tmpdir(), "t", SECRET))
    outer = h3
    t.eq(outer:name(), "api")
  end
  t.raises(function() return outer:info() end, "closed")
end)

t.test("refusals carry no value", function()
  local dir = t.tmpdir()
  local path = secret_file(dir, "open-token", SECRET .. "\n", 420) -- 0644
  local h, err = native.load({ name = "api", kind = "bearer",
                               source = "file", path = path })
  t.eq(h, nil)
  t.eq(err.code, "refused")
  t.match(err.message, "644")
  t.match(err.hint, "chmod 600")
  hides(err.message, "message")
  hides(err.hint, "hint")
  local basic = secret_file(dir, "basic", SECRET .. "\n")
  h, err = native.load({ name = "reg", kind = "basic", source = "file",
                         path = basic })
  t.eq(h, nil)
  t.match(err.message, "user:password")
  hides(err.message, "basic message")
  t.raises(function() return native.load({ name = "x" }) end,
           "name, kind and source are required")
  t.raises(function()
    return native.load({ name = "x", kind = "oauth", source = "env" })
  end, "unknown kind")
  h, err = native.load({ name = "x", kind = "bearer", source = "vault" })
  t.eq(h, nil)
  t.match(err.message, "vault")
end)

t.test("a minted JWT is a handle too", function()
  local key = secret_file(t.tmpdir(), "jwt.key", SECRET)
  local k, err = native.load({ name = "slurm", kind = "hs256",
                               source = "file", path = key })
  t.ok(k, err and err.message)
  local tok, terr = native.mint_jwt(k, "slurm.jwt", '{"sun":"root"}', 300)
  t.ok(tok, terr and terr.message)
  t.eq(tostring(tok), "<secret:slurm.jwt>")
  t.raises(function() return "Bearer " .. tok end, "cannot be turned into text")
  local info = tok:info()
  t.eq(info.kind, "bearer")
  t.eq(info.source, "minted")
  t.eq(info.expires_at - info.loaded_at, 300)
  for _, s in ipairs(strings_in(info)) do
    t.ok(not s:find("eyJ", 1, true), "info holds the token")
    t.ok(not s:find(SECRET, 1, true), "info holds the key")
  end
  local none, merr = native.mint_jwt(tok, "x", "{}", 60)
  t.eq(none, nil)
  t.match(merr.message, "not an HS256 key")
  local creds = require("navette.creds")
  require("navette.context").enter { profile = { max_token_lifespan = 600 } }
  t.raises(function()
    return creds.jwt(k, { claims = { sun = "root" }, lifespan = 3600 })
  end, "exceeds")
  require("navette.context").enter()
  tok:close()
  k:close()
end)

-- navette.creds.validate: declarations from the project file

local creds = require("navette.creds")
local function refused(decl, pattern, name)
  local e = t.raises(function()
    return creds.validate(name or "cred", decl, "navette.lua")
  end, pattern)
  t.match(e.message, "navette.lua")
  return e
end

t.test("validate refuses values written in the project file", function()
  local e = refused({ kind = "bearer", source = "env", env = { token = "T" },
                      value = SECRET }, "never be written")
  hides(e, "value refusal")
  e = refused({ kind = "basic", source = "keychain", service = "s",
                account = "a", password = SECRET }, "never be written")
  hides(e, "password refusal")
  refused({ kind = "bearer", source = "env", token = SECRET },
          "never be written")
  refused({ kind = "bearer", source = "env", secret = SECRET },
          "never be written")
end)

t.test("validate refuses unknown keys, kinds and sources", function()
  refused({ kind = "bearer", source = "keychain", servce = "s",
            account = "a" }, "unknown key 'servce' %(did you mean 'service'%?%)")
  refused({ kind = "bearer", source = "env", env = { token = "T" },
            zzzzzz = 1 }, "unknown key 'zzzzzz'")
  refused({ kind = "oauth", source = "env" }, "kind must be one of")
  refused({ source = "env" }, "kind must be one of")
  refused({ kind = "bearer", source = "vault" }, "source must be one of")
  refused({ kind = "bearer" }, "source must be one of")
  refused("bearer", "must be a table")
  refused({ kind = "bearer", source = "env", env = { token = "T" } },
          "names are", "bad name!")
end)

t.test("validate checks each source's fields", function()
  refused({ kind = "bearer", source = "env" }, "names its variables")
  refused({ kind = "basic", source = "env" }, "names its variables")
  refused({ kind = "bearer", source = "env", env = {} }, "names its variables")
  refused({ kind = "bearer", source = "env", env = "TOKEN" }, "env maps")
  refused({ kind = "bearer", source = "env", env = { password = "P" } },
          "no field 'password'")
  refused({ kind = "bearer", source = "env", env = { token = "1BAD" } },
          "must be a variable name")
  refused({ kind = "hs256", source = "file" }, "needs path")
  refused({ kind = "bearer", source = "keychain", service = "s" },
          "needs service and account")
  refused({ kind = "s3", source = "command" }, "needs command")
  refused({ kind = "s3", source = "command", command = {} }, "needs command")
  refused({ kind = "s3", source = "command", command = { "aws", 1 } },
          "must be strings")

  local ok = creds.validate("storage", { kind = "s3", source = "env" }, "x")
  t.eq(ok.kind, "s3")
  t.eq(next(ok.env), nil)
  ok = creds.validate("api", { kind = "bearer", source = "env",
                               env = { token = "API_TOKEN" } }, "x")
  t.eq(ok.env.token, "API_TOKEN")
  ok = creds.validate("key", { kind = "hs256", source = "file",
                               path = "~/.navette/jwt.key" }, "x")
  t.eq(ok.path, (sys.getenv("HOME") or "") .. "/.navette/jwt.key")
  ok = creds.validate("sts", { kind = "s3", source = "command",
                               command = { "aws", "configure" } }, "x")
  t.eq(ok.command[2], "configure")
end)

test.test("a job's token lives its time limit plus a margin, bounded", function()
  local creds = require "navette.creds"
  local sys = _navette.sys
  local dir = test.tmpdir()
  assert(sys.write_file(dir .. "/k", "hs256-key-" .. sys.random_hex(16), 384))
  local key = assert(_navette.creds.load{ name = "k", kind = "hs256",
                                          source = "file", path = dir .. "/k" })
  require("navette.context").enter { profile = { name = "p", max_token_lifespan = 7200 } }
  local tok = creds.jwt(key, { claims = { sun = "root" },
                               job = { resources = { time_limit = 1800 } } })
  local info = tok:info()
  test.eq(math.floor(info.expires_at - info.created_at + 0.5),
          1800 + creds.JOB_TOKEN_MARGIN)
  test.raises(function()
    creds.jwt(key, { claims = {}, job = { resources = { time_limit = 7200 } } })
  end, "exceeds the profile's maximum")
  require("navette.context").enter()
end)

-- Plan mode and read-only commands run no program (issue 11): a command
-- source is not loaded (code not_run), the plan says what would run, and
-- a recipe gets a stand-in handle that no primitive accepts.

local function marker_command(marker)
  return { "sh", "-c", "touch '" .. marker .. "'; echo '{\"AccessKeyId\": "
           .. "\"AKIDPLAN\", \"SecretAccessKey\": \"sk-plan\"}'" }
end

test.test("plan mode runs no credential command: a stand-in, one plan line", function()
  local creds = require "navette.creds"
  local dir = test.tmpdir()
  local marker = dir .. "/ran"
  local decl = creds.validate("sts", { kind = "s3", source = "command",
                                       command = marker_command(marker) },
                              "navette.lua")
  native.cache_clear()
  require("navette.context").enter { credentials = { sts = decl },
                                     profile = { name = "p" } }
  core.set_plan(true)
  local forbidden = core.exec_forbidden()
  local before = #core.plan()
  local direct, err = native.load(decl)
  local ok, h = pcall(creds.get, "sts")
  local again = ok and creds.get("sts")
  local rows = creds.inspect({ sts = decl })
  local jwt_ok, jwt = pcall(creds.jwt, ok and h or nil, { claims = {} })
  local actions = table.move(core.plan(), before + 1, #core.plan(), 1, {})
  core.set_plan(false)
  test.eq(forbidden, true)
  test.eq(direct, nil)
  test.eq(err.code, "not_run")
  test.match(err.message, "credential sts: its command %(sh%) was not run")
  test.match(err.hint, "navette creds check sts")
  test.ok(ok, not ok and tostring(h.message or h))
  test.eq(tostring(h), "<secret:sts, not run>")
  test.eq(h:name(), "sts")
  test.eq(h:info().not_run, true)
  test.eq(h:info().source, "command")
  test.eq(again, h)
  test.raises(function() return h:equals(h) end, "was not loaded")
  test.eq(jwt_ok and jwt, nil) -- minting is planned, not done
  test.eq(rows[1].status, "not checked")
  test.eq(rows[1].not_run, true)
  test.eq(rows[1].error, nil)
  test.eq(sys.stat(marker), nil) -- nothing ran
  local would = {}
  for _, a in ipairs(actions) do
    if a.primitive == "creds" and a.action == "would run" then
      would[#would + 1] = a.detail
    end
  end
  test.eq(#would, 1)
  test.match(would[1] or "", "^the command of credential sts: sh %-c touch")
  -- outside plan mode the same declaration runs, and the stand-in held
  -- by the run is not handed out again
  test.eq(core.exec_forbidden(), false)
  test.raises(function()
    return native.not_run { name = "x", kind = "s3", source = "command" }
  end, "only in plan mode")
  local real = creds.get("sts")
  test.eq(tostring(real), "<secret:sts>")
  test.ok(sys.stat(marker), "the command ran")
  test.eq(real:info().not_run, nil)
  require("navette.context").enter()
  native.cache_clear()
end)

test.test("a plan's s3:// store whose credential was not run answers without it", function()
  local creds = require "navette.creds"
  local s3store = require "navette.s3store"
  local dir = test.tmpdir()
  local marker = dir .. "/ran"
  local decl = creds.validate("sts", { kind = "s3", source = "command",
                                       command = marker_command(marker) },
                              "navette.lua")
  decl.name = "sts"
  native.cache_clear()
  require("navette.context").enter { credentials = { sts = decl },
                                     profile = { name = "p" } }
  local profile = { name = "p", s3 = { bucket = "bkt", root = "team/",
                    endpoint = "http://127.0.0.1:9", region = "us-east-1",
                    credential = decl } }
  assert(sys.write_file(dir .. "/f", "data"))
  core.set_plan(true)
  local before = #core.plan()
  local ok, store = pcall(s3store.open, profile)
  local head, put, url, post, read, rerr
  if ok then
    head = store:head("inputs/x.txt")
    put = store:put("inputs/y.txt", dir .. "/f")
    url = store:presign_get("inputs/x.txt", 60)
    post = store:post_policy("out/", 60, 100)
    read, rerr = store:read("inputs/x.txt")
  end
  local actions = table.move(core.plan(), before + 1, #core.plan(), 1, {})
  core.set_plan(false)
  test.ok(ok, not ok and tostring(store.message or store))
  test.eq(head.url, "s3://bkt/team/inputs/x.txt")
  test.eq(head.sha256, nil) -- unknown, not refused
  test.eq(put.planned, true)
  test.eq(put.url, "s3://bkt/team/inputs/y.txt")
  test.match(url, "signed when the job is submitted")
  test.match(post.url, "s3://bkt/team/out/")
  test.eq(next(post.fields), nil)
  test.eq(read, nil)
  test.match(rerr.message, "was not run")
  local seen = {}
  for _, a in ipairs(actions) do seen[a.primitive .. " " .. a.action] = a.detail end
  test.match(seen["creds would run"] or "", "credential sts")
  test.match(seen["s3 put"] or "", "s3://bkt/team/inputs/y.txt")
  test.eq(sys.stat(marker), nil)
  -- outside plan mode the command runs and the store has its client
  local real = s3store.open(profile)
  test.ok(sys.stat(marker), "the command ran")
  test.eq(real.not_run, nil)
  test.ok(real.client, "a signing client")
  real:dispose()
  require("navette.context").enter()
  native.cache_clear()
end)
