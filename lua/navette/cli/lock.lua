-- `navette lock [RECIPE...] [--check]`: pins the libraries the recipes
-- bring with navette.use, and the team repository navette.lua names, in
-- navette.lock at the project's root, or checks that the lock pins each
-- at the commit its ref points to now. Each recipe
-- is evaluated as plan does (nothing uploaded or submitted; its files as
-- they are in the folder, since the lock is written before a commit), and
-- its navette.use calls fetch into the cache.
local errors = require "navette.errors"
local term = require "navette.term"
local common = require "navette.cli.common"
local sys = _navette.sys

local M = {
  name = "lock",
  summary = { { "lock [RECIPE...] [--check]",
                "pin libraries and team policy (navette.lock)" } },
  usage = [[
usage: navette lock [RECIPE...] [--check] [--profile P]
  Evaluates each RECIPE as plan does, fetches the libraries its
  navette.use calls name into the cache, and writes the commit each ref
  points to now in navette.lock at the project's root (entries of other
  libraries are kept). When navette.lua names a team repository (team =
  { git = URL, ref = TAG }), its commit is pinned too, after its policy
  file is read and checked there; with no RECIPE, only it is. Prints
  each entry and what changed.
  --check    change nothing: exit 3 unless navette.lock pins every
             library the recipes use, and the team repository, with
             their ref, at the commit the ref points to now (the
             remote's, or the cache's when the remote is unreachable)
  --profile  the profile the recipes are evaluated with]],
  flags = { profile = "value", check = "bool" },
  -- (it evaluates in plan mode, which executes nothing)
  read_only = false,
}

-- Evaluates each recipe; -> the libraries used {url, ref, commit} by url,
-- the project's lock file path, and the project.
local function libraries_of(recipes, opts)
  local runner = require "navette.runner"
  local found, path, proj = {}, nil, nil
  for _, recipe in ipairs(recipes) do
    local run = runner.load(recipe, { profile = opts.profile, plan = true,
                                      working = true,
                                      libraries = opts.check and "check"
                                                  or "lock" })
    local here = run.project.root .. "/navette.lock"
    proj = run.project
    if path and here ~= path then
      common.usage_error("the recipes belong to two projects (" .. path
                         .. ", " .. here .. ")", M.name)
    end
    path = here
    for _, l in ipairs(run.libraries or {}) do
      local seen = found[l.url]
      if seen and seen.ref ~= l.ref then
        error(errors.new("recipe", "library " .. l.url .. " is used with "
                         .. "ref " .. seen.ref .. " and ref " .. l.ref,
                         "use one ref of a library in a project"), 0)
      end
      found[l.url] = l
    end
  end
  return found, path, proj
end

-- The team repository of proj (or of the folder's project), pinned and
-- its policy checked: -> {kind, url, ref, commit, policy} (nil when the
-- project names none), the project.
local function team_of(proj, check)
  proj = proj or require("navette.project").at()
  if not proj.team_source then return nil, proj end
  local policy = require("navette.team").load(proj, {
    mode = check and "check" or "lock", from_folder = true })
  local pin = policy.pinned
  return { kind = "team", url = pin.url, ref = pin.ref, commit = pin.commit,
           file = pin.file, policy = policy.name }, proj
end

-- Writes the lock: the old entries, those used replaced (the team's
-- entry by the project's team). Prints changes.
local function write_lock(path, found, team_pin)
  local library = require "navette.library"
  local old = {}
  local text = library.read_lock_file(path) -- (a regular file only)
  if text then old = library.parse_lock(text, path) end
  local entries, by_url = {}, {}
  local old_team
  for _, e in ipairs(old) do
    if e.kind == "team" then
      old_team = e
    else
      entries[#entries + 1] = e
      by_url[e.url] = #entries
    end
  end
  local function note_of(was, l)
    return not was and "added"
           or (was.url ~= l.url or was.commit ~= l.commit or was.ref ~= l.ref
               or was.file ~= l.file)
              and ("was " .. (was.url ~= l.url and (was.url .. " ") or "")
                   .. was.ref .. " " .. was.commit:sub(1, 12))
           or "unchanged"
  end
  if team_pin then
    term.print("team " .. team_pin.policy .. ": " .. team_pin.url .. "  "
               .. team_pin.ref .. "  " .. team_pin.commit .. "  ("
               .. note_of(old_team, team_pin) .. ")")
    entries[#entries + 1] = { kind = "team", url = team_pin.url,
                              ref = team_pin.ref, commit = team_pin.commit,
                              file = team_pin.file }
  elseif old_team then
    entries[#entries + 1] = old_team
  end
  for _, url in ipairs(require("navette.util").sorted_keys(found)) do
    local l, i = found[url], by_url[url]
    term.print(url .. "  " .. l.ref .. "  " .. l.commit .. "  ("
               .. note_of(i and entries[i], l) .. ")")
    entries[i or #entries + 1] = { kind = "library", url = url,
                                   ref = l.ref, commit = l.commit }
  end
  errors.check(sys.write_file(path, library.format_lock(entries)))
  term.print("wrote " .. path)
  -- run takes code from a commit, and refuses a tree with changes
  term.print("next: commit it, as run takes the code from a commit: git add "
             .. path .. " && git commit -m 'navette.lock'")
end

function M.run(argv)
  local opts, recipes = common.command_args(M, argv)
  if not opts then return 0 end
  local found, path, proj = {}, nil, nil
  if #recipes > 0 then found, path, proj = libraries_of(recipes, opts) end
  local team_pin
  team_pin, proj = team_of(proj, opts.check)
  if #recipes == 0 then
    if not proj.file then
      common.usage_error("no project file (navette.lua) here or above",
                         M.name)
    elseif not team_pin then
      common.usage_error("expected at least one RECIPE (" .. proj.file
                         .. " names no team repository to pin)", M.name)
    end
    path = proj.root .. "/navette.lock"
  end
  if opts.check then
    if team_pin then
      term.print("team " .. team_pin.policy .. ": " .. team_pin.url .. "  "
                 .. team_pin.ref .. "  " .. team_pin.commit .. "  (ok)")
    end
    for _, url in ipairs(require("navette.util").sorted_keys(found)) do
      local l = found[url]
      term.print(url .. "  " .. l.ref .. "  " .. l.commit .. "  (ok)")
    end
    term.print(path .. " pins every library the recipes use"
               .. (team_pin and " and the team repository" or ""))
    return 0
  end
  if not next(found) and not team_pin then
    term.print("the recipes use no library (navette.use): " .. path
               .. " is left as it is")
    return 0
  end
  write_lock(path, found, team_pin)
  return 0
end

return M
