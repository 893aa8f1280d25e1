-- Loading a recipe: its repository and project, the profile, the
-- sandbox, then the evaluation that collects the jobs it declares.
local errors = require "navette.errors"
local context = require "navette.context"
local util = require "navette.util"
local project = require "navette.project"
local public = require "navette.public"
local refusal = require "navette.run.report"
local refuse, set_mode = refusal.refuse, refusal.set_mode
local worktree = require "navette.run.tree"
local core, sys, git = _navette.core, _navette.sys, _navette.git

local M = {}

-- Loads and evaluates the recipe. opts: profile, plan, nodes, checking
-- (the first pass of a run: evaluated in plan mode, refusals audited),
-- survey (a list: see refuse_or_note), at (the commit the recipe's code
-- is read from: a rerun's; HEAD when nil), allow_dirty (with plan: a
-- dirty tree is planned as HEAD, its changes kept in run.dirty).
function M.load(recipe, opts)
  opts = opts or {}
  local st = sys.stat(recipe)
  if not st or st.type ~= "file" then
    error(errors.new("usage", "no recipe file '" .. recipe .. "'",
                     "give the path of a .lua recipe"), 0)
  end
  local real = errors.check(sys.realpath(recipe))
  local recipe_dir = util.dirname(real)

  local repo, err = git.open(recipe_dir)
  if not repo then
    refuse("the recipe is not in a git repository (" .. err.message .. ")",
           "code comes from a commit: `git init`, commit, then run again")
  end
  local proj = project.load(recipe_dir, repo:workdir())
  local profile = project.profile(proj, opts.profile)
  -- a profile navette.lua declares binds stores, endpoints and
  -- credentials of the user's: a run uses it only once the project is
  -- trusted (a plan shows what it would bind, and loads nothing)
  if not opts.plan and not profile.builtin and not proj.trusted then
    error(require("navette.trust").refusal(proj, "profile " .. profile.name),
          0)
  end

  local plan = opts.plan or opts.checking
  local run = {
    recipe = recipe, recipe_real = real, recipe_dir = recipe_dir,
    repo = repo, project = proj, profile = profile, jobs = {},
    plan = plan and true or false, checking = opts.checking and true or false,
    plan_command = opts.plan and true or false,
    nodes = opts.nodes, uncommitted = {}, at = opts.at,
    allow_dirty = opts.plan and opts.allow_dirty and true or nil,
    survey = opts.survey,
    -- navette lock: the folder's files, and what navette.use does
    working = opts.working, libraries_mode = opts.libraries,
    print = opts.print,
    -- the public API's maker (a library's sandbox gets one of its own)
    new_api = public.new,
  }
  set_mode(run)
  -- a run's preconditions on the tree hold before anything is evaluated
  if not opts.plan then worktree.check_tree(run) end
  context.enter { profile = profile, project = proj,
                  repo_root = repo:workdir(), recipe_dir = recipe_dir,
                  datasets = run.project.datasets }

  local env = core.sandbox(recipe_dir, {
    navette = public.new(),
    print = opts.print,
    load_module = function(_, rel)
      local src, why = worktree.committed_source(run, recipe_dir .. "/"
                                                 .. rel, rel)
      if not src then return nil, why end
      return src, rel
    end,
  })
  local src, why = worktree.committed_source(run, real, recipe)
  if not src then errors.raise("usage", why) end
  local chunk = errors.check(core.load_recipe(real, env, recipe, src))
  local recorded = #core.plan()
  context.set_current(run)
  local ok, result = core.call_bounded(chunk)
  context.set_current(nil)
  if not ok then error(errors.from(result), 0) end
  -- what the evaluation did that a plan records instead (an upload, a
  -- push, a request, a credential not run): see checked_specs
  run.recorded = #core.plan() - recorded
  -- each job after those it runs after (a recipe may name a job it
  -- declares later; a cycle is refused, named)
  run.jobs = require("navette.graph").order(run.jobs)
  if not opts.plan then worktree.check_committed(run) end
  return run
end

return M
