-- `navette plan RECIPE`: runs a recipe in plan mode and prints what run
-- would do, doing nothing: a summary of each job by default (what it
-- runs, where, from which commit, image and inputs, with which env, to
-- which outputs), the launchers with --launcher, every field with --json.
-- A plan shows the working tree as committed (HEAD), dirty or not, and
-- says so; its job ids are placeholders, since run draws its own.
local term = require "navette.term"
local common = require "navette.cli.common"
local util = require "navette.util"
local core, json = _navette.core, _navette.json

local M = {
  name = "plan",
  summary = { { "plan RECIPE", "show what run would do, doing nothing" } },
  usage = [[
usage: navette plan RECIPE [--profile P] [--node NAME] [--launcher] [--json]
  Runs RECIPE in plan mode: nothing is uploaded, exported or submitted;
  prints what would be done, a summary of each job (command, where,
  commit, image, inputs, env, outputs) and the graph of the jobs that run
  after others (--json: "graph", a list of {from, to, inputs}). A working
  tree with uncommitted changes is planned as HEAD, and said so (run
  refuses it). Job ids are drawn when run submits: <id of NAME> stands
  for each.
  --launcher  also print each job's launcher script (what runs on the node)
              and the bodies of the backend's requests (Kubernetes: the
              Job and Secret manifests)
  --node N    plan for node N, as `run --node N` would run it
  --rerun G, --no-reuse   as `run` takes them
  Each job is either reused (a job of the same key succeeded and its
  outputs are there: "reuse NAME from ID") or run, with the reason.]],
  flags = { profile = "value", json = "bool", node = "value",
            launcher = "bool", rerun = "values", ["no-reuse"] = "bool" },
  read_only = true,
}

