-- `navette migrate JOB --to NODE`: a tested change of node. The same
-- definition as JOB (same commit, same image digest, same inputs with the
-- same sha256, same command and resources) is submitted under a new id on
-- another node of the same profile (a backend with nodes), or with
-- --profile of another profile of the project on the same storage (from
-- slurmrestd to a login node over SSH, from Slurm to Kubernetes, or
-- back); once both have ended
-- their run records are compared: logs present, the same declared
-- outputs present, and each output's sha256 equal (what a deterministic
-- job gives).
local errors = require "navette.errors"
local term = require "navette.term"
local jobs = require "navette.jobview"
local backends = require "navette.backends"
local published = require "navette.published"
local job = require "navette.job"
local common = require "navette.cli.common"
local json, sys = _navette.json, _navette.sys

local M = {
  name = "migrate",
  summary = { { "migrate JOB --to NODE",
                "rerun a job on NODE, compare" } },
  usage = [[
usage: navette migrate JOB --to NODE [--profile P] [--force] [--no-wait]
                       [--json]
  Submits the same definition as JOB (same commit, image digest and
  inputs) on NODE (of a backend with nodes: slurm, slurm_ssh,
  kubernetes), waits for both, and compares their run records: logs
  present, the same declared outputs present, and the outputs' sha256
  equal (where the job is deterministic), with the two nodes'
  fingerprints (OS, kernel, runtime, driver, CUDA, interpreter) side by
  side. Exit 0 when the comparison holds, 1 otherwise.
  --profile P sends it through P, another profile of the project (run in
  its repository) of a backend with nodes on the same storage: from
  slurmrestd to the login node (slurm_ssh), from Slurm to Kubernetes, or
  back.
  First the five rules of `navette portability` are judged on JOB: a
  move they refuse is refused (exit 3) with the actions to take, unless
  --force, which goes on and writes the rules it overrode to the audit
  log.]],
  flags = { to = "value", ["no-wait"] = "bool", json = "bool",
            force = "bool", profile = "value" },
  read_only = false,
}

local function fail(code, message, hint)
  error(errors.new(code, message, hint), 0)
end

