-- What navette.storage.put lets leave the laptop (review L8, M1): a file
-- of the repository that git tracks, or that is untracked but not
-- ignored, is scanned and uploaded; one git ignores (never committed nor
-- scanned with the commit) is refused, saying to commit it or declare a
-- dataset. A dataset is scanned like a repository file, and never read
-- from the system's or the user's credential folders, after symlinks,
-- whatever navette.lua says. What a recipe learns of a path it may not
-- upload is one answer, whether the file exists or not: a pcall is no
-- oracle of the machine's files.
local t = test
local sys = _navette.sys
local core = _navette.core
local storage = require "navette.storage"
local fixtures = assert(loadfile(
  (debug.getinfo(1, "S").source:match("^@(.*)/[^/]*$") or ".")
  .. "/fixtures.lua"))()

local function sh(command)
  assert(os.execute(command .. " >/dev/null 2>&1"), command)
end

-- an AWS key id made here, never whole in this file
local function key_id()
  local alnum = "ABCDEFGHIJKLMNOPQRSTUVWYZ234567"
  local out = {}
  for i = 1, 16 do
    local k = (i * 7 + 3) % #alnum + 1
    out[i] = alnum:sub(k, k)
  end
  return "AK" .. "IA" .. table.concat(out)
end

-- A repository (data/ and *.bin ignored) as the run's, a file:// store,
-- and the datasets given.
local function setup(datasets)
  local R = fixtures.repo(t, { [".gitignore"] = "data/\n*.bin\n",
                               ["a.txt"] = "tracked\n" })
  R = sys.realpath(R)
  sh("mkdir -p '" .. R .. "/data'")
  assert(sys.write_file(R .. "/data/train.csv", "x,y\n1,2\n"))
  assert(sys.write_file(R .. "/w.bin", "weights"))
  assert(sys.write_file(R .. "/new.txt", "untracked\n"))
  local root = "file://" .. t.tmpdir() .. "/store"
  assert(_navette.storage.open(root, true)):close()
  require("navette.context").enter({ profile = { name = "t", storage = root },
                         repo_root = R, recipe_dir = R, planned = {},
                         datasets = datasets or {} })
  return R
end

local function refused(fn, pattern)
  local e = t.raises(fn, pattern)
  t.eq(e.code, "refused", pattern)
  return e
end

t.test("a file git ignores is refused; tracked and untracked ones go",
       function()
  local R = setup()
  for _, p in ipairs({ "data/train.csv", "w.bin", R .. "/data/train.csv",
                       "./data/../data/train.csv" }) do
    local e = refused(function() storage.put("k/x", p) end,
                      "is ignored by git: it was never committed nor scanned")
    t.match(e.hint, "commit it %(git add %-f%), or declare it as a dataset")
  end
  t.eq(storage.head("k/x"), nil, "nothing uploaded")
  t.eq(storage.put("k/a", "a.txt").size, 8)
  t.eq(storage.put("k/n", "new.txt").size, 10)
  -- committed with git add -f: tracked, uploaded
  sh("cd '" .. R .. "' && git add -f w.bin && git -c user.name=t -c "
     .. "user.email=t@example.invalid commit -qm w")
  t.eq(storage.put("k/w", "w.bin").size, 7)
  -- an untracked file is scanned as today
  assert(sys.write_file(R .. "/leak.txt", "aws_access_key_id = " .. key_id()
                        .. "\n"))
  refused(function() storage.put("k/l", "leak.txt") end,
          "holds what looks like secrets")
end)

