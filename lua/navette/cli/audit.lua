-- `navette audit verify|show`: the audit log's hash chain checked, or
-- its lines listed (with the damage named after them).
local errors = require "navette.errors"
local term = require "navette.term"
local common = require "navette.cli.common"
local json = _navette.json

local M = {
  name = "audit",
  summary = { { "audit verify", "check the audit log's hash chain" },
              { "audit show", "list the audit log's lines" } },
  usage = [[
usage: navette audit verify [--json]
       navette audit show [--job ID] [--json]
  The audit log: one hash-chained line per side effect (submit, cancel,
  upload, refusal, credential minted). `verify` checks the chain and names
  the first edited, removed, reordered or truncated line (exit 1); `show`
  on a damaged log names the damage after the lines it read (exit 1).]],
  flags = { json = "bool", job = "value" },
  read_only = { show = true, verify = true },
}

function M.run(argv)
  local opts, args = common.command_args(M, argv, true)
  if not opts then return args end
  local audit = require "navette.audit"
  local verb = args[1]
  if #args > 1 then common.usage_error("too many arguments", "audit") end
  if verb == "verify" then
    local report, err = audit.verify()
    if not report then error(errors.new(err.code, err.message, err.hint), 0) end
    if opts.json then
      term.print(json.encode(report, true))
    elseif report.ok then
      term.print("audit log intact: " .. tostring(report.lines) .. " line(s)")
    else
      term.print(term.style("stdout", "red", "audit log damaged") .. ": "
                 .. tostring(report.kind) .. " at line "
                 .. tostring(report.line) .. ": "
                 .. tostring(report.message))
      if report.hint then term.print("hint: " .. report.hint) end
    end
    return report.ok and 0 or 1
  elseif verb == "show" then
    local lines, err = audit.lines(opts.job)
    if not lines then error(errors.new(err.code, err.message, err.hint), 0) end
    -- a line that is not a record is left out; the damage is raised below
    local records = {}
    for _, l in ipairs(lines) do
      local e = json.decode(l)
      if type(e) == "table" and math.type(e.seq) == "integer" then
        records[#records + 1] = e
      end
    end
    if opts.json then
      term.print(json.encode(json.array(records), true))
    else
      for _, e in ipairs(records) do
        term.printf("%5s %s %-16s %-8s %s%s\n", tostring(e.seq),
                    tostring(e.time), tostring(e.action),
                    tostring(e.result), tostring(e.target),
                    e.job ~= nil and e.job ~= json.null
                      and ("  job " .. tostring(e.job)) or "")
      end
    end
    local damage = audit.damage()
    if damage then error(errors.new(damage.code, damage.message,
                                    damage.hint), 0) end
    return 0
  end
  common.usage_error("expected `audit verify` or `audit show`", "audit")
end

return M
