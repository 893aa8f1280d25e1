-- _navette.k8s against the real test cluster, run by test_k8s_binding.sh
-- (navette test --host) with the stack's env (K8S_SERVER, K8S_CA,
-- K8S_KUBECONFIG, K8S_TOKEN_FILE, K8S_READER_TOKEN_FILE) and the
-- script's: NS (a namespace of its own), WORK (a folder for kubeconfigs
-- and the exec plugin's count), KUBECTL (the admin's kubectl, a command
-- line), and PHASE: "main" (every check but the last; it leaves a
-- resourceVersion in WORK/rv) or "expired" (after the cluster restarted:
-- a watch from that resourceVersion is answered 410).
local t = test
local k8s = _navette.k8s
local json = _navette.json

local function env(name)
  local v = os.getenv(name)
  assert(v and v ~= "", name .. " is not set")
  return v
end

local NS, WORK, KUBECTL = env("NS"), env("WORK"), env("KUBECTL")
local SERVER, CA = env("K8S_SERVER"), env("K8S_CA")

local function write(path, text)
  local f = assert(io.open(path, "wb"))
  f:write(text)
  f:close()
  return path
end

local function read(path)
  local f = io.open(path, "rb")
  if not f then return nil end
  local s = f:read("a")
  f:close()
  return s
end

-- A kubeconfig of the stack's cluster whose user is USER (YAML lines).
local function kubeconfig(name, user)
  return write(WORK .. "/" .. name, ([[
apiVersion: v1
kind: Config
current-context: test
clusters:
- name: kwok
  cluster:
    server: %s
    certificate-authority: %s
contexts:
- name: test
  context: {cluster: kwok, user: u, namespace: %s}
users:
- name: u
  user:
%s
]]):format(SERVER, CA, NS, user))
end

local function kubectl(args)
  local ok = os.execute(KUBECTL .. " " .. args .. " >/dev/null 2>&1")
  return ok
end

-- Polls fn() for up to seconds; returns its first truthy value.
local function wait_for(seconds, fn)
  local deadline = os.time() + seconds
  repeat
    local v = fn()
    if v then return v end
    os.execute("sleep 0.3")
  until os.time() > deadline
  return nil
end

local submitter_kc = kubeconfig("submitter.yaml",
                                "    tokenFile: " .. env("K8S_TOKEN_FILE"))

local function submitter()
  return assert(k8s.open { kubeconfig = { submitter_kc } })
end

if env("PHASE") == "expired" then
  t.test("after the restart, a watch from the old version is 410",
         function()
    local rv = assert(read(WORK .. "/rv"))
    local s = submitter()
    local got, err
    wait_for(60, function()
      got, err = s:watch { namespace = NS, kind = "jobs", seconds = 2,
                           resource_version = rv,
                           on_event = function() end }
      return got == nil and err.status == 410
    end)
    t.eq(got, nil)
    t.eq(err.code, "expired")
    t.eq(err.status, 410)
    t.match(err.hint, "list again")
    -- and a look gives a version to watch from again
    local look = assert(s:look { namespace = NS })
    local again = assert(s:watch { namespace = NS, kind = "jobs",
                                   seconds = 1,
                                   resource_version = look.resource_version,
                                   on_event = function() end })
    t.ok(again ~= "", "a resource version")
    s:close()
  end)
  return
end

t.test("the admin's kubeconfig: a client certificate", function()
  local s, info = assert(k8s.open {
    kubeconfig = { env("K8S_KUBECONFIG") } })
  t.eq(info.auth, "client-certificate")
  t.eq(info.server, SERVER)
  local status, body = s:request("GET", "/version")
  t.eq(status, 200)
  t.ok(json.decode(body).gitVersion, body)
  local allowed = s:access_review { namespace = NS, verb = "delete",
                                    resource = "nodes" }
  t.eq(allowed, true, "the admin may")
  s:close()
end)

t.test("a token file: the submitter may create Jobs", function()
  local s, info = submitter()
  t.eq(info.auth, "token-file")
  t.eq(info.namespace, NS)
  local allowed = s:access_review { namespace = NS, verb = "create",
                                    group = "batch", resource = "jobs" }
  t.eq(allowed, true)
  allowed = s:access_review { namespace = NS, verb = "create",
                              resource = "nodes" }
  t.eq(allowed, false)
  s:close()
end)

