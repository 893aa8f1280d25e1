-- The re-test's comparison of a node's run record with its baseline
-- (navette.retest.compare): the same record holds; a failed state, a
-- phase no longer reached, an output missing or with another sha256 is a
-- regression; a changed fingerprint (driver, kernel, image) is shown and
-- does not decide; without a baseline only the state counts.
local t = test
local retest = require "navette.retest"

local A = string.rep("a", 64)
local B = string.rep("b", 64)

local function record(changes)
  local r = {
    id = "fleet-1", state = "succeeded", image = "host",
    phases = { { phase = "submitted" }, { phase = "running" },
               { phase = "outputs_published" }, { phase = "succeeded" } },
    outputs = { { name = "smoke.txt", sha256 = A } },
    node = { host = "gpu-a", kernel = "6.1.0-18",
             gpus = { { name = "A100", driver = "550.54" } } },
  }
  if changes then changes(r) end
  return r
end

local function verdicts(rows)
  local out = {}
  for _, r in ipairs(rows) do out[r.what] = r.verdict end
  return out
end

t.test("the same record holds", function()
  local regressed, rows = retest.compare(record(), record())
  t.eq(regressed, false)
  t.eq(verdicts(rows)["output smoke.txt"], "same")
  t.eq(verdicts(rows)["node kernel"], "same")
end)

t.test("a changed output is a regression", function()
  local regressed, rows = retest.compare(record(), record(function(r)
    r.outputs[1].sha256 = B
  end))
  t.eq(regressed, true)
  t.eq(verdicts(rows)["output smoke.txt"], "REGRESSION: sha256 differs")
end)

t.test("a missing output, a failed state, a phase not reached", function()
  local regressed, rows = retest.compare(record(), record(function(r)
    r.outputs = {}
  end))
  t.eq(regressed, true)
  t.eq(verdicts(rows)["output smoke.txt"], "REGRESSION")
  regressed, rows = retest.compare(record(), record(function(r)
    r.state = "failed"
  end))
  t.eq(regressed, true)
  t.eq(verdicts(rows).state, "REGRESSION")
  regressed, rows = retest.compare(record(), record(function(r)
    table.remove(r.phases, 3)
  end))
  t.eq(regressed, true)
  t.eq(verdicts(rows)["phase outputs_published"], "REGRESSION")
end)

t.test("a changed fingerprint is shown, not a regression", function()
  local regressed, rows = retest.compare(record(), record(function(r)
    r.node.gpus[1].driver = "555.10"
    r.image = "registry/x@sha256:" .. B
  end))
  t.eq(regressed, false)
  t.eq(verdicts(rows)["node driver"], "changed")
  t.eq(verdicts(rows)["node image"], "changed")
end)

t.test("without a baseline only the state counts; no record fails", function()
  local regressed, rows = retest.compare(nil, record())
  t.eq(regressed, false)
  t.eq(#rows, 1)
  regressed = retest.compare(record(), nil)
  t.eq(regressed, true)
end)
