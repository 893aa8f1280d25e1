-- This repository's own commit passes navette's secret scan: the first
-- job of the README (recipes/first-job.lua) runs from this repository,
-- and a run refuses a commit that holds what looks like a secret. A test
-- that needs a secret-shaped value builds it in its temporary folder, or
-- its file is listed with a reason in .navette-secrets-allow.
local t = test
local here = debug.getinfo(1, "S").source:match("^@(.*)/[^/]*$") or "."
local root = _navette.sys.realpath(here .. "/../..")

t.test("this repository's HEAD passes its own secret scan", function()
  local repo = root and _navette.git.open(root)
  if not repo then
    t.skip("the sources are not a git clone: nothing to scan")
    return
  end
  local commit = assert(repo:head())
  local report, err = _navette.creds.scan_commit(root, commit)
  t.ok(report, "the scan ran: " .. tostring(err and err.message))
  local lines = {}
  for _, f in ipairs(report and report.findings or {}) do
    lines[#lines + 1] = f.path .. ":" .. f.line .. ": " .. f.reason
  end
  t.eq(table.concat(lines, "\n"), "", "findings in commit " .. commit)
end)
