-- Workflows without a server: navette.sweep (the combinations of a
-- matrix with exclude and include, each job's name and params, the
-- refusals, a sweep through the runner on the fake backend) and `after`
-- (the producers' ids in the spec, by job or by name; refused when not
-- declared before or when the backend takes no dependencies).
local t = test
local here = debug.getinfo(1, "S").source:match("^@(.*)/[^/]*$") or "."
local fixtures = assert(loadfile(here .. "/fixtures.lua"))()
local backends = require "navette.backends"
local runner = require "navette.runner"
local sweep = require "navette.sweep"
local json = _navette.json

local function names(items)
  local out = {}
  for i, item in ipairs(items) do out[i] = item.suffix end
  return table.concat(out, " ")
end

local JOB = { name = "train", command = { "true" } }

t.test("the product, the last key fastest, keys sorted", function()
  local items = sweep.expand({ job = JOB,
                               matrix = { seed = { 1, 2, 3 },
                                          lr = { 1e-3, 3e-4 } } })
  t.eq(#items, 6)
  t.eq(names(items), "[lr=0.001,seed=1] [lr=0.001,seed=2] "
       .. "[lr=0.001,seed=3] [lr=0.0003,seed=1] [lr=0.0003,seed=2] "
       .. "[lr=0.0003,seed=3]")
  t.eq(items[5].params.lr, "0.0003")
  t.eq(items[5].decl.name, "train", "the job's own name: the runner adds "
       .. "the suffix")
  t.eq(JOB.env, nil, "the given job table is not changed")
end)

t.test("values: integers, floats, booleans, strings", function()
  local items = sweep.expand({ job = JOB, matrix = {
    a = { 2, 2.5, -1 }, b = { true }, c = { "resnet-50" } } })
  t.eq(names(items), "[a=2,b=true,c=resnet-50] [a=2.5,b=true,c=resnet-50] "
       .. "[a=-1,b=true,c=resnet-50]")
end)

t.test("1 and 1.0 are one value", function()
  t.raises(function()
    sweep.expand({ job = JOB, matrix = { a = { 1, 1.0 } } })
  end, "listed twice")
  local items = sweep.expand({ job = JOB, matrix = { a = { 1, 2 } },
                               exclude = { { a = 1.0 } } })
  t.eq(names(items), "[a=2]")
end)

t.test("exclude removes what matches every key it names", function()
  local items = sweep.expand({ job = JOB,
    matrix = { lr = { 1, 2 }, seed = { 1, 2, 3 } },
    exclude = { { lr = 2, seed = 3 }, { seed = 1 } } })
  t.eq(names(items), "[lr=1,seed=2] [lr=1,seed=3] [lr=2,seed=2]")
end)

t.test("include adds combinations, once", function()
  local items = sweep.expand({ job = JOB, matrix = { lr = { 1 }, seed = { 1 } },
    include = { { lr = 5, seed = 9 }, { lr = 1, seed = 1 } } })
  t.eq(names(items), "[lr=1,seed=1] [lr=5,seed=9]")
end)

t.test("what is refused, naming the key", function()
  local function refused(decl, pattern)
    t.raises(function() sweep.expand(decl) end, pattern)
  end
  refused({ job = JOB, matrix = { lr = { 1 } }, excluded = {} },
          "unknown key 'excluded'")
  refused({ matrix = { lr = { 1 } } }, "job must be")
  refused({ job = JOB, matrix = { lr = {} } }, "matrix.lr must be a non%-empty")
  refused({ job = JOB, matrix = { lr = { 1, x = 2 } } }, "must be a list")
  refused({ job = JOB, matrix = { ["1x"] = { 1 } } }, "not a parameter name")
  refused({ job = JOB, matrix = { lr = { 1 }, LR = { 2 } } },
          "same variable NAVETTE_PARAM_LR")
  refused({ job = JOB, matrix = { lr = { 0 / 0 } } }, "finite number")
  refused({ job = JOB, matrix = { lr = { 1 / 0 } } }, "finite number")
  refused({ job = JOB, matrix = { lr = { "a b" } } }, "not a value")
  refused({ job = JOB, matrix = { lr = { "a]" } } }, "not a value")
  refused({ job = JOB, matrix = { lr = { {} } } }, "found a table")
  refused({ job = JOB, matrix = { lr = { 1, 1 } } }, "listed twice")
  refused({ job = JOB, matrix = { lr = { 1 } }, exclude = { { seed = 1 } } },
          "'seed' is not a key of the matrix")
  refused({ job = JOB, matrix = { lr = { 1 }, s = { 1 } },
            include = { { lr = 2 } } }, "names no value for 's'")
  refused({ job = JOB, matrix = { lr = { 1 } }, exclude = { { lr = 1 } } },
          "every combination")
  local big = {}
  for i = 1, 101 do big[i] = i end
  refused({ job = JOB, matrix = { a = big, b = big } }, "more than 10000")
  -- a product of many keys that would wrap around a 64-bit integer
  local many = {}
  for i = 1, 64 do many["k" .. i] = { 1, 2 } end
  refused({ job = JOB, matrix = many }, "more than 10000")
  -- 10,000 jobs at most, counting what include adds: one new combination
  -- past a full matrix is refused; one already there, or one where
  -- exclude left room, is not
  local hundred = {}
  for i = 1, 100 do hundred[i] = i end
  refused({ job = JOB, matrix = { a = hundred, b = hundred },
            include = { { a = 101, b = 1 } } },
          "make 10001 jobs, more than 10000")
  refused({ job = JOB, matrix = { a = hundred, b = hundred },
            include = { { a = 101, b = 1 }, { a = 1, b = 1 }, { a = 102, b = 1 } } },
          "make 10002 jobs, more than 10000")
  t.eq(#sweep.expand({ job = JOB, matrix = { a = hundred, b = hundred },
                       include = { { a = 1, b = 1 } } }), 10000)
  t.eq(#sweep.expand({ job = JOB, matrix = { a = hundred, b = hundred },
                       exclude = { { a = 1, b = 1 } },
                       include = { { a = 101, b = 1 } } }), 10000)
