-- Numbers that cross from Lua to C (issue 11): every binding that turns
-- one into a C size, count, duration, mode or file descriptor checks it
-- (nv_lua_checkrange): NaN, infinities, 2^63, 1e300, fractions and values
-- out of range raise an error naming the argument and the range, instead
-- of a conversion that is undefined behaviour in C (the ASan/UBSan build
-- runs this file too).
local t = test
local sys, jobs, jobdb, json = _navette.sys, _navette.jobs, _navette.jobdb,
                              _navette.json

local BAD = { 0 / 0, math.huge, -math.huge, 2 ^ 63, -2 ^ 63 * 2, 1e300,
              -1e300, 2.5 }

local function refused(fn, what)
  for _, v in ipairs(BAD) do
    local ok, err = pcall(fn, v)
    t.ok(not ok, what .. " refuses " .. tostring(v))
    t.match(tostring(err), what, "the message names " .. what)
  end
end

t.test("integer arguments are range-checked", function()
  local dir = t.tmpdir()
  local file = dir .. "/f"
  assert(sys.write_file(file, "data"))
  refused(function(v) return sys.random_hex(v) end, "random_hex: bytes")
  refused(function(v) return sys.read_from(file, v) end, "read_from: offset")
  refused(function(v) return sys.read_from(file, 0, v) end, "read_from: max")
  refused(function(v) return sys.read_file(file, v) end, "read_file: max")
  refused(function(v) return sys.isatty(v) end, "isatty: fd")
  refused(function(v) return sys.mkdir_p(dir .. "/d", v) end, "mkdir_p: mode")
  refused(function(v) return sys.write_file(file, "x", v) end,
          "write_file: mode")
  local db <close> = assert(jobdb.open(dir .. "/home"))
  refused(function(v) return db:list(v) end, "jobdb:list: limit")
  -- the message says the range and what it got
  local ok, err = pcall(sys.random_hex, 2 ^ 63)
  t.ok(not ok)
  t.match(err, "random_hex: bytes must be a whole number from 1 to 64 "
          .. "%(got 9%.2233720368548e%+18%)")
  ok, err = pcall(sys.random_hex, "lots")
  t.match(err, "random_hex: bytes must be a whole number")
  -- floats with an integer value and numeric strings are taken
  t.eq(#sys.random_hex(4.0), 8)
  t.eq(#sys.random_hex("4"), 8)
  t.eq(sys.read_from(file, 1.0, 2.0), "at")
  t.eq(sys.read_file(file, 2 ^ 20), "data")
end)

t.test("durations and times are range-checked", function()
  for _, v in ipairs({ 0 / 0, math.huge, 1e300 }) do
    local ok, err = pcall(sys.sleep, v)
    t.ok(not ok, "sleep refuses " .. tostring(v))
    t.match(err, "sys.sleep: seconds")
  end
  sys.sleep(-1e300) -- a deadline long passed: no sleep
  sys.sleep(0.001)
  local db <close> = assert(jobdb.open(t.tmpdir()))
  for _, v in ipairs({ 0 / 0, math.huge, -1, 1e300 }) do
    local ok, err = pcall(db.phase, db, "p-1-abc", "accepted", v)
    t.ok(not ok, "db:phase refuses at = " .. tostring(v))
    t.match(err, "jobdb:phase: at")
  end
  for _, v in ipairs({ 2 ^ 63, 1e300, 2.5, 2 ^ 31 }) do
    local ok, err = pcall(db.finish, db, "p-1-abc", "failed", v)
    t.ok(not ok, "db:finish refuses exit_code = " .. tostring(v))
    t.match(err, "jobdb:finish: exit_code")
  end
  -- times out of range print as the nearer end, never undefined
  t.eq(sys.iso8601(1e300), "9999-12-31T23:59:59.000Z")
  t.eq(sys.iso8601(0 / 0), "1970-01-01T00:00:00.000Z")
  t.eq(sys.iso8601(-1e300), "1970-01-01T00:00:00.000Z")
end)

t.test("job ids are checked in C by the job database binding", function()
  local db <close> = assert(jobdb.open(t.tmpdir()))
  for _, id in ipairs({ "..", "../../victim", "/", "/tmp/abs", "", "-rf",
                        "caf\xc3\xa9-1", "a\nb", string.rep("a", 64) }) do
    local ok, err = db:submit(id, "p", "local", "x", "{}", "slurm")
    t.eq(ok, nil, "submit refuses " .. json.encode(id))
    t.match(err.message, "job id")
    t.eq(err.code, "invalid")
    local good, why = jobs.id_ok(id)
    t.eq(good, false)
    t.match(why, "job id")
  end
  t.eq(jobs.id_ok("p-1-abc"), true)
  local list = json.decode(assert(db:list(10)))
  t.eq(#list, 0, "nothing was written")
end)
