-- Plan mode runs no program, a run's checking pass may (issue 11), and
-- the runtime's no-execution latch: once a read-only command calls
-- core.forbid_exec(), nothing in this process executes a program:
-- the credential loader refuses a command or Keychain source (code
-- not_run) and image.build refuses to start a builder, outside plan mode
-- too, and nothing lifts it. This file latches its own process: ctest runs
-- each Lua test file alone.
-- (these tests load declarations as a trusted project's: the trust gate
-- itself is trust_test.lua's)
_navette.core.set_trusted(true)
local t = test
local sys, core, native = _navette.sys, _navette.core, _navette.creds

local dir = t.tmpdir()
local marker = dir .. "/ran"
local decl = { name = "sts", kind = "s3", source = "command",
               command = { "sh", "-c", "touch '" .. marker .. "'; echo "
                           .. "'{\"AccessKeyId\": \"AKIDLATCH\", "
                           .. "\"SecretAccessKey\": \"sk-latch\"}'" } }

t.test("before the latch a command source runs", function()
  native.cache_clear()
  t.eq(core.exec_forbidden(), false)
  local h, err = native.load(decl)
  t.ok(h, err and err.message)
  t.ok(sys.stat(marker), "the command ran")
  h:close()
  native.cache_clear()
  assert(sys.remove(marker))
end)

t.test("plan mode runs nothing; a run's checking pass may", function()
  core.set_plan(true)
  t.eq(core.exec_forbidden(), true)
  local h, err = native.load(decl)
  t.eq(err and err.code, "not_run")
  t.eq(sys.stat(marker), nil)
  -- the first pass of `run`: plan mode, credentials loaded
  core.set_checking()
  local plan, forbidden = core.plan_mode(), core.exec_forbidden()
  h, err = native.load(decl)
  -- set_plan leaves the checking pass: a later plan runs nothing again
  core.set_plan(true)
  local after = core.exec_forbidden()
  core.set_plan(false)
  t.eq(plan, true)
  t.eq(forbidden, false)
  t.ok(h, err and err.message)
  t.ok(sys.stat(marker), "the checking pass ran the command")
  t.eq(after, true)
  if h then h:close() end
  native.cache_clear()
  assert(sys.remove(marker))
end)

t.test("after forbid_exec nothing runs, and nothing lifts it", function()
  core.forbid_exec()
  t.eq(core.exec_forbidden(), true)
  local h, err = native.load(decl)
  t.eq(h, nil)
  t.eq(err.code, "not_run")
  t.match(err.message, "was not run")
  -- plan mode toggled on and off, or a checking pass, does not lift it
  core.set_plan(true)
  core.set_plan(false)
  t.eq(core.exec_forbidden(), true)
  core.set_checking()
  t.eq(core.exec_forbidden(), true)
  core.set_plan(false)
  h, err = native.load(decl)
  t.eq(err and err.code, "not_run")
  -- an env source only reads: it still loads
  local env = native.load({ name = "e", kind = "bearer", source = "env",
                            env = { token = "PATH" } })
  t.ok(env, "an env source loads")
  if env then env:close() end
  -- no stand-in outside plan mode
  t.raises(function()
    return native.not_run { name = "sts", kind = "s3", source = "command" }
  end, "only in plan mode")
  -- navette.creds raises a refusal that names it
  local creds = require "navette.creds"
  require("navette.context").enter { credentials = { sts = decl },
                                     profile = { name = "p" } }
  local e = t.raises(function() return creds.get("sts") end, "was not run")
  t.eq(e.code, "refused")
  require("navette.context").enter()
  -- a builder is a program too: refused before any is looked for
  local built, berr = _navette.image.build { builder = "podman",
                                             file = "Containerfile",
                                             context = dir, to = "x/y:1" }
  t.eq(built, nil)
  t.eq(berr and berr.code, "not_run")
  t.eq(sys.stat(marker), nil)
end)
