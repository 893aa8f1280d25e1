-- The backends: where a job runs. Each is one file of this folder,
-- lua/navette/backends/<name>.lua, returning a table of the shape below;
-- the runner, the job views, the CLI, migrate, isolation, portability,
-- retest, doctor, the team layer and the project file look one up by the
-- profile's (or the job row's) `backend` (backends.get) and never branch
-- on its name; no other module requires a backend's file
-- (tests/lua/floors_test.lua). Adding a backend touches only:
--   lua/navette/backends/<name>.lua     this contract
--   host/<area>/<client>.{c,h}          its C client (pure C, unit-tested
--                                       and fuzzed), if it speaks a wire
--   host/<area>/<client>_lua.c          the binding (_navette.<name>),
--                                       one line NV_NATIVE(<name>) in
--                                       host/lib/natives.def (the one
--                                       wiring line)
--   tests/lua/, tests/integration/<name>/, tests/unit/, tests/fuzz/
--                                       its tests
-- As they are now:
--   local   backends/local.lua; host/jobs/agent*.c (the agent, its
--           sandbox, retries, checkpoints, publication), launcher.c's
--           local launcher; _navette.jobs (jobs_lua.c); tests/integration/
--           local/, tests/lua/runner_test.lua
--   slurm   backends/slurm.lua (the slurmrestd wire: settings, tokens,
--           sessions) over lua/navette/slurm/ (the job logic, behind a
--           session interface a Slurm-over-SSH backend can reuse);
--           host/jobs/slurm*.c and slurm_lua.c (NV_NATIVE(slurm));
--           tests/integration/slurm/, tests/lua/slurm_backend_test.lua,
--           tests/unit/test_slurm*.c, tests/fuzz/fuzz_slurm_response.c
--   slurm_ssh backends/slurm_ssh.lua (Slurm through SSH to a login node:
--           sbatch, squeue --json, scancel) over the same logic and
--           navette.slurm.settings; host/ssh/ (OpenSSH's ssh, NV_NATIVE(
--           ssh)); tests/integration/slurm/test_slurm_ssh.sh,
--           tests/lua/slurm_ssh_backend_test.lua
--   kubernetes backends/kubernetes.lua (a job is a batch/v1 Job and
--           the Secret it owns; a sweep one Indexed Job); host/k8s/
--           (NV_NATIVE(k8s)); tests/integration/kubernetes/,
--           tests/unit/test_k8s*.c, tests/fuzz/fuzz_k8s*.c
--   and tests/second_backend/ (podq), which test_second_backend adds to a
--   clone to prove the list above is all a backend needs.
-- Settings, documentation (settings_doc, check_credential_doc: the LuaLS
-- file and `navette help`) and what the launcher needs (prepare) come from
-- the file itself.
--
-- The contract (functions marked ? may be left out):
--   name                      as in profile.backend and the job's row
--   profile_keys?             the keys of the profile's settings table,
--                             named after the backend (profile.<name>)
--   validate?(t, where)       -> the checked settings, from t (the
--                             profile's <name> table); where: {path,
--                             profile (its name), credentials, storage};
--                             raises a recipe error
--   prepare?(spec, profile)   completes a spec with what reaches the job
--                             again (never a secret); spec.requeue is the
--                             job's own, nil when it says nothing
--   launch?                   for a backend that runs the node launcher,
--                             what the launcher takes from its scheduler
--                             (host/jobs/launcher.h; none: one plain run,
--                             no array, no requeue), copied into each
--                             spec (spec.launch) before prepare, and into
--                             a recorded spec from before it (migrate):
--                             { scheduler = "Slurm",  (its name in messages)
--                               array_index = VAR, attempt = VAR (restarts
--                               from 0), node = VAR, job = VAR (the job's
--                               reference: the last word of each command),
--                               requeue = {words}, time_left = {words}
--                               (prints seconds), timed_out = {words}
--                               (succeeds: stopped at the time limit),
--                               requeue_needs = text (a failed one's hint),
--                               in_container = true when the container
--                               starts the launcher (it starts none) }
--   dependencies?             true when the backend runs a job after the
--                             jobs its spec.after names (their ids), and
--                             cancels it when one fails; a job with
--                             `after` is refused on another backend
--   retries?, checkpoints?    true, or a function(profile) -> true |
--                             false, where not (" with an s3:// store"),
--                             when the backend runs a job again after the
--                             failures its spec.retries names, and saves
--                             and restores its spec.checkpoint folder; a
--                             job with them is refused elsewhere
--   secrets?                  true, or a function(profile, spec) -> true
--                             | false, where not, when the backend
--                             delivers spec.secrets (each a file of
--                             $NAVETTE_SECRETS: ctx.secret(credential) is
--                             its handle, ctx.audit_secret(spec, item)
--                             the audit line of its delivery); a job with
--                             secrets is refused elsewhere
--   nodes?(profile)           the profile's node list; a backend without
--                             it takes no --node (navette.retest tests
--                             these nodes when given none)
--   origins?(profile, trusted) -> the URLs (endpoints) the profile's
--                             backend reaches: isolation attributes them
--                             to the profile (trusted: the user trusts
--                             the project; else read no file it names)
--   spec_credentials?(spec)   -> the credential declarations a recorded
--                             spec needs besides its store's (migrate,
--                             portability)
--   check_credential?(opts), check_credential_doc?
--                             navette.<name>.check_credential{credential}
--                             for recipes (rotation, doctor): true when
--                             the backend accepts it; its LuaLS line
--   member_jobs?(profile)     -> {running, pending, held} | nil: the team
--                             member's jobs now, for the quota note
--                             (held: what holds the jobs over the cap)
--   team_services?            {service = entry}: the team layer's
--                             services that the backend's profiles reach
--                             (team.lua's services.<service>, whose
--                             profile names such a profile). An entry is
--                             a function open(cfg, lifespan, max) -> a
--                             session, for a service that a module
--                             lua/navette/team/<service>.lua drives
--                             (slurm), or a table that drives it itself,
--                             with no module of its own:
--                             { open?   as above,
--                               keys?   services.<service>'s keys besides
--                                       profile,
--                               validate?(t, where) -> t checked; where:
--                                       {path, profile (the profile),
--                                       fail(message, hint) (raises)},
--                               apply(policy, proj, opts) -> changes,
--                                       unchanged: what `team apply`
--                                       prints and makes: {{service, op
--                                       ("+", "~", "!" needs you), what,
--                                       run? () -> note}}, and how many
--                                       things already are as the policy
--                                       says; opts.readmit {[id]=true},
--                               revoke(policy, proj, m) -> what was done
--                                       (a line): `team revoke`; raises,
--                               prove?(policy, proj, m) -> {service,
--                                       credential, refused, answer} |
--                                       nil (no credential of m held):
--                                       m's credential tried again }
--                             (backends.team_service reads both shapes)
--   commands?                 {word = {summary, usage, flags?, run(args,
--                             ctx) -> exit status}}: commands the backend
--                             brings to the command line (`navette WORD
--                             ...`; slurm_ssh: `ssh trust`), which
--                             navette.cli.common finds here: `navette
--                             help` lists them after navette's own,
--                             completion completes them. summary is
--                             {{synopsis, what}, ...} as a command's,
--                             usage its --help ("usage: navette WORD
--                             ..."), flags {name = "bool" | "value"};
--                             args: the words after WORD, flags taken
--                             out; ctx: {opts (the flags given),
--                             usage_error(message), project(what) (the
--                             working folder's project, refused unless
--                             the user trusts it here), confirm(question)
--                             (true | false | nil, "not a terminal")}
--   plan_requests?(specs, ctx) -> {{method, path, body}, ...}: the
--                             requests that submitting specs (one job, or
--                             a sweep's tasks as one array) would send,
--                             built and never sent: `navette plan` lists
--                             them and shows their bodies with
--                             --launcher, `plan --json` has them as
--                             jobs[].requests; ctx: {nodes}
--   doctor?(profile)          -> {{name, status ("ok" | "warn" | "fail" |
--                             "skip"), detail, hint?}, ...}: `navette
--                             doctor`'s checks of the backend (asked only
--                             of a project the user trusts)
--   settings_doc?             the LuaLS line of the profile's settings
--   container_runtime?(name)  -> the runtime that runs a job's image on
--                             this machine | nil, what was looked for
--   submit(spec, launcher, ctx) -> spec: submits the job and records it;
--                             returns the spec it runs with (that of an
--                             earlier submission it adopted, if so)
--   arrays?, submit_array?(specs, script, ctx) -> specs: submits the
--                             tasks of one sweep (runner.array_group) as
--                             one job array, script their one launcher
--                             (jobs.array_launcher), each still a job of
--                             its own (row, id, record); ctx as submit's,
--                             with submissions[k] for specs[k]
--   refresh?(row, ctx)        -> info: brings the row up to date with what
--                             the backend knows: {changed = the row was
--                             written (the caller reads it again),
--                             record, record_url = the run record if it
--                             read it (the view does not read it again),
--                             fields = more fields for the job's view}
--   cancel(row, ctx)          -> what to print | nil, err; ctx.cancelling:
--                             the ids the same command cancels ({[id] =
--                             true}), which a backend may stop together
--   log_chunk(view, offset, ctx) -> bytes of the job's log from offset
--   describe?(x)              -> {line, note, column = {title, text},
--                             node}, what the CLI shows of a view or of a
--                             listed row beyond the common fields
--   list_rows?(rows, ctx)     completes the listed rows of this backend
--                             (those of one profile) with what it knows
--   revive?(ctx)              -> problem | nil: before every read of the
--                             jobs (a local agent that died is restarted)
--   supervise?(ctx)           every few seconds while a caller waits for
--                             this backend's jobs; raises when they cannot
--                             go on
-- ctx always holds db, the job database (_navette.jobdb); submit's also
-- holds submission ({key, resumed}: see runner.spec), nodes, sessions (a
-- table whose values are closed when the run is submitted), redraw(spec)
-- (gives spec a new id, and what follows from it, when the drawn one is
-- taken) and audit(spec, detail) (records the submission in the audit
-- log; audit_many({{spec, detail}, ...}) records several as one write).
local errors = require "navette.errors"
local util = require "navette.util"
local json = _navette.json

local backends = {}

-- ---- what the backends' files share -------------------------------------

-- The fail(message, hint) of a backend's validate: raises the recipe
-- error "PATH: profile 'NAME': LABEL: message" (where: validate's).
function backends.profile_fail(where, label)
  return function(message, hint)
    error(errors.new("recipe", where.path .. ": profile '" .. where.profile
                     .. "': " .. label .. ": " .. message, hint), 0)
  end
end

-- The checked copy of a profile's `environment` (t: NAME = value, given
-- to every job as it is): names a job may set, strings, none that looks
-- like a secret; fail(message, hint) raises.
function backends.environment(t, fail)
  local out = {}
  if t ~= nil and type(t) ~= "table" then
    fail("environment must be a table { NAME = \"value\" }")
  end
  for k, v in pairs(t or {}) do
    if type(k) ~= "string" or not _navette.jobs.env_name_ok(k)
       or type(v) ~= "string" then
      fail("environment maps names to strings (not NAVETTE_*, PATH...)")
    end
    if _navette.creds.redact(v) ~= v then
      fail("environment." .. k .. " looks like a secret",
           "a job gets short-lived access, never a secret in its "
           .. "environment")
    end
    out[k] = v
  end
  return out
end

-- The checked copy of a profile's `nodes` (a list of node names, each
-- matching pattern), {} when it names none; fail(message, hint) raises.
function backends.node_list(t, pattern, fail)
  local out = {}
  if t == nil then return out end
  if type(t) ~= "table" then
    fail("nodes must be a list of node names { \"gpu-a\", \"gpu-b\" }")
  end
  for i, n in ipairs(t) do
    if type(n) ~= "string" or not n:match(pattern) then
      fail("nodes[" .. i .. "] is not a node name")
    end
    out[i] = n
  end
  return out
end

-- Records the rows of specs, the tasks of one sweep sent as one array
-- (submit_array's ctx), in one transaction: all of them or none, each
-- with spec.array = array_of(k) first (how the backend finds task k
-- again when the answer is lost). Raises.
function backends.record_tasks(ctx, specs, name, array_of)
  errors.check(ctx.db:transaction(function()
    for k, spec in ipairs(specs) do
      spec.array = array_of(k)
      local sub = ctx.submissions[k] or {}
      local inserted, ierr = ctx.db:submit(spec.id, spec.project,
        spec.profile, spec.name, json.encode(spec), name, sub.key)
      if inserted == nil then
        error(errors.new("backend", "cannot record job '" .. spec.name
                         .. "': " .. ierr.message, ierr.hint), 0)
      end
    end
    return true
  end))
end

-- Gives spec the launch values of its backend (the contract's launch),
-- where it has none: a new spec, or one recorded before them.
function backends.give_launch(backend, spec)
  if spec.launch == nil and backend.launch then
    spec.launch = util.deep_copy(backend.launch)
  end
end

-- the profile's backend when it names none, and a row's without one
backends.DEFAULT = "local"

-- those of this folder (its files, as embedded in the binary), the
-- default one first, in the order messages list them
local NAMES = _navette.core.library("navette.backends")
table.sort(NAMES, function(a, b)
  if (a == backends.DEFAULT) ~= (b == backends.DEFAULT) then
    return a == backends.DEFAULT
  end
  return a < b
end)
local added = {}

-- Adds a backend that is not a file of this folder (tests: a fake one).
function backends.register(b)
  assert(type(b) == "table" and type(b.name) == "string",
         "a backend is a table with a name")
  added[b.name] = b
end

function backends.unregister(name)
  added[name] = nil
end

-- Whether `name` is a file of this folder.
local function in_folder(name)
  for _, n in ipairs(NAMES) do if n == name then return true end end
  return false
end

-- Whether `name` is a backend.
function backends.known(name)
  return added[name] ~= nil or in_folder(name)
end

-- Every backend's name: this folder's, then those registered.
function backends.names()
  local out = {}
  for i, n in ipairs(NAMES) do out[i] = n end
  local more = {}
  for n in pairs(added) do
    if not in_folder(n) then more[#more + 1] = n end
  end
  table.sort(more)
  for _, n in ipairs(more) do out[#out + 1] = n end
  return out
end

-- The backend named `name` (nil: the default one); raises for another.
function backends.get(name)
  name = name or backends.DEFAULT
  local b = added[name]
  if b then return b end
  if not in_folder(name) then
    errors.raise("usage", "no backend named '" .. tostring(name) .. "'",
                 "backends: " .. table.concat(backends.names(), ", "))
  end
  return require("navette.backends." .. name)
end

-- Backend b's team service `service` as a table {open?, keys?,
-- validate?, apply?, revoke?, prove?} (an entry that is a function is
-- its open), or nil when b keeps no such service.
function backends.team_service(b, service)
  local e = b and b.team_services and b.team_services[service]
  if type(e) == "function" then return { open = e } end
  if type(e) == "table" then return e end
  return nil
end

-- The team services the backends drive themselves (a table entry with
-- apply): {[service] = {backend names}}.
function backends.team_services()
  local out = {}
  for _, n in ipairs(backends.names()) do
    local b = backends.get(n)
    for service in pairs(b.team_services or {}) do
      local e = backends.team_service(b, service)
      if e and e.apply then
        out[service] = out[service] or {}
        table.insert(out[service], n)
      end
    end
  end
  return out
end

-- The names of the backends that have `field` (a word for messages:
-- "slurm", "a or b").
function backends.with(field)
  local out = {}
  for _, n in ipairs(backends.names()) do
    if backends.get(n)[field] then out[#out + 1] = n end
  end
  return table.concat(out, " or ")
end

return backends
