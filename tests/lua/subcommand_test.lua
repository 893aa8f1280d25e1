-- navette.cli.subcommand: the main, help and flags that `navette storage`
-- and `navette image` share.
local t = test
local subcommand = require "navette.cli.subcommand"

local function demo()
  local ran = {}
  local cmd = subcommand.new {
    name = "demo", verbs = { "push", "pull" },
    help = { push = "usage: navette demo push SRC [--force]\n  Pushes.",
             pull = "usage: navette demo pull DST\n  Pulls." },
    common = "common options:\n  --region R  where",
    common_flags = { region = "value" },
  }
  cmd.commands = {
    push = function(argv)
      local opts, args = cmd:parse("push", argv, { force = "bool" })
      if opts.help then return cmd:print_help("push") end
      ran[#ran + 1] = { opts = opts, args = args }
      return 0
    end,
    pull = function(argv)
      local opts, args = cmd:parse("pull", argv)
      if #args ~= 1 then cmd:usage_error("expected DST", "pull") end
      ran[#ran + 1] = { opts = opts, args = args }
      return 0
    end,
  }
  return cmd, ran
end

t.test("the usage lists each verb's usage line and the shared options",
       function()
  local cmd = demo()
  local text = cmd:usage_text()
  t.match(text, "^usage: navette demo VERB ARGS %[options%]\n")
  t.match(text, "\n  push SRC %[%-%-force%]\n  pull DST\n")
  t.match(text, "\ncommon options:\n  %-%-region R  where\n")
  t.match(text, "navette demo VERB %-%-help for more%.$")
  t.eq(cmd:verb_help("pull"), "usage: navette demo pull DST\n  Pulls.\n\n"
       .. "common options:\n  --region R  where")
end)

t.test("a verb gets its own flags and the shared ones", function()
  local cmd, ran = demo()
  t.eq(cmd:main({ "push", "--force", "--region", "eu", "a" }), 0)
  t.eq(ran[1].opts.force, true)
  t.eq(ran[1].opts.region, "eu")
  t.eq(ran[1].args[1], "a")
  local e = t.raises(function() cmd:main({ "pull", "--force", "x" }) end)
  t.eq(e.code, "usage")
  t.eq(e.hint, "see `navette demo pull --help`")
  e = t.raises(function() cmd:main({ "pull" }) end, "expected DST")
  t.eq(e.hint, "see `navette demo pull --help`")
end)

t.test("help exits 0, no verb exits 2, an unknown verb is a usage error",
       function()
  local cmd = demo()
  t.eq(cmd:main({}), 2)
  t.eq(cmd:main({ "help" }), 0)
  t.eq(cmd:main({ "--help" }), 0)
  t.eq(cmd:main({ "help", "push" }), 0)
  t.eq(cmd:main({ "push", "--help" }), 0)
  local e = t.raises(function() cmd:main({ "puhs" }) end,
                     "^unknown demo verb 'puhs' %(did you mean 'push'%?%)$")
  t.eq(e.code, "usage")
  t.eq(e.hint, "see `navette demo help`")
  t.raises(function() cmd:main({ "help", "pul" }) end,
           "^no demo verb 'pul' %(did you mean 'pull'%?%)$")
end)
