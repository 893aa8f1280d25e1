-- What the runner and backend tests share (loaded with loadfile, not a
-- test file itself): the fake backend, registered, and a committed git
-- repository holding a project file and a recipe.
local sys = _navette.sys
local backends = require "navette.backends"

local fixtures = {}

local here = debug.getinfo(1, "S").source:match("^@(.*)/[^/]*$") or "."

-- The fake backend of fake_backend.lua, loaded from its file and
-- registered (a fresh copy each time: its calls start empty).
function fixtures.fake_backend()
  local fake = assert(loadfile(here .. "/fake_backend.lua"))()
  backends.register(fake)
  return fake
end

local function sh(dir, command)
  local ok = os.execute("cd '" .. dir .. "' && " .. command
                        .. " >/dev/null 2>&1")
  assert(ok, "failed: " .. command)
end

-- A repository at a new folder of t.tmpdir() holding files (name ->
-- text), committed; returns its folder.
function fixtures.repo(t, files)
  local dir = t.tmpdir()
  for name, text in pairs(files) do
    assert(sys.write_file(dir .. "/" .. name, text))
  end
  sh(dir, "git init -q . && git add -A && git -c user.name=t "
          .. "-c user.email=t@example.invalid -c commit.gpgsign=false "
          .. "commit -qm fixture")
  if files["navette.lua"] then fixtures.trust(dir) end
  return dir
end

-- The test's user trusts the project file of dir (navette trust), as the
-- author of a project does.
function fixtures.trust(dir)
  local trust = require "navette.trust"
  trust.record(require("navette.project").at(dir))
end

-- A project whose profile `fake` runs on the fake backend (settings:
-- the profile's fake table, as Lua source) and whose store is a folder.
function fixtures.project(t, settings)
  local store = t.tmpdir()
  return [[return { name = "demo", default_profile = "fake",
    profiles = { fake = { backend = "fake", require_pushed = false,
                          storage = "file://]] .. store .. [[/",
                          fake = ]] .. (settings or "{ color = 'blue' }")
    .. [[ } } }]]
end

-- A recipe declaring one job per name.
function fixtures.recipe(names)
  local lines = { "local navette = require 'navette'" }
  for _, n in ipairs(names) do
    lines[#lines + 1] = "navette.job { name = '" .. n .. "', command = "
                        .. "{ 'echo', '" .. n .. "' } }"
  end
  return table.concat(lines, "\n") .. "\n"
end

return fixtures
