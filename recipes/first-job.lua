-- The first job: small, fast, and easy to recognise.
--
-- It pins the code to the commit of this repository, uploads a small data
-- file shipped beside the recipe to the profile's store (a controlled,
-- read-only input), runs a script from that commit which writes the commit
-- id and the input's sha256 into result.txt, and publishes it under the
-- job's own prefix with the log and the run record.
--
--   navette run recipes/first-job.lua --wait
local navette = require "navette"

local greeting = navette.storage.put("inputs/first-job/greeting.txt",
                                     "first-job/greeting.txt")

navette.job {
  name = "first-job",
  -- code: the commit of the repository holding this recipe (the default)
  inputs = { greeting = greeting.url },
  outputs = "{project}/{id}/",
  command = { "sh", "recipes/first-job/run.sh" },
  env = { GREETING_NAME = "greeting" },
  resources = { cpus = 1, memory = "256MiB", time_limit = "5m" },
  logs = { max_bytes = "1MiB" },
  success = { exit_code = 0, outputs = { "result.txt" } },
  failure = {
    log_patterns = { "first-job: FAILED" },
    hint = "the workspace or the input was not what run.sh expects; "
        .. "read the log with navette logs ID",
  },
}