t.test("outside the repository: one answer, whether the file exists or not",
       function()
  local R = setup()
  local here = t.tmpdir()
  assert(sys.write_file(here .. "/there", "x"))
  local function answer(p)
    local e = t.raises(function() storage.put("k/x", p) end)
    t.eq(e.code, "refused", p)
    return (e.message:gsub("'[^']*'", "'P'")), e.hint
  end
  local up = string.rep("../", 12)
  local m1, h1 = answer(up .. here:sub(2) .. "/there")
  local m2, h2 = answer(up .. here:sub(2) .. "/missing")
  t.eq(m1, m2)
  t.eq(h1, h2)
  t.match(m1, "is outside the repository")
  -- symlinks of the repository to a file that exists and one that does not
  sh("ln -s '" .. here .. "/there' '" .. R .. "/l1' && ln -s '" .. here
     .. "/missing' '" .. R .. "/l2'")
  local s1, k1 = answer("l1")
  local s2, k2 = answer("l2")
  t.eq(s1, s2)
  t.eq(k1, k2)
  t.eq(s2, (answer("no-such-file")))
  t.match(s1, "is not a file of the repository")
end)

t.test("datasets: scanned, and never from system or credential folders",
       function()
  local dir = t.tmpdir()
  assert(sys.write_file(dir .. "/digits.csv", "1,2,3\n"))
  assert(sys.write_file(dir .. "/keys.csv", "id,secret\n" .. key_id()
                        .. ",x\n"))
  local home = core.home()
  sys.mkdir_p(home, 448)
  assert(sys.write_file(home .. "/stolen", "x"))
  sh("ln -s /etc/hostname '" .. dir .. "/innocent.csv'")
  sh("ln -s '" .. home .. "' '" .. dir .. "/nv'")
  setup({
    digits = { dir .. "/none.csv", dir .. "/digits.csv" },
    keys = { dir .. "/keys.csv" },
    environ = { "/proc/self/environ" },
    host = { "/etc/hostname" },
    host_case = { "/ETC/hostname" },
    host_dots = { dir .. "/../../../../../../etc/hostname" },
    linked = { dir .. "/innocent.csv" },
    navette = { home .. "/stolen" },
    navette_linked = { dir .. "/nv/stolen" },
    proc = { "/proc/version" },
    missing = { dir .. "/missing.csv" },
  })
  -- the first path that is a file, scanned, uploaded
  local info = storage.put("d/digits.csv", { dataset = "digits" })
  t.eq(info.size, 6)
  refused(function() storage.put("d/k", { dataset = "keys" }) end,
          "holds what looks like secrets")
  -- refused and missing: the same answer, the path list apart
  local function answer(name)
    local e = t.raises(function() storage.put("d/x", { dataset = name }) end)
    t.eq(e.code, "refused", name)
    return (e.message:gsub("%b()", "(PATHS)"):gsub("'[^']*'", "'N'")), e.hint
  end
  local want, want_hint = answer("missing")
  for _, name in ipairs({ "environ", "host", "host_case", "host_dots",
                          "linked", "navette", "navette_linked", "proc" }) do
    local m, h = answer(name)
    t.eq(m, want, name)
    t.eq(h:gsub("datasets%.[%w_]+", "datasets.N"),
         (want_hint:gsub("datasets%.[%w_]+", "datasets.N")), name)
  end
  t.eq(storage.head("d/x"), nil, "nothing uploaded")
  t.match(want, "none of its paths is a file navette uploads")
  -- plan mode: the same refusals, nothing recorded as uploaded
  core.set_plan(true)
  local ok, e = pcall(storage.put, "d/e", { dataset = "environ" })
  core.set_plan(false)
  t.ok(not ok and e.code == "refused", "plan refuses it too")
end)

t.test("an undeclared dataset's hint is Lua that loads", function()
  setup({ digits = { "/nonexistent/digits.csv" } })
  for _, name in ipairs({ "skimage-astronaut", "local", "2024", "plain" }) do
    local e = t.raises(function()
      storage.put("d/x", { dataset = name })
    end)
    local example = e.hint:match("datasets = (%b{})")
    t.ok(example, name .. ": an example in " .. tostring(e.hint))
    local text = "return " .. example:gsub("%.%.%.", "")
    local f, err = load(text, "=hint", "t", {})
    t.ok(f, name .. ": " .. text .. ": " .. tostring(err))
    t.ok(f and f()[name] ~= nil, name .. ": the key is the dataset's name")
  end
end)