t.test("an exec plugin: run again after its credential expires",
       function()
  local count = WORK .. "/exec-count"
  os.remove(count)
  local plugin = write(WORK .. "/plugin.sh", ([[#!/bin/sh
echo x >> %s
exp=$(perl -MPOSIX -e \
  'print strftime("%%Y-%%m-%%dT%%H:%%M:%%SZ", gmtime(time + 13))')
printf '{"apiVersion":"client.authentication.k8s.io/v1",'
printf '"kind":"ExecCredential","status":{"token":"%%s",' "$(cat %s)"
printf '"expirationTimestamp":"%%s"}}\n' "$exp"
]]):format(count, env("K8S_TOKEN_FILE")))
  os.execute("chmod 700 " .. plugin)
  local kc = kubeconfig("exec.yaml", ([[
    exec:
      apiVersion: client.authentication.k8s.io/v1
      command: %s
      interactiveMode: Never]]):format(plugin))
  local runs = function() return #(read(count) or "") // 2 end
  local s, info = assert(k8s.open { kubeconfig = { kc } })
  t.eq(info.auth, "exec")
  t.ok(info.expires and info.expires > os.time(), "an expiry")
  t.eq(runs(), 1)
  local status = s:request("GET", "/apis/batch/v1/namespaces/" .. NS
                           .. "/jobs")
  t.eq(status, 200)
  t.eq(runs(), 1, "cached while it is valid")
  -- 13 s of life, renewed 10 s before it ends: 3 s from now
  os.execute("sleep 4")
  status = s:request("GET", "/apis/batch/v1/namespaces/" .. NS .. "/jobs")
  t.eq(status, 200)
  t.eq(runs(), 2, "run again once it expired")
  t.eq(s:stats().exec_runs, 2)
  -- a 401: the plugin gives a token the cluster refuses, then the
  -- session asks it again once and sends the request again, once
  write(plugin, ([[#!/bin/sh
echo x >> %s
printf '{"apiVersion":"client.authentication.k8s.io/v1",'
printf '"kind":"ExecCredential","status":{"token":"not-a-token"}}\n'
]]):format(count))
  os.execute("sleep 4")
  local before = runs()
  local none, err = s:look { namespace = NS }
  t.eq(none, nil)
  t.eq(err.status, 401)
  t.eq(err.code, "refused")
  t.match(err.message, "refused the credential")
  t.match(err.hint, "kubectl auth whoami")
  t.eq(runs(), before + 2, "the expired one, then once after the 401")
  s:close()
end)

t.test("the reader: 403 verbatim, with the verb and resource", function()
  local kc = kubeconfig("reader.yaml",
                        "    tokenFile: " .. env("K8S_READER_TOKEN_FILE"))
  local s = assert(k8s.open { kubeconfig = { kc } })
  local job = assert(k8s.manifest({ name = "nope", namespace = NS,
    image = "registry.invalid/navette/test@sha256:" .. string.rep("0", 64),
  }, "true\n"))
  local status, body = s:request("POST", "/apis/batch/v1/namespaces/" .. NS
                                 .. "/jobs", job)
  t.eq(status, 403)
  local err = s:api_error(status, body, "create", "jobs")
  t.eq(err.code, "refused")
  t.eq(err.status, 403)
  t.eq(err.reason, "Forbidden")
  t.eq(err.message, json.decode(body).message, "the message verbatim")
  t.match(err.message, 'cannot create resource "jobs" in API group "batch"')
  t.match(err.hint, "kubectl auth can%-i create jobs")
  local allowed, reason = s:access_review { namespace = NS, verb = "create",
                                            group = "batch",
                                            resource = "jobs" }
  t.eq(allowed, false)
  t.eq(type(reason), "string")
  -- a 403 from the binding's own LIST: no role in kube-system
  local none
  none, err = s:look { namespace = "kube-system" }
  t.eq(none, nil)
  t.eq(err.status, 403)
  t.eq(err.code, "refused")
  t.match(err.message, 'cannot list resource "jobs" in API group "batch"'
          .. ' in the namespace "kube%-system"')
  t.match(err.hint, "kubectl auth can%-i list jobs")
  s:close()
end)

