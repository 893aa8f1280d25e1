-- navette.context: the one run context, on the ground floor of the Lua
-- layer. The runner (or a command that works for one profile: `navette
-- storage`, `navette image`, the team's store) enters a scope; the modules
-- that act for a recipe (storage, creds, http, image, library, task, the
-- backends) read it. It requires no other module of navette, so any module
-- may read it and none has to reach up to the runner.
--
-- A scope holds:
--   profile      the profile the run is for (nil: none chosen)
--   project      the project (project.lua's table), when there is one
--   repo_root    the repository's work tree
--   recipe_dir   the recipe's folder (a relative path is read from there)
--   datasets     the project's datasets (paths it may read on this machine)
-- and what the modules keep for the scope's life:
--   credentials  the profile's declared credentials (name -> declaration)
--   loaded       credential handles loaded (creds.lua)
--   planned      uploads recorded in plan mode (storage.lua)
--   s3           the profile's store, opened once (storage.lua); disposed
--                when another scope is entered
-- Apart from the scope, `current` is the run whose recipe (or task body)
-- is being evaluated now: nil before and after, so that a call from the
-- command line is told apart from one by a recipe.
local context = {}

local function fresh(s)
  s = s or {}
  s.credentials = s.credentials or (s.profile and s.profile.credentials)
                  or {}
  s.loaded = s.loaded or {}
  s.planned = s.planned or {}
  return s
end

local scope = fresh()
local current = nil

-- Enters scope s (a table of the fields above; nil: an empty scope); the
-- store of the scope it replaces is disposed of.
function context.enter(s)
  local old = scope
  scope = fresh(s)
  if old.s3 and old.s3 ~= scope.s3 then old.s3:dispose() end
  return scope
end

-- The scope entered last (never nil).
function context.scope() return scope end

-- The run being evaluated (its recipe or a task's body), or nil.
function context.current() return current end

-- Sets the run being evaluated (nil when its evaluation ends); returns
-- the one it replaces, for the caller to put back.
function context.set_current(run)
  local before = current
  current = run
  return before
end

return context
