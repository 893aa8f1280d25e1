-- The five rules for changing nodes (the seed's "portability decision
-- rules"), judged on evidence: what the recipe pins when it is evaluated
-- (the commit and whether the remote has it, the image digest and whether
-- its registry has it, each input and whether the store has it) and what
-- the jobs' last run records say (the node they ran on, what they
-- published, where their log went). Declarations alone prove nothing.
--
-- gather_* collects the facts (the network, the job database, the
-- stores); evaluate(facts) is pure: the tests hand it facts that break
-- each rule. A rule holds or fails; a failing rule carries the action the
-- seed prescribes. Used by `navette portability` and by `navette
-- migrate`, which refuses a move the rules refuse unless --force.
local json = _navette.json
local sys = _navette.sys

local M = {}

M.RULES = {
  { id = 1, name = "code, image and data",
    action = "pin what the job runs first: a pushed commit, a published "
             .. "image, inputs in object storage" },
  { id = 2, name = "no hand-installed dependency",
    action = "rebuild an image first: put what the command needs in an "
             .. "image (navette.image.debootstrap, image.build or a code "
             .. "layer) and give the job `image`" },
  { id = 3, name = "outputs off the node",
    action = "publish outputs to object storage first: an s3:// store, "
             .. "and the job writes its results into $NAVETTE_OUTPUTS "
             .. "(declared in success.outputs)" },
  { id = 4, name = "no rights tied to a machine",
    action = "move the rights to a service role first: a credential "
             .. "declared in navette.lua that any machine of the team "
             .. "loads (env, your own file, Keychain, a command), never a "
             .. "file of one machine or an address" },
  { id = 5, name = "logs centralised",
    action = "centralise logs first: publish the job's log (logs.publish "
             .. "= true, the default) to an s3:// store" },
}

-- ---- evidence of one kind or another -------------------------------------

local function short(hex) return type(hex) == "string" and hex:sub(1, 12) or "?" end

local function object_store(url)
  return type(url) == "string" and url:match("^s3://") ~= nil
end

-- Paths in a job's command or environment that hold rights of the node
-- it runs on: the user's cloud and SSH keys, a cluster's munge or JWT
-- key, mounted secrets, private keys by their extension.
local MACHINE_RIGHTS = {
  { "/%.aws/", "an AWS credentials file" },
  { "/%.ssh/", "an SSH key" },
  { "/%.netrc$", "a .netrc password file" },
  { "/%.docker/config%.json$", "a registry login (docker config)" },
  { "/%.kube/config", "a Kubernetes login" },
  { "/%.config/gcloud/", "a Google Cloud login" },
  { "^/etc/munge/", "the node's munge key" },
  { "^/etc/slurm/.*key", "the cluster's Slurm key" },
  { "^/etc/ceph/.*keyring", "a Ceph keyring" },
  { "^/run/munge/", "the node's munge socket" },
  { "^/var/run/munge/", "the node's munge socket" },
  { "%.secret$", "a secret file" },
  { "^/var/run/secrets/", "a secret mounted on the node" },
  { "^/run/secrets/", "a secret mounted on the node" },
  { "%.pem$", "a private key or certificate file" },
  { "%.key$", "a key file" },
  { "%.p12$", "a key store" },
  { "%.keyring$", "a keyring" },
  { "/credentials$", "a credentials file" },
  { "/[%w_.-]*token$", "a token file" },
}

