-- The training pattern of the catalogue: a sweep of a small convolutional
-- network (recipes/training/train.py, PyTorch) over learning rate and
-- seed on scikit-learn's digits set, each run checkpointed every epoch and
-- retried after a preemption, a node failure or a time-out, then a job
-- that picks the best run by test accuracy (select.py: best.json).
--
-- recipes/training/sweep.lua runs it from this repository; another
-- repository brings it as a library:
--   local lib = navette.use { git = URL, ref = TAG, module = "recipes.catalogue" }
--   lib.training.sweep { lr = { 0.1, 0.03 }, seed = { 7 } }
local navette = require "navette"

local training = {}

-- The data: the digits set as python3-sklearn ships it, uploaded to the
-- profile's store; the jobs read it as an input. Where it is on a machine:
-- the project file's datasets.digits, else (brought as a library) the
-- paths below, where Debian's package puts it.
training.DATASET = "digits"
training.DATA_KEY = "datasets/digits.csv.gz"
training.DATA_PATHS = {
  "/usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz",
  "/usr/local/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz",
}

function training.upload_data()
  return navette.storage.put(training.DATA_KEY,
    { dataset = training.DATASET, paths = training.DATA_PATHS })
end

local function list(v, default, what)
  if v == nil then return default end
  if type(v) ~= "table" or #v == 0 then
    error("training.sweep: " .. what .. " must be a non-empty list", 3)
  end
  return v
end

-- opts (all optional):
--   lr, seed   lists of values (default { 0.05, 0.01 } and { 1, 2, 3 })
--   epochs     epochs per run (8)
--   data       the digits file in storage (default: training.upload_data())
--   name       the runs' name ("train"; the fan-in is NAME-best)
--   image      the image the jobs run in (default: the profile's
--              images.catalogue, built by recipes/images; else the node's
--              own python3 with python3-torch, recorded as host)
--   gpus       GPUs per run (train.py uses CUDA when the node has it)
--   code       the commit the jobs run: "library" (this library's, the
--              default) or a revision of the recipe's repository ("HEAD"
--              when the catalogue's own recipes run it)
-- -> { runs = the sweep's jobs, best = the fan-in job }
function training.sweep(opts)
  opts = opts or {}
  local name = opts.name or "train"
  local code = opts.code or "library"
  local image = opts.image or navette.context().images.catalogue
  local epochs = opts.epochs or 8
  if math.type(epochs) ~= "integer" or epochs < 1 or epochs > 1000 then
    error("training.sweep: epochs must be a whole number from 1 to 1000", 2)
  end
  local runs = navette.sweep {
    job = {
      name = name,
      code = code,
      image = image,
      inputs = { ["digits.csv.gz"] = opts.data or training.upload_data() },
      command = { "python3", "recipes/training/train.py" },
      env = { TRAIN_EPOCHS = tostring(epochs) },
      resources = { cpus = 1, memory = "1GiB", time_limit = "20m",
                    gpus = opts.gpus },
      checkpoint = { every = "1m" },
      retries = { max = 2, on = { "preempted", "node_fail", "timeout" } },
      logs = { max_bytes = "1MiB" },
      success = { exit_code = 0, outputs = { "metrics.json", "model.pt" } },
      failure = {
        log_patterns = { "train: FAILED" },
        hint = "the log says why (train: FAILED: ...): a data file that is "
            .. "not scikit-learn's digits.csv.gz, or a learning rate so "
            .. "high that the loss diverges",
      },
    },
    matrix = { lr = list(opts.lr, { 0.05, 0.01 }, "lr"),
               seed = list(opts.seed, { 1, 2, 3 }, "seed") },
  }
  local names = {}
  for i, run in ipairs(runs) do names[i] = '"' .. run.name .. '"' end
  local best = navette.job {
    name = name .. "-best",
    code = code,
    image = image,
    inputs = { runs = navette.outputs(runs, "metrics.json") },
    command = { "python3", "recipes/training/select.py" },
    env = { SELECT_NAMES = "[" .. table.concat(names, ",") .. "]" },
    resources = { cpus = 1, memory = "256MiB", time_limit = "5m" },
    success = { exit_code = 0, outputs = { "best.json" } },
    failure = { log_patterns = { "select: FAILED" },
                hint = "a run's metrics.json is not what train.py writes: "
                    .. "read the log (navette logs ID)" },
  }
  return { runs = runs, best = best }
end

return training
