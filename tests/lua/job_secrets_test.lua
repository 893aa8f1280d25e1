-- A job's secrets as files (host/jobs/secrets.c): what the file of each
-- kind of credential holds, its mode, a folder that only its user opens,
-- removal only of a secrets folder, and the object sealed for a node,
-- which `openssl enc -d` opens with the password the launcher carries.
local t = test
local jobs, creds, sys = _navette.jobs, _navette.creds, _navette.sys

local ID = "sec-20261206-000000-abcdef0-123456"

-- (these tests load declarations as a trusted project's)
_navette.core.set_trusted(true)

-- A handle of kind loaded from a file source holding text.
local function handle(dir, kind, text)
  local path = dir .. "/src-" .. kind .. "-" .. sys.random_hex(4)
  assert(sys.write_file(path, text, 384))
  return assert(creds.load { name = "c" .. kind, kind = kind,
                             source = "file", path = path })
end

local function read(path)
  local f = assert(io.open(path, "rb"))
  local s = f:read("a")
  f:close()
  return s
end

t.test("each kind's file holds what a job reads, mode 0400", function()
  local dir = t.tmpdir()
  local d = t.tmpdir() .. "/navette-secrets-x/" .. ID
  assert(sys.mkdir_p(d, 448))
  local cases = {
    { "bearer", "tok-0123456789abcdef\n", "tok-0123456789abcdef" },
    { "basic", "alice:pa ss:w\n", "alice:pa ss:w" },
    { "s3", '{"Version":1,"AccessKeyId":"AKIDEXAMPLE","SecretAccessKey":'
            .. '"se\\"cret","SessionToken":"tok"}\n',
      '{"Version":1,"AccessKeyId":"AKIDEXAMPLE","SecretAccessKey":'
      .. '"se\\"cret","SessionToken":"tok"}\n' },
  }
  for _, c in ipairs(cases) do
    local name = c[1]:upper()
    assert(jobs.secret_write(d, name, handle(dir, c[1], c[2])))
    t.eq(read(d .. "/" .. name), c[3], c[1] .. "'s file")
    t.eq(sys.stat(d .. "/" .. name).mode & 511, 256, c[1] .. " is 0400")
  end
  -- never over a file that is there (nor through a link)
  local again, err = jobs.secret_write(d, "BEARER",
                                       handle(dir, "bearer", "x\n"))
  t.eq(again, nil)
  t.match(err.message, "cannot create")
  local bad = jobs.secret_write(d, "A-B", handle(dir, "bearer", "x\n"))
  t.eq(bad, nil, "a name that is not a variable name")
end)

t.test("only a secrets folder of the job is removed", function()
  local dir = t.tmpdir()
  local d = dir .. "/navette-secrets-0/" .. ID
  assert(sys.mkdir_p(d, 448))
  local other = dir .. "/keep/" .. ID
  assert(sys.mkdir_p(other, 448))
  local ok, err = jobs.secrets_remove(other, ID)
  t.eq(ok, nil, "a folder that is not a secrets folder")
  t.match(err.message, "is not a job's secrets folder")
  t.eq(jobs.secrets_remove(d, "sec-20261206-000000-abcdef0-654321"), nil,
       "another job's id")
  t.ok(sys.stat(other) and sys.stat(d), "both still there")
  assert(jobs.secrets_remove(d, ID))
  t.eq(sys.stat(d), nil, "the job's own is gone")
end)

t.test("the sealed object opens with openssl and the password", function()
  if not sys.which("openssl") then t.skip("no openssl here") end
  local dir = t.tmpdir()
  local h = handle(dir, "bearer", "hub-0123456789abcdef-value\n")
  local pass = assert(jobs.secret_seal(h, dir .. "/obj"))
  t.match(pass, "^" .. ("%x"):rep(64) .. "$")
  local sealed = read(dir .. "/obj")
  t.eq(sealed:sub(1, 8), "Salted__")
  t.ok(not sealed:find("hub-0123456789abcdef", 1, true), "not in clear")
  local p = assert(io.popen("NV_PASS=" .. pass .. " openssl enc -d "
    .. "-aes-256-ctr -pbkdf2 -md sha256 -iter 10000 -pass env:NV_PASS "
    .. "-in " .. dir .. "/obj"))
  local opened = p:read("a")
  p:close()
  t.eq(opened, "hub-0123456789abcdef-value")
  local pass2 = assert(jobs.secret_seal(h, dir .. "/obj2"))
  t.ok(pass2 ~= pass, "a password per object")
end)