-- A path with its "." and ".." steps resolved ("/home/u/../../etc/x" is
-- "/etc/x"): the rules compare what the path names.
local function normal(path)
  local lead = path:match("^[~/]") and path:sub(1, 1) or ""
  local parts = {}
  for part in path:sub(#lead + 1):gmatch("[^/]+") do
    if part == ".." then
      if #parts > 0 then parts[#parts] = nil end
    elseif part ~= "." then
      parts[#parts + 1] = part
    end
  end
  return (lead == "~" and "~/" or lead) .. table.concat(parts, "/")
end
M.normal = normal

local function machine_rights(text)
  local found = {}
  -- every path in the text: "/a/b", "~/a", "$HOME/a", "--key=/a/b"
  for path in text:gmatch("[~$%w_{}]*/[%w%._%-/]+") do
    if path:match("^[~$]") or path:sub(1, 1) == "/" then
      local p = normal((path:gsub("^%${?HOME}?", "~")))
      for _, m in ipairs(MACHINE_RIGHTS) do
        if p:match(m[1]) then
          found[#found + 1] = { path = p, what = m[2] }
          break
        end
      end
    end
  end
  return found
end
M.machine_rights = machine_rights

-- A credential's host ("host", "host:port", "[v6]:port", or a bare IPv6
-- address) as _navette.net.host reads it: {canonical, kind, loopback},
-- or nil when it is no host. Every form of an address is seen:
-- 10.1, 167772161, 0x0a000001, [2001:DB8::1], ::ffff:10.0.0.1.
local function parsed_host(host)
  if type(host) ~= "string" or host == "" then return nil end
  local h = host
  local name, port = h:match("^(.-):(%d+)$")
  if name and name ~= "" and (not name:find(":", 1, true)
                              or name:match("^%[.*%]$")) then
    h = name -- (an IPv6 address without brackets has no port)
  end
  if h:find(":", 1, true) and not h:match("^%[") then h = "[" .. h .. "]" end
  return _navette.net.host(h)
end

-- Whether host names a machine by its address (not a loopback one, which
-- every machine has): IPv4 in any form inet_aton reads, IPv6 in any
-- form, in brackets or not.
local function machine_address(host)
  local r = parsed_host(host)
  if r then return r.kind ~= "name" and not r.loopback end
  -- (what the parser refuses is no usable host; one that looks like an
  -- address is still named)
  return type(host) == "string"
         and (host:find(":", 1, true) ~= nil and host:match("^[%x:%[%]%.%%]+$") ~= nil)
end
M.machine_address = machine_address

-- A credential declaration's ties to a machine: a file outside its
-- owner's home (a machine's own configuration: /etc, /var, /srv...), a
-- host named by its address. home: the user's home folder.
local function credential_ties(d, home)
  local ties = {}
  if d.source == "file" and type(d.path) == "string" then
    local path = normal(d.path)
    local inside = home and home ~= "" and home ~= "/"
                   and path:sub(1, #home + 1) == home .. "/"
    if not inside then
      ties[#ties + 1] = "its source is the file " .. path .. ", which "
        .. "is this machine's (outside your home folder): another machine "
        .. "has no such file"
    end
  end
  if d.host and machine_address(d.host) then
    ties[#ties + 1] = "it is bound to the address " .. d.host
      .. " (host), not to a service's name"
  end
  return ties
end
M.credential_ties = credential_ties

-- ---- the rules ------------------------------------------------------------

local function node_line(record)
  local n = record and record.node
  if type(n) ~= "table" then return "no node fingerprint in its record" end
  local parts = { "node " .. tostring(n.host or "?") }
  if type(n.interpreter) == "table" and n.interpreter.name then
    parts[#parts + 1] = n.interpreter.name .. " "
      .. tostring(n.interpreter.version or "(version unknown)")
  end
  if n.os and n.os ~= json.null then parts[#parts + 1] = tostring(n.os) end
  if n.kernel and n.kernel ~= json.null then
    parts[#parts + 1] = "kernel " .. tostring(n.kernel)
  end
  return table.concat(parts, ", ")
end

-- The differences between two records' node fingerprints: a list of
-- {what, a, b} (only what differs). Used by migrate and the re-test.
function M.fingerprint_diff(na, nb)
  local out = {}
  local function val(n, path)
    local v = n
    for part in path:gmatch("[^.]+") do
      if type(v) ~= "table" then return nil end
      v = v[tonumber(part) or part]
    end
    if v == json.null then return nil end
    return v
  end
  local FIELDS = { { "os", "os" }, { "kernel", "kernel" },
                   { "arch", "arch" }, { "cpu", "cpu.model" },
                   { "runtime", "runtime.version" },
                   { "driver", "gpus.1.driver" }, { "gpu", "gpus.1.name" },
                   { "cuda", "cuda" },
                   { "interpreter", "interpreter.version" } }
  for _, f in ipairs(FIELDS) do
    local a, b = val(na, f[2]), val(nb, f[2])
    if a ~= nil or b ~= nil then
      local sa, sb = a == nil and "-" or tostring(a), b == nil and "-" or tostring(b)
      out[#out + 1] = { what = f[1], a = sa, b = sb, same = sa == sb }
    end
  end
  return out
end

-- The job's prefix an output of a record lies under (its URL less its
-- name, which may hold folders).
function M.prefix_of(o)
  local url, name = tostring(o.url), tostring(o.name or "")
  if name ~= "" and url:sub(-#name) == name then
    return url:sub(1, #url - #name)
  end
  return url:match("^(.*/)") or url
end

local function new_rule(def)
  return { id = def.id, name = def.name, status = "holds",
           evidence = {}, failures = {}, action = nil, jobs = {} }
end

local function holds(rule, text) rule.evidence[#rule.evidence + 1] = text end

local function fails(rule, def, text, job)
  rule.status = "fails"
  rule.action = def.action
  rule.evidence[#rule.evidence + 1] = text
  rule.failures[#rule.failures + 1] = text
  if job and not rule.jobs[job] then
    rule.jobs[job] = true
    rule.jobs[#rule.jobs + 1] = job
  end
end

-- M.evaluate's state (ev): the facts, the rules being filled (r1..r5)
-- and their definitions (d1..d5, from M.RULES), whether the store is an
-- object store, and the commits a code note was found for.

-- The commits a job's notes found fault with: a commit is looked up once
-- per run, so its finding stands for each job that runs it.
local function commits_with_findings(jobs)
  local bad_commit = {}
  for _, j in ipairs(jobs) do
    for _, n in ipairs(j.notes or {}) do
      if n.part == "code" and j.spec then
        bad_commit[j.spec.commit or ""] = true
      end
    end
  end
  return bad_commit
end

-- Rule 1 for job j: its code, image and data, reachable from any node
-- (the job's notes fail it).
local function rule_reachable(ev, j)
  local r1, d1 = ev.r1, ev.d1
  local spec, name = j.spec or {}, j.name
  local noted = {}
  for _, n in ipairs(j.notes or {}) do
    noted[n.part] = true
    fails(r1, d1, n.message .. (n.hint and (" (" .. n.hint .. ")") or ""),
          name)
  end
  if ev.bad_commit[spec.commit or ""] and not noted.code then
    fails(r1, d1, "job " .. name .. ": commit " .. short(spec.commit)
          .. ", the same commit as above", name)
  elseif not noted.code and spec.commit then
    holds(r1, "job " .. name .. ": commit " .. short(spec.commit)
          .. " is on the remote (as of the last fetch)")
  end
  if spec.image and spec.image ~= "host" and not noted.image then
    if spec.image:find("@sha256:", 1, true) then
      holds(r1, "job " .. name .. ": image " .. spec.image
            .. " is in its registry")
    else
      -- (built and pushed by the recipe itself, before its jobs)
      holds(r1, "job " .. name .. ": image " .. spec.image .. " is "
            .. "built and pushed by the recipe when it runs, then "
            .. "pinned by digest")
    end
  end
  for _, input in ipairs(spec.inputs or {}) do
    if input.from then
      holds(r1, "job " .. name .. ": input " .. input.name .. " is "
            .. "output " .. tostring(input.output) .. " of job "
            .. tostring(input.from) .. ", checked by its sha256")
    elseif not object_store(input.url) then
      if not noted.data then
        fails(r1, d1, "job " .. name .. ": input " .. input.name .. " is "
              .. tostring(input.url) .. ", on this machine's disk, not "
              .. "in object storage", name)
      end
    elseif input.sha256 then
      holds(r1, "job " .. name .. ": input " .. input.name .. " is "
            .. input.url .. " (sha256 " .. short(input.sha256) .. ", "
            .. tostring(input.size) .. " bytes)")
    end
  end
end

-- Rule 2 for job j: no hand-installed dependency (an image, not the
-- node's own environment; what differs on the target node is shown).
local function rule_no_hand_install(ev, j)
  local r2, d2, facts = ev.r2, ev.d2, ev.facts
  local spec, name = j.spec or {}, j.name
  if spec.image == "host" or spec.image == nil then
    local last = j.last and j.last.record
    fails(r2, d2, "job " .. name .. " runs on the node's own environment "
          .. "(no image): " .. (last and ("its last run " .. j.last.id
          .. " used " .. node_line(last)) or ("no run of it is recorded "
          .. "on profile " .. tostring(facts.profile))), name)
    local there = j.on_target and j.on_target.record
    if there and last then
      for _, d in ipairs(M.fingerprint_diff(last.node, there.node)) do
        if not d.same then
          r2.evidence[#r2.evidence + 1] = "  on " .. facts.target.node
            .. " (run " .. j.on_target.id .. ") " .. d.what .. " is "
            .. d.b .. ", not " .. d.a
        end
      end
    end
  else
    holds(r2, "job " .. name .. " runs in the image " .. spec.image)
  end
end

-- Rules 3 and 5 for job j, from its last run's record: its outputs
-- published off the node, and its log shipped to the store.
local function rules_published(ev, j)
  local r3, d3, r5, d5 = ev.r3, ev.d3, ev.r5, ev.d5
  local spec, name = j.spec or {}, j.name
  local last = j.last
  if not ev.store_is_object then
    -- (said once, for the store: M.evaluate)
  elseif not last or not last.record then
    local why = last and last.error or ("no succeeded run of it is "
                .. "recorded on profile " .. tostring(ev.facts.profile))
    fails(r3, d3, "job " .. name .. ": " .. why .. ": nothing shows "
          .. "where its outputs go (run it once, then ask again)", name)
    fails(r5, d5, "job " .. name .. ": " .. why .. ": nothing shows "
          .. "where its log goes (run it once, then ask again)", name)
  else
    local rec = last.record
    local outs, off = rec.outputs or {}, 0
    for _, o in ipairs(outs) do
      if object_store(o.url) and type(o.sha256) == "string" then
        off = off + 1
      end
    end
    if #outs == 0 then
      fails(r3, d3, "job " .. name .. ": its last run " .. last.id
            .. " published no outputs: what it made stayed on the node",
            name)
    elseif off < #outs then
      fails(r3, d3, "job " .. name .. ": its last run " .. last.id
            .. " published " .. (#outs - off) .. " of " .. #outs
            .. " outputs outside object storage", name)
    else
      holds(r3, "job " .. name .. ": its last run " .. last.id
            .. " published " .. #outs .. " output(s) with sha256 under "
            .. M.prefix_of(outs[1]))
    end
    local log = type(rec.log) == "table" and rec.log.url
    if spec.logs and spec.logs.publish == false then
      -- (the declaration is checked below; the record agrees)
    elseif not object_store(log) then
      fails(r5, d5, "job " .. name .. ": its last run " .. last.id
            .. " published no log", name)
    elseif not last.log_size then
      fails(r5, d5, "job " .. name .. ": its last run's log " .. log
            .. " is not in the store" .. (last.log_error and (" ("
            .. last.log_error .. ")") or ""), name)
    else
      holds(r5, "job " .. name .. ": its last run " .. last.id
            .. " shipped its log to " .. log .. " (" .. last.log_size
            .. " bytes)")
    end
  end
  if spec.logs and spec.logs.publish == false then
    fails(r5, d5, "job " .. name .. " keeps its log on the node "
          .. "(logs.publish = false): only a session on the node reads "
          .. "it", name)
  end
end

-- Rule 4 for job j: no right tied to a machine in what it runs with (its
-- command and environment).
local function rule_machine_rights(ev, j)
  local r4, d4 = ev.r4, ev.d4
  local spec, name = j.spec or {}, j.name
  local texts = {}
  for _, a in ipairs(spec.command or {}) do texts[#texts + 1] = tostring(a) end
  for k, v in pairs(spec.env or {}) do
    texts[#texts + 1] = tostring(v)
    texts[#texts + 1] = k
  end
  local found = 0
  for _, t in ipairs(texts) do
    for _, f in ipairs(machine_rights(t)) do
      found = found + 1
      fails(r4, d4, "job " .. name .. " reads " .. f.what .. " on the "
            .. "node: " .. f.path, name)
    end
  end
  if found == 0 then
    holds(r4, "job " .. name .. ": its command and environment name no "
          .. "key or credential file of the node")
  end
end

-- Rule 4 for the credentials the target profile holds, by name: none
-- tied to a machine.
local function rule_credentials(ev)
  local r4, d4, facts = ev.r4, ev.d4, ev.facts
  local names = {}
  for n in pairs(facts.credentials or {}) do names[#names + 1] = n end
  table.sort(names)
  for _, n in ipairs(names) do
    local d = facts.credentials[n]
    local ties = credential_ties(d, facts.home)
    for _, t in ipairs(ties) do
      fails(r4, d4, "credential " .. n .. ": " .. t)
    end
    if #ties == 0 then
      holds(r4, "credential " .. n .. " (" .. tostring(d.kind) .. ", "
            .. tostring(d.source) .. ") is tied to no machine")
    end
  end
end

-- The verdict on the filled rules: {rules, allowed, actions}, each rule's
-- lists made JSON arrays.
local function verdict(rules)
  local actions, allowed = {}, true
  for _, r in ipairs(rules) do
    if r.status == "fails" then
      allowed = false
      actions[#actions + 1] = { rule = r.id, action = r.action,
                                jobs = json.array({ table.unpack(r.jobs) }) }
    end
    r.jobs = nil
    r.evidence = json.array(r.evidence)
    r.failures = json.array(r.failures)
  end
  return { rules = rules, allowed = allowed, actions = json.array(actions) }
end

-- facts:
--   store         the target profile's storage URL
--   profile       the profile the last runs are looked up in
--   target        nil, {profile = NAME} or {node = NAME}
--   credentials   {name = declaration} the target profile holds
--   home          the user's home folder
--   jobs          { {name, spec, notes = {{part, message, hint}},
--                    last = {id, record, log_size, error} | nil,
--                    on_target = {id, record} | nil} }
-- Returns {rules = {...}, allowed = bool, actions = {...}}.
function M.evaluate(facts)
  local rules = {}
  for i, def in ipairs(M.RULES) do rules[i] = new_rule(def) end
  local ev = { facts = facts, store_is_object = object_store(facts.store),
               bad_commit = commits_with_findings(facts.jobs) }
  ev.r1, ev.r2, ev.r3, ev.r4, ev.r5 = table.unpack(rules)
  ev.d1, ev.d2, ev.d3, ev.d4, ev.d5 = table.unpack(M.RULES)
  for _, j in ipairs(facts.jobs) do
    rule_reachable(ev, j)
    rule_no_hand_install(ev, j)
    rules_published(ev, j)
    rule_machine_rights(ev, j)
  end
  if not ev.store_is_object then
    local where = tostring(facts.store)
    fails(ev.r3, ev.d3, "the store is " .. where .. ", a folder of one "
          .. "machine: outputs published there stay on its disk")
    fails(ev.r5, ev.d5, "the store is " .. where .. ", a folder of one "
          .. "machine: logs published there are read only from it")
  end
  rule_credentials(ev)
  return verdict(rules)
end

-- ---- gathering the facts ---------------------------------------------------

-- The newest succeeded run of a job (project, profile, name) in the job
-- database, on node when given: {id, record, log_size} or {error} or nil.
function M.last_run(rows, project, profile, name, node)
  local jobs = require "navette.jobview"
  local published = require "navette.published"
  for _, r in ipairs(rows) do
    if r.project == project and r.profile == profile and r.name == name
       and r.state == "succeeded" and r.record_url then
      local row = jobs.row(r.id)
      local spec = row and row.spec
      local ok, record = pcall(published.record, r.record_url, spec)
      if not ok or not record then
        if not node then
          local why = not ok and (type(record) == "table" and record.message
                                  or tostring(record)) or "not found"
          return { id = r.id, error = "the run record of its last run "
                   .. r.id .. " cannot be read (" .. r.record_url .. ": "
                   .. why .. ")" }
        end
      else
        local host = type(record.node) == "table" and record.node.host
        if not node or host == node then
          local last = { id = r.id, record = record }
          local log = type(record.log) == "table" and record.log.url
          if log then
            local size, err = M.object_size(log, spec)
            last.log_size, last.log_error = size, err
          end
          return last
        end
      end
    end
  end
  return nil
end

-- The size of a stored object (s3:// with the spec's credential, or
-- file://), or nil and why.
function M.object_size(url, spec)
  local published = require "navette.published"
  if url:match("^s3://") then
    local store, err = published.s3_store(spec)
    if not store then
      return nil, err and tostring(err.message or err) or "no store"
    end
    local ok, info = pcall(store.head, store, url)
    store:close()
    if not ok then return nil, tostring(info.message or info) end
    return info and info.size or nil, not info and "not found" or nil
  end
  local text = published.read(url, spec, 64 * 1024 * 1024)
  if text then return #text end
  return nil, "not found"
end

-- The credentials a job's spec names (the declarations run accepted:
-- its store's and those its backend names: spec_credentials), by name.
function M.spec_credentials(spec)
  local out = {}
  local list = { spec.outputs and spec.outputs.s3
                 and spec.outputs.s3.credential }
  local b = require("navette.backends").get(spec.backend)
  for _, d in ipairs(b.spec_credentials and b.spec_credentials(spec) or {}) do
    list[#list + 1] = d
  end
  for _, d in pairs(list) do
    if type(d) == "table" and d.name then out[d.name] = d end
  end
  return out
end

-- The facts of one job already run (navette migrate): its recorded spec
-- and its record; the code, image and inputs are looked up again now.
function M.gather_job(row, node)
  local jobs = require "navette.jobview"
  local spec = row.spec or {}
  local notes = {}
  local function note(part, message, hint)
    notes[#notes + 1] = { part = part, message = message, hint = hint }
  end
  local git = _navette.git
  local repo = spec.repository_path and git.open(spec.repository_path)
  if not repo then
    note("code", "job " .. tostring(spec.name) .. ": its repository "
         .. tostring(spec.repository_path) .. " cannot be opened here",
         "run migrate where the job was submitted from")
  else
    local present, err = repo:on_remote(spec.commit)
    if not present then
      note("code", "job " .. tostring(spec.name) .. ": commit "
           .. short(spec.commit) .. (present == nil and (": "
           .. tostring(err and err.message)) or " is not on the remote "
           .. "(as of the last fetch)"), "push it (git push)")
    end
    repo:close()
  end
  if spec.image and spec.image ~= "host" then
    local image = require "navette.image"
    local info, err = image.try_inspect(spec.image)
    if not info then
      note("image", "job " .. tostring(spec.name) .. ": the image "
           .. spec.image .. " is not in its registry: "
           .. tostring(err and err.message), "push it first")
    end
  end
  for _, input in ipairs(spec.inputs or {}) do
    if not input.from and object_store(input.url) then
      local size, why = M.object_size(input.url, spec)
      if not size then
        note("data", "job " .. tostring(spec.name) .. ": input "
             .. input.name .. " (" .. input.url .. ") is not in "
             .. "storage now: " .. tostring(why), "upload it again")
      end
    end
  end
  local rows = jobs.list(100000)
  local last = nil
  if row.state == "succeeded" and row.record_url then
    for _, r in ipairs(rows) do
      if r.id == row.id then
        last = M.last_run({ r }, row.project, row.profile, row.name)
      end
    end
  end
  return {
    project = row.project, profile = row.profile,
    target = node and { node = node } or nil,
    store = spec.outputs and spec.outputs.store,
    credentials = M.spec_credentials(spec), home = sys.getenv("HOME"),
    jobs = { { name = spec.name, spec = spec, notes = notes,
               last = last or { id = row.id, error = "the job ended "
                                .. tostring(row.state) .. ", with no "
                                .. "record to show what it published" },
               on_target = node and M.last_run(rows, row.project,
                                               row.profile, row.name, node)
                           or nil } },
  }
end

return M
