-- This repository's own commit passes navette's secret scan: the first
-- job of the README (recipes/first-job.lua) runs from this repository,
-- and a run refuses a commit that holds what looks like a secret. And
-- with no allow-list: a project that brings this repository as a library
-- (README, Recipe catalogue) scans it so, as a library may not exempt
-- itself. A test that needs a secret-shaped value builds it at run time
-- (from parts, in its temporary folder), or keeps it in a form the scan
-- does not match (a fuzz input as NAME.hex, see tests/fuzz/replay.c).
local t = test
local here = debug.getinfo(1, "S").source:match("^@(.*)/[^/]*$") or "."
local root = _navette.sys.realpath(here .. "/../..")

local function scan_head(options)
  local repo = root and _navette.git.open(root)
  if not repo then
    t.skip("the sources are not a git clone: nothing to scan")
    return
  end
  local commit = assert(repo:head())
  local report, err = _navette.creds.scan_commit(root, commit, options)
  t.ok(report, "the scan ran: " .. tostring(err and err.message))
  local lines = {}
  for _, f in ipairs(report and report.findings or {}) do
    lines[#lines + 1] = f.path .. ":" .. f.line .. ": " .. f.reason
  end
  t.eq(table.concat(lines, "\n"), "", "findings in commit " .. commit)
end

t.test("this repository's HEAD passes its own secret scan", function()
  scan_head(nil)
end)

t.test("... and passes it as a library, with no allow-list", function()
  scan_head({ allowlist = false })
end)
