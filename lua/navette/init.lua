-- The navette library as recipes see it: `local navette = require
-- "navette"`. navette.job{...} declares a job of the run; navette.storage
-- moves data in object storage; navette.project tells where the recipe
-- runs.
local runner = require "navette.runner"

local navette = {}

navette.version = (_navette.core.version())

function navette.job(spec)
  return runner.declare(spec)
end

navette.storage = require "navette.storage"

-- navette.image.resolve(ref), .exists, .inspect, .code_layer{...},
-- .build{...}: images pinned by digest
navette.image = require "navette.image"

-- navette.creds.get(name) -> an opaque handle; navette.creds.jwt(key, ...)
navette.creds = {
  get = function(name) return require("navette.creds").get(name) end,
  jwt = function(key, opts) return require("navette.creds").jwt(key, opts) end,
}

-- navette.http.get(url) / navette.http.request(url, opts): TLS verified,
-- credentials bound to their declared host.
navette.http = {
  get = function(url, opts) return require("navette.http").get(url, opts) end,
  request = function(url, opts)
    return require("navette.http").request(url, opts)
  end,
}

-- Read-only facts about the run in progress.
function navette.context()
  local run = runner.current
  if not run then return nil end
  return {
    project = run.project.name,
    profile = run.profile.name,
    plan = run.plan,
    recipe = run.recipe,
  }
end

return navette
