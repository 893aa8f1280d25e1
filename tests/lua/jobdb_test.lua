-- The job database handle (_navette.jobdb), in liolib's manner: opened
-- from a home, shown by __tostring, closed by close(), __close or the
-- collector; closing twice is harmless and a use after close raises.
local t = test
local jobdb, json, sys = _navette.jobdb, _navette.json, _navette.sys

t.test("a handle opens, records, reads and closes", function()
  local home = t.tmpdir()
  local db = assert(jobdb.open(home))
  t.eq(tostring(db), "jobdb (" .. home .. ")")
  t.ok(sys.stat(home .. "/jobs.db"), "the database is in the home")
  t.eq(db:submit("p-1-abc", "p", "prof", "x", '{"a":1}', "fake"), true)
  local row = json.decode(assert(db:get("p-1-abc")))
  t.eq(row.backend, "fake")
  t.eq(row.spec.a, 1)
  t.eq(row.state, "queued")
  t.eq(db:set_remote("p-1-abc", "r-9", "running"), true)
  t.eq(db:phase("p-1-abc", "running", 1000), true)
  t.eq(db:finish("p-1-abc", "failed", 3, { phase = "running",
                                           reason = "exit 3" }), true)
  row = json.decode(assert(db:get("p-1")))
  t.eq(row.id, "p-1-abc", "a unique prefix names the job")
  t.eq(row.state, "failed")
  t.eq(row.exit_code, 3)
  t.eq(row.remote_id, "r-9")
  t.eq(row.failure.reason, "exit 3")
  t.eq(#json.decode(assert(db:list(10))), 1)
  local none, err = db:get("q-2-def")
  t.eq(none, nil)
  t.eq(err.code, "not_found")
  db:close()
  t.eq(tostring(db), "jobdb (closed)")
  db:close() -- harmless
  t.raises(function() db:get("p-1-abc") end, "closed job database")
end)

t.test("a to-be-closed handle is closed at the end of its scope", function()
  local home = t.tmpdir()
  local kept
  do
    local db <close> = assert(jobdb.open(home))
    kept = db
    t.eq(db:submit("p-1-abc", "p", "prof", "x", "{}", "fake"), true)
  end
  t.eq(tostring(kept), "jobdb (closed)")
  -- what it wrote is there for the next handle
  local db <close> = assert(jobdb.open(home))
  t.eq(json.decode(assert(db:get("p-1-abc"))).name, "x")
end)

t.test("an interrupted submission is found by its key", function()
  local db <close> = assert(jobdb.open(t.tmpdir()))
  t.eq(db:interrupted("k1"), false, "none yet")
  t.eq(db:submit("p-1-abc", "p", "prof", "x", "{}", "fake", "k1"), true)
  t.eq(json.decode(assert(db:interrupted("k1"))).id, "p-1-abc")
  t.eq(db:submitted("p-1-abc"), true)
  t.eq(db:interrupted("k1"), false, "complete: never resumed")
  t.eq(#json.decode(assert(db:pending_remote("fake", "prof", "x"))), 1,
       "no remote id yet: pending")
end)

t.test("a home that cannot hold a database is an error value", function()
  local dir = t.tmpdir()
  assert(sys.write_file(dir .. "/file", "x"))
  local db, err = jobdb.open(dir .. "/file")
  t.eq(db, nil)
  t.eq(type(err), "table")
  t.ok(err.message ~= "", "says why")
  t.raises(function() jobdb.open("a\0b") end, "holds a NUL")
end)

t.test("a transaction: its writes all kept, or none when it raises",
       function()
  local home = t.tmpdir()
  local db <close> = assert(jobdb.open(home))
  t.eq(db:transaction(function()
    t.eq(db:submit("p-1-aaa", "p", "prof", "a", '{}', "fake"), true)
    t.eq(db:submit("p-1-bbb", "p", "prof", "b", '{}', "fake"), true)
    return 7
  end), 7)
  t.eq(#json.decode(assert(db:list(10))), 2, "both rows kept")
  t.raises(function()
    db:transaction(function()
      db:submit("p-1-ccc", "p", "prof", "c", '{}', "fake")
      db:set_remote("p-1-aaa", "12_0", "running")
      error("stopped part way")
    end)
  end, "stopped part way")
  t.eq(#json.decode(assert(db:list(10))), 2, "the third row undone")
  t.eq(json.decode(assert(db:get("p-1-aaa"))).remote_id, json.null,
       "and the change to the first")
  -- the handle takes writes again, one by one
  t.eq(db:submit("p-1-ddd", "p", "prof", "d", '{}', "fake"), true)
  t.eq(#json.decode(assert(db:list(10))), 3)
end)
