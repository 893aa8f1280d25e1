-- The run's refusals and notes: a refusal is audited (even in the
-- checking pass) and raised; under `navette portability` (run.survey) a
-- finding is noted instead and the evaluation goes on.
local errors = require "navette.errors"
local context = require "navette.context"
local core = _navette.core

local M = {}

function M.current_run(what)
  local run = context.current()
  if not run then
    errors.raise("usage", what .. " was called outside a recipe run",
                 "run the recipe with `navette run` or `navette plan`")
  end
  return run
end

-- Puts the runtime in the run's mode: `navette plan` (nothing executes),
-- the checking pass of `navette run` (plan mode in which a credential's
-- program may run, since the user asked to run), or a real run.
function M.set_mode(run)
  if run.checking then core.set_checking() else core.set_plan(run.plan) end
end

function M.refuse(message, hint, run, target)
  if run then
    -- the checking pass of a run evaluates in plan mode, where the audit
    -- only records: a refusal is written for real all the same
    if run.checking then core.set_plan(false) end
    local ok, err = pcall(require("navette.audit").record,
      { action = "policy.refuse", target = target or run.recipe,
        result = "refused", detail = message:match("^[^\n]*") },
      run.profile)
    M.set_mode(run)
    if not ok then error(err, 0) end
  end
  error(errors.new("refused", message, hint), 0)
end

-- `navette portability` evaluates a recipe to gather evidence, not to
-- submit: a missing input, an image not in its registry or a commit not
-- on the remote is what it reports, so under run.survey (a list) such a
-- finding is noted ({job, part, message, hint}) and the evaluation goes
-- on; otherwise it is refused, as in a run. Returns true when noted.
function M.note(run, part, j, message, hint)
  if not run.survey then return false end
  run.survey[#run.survey + 1] = { job = j.name, part = part,
                                  message = message, hint = hint }
  return true
end
function M.refuse_or_note(run, part, j, message, hint)
  if not M.note(run, part, j, message, hint) then
    M.refuse(message, hint, run, j.name)
  end
end

return M
