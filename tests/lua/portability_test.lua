-- The five portability rules (navette.portability.evaluate) on facts that
-- break each one, and the pieces of evidence they read: the paths of a
-- node's rights in a command, a credential's ties to a machine, the
-- differences between two node fingerprints.
local t = test
local p = require "navette.portability"

local SHA = string.rep("a", 64)
local DIGEST = "sha256:" .. string.rep("b", 64)

-- the facts of one portable job; changes(job, facts) breaks something
local function facts(changes)
  local spec = {
    name = "train", commit = string.rep("c", 40),
    image = "registry.example.com/team/train@" .. DIGEST,
    inputs = { { name = "data", url = "s3://bucket/in/data.csv",
                 sha256 = SHA, size = 10 } },
    command = { "python3", "train.py" },
    outputs = { url = "s3://bucket/team/ID/" },
    logs = { publish = true },
  }
  local record = {
    outputs = { { name = "model.pt", url = "s3://bucket/team/ID/model.pt",
                  sha256 = SHA } },
    log = { url = "s3://bucket/team/ID/navette.log" },
    node = { host = "gpu-a", os = "Debian GNU/Linux 12 (bookworm)",
             kernel = "6.1.0-18-amd64",
             interpreter = { name = "python3", version = "3.11.2" } },
  }
  local f = {
    project = "team", profile = "hpc", store = "s3://bucket/",
    home = "/home/alice",
    credentials = { storage = { kind = "s3", source = "env" },
                    slurm = { kind = "hs256", source = "file",
                              path = "/home/alice/.navette/slurm.key" } },
    jobs = { { name = "train", spec = spec, notes = {},
               last = { id = "team-1", record = record, log_size = 120 } } },
  }
  if changes then changes(f.jobs[1], f) end
  return f
end

local function statuses(result)
  local out = {}
  for i, r in ipairs(result.rules) do out[i] = r.status end
  return table.concat(out, " ")
end

local function evidence(result, id)
  return table.concat(result.rules[id].evidence, "\n")
end

