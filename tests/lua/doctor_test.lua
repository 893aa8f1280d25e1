-- navette doctor's judgements: the HTTP Date forms it reads (an endpoint's
-- clock), the skew and free-space thresholds of the README, and the free
-- space binding (_navette.sys.free_space) it reads them from.
local t = test
local doctor = require "navette.cli.doctor"
local util = require "navette.util"
local sys = _navette.sys

t.test("the three HTTP date forms read as the same second", function()
  local want = util.parse_iso8601("1994-11-06T08:49:37Z")
  t.eq(doctor.http_date("Sun, 06 Nov 1994 08:49:37 GMT"), want, "IMF-fixdate")
  t.eq(doctor.http_date("Sunday, 06-Nov-94 08:49:37 GMT"), want, "RFC 850")
  t.eq(doctor.http_date("Sun Nov  6 08:49:37 1994"), want, "asctime")
  t.eq(doctor.http_date("Fri, 04 Dec 2026 23:44:50 GMT"),
       util.parse_iso8601("2026-12-04T23:44:50Z"), "a date of this century")
  t.eq(doctor.http_date("Thursday, 01-Jan-26 00:00:00 GMT"),
       util.parse_iso8601("2026-01-01T00:00:00Z"), "RFC 850, year 26")
end)

t.test("what is not an HTTP date is nil, never a guess", function()
  for _, s in ipairs({ "", "yesterday", "Sun, 06 Nov 1994 08:49:37",
                       "Sun, 06 Nov 1994 08:49:37 CET",
                       "Sun, 06 Foo 1994 08:49:37 GMT",
                       "Sun, 06 Nov 1994 25:49:37 GMT",
                       "1994-11-06T08:49:37Z" }) do
    t.eq(doctor.http_date(s), nil, s)
  end
  t.eq(doctor.http_date(nil), nil, "no header")
end)

t.test("clock skew: warn past 60 s, fail past 5 min, either way", function()
  for skew, want in pairs({ [0] = "ok", [59.9] = "ok", [60] = "ok",
                            [61] = "warn", [-61] = "warn", [300] = "warn",
                            [301] = "fail", [-301] = "fail",
                            [900] = "fail", [-3600] = "fail" }) do
    t.eq(doctor.skew_status(skew), want, "skew " .. skew)
  end
end)

t.test("free space: warn under 1 GiB, fail under 100 MiB", function()
  local MiB, GiB = 1024 ^ 2, 1024 ^ 3
  t.eq(doctor.disk_status(0), "fail")
  t.eq(doctor.disk_status(100 * MiB - 1), "fail")
  t.eq(doctor.disk_status(100 * MiB), "warn")
  t.eq(doctor.disk_status(GiB - 1), "warn")
  t.eq(doctor.disk_status(GiB), "ok")
  t.eq(doctor.disk_status(500 * GiB), "ok")
end)

t.test("sys.free_space: bytes of the file system, or nil and why", function()
  local available, total = sys.free_space(t.tmpdir())
  t.eq(math.type(available), "integer", "available")
  t.eq(math.type(total), "integer", "total")
  t.ok(available >= 0 and total > 0 and available <= total,
       "0 <= available <= total: " .. available .. " " .. total)
  local none, err = sys.free_space(t.tmpdir() .. "/no/such/folder")
  t.eq(none, nil, "a missing folder")
  t.eq(err.code, "not_found")
  t.match(err.message, "cannot read the free space of")
  t.raises(function() sys.free_space() end, "string expected")
end)

t.test("doctor acts: it is not a read-only command", function()
  t.eq(doctor.read_only, false)
  t.eq(doctor.flags.profile, "value")
  t.eq(doctor.flags.json, "bool")
end)
