-- `navette plan RECIPE`: runs a recipe in plan mode and prints what run
-- would do (the actions, each job's spec and launcher), doing nothing.
local term = require "navette.term"
local common = require "navette.cli.common"
local core, json = _navette.core, _navette.json

local M = {
  name = "plan",
  summary = { { "plan RECIPE", "show what run would do, doing nothing" } },
  usage = [[
usage: navette plan RECIPE [--profile P] [--json]
  Runs RECIPE in plan mode: nothing is uploaded, exported or submitted;
  prints what would be done, with each job's spec and launcher.]],
  flags = { profile = "value", json = "bool", node = "value" },
  read_only = true,
}

function M.run(argv)
  local opts, recipe, nodes = common.recipe_args(M, argv)
  if not opts then return 0 end
  local runner = require "navette.runner"
  local run = runner.load(recipe, { profile = opts.profile, plan = true,
                                    nodes = nodes })
  local specs = runner.submit(run)
  -- the same view of a job's environment as the embedding API's plan
  require("navette.api").shown_specs(specs)
  if opts.json then
    term.print(json.encode({ project = run.project.name,
                             profile = run.profile.name,
                             actions = core.plan(),
                             jobs = json.array(specs) }, true))
    return 0
  end
  term.print(term.style("stdout", "bold", "plan") .. " of " .. recipe
             .. " · project " .. run.project.name .. " · profile "
             .. run.profile.name .. " (nothing was done)")
  for i, a in ipairs(core.plan()) do
    term.printf("%3d. %s %s: %s\n", i, a.primitive, a.action, a.detail)
  end
  for _, s in ipairs(specs) do
    term.print("")
    term.print(term.style("stdout", "bold", "job " .. s.name) .. " (id "
               .. s.id .. ")")
    term.print("  commit   " .. s.commit)
    term.print("  image    " .. s.image)
    for _, input in ipairs(s.inputs) do
      term.print("  input    " .. input.name .. " <- " .. input.url)
    end
    term.print("  outputs  " .. s.outputs.url)
    term.print("  command  " .. table.concat(s.command, " "))
    term.print("  launcher:")
    term.write((s.launcher:gsub("([^\n]*)\n", "    | %1\n")))
  end
  return 0
end

return M