t.test("a portable job holds every rule", function()
  local r = p.evaluate(facts())
  t.eq(statuses(r), "holds holds holds holds holds")
  t.eq(r.allowed, true)
  t.eq(#r.actions, 0)
end)

t.test("rule 1: a commit not pushed, an image or input missing", function()
  for _, part in ipairs({ "code", "image", "data" }) do
    local r = p.evaluate(facts(function(j)
      j.notes = { { part = part, message = "job train: " .. part .. " missing",
                    hint = "fix it" } }
    end))
    t.eq(statuses(r), "fails holds holds holds holds", part)
    t.ok(evidence(r, 1):find("job train: " .. part .. " missing (fix it)",
                                  1, true), part)
    t.eq(r.actions[1].rule, 1)
  end
  -- an input on this machine's disk
  local r = p.evaluate(facts(function(j)
    j.spec.inputs[1].url = "file:///home/alice/data.csv"
  end))
  t.eq(r.rules[1].status, "fails")
  t.ok(evidence(r, 1):find("on this machine's disk", 1, true))
end)

t.test("rule 1: one finding about a commit stands for every job of it", function()
  local f = facts(function(j)
    j.notes = { { part = "code", message = "commit not on the remote" } }
  end)
  local second = { name = "eval", spec = {}, notes = {},
                   last = f.jobs[1].last }
  for k, v in pairs(f.jobs[1].spec) do second.spec[k] = v end
  second.spec.name = "eval"
  f.jobs[2] = second
  local r = p.evaluate(f)
  t.ok(evidence(r, 1):find("job eval: commit cccccccccccc, the same "
                               .. "commit as above", 1, true))
  t.eq(table.concat(r.actions[1].jobs, ","), "train,eval")
end)

t.test("rule 2: a job on the node's own environment", function()
  local r = p.evaluate(facts(function(j) j.spec.image = "host" end))
  t.eq(statuses(r), "holds fails holds holds holds")
  t.ok(evidence(r, 2):find("its last run team-1 used node gpu-a, "
                               .. "python3 3.11.2", 1, true))
  t.ok(r.actions[1].action:match("^rebuild an image first"))
  -- without a record, it still fails, and says none is recorded
  r = p.evaluate(facts(function(j) j.spec.image = "host"; j.last = nil end))
  t.eq(r.rules[2].status, "fails")
  t.ok(evidence(r, 2):find("no run of it is recorded on profile hpc",
                               1, true))
end)

t.test("rule 2 with --to NODE: what differs on that node", function()
  local r = p.evaluate(facts(function(j, f)
    j.spec.image = "host"
    f.target = { node = "gpu-b" }
    j.on_target = { id = "team-2", record = { node = {
      host = "gpu-b", os = "Debian GNU/Linux 12 (bookworm)",
      kernel = "6.1.0-21-amd64",
      interpreter = { name = "python3", version = "3.11.9" } } } }
  end))
  local e = evidence(r, 2)
  t.ok(e:find("on gpu-b (run team-2) kernel is 6.1.0-21-amd64, not "
                  .. "6.1.0-18-amd64", 1, true), e)
  t.ok(e:find("interpreter is 3.11.9, not 3.11.2", 1, true), e)
  t.ok(not e:find("os is", 1, true), "the same OS is not a difference")
end)

t.test("rule 3: nothing published, outputs outside storage, a file store", function()
  local r = p.evaluate(facts(function(j) j.last.record.outputs = {} end))
  t.eq(statuses(r), "holds holds fails holds holds")
  t.ok(evidence(r, 3):find("published no outputs", 1, true))
  r = p.evaluate(facts(function(j)
    j.last.record.outputs[1].url = "file:///scratch/model.pt"
  end))
  t.eq(r.rules[3].status, "fails")
  t.ok(evidence(r, 3):find("1 of 1 outputs outside object storage", 1,
                               true))
  r = p.evaluate(facts(function(j) j.last.record.outputs[1].sha256 = nil end))
  t.eq(r.rules[3].status, "fails", "an output without its sha256")
  r = p.evaluate(facts(function(_, f) f.store = "file:///srv/store" end))
  t.eq(statuses(r), "holds holds fails holds fails")
  t.ok(evidence(r, 3):find("the store is file:///srv/store", 1, true))
  -- no run to show it: evidence is missing, the rule does not hold
  r = p.evaluate(facts(function(j) j.last = nil end))
  t.eq(statuses(r), "holds holds fails holds fails")
  t.ok(evidence(r, 3):find("no succeeded run of it is recorded", 1, true))
end)

t.test("rule 4: a node's key in the command or the environment", function()
  local cases = {
    { "/home/bob/.aws/credentials", "an AWS credentials file" },
    { "~/.ssh/id_ed25519", "an SSH key" },
    { "--key-file=/etc/slurm/jwt_hs256.key", "the cluster's Slurm key" },
    { "$HOME/.netrc", "a .netrc password file" },
    { "/etc/munge/munge.key", "the node's munge key" },
    { "/run/secrets/db", "a secret mounted on the node" },
    { "/opt/certs/client.pem", "a private key or certificate file" },
  }
  for _, c in ipairs(cases) do
    local r = p.evaluate(facts(function(j)
      j.spec.command = { "sh", "-c", "use " .. c[1] }
    end))
    t.eq(statuses(r), "holds holds holds fails holds", c[1])
    t.ok(evidence(r, 4):find("reads " .. c[2] .. " on the node", 1,
                                 true), c[1])
  end
  local r = p.evaluate(facts(function(j)
    j.spec.env = { AWS_SHARED_CREDENTIALS_FILE = "/root/.aws/credentials" }
  end))
  t.eq(r.rules[4].status, "fails", "in the environment")
  -- paths that are no rights
  for _, a in ipairs({ "$NAVETTE_INPUTS/tokens.json", "/usr/share/keyrings/x.gpg",
                       "recipes/train.py", "/tmp/out.txt" }) do
    r = p.evaluate(facts(function(j) j.spec.command = { "sh", "-c", a } end))
    t.eq(r.rules[4].status, "holds", a)
  end
end)

t.test("rule 4: a path with .. is judged by what it names", function()
  local r = p.evaluate(facts(function(_, f)
    f.credentials.slurm.path = "/home/alice/../../etc/ceph/ceph.client.admin.keyring"
  end))
  t.eq(r.rules[4].status, "fails", "a credential path climbing out of home")
  t.ok(evidence(r, 4):find("/etc/ceph/ceph.client.admin.keyring", 1, true))
  r = p.evaluate(facts(function(j)
    j.spec.command = { "sh", "-c", "cat /tmp/../etc/munge/munge.key" }
  end))
  t.eq(r.rules[4].status, "fails", "a node key reached through ..")
  for _, path in ipairs({ "/etc/slurm/jwt.secret", "/run/munge/munge.socket.2" }) do
    r = p.evaluate(facts(function(j) j.spec.command = { "use", path } end))
    t.eq(r.rules[4].status, "fails", path)
  end
  t.eq(p.normal("/a/./b/../c"), "/a/c")
  t.eq(p.normal("~/x/../.ssh/id"), "~/.ssh/id")
end)

t.test("rule 4: credentials tied to a machine", function()
  local r = p.evaluate(facts(function(_, f)
    f.credentials.slurm.path = "/etc/slurm/jwt_hs256.key"
  end))
  t.eq(statuses(r), "holds holds holds fails holds")
  t.ok(evidence(r, 4):find("credential slurm: its source is the file "
                               .. "/etc/slurm/jwt_hs256.key", 1, true))
  r = p.evaluate(facts(function(_, f)
    f.credentials.api = { kind = "bearer", source = "env",
                          host = "10.0.3.7:8443" }
  end))
  t.eq(r.rules[4].status, "fails")
  t.ok(evidence(r, 4):find("bound to the address 10.0.3.7:8443", 1, true))
  -- loopback and names are not machine addresses of a node
  r = p.evaluate(facts(function(_, f)
    f.credentials.reg = { kind = "basic", source = "env",
                          host = "127.0.0.1:5000" }
    f.credentials.api = { kind = "bearer", source = "env",
                          host = "api.example.com" }
  end))
  t.eq(r.rules[4].status, "holds")
  -- an address in every form: IPv6 bare or in brackets, any case, with a
  -- port or not, IPv4-mapped; IPv4 as inet_aton reads it
  for _, host in ipairs({ "2001:db8::7", "[2001:db8::7]", "[2001:DB8::7]:8443",
                          "fd00::1", "::ffff:10.0.3.7", "[::ffff:a00:307]:443",
                          "10.1", "167772161", "0x0a000307", "012.0.3.7:443",
                          "10.0.3.7" }) do
    r = p.evaluate(facts(function(_, f)
      f.credentials.api = { kind = "bearer", source = "env", host = host }
    end))
    t.eq(r.rules[4].status, "fails", host)
    t.ok(evidence(r, 4):find("bound to the address " .. host, 1, true), host)
  end
  -- loopback in every form, and names (hexadecimal ones too), are not
  for _, host in ipairs({ "[::1]", "::1", "[::1]:5000", "127.1", "0x7f000001",
                          "[::ffff:127.0.0.1]", "localhost:5000", "[::]",
                          "beef", "cafe.example:443", "API.Example.COM" }) do
    r = p.evaluate(facts(function(_, f)
      f.credentials.api = { kind = "bearer", source = "env", host = host }
    end))
    t.eq(r.rules[4].status, "holds", host)
  end
  -- a home folder named like a prefix of another is not inside it
  r = p.evaluate(facts(function(_, f)
    f.credentials.slurm.path = "/home/alice2/slurm.key"
  end))
  t.eq(r.rules[4].status, "fails")
end)

t.test("rule 5: a log kept on the node, or not in the store", function()
  local r = p.evaluate(facts(function(j) j.spec.logs.publish = false end))
  t.eq(statuses(r), "holds holds holds holds fails")
  t.ok(evidence(r, 5):find("logs.publish = false", 1, true))
  r = p.evaluate(facts(function(j) j.last.log_size = nil end))
  t.eq(r.rules[5].status, "fails")
  t.ok(evidence(r, 5):find("is not in the store", 1, true))
  r = p.evaluate(facts(function(j) j.last.record.log = nil end))
  t.eq(r.rules[5].status, "fails")
end)

t.test("fingerprint differences", function()
  local d = p.fingerprint_diff(
    { kernel = "6.1", gpus = { { name = "A100", driver = "535.1" } },
      cuda = "12.2", runtime = { name = "podman", version = "4.3.1" } },
    { kernel = "6.1", gpus = { { name = "A100", driver = "550.5" } },
      cuda = "12.4", runtime = { name = "podman", version = "4.3.1" } })
  local by = {}
  for _, x in ipairs(d) do by[x.what] = x end
  t.eq(by.kernel.same, true)
  t.eq(by.driver.same, false)
  t.eq(by.driver.b, "550.5")
  t.eq(by.cuda.a .. ">" .. by.cuda.b, "12.2>12.4")
  t.eq(by.os, nil, "a field neither has is left out")
  local one = p.fingerprint_diff(nil, { kernel = "6.1" })
  t.eq(one[1].a, "-")
end)
