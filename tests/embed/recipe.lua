-- The recipe of the embedding test (tests/embed/host.c runs it): it uses a
-- module the host program registered, prints through the output module
-- (the host's callback receives it redacted), and declares one job whose
-- command writes an output carrying the host module's answer.
local navette = require "navette"
local greet = require "host.greet"

local greeting = greet.hello("recipe")
print(greeting)
-- secret-shaped, but only once evaluated (the commit holds no key)
print("key in output: " .. "AKIA" .. string.rep("7", 16))

navette.job {
  name = "greet",
  outputs = "{project}/{id}/",
  command = { "sh", "-c",
              "printf '%s\\n' \"$GREETING\" > \"$NAVETTE_OUTPUTS/greeting.txt\"" },
  env = { GREETING = greeting },
  resources = { cpus = 1, memory = "64MiB", time_limit = "1m" },
  success = { exit_code = 0, outputs = { "greeting.txt" } },
}
