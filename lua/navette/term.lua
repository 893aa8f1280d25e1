-- Printing for the CLI: everything goes through _navette.out (the one
-- output module), with styles only where colour is allowed.
local out = _navette.out

local term = {}

local codes = { bold = "1", dim = "2", red = "31", green = "32",
                yellow = "33", blue = "34", cyan = "36" }

function term.style(stream, name, s)
  if not out.color(stream) then return s end
  return "\27[" .. codes[name] .. "m" .. s .. "\27[0m"
end

function term.print(...)
  local parts = table.pack(...)
  for i = 1, parts.n do parts[i] = tostring(parts[i]) end
  out.write("stdout", table.concat(parts, " "), "\n")
end

function term.printf(fmt, ...)
  out.write("stdout", string.format(fmt, ...))
end

function term.eprint(...)
  local parts = table.pack(...)
  for i = 1, parts.n do parts[i] = tostring(parts[i]) end
  out.write("stderr", table.concat(parts, " "), "\n")
end

function term.write(s) out.write("stdout", s) end

-- Reports an error object: "error: message" and "  check: hint".
function term.error(e)
  out.write("stderr", term.style("stderr", "red", "error: ")
            .. tostring(e.message) .. "\n")
  if e.hint and e.hint ~= "" then
    out.write("stderr", "  check: " .. e.hint .. "\n")
  end
end

function term.state_style(stream, state)
  if state == "succeeded" then return term.style(stream, "green", state) end
  if state == "failed" or state == "cancelled" then
    return term.style(stream, "red", state)
  end
  return term.style(stream, "yellow", state)
end

return term
