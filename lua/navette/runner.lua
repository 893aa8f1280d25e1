-- Running a recipe: find its repository and project, pick the profile,
-- evaluate the recipe in the sandbox (collecting the jobs it declares),
-- then turn each declaration into a job spec pinned to a clean commit and
-- hand it to the backend. Plan mode runs the same path with every side
-- effect recorded instead of done.
local errors = require "navette.errors"
local util = require "navette.util"
local project = require "navette.project"
local job = require "navette.job"
local storage = require "navette.storage"
local backends = require "navette.backends"
local jobs = require "navette.jobs"
local NAMES = _navette.record.names
local core, sys, git, json = _navette.core, _navette.sys, _navette.git,
                             _navette.json

local runner = {}

-- The run in progress (navette.job appends to it).
runner.current = nil

local function current_run(what)
  local run = runner.current
  if not run then
    errors.raise("usage", what .. " was called outside a recipe run",
                 "run the recipe with `navette run` or `navette plan`")
  end
  return run
end

-- The job of the run named `name`, or nil.
local function declared_job(run, name)
  for _, other in ipairs(run.jobs) do
    if other.name == name then return other end
  end
  return nil
end

-- Refuses a name the run already has.
local function check_new_name(run, j, what)
  local other = declared_job(run, j.name)
  if other then
    errors.raise("recipe", what .. ": a job named '" .. j.name
                 .. "' is already declared at " .. other.declared_at)
  end
end

