-- The kubernetes backend without a cluster: the profile's checks (what is
-- refused, naming the key and what to do), prepare (an image is needed,
-- retries on timeout refused), the job description a spec becomes (one
-- job, a sweep's tasks, retries, after, resources), and the requests plan
-- shows: the Job's manifest as the API server gets it, the Secret with no
-- value, no release for a job held for its `after`.
local t = test
local backends = require "navette.backends"
local json = _navette.json

local b = backends.get("kubernetes")

-- s holds sub, as it is
local function contains(s, sub)
  t.ok(type(s) == "string" and s:find(sub, 1, true) ~= nil,
       tostring(s) .. " holds " .. sub)
end
local DIGEST = "sha256:" .. string.rep("ab", 32)
local IMAGE = "registry.example.net/base@" .. DIGEST

local function where(storage, credentials)
  return { path = "navette.lua", profile = "gpu",
           storage = storage or "s3://bucket/",
           credentials = credentials or {} }
end

local function refused(s, w)
  local ok, err = pcall(b.validate, s, w or where())
  t.ok(not ok, "refused")
  t.eq(type(err), "table", "an error object: " .. tostring(err))
  return err.message, err.hint
end

t.test("a valid profile keeps its settings", function()
  local cfg = b.validate({ namespace = "vision", context = "prod",
                           kubeconfig = "~/.kube/prod.yaml",
                           nodes = { "gpu-a" }, ttl = 60,
                           environment = { HF_HOME = "/cache" } }, where())
  t.eq(cfg.namespace, "vision")
  t.eq(cfg.context, "prod")
  t.eq(cfg.kubeconfig[1], "~/.kube/prod.yaml")
  t.eq(cfg.nodes[1], "gpu-a")
  t.eq(cfg.ttl, 60)
  t.eq(cfg.environment.HF_HOME, "/cache")
  t.eq(b.validate({ namespace = "vision" }, where()).ttl, 3600,
       "the default time to live")
end)

t.test("what a profile may not say", function()
  local m, h = refused({ namespace = "vision", namepsace = "x" })
  contains(m, "unknown key 'namepsace'")
  contains(m, "did you mean 'namespace'")
  contains(h, "kubernetes keys are: context, namespace")
  m = refused({ namespace = "Vision_1" })
  contains(m, "namespace must be the namespace")
  m = refused({ namespace = "vision" }, where("file:///tmp/store"))
  contains(m, "needs s3:// storage")
  m = refused({ namespace = "vision", credential = "nope" })
  contains(m, "credential 'nope' is not declared")
  m = refused({ namespace = "vision", credential = "key" },
              where(nil, { key = { name = "key", kind = "pem" } }))
  contains(m, "is of kind pem, not bearer")
  m = refused({ namespace = "vision", pin = "abc" })
  contains(m, "pin must be")
  m = refused({ namespace = "vision", ttl = -1 })
  contains(m, "ttl must be")
  m = refused({ namespace = "vision",
                environment = { TOKEN = "ghp_" .. string.rep("a", 36) } })
  contains(m, "looks like a secret")
  m = refused({ namespace = "vision", kubeconfig = {} })
  contains(m, "kubeconfig must be a path")
end)

local PROFILE = { name = "gpu", max_token_lifespan = 3600,
                  kubernetes = b.validate({ namespace = "vision" }, where()) }

local function spec(extra)
  local s = { id = "proj-3m8zcg-abcde", name = "train", project = "proj",
              profile = "gpu", run = "proj-run-3m8zcg-abcde",
              commit = string.rep("1", 40),
              container = { image = IMAGE, runtime = "podman" },
              command = { "python3", "train.py" },
              outputs = { url = "s3://bucket/proj-3m8zcg-abcde/" } }
  for k, v in pairs(extra or {}) do s[k] = v end
  return s
end

t.test("prepare: an image is needed; no retry on timeout", function()
  local ok, err = pcall(b.prepare, spec { container = false }, PROFILE)
  t.ok(not ok)
  contains(err.message, "a job on Kubernetes runs in an image")
  ok, err = pcall(b.prepare, spec { retries = { max = 2,
                                                on = { "timeout" } } },
                  PROFILE)
  t.ok(not ok)
  contains(err.message, "retries on timeout cannot run on Kubernetes")
  local s = spec()
  b.prepare(s, PROFILE)
  t.eq(s.kubernetes.namespace, "vision")
end)

-- The Job manifest of a description, decoded.
local function job_of(d)
  local text, err = _navette.k8s.manifest(d)
  t.ok(text, "a manifest: " .. tostring(err and err.message))
  return json.decode(text)
end

t.test("one job: its Job, resources, env and labels", function()
  local s = spec { resources = { cpus = 4, memory = 8 * 1024 ^ 3,
                                 gpus = 2, time_limit = 3600 } }
  b.prepare(s, PROFILE)
  local d = b.description(s, { nodes = { "gpu-b" } })
  t.eq(d.tasks, 1)
  t.eq(d.suspend, true, "created suspended, released after its Secret")
  t.eq(d.env.NAVETTE_JOB_ID, s.id)
  local job = job_of(d)
  local pod = job.spec.template.spec
  t.eq(job.metadata.name, s.id)
  t.eq(job.metadata.namespace, "vision")
  t.eq(job.metadata.labels["navette/job"], s.id)
  t.eq(pod.restartPolicy, "Never")
  t.eq(pod.containers[1].image, IMAGE)
  t.eq(pod.containers[1].resources.limits["nvidia.com/gpu"], "2")
  t.eq(job.spec.activeDeadlineSeconds, 3600)
  t.eq(pod.nodeSelector["kubernetes.io/hostname"], "gpu-b")
  t.eq(job.spec.backoffLimitPerIndex, 0, "no retry asked")
end)

t.test("retries: the launcher's exit 75 counted per index", function()
  local s = spec { retries = { max = 2, on = { "exit:3", "preempted" } } }
  b.prepare(s, PROFILE)
  local d = b.description(s)
  t.eq(d.retries, 2)
  t.eq(d.requeue_exit, 75)
  t.eq(d.env.NAVETTE_RETRY_ON, "exit:3", "preemption is the cluster's")
  t.eq(b.launch.requeue_exit, 75)
  local job = job_of(d)
  t.eq(job.spec.backoffLimitPerIndex, 2)
  local counted
  for _, rule in ipairs(job.spec.podFailurePolicy.rules) do
    if rule.action == "Count" then counted = rule.onExitCodes.values end
  end
  t.eq(counted and counted[1], 75)
  -- only preemption: nothing for the launcher to retry
  s = spec { retries = { max = 1, on = { "preempted" } } }
  b.prepare(s, PROFILE)
  d = b.description(s)
  t.eq(d.requeue_exit, nil)
  t.eq(d.env.NAVETTE_RETRY_ON, nil)
end)

t.test("a sweep: one Indexed Job, its tasks' ids", function()
  local specs = {}
  for k = 1, 3 do
    specs[k] = spec { id = "proj-3m8zcg-task" .. k,
                      name = "part[n=" .. k .. "]" }
    b.prepare(specs[k], PROFILE)
  end
  local d = b.description(specs[1], nil, specs)
  t.eq(d.tasks, 3)
  t.eq(d.name, specs[1].id)
  t.eq(table.concat(d.task_ids, ","),
       "proj-3m8zcg-task1,proj-3m8zcg-task2,proj-3m8zcg-task3")
  t.eq(d.env.NAVETTE_JOB_ID, nil, "each task finds its own")
  local job = job_of(d)
  t.eq(job.spec.completions, 3)
  t.eq(job.spec.completionMode, "Indexed")
end)

t.test("plan: the requests, nothing sent; after holds the release",
       function()
  local s = spec()
  b.prepare(s, PROFILE)
  local reqs = b.plan_requests({ s }, {})
  t.eq(#reqs, 3)
  t.eq(reqs[1].method .. " " .. reqs[1].path,
       "POST /apis/batch/v1/namespaces/vision/jobs")
  t.eq(reqs[1].body.kind, "Job")
  t.eq(reqs[2].path, "/api/v1/namespaces/vision/secrets")
  contains(reqs[2].body.stringData, "values not shown")
  t.eq(reqs[3].method, "PATCH")
  t.eq(reqs[3].body.spec.suspend, false)
  s = spec { after = { "proj-3m8zcg-first" } }
  b.prepare(s, PROFILE)
  reqs = b.plan_requests({ s }, {})
  t.eq(#reqs, 2, "held for its after: no release")
  t.eq(reqs[1].body.metadata.labels["navette/held"], "after")
end)
