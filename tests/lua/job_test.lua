-- navette.job validation and job ids.
local t = test
local job = require "navette.job"

local function valid(extra)
  local spec = { name = "train", command = { "python", "train.py" } }
  for k, v in pairs(extra or {}) do spec[k] = v end
  return spec
end

t.test("a minimal job gets its defaults", function()
  local j = job.validate(valid())
  t.eq(j.code, "HEAD", "code")
  t.eq(j.outputs, "{project}/{id}/", "outputs")
  t.eq(j.success.exit_codes[1], 0, "exit code")
  t.eq(#j.success.outputs, 0, "required outputs")
  t.eq(j.image, nil, "image")
end)

t.test("an unknown key is named, with a suggestion", function()
  t.raises(function() job.validate(valid({ comand = { "x" } })) end,
           "unknown key 'comand' in navette.job %(did you mean 'command'%?%)")
end)

t.test("missing required fields are named", function()
  t.raises(function() job.validate({ command = { "x" } }) end,
           "'name' is required")
  t.raises(function() job.validate({ name = "a" }) end,
           "'command' is required")
end)

t.test("wrong types are named", function()
  t.raises(function() job.validate(valid({ command = "echo hi" })) end,
           "'command' must be a table, got a string")
  t.raises(function() job.validate(valid({ name = 3 })) end,
           "'name' must be a string, got a number")
  t.raises(function() job.validate(valid({ command = { "a", 2 } })) end,
           "'command%[2%]' must be a string")
  t.raises(function() job.validate(valid({ resources = { cpus = "two" } }))
           end, "resources.cpus")
  t.raises(function() job.validate(valid({ resources = { gpu = 1 } })) end,
           "unknown key 'gpu' in resources %(did you mean 'gpus'%?%)")
end)

t.test("output prefixes cannot escape", function()
  for _, bad in ipairs({ "../escape/", "a/../../b/", "/abs/", "a//b/",
                         "./x/", "a\\b/" }) do
    t.raises(function() job.validate(valid({ outputs = bad })) end,
             "outputs")
  end
  t.raises(function()
    job.validate(valid({ success = { outputs = { "../x.txt" } } }))
  end, "success.outputs")
  t.eq(job.validate(valid({ outputs = "results/{id}" })).outputs,
       "results/{id}/")
end)

t.test("env names reserved by navette are refused", function()
  for _, name in ipairs({ "NAVETTE_JOB_ID", "PATH", "HOME", "1X", "A-B" }) do
    t.raises(function() job.validate(valid({ env = { [name] = "v" } })) end,
             "env name")
  end
  -- names the shell or the loader give a meaning to, each named with why
  for _, name in ipairs({ "OPTIND", "IFS", "PS4", "ENV", "BASH_ENV",
                          "LD_PRELOAD", "DYLD_LIBRARY_PATH",
                          "GLIBC_TUNABLES", "MALLOC_ARENA_MAX" }) do
    t.raises(function() job.validate(valid({ env = { [name] = "v" } })) end,
             "env name '" .. name .. "' is not allowed: ")
  end
  t.raises(function() job.validate(valid({ env = { OPTIND = "1" } })) end,
           "shell")
  local j = job.validate(valid({ env = { EPOCHS = 3, DEBUG = true } }))
  t.eq(j.env.EPOCHS, "3")
  t.eq(j.env.DEBUG, "true")
end)

t.test("durations and sizes are parsed", function()
  local j = job.validate(valid({ resources = { time_limit = "30m",
                                               memory = "2GiB" } }))
  t.eq(j.resources.time_limit, 1800)
  t.eq(j.resources.memory, 2 * 1024 * 1024 * 1024)
  t.raises(function()
    job.validate(valid({ resources = { time_limit = "soon" } }))
  end, "time_limit")
  t.raises(function()
    job.validate(valid({ resources = { memory = "lots" } }))
  end, "memory")
end)

-- found by fuzz_job_spec: each was accepted, then failed or changed on its
-- way to JSON and the launcher
t.test("numbers JSON or C cannot hold are refused", function()
  for _, resources in ipairs({ { cpus = math.huge }, { cpus = 0 / 0 },
                               { cpus = 2 ^ 40 }, { gpus = math.maxinteger },
                               { memory = 2 ^ 63 }, { memory = 1e300 },
                               { memory = "9999999TiB" },
                               { time_limit = math.huge },
                               { time_limit = "1e300" } }) do
    local key = next(resources)
    t.raises(function() job.validate(valid({ resources = resources })) end,
             "resources%." .. key)
  end
  t.raises(function() job.validate(valid({ logs = { max_bytes = 2 ^ 63 } }))
  end, "logs%.max_bytes")
  local j = job.validate(valid({ resources = { memory = 2 ^ 53, cpus = 0.5 },
                                 logs = { max_bytes = "8MiB" } }))
  t.eq(math.type(j.resources.memory), "integer", "a size is an integer")
  t.eq(j.logs.max_bytes, 8 * 1024 * 1024)
end)

t.test("a NUL or bytes that are not UTF-8 are refused, naming the key",
       function()
  local cases = {
    { { command = { "echo", "a\0b" } }, "'command%[2%]' holds a NUL" },
    { { command = { "\xff\xfe" } }, "'command%[1%]' holds bytes that are "
                                       .. "not UTF%-8" },
    { { code = "HEAD\0x" }, "'code' holds a NUL" },
    { { env = { A = "x\0y" } }, "'env%.A' holds a NUL" },
    { { failure = { hint = "\xc3" } }, "'failure%.hint' holds bytes" },
    { { failure = { log_patterns = { "\xed\xa0\x80" } } },
      "'failure%.log_patterns%[1%]' holds bytes" },
    { { image = "img:\0" }, "'image' holds a NUL" },
    { { inputs = { d = "s3://b/\xff" } }, "'inputs%.d' holds bytes" },
  }
  for _, c in ipairs(cases) do
    t.raises(function() job.validate(valid(c[1])) end, c[2])
  end
  local j = job.validate(valid({ command = { "echo", "héllo ✓" } }))
  t.eq(j.command[2], "héllo ✓", "UTF-8 text passes unchanged")
end)

t.test("inputs must be storage URLs", function()
  t.raises(function()
    job.validate(valid({ inputs = { data = "/etc/passwd" } }))
  end, "not a storage URL")
  t.raises(function() job.validate(valid({ inputs = { [".x"] = "s3://b/k" } }))
  end, "input names")
  local j = job.validate(valid({ inputs = { d = { url = "file:///s/k" } } }))
  t.eq(j.inputs.d, "file:///s/k")
end)

-- The random part has five base-36 digits (about 60 million values): two
-- of 300 draws in one second are the same about once in 1,300 runs, which
-- the runner answers by drawing again (test_boundaries: "a taken id").
-- So the draws are distinct but for at most one repeat.
t.test("job ids are DNS-1123 labels, distinct within one second", function()
  local seen, repeats = {}, 0
  local long = string.rep("very-long-project-name-", 5)
  for i = 1, 300 do
    local project = i % 2 == 0 and "navette" or long
    local id = job.new_id(project, "0123456789abcdef0123456789abcdef01234567")
    t.ok(#id <= 63, "at most 63 characters: " .. id)
    t.ok(job.is_valid_id(id), "DNS-1123: " .. id)
    t.ok(id:match("%-[0-9a-z][0-9a-z][0-9a-z][0-9a-z][0-9a-z][0-9a-z]%-"
                  .. "[0-9a-z][0-9a-z][0-9a-z][0-9a-z][0-9a-z]$"),
         "ends in -<time6>-<random5>: " .. id)
    if seen[id] then repeats = repeats + 1 end
    seen[id] = true
  end
  t.ok(repeats <= 1, "distinct but for one repeat at most: " .. repeats)
end)

t.test("job ids sort by the second they were drawn", function()
  local sys, real = _navette.sys, _navette.sys.now
  local ids = {}
  -- seconds across digit carries of the base-36 time (36, 36^2, ...)
  local times = { 1577836800, 1577836835, 1577836836, 1577838095,
                  1577838096, 1800000000, 1800000000.9, 1800000001,
                  3000000000 }
  for i, at in ipairs(times) do
    sys.now = function() return at end
    ids[i] = job.new_id("proj")
  end
  sys.now = real
  for i = 2, #ids do
    t.ok(ids[i - 1]:sub(1, 11) <= ids[i]:sub(1, 11),
         ids[i - 1] .. " sorts before " .. ids[i])
  end
  t.eq(ids[6]:sub(1, 11), ids[7]:sub(1, 11))
  t.ok(ids[7]:sub(1, 11) < ids[8]:sub(1, 11), "the next second sorts after")
end)

-- (the mutation experiment of issue 11: dropping this check in
-- check_env passed every other test)
t.test("an env value that looks like a secret is refused, naming the key",
       function()
  -- token shapes made here, never whole in the file
  local alnum = "ABCDEFGHIJKLMNOPQRSTUVWYZabcdefghijklmnopqrstuvwyz0123456789"
  local function run(n, seed)
    local out = {}
    for i = 1, n do
      local k = (seed * 31 + i * 17) % #alnum + 1
      out[i] = alnum:sub(k, k)
    end
    return table.concat(out)
  end
  for _, value in ipairs({ "ghp_" .. run(36, 1), "glpat-" .. run(20, 2),
                           "xoxb-" .. run(24, 3),
                           "AKIA" .. run(16, 4):upper():gsub("[^A-Z0-9]",
                                                             "Q") }) do
    t.raises(function()
      job.validate(valid({ env = { TOKEN_HOLDER = value } }))
    end, "env 'TOKEN_HOLDER' holds what looks like a secret")
  end
  -- a plain value of the same length passes
  local j = job.validate(valid({ env = { TOKEN_HOLDER = run(40, 5) } }))
  t.eq(#j.env.TOKEN_HOLDER, 40)
end)

t.test("retries name their failures; checkpoint its interval", function()
  local j = job.validate(valid({
    retries = { max = 2, on = { "node_fail", "preempted", "timeout",
                                "exit:137" } },
    checkpoint = { every = "5m" } }))
  t.eq(j.retries.max, 2, "max")
  t.eq(table.concat(j.retries.on, ","),
       "node_fail,preempted,timeout,exit:137", "on")
  t.eq(j.checkpoint.every, 300, "every")
  local d = job.validate(valid({ retries = { on = { "preempted" } },
                                 checkpoint = {} }))
  t.eq(d.retries.max, 1, "max defaults to 1")
  t.eq(d.checkpoint.every, 300, "every defaults to 5 minutes")
  local none = job.validate(valid())
  t.eq(none.retries, nil, "no retries unless given")
  t.eq(none.checkpoint, nil, "no checkpoint unless given")
end)

t.test("a failure kind retries does not know is named, with the kinds",
       function()
  for _, bad in ipairs({ "oom", "exit:0", "exit:256", "exit:", "Exit:1",
                         "exit:1x" }) do
    t.raises(function()
      job.validate(valid({ retries = { on = { "timeout", bad } } }))
    end, "'retries.on%[2%]' = '" .. bad:gsub("%p", "%%%0")
         .. "' is not a failure navette retries")
  end
  local err = t.raises(function()
    job.validate(valid({ retries = { on = { "x" } } }))
  end)
  t.match(err.hint, "node_fail, preempted, timeout, exit:N", "hint")
  t.raises(function() job.validate(valid({ retries = { max = 2 } })) end,
           "'retries.on' is required")
  t.raises(function() job.validate(valid({ retries = { on = {} } })) end,
           "'retries.on' is required")
  for _, m in ipairs({ 0, -1, 1.5, 101, "2" }) do
    t.raises(function()
      job.validate(valid({ retries = { max = m, on = { "timeout" } } }))
    end, "'retries.max' must be a whole number from 1 to 100")
  end
  t.raises(function()
    job.validate(valid({ retries = { tries = 2, on = { "timeout" } } }))
  end, "unknown key 'tries' in retries")
  for _, e in ipairs({ "soon", 0, 0.5, "0s" }) do
    t.raises(function() job.validate(valid({ checkpoint = { every = e } }))
             end, "'checkpoint.every' = .* is not a duration")
  end
end)
