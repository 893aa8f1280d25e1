-- _navette.k8s (host/k8s/k8s_lua.c) where no API server is needed: the
-- arguments it refuses, a session opened from a kubeconfig (token, token
-- file, exec plugin run at open) that is only opened, never sent to (its
-- server is a closed port: a transport error comes back as nil, err),
-- the Job and Secret built through the binding (the Secret as a box whose
-- values never become a Lua string), the patches, and the contexts of a
-- kubeconfig. The requests themselves: tests/integration/kubernetes.
local t = test
local k8s, sys, json = _navette.k8s, _navette.sys, _navette.json
local creds = _navette.creds

_navette.core.set_trusted(true)

local dir = t.tmpdir()
local DIGEST = "sha256:" .. string.rep("ab", 32)

local function write(path, text, mode)
  assert(sys.write_file(path, text, mode or 384))
  return path
end

-- A kubeconfig whose user is USER (YAML lines under "user:").
local function kubeconfig(name, user, extra)
  return write(dir .. "/" .. name, ([[
apiVersion: v1
kind: Config
current-context: one
clusters:
- name: c1
  cluster:
    server: https://127.0.0.1:1
contexts:
- name: one
  context: {cluster: c1, user: u1, namespace: ns-one}
- name: two
  context: {cluster: c1, user: u1}
users:
- name: u1
  user:
%s
%s]]):format(user, extra or ""))
end

local TOKEN = kubeconfig("token.yaml", "    token: tok-0123456789")

t.test("open refuses what it cannot use", function()
  t.raises(function() k8s.open() end)
  t.raises(function() k8s.open {} end, "kubeconfig")
  t.raises(function()
    k8s.open { kubeconfig = { TOKEN }, in_cluster = true }
  end, "one of them")
  t.raises(function() k8s.open { kubeconfig = {} } end, "empty")
  t.raises(function() k8s.open { kubeconfig = { 7 } } end, "string")
  t.raises(function()
    k8s.open { kubeconfig = { TOKEN }, pin = "md5//x" }
  end, "sha256//")
  t.raises(function()
    k8s.open { kubeconfig = { TOKEN }, timeout = 0 }
  end, "timeout")
  t.raises(function()
    k8s.open { kubeconfig = { TOKEN }, credential = "tok" }
  end)
  local s, err = k8s.open { kubeconfig = { dir .. "/none.yaml" } }
  t.eq(s, nil)
  t.eq(err.code, "not_found")
  s, err = k8s.open { kubeconfig = { TOKEN }, context = "three" }
  t.eq(s, nil)
  t.eq(err.code, "not_found")
  t.match(err.message, "three")
  s, err = k8s.open { in_cluster = true, in_cluster_root = dir .. "/no" }
  t.eq(s, nil)
  t.eq(err.code, "not_found")
end)

t.test("a session from a token, its info, arguments refused", function()
  local s, info = assert(k8s.open { kubeconfig = { TOKEN } })
  t.eq(info.server, "https://127.0.0.1:1")
  t.eq(info.context, "one")
  t.eq(info.cluster, "c1")
  t.eq(info.user, "u1")
  t.eq(info.namespace, "ns-one")
  t.eq(info.auth, "token")
  t.eq(info.expires, nil)
  t.match(tostring(s), "127.0.0.1:1")
  t.raises(function() s:request("TRACE", "/api") end, "method")
  t.raises(function() s:request("GET", 7) end, "path")
  t.raises(function() s:look {} end, "namespace")
  t.raises(function() s:look { namespace = "../x" } end, "Kubernetes name")
  t.raises(function()
    s:watch { namespace = "ns", kind = "nodes", seconds = 5,
              resource_version = "1", on_event = print }
  end, "kind")
  t.raises(function()
    s:watch { namespace = "ns", kind = "jobs", seconds = 0,
              resource_version = "1", on_event = print }
  end, "seconds")
  t.raises(function()
    s:watch { namespace = "ns", kind = "jobs", seconds = 5,
              on_event = print }
  end, "resource_version")
  t.raises(function()
    s:log { namespace = "ns", pod = "a/b" }
  end, "Kubernetes name")
  t.raises(function()
    s:access_review { namespace = "ns", verb = "create" }
  end, "resource")
  -- nothing listens there: a transport error, not a raise
  local st, err = s:request("GET", "/version")
  t.eq(st, nil)
  t.eq(err.code, "backend")
  t.eq(s:stats().requests, 1)
  s:close()
  s:close()
  t.match(tostring(s), "closed")
  t.raises(function() s:request("GET", "/version") end, "closed")
end)

t.test("a token file is read at open", function()
  local tf = write(dir .. "/token", "tok-from-file\n")
  local kc = kubeconfig("tf.yaml", "    tokenFile: " .. tf)
  local s, info = assert(k8s.open { kubeconfig = kc, context = "two" })
  t.eq(info.auth, "token-file")
  t.eq(info.namespace, "default")
  s:close()
  assert(os.remove(tf))
  local none, err = k8s.open { kubeconfig = kc }
  t.eq(none, nil)
  t.ok(err.message:find("token", 1, true), err.message)
end)