end)

t.test("a sweep through the runner: names, env, params, launcher",
       function()
  local fake = fixtures.fake_backend()
  local dir = fixtures.repo(t, {
    ["navette.lua"] = fixtures.project(t),
    ["sweep.lua"] = [[
local navette = require "navette"
local jobs = navette.sweep {
  job = { name = "train", command = { "sh", "-c", "echo $NAVETTE_PARAM_LR" },
          env = { KEEP = "yes" } },
  matrix = { lr = { 0.1, 0.2 }, seed = { 1, 2, 3 } },
  exclude = { { lr = 0.2, seed = 3 } },
}
assert(#jobs == 5 and jobs[1].name == "train[lr=0.1,seed=1]")
assert(jobs[2].params.seed == "2")
assert(not pcall(function() jobs[1].name = "x" end), "sealed")
navette.job { name = "pick", command = { "true" } }
]],
  })
  local run, specs = runner.run(dir .. "/sweep.lua", {})
  t.eq(#run.jobs, 6)
  t.eq(#specs, 6)
  local s = specs[4]
  t.eq(s.name, "train[lr=0.2,seed=1]")
  t.eq(s.params.lr, "0.2")
  t.eq(s.params.seed, "1")
  t.eq(s.env.NAVETTE_PARAM_LR, nil, "the launcher sets the parameters")
  t.match(s.launcher, "NAVETTE_PARAM_LR='0.2'; export NAVETTE_PARAM_LR",
          "the launcher exports each parameter")
  t.match(s.launcher, "NAVETTE_PARAM_SEED='1'; export NAVETTE_PARAM_SEED")
  t.eq(s.env.KEEP, "yes", "the job's own env is kept")
  t.eq(specs[6].params, nil, "a plain job has no params")
  local submitted = 0
  for _, c in ipairs(fake.calls) do
    if c.what == "submit" then submitted = submitted + 1 end
  end
  t.eq(submitted, 6, "each job submitted once")
  t.eq(json.decode(json.encode(s)).params.seed, "1")
  backends.unregister("fake")
end)

t.test("a job's own env cannot set a parameter's variable", function()
  fixtures.fake_backend()
  local dir = fixtures.repo(t, {
    ["navette.lua"] = fixtures.project(t),
    ["own.lua"] = [[
local navette = require "navette"
navette.sweep { job = { name = "t", command = { "true" },
                        env = { NAVETTE_PARAM_A = "9" } },
                matrix = { a = { 1 } } }
]],
  })
  t.raises(function() runner.run(dir .. "/own.lua", {}) end,
           "env name 'NAVETTE_PARAM_A' is not allowed")
  backends.unregister("fake")
end)

t.test("a sweep's name taken by another job is refused before any is "
       .. "declared", function()
  fixtures.fake_backend()
  local dir = fixtures.repo(t, {
    ["navette.lua"] = fixtures.project(t),
    ["clash.lua"] = [[
local navette = require "navette"
navette.sweep { job = { name = "t", command = { "true" } },
                matrix = { a = { 1, 2 } } }
navette.sweep { job = { name = "t", command = { "true" } },
                matrix = { a = { 3, 1 } } }
]],
  })
  local fake = backends.get("fake")
  t.raises(function() runner.run(dir .. "/clash.lua", {}) end,
           "a job named 't%[a=1%]' is already declared")
  t.eq(#fake.calls, 0, "nothing submitted")
  backends.unregister("fake")
end)

t.test("after: the ids of the jobs declared before, in the spec", function()
  local fake = fixtures.fake_backend()
  local dir = fixtures.repo(t, {
    ["navette.lua"] = fixtures.project(t),
    ["graph.lua"] = [[
local navette = require "navette"
local parts = navette.sweep { job = { name = "part", command = { "true" } },
                              matrix = { n = { 1, 2 } } }
local prep = navette.job { name = "prep", command = { "true" } }
navette.job { name = "join", command = { "true" }, after = { parts, prep } }
navette.job { name = "last", command = { "true" }, after = { "join", prep } }
]],
  })
  local _, specs = runner.run(dir .. "/graph.lua", {})
  t.eq(#specs, 5)
  local id = {}
  for _, s in ipairs(specs) do id[s.name] = s.id end
  t.eq(specs[4].name, "join")
  t.eq(table.concat(specs[4].after, " "), id["part[n=1]"] .. " "
       .. id["part[n=2]"] .. " " .. id.prep, "a sweep's jobs and a job")
  t.eq(table.concat(specs[5].after, " "), id.join .. " " .. id.prep,
       "by name too, each once")
  t.eq(specs[1].after, nil, "a job without after has none")
  t.match(json.encode(specs[4]), '"after":%["', "a list in JSON")
  local _ = fake
  backends.unregister("fake")
end)

t.test("after: a job declared later, unknown names, cycles named, a "
       .. "backend without dependencies", function()
  local fake = fixtures.fake_backend()
  local dir = fixtures.repo(t, {
    ["navette.lua"] = fixtures.project(t),
    ["later.lua"] = [[
local navette = require "navette"
navette.job { name = "join", command = { "true" }, after = { "prep" } }
navette.job { name = "prep", command = { "true" } }
]],
    ["self.lua"] = [[
local navette = require "navette"
navette.job { name = "a", command = { "true" }, after = { "a" } }
]],
    ["cycle.lua"] = [[
local navette = require "navette"
navette.job { name = "a", command = { "true" }, after = { "c" } }
navette.job { name = "b", command = { "true" }, after = { "a" } }
navette.job { name = "c", command = { "true" }, after = { "b" } }
navette.job { name = "d", command = { "true" } }
]],
    ["unknown.lua"] = [[
local navette = require "navette"
navette.job { name = "a", command = { "true" }, after = { "z" } }
]],
    ["bad.lua"] = [[
local navette = require "navette"
navette.job { name = "a", command = { "true" }, after = { 42 } }
]],
    ["ok.lua"] = [[
local navette = require "navette"
local a = navette.job { name = "a", command = { "true" } }
navette.job { name = "b", command = { "true" }, after = { a } }
]],
  })
  local _, specs = runner.run(dir .. "/later.lua", {})
  t.eq(specs[1].name .. " " .. specs[2].name, "prep join",
       "a job goes after the jobs it runs after")
  t.eq(table.concat(specs[2].after, " "), specs[1].id)
  t.raises(function() runner.run(dir .. "/self.lua", {}) end,
           "form a cycle: a runs after a$")
  t.raises(function() runner.run(dir .. "/cycle.lua", {}) end,
           "form a cycle: a runs after c, which runs after b, which runs "
           .. "after a$")
  t.raises(function() runner.run(dir .. "/unknown.lua", {}) end,
           "job 'a' runs after 'z', which is not a job of this run")
  local calls = #fake.calls
  t.raises(function() runner.run(dir .. "/bad.lua", {}) end,
           "'after%[1%]' must be a job")
  fake.dependencies = nil
  t.raises(function() runner.run(dir .. "/ok.lua", {}) end,
           "after = {...} is not supported on the fake backend")
  t.eq(#fake.calls, calls, "nothing submitted after later.lua")
  backends.unregister("fake")
end)

t.test("job:output(path) as an input: where it will be, its record, and "
       .. "the producer in after", function()
  fixtures.fake_backend()
  local dir = fixtures.repo(t, {
    ["navette.lua"] = fixtures.project(t),
    ["flow.lua"] = [[
local navette = require "navette"
local train = navette.job { name = "train", command = { "true" } }
local parts = navette.sweep { job = { name = "part", command = { "true" } },
                              matrix = { n = { 1, 2 } } }
navette.job { name = "eval", command = { "true" },
  inputs = { model = train:output("model.pt"),
             second = parts[2]:output("out/part.json") } }
]],
    ["later.lua"] = [[
local navette = require "navette"
navette.job { name = "eval", command = { "true" },
  inputs = { model = { job = "train", output = "model.pt" } } }
navette.job { name = "train", command = { "true" } }
]],
    ["percent.lua"] = [[
local navette = require "navette"
local train = navette.job { name = "train", command = { "true" } }
navette.job { name = "eval", command = { "true" },
  inputs = { model = train:output("50%.txt") } }
]],
    ["escape.lua"] = [[
local navette = require "navette"
local train = navette.job { name = "train", command = { "true" } }
navette.job { name = "eval", command = { "true" },
  inputs = { model = train:output("../other/model.pt") } }
]],
  })
  local _, specs = runner.run(dir .. "/flow.lua", {})
  local eval = specs[4]
  t.eq(eval.name, "eval")
  t.eq(table.concat(eval.after, " "), specs[1].id .. " " .. specs[3].id,
       "the producers run before it")
  local by = {}
  for _, input in ipairs(eval.inputs) do by[input.name] = input end
  t.eq(by.model.from, specs[1].id)
  t.eq(by.model.output, "model.pt")
  t.eq(by.model.url, specs[1].outputs.url .. "model.pt")
  t.eq(by.model.record, specs[1].outputs.url .. "navette-run.json")
  t.eq(by.model.sha256, nil, "its sha256 comes from the record, later")
  t.eq(by.second.url, specs[3].outputs.url .. "out/part.json")
  local _, later = runner.run(dir .. "/later.lua", {})
  t.eq(later[2].name, "eval", "the producer named by a later job goes first")
  t.eq(later[2].inputs[1].from, later[1].id)
  t.raises(function() runner.run(dir .. "/escape.lua", {}) end,
           "'%.%.', '%.' and empty segments are not allowed")
  t.raises(function() runner.run(dir .. "/percent.lua", {}) end,
           "holds '%%', '#' or '%?'")
  backends.unregister("fake")
end)

t.test("navette.outputs: one input of a list of outputs, NAME/1...",
       function()
  fixtures.fake_backend()
  local dir = fixtures.repo(t, {
    ["navette.lua"] = fixtures.project(t),
    ["fan.lua"] = [[
local navette = require "navette"
local parts = navette.sweep { job = { name = "part", command = { "true" } },
                              matrix = { n = { 1, 2, 3 } } }
navette.job { name = "join", command = { "true" },
              inputs = { all = navette.outputs(parts, "p.json") } }
]],
    ["notjobs.lua"] = [[
local navette = require "navette"
navette.outputs({ "x" }, "p.json")
]],
  })
  local _, specs = runner.run(dir .. "/fan.lua", {})
  local join = specs[4]
  t.eq(#join.inputs, 3)
  for i = 1, 3 do
    t.eq(join.inputs[i].name, "all/" .. i)
    t.eq(join.inputs[i].from, specs[i].id)
    t.eq(join.inputs[i].url, specs[i].outputs.url .. "p.json")
  end
  t.eq(#join.after, 3, "it runs after each part")
  t.raises(function() runner.run(dir .. "/notjobs.lua", {}) end,
           "item 1 is not a job")
  backends.unregister("fake")
end)

t.test("retries and checkpoint: in the spec on a backend that has them, "
       .. "refused before anything is sent on one without", function()
  local fake = fixtures.fake_backend()
  local dir = fixtures.repo(t, {
    ["navette.lua"] = fixtures.project(t),
    ["retry.lua"] = [[
local navette = require "navette"
navette.job { name = "a", command = { "true" },
              retries = { max = 2, on = { "preempted", "exit:137" } } }
]],
    ["ckpt.lua"] = [[
local navette = require "navette"
navette.job { name = "a", command = { "true" }, checkpoint = { every = 60 } }
]],
  })
  t.raises(function() runner.run(dir .. "/retry.lua", {}) end,
           "retries = {...} is not supported on the fake backend yet")
  t.raises(function() runner.run(dir .. "/ckpt.lua", {}) end,
           "checkpoint = {...} is not supported on the fake backend yet")
  t.eq(#fake.calls, 0, "nothing submitted")
  fake.retries = function() return false, " with this store" end
  t.raises(function() runner.run(dir .. "/retry.lua", {}) end,
           "not supported on the fake backend with this store yet")
  fake.retries, fake.checkpoints = true, true
  local _, specs = runner.run(dir .. "/retry.lua", {})
  t.eq(specs[1].retries.max, 2)
  t.match(json.encode(specs[1].retries), '"on":%["preempted","exit:137"%]',
          "on, a list in JSON")
  t.eq(specs[1].checkpoint, nil, "no checkpoint unless declared")
  _, specs = runner.run(dir .. "/ckpt.lua", {})
  t.eq(specs[1].checkpoint.every, 60)
  fake.retries, fake.checkpoints = nil, nil
  backends.unregister("fake")
end)