-- The drawn ids as substitute finds them: their common prefix (at least
-- the project's name and the date) and their lengths.
local function id_index(ids)
  local stem, lengths, seen = nil, {}, {}
  for id in pairs(ids) do
    if not stem then
      stem = id
    else
      local n = 0
      while n < #stem and stem:byte(n + 1) == id:byte(n + 1) do n = n + 1 end
      stem = stem:sub(1, n)
    end
    if not seen[#id] then
      seen[#id] = true
      lengths[#lengths + 1] = #id
    end
  end
  return { ids = ids, stem = stem, lengths = lengths }
end

-- Replaces, in every string of t (in place, tables within included),
-- each drawn id by its placeholder: where the ids' common prefix occurs,
-- the text of each of their lengths is looked up (a sweep's launchers
-- are long, and its ids many).
local function substitute(t, index, seen)
  seen = seen or {}
  if seen[t] or not index.stem or index.stem == "" then return end
  seen[t] = true
  for k, v in pairs(t) do
    if type(v) == "string" then
      local parts, from = {}, 1
      local at = v:find(index.stem, 1, true)
      while at do
        local shown, len
        for _, n in ipairs(index.lengths) do
          shown = index.ids[v:sub(at, at + n - 1)]
          if shown then len = n break end
        end
        if shown then
          parts[#parts + 1] = v:sub(from, at - 1) .. shown
          from = at + len
          at = v:find(index.stem, from, true)
        else
          at = v:find(index.stem, at + 1, true)
        end
      end
      if #parts > 0 then
        parts[#parts + 1] = v:sub(from)
        t[k] = table.concat(parts)
      end
    elseif type(v) == "table" then
      substitute(v, index, seen)
    end
  end
end

-- The credentials the run would use, by name (never a value): the
-- store's, the backend's, and each job secret's.
local function credential_names(run, specs)
  local names, seen = {}, {}
  local function add(c, what)
    local name = type(c) == "table" and c.name or c
    if type(name) ~= "string" or seen[name .. what] then return end
    seen[name .. what] = true
    names[#names + 1] = name .. " (" .. what .. ")"
  end
  local p = run.profile
  if type(p.s3) == "table" then add(p.s3.credential, "storage") end
  local settings = p[p.backend]
  if type(settings) == "table" then add(settings.credential, p.backend) end
  for _, s in ipairs(specs) do
    for _, secret in ipairs(s.secrets or {}) do
      add(secret.credential, "secret " .. secret.name)
    end
  end
  return names
end

-- The working tree as the plan saw it: nil when clean, else
-- {head, changes = {"status: path"...}, uncommitted = {path...}}.
local function tree_state(run)
  local dirty, uncommitted = run.dirty or {}, run.uncommitted or {}
  if #dirty == 0 and #uncommitted == 0 then return nil end
  local changes = {}
  for i, e in ipairs(dirty) do changes[i] = e.status .. ": " .. e.path end
  return { head = run.repo:resolve("HEAD"), changes = json.array(changes),
           uncommitted = json.array(util.deep_copy(uncommitted)) }
end

local function print_tree(tree)
  term.print(term.style("stdout", "bold", "working tree has uncommitted "
             .. "changes") .. ": plan shows HEAD " .. tostring(tree.head)
             .. "; `navette run` refuses it until you commit")
  for i, c in ipairs(tree.changes) do
    if i > 10 then
      term.print("  ... and " .. (#tree.changes - 10) .. " more")
      break
    end
    term.print("  " .. c)
  end
  if #tree.uncommitted > 0 then
    term.print("  recipe code not in HEAD, read from the folder: "
               .. table.concat(tree.uncommitted, ", "))
  end
end

-- Where the k-th job runs: profile, backend, and the node (as run would
-- send it: --node, the job's nodes, or the profile's taken in turn) and
-- the partition, when there are.
local function where(s, run, k)
  local runner = require "navette.runner"
  local r = s.resources or {}
  local parts = { "profile " .. s.profile, "backend " .. s.backend }
  local sub = run.submissions and run.submissions[s]
  local nodes = r.nodes or (sub and runner.node_for(run, sub.job, k))
  if type(nodes) == "table" and #nodes > 0 then
    parts[#parts + 1] = "node " .. table.concat(nodes, ",")
  end
  local settings = run.profile[s.backend]
  local partition = r.partition
                    or (type(settings) == "table" and settings.partition)
  if partition then parts[#parts + 1] = "partition " .. partition end
  return table.concat(parts, " · ")
end

-- Seconds as "20m", "1h30m", "45s".
local function duration(s)
  if math.type(s) ~= "integer" then return tostring(s) .. "s" end
  local h, m, sec = s // 3600, s % 3600 // 60, s % 60
  return (h > 0 and (h .. "h") or "") .. (m > 0 and (m .. "m") or "")
         .. ((sec > 0 or s == 0) and (sec .. "s") or "")
end

-- What a job asks for: cpus, memory, gpus, time limit (nil: nothing).
local function resources_line(r)
  if not r then return nil end
  local parts = {}
  if r.cpus then parts[#parts + 1] = "cpus " .. tostring(r.cpus) end
  if math.type(r.memory) == "integer" then
    parts[#parts + 1] = "memory " .. util.human_size(r.memory)
  end
  if r.gpus then parts[#parts + 1] = "gpus " .. tostring(r.gpus) end
  if r.time_limit then
    parts[#parts + 1] = "time limit " .. duration(r.time_limit)
  end
  return #parts > 0 and table.concat(parts, " · ") or nil
end

local function print_job(s, k, run, name_of, with_launcher)
  term.print("")
  term.print(term.style("stdout", "bold", "job " .. s.name))
  term.print("  command  " .. table.concat(s.command, " "))
  term.print("  where    " .. where(s, run, k))
  local res = resources_line(s.resources)
  if res then term.print("  needs    " .. res) end
  term.print("  commit   " .. s.commit)
  term.print("  image    " .. s.image .. (s.image_requested
             and (" (" .. s.image_requested .. ")") or ""))
  if s.after and #s.after > 0 then
    local names = {}
    for i, id in ipairs(s.after) do names[i] = name_of[id] end
    term.print("  after    " .. table.concat(names, ", "))
  end
  for _, input in ipairs(s.inputs) do
    term.print("  input    " .. input.name .. " <- " .. (input.from
               and ("output " .. input.output .. " of " .. name_of[input.from])
               or (input.url .. (input.sha256 and (" (sha256 "
                   .. input.sha256:sub(1, 12) .. ")") or ""))))
  end
  for _, k in ipairs(util.sorted_keys(s.env or {})) do
    term.print("  env      " .. k .. "=" .. s.env[k])
  end
  if s.params and next(s.params) then
    local params = {}
    for _, k in ipairs(util.sorted_keys(s.params)) do
      params[#params + 1] = k .. "=" .. tostring(s.params[k])
    end
    term.print("  params   " .. table.concat(params, " "))
  end
  for _, secret in ipairs(s.secrets or {}) do
    term.print("  secret   " .. secret.name .. " <- credential "
               .. secret.credential)
  end
  local declared = s.success and s.success.outputs or {}
  term.print("  outputs  " .. s.outputs.url .. (#declared > 0
             and (" (" .. table.concat(declared, ", ") .. ")") or ""))
  for _, r in ipairs(s.requests or {}) do
    term.print("  request  " .. r.method .. " " .. r.path)
    if with_launcher then
      term.write((json.encode(r.body, true):gsub("([^\n]*)\n?",
                  function(line)
                    return line ~= "" and ("    | " .. line .. "\n") or ""
                  end)))
    end
  end
  if with_launcher then
    term.print("  launcher:")
    term.write((s.launcher:gsub("([^\n]*)\n", "    | %1\n")))
  end
end

function M.run(argv)
  local opts, recipe, nodes = common.recipe_args(M, argv)
  if not opts then return 0 end
  local runner = require "navette.runner"
  -- a plan submits nothing: it shows a dirty tree's HEAD, and says so
  local run = runner.load(recipe, { profile = opts.profile, plan = true,
                                    nodes = nodes, allow_dirty = true })
  run.no_reuse, run.rerun_names = opts["no-reuse"], opts.rerun
  local specs = runner.submit(run)
  -- each job reused or run, and why (navette.reuse)
  local decisions = require("navette.reuse").decisions(run)
  -- the same view of a job's environment as the embedding API's plan
  require("navette.embedding").shown_specs(specs)
  local actions = core.plan()
  -- the ids drawn here are not those run will draw: each is shown as a
  -- placeholder, everywhere (outputs, launcher, actions, after)
  local ids, name_of = {}, {}
  for _, r in ipairs(run.reused or {}) do
    name_of[r.from] = r.name .. " (reused: " .. r.from .. ")"
  end
  for _, s in ipairs(specs) do
    ids[s.id] = "<id of " .. s.name .. ">"
    name_of[ids[s.id]] = s.name
  end
  local index = id_index(ids)
  substitute(specs, index)
  substitute(actions, index)
  -- the graph: each job after the jobs it waits for, and what flows
  local edges = {}
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
  local tree = tree_state(run)
  local credentials = credential_names(run, specs)
  if opts.json then
    term.print(json.encode({ project = run.project.name,
                             profile = run.profile.name,
                             working_tree = tree or { clean = true },
                             ids = "drawn at submission: <id of NAME> "
                                   .. "stands for each",
                             credentials = json.array(credentials),
                             actions = actions,
                             jobs = json.array(specs),
                             reuse = decisions,
                             graph = json.array(edges) }, true))
    return 0
  end
  term.print(term.style("stdout", "bold", "plan") .. " of " .. recipe
             .. " · project " .. run.project.name .. " · profile "
             .. run.profile.name .. " (nothing was done)")
  if tree then print_tree(tree) end
  if #specs > 0 then
    term.print("job ids are drawn when `navette run` submits: <id of NAME> "
               .. "stands for each")
  end
  if #credentials > 0 then
    term.print("credentials " .. table.concat(credentials, ", "))
  end
  for i, a in ipairs(actions) do
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
  if #decisions > 0 then
    term.print("")
    term.print(term.style("stdout", "bold", "reuse") .. " (a job of the "
               .. "same key whose outputs are there, or why it runs)")
    for _, d in ipairs(decisions) do
      if d.from then
        term.print("  reuse  " .. d.name .. "  from " .. d.from)
      else
        term.print("  run    " .. d.name .. "  (" .. d.reason .. ")")
      end
    end
  end
  for k, s in ipairs(specs) do
    print_job(s, k, run, name_of, opts.launcher)
  end
  if #specs > 0 and not opts.launcher then
    term.print("")
    term.print("(each job's launcher script, and the bodies of the "
               .. "requests: navette plan " .. recipe .. " --launcher)")
  end
  return 0
end

return M