local function add_job(run, j, what)
  check_new_name(run, j, what)
  run.jobs[#run.jobs + 1] = j
  return j
end

-- What a recipe gets back for a declared job: what was validated, and
-- output(path), which names one of the job's outputs as another job's
-- input (that job then runs after it).
local function handle(j)
  local h = {}
  for k, v in pairs(j) do h[k] = v end
  -- (a library's cache and repository are the runner's, never a recipe's)
  h.library = nil
  h.output = function(self, path)
    if type(self) ~= "table" or type(self.name) ~= "string" then
      errors.raise("recipe", "output: call it as job:output(\"path\")")
    end
    if type(path) ~= "string" then
      errors.raise("recipe", "job:output(path): path must be a string, "
                   .. "the output's name under the job's prefix")
    end
    return { job = self.name, output = path }
  end
  return h
end

-- navette.outputs(jobs, path): output `path` of each job of a list (what
-- navette.sweep returned, or jobs), as one input: NAME/1, NAME/2... for
-- the job that takes it.
function runner.outputs(list, path)
  if type(list) ~= "table" or #list == 0 then
    errors.raise("recipe", "navette.outputs: the first argument is a list "
                 .. "of jobs (what navette.sweep returned)")
  end
  if type(path) ~= "string" then
    errors.raise("recipe", "navette.outputs: path must be a string, the "
                 .. "output's name under each job's prefix")
  end
  local out = {}
  for i, x in ipairs(list) do
    if type(x) ~= "table" or type(x.name) ~= "string" then
      errors.raise("recipe", "navette.outputs: item " .. i .. " is not a "
                   .. "job (what navette.job or navette.sweep returned)")
    end
    out[i] = { job = x.name, output = path }
  end
  return out
end

-- The jobs whose outputs j takes as inputs run before it: they join
-- j.after.
local function inputs_after(j)
  local seen = {}
  for _, name in ipairs(j.after) do seen[name] = true end
  local function add(input)
    if not seen[input.job] then
      seen[input.job] = true
      j.after[#j.after + 1] = input.job
    end
  end
  for _, name in ipairs(util.sorted_keys(j.inputs)) do
    local input = j.inputs[name]
    if type(input) == "table" and input.list then
      for _, x in ipairs(input) do add(x) end
    elseif type(input) == "table" then
      add(input)
    end
  end
end

-- code = "library" in a job a library declares: the library's commit
-- (lib: what library.use pinned; nil for the project's recipes).
local function library_code(j, lib, what)
  if j.code ~= "library" then return end
  if not lib then
    errors.raise("recipe", what .. ": job '" .. j.name .. "': code = "
                 .. "\"library\" is for a job that a library declares",
                 "a recipe's job runs a commit of the recipe's repository: "
                 .. "drop code, or name a revision (a branch, tag or "
                 .. "commit id)")
  end
  -- (plain values, so that the two passes' jobs compare equal: the
  -- repository object stays with the run's library.use)
  j.library = { url = lib.url, commit = lib.commit, dir = lib.dir }
end

function runner.declare(decl, lib)
  local j = job.validate(decl)
  local run = current_run("navette.job")
  library_code(j, lib, "navette.job")
  inputs_after(j)
  return handle(add_job(run, j, "navette.job"))
end

-- navette.sweep: every job of the sweep is validated before the first is
-- declared. -> the list of the declared jobs
function runner.declare_sweep(decl, lib)
  local run = current_run("navette.sweep")
  local declared = {}
  for i, item in ipairs(require("navette.sweep").expand(decl)) do
    local j = job.validate(item.decl)
    library_code(j, lib, "navette.sweep")
    j.name = j.name .. item.suffix
    j.params = item.params
    declared[i] = j
  end
  for _, j in ipairs(declared) do
    inputs_after(j)
    if #j.name > 255 then
      errors.raise("recipe", "navette.sweep: the job name " .. j.name
                   .. " is longer than 255 bytes", "use shorter parameter "
                   .. "names or values")
    end
    check_new_name(run, j, "navette.sweep")
  end
  -- (the jobs of one sweep may go to the backend as one job array)
  run.sweeps = (run.sweeps or 0) + 1
  for i, j in ipairs(declared) do
    j.sweep = run.sweeps
    declared[i] = handle(add_job(run, j, "navette.sweep"))
  end
  return declared
end

-- Puts the runtime in the run's mode: `navette plan` (nothing executes),
-- the checking pass of `navette run` (plan mode in which a credential's
-- program may run, since the user asked to run), or a real run.
local function set_mode(run)
  if run.checking then core.set_checking() else core.set_plan(run.plan) end
end

local function refuse(message, hint, run, target)
  if run then
    -- the checking pass of a run evaluates in plan mode, where the audit
    -- only records: a refusal is written for real all the same
    if run.checking then core.set_plan(false) end
    local ok, err = pcall(require("navette.audit").record,
      { action = "policy.refuse", target = target or run.recipe,
        result = "refused", detail = message:match("^[^\n]*") },
      run.profile)
    set_mode(run)
    if not ok then error(err, 0) end
  end
  error(errors.new("refused", message, hint), 0)
end
runner.refuse = refuse -- (navette.use's refusals: audited alike)

-- `navette portability` evaluates a recipe to gather evidence, not to
-- submit: a missing input, an image not in its registry or a commit not
-- on the remote is what it reports, so under run.survey (a list) such a
-- finding is noted ({job, part, message, hint}) and the evaluation goes
-- on; otherwise it is refused, as in a run. Returns true when noted.
local function note(run, part, j, message, hint)
  if not run.survey then return false end
  run.survey[#run.survey + 1] = { job = j.name, part = part,
                                  message = message, hint = hint }
  return true
end
local function refuse_or_note(run, part, j, message, hint)
  if not note(run, part, j, message, hint) then
    refuse(message, hint, run, j.name)
  end
end

-- Read-only facts about the run in progress (navette.context()).
function runner.context()
  local run = runner.current
  if not run then return nil end
  return {
    project = run.project.name,
    profile = run.profile.name,
    -- true only under `navette plan`: the checking pass of a run must not
    -- show itself, or a recipe could act differently when checked
    plan = run.plan_command,
    recipe = run.recipe,
    -- the images the profile names (profile `images`), by name; the
    -- boundary hands the recipe a sealed copy
    images = run.profile.images or {},
  }
end

-- The path of an absolute file under the repository's work tree, or nil.
local function repo_relative(run, path)
  local root = run.repo:workdir():gsub("/$", "")
  if path:sub(1, #root + 1) ~= root .. "/" then return nil end
  return path:sub(#root + 2)
end

-- The source of a recipe file: from the commit (HEAD) when the file is
-- there, so that what is evaluated is what the commit holds; a file the
-- commit lacks (untracked, gitignored) is read from the folder and noted,
-- and the run is refused before anything is done (plan shows it too).
-- Never through a link: a name the commit holds as a link or a
-- submodule is refused, and a file read from the folder must be a
-- regular file whose real path is in the repository (a link to ~/.env
-- would otherwise be evaluated, and its text shown in the error).
local function committed_source(run, path, shown)
  local rel = repo_relative(run, path)
  if rel and not run.working then
    local src, err = run.repo:read_file("HEAD", rel)
    if src then return src end
    if err and err.code ~= "not_found" then
      return nil, shown .. ": " .. err.message
    end
  end
  local real = sys.realpath(path)
  local root = sys.realpath(run.repo:workdir())
  local st = real and sys.stat(real)
  if not st then return nil, "no such file (" .. shown .. ")" end
  if not root or real:sub(1, #root + 1) ~= root .. "/"
     or st.type ~= "file" then
    return nil, shown .. " is not a file of the repository (a link to "
           .. "a file outside it, or not a regular file): recipe code is "
           .. "read only from the repository's own files"
  end
  local f = io.open(real, "rb")
  if not f then return nil, "no such file (" .. shown .. ")" end
  local src = f:read("a")
  f:close()
  run.uncommitted[#run.uncommitted + 1] = rel or path
  return src
end

-- Refuses a run whose recipe or modules were not read from the commit.
local function check_committed(run)
  if #run.uncommitted == 0 then return end
  refuse("the recipe's code is not all in commit HEAD of "
         .. run.repo:workdir() .. ":\n  " .. table.concat(run.uncommitted,
         "\n  ") .. "\n(untracked or ignored by .gitignore)",
         "commit these files (git add -f for an ignored one): recipe code "
         .. "comes from the commit, never from the working folder", run)
end
runner.check_committed = check_committed

-- The working tree must be clean before anything is done.
local function check_tree(run)
  local dirty = run.repo:status()
  if #dirty == 0 then return end
  local lines, finder = {}, false
  for i, e in ipairs(dirty) do
    -- Finder leaves .DS_Store in every folder a Mac user opens
    finder = finder or (e.path:match("[^/]+$") == ".DS_Store")
    if i <= 20 then
      lines[#lines + 1] = "  " .. e.status .. ": " .. e.path
    elseif i == 21 then
      lines[#lines + 1] = "  ... and " .. (#dirty - 20) .. " more"
    end
  end
  local hint = "commit (or stash) these changes: a job runs a commit, "
    .. "never the working folder"
  if finder then
    hint = hint .. "; .DS_Store is the Mac Finder's: add .DS_Store to a "
      .. "global gitignore: git config --global core.excludesFile "
      .. "~/.gitignore_global; echo .DS_Store >> ~/.gitignore_global"
  end
  refuse("the working tree of " .. run.repo:workdir() .. " is not clean:\n"
         .. table.concat(lines, "\n"), hint, run, run.recipe)
end

-- Loads and evaluates the recipe. opts: profile, plan, nodes, checking
-- (the first pass of a run: evaluated in plan mode, refusals audited),
-- survey (a list: see refuse_or_note).
function runner.load(recipe, opts)
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
    nodes = opts.nodes, uncommitted = {},
    survey = opts.survey,
    -- navette lock: the folder's files, and what navette.use does
    working = opts.working, libraries_mode = opts.libraries,
    print = opts.print,
  }
  set_mode(run)
  -- a run's preconditions on the tree hold before anything is evaluated
  if not opts.plan then check_tree(run) end
  storage._set_context({ profile = profile, repo_root = repo:workdir(),
                         datasets = run.project.datasets,
                         project = proj,
                         recipe_dir = recipe_dir, planned = {} })
  require("navette.creds")._set_context(profile.credentials, profile,
                                        proj.name)
  require("navette.http")._set_context(profile)

  local env = core.sandbox(recipe_dir, {
    navette = require("navette.public").new(),
    print = opts.print,
    load_module = function(_, rel)
      local src, why = committed_source(run, recipe_dir .. "/" .. rel, rel)
      if not src then return nil, why end
      return src, rel
    end,
  })
  local src, why = committed_source(run, real, recipe)
  if not src then errors.raise("usage", why) end
  local chunk = errors.check(core.load_recipe(real, env, recipe, src))
  local recorded = #core.plan()
  runner.current = run
  local ok, result = core.call_bounded(chunk)
  runner.current = nil
  if not ok then error(errors.from(result), 0) end
  -- what the evaluation did that a plan records instead (an upload, a
  -- push, a request, a credential not run): see checked_specs
  run.recorded = #core.plan() - recorded
  -- each job after those it runs after (a recipe may name a job it
  -- declares later; a cycle is refused, named)
  run.jobs = require("navette.graph").order(run.jobs)
  if not opts.plan then check_committed(run) end
  return run
end

-- The commit a job runs, refusing a dirty tree or an unpushed commit.
-- Once per run and code reference: the tree is checked once, each commit
-- resolved, scanned and looked up on the remote once (a sweep's jobs
-- share them).
local function pin_commit(run, j)
  run.pinned = run.pinned or {}
  run.code_repos = run.code_repos or {}
  if j.library then
    -- the commit the lock pinned, fetched, checked and scanned when the
    -- library was used: its cache is the code's repository
    local lib = run.library_used[j.library.url]
    run.code_repos[lib.commit] = lib
    return lib.commit, lib.repo:commit(lib.commit)
  end
  local pinned = run.pinned[j.code]
  if pinned then return pinned[1], pinned[2] end
  local repo = run.repo
  -- a commit pinned already means the tree was found clean
  if not next(run.pinned) then
    check_tree(run)
    check_committed(run)
  end
  local commit, err = repo:resolve(j.code)
  if not commit then
    refuse("job '" .. j.name .. "': code '" .. j.code .. "': "
           .. err.message, err.hint or "check the commit reference")
  end
  runner.scan_secrets(run, commit, j.name)
  -- (a survey asks whatever the profile requires: moving code needs it)
  if run.profile.require_pushed or run.survey then
    local present, rerr = repo:on_remote(commit, run.profile.remote)
    if present == nil then
      refuse_or_note(run, "code", j, "job '" .. j.name .. "': "
                     .. rerr.message, rerr.hint)
    elseif not present then
      refuse_or_note(run, "code", j, "job '" .. j.name .. "': commit "
             .. commit:sub(1, 12)
             .. " is not on the remote (as of the last fetch)",
             run.survey and "push it (git push): a node fetches the code "
             .. "from the remote" or "push it (git push), then run again: "
             .. "profile '" .. run.profile.name .. "' runs only pushed "
             .. "commits")
    end
  end
  local info = repo:commit(commit)
  run.pinned[j.code] = { commit, info }
  return commit, info
end

-- An input read from the store: its URL, sha256 and size as they are now
-- (or as planned, for an upload of this very plan).
local function store_input(run, j, name, url, planned)
  local entry = { name = name, url = url }
  -- another profile's data is refused, even under survey (portability
  -- judges a profile's own recipe)
  require("navette.isolation").check_url(run.profile, url, "job '" .. j.name
                                         .. "': input '" .. name .. "'")
  if url:match("^s3://") and not run.profile.s3 then
    if note(run, "data", j, "job '" .. j.name .. "': input '"
                      .. name .. "' is in S3 (" .. url .. ") but profile '"
                      .. run.profile.name .. "' stores in "
                      .. run.profile.storage, "upload the input to this "
                      .. "profile's store (navette.storage.put)") then
      return entry
    end
    refuse("job '" .. j.name .. "': input '" .. name .. "' is in S3 ("
           .. url .. ") but profile '" .. run.profile.name .. "' stores "
           .. "in " .. run.profile.storage, "run it with a profile whose "
           .. "storage is s3://, or upload the input to this profile's "
           .. "store (navette.storage.put)")
  elseif url:match("^file://") and run.profile.s3 then
    if note(run, "data", j, "job '" .. j.name .. "': input '"
                      .. name .. "' is a file on this machine (" .. url
                      .. "), which the nodes of profile '"
                      .. run.profile.name .. "' do not see",
                      "upload it with navette.storage.put (the profile's "
                      .. "store is " .. run.profile.storage .. ")") then
      return entry
    end
    refuse("job '" .. j.name .. "': input '" .. name .. "' is a local "
           .. "file URL (" .. url .. ") but the job reads its inputs from "
           .. "S3", "upload it with navette.storage.put (the profile's "
           .. "store is " .. run.profile.storage .. ")")
  end
  local info, err = storage.try_head(url)
  if info then
    entry.sha256, entry.size = info.sha256, info.size
  elseif run.plan and planned[url] then
    entry.sha256, entry.size = planned[url].sha256, planned[url].size
  else
    refuse_or_note(run, "data", j, "job '" .. j.name .. "': input '"
           .. name .. "' is not in storage: " .. url
           .. (err and (" (" .. err.message .. ")") or ""),
           "upload it first (navette.storage.put in the recipe)")
  end
  return entry
end

-- An input that is an output of a job of the run (submitted before this
-- one): where it will be, and the run record that will list it with its
-- sha256 (read when the job starts, after that job has succeeded: by the
-- agent from a file:// store, by the launcher through presigned GETs of
-- both, made at submission, from an s3:// one).
local function output_input(run, j, name, from)
  local producer = run.specs[from.job]
  return { name = name, url = producer.outputs.url .. from.output,
           from = producer.id, output = from.output,
           record = producer.outputs.url .. NAMES.run_record }
end

local function describe_inputs(run, j)
  local planned = storage._planned()
  local out = {}
  for _, name in ipairs(util.sorted_keys(j.inputs)) do
    local input = j.inputs[name]
    if type(input) == "table" and input.list then
      -- staged as NAME/1, NAME/2... in the list's order
      for i, x in ipairs(input) do
        out[#out + 1] = output_input(run, j, name .. "/" .. i, x)
      end
    else
      out[#out + 1] = type(input) == "table"
                      and output_input(run, j, name, input)
                      or store_input(run, j, name, input, planned)
    end
  end
  return json.array(out)
end

-- A secret scan's findings as lines "  path:line: reason [rule]", the
-- first 20 and how many more.
function runner.findings_text(findings)
  local lines = {}
  for i, f in ipairs(findings) do
    if i > 20 then
      lines[#lines + 1] = "  ... and " .. (#findings - 20) .. " more"
      break
    end
    lines[#lines + 1] = "  " .. f.path .. (f.line > 0
      and (":" .. f.line) or "") .. ": " .. f.reason .. " [" .. f.rule
      .. "]"
  end
  return table.concat(lines, "\n")
end

-- Nothing leaves the laptop as code if the commit's tree holds something
-- that looks like a secret (scanned once per commit and run). source: the
-- repository of another commit ({path, name}: a library's cache).
function runner.scan_secrets(run, commit, target, source)
  run.scanned = run.scanned or {}
  if run.scanned[commit] then return end
  local report, err = _navette.creds.scan_commit(
    source and source.path or run.repo:workdir(), commit)
  if not report then
    refuse("cannot scan commit " .. commit:sub(1, 12) .. " for secrets: "
           .. err.message, err.hint, run, target)
  end
  if #report.findings > 0 then
    refuse((source and (source.name .. ": ") or "") .. "commit "
           .. commit:sub(1, 12) .. " holds what looks like "
           .. "secrets:\n" .. runner.findings_text(report.findings),
           "remove them from the repository (and rotate them), or exempt "
           .. "a path with a written reason in .navette-secrets-allow",
           run, target)
  end
  run.scanned[commit] = true
end

-- How long a job's URLs and POST policy last: its time limit plus the
-- profile's margin, bounded by the profile (a job without a time limit gets
-- the profile's maximum).
function runner.url_lifetime(profile, j)
  local limit = j.resources and j.resources.time_limit
  if not limit then return profile.max_url_lifetime end
  local lifetime = math.ceil(limit + profile.url_margin)
  if lifetime > profile.max_url_lifetime then
    refuse("job '" .. j.name .. "': its time limit (" .. math.floor(limit)
           .. " s) plus the URL margin (" .. profile.url_margin .. " s) "
           .. "exceeds the profile's max_url_lifetime ("
           .. profile.max_url_lifetime .. " s)", "lower resources."
           .. "time_limit, or raise max_url_lifetime in profile '"
           .. profile.name .. "' (at most 7 days)")
  end
  return lifetime
end

-- The code of a commit as the node gets it: a deterministic tar.gz of its
-- tree, stored once per commit under _code/ (content-addressed by the
-- commit; a second run finds it there).
local function code_archive(run, store, spec)
  local key = "_code/" .. spec.project .. "/" .. spec.commit .. ".tar.gz"
  local info = store:head(key)
  if info and info.sha256 then return key, info end
  local tmp = core.home() .. "/tmp/code-" .. spec.commit .. "-"
              .. sys.random_hex(4) .. ".tar.gz"
  local plan = core.plan_mode()
  if not plan then errors.check(sys.mkdir_p(core.home() .. "/tmp")) end
  -- in plan mode only hashed, not written
  -- (a library's commit from its cache)
  local lib = run.code_repos and run.code_repos[spec.commit]
  local repo = lib and lib.repo or run.repo
  local made, err = repo:archive(spec.commit, not plan and tmp or nil)
  if not made then
    if not plan then sys.remove(tmp) end
    refuse("cannot pack commit " .. spec.commit:sub(1, 12) .. ": "
           .. err.message, err.hint)
  end
  if plan then
    core.plan("storage", "put", store:url(key) .. " <- commit "
              .. spec.commit:sub(1, 12) .. " (" .. made.size .. " bytes)")
    return key, made
  end
  local put, perr = store:put(key, tmp)
  sys.remove(tmp)
  if not put then
    error(errors.new(perr.code == "refused" and "refused" or "backend",
                     "cannot upload the code of commit "
                     .. spec.commit:sub(1, 12) .. ": " .. perr.message,
                     perr.hint), 0)
  end
  require("navette.audit").record({ action = "storage.put",
    target = put.url, detail = "code of " .. spec.commit:sub(1, 12)
    .. ", sha256 " .. put.sha256 }, run.profile)
  return key, put
end

-- What a job on S3 storage gets instead of keys: presigned GET URLs of its
-- code and inputs (read-only by construction) and a POST policy allowing
-- uploads under its own prefix only, for lifetime seconds. code: {key,
-- sha256, size} of its archive in store. Also what `migrate` signs anew.
function runner.sign_transfer(profile, store, spec, lifetime, code)
  local function signed(what, value, err)
    if value then return value end
    refuse("cannot sign " .. what .. ": " .. err.message, err.hint)
  end
  local inputs = {}
  for i, input in ipairs(spec.inputs) do
    inputs[i] = { name = input.name, url = input.url,
                  sha256 = input.sha256 or "", size = input.size,
                  get = signed("input " .. input.name,
                               store:presign_get(input.url, lifetime)) }
    if input.from then
      -- another job's output: its sha256 is in that job's run record,
      -- which the launcher reads first (both keys are known now)
      inputs[i].from, inputs[i].output = input.from, input.output
      inputs[i].record_get = signed("the run record of job " .. input.from,
                                    store:presign_get(input.record,
                                                      lifetime))
    end
  end
  local post = signed("the output policy",
                      store:post_policy(spec.outputs.prefix, lifetime,
                                        profile.max_output_bytes))
  return {
    kind = "s3",
    prefix = profile.s3.root .. spec.outputs.prefix,
    output_url = spec.outputs.url,
    -- (none when the code is in the job's image)
    code = code and { key = code.key, sha256 = code.sha256,
                      size = code.size,
                      url = signed("the code archive",
                                   store:presign_get(code.key, lifetime)) }
           or nil,
    inputs = json.array(inputs),
    post = post,
    max_output_bytes = profile.max_output_bytes,
    checkpoint = spec.checkpoint and {
      every = spec.checkpoint.every,
      get = signed("the checkpoint", store:presign_get(spec.outputs.prefix
        .. _navette.record.names.checkpoint_archive, lifetime)) } or nil,
    -- (why earlier attempts ended, for the record of a retried one)
    attempts = spec.retries and {
      get = signed("the attempts list", store:presign_get(spec.outputs.prefix
        .. _navette.record.names.attempts, lifetime)) } or nil,
    lifetime = lifetime,
    expires_at = math.floor(sys.now()) + lifetime,
  }
end

-- The code archive of spec's commit, once per run and commit (a sweep's
-- jobs share it): {key, sha256, size}.
local function commit_archive(run, store, spec)
  run.code_archives = run.code_archives or {}
  local known = run.code_archives[spec.commit]
  if not known then
    local key, code = code_archive(run, store, spec)
    known = { key = key, sha256 = code.sha256, size = code.size }
    run.code_archives[spec.commit] = known
  end
  return known
end

local function transfer(run, spec, j)
  local store = storage._s3()
  -- a plan without the store's credential signs nothing (placeholders)
  if store.not_run then run.unsigned = true end
  local lifetime = runner.url_lifetime(run.profile, j)
  if spec.container and spec.container.workdir then
    return runner.sign_transfer(run.profile, store, spec, lifetime, nil)
  end
  return runner.sign_transfer(run.profile, store, spec, lifetime,
                              commit_archive(run, store, spec))
end

-- The image a job runs in, pinned: its reference resolved to a digest
-- (a tag is never what a node pulls), checked to exist in the registry the
-- node pulls from, and the container runtime that runs it (for the local
-- backend, one of this machine's). Returns the pinned reference and the
-- container part of the spec, or nil for a host job.
function runner.pin_image(run, j, commit)
  if not j.image then return nil end
  local image = require "navette.image"
  local profile = run.profile
  local runtime = profile.container and profile.container.runtime
  local backend = backends.get(profile.backend)
  if backend.container_runtime then
    local found, wanted = backend.container_runtime(runtime)
    if not found then
      refuse("job '" .. j.name .. "' declares the image " .. j.image
             .. " but this machine has no container runtime ("
             .. wanted .. ")", "install podman "
             .. "(or docker), or remove `image` to run the job on the "
             .. "host, recorded as such", run, j.name)
    end
    runtime = found
  end
  runtime = runtime or "podman"
  if j.image_planned then -- pushed by this very plan: no digest yet
    return j.image, { runtime = runtime, image = j.image }
  end
  local parsed, perr0 = image.try_parse(j.image)
  if not parsed then
    refuse("job '" .. j.name .. "': image " .. j.image .. ": "
           .. perr0.message)
  end
  local digest = parsed.digest
  if not digest then
    local got, e = image.try_resolve(j.image,
                                     { platform = profile.platform })
    if not got then
      refuse_or_note(run, "image", j, "job '" .. j.name .. "': cannot "
             .. "resolve the image " .. j.image .. " to a digest: "
             .. e.message, e.hint or "check the reference and the "
             .. "registry's credential")
      return j.image, { runtime = runtime, image = j.image }
    end
    digest = got
  end
  local pinned = parsed.name .. "@" .. digest
  -- present (its manifest and config read), and built for the nodes
  local info, ierr = image.try_inspect(pinned,
                                        { platform = profile.platform })
  if not info then
    refuse_or_note(run, "image", j, "job '" .. j.name .. "': the image "
           .. pinned .. " is not in its registry: " .. ierr.message,
           "push it first (navette image push-code, or image.build in "
           .. "the recipe): the node pulls it by digest from there")
    return pinned, { runtime = runtime, image = pinned }
  end
  local pok, e = image.try_check_platform(info, profile.platform,
                                         "the image " .. pinned)
  if not pok then
    refuse_or_note(run, "image", j, "job '" .. j.name .. "': "
           .. e.message .. " (profile '" .. profile.name .. "' runs "
           .. (profile.platform or image.DEFAULT_PLATFORM) .. ")", e.hint)
  end
  local container = { runtime = runtime, image = pinned }
  -- a code layer of this very commit: the code is in the image
  if j.image_code and j.image_code.commit == commit then
    container.workdir = j.image_code.path
  end
  return pinned, container
end

-- What makes two submissions the same one: the project, profile and
-- backend, the recipe file, the job's name, the commit, and everything the
-- job runs with (image digest, inputs with their sha256, command, env,
-- resources, outputs template, success and failure rules, logs, requeue,
-- who submits it). Not the id, the time, or the signed URLs, which each
-- attempt draws anew. A submission is recorded with this key before
-- anything is sent and the key is cleared once it is complete, so a run
-- killed part way leaves a row that the next run of the same job at the
-- same commit completes instead of minting a second job. A completed
-- submission is never resumed: running a recipe again runs its jobs again.
local function submission_key(run, j, spec)
  return _navette.jobs.submit_key(json.encode({
    spec.project, spec.profile, spec.backend, run.recipe_real, spec.name,
    spec.commit, spec.image, spec.container or false, spec.inputs,
    spec.outputs.store, j.outputs, spec.command, spec.env or false,
    spec.resources or false, spec.success, spec.failure_condition,
    spec.logs or false, spec.requeue or false, spec.submitted_by,
    run.nodes or false, spec.retries or false, spec.checkpoint or false,
    spec.secrets or false,
  }))
end

-- A new job id that no job of this run has: ids drawn in the same
-- second for the same commit differ only in 24 random bits, so the 1,000
-- tasks of a sweep drew one id twice in about one run of 35, and the
-- array's rows then failed as duplicates before anything was sent.
local function new_job_id(run, commit)
  run.drawn = run.drawn or {}
  local id
  repeat
    id = job.new_id(run.project.name, commit)
  until not run.drawn[id]
  run.drawn[id] = true
  return id
end

-- Gives spec the id `id` and what follows from it: the output prefix and
-- URL, and on S3 the presigned transfer URLs under that prefix. Called
-- again when a drawn id turns out to be taken, so that nothing of the
-- spec still points at the other job's prefix.
local function place(run, spec, j, id)
  spec.id = id
  -- built in C: the id's grammar and the store's key rules checked there
  local prefix = errors.check(_navette.storage.job_prefix(j.outputs,
                                                          run.project.name, id))
  spec.outputs.prefix = prefix
  spec.outputs.url = run.profile.storage:gsub("/$", "") .. "/" .. prefix
  if spec.outputs.s3 then spec.transfer = transfer(run, spec, j) end
end

-- A job's retries and checkpoint into its spec, on a backend whose
-- contract has them (`retries`, `checkpoints`: true, or a function of
-- the profile giving true, or false and where not); refused elsewhere
-- before anything is submitted.
local function retries_and_checkpoint(run, j, spec, backend)
  for _, f in ipairs({ { "retries", "retries" },
                       { "checkpoint", "checkpoints" } }) do
    local field, capability = f[1], f[2]
    local can, where = backend[capability], nil
    if j[field] and type(can) == "function" then
      can, where = can(run.profile)
    end
    if j[field] and not can then
      refuse("job '" .. j.name .. "': " .. field .. " = {...} is not "
             .. "supported on the " .. run.profile.backend .. " backend"
             .. (where or "") .. " yet", "run it with a profile of the "
             .. "local backend on a file:// store, or leave " .. field
             .. " out", run, j.name)
    end
    if j[field] then spec[field] = j[field] end
  end
  if spec.retries then spec.retries.on = json.array(spec.retries.on) end
end

-- Builds the spec of declaration j: everything the backend needs, pinned.
-- The id is that of an interrupted submission of the same job when there
-- is one (run.submissions[spec].resumed: its row), else a new one.
-- The team member the run acts for: the member of the project's
-- team.lua whose email is the git identity's (user.email), or nil (no
-- team.lua, or an email it does not list). Each job's spec, its Slurm
-- comment and the audit lines carry it.
function runner.member(run)
  if run.member == nil then
    run.member = false
    -- (a process may run several projects' recipes: the audit lines carry
    -- this run's member or none, never another project's)
    require("navette.audit").member_identity = nil
    local team = require "navette.team"
    -- (`navette lock` pins the team repository; its --check checks the
    -- folder's lock; plan reads the cache)
    local lm = run.libraries_mode
    local policy = team.load(run.project, {
      mode = (lm == "lock" or lm == "check") and lm
             or (run.plan_command and "plan" or "run"),
      from_folder = lm == "lock" or lm == "check" })
    if policy then
      team.apply_revocations(policy) -- (this machine's revocations too)
      local email = _navette.git.config("user.email", run.repo)
      local m = email and email ~= "" and team.member_of(policy, email)
      if m then
        local user, host = sys.identity()
        run.member = { id = m.id, email = m.email, team = policy.name,
                       revoked = m.revoked, roles = m.roles,
                       policy = policy }
        require("navette.audit").member_identity = m.id .. " <" .. m.email
          .. "> " .. tostring(user) .. "@" .. tostring(host)
      end
    end
  end
  return run.member or nil
end

-- navette's own check of the team's quota before anything is sent (the
-- services enforce it too: Slurm holds such a job with its QOS reason):
-- a job asking more GPUs than the member's roles allow per job is
-- refused, with the numbers.
function runner.check_quota(run, j, member)
  local gpus = j.resources and j.resources.gpus
  if not gpus or gpus == 0 then return end
  local allowed, from
  for _, r in ipairs(member.roles) do
    local q = member.policy.roles[r].quota
    if q and q.gpus_per_job and (not allowed or q.gpus_per_job > allowed) then
      allowed, from = q.gpus_per_job, r
    end
  end
  local team_gpus = member.policy.quota.gpus
  if allowed and gpus > allowed then
    refuse("job '" .. j.name .. "' asks for " .. gpus .. " GPU"
           .. (gpus == 1 and "" or "s") .. "; team " .. member.team
           .. "'s quota gives " .. member.id .. " " .. allowed .. " per job "
           .. "(role " .. from .. ": quota.gpus_per_job = " .. allowed
           .. ")", "ask for at most " .. allowed .. ", or ask an admin of "
           .. "team " .. member.team .. " for a role with more", run, j.name)
  elseif team_gpus and gpus > team_gpus then
    refuse("job '" .. j.name .. "' asks for " .. gpus .. " GPUs; team "
           .. member.team .. " has " .. team_gpus .. " in all (quota.gpus)",
           "ask for at most " .. team_gpus, run, j.name)
  end
end

-- The other half of the quota check, before a real submission: when the
-- member's roles cap their jobs at once (quota.concurrent_jobs) and the
-- backend lists the member's jobs (Slurm: their own user's), a run that
-- would go past the cap is told so with the numbers. Not refused: Slurm
-- holds the extra jobs (QOSMaxJobsPerUserLimit) and starts them as the
-- others end, which is what a queue is for.
function runner.note_concurrent(run, backend)
  local member = runner.member(run)
  if run.plan or not member or not backend.listing
     or not run.profile.slurm then
    return
  end
  local allowed, from
  for _, r in ipairs(member.roles) do
    local q = member.policy.roles[r].quota
    if q and q.concurrent_jobs
       and (not allowed or q.concurrent_jobs > allowed) then
      allowed, from = q.concurrent_jobs, r
    end
  end
  if not allowed then return end
  local cfg = setmetatable({ max_token_lifespan =
    run.profile.max_token_lifespan }, { __index = run.profile.slurm })
  local listing = backend.listing(cfg)
  if not listing then return end -- (the submission says what is wrong)
  -- (the listing is the session user's: the member's own Slurm user)
  local running, pending = 0, 0
  for _, job in pairs(listing) do
    if job.state == "RUNNING" or job.state == "CONFIGURING"
       or job.state == "SUSPENDED" then
      running = running + 1
    elseif job.state == "PENDING" then
      pending = pending + 1
    end
  end
  local new = #run.jobs
  if running + pending + new > allowed then
    require("navette.term").eprint("note: " .. member.id .. " has "
      .. running .. " job" .. (running == 1 and "" or "s") .. " running and "
      .. pending .. " pending, and submits " .. new .. " more; team "
      .. member.team .. "'s quota runs " .. allowed .. " of "
      .. member.id .. "'s jobs at once (role " .. from
      .. ": quota.concurrent_jobs = " .. allowed .. "): Slurm holds the "
      .. "others (QOSMaxJobsPerUserLimit) until one ends")
  end
end

-- The secrets of j as its spec lists them ({name, credential, kind}
-- each, sorted by name; never a value), or nil: each names a credential
-- the profile declares, on a backend that delivers them. The plan says
-- where each would come from and loads nothing.
local function job_secrets(run, j, spec, backend)
  local names = util.sorted_keys(j.secrets or {})
  if #names == 0 then return nil end
  local can, where = backend.secrets, nil
  if type(can) == "function" then can, where = can(run.profile, spec) end
  if not can then
    refuse("job '" .. j.name .. "': secrets = {...} is not supported on "
           .. "the " .. run.profile.backend .. " backend" .. (where or "")
           .. " yet", "run it with a profile of the "
           .. backends.with("secrets") .. " backend (a job on the host), "
           .. "or leave secrets out", run, j.name)
  end
  local declared = run.profile.credentials or {}
  local list = json.array({})
  for _, name in ipairs(names) do
    local credential = j.secrets[name]
    local d = declared[credential]
    if not d then
      require("navette.isolation").check_credential(run.profile,
                                                    credential)
      local known = util.sorted_keys(declared)
      refuse("job '" .. j.name .. "': secret " .. name .. " names the "
             .. "credential '" .. credential .. "', which profile '"
             .. run.profile.name .. "' does not declare"
             .. util.suggest(credential, known), #known > 0
             and ("the profile's credentials: " .. table.concat(known, ", "))
             or "declare it in navette.lua: credentials = { "
             .. credential .. " = { kind = \"bearer\", source = \"env\", "
             .. "env = { token = \"VARIABLE\" } } }", run, j.name)
    end
    list[#list + 1] = { name = name, credential = credential,
                        kind = d.kind }
    if run.plan_command then
      core.plan("secrets", "deliver", name .. " <- credential "
                .. credential .. " (file $NAVETTE_SECRETS/" .. name
                .. ") to job " .. j.name)
    end
  end
  return list
end

-- The handles of the credentials the run's jobs read as secrets, loaded
-- once (the redactor learns each value as it loads, so the jobs' log
-- filters and every sink of this process mask it). The checking pass
-- loads them too, so a missing one refuses the run before anything is
-- done; `navette plan` loads none.
local function load_secrets(run)
  if run.plan_command then return end
  run.secret_handles = run.secret_handles or {}
  for _, j in ipairs(run.jobs) do
    for _, credential in pairs(j.secrets or {}) do
      if not run.secret_handles[credential]
         and (run.profile.credentials or {})[credential] then
        run.secret_handles[credential] =
          require("navette.creds").get(credential)
      end
    end
  end
end

function runner.spec(run, j)
  local commit, info = pin_commit(run, j)
  run.identity = run.identity or { sys.identity() }
  local user, host = run.identity[1], run.identity[2]
  local member = runner.member(run)
  if member and member.revoked then
    refuse("team member " .. member.id .. " is revoked in team.lua: no "
           .. "job is submitted for them", "ask an admin of team "
           .. member.team, run, j.name)
  end
  if member then runner.check_quota(run, j, member) end
  run.repository = run.repository or run.repo:remote_url()
                   or run.repo:workdir()
  local repository = run.repository
  local resources = j.resources
  local image, container = runner.pin_image(run, j, commit)
  local spec = {
    name = j.name,
    project = run.project.name,
    profile = run.profile.name,
    backend = run.profile.backend,
    commit = commit,
    commit_time = info and info.time,
    dirty = false,
    repository = j.library and j.library.url or repository,
    repository_path = j.library and j.library.dir or run.repo:workdir(),
    -- (a library's cache: a bare repository)
    repository_bare = j.library and true or nil,
    recipe = run.recipe,
    image = image or "host",
    image_requested = image and image ~= j.image and j.image or nil,
    container = container,
    inputs = describe_inputs(run, j),
    outputs = { store = run.profile.storage },
    command = j.command,
    env = next(j.env) and j.env or nil,
    params = j.params,
    libraries = require("navette.library").spec_field(run),
    resources = next(resources) and resources or nil,
    success = { exit_codes = json.array(j.success.exit_codes),
                outputs = json.array(j.success.outputs) },
    failure_condition = { log_patterns = json.array(j.failure.log_patterns),
                          hint = j.failure.hint },
    logs = j.logs,
    submitted_by = (member and (member.id .. " <" .. member.email .. "> ")
                    or "") .. user .. "@" .. host,
    member = member and { id = member.id, email = member.email,
                          team = member.team } or nil,
    submitted_at = sys.iso8601(),
  }
  -- what the backend adds: how to reach the job again, its defaults
  local backend = backends.get(run.profile.backend)
  if #j.after > 0 then
    -- the ids of the jobs it runs after (declared, so submitted, before)
    if not backend.dependencies then
      refuse("job '" .. j.name .. "': after = {...} is not supported on "
             .. "the " .. run.profile.backend .. " backend yet",
             "run it with a profile of the " .. backends.with("dependencies")
             .. " backend, or submit the jobs one run after another", run,
             j.name)
    end
    spec.after = json.array({})
    for i, name in ipairs(j.after) do spec.after[i] = run.ids[name] end
  end
  spec.requeue = j.requeue
  retries_and_checkpoint(run, j, spec, backend)
  if backend.prepare then backend.prepare(spec, run.profile) end
  spec.secrets = job_secrets(run, j, spec, backend)
  spec.requeue = spec.requeue or nil
  local key = submission_key(run, j, spec)
  local resumed = false
  if not run.plan then
    local text = errors.check(jobs.db():interrupted(key))
    resumed = text and json.decode(text)
  end
  run.submissions = run.submissions or setmetatable({}, { __mode = "k" })
  run.submissions[spec] = { key = key, resumed = resumed or nil, job = j }
  if run.nodes and not backend.nodes then
    refuse("--node applies to the " .. backends.with("nodes")
           .. " backend; profile '" .. run.profile.name .. "' is "
           .. run.profile.backend)
  end
  local s3 = run.profile.s3
  if s3 then
    -- where the CLI reads the record and log back (never a secret)
    spec.outputs.s3 = { endpoint = s3.endpoint, region = s3.region,
                        path_style = s3.path_style, ca_bundle = s3.ca_bundle,
                        pin = s3.pin, credential = s3.credential,
                        bucket = s3.bucket, root = s3.root }
  end
  place(run, spec, j, resumed and resumed.id or new_job_id(run, commit))
  return spec
end

-- The node list the k-th job of a run is sent to: --node's, else the
-- job's own resources.nodes (nil here: the description has them), else
-- the profile's node list taken in turn, one node per job, so a sweep is
-- spread over the nodes the profile names.
function runner.node_for(run, j, k)
  if run.nodes then return run.nodes end
  if j.resources and j.resources.nodes then return nil end
  local backend = backends.get(run.profile.backend)
  local list = backend.nodes and backend.nodes(run.profile)
  if list and #list > 0 then return { list[(k - 1) % #list + 1] } end
  return nil
end

-- A run in two passes, so that a refused run has no side effect. The
-- first pass is a plan: the recipe is evaluated with every side effect
-- recorded instead of done (uploads, image pushes, credential commands),
-- and every precondition is checked (a clean tree, committed recipe code,
-- the secret scan, pushed commits, inputs and images, the profile's
-- policy); a refusal there leaves the store, the queue and the services as
-- they were, and the audit log holds only the refusal. The second pass
-- evaluates the recipe again and does it. opts: profile, nodes.
-- -> run, specs
function runner.run(recipe, opts)
  opts = opts or {}
  -- what the recipe prints is shown once: the checking pass's only when
  -- it is refused
  local printed = {}
  local function keep(line) printed[#printed + 1] = line end
  local ok, check = pcall(function()
    local c = runner.load(recipe, { profile = opts.profile,
                                    nodes = opts.nodes, checking = true,
                                    print = keep })
    if #c.jobs > 0 then runner.submit(c) end
    return c
  end)
  if not ok then
    _navette.out.write("stdout", table.concat(printed))
    error(check, 0)
  end
  core.set_plan(false, true) -- (the checking pass's record is not shown)
  local run = runner.load(recipe, { profile = opts.profile,
                                    nodes = opts.nodes })
  -- the same jobs as checked, field by field (the command, its
  -- environment, inputs, image...): a recipe that declares others the
  -- second time (it reads the clock, a random number, or knows which
  -- pass it is in) is refused, naming what differs
  local function shape(r)
    local names = {}
    for i, j in ipairs(r.jobs) do
      names[i] = j.name .. "@" .. tostring(j.code)
    end
    return table.concat(names, ",")
  end
  local differs
  if shape(run) ~= shape(check) then
    differs = "other jobs (" .. shape(run) .. ") than when checked ("
              .. shape(check) .. ")"
  else
    for i, j in ipairs(run.jobs) do
      -- an image the recipe makes in the run (code_layer, build,
      -- debootstrap) is only planned in the checking pass, and pushed,
      -- by its digest, in this one: it is not compared
      local checked = check.jobs[i]
      local skip = checked.image_planned
                   and { image = true, image_planned = true } or nil
      local field = runner.first_difference(j, checked, nil, 0, skip)
      if field then
        differs = "job " .. j.name .. " with another " .. field
                  .. " than when checked"
        break
      end
    end
  end
  if differs then
    refuse("recipe " .. recipe .. " declared " .. differs,
           "a recipe must declare the same jobs each time it is evaluated: "
           .. "does it depend on the time or on a random number?", run)
  end
  run.scanned = check.scanned
  run.checked = check -- (its specs: see checked_specs)
  local specs = #run.jobs > 0 and runner.submit(run) or {}
  return run, specs
end

-- The launcher of a spec, rendered from the spec as the job sees it
-- (without the launcher itself and the log filter's fingerprints).
function runner.render_launcher(spec)
  local launcher, fingerprints = spec.launcher, spec.redact_fingerprints
  spec.launcher, spec.redact_fingerprints = nil, nil
  local text = json.encode(spec)
  spec.launcher, spec.redact_fingerprints = launcher, fingerprints
  return errors.check(_navette.jobs.launcher(text))
end

-- The tasks of one job array at most (host/jobs/launcher.h).
runner.ARRAY_MAX = 1000

-- The jobs from run.jobs[i] on that go to the backend as one job array:
-- the rest of a sweep (at most ARRAY_MAX), when the backend takes arrays
-- and they differ only in their parameters. -> the list | nil, why not
-- (nil, nil: not a sweep, or a backend without arrays).
function runner.array_group(run, i, backend)
  local j = run.jobs[i]
  if not (backend.submit_array and j.sweep) then return nil end
  local group, k = {}, i
  while run.jobs[k] and run.jobs[k].sweep == j.sweep
        and #group < runner.ARRAY_MAX do
    group[#group + 1] = run.jobs[k]
    k = k + 1
  end
  if #group < 2 then return nil end
  if j.checkpoint then
    return nil, "each job has a checkpoint of its own"
  end
  if next(j.secrets or {}) then
    return nil, "each job has secrets of its own"
  end
  local list = backend.nodes and backend.nodes(run.profile)
  if not run.nodes and not (j.resources and j.resources.nodes)
     and list and #list > 1 then
    return nil, "the profile's nodes are taken in turn, one node per job"
  end
  return group
end

-- What every submission of a run hands the backend (backends: ctx).
local function submit_context(run, sessions, sub, nodes)
  return {
    db = jobs.db(), submission = sub, sessions = sessions, nodes = nodes,
    redraw = function(s)
      place(run, s, sub.job, new_job_id(run, s.commit))
      s.launcher = runner.render_launcher(s) -- (its id and prefix are new)
    end,
    -- (each returns the line's seq, nil when it could not be written)
    audit = function(s, detail)
      return require("navette.audit").record({ action = "job.submit",
        target = s.name, job = s.id, commit = s.commit,
        detail = detail }, run.profile)
    end,
    -- the handle of a credential a job reads as a secret (loaded by
    -- load_secrets), and the audit line of its delivery
    secret = function(credential)
      local h = run.secret_handles and run.secret_handles[credential]
      if not h then
        errors.raise("refused", "credential " .. credential .. " was not "
                     .. "loaded for the job's secrets")
      end
      return h
    end,
    audit_secret = function(s, item)
      return require("navette.audit").record({ action = "secret.deliver",
        target = item.name, job = s.id, detail = "credential "
        .. item.credential .. ", backend " .. s.backend }, run.profile)
    end,
    -- the same for several jobs ({spec, detail} each), as one write
    audit_many = function(list)
      local entries = {}
      for i, x in ipairs(list) do
        entries[i] = { action = "job.submit", target = x[1].name,
                       job = x[1].id, commit = x[1].commit, detail = x[2] }
      end
      require("navette.audit").record_many(entries, run.profile)
    end,
  }
end

-- Whether a and b hold the same: equal values, or plain tables with the
-- same keys and, key by key, the same. Plain: no metatable but JSON's
-- array mark (which runner.spec puts on some of a declaration's lists).
local JSON_ARRAY = getmetatable(json.array({}))
local function plain(t)
  local mt = getmetatable(t)
  return mt == nil or mt == JSON_ARRAY
end

local function same_value(a, b, depth)
  if type(a) ~= "table" or type(b) ~= "table" then return a == b end
  if rawequal(a, b) then return true end
  if depth > 32 or not plain(a) or not plain(b) then return false end
  local n = 0
  for k, v in next, a do
    if type(k) == "table" or not same_value(v, rawget(b, k), depth + 1) then
      return false
    end
    n = n + 1
  end
  for _ in next, b do n = n - 1 end
  return n == 0
end

-- The path of the first field where two declared jobs differ ("command",
-- "env.EPOCHS", "inputs.data"...), or nil when they are the same value.
function runner.first_difference(a, b, path, depth, skip)
  depth = depth or 0
  if type(a) ~= "table" or type(b) ~= "table" then
    if a == b then return nil end
    return path or "value"
  end
  if rawequal(a, b) then return nil end
  if depth > 32 then return path or "value" end
  local keys = {}
  for k in next, a do keys[#keys + 1] = k end
  for k in next, b do
    if rawget(a, k) == nil then keys[#keys + 1] = k end
  end
  table.sort(keys, function(x, y) return tostring(x) < tostring(y) end)
  for _, k in ipairs(keys) do
    if not (skip and skip[k]) then
      local sub = (path and (path .. ".") or "") .. tostring(k)
      local d = runner.first_difference(rawget(a, k), rawget(b, k), sub,
                                        depth + 1)
      if d then return d end
    end
  end
  return nil
end

-- The checking pass's specs, which the run takes as they are instead of
-- building them again, by name; nil when it must build them (then it
-- does, as the checking pass did). They are taken when the run would
-- build the same ones: the project, profile and libraries are the same
-- and the recipe declared the same jobs, field by field; its evaluation
-- in the checking pass did nothing that a plan records instead of doing
-- (no upload, push, request or credential left unrun: nothing the two
-- evaluations saw differed by), and the store signed for real; each code
-- reference resolves to the commit checked (the tree is checked again,
-- as for any run); no earlier submission of these jobs was interrupted
-- (such a job resumes under its recorded id, which runner.spec finds);
-- and the code archive the run uploads is the one the checking pass
-- hashed. A taken spec keeps the checking pass's id, submission time and
-- signed URLs (made under a second before); what its log filter masks is
-- read again, as the run knows it now.
local function checked_specs(run)
  local check = run.checked
  if not check or check.recorded ~= 0 or check.unsigned
     or not check.specs or #check.jobs ~= #run.jobs
     or not same_value(run.project, check.project, 0)
     or not same_value(run.profile, check.profile, 0) then
    return nil
  end
  local libraries = require("navette.library").spec_field(run)
  for i, j in ipairs(run.jobs) do
    local spec = check.specs[j.name]
    if not spec or not check.submissions[spec]
       or not same_value(j, check.jobs[i], 0)
       or not same_value(spec.libraries, libraries, 0) then
      return nil
    end
  end
  local db = jobs.db()
  for _, j in ipairs(run.jobs) do
    local spec = check.specs[j.name]
    if pin_commit(run, j) ~= spec.commit
       or errors.check(db:interrupted(check.submissions[spec].key)) then
      return nil
    end
    local code = spec.transfer and spec.transfer.code
    if code then
      local got = commit_archive(run, storage._s3(), spec)
      if got.key ~= code.key or got.sha256 ~= code.sha256
         or got.size ~= code.size then
        return nil
      end
    end
  end
  local taken = {}
  for _, j in ipairs(run.jobs) do
    local spec = check.specs[j.name]
    spec.redact_fingerprints = errors.check(_navette.creds.fingerprints())
    run.submissions = run.submissions or setmetatable({}, { __mode = "k" })
    run.submissions[spec] = { key = check.submissions[spec].key, job = j }
    run.drawn = run.drawn or {}
    run.drawn[spec.id] = true -- (a redrawn id is none of these)
    taken[j.name] = spec
  end
  run.run_id = check.run_id
  return taken
end

-- The spec of j with the run's id and what its log filter masks.
local function run_spec(run, j)
  local taken = run.taken and run.taken[j.name]
  if taken then return taken end
  local spec = runner.spec(run, j)
  -- the run's own id, in each of its jobs (navette watch RUN)
  run.run_id = run.run_id or job.new_run_id(run.project.name, spec.commit)
  spec.run = spec.run or run.run_id
  -- what the job's log filter must mask, without the values themselves
  spec.redact_fingerprints = errors.check(_navette.creds.fingerprints())
  return spec
end

local function submit_one(run, j, k, backend, sessions)
  local spec = run_spec(run, j)
  -- (a spec taken from the checking pass has its launcher)
  local launcher = spec.launcher or runner.render_launcher(spec)
  spec.launcher = launcher
  if run.plan then
    core.plan("jobs", "submit", spec.id .. " (" .. spec.name .. ") on "
              .. run.profile.name)
    return spec
  end
  local sub = run.submissions[spec]
  return backend.submit(spec, launcher, submit_context(run, sessions, sub,
                        runner.node_for(run, j, k)))
end

-- The jobs of group as one job array: each its own spec (id, prefix,
-- signed URLs, row), one launcher for all of them, one request. A task
-- whose submission was interrupted sends the group job by job instead
-- (each then finds its task in Slurm). -> the specs
local function submit_array(run, group, k, backend, sessions)
  local specs, resumed = {}, false
  for i, j in ipairs(group) do
    specs[i] = run_spec(run, j)
    resumed = resumed or run.submissions[specs[i]].resumed ~= nil
    if run.plan then
      -- (each task's own launcher is what `navette plan` shows)
      if not run.checking then
        specs[i].launcher = runner.render_launcher(specs[i])
      end
      core.plan("jobs", "submit", specs[i].id .. " (" .. specs[i].name
                .. ") on " .. run.profile.name .. ", task " .. (i - 1)
                .. " of the job array")
    end
  end
  -- one launcher for all, made (so checked) in the checking pass too,
  -- and taken from there with its specs
  local group_key = group[1].name .. "\0" .. group[#group].name
  local script = run.taken and run.checked.scripts
                 and run.checked.scripts[group_key]
  if not script and not resumed
     and (specs[1].transfer or not run.plan) then
    script = errors.check(_navette.jobs.array_launcher(
      runner.array_json(specs)))
  end
  if run.checking then
    run.scripts = run.scripts or {}
    run.scripts[group_key] = script
  end
  if run.plan then
    core.plan("jobs", "submit-array", #specs .. " jobs of sweep "
              .. group[1].name:match("^[^%[]*") .. " as one job array "
              .. "(one request)")
    return specs
  end
  if resumed then
    for i, j in ipairs(group) do
      specs[i].launcher = runner.render_launcher(specs[i])
      specs[i] = backend.submit(specs[i], specs[i].launcher,
        submit_context(run, sessions, run.submissions[specs[i]],
                       runner.node_for(run, j, k + i - 1)))
    end
    return specs
  end
  local ctx = submit_context(run, sessions, nil,
                             runner.node_for(run, group[1], k))
  ctx.submissions = {}
  for i, spec in ipairs(specs) do ctx.submissions[i] = run.submissions[spec] end
  return backend.submit_array(specs, script, ctx)
end

-- The specs of an array's tasks as JSON, as each task sees its own.
function runner.array_json(specs)
  local saved = {}
  for i, spec in ipairs(specs) do
    saved[i] = spec.redact_fingerprints
    spec.redact_fingerprints = nil
  end
  local text = json.encode(json.array(specs))
  for i, spec in ipairs(specs) do spec.redact_fingerprints = saved[i] end
  return text
end

-- Submits every declared job through the profile's backend; returns the
-- list of specs. Each job's launcher is rendered once, here, and goes in
-- its spec (shown by plan, sent by the backend, run by the agent); a
-- sweep sent as one job array has one launcher for all its jobs.
function runner.submit(run)
  local specs = {}
  run.ids, run.specs = {}, {}
  local backend = backends.get(run.profile.backend)
  -- what the backend keeps open for this run (sessions with a cluster),
  -- closed when it is submitted (the garbage collector closes them when
  -- an error stops it)
  local sessions = setmetatable({}, { __close = function(t)
    for _, s in pairs(t) do s:close() end
  end })
  local _ <close> = sessions
  local _ <close> = require("navette.audit").batch()
  load_secrets(run)
  run.taken = checked_specs(run)
  runner.note_concurrent(run, backend)
  local i = 1
  while i <= #run.jobs do
    local j = run.jobs[i]
    local group, why = runner.array_group(run, i, backend)
    local done
    if group then
      done = submit_array(run, group, #specs + 1, backend, sessions)
    else
      if why and run.plan and j.sweep ~= (run.jobs[i - 1] or {}).sweep then
        core.plan("jobs", "note", "sweep " .. j.name:match("^[^%[]*")
                  .. ": one submission per job, not one job array ("
                  .. why .. ")")
      end
      done = { submit_one(run, j, #specs + 1, backend, sessions) }
    end
    for _, spec in ipairs(done) do
      -- (for the jobs that run after it, or take its outputs)
      run.ids[spec.name], run.specs[spec.name] = spec.id, spec
      specs[#specs + 1] = spec
    end
    i = i + #done
  end
  return specs
end

return runner
