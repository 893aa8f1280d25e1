-- migrate's comparison of two runs' records (navette.cli.migrate
-- .compare_records): equal records hold; a different sha256, a declared
-- output missing on one side, an output only one side published, a side
-- that failed, a missing record or log, an output without a sha256 each
-- make it fail, with the row that says why.
local t = test
local migrate = require "navette.cli.migrate"

local A = string.rep("a", 64)
local B = string.rep("b", 64)
local C = string.rep("c", 64)

local spec = { success = { outputs = { "model.bin", "metrics.json" } } }

local function record(outputs, state)
  local list = {}
  for name, sum in pairs(outputs) do
    list[#list + 1] = { name = name, sha256 = sum, size = 3 }
  end
  table.sort(list, function(x, y) return x.name < y.name end)
  return { state = state or "succeeded", outputs = list }
end

local LOG = { size = 120 }

-- the verdict of the row named what
local function verdict(rows, what)
  for _, r in ipairs(rows) do
    if r[1] == what then return r[4] end
  end
  return nil
end

local function bad_rows(rows)
  local out = {}
  for _, r in ipairs(rows) do
    if r[4]:match("%u%u%u") then out[#out + 1] = r[1] .. ": " .. r[4] end
  end
  return table.concat(out, "; ")
end

t.test("equal records hold", function()
  local ok, rows = migrate.compare_records(spec,
    record({ ["model.bin"] = A, ["metrics.json"] = B }), LOG,
    record({ ["model.bin"] = A, ["metrics.json"] = B }), LOG)
  t.eq(ok, true, "equal records: " .. bad_rows(rows))
  t.eq(verdict(rows, "model.bin"), "sha256 equal")
  t.eq(verdict(rows, "state"), "both succeeded")
end)

t.test("a different sha256 fails", function()
  local ok, rows = migrate.compare_records(spec,
    record({ ["model.bin"] = A, ["metrics.json"] = B }), LOG,
    record({ ["model.bin"] = C, ["metrics.json"] = B }), LOG)
  t.eq(ok, false, "a sha256 differs")
  t.eq(verdict(rows, "model.bin"), "sha256 DIFFER")
  t.eq(verdict(rows, "metrics.json"), "sha256 equal")
end)

t.test("a declared output missing on one side fails", function()
  local ok, rows = migrate.compare_records(spec,
    record({ ["model.bin"] = A, ["metrics.json"] = B }), LOG,
    record({ ["model.bin"] = A }), LOG)
  t.eq(ok, false, "metrics.json missing after")
  t.eq(verdict(rows, "declared metrics.json"), "MISSING")
  t.eq(verdict(rows, "metrics.json"), "ONLY IN ONE")
  -- missing on both sides: equal, but not what the job declares
  ok, rows = migrate.compare_records(spec,
    record({ ["model.bin"] = A }), LOG, record({ ["model.bin"] = A }), LOG)
  t.eq(ok, false, "metrics.json missing on both sides")
  t.eq(verdict(rows, "declared metrics.json"), "MISSING")
end)

t.test("an extra output on one side fails", function()
  local ok, rows = migrate.compare_records(spec,
    record({ ["model.bin"] = A, ["metrics.json"] = B }), LOG,
    record({ ["model.bin"] = A, ["metrics.json"] = B, ["debug.txt"] = C }),
    LOG)
  t.eq(ok, false, "debug.txt only after")
  t.eq(verdict(rows, "debug.txt"), "ONLY IN ONE")
end)

t.test("one side failed fails, even with equal outputs", function()
  local ok, rows = migrate.compare_records(spec,
    record({ ["model.bin"] = A, ["metrics.json"] = B }), LOG,
    record({ ["model.bin"] = A, ["metrics.json"] = B }, "failed"), LOG)
  t.eq(ok, false, "the second run failed")
  t.eq(verdict(rows, "state"), "NOT BOTH SUCCEEDED")
end)

t.test("a missing record or log fails", function()
  local full = record({ ["model.bin"] = A, ["metrics.json"] = B })
  local ok, rows = migrate.compare_records(spec, full, LOG, nil, nil)
  t.eq(ok, false, "no record after")
  t.eq(verdict(rows, "run record"), "MISSING")
  ok, rows = migrate.compare_records(spec, full, LOG, full, nil)
  t.eq(ok, false, "no log after")
  t.eq(verdict(rows, "log"), "MISSING")
end)

t.test("outputs without a sha256 are never equal", function()
  local none = { state = "succeeded",
                 outputs = { { name = "model.bin" },
                             { name = "metrics.json", sha256 = B } } }
  local ok, rows = migrate.compare_records(spec, none, LOG, none, LOG)
  t.eq(ok, false, "no sha256 on either side")
  t.eq(verdict(rows, "model.bin"), "sha256 DIFFER")
  for _, r in ipairs(rows) do
    if r[1] == "model.bin" then t.eq(r[2], "no sha256", "shown as") end
  end
end)
