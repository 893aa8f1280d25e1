-- `navette plan RECIPE`: runs a recipe in plan mode and prints what run
-- would do (the actions, each job's spec and launcher), doing nothing.
local term = require "navette.term"
local common = require "navette.cli.common"
local core, json = _navette.core, _navette.json

local M = {
  name = "plan",
  summary = { { "plan RECIPE", "show what run would do, doing nothing" } },
  usage = [[
usage: navette plan RECIPE [--profile P] [--node NAME] [--json]
  Runs RECIPE in plan mode: nothing is uploaded, exported or submitted;
  prints what would be done, with each job's spec and launcher, and the
  graph of the jobs that run after others (--json: "graph", a list of
  {from, to, inputs}).
  --node N   plan for node N, as `run --node N` would run it]],
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
  require("navette.embedding").shown_specs(specs)
  -- the graph: each job after the jobs it waits for, and what flows
  local name_of, edges = {}, {}
  for _, s in ipairs(specs) do name_of[s.id] = s.name end
  for _, s in ipairs(specs) do
    for _, id in ipairs(s.after or {}) do
      local flows = {}
      for _, input in ipairs(s.inputs) do
        if input.from == id then
          flows[#flows + 1] = input.output .. " as " .. input.name
        end
      end
      edges[#edges + 1] = { from = name_of[id], to = s.name,
                            inputs = json.array(flows) }
    end
  end
  if opts.json then
    term.print(json.encode({ project = run.project.name,
                             profile = run.profile.name,
                             actions = core.plan(),
                             jobs = json.array(specs),
                             graph = json.array(edges) }, true))
    return 0
  end
  term.print(term.style("stdout", "bold", "plan") .. " of " .. recipe
             .. " · project " .. run.project.name .. " · profile "
             .. run.profile.name .. " (nothing was done)")
  for i, a in ipairs(core.plan()) do
    term.printf("%3d. %s %s: %s\n", i, a.primitive, a.action, a.detail)
  end
  if #edges > 0 then
    term.print("")
    term.print(term.style("stdout", "bold", "graph"))
    for _, e in ipairs(edges) do
      term.print("  " .. e.from .. " -> " .. e.to .. (#e.inputs > 0
                 and ("  (" .. table.concat(e.inputs, ", ") .. ")") or ""))
    end
  end
  for _, s in ipairs(specs) do
    term.print("")
    term.print(term.style("stdout", "bold", "job " .. s.name) .. " (id "
               .. s.id .. ")")
    term.print("  commit   " .. s.commit)
    term.print("  image    " .. s.image)
    if s.after and #s.after > 0 then
      local names = {}
      for i, id in ipairs(s.after) do names[i] = name_of[id] end
      term.print("  after    " .. table.concat(names, ", "))
    end
    for _, input in ipairs(s.inputs) do
      term.print("  input    " .. input.name .. " <- " .. (input.from
                 and ("output " .. input.output .. " of " .. name_of[input.from]
                      .. " (" .. input.url .. ")") or input.url))
    end
    term.print("  outputs  " .. s.outputs.url)
    term.print("  command  " .. table.concat(s.command, " "))
    term.print("  launcher:")
    term.write((s.launcher:gsub("([^\n]*)\n", "    | %1\n")))
  end
  return 0
end

return M