t.test("an exec plugin runs at open; its expiry is in info", function()
  local count = dir .. "/exec-count"
  local plugin = write(dir .. "/plugin.sh", ([[#!/bin/sh
echo x >> %s
cat <<EOF
{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential",
 "status":{"token":"tok-exec","expirationTimestamp":"2999-01-01T00:00:00Z"}}
EOF
]]):format(count), 448)
  local kc = kubeconfig("exec.yaml", ([[
    exec:
      apiVersion: client.authentication.k8s.io/v1
      command: %s
      interactiveMode: Never]]):format(plugin))
  local s, info = assert(k8s.open { kubeconfig = { kc } })
  t.eq(info.auth, "exec")
  t.eq(info.expires, 32472144000)
  t.eq(s:stats().exec_runs, 1)
  s:close()
  local f = assert(io.open(count))
  t.eq(#f:read("a"), 2, "the plugin ran once")
  f:close()
  write(plugin, "#!/bin/sh\necho broken >&2\nexit 3\n", 448)
  local none, err = k8s.open { kubeconfig = { kc } }
  t.eq(none, nil)
  t.eq(err.code, "refused")
end)

t.test("a credential handle replaces the kubeconfig's user", function()
  local path = write(dir .. "/bearer", "tok-handle\n")
  local h = assert(creds.load { name = "kube", kind = "bearer",
                                source = "file", path = path })
  local s, info = assert(k8s.open { kubeconfig = { TOKEN }, credential = h })
  t.eq(info.auth, "credential")
  h:close()
  t.raises(function() s:request("GET", "/version") end)
  s:close()
end)

local function desc(extra)
  local d = { name = "job-1", namespace = "ns-one",
              image = "registry.example/navette/x@" .. DIGEST,
              tasks = 1, cpus = "0.5", memory = "1GiB", gpus = 1,
              retries = 2, retry_exit_codes = { 7, 9 },
              env = { NAVETTE_MODE = "k8s" } }
  for k, v in pairs(extra or {}) do d[k] = v end
  return d
end

t.test("manifest builds the Job through the binding", function()
  local text = assert(k8s.manifest(desc(), "#!/bin/sh\ntrue\n"))
  local job = json.decode(text)
  t.eq(job.kind, "Job")
  t.eq(job.metadata.name, "job-1")
  t.eq(job.metadata.namespace, "ns-one")
  t.eq(job.spec.backoffLimitPerIndex, 2)
  t.eq(job.spec.template.spec.containers[1].image,
       "registry.example/navette/x@" .. DIGEST)
  t.ok(text:find('"NAVETTE_MODE"', 1, true), "the env is in the Job")
  t.eq(k8s.manifest(desc(), "#!/bin/sh\ntrue\n"), text, "same bytes")
  -- refusals come from the C builder, as nil, err
  local none, err = k8s.manifest(desc { image = "x:latest" })
  t.eq(none, nil)
  t.eq(err.code, "invalid")
  none, err = k8s.manifest(desc { colour = "blue" })
  t.eq(none, nil)
  t.match(err.message, "colour")
  t.raises(function() k8s.manifest(desc { cpus = print }) end, "function")
  t.raises(function() k8s.manifest(desc { tasks = 1.5 }) end, "whole")
end)

t.test("secret_manifest: a box, never a Lua string", function()
  local path = write(dir .. "/api-token", "s3cr3t-value\n")
  local h = assert(creds.load { name = "api", kind = "bearer",
                                source = "file", path = path })
  local body = assert(k8s.secret_manifest(desc(), "#!/bin/sh\nrun\n",
                                          { API = h }, "uid-1234"))
  t.eq(type(body), "userdata")
  t.ok(not tostring(body):find("s3cr3t", 1, true), "tostring hides it")
  t.match(tostring(body), "not shown")
  -- the Job carries no secret
  local job = assert(k8s.manifest(desc(), "#!/bin/sh\nrun\n", { API = h }))
  t.ok(not job:find("s3cr3t", 1, true), "no secret in the Job")
  local none, err = k8s.secret_manifest(desc(), nil, nil, "uid-1")
  t.eq(none, nil)
  t.eq(err.code, "invalid")
  t.raises(function()
    k8s.secret_manifest(desc(), "x", { API = "plain" }, "uid-1")
  end)
  t.raises(function() k8s.secret_manifest(desc(), "x", nil) end, "job_uid")
end)

t.test("patches and DeleteOptions", function()
  t.eq(json.decode(k8s.resume_patch()).spec.suspend, false)
  t.eq(json.decode(k8s.ttl_patch(3600)).spec.ttlSecondsAfterFinished, 3600)
  t.raises(function() k8s.ttl_patch(-1) end)
  t.eq(json.decode(k8s.delete_body()).propagationPolicy, "Background")
  t.ok(#k8s.desc_keys() > 10)
end)

t.test("contexts of merged kubeconfigs", function()
  local other = write(dir .. "/other.yaml", [[
apiVersion: v1
kind: Config
current-context: three
contexts:
- name: three
  context: {cluster: c3, user: u3, namespace: ns3}
- name: one
  context: {cluster: shadowed, user: shadowed}
]])
  local list = assert(k8s.contexts { TOKEN, other })
  t.eq(#list, 3)
  t.eq(list[1].name, "one")
  t.eq(list[1].cluster, "c1")
  t.eq(list[1].namespace, "ns-one")
  t.eq(list[1].current, true)
  t.eq(list[2].name, "two")
  t.eq(list[2].namespace, "")
  t.eq(list[3].name, "three")
  t.eq(list[3].current, false)
  local none, err = k8s.contexts { dir .. "/missing.yaml" }
  t.eq(none, nil)
  t.eq(err.code, "not_found")
end)
