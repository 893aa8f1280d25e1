-- Re-tests every node of the profile after an update (a driver, a kernel,
-- the container runtime, an image): a smoke job is submitted once per
-- node, followed to its end, and each node's run record is compared with
-- that node's baseline in the store (the record of its last good
-- re-test): the job succeeded, reached every phase the baseline reached,
-- and published each output with the same sha256; the node's fingerprint
-- (image, OS, kernel, runtime, driver, CUDA, interpreter) is shown beside
-- it, changed or not. A regression fails the task (`navette maintain
-- --once` exits 1) and keeps the old baseline; a node that passes gets
-- its new record as the next baseline; a node seen for the first time
-- gets one.
--
-- The smoke job is recipes/maintenance/retest/smoke.sh: a deterministic
-- computation whose output must not change across updates (replace it
-- with your own: a small training step with a fixed seed, a render of one
-- frame). NODES: the nodes to test (nil: the profile's slurm.nodes).
--
--   navette maintain --once recipes/maintenance/retest-after-update.lua --profile cluster
local navette = require "navette"

local NODES = nil
local IMAGE = nil -- an image reference to run the smoke job in (nil: the host)

navette.task {
  name = "retest-after-update",
  schedule = "daily 06:00",
  run = function()
    local report = navette.retest {
      nodes = NODES,
      job = {
        name = "smoke",
        image = IMAGE,
        command = { "sh", "recipes/maintenance/retest/smoke.sh" },
        success = { outputs = { "smoke.txt" } },
        resources = { cpus = 1, time_limit = "10m" },
        -- a re-test runs each time it is asked, never taken from the last
        reuse = false,
      },
    }
    if not report.ok then return false, report.text end
    return report.text
  end,
}
