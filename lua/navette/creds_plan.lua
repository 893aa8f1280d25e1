-- navette.creds_plan: what a plan says of a credential it did not load:
-- what would run to load it (a command's words as declared, or the
-- Keychain), one line per credential and scope. Below creds.lua, so that
-- the stores (s3store.lua) say it too without requiring creds.
local scope = require("navette.context").scope
local core = _navette.core

local M = {}

-- What would run to load d, for a person reading a plan: the command
-- (its words as declared: a declaration, never a value) or the Keychain.
local function what_runs(d)
  local text
  if d.source == "keychain" then
    text = "the Keychain's tool (security) for credential " .. d.name
  else
    text = "the command of credential " .. d.name .. ": "
           .. table.concat(d.command or {}, " ")
  end
  text = text:gsub("[%c\127]", "?")
  if #text > 200 then text = text:sub(1, 197) .. "..." end
  return text
end

-- The plan's line saying what would run to load d (once per credential
-- and run).
function M.not_run(d)
  scope().planned_not_run = scope().planned_not_run or {}
  if scope().planned_not_run[d.name] then return end
  scope().planned_not_run[d.name] = true
  core.plan("creds", "would run", what_runs(d))
end

return M
