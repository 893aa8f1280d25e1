-- navette.image.confine: what a recipe may name on this machine.
-- A recipe is untrusted (a clone may be the first thing run): through the
-- public API (navette.image's functions) its `repo` is its run's own
-- repository or a folder of it, never another repository on disk; what
-- it writes (pack's `output`, code_layer's `tmp_dir`) goes to a path git
-- ignores in that repository or to navette's temporary folder
-- ($NAVETTE_HOME/tmp), never over a tracked file or outside them; and
-- the builder's `storage_root`/`run_root` (buildah may run as root) name
-- a folder of navette's own ($NAVETTE_HOME/image-storage/NAME, .../
-- image-run/NAME). image.trusted and builder.trusted hold the same calls
-- for the command line, which takes the user's paths as given.
local errors = require "navette.errors"
local common = require "navette.image.common"
local core, sys = _navette.core, _navette.sys
local check, string_arg = common.check, common.string_arg

local M = {}

-- the run being evaluated, and the scope (navette.context)
local current = require("navette.context").current
local scope = require("navette.context").scope

-- The run's repository: its real root (the running recipe's, else the
-- scope's, else the current folder's).
local function own_repository(fn)
  local root
  local run = current()
  if run and run.repo then
    root = run.repo:workdir()
  elseif scope().repo_root then
    root = scope().repo_root
  else
    local repo = _navette.git.open(sys.cwd())
    if repo then root = repo:workdir(); repo:close() end
  end
  local real = root and sys.realpath(root)
  if not real then
    errors.raise("refused", "navette.image." .. fn .. ": no repository "
                 .. "for this run", "run the recipe inside its git "
                 .. "repository")
  end
  return real
end

-- Raises "refused": fn's key names a path (given) it may not (why).
local function refuse_path(fn, key, given, why, allowed)
  errors.raise("refused", "navette.image." .. fn .. ": " .. key .. " '"
               .. given .. "' " .. why, allowed)
end

-- A `repo` of a recipe: the run's repository or one of its folders (its
-- real path, symlinks followed, compared as the volume compares names),
-- that opens as that same repository (a nested clone or a submodule is
-- another one).
local function confined_repo(fn, given)
  local root = own_repository(fn)
  if given == nil then return root end
  string_arg(fn, "repo", given)
  local allowed = "a recipe's repo is its own repository (" .. root
                  .. ") or a folder of it"
  local real = sys.realpath(given:sub(1, 1) == "/" and given
                            or (root .. "/" .. given))
  if not real then
    refuse_path(fn, "repo", given, "does not exist", allowed)
  end
  if not sys.path_within(real, root) then
    refuse_path(fn, "repo", given, "is outside the run's repository",
                allowed)
  end
  local repo = _navette.git.open(real)
  local wd = repo and sys.realpath(repo:workdir())
  if repo then repo:close() end
  if not wd or not (sys.path_within(wd, root) and sys.path_within(root, wd)) then
    refuse_path(fn, "repo", given, "is another git repository ("
                .. tostring(wd) .. ")", allowed)
  end
  return real
end

-- A path a recipe has navette write (folder = true: a folder navette
-- creates its files in): its real path, in navette's temporary folder
-- (a new file there, never one that exists) or in the run's repository
-- where git ignores it (never a tracked file, nothing under .git).
local function confined_output(fn, key, given, folder)
  string_arg(fn, key, given)
  local root = own_repository(fn)
  local tmp = core.home() .. "/tmp"
  local allowed = "a recipe writes to a path git ignores in its "
                  .. "repository (add the folder to .gitignore) or under "
                  .. tmp
  local path = given:sub(1, 1) == "/" and given or (root .. "/" .. given)
  local dir, base = path, nil
  if not folder then
    dir, base = path:match("^(.*)/([^/]+)$")
    if not base or base == "." or base == ".." then
      refuse_path(fn, key, given, "names no file", allowed)
    end
  end
  local rdir = sys.realpath(dir == "" and "/" or dir)
  if not rdir then
    refuse_path(fn, key, given, "is in a folder that does not exist",
                allowed)
  end
  local real = base and ((rdir == "/" and "" or rdir) .. "/" .. base)
               or rdir
  if not core.plan_mode() then sys.mkdir_p(tmp, 448) end
  local rtmp = sys.realpath(tmp)
  if rtmp and sys.path_within(real, rtmp) then
    if base and sys.stat(real) then
      refuse_path(fn, key, given, "exists already", "name a new file "
                  .. "under " .. tmp)
    end
    return real
  end
  if not sys.path_within(real, root) then
    refuse_path(fn, key, given, "is outside the run's repository and "
                .. "navette's temporary folder", allowed)
  end
  local rel = real:sub(#root + 2)
  for part in (rel .. "/"):gmatch("([^/]*)/") do
    if part:lower() == ".git" then
      refuse_path(fn, key, given, "is in the repository's .git folder",
                  allowed)
    end
  end
  local state = "tracked" -- the root itself
  if rel ~= "" then
    local repo = check(_navette.git.open(root))
    local st, err = repo:path_state(rel)
    repo:close()
    state = check(st, err, "navette.image." .. fn)
  end
  if state ~= "ignored" then
    refuse_path(fn, key, given, "is " .. (state == "tracked"
                and "tracked by git" or "not ignored by git") .. " in "
                .. root, allowed)
  end
  return real
end

-- A builder folder of a recipe: a NAME (letters, digits, '.', '_', '-')
-- of navette's folder of that kind, created 0700.
local STORE_FOLDERS = { storage_root = "image-storage", run_root = "image-run" }
local function confined_store(fn, key, name)
  if name == nil then return nil end
  local base = core.home() .. "/" .. STORE_FOLDERS[key]
  if type(name) ~= "string" or not name:match("^[%w_-][%w._-]*$")
     or #name > 64 then
    errors.raise("refused", "navette.image." .. fn .. ": " .. key .. " '"
                 .. tostring(name) .. "' is not a name",
                 "a recipe names one of navette's builder folders: " .. key
                 .. " = \"NAME\" (letters, digits, '.', '_', '-') is "
                 .. base .. "/NAME; a path is for the command line (--"
                 .. key:gsub("_", "-") .. ")")
  end
  if not core.plan_mode() then check(sys.mkdir_p(base .. "/" .. name, 448)) end
  return base .. "/" .. name
end

M.repo, M.output, M.store = confined_repo, confined_output, confined_store

return M