t.test("a 422 lists its causes", function()
  local s = submitter()
  local status, body = s:request("POST", "/apis/batch/v1/namespaces/" .. NS
    .. "/jobs", '{"apiVersion":"batch/v1","kind":"Job","metadata":'
    .. '{"name":"bad"},"spec":{"template":{"spec":{"restartPolicy":'
    .. '"Always","containers":[{"name":"job","image":"x"}]}}}}')
  t.eq(status, 422)
  local err = s:api_error(status, body, "create", "jobs")
  t.eq(err.code, "invalid")
  t.eq(err.status, 422)
  t.eq(err.reason, "Invalid")
  t.ok(#err.causes >= 1, "causes")
  local fields = {}
  for _, c in ipairs(err.causes) do
    fields[#fields + 1] = c.field .. ": " .. c.message
  end
  t.match(table.concat(fields, "; "), "spec%.template%.spec%.restartPolicy")
  s:close()
end)

t.test("look on a Job made with k8s.manifest, and a watch", function()
  local s = submitter()
  local name = "bind-1"
  local desc = { name = name, namespace = NS, profile = "kube",
    image = "registry.invalid/navette/test@sha256:" .. string.rep("0", 64),
    gpus = 1, suspend = true }
  local job = assert(k8s.manifest(desc, "true\n"))
  local status, body = s:request("POST", "/apis/batch/v1/namespaces/" .. NS
                                 .. "/jobs", job)
  t.eq(status, 201, body)
  local uid = json.decode(body).metadata.uid
  local secret = assert(k8s.secret_manifest(desc, "#!/bin/sh\ntrue\n", nil,
                                            uid))
  status, body = s:request("POST", "/api/v1/namespaces/" .. NS
                           .. "/secrets", secret)
  t.eq(status, 201, body)
  -- the same Job again: 409
  status = s:request("POST", "/apis/batch/v1/namespaces/" .. NS .. "/jobs",
                     job)
  t.eq(status, 409)
  local sel = "navette/profile=kube"
  local look = assert(s:look { namespace = NS, selector = sel,
                               events = true })
  local first_rv = look.resource_version
  local j = look.jobs[name]
  t.ok(j, "the Job is listed")
  t.eq(j.uid, uid)
  t.eq(j.suspended, true)
  t.eq(j.tasks, 1)
  t.eq(j.labels["navette/job"], name)
  t.eq(j.rows[0].phase, "queued")
  status = s:request("PATCH", "/apis/batch/v1/namespaces/" .. NS .. "/jobs/"
                     .. name, k8s.resume_patch(),
                     "application/merge-patch+json")
  t.eq(status, 200)
  local last
  local row = wait_for(60, function()
    local l = assert(s:look { namespace = NS, selector = sel })
    last = l.jobs[name].rows[0]
    return last.phase == "running" and last or nil
  end)
  t.ok(row, "the row becomes running (last: " .. last.phase .. ", "
       .. tostring(last.reason) .. ")")
  if not row then return end
  t.eq(row.pod:sub(1, #name + 1), name .. "-", "its pod")
  t.match(row.node, "^kwok%-gpu")
  -- the watch, from a look's version, sees the change the admin makes
  look = assert(s:look { namespace = NS, selector = sel })
  t.ok(kubectl("-n " .. NS .. " annotate pod " .. row.pod
               .. " navette.test/exit-code=0"), "annotated")
  local seen = {}
  local rv = look.resource_version
  wait_for(60, function()
    rv = assert(s:watch { namespace = NS, kind = "jobs", selector = sel,
      resource_version = rv, seconds = 5,
      on_event = function(type, n, v)
        seen[#seen + 1] = type .. " " .. n
        t.ok(v ~= "", "each event has a version")
        return false -- stop at the first
      end })
    return #seen > 0
  end)
  t.eq(seen[1], "MODIFIED " .. name)
  t.ok(rv ~= look.resource_version, "the watch moved the version on")
  row = wait_for(60, function()
    local l = assert(s:look { namespace = NS, selector = sel })
    local r = l.jobs[name].rows[0]
    return r.phase == "succeeded" and r or nil
  end)
  t.ok(row, "the row becomes succeeded")
  if row then t.eq(row.done, true) end
  -- on_event raising ends the watch with its error
  look = assert(s:look { namespace = NS, selector = sel })
  t.raises(function()
    s:watch { namespace = NS, kind = "jobs", selector = sel, seconds = 5,
              resource_version = first_rv,
              on_event = function() error("stop here") end }
  end, "stop here")
  write(WORK .. "/rv", look.resource_version)
  -- one more change after it, so that the restarted API server's watch
  -- cache starts past it
  t.ok(kubectl("-n " .. NS .. " annotate job " .. name
               .. " navette.test/after-rv=1"), "a change after rv")
  -- the log of the pod (KWOK prints none: an empty text, or an error)
  local text, err = s:log { namespace = NS, pod = row and row.pod or "x" }
  t.ok(text ~= nil or err.status ~= nil, "log answers")
  t.ok(s:stats().requests > 5)
  s:close()
end)
