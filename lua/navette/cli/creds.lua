-- `navette creds list|check NAME`: the credentials a project declares,
-- their sources, ages and expiries (never their values).
local term = require "navette.term"
local util = require "navette.util"
local common = require "navette.cli.common"
local json = _navette.json

local M = {
  name = "creds",
  summary = { { "creds list", "declared credentials and their status" },
              { "creds check NAME", "load one credential, check its age" } },
  usage = [[
usage: navette creds list [--profile P] [--json]
       navette creds check NAME [--profile P] [--json]
  Shows the credentials the project declares: names, kinds, sources, ages
  and expiries, never values. `check` loads one and exits 1 when it is
  expired or older than the profile's max_credential_age, 3 when its
  source refuses (a file readable by others, a missing variable).]],
  flags = { profile = "value", json = "bool" },
  read_only = { list = true },
}

-- The project of the working folder (for commands without a recipe).
local function here_project(profile_name)
  local project = require "navette.project"
  local proj = project.at()
  return proj, project.profile(proj, profile_name)
end

function M.run(argv)
  local opts, args = common.command_args(M, argv, true)
  if not opts then return args end
  local verb = table.remove(args, 1)
  local proj, profile = here_project(opts.profile)
  local creds = require "navette.creds"
  local declared = profile.credentials
  if verb == "check" then
    if #args ~= 1 then
      common.usage_error("expected one credential NAME", "creds")
    end
    if not declared[args[1]] then
      common.usage_error("no credential named '" .. args[1] .. "' in profile "
                  .. profile.name .. util.suggest(args[1],
                  util.sorted_keys(declared)), "creds")
    end
    declared = { [args[1]] = declared[args[1]] }
  elseif verb ~= "list" or #args > 0 then
    common.usage_error("expected `creds list` or `creds check NAME`", "creds")
  end
  local rows = creds.inspect(declared, profile.max_credential_age)
  if opts.json then
    term.print(json.encode(json.array(rows), true))
  elseif #rows == 0 then
    local defined = util.sorted_keys(proj.credentials or {})
    if #defined > 0 then
      term.print("profile " .. profile.name .. " has no credential: the "
                 .. "project declares " .. table.concat(defined, ", ")
                 .. ", and a profile uses those it names (credentials = { \""
                 .. defined[1] .. "\" } in the profile)")
    else
      term.print("project " .. proj.name .. " declares no credentials "
                 .. "(credentials = { ... } in navette.lua)")
    end
  else
    -- one word per row; what went wrong is told under the table
    term.printf("%-20s %-8s %-9s %-6s %-8s %s\n", "NAME", "KIND", "SOURCE",
                "AGE", "EXPIRES", "STATUS")
    for _, r in ipairs(rows) do
      term.printf("%-20s %-8s %-9s %-6s %-8s %s\n", r.name, r.kind,
                  r.source, common.age_text(r.age_s),
                  common.age_text(r.expires_in_s),
                  term.style("stdout", r.ok and "green" or r.not_run
                             and "yellow" or "bold_red", r.status))
    end
    for _, r in ipairs(rows) do
      local c = r.certificate
      if c then
        local left = r.expires_in_s and (r.expires_in_s > 0
          and (common.age_text(r.expires_in_s) .. " left")
          or ("expired " .. common.age_text(-r.expires_in_s) .. " ago"))
        term.print(r.name .. ": certificate key id \"" .. c.key_id
                   .. "\", serial " .. c.serial .. ", principals "
                   .. (#c.principals > 0 and table.concat(c.principals, ", ")
                       or "any"))
        term.print("  valid from " .. c.valid_from .. " to " .. c.valid_to
                   .. (left and (" (" .. left .. ")") or ""))
        term.print("  signed by CA " .. c.ca_fingerprint)
      end
      if r.ok and r.note then term.print(r.name .. ": " .. r.note) end
    end
    local told = false
    for _, r in ipairs(rows) do
      if not r.ok then
        if not told then term.print(""); told = true end
        term.print(r.name .. ": " .. (r.not_run and ("not checked ("
                   .. r.note .. ")") or tostring(r.warning or r.error)))
        if r.hint then term.print("  check: " .. r.hint) end
      end
    end
  end
  -- a credential not run is no failure: list never runs one
  for _, r in ipairs(rows) do
    if not r.ok and not r.not_run then return r.error and 3 or 1 end
  end
  return 0
end

return M
