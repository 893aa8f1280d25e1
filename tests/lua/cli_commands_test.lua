-- The command line's rooms (lua/navette/cli/): every listed command is a
-- file with the same shape, its flags table is the very one its run hands
-- to the parser (what completion writes), the names that are not
-- commands are not found as ones, nothing but the dispatcher requires
-- the dispatcher back, and a backend's commands (backends/init.lua:
-- commands) are found from the backends, listed by help and completed.
local t = test
local common = require "navette.cli.common"
local args = require "navette.args"
local util = require "navette.util"

local function each_command(fn)
  local names = common.names()
  names[#names + 1] = "help"
  for _, name in ipairs(names) do fn(name, common.command(name)) end
end

t.test("every command has the same shape", function()
  each_command(function(name, c)
    t.eq(type(c), "table", name)
    t.eq(c.name, name)
    local synopsis = "usage: navette " .. name
    t.eq(c.usage:sub(1, #synopsis), synopsis, name .. ": usage")
    t.ok(c.usage:sub(#synopsis + 1):match("^[ \n]"), name .. ": usage")
    t.ok(type(c.summary) == "table" and #c.summary >= 1, name .. ": summary")
    for _, line in ipairs(c.summary) do
      t.ok(line[1]:sub(1, #name) == name and type(line[2]) == "string",
           name .. ": a summary line is {synopsis, what}")
    end
    t.eq(type(c.flags), "table", name .. ": flags")
    t.ok(type(c.read_only) == "boolean" or type(c.read_only) == "table",
         name .. ": read_only")
    -- agent is run by the host before Lua starts
    t.eq(type(c.run), name == "agent" and "nil" or "function", name)
  end)
end)

t.test("a command's flags are what its run parses", function()
  each_command(function(name, c)
    if c.run and name ~= "help" and name ~= "storage" and name ~= "image"
       and name ~= "completion" then
      -- creds and audit parse their flags before the verb
      local parsed = args.flags_of(function() c.run({}) end)
      t.ok(rawequal(parsed, c.flags), name .. ": parses its flags table")
    end
  end)
  local completion = common.command("completion")
  t.ok(rawequal(args.flags_of(function() completion.run({ "bash" }) end),
                completion.flags), "completion parses its flags table")
end)

t.test("only listed names are commands", function()
  for _, name in ipairs({ "common", "init", "subcommand", "cli", "",
                          "../cli", "nope" }) do
    t.eq(common.command(name), nil, name)
  end
end)

t.test("read-only commands are the documented ones", function()
  local forbidden = {}
  each_command(function(name, c)
    if c.read_only == true then
      forbidden[#forbidden + 1] = name
    elseif type(c.read_only) == "table" then
      for verb in pairs(c.read_only) do
        forbidden[#forbidden + 1] = name .. " " .. verb
      end
    end
  end)
  table.sort(forbidden)
  t.eq(table.concat(forbidden, ", "), "audit show, audit verify, "
       .. "completion, creds list, definitions, help, plan, trust, version")
end)

t.test("no module but the dispatcher requires navette.cli", function()
  local here = debug.getinfo(1, "S").source:gsub("^@", "")
  local root = util.join(util.dirname(util.dirname(util.dirname(here))),
                         "lua")
  local sys = _navette.sys
  local seen = 0
  local function walk(dir)
    for _, entry in ipairs(assert(sys.listdir(dir))) do
      local path = util.join(dir, entry)
      if entry:match("%.lua$") then
        local f = assert(io.open(path, "rb"))
        local text = f:read("a")
        f:close()
        seen = seen + 1
        local found = text:match("require[%s%(]*[\"']navette%.cli[\"']")
        t.ok(not found or path:match("/cli/init%.lua$"),
             path .. " requires the dispatcher")
      elseif not entry:match("^%.") and sys.stat(path)
             and sys.stat(path).type == "directory" then
        walk(path)
      end
    end
  end
  walk(root)
  t.ok(seen > 20, "the library's files were read (" .. seen .. ")")
end)

t.test("a command's usage names every flag it takes", function()
  each_command(function(name, c)
    -- (storage and image name their verbs' and shared options in
    -- `navette storage --help`, made by navette.cli.subcommand)
    local flags = (name == "storage" or name == "image") and {} or c.flags
    for flag in pairs(flags) do
      -- (a flag of one letter is an alias, named with its long form)
      if #flag > 1 and flag ~= "help" then
        t.ok(c.usage:find("%-%-" .. flag:gsub("%-", "%%-") .. "%f[^%w-]"),
             name .. ": its usage names --" .. flag)
      end
    end
  end)
end)

t.test("the backends' commands are found from the backends", function()
  local backends = require "navette.backends"
  local names = common.names()
  t.eq(table.concat(names, " ", #common.ORDER + 1), "ssh",
       "after navette's own: the folder's backends' (slurm_ssh: ssh)")
  t.eq(common.command("ssh").backend, "slurm_ssh")
  local ran
  backends.register { name = "toyq", submit = function() end,
    commands = { toyq = {
      summary = { { "toyq hello NAME", "says hello" } },
      usage = "usage: navette toyq hello NAME [--loud]\n"
        .. "  Says hello.\n  --loud   louder",
      flags = { loud = "bool" },
      run = function(args, ctx)
        ran = { args = args, loud = ctx.opts.loud, backend = ctx.backend }
        return 7
      end } } }
  local ok, err = pcall(function()
    local c = common.command("toyq")
    t.ok(c ~= nil, "a registered backend's command is a command")
    t.eq(c.run({ "hello", "ann", "--loud" }), 7, "its run's status")
    t.eq(table.concat(ran.args, " "), "hello ann", "the words after it")
    t.eq(ran.loud, true, "its flags parsed")
    t.eq(ran.backend, "toyq", "ctx names its backend")
    t.eq(c.run({}), 2, "no verb: its usage, status 2")
    local e = t.raises(function() c.run({ "hello", "--nope" }) end,
                       "--nope")
    t.match(e.hint, "navette toyq %-%-help", "a usage error's hint")
    local help = require "navette.cli.help"
    local printed = {}
    local term = require "navette.term"
    local saved = term.print
    term.print = function(x) printed[#printed + 1] = x end
    local okh = pcall(help.run, {})
    term.print = saved
    t.ok(okh, "help runs")
    t.match(table.concat(printed, "\n"), "navette toyq hello NAME +says "
            .. "hello", "help lists it")
    local model = require("navette.cli.completion").model()
    local found
    for _, m in ipairs(model.commands) do
      if m.name == "toyq" then found = m end
    end
    t.ok(found and found.verbs and found.verbs[1].name == "hello",
         "completion completes it and its verb")
  end)
  backends.unregister("toyq")
  if not ok then error(err, 0) end
  backends.register { name = "clash", submit = function() end,
    commands = { run = { summary = {}, usage = "", run = function() end } } }
  local okc, e = pcall(common.names)
  backends.unregister("clash")
  t.ok(not okc and tostring(e.message):match("already a command"),
       "a backend's word that is already a command is a bug")
  t.eq(common.command("toyq"), nil, "gone with its backend")
end)
