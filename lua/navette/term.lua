-- Printing for the CLI: everything goes through _navette.out (the one
-- output module), with styles only where colour is allowed.
local out = _navette.out
local function sys_now() return _navette.sys.now() end

local term = {}

local codes = { bold = "1", dim = "2", red = "31", green = "32",
                yellow = "33", blue = "34", cyan = "36", bold_red = "1;31" }

function term.style(stream, name, s)
  if not out.color(stream) then return s end
  -- line by line: the colour is reset before each newline, so a line
  -- that follows (or the shell's prompt) is never coloured by it
  local code = "\27[" .. codes[name] .. "m"
  return (s:gsub("[^\n]+", function(line)
    return code .. line .. "\27[0m"
  end))
end

-- The values print writes: each through tostring, joined by spaces.
local function joined(...)
  local parts = table.pack(...)
  for i = 1, parts.n do parts[i] = tostring(parts[i]) end
  return table.concat(parts, " ")
end

function term.print(...)
  out.write("stdout", joined(...), "\n")
end

function term.printf(fmt, ...)
  out.write("stdout", string.format(fmt, ...))
end

function term.eprint(...)
  out.write("stderr", joined(...), "\n")
end

function term.write(s) out.write("stdout", s) end

-- Writes s in a style where colour is allowed. The style's codes go raw;
-- s goes through out.write, which on stderr shows any control character
-- in it as a visible escape (output.h), so text from a recipe or a server
-- never drives the terminal.
function term.write_styled(stream, name, s)
  local styled = out.color(stream)
  if styled then out.raw(stream, "\27[" .. codes[name] .. "m") end
  out.write(stream, s)
  if styled then out.raw(stream, "\27[0m") end
end

-- Reports an error object: "error: message" and "  check: hint".
function term.error(e)
  term.write_styled("stderr", "red", "error: ")
  out.write("stderr", tostring(e.message) .. "\n")
  if e.hint and e.hint ~= "" then
    out.write("stderr", "  check: " .. tostring(e.hint) .. "\n")
  end
end

-- Goes back to the start of a terminal line and clears it (progress).
-- Asks a person a yes/no question on the terminal: true when they
-- answered y or yes. nil, "not a terminal" when no one can answer (stdin
-- or stdout is not a terminal): the caller refuses or asks for a flag.
function term.confirm(question)
  if not out.tty("stdin") then return nil, "not a terminal" end
  out.write("stdout", question .. " [y/N] ")
  local answer = io.stdin:read("l")
  return answer ~= nil and answer:lower():match("^%s*y") ~= nil
end

function term.clear_line(stream)
  out.raw(stream, "\r\27[K")
end

-- A job's state (or final phase) in its colour: succeeded green, failed
-- and cancelled bold red, the rest yellow. width pads it on the right
-- by its own length (an escape sequence has no width on the screen).
local STATE_COLOURS = { succeeded = "green", failed = "bold_red",
                        cancelled = "bold_red" }
function term.state_style(stream, state, width)
  local text = term.style(stream, STATE_COLOURS[state] or "yellow", state)
  if width and #state < width then
    text = text .. string.rep(" ", width - #state)
  end
  return text
end

-- A cell of a table padded to width by its visible length (styled text
-- counts only what shows; UTF-8 characters count once).
function term.pad(text, width)
  local shown = utf8.len((text:gsub("\27%[[%d;]*m", ""))) or #text
  if shown >= width then return text end
  return text .. string.rep(" ", width - shown)
end

local function human_size(n)
  return require("navette.util").human_size(n)
end

local function clock_text(s)
  s = math.floor(s + 0.5)
  if s >= 3600 then
    return string.format("%d:%02d:%02d", s // 3600, s % 3600 // 60, s % 60)
  end
  return string.format("%d:%02d", s // 60, s % 60)
end

-- A progress bar on stderr for transfers (storage cp, image push-code),
-- drawn on a terminal only: bar:update(label, done, total) redraws
-- "label ####.... 42% 12 MiB/30 MiB 8 MiB/s ETA 0:02" at most every
-- 0.1 s (and once complete), bar:done() ends the line; a new label
-- starts a new count. On a pipe it draws nothing and the caller prints
-- its one-line summary.
function term.progress(stream)
  stream = stream or "stderr"
  local bar = { tty = out.tty(stream), drawn = false }
  local started, last, label_of = sys_now(), 0, nil
  function bar:update(label, done, total)
    if not self.tty then return end
    local now = sys_now()
    if label ~= label_of then
      if self.drawn then out.write(stream, "\n") end
      started, label_of, self.complete, self.drawn = now, label, false, false
    end
    if self.complete or (done < total and now - last < 0.1) then return end
    last = now
    local width = 24
    local frac = total > 0 and math.min(done / total, 1) or 1
    local filled = math.floor(frac * width + 0.5)
    local elapsed = now - started
    local rate = elapsed > 0.2 and done / elapsed or nil
    local tail = ""
    if rate and rate > 0 then
      tail = " " .. human_size(math.floor(rate)) .. "/s"
      if done < total then
        tail = tail .. " ETA " .. clock_text((total - done) / rate)
      end
    end
    term.clear_line(stream)
    out.write(stream, string.format("  %s %s%s %3d%% %s/%s%s", label,
              string.rep("#", filled), string.rep(".", width - filled),
              math.floor(frac * 100), human_size(done), human_size(total),
              tail))
    self.drawn, self.complete = true, done >= total
  end
  function bar:done()
    if self.drawn then out.write(stream, "\n") end
    self.drawn, self.complete, label_of = false, false, nil
  end
  return bar
end

return term
