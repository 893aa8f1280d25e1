-- `navette lock RECIPE... [--check]`: pins the libraries the recipes
-- bring with navette.use in navette.lock at the project's root, or checks
-- that the lock pins each at the commit its ref points to now. Each recipe
-- is evaluated as plan does (nothing uploaded or submitted; its files as
-- they are in the folder, since the lock is written before a commit), and
-- its navette.use calls fetch into the cache.
local errors = require "navette.errors"
local term = require "navette.term"
local common = require "navette.cli.common"
local sys = _navette.sys

local M = {
  name = "lock",
  summary = { { "lock RECIPE... [--check]",
                "pin the libraries recipes use (navette.lock)" } },
  usage = [[
usage: navette lock RECIPE... [--check] [--profile P]
  Evaluates each RECIPE as plan does, fetches the libraries its
  navette.use calls name into the cache, and writes the commit each ref
  points to now in navette.lock at the project's root (entries of other
  libraries are kept). Prints each library and what changed.
  --check    change nothing: exit 3 unless navette.lock pins every
             library the recipes use, with their ref, at the commit the
             ref points to now (the remote's, or the cache's when the
             remote is unreachable)
  --profile  the profile the recipes are evaluated with]],
  flags = { profile = "value", check = "bool" },
  -- (it evaluates in plan mode, which executes nothing)
  read_only = false,
}

-- Evaluates each recipe; -> the libraries used {url, ref, commit} by url,
-- and the project's lock file path.
local function libraries_of(recipes, opts)
  local runner = require "navette.runner"
  local found, path = {}, nil
  for _, recipe in ipairs(recipes) do
    local run = runner.load(recipe, { profile = opts.profile, plan = true,
                                      working = true,
                                      libraries = opts.check and "check"
                                                  or "lock" })
    local here = run.project.root .. "/navette.lock"
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
  return found, path
end

-- Writes the lock: the old entries, those used replaced. Prints changes.
local function write_lock(path, found)
  local library = require "navette.library"
  local old = {}
  local text = library.read_lock_file(path) -- (a regular file only)
  if text then old = library.parse_lock(text, path) end
  local entries, by_url = {}, {}
  for _, e in ipairs(old) do
    entries[#entries + 1] = e
    by_url[e.url] = #entries
  end
  for _, url in ipairs(require("navette.util").sorted_keys(found)) do
    local l, i = found[url], by_url[url]
    local was = i and entries[i]
    local note = not was and "added"
                 or (was.commit ~= l.commit or was.ref ~= l.ref)
                    and ("was " .. was.ref .. " " .. was.commit:sub(1, 12))
                 or "unchanged"
    term.print(url .. "  " .. l.ref .. "  " .. l.commit .. "  (" .. note
               .. ")")
    entries[i or #entries + 1] = { url = url, ref = l.ref,
                                   commit = l.commit }
  end
  errors.check(sys.write_file(path, library.format_lock(entries)))
  term.print("wrote " .. path)
end

function M.run(argv)
  local opts, recipes = common.parse(M.name, argv, M.flags)
  if opts.help then term.print(M.usage); return 0 end
  if #recipes == 0 then
    common.usage_error("expected at least one RECIPE", M.name)
  end
  local found, path = libraries_of(recipes, opts)
  if opts.check then
    for _, url in ipairs(require("navette.util").sorted_keys(found)) do
      local l = found[url]
      term.print(url .. "  " .. l.ref .. "  " .. l.commit .. "  (ok)")
    end
    term.print(path .. " pins every library the recipes use")
    return 0
  end
  if not next(found) then
    term.print("the recipes use no library (navette.use): " .. path
               .. " is left as it is")
    return 0
  end
  write_lock(path, found)
  return 0
end

return M