-- A new spec from an old one: a new id (and prefix), freshly signed URLs;
-- with target (a profile), that profile's backend and settings.
local function respecify(spec, node, target)
  if not spec.outputs or not spec.outputs.s3 or not spec.transfer then
    fail("refused", "job " .. spec.id .. " has no S3 transfer to sign anew",
         "submit it with this version of navette first")
  end
  local plain = spec.id:gsub("%-", "%%-")
  if not spec.outputs.prefix:find(plain) then
    fail("refused", "job " .. spec.id .. " publishes under "
         .. spec.outputs.prefix .. ", which does not hold its id",
         "a second run would publish over it: give the job an output "
         .. "prefix with {id}")
  end
  local new = json.decode(json.encode(spec))
  new.id = job.new_id(spec.project)
  new.outputs.prefix = spec.outputs.prefix:gsub(plain, new.id)
  new.outputs.url = spec.outputs.url:gsub(plain, new.id)
  local user, host = sys.identity()
  new.submitted_by = user .. "@" .. host
  new.submitted_at = sys.iso8601()
  new.migrated_from = spec.id
  new.adopted = nil
  new.array = nil -- (a task of a job array goes again as a job alone)
  new.node = node
  if target then
    -- (the settings of the backend it ran on go; the target's prepare
    -- sets its own)
    if spec.backend then new[spec.backend] = nil end
    new.slurm = nil
    new.profile, new.backend = target.name, target.backend
    new.launch = nil
    backends.get(new.backend).prepare(new, target)
  end
  -- (a job recorded before spec.launch goes again with it: requeue...)
  backends.give_launch(backends.get(new.backend), new)
  -- the credentials the recorded run loaded, trusted then: the job goes
  -- again as it was accepted, without the project file read now
  local creds_of = backends.get(new.backend).spec_credentials
  local list = creds_of and creds_of(new) or {}
  if type(new.outputs.s3) == "table" then
    list[#list + 1] = new.outputs.s3.credential
  end
  for _, d in pairs(list) do
    if type(d) == "table" then d.origin = "navette" end
  end
  local profile = { name = spec.profile, s3 = new.outputs.s3,
                    max_output_bytes = spec.transfer.max_output_bytes }
  local store = require("navette.s3store").open(profile)
  local code = spec.transfer.code
  new.transfer = require("navette.runner").sign_transfer(profile, store, new,
    spec.transfer.lifetime or 3600,
    code and { key = code.key, sha256 = code.sha256, size = code.size })
  store:close()
  return new
end

-- The profile P of `--profile P` (the project in the current folder's
-- repository): another Slurm profile on the storage the job used.
function M.target_profile(name, row)
  local project = require "navette.project"
  local where = sys.cwd()
  local repo = _navette.git.open(where)
  local root = repo and repo:workdir() or nil
  if repo then repo:close() end
  if not root then
    fail("usage", "--profile needs the job's project: run migrate in its "
         .. "repository (navette.lua)")
  end
  local proj = project.load(where, root)
  if proj.name ~= row.spec.project then
    fail("usage", "job " .. row.id .. " is of project "
         .. tostring(row.spec.project) .. ", not " .. tostring(proj.name),
         "run migrate in the repository of project "
         .. tostring(row.spec.project))
  end
  local p = project.profile(proj, name)
  local b = backends.get(p.backend)
  if not (b.nodes and b.prepare) then
    fail("refused", "profile '" .. name .. "' is of the " .. p.backend
         .. " backend: migrate moves a job between nodes of a "
         .. backends.with("nodes") .. " profile")
  end
  if p.storage ~= row.spec.outputs.store then
    fail("refused", "profile '" .. name .. "' keeps its jobs in "
         .. tostring(p.storage) .. ", job " .. row.id .. " in "
         .. tostring(row.spec.outputs.store), "migrate through a profile on "
         .. "the same storage: the job's code and inputs are there")
  end
  return p
end

local function record_of(spec)
  local store = published.s3_store(spec)
  if not store then return nil end
  local text = store:read(spec.outputs.url .. _navette.record.names.run_record,
                          4 * 1024 * 1024)
  local log = text and store:head(spec.outputs.url .. _navette.record.names.log)
  store:close()
  local record = text and json.decode(text) or nil
  return record, log
end

local function outputs_by_name(record)
  local out = {}
  for _, o in ipairs(record and record.outputs or {}) do out[o.name] = o end
  return out
end

-- Compares two jobs' run records (ra, rb: decoded navette-run.json or
-- nil) and their logs' heads (la, lb: {size} or nil); spec_a's declared
-- outputs must be in both. Pure (no store): the tests call it on records
-- that differ. Returns ok, rows {what, a, b, verdict}.
function M.compare_records(spec_a, ra, la, rb, lb)
  local rows, ok = {}, true
  local function row(what, a, b, verdict, good)
    rows[#rows + 1] = { what, a, b, verdict }
    if not good then ok = false end
  end
  row("run record", ra and "present" or "missing", rb and "present"
      or "missing", (ra and rb) and "both" or "MISSING", ra and rb)
  row("state", ra and ra.state or "?", rb and rb.state or "?",
      (ra and rb and ra.state == "succeeded" and rb.state == "succeeded")
      and "both succeeded" or "NOT BOTH SUCCEEDED",
      ra and rb and ra.state == "succeeded" and rb.state == "succeeded")
  row("log", la and (la.size .. " B") or "missing",
      lb and (lb.size .. " B") or "missing",
      (la and lb) and "present in both" or "MISSING", la and lb)
  local oa, ob = outputs_by_name(ra), outputs_by_name(rb)
  for _, name in ipairs((spec_a.success or {}).outputs or {}) do
    row("declared " .. name, oa[name] and "present" or "missing",
        ob[name] and "present" or "missing",
        (oa[name] and ob[name]) and "present in both" or "MISSING",
        oa[name] and ob[name])
  end
  local names, seen = {}, {}
  for n in pairs(oa) do names[#names + 1] = n; seen[n] = true end
  for n in pairs(ob) do if not seen[n] then names[#names + 1] = n end end
  table.sort(names)
  -- an output without a sha256 proves nothing: never equal
  local function digest(o)
    return o and type(o.sha256) == "string" and o.sha256 ~= "" and o.sha256
  end
  local function shown(o)
    if not o then return "missing" end
    return digest(o) and (o.sha256:sub(1, 12) .. "…") or "no sha256"
  end
  for _, n in ipairs(names) do
    local a, b = oa[n], ob[n]
    local equal = digest(a) and digest(b) and a.sha256 == b.sha256 and true
                  or false
    row(n, shown(a), shown(b),
        equal and "sha256 equal" or (a and b) and "sha256 DIFFER"
        or "ONLY IN ONE", equal)
  end
  return ok, rows
end

-- Compares the two jobs' records as published in their store.
-- Also returns the differences of the two nodes' fingerprints (a list
-- of {what, a, b, same}: navette.portability.fingerprint_diff), which
-- inform and never decide: a new kernel is why one compares; and the
-- two records.
function M.compare(spec_a, spec_b)
  local ra, la = record_of(spec_a)
  local rb, lb = record_of(spec_b)
  local ok, rows = M.compare_records(spec_a, ra, la, rb, lb)
  local fp = require("navette.portability").fingerprint_diff(
    ra and ra.node, rb and rb.node)
  if ra and rb and ra.image ~= nil then
    table.insert(fp, 1, { what = "image", a = tostring(ra.image),
                          b = tostring(rb.image),
                          same = ra.image == rb.image })
  end
  return ok, rows, fp, ra, rb
end

function M.run(argv)
  local opts, args = common.command_args(M, argv)
  if not opts then return 0 end
  if #args ~= 1 then
    fail("usage", "expected one JOB id", "see `navette migrate --help`")
  end
  if not opts.to or not opts.to:match("^[%w._%[%],-]+$") then
    fail("usage", "--to NODE is required (a node name)",
         "see `navette migrate --help`")
  end
  local row, err = jobs.row(args[1])
  if not row then
    fail(err.code == "invalid" and "usage" or err.code, err.message,
         err.hint)
  end
  local from_backend = backends.get(row.backend)
  local target = opts.profile and M.target_profile(opts.profile, row)
  local backend = target and backends.get(target.backend) or from_backend
  if not from_backend.nodes then
    fail("refused", "job " .. row.id .. " ran on the " .. tostring(row.backend)
         .. " backend: migrate moves a job between nodes of a "
         .. backends.with("nodes") .. " profile")
  end
  local old = row.spec
  -- the five rules, on this job's evidence
  local portability = require "navette.portability"
  local verdict = portability.evaluate(portability.gather_job(row, opts.to))
  if not verdict.allowed then
    local lines, failed = {}, {}
    for _, r in ipairs(verdict.rules) do
      if r.status == "fails" then
        failed[#failed + 1] = tostring(r.id)
        lines[#lines + 1] = "  rule " .. r.id .. " (" .. r.name .. ") fails:"
        for _, e in ipairs(r.failures) do lines[#lines + 1] = "    " .. e end
        lines[#lines + 1] = "    -> " .. r.action
      end
    end
    local text = table.concat(lines, "\n")
    if not opts.force then
      require("navette.audit").record({ action = "policy.refuse",
        target = old.name, job = old.id, commit = old.commit,
        profile = old.profile, result = "refused",
        detail = "migrate to " .. opts.to .. ": portability rules "
                 .. table.concat(failed, ",") .. " fail" },
        { name = old.profile, storage = old.outputs.store,
          s3 = old.outputs.s3 })
      fail("refused", "job " .. old.id .. " may not move to " .. opts.to
           .. " yet (the rules of `navette portability`):\n" .. text,
           "take the actions above first, or move it anyway with --force "
           .. "(audited)")
    end
    require("navette.audit").record({ action = "migrate.force",
      target = old.name, job = old.id, commit = old.commit,
      profile = old.profile, result = "ok",
      detail = "to " .. opts.to .. " over portability rules "
               .. table.concat(failed, ",") },
      { name = old.profile, storage = old.outputs.store, s3 = old.outputs.s3 })
    term.eprint("warning: moving " .. old.id .. " to " .. opts.to
                .. " over the portability rules " .. table.concat(failed, ", ")
                .. " (--force, audited):\n" .. text)
  end
  local new = respecify(old, opts.to, target)
  local launcher = require("navette.runner").render_launcher(new)
  new.launcher = launcher
  local id = backend.submit(new, launcher, {
    db = jobs.db(), nodes = { opts.to },
    audit = function(s)
      require("navette.audit").record({ action = "job.submit",
        target = s.name, job = s.id, commit = s.commit,
        profile = s.profile,
        detail = "migrate of " .. old.id .. " to " .. opts.to
                 .. (target and (" through profile " .. target.name)
                     or "") },
        { name = s.profile, storage = s.outputs.store, s3 = s.outputs.s3 })
    end }).id
  if not opts.json then
    term.print("job " .. term.style("stdout", "bold", new.name) .. " ("
               .. old.id .. ") submitted again on " .. opts.to
               .. (target and (" through profile " .. target.name) or "")
               .. ": " .. id)
  end
  if opts["no-wait"] then
    if opts.json then term.print(json.encode({ from = old.id, to = id })) end
    return 0
  end
  local views = common.follow_or_raise({ old.id, id }, opts.json,
                                      { [old.id] = "before", [id] = "after" })
  local ok, rows, fingerprint, ra, rb = M.compare(old, new)
  local va, vb = views[old.id], views[id]
  -- (what the backend says, else the node its record names)
  local function node_of(v, b, record)
    local node = v and (b or backend).describe(v).node
    if not node and type(record) == "table" and type(record.node) == "table"
       and type(record.node.host) == "string" then
      node = record.node.host
    end
    return node or "?"
  end
  if opts.json then
    local list = {}
    for i, r in ipairs(rows) do
      list[i] = { what = r[1], from = r[2], to = r[3], verdict = r[4] }
    end
    term.print(json.encode({ from = old.id, to = id,
                             from_node = node_of(va, from_backend, ra),
                             from_profile = old.profile,
                             to_profile = new.profile,
                             to_node = node_of(vb, nil, rb), same = ok,
                             rows = json.array(list),
                             fingerprint = json.array(fingerprint) }, true))
  else
    term.print("")
    term.print("comparison of " .. old.id .. " (on "
               .. node_of(va, from_backend, ra) .. ")")
    term.print("          and " .. id .. " (on " .. node_of(vb, nil, rb)
               .. "):")
    -- padded by characters, not bytes (the ellipsis of a sha256)
    local function pad(text, width)
      local n = utf8.len(text) or #text
      return text .. string.rep(" ", math.max(1, width - n))
    end
    term.print("  " .. pad("", 25) .. pad("before", 19) .. "after")
    for _, r in ipairs(rows) do
      term.print("  " .. pad(r[1], 25) .. pad(r[2], 19) .. pad(r[3], 19)
                 .. r[4])
    end
    if #fingerprint > 0 then
      term.print("  the nodes:")
      for _, d in ipairs(fingerprint) do
        term.print("  " .. pad(d.what, 25) .. pad(d.a, 19) .. pad(d.b, 19)
                   .. (d.same and "same" or "differs"))
      end
    end
    term.print(ok and "the change of node holds: same logs, outputs and "
               .. "checksums" or "the runs differ: see above (a job that "
               .. "is not deterministic gives other checksums)")
  end
  return ok and 0 or 1
end

return M
