-- `navette logs JOB`: a job's log (stdout and stderr as one stream),
-- redacted, whole or its last lines, once or followed until the job ends.
-- On a terminal, what a job wrote that a terminal would act on (ESC
-- sequences such as an OSC 52 clipboard write, other controls but tab and
-- newline, C1 controls, bidi overrides) shows as visible escapes; to a
-- pipe or a file (`navette logs ID > file`) the bytes stay as they are.
local term = require "navette.term"
local jobs = require "navette.jobview"
local common = require "navette.cli.common"
local sys, json, out = _navette.sys, _navette.json, _navette.out

-- Where the last bytes of s begin a UTF-8 character that the next chunk
-- ends (the index of its first byte), or nil.
local function cut_character(s)
  for back = 1, math.min(3, #s) do
    local b = s:byte(#s - back + 1)
    if b >= 0xC0 then
      local need = b >= 0xF0 and 4 or b >= 0xE0 and 3 or 2
      return need > back and #s - back + 1 or nil
    elseif b < 0x80 then
      return nil
    end
  end
  return nil
end

-- A writer of the log's text to stdout: as it is, or escaped on a
-- terminal (a character cut between two chunks waits for its end).
local function stdout_writer()
  if not out.tty("stdout") then return term.write end
  local held = ""
  return function(text, final)
    text = held .. text
    held = ""
    local cut = not final and cut_character(text)
    if cut then text, held = text:sub(1, cut - 1), text:sub(cut) end
    term.write(out.escape(text))
  end
end

local M = {
  name = "logs",
  summary = { { "logs JOB", "a job's log (--follow, --tail N, --json)" } },
  usage = [[
usage: navette logs JOB [--follow] [--tail N] [--json]
  Prints the job's log (its stdout and stderr, as one stream). JOB: a
  job's id or unique prefix, its name (the latest job of that name in
  this project), or `last`; a run id lists the run's jobs.
  --follow   keep printing until the job ends
  --tail N   start with the last N lines only
  --json     one JSON object per line: {time, stream, job, line}, where
             time is when navette read the line and stream is "output"]],
  flags = { follow = "bool", json = "bool", tail = "value" },
  read_only = false, -- follows a job: see navette.cli
}

function M.run(argv)
  local opts, id = common.one_arg(M, argv, "JOB id")
  if not opts then return 0 end
  local tail = opts.tail and math.tointeger(tonumber(opts.tail))
  if opts.tail and (not tail or tail < 0) then
    common.usage_error("--tail must be a whole number of lines", "logs")
  end
  local v = jobs.get(jobs.resolve(id, "logs").id)
  local offset = 0
  -- chunks may cut a secret in two: a redacting stream sees them whole
  local redact = common.log_redactor(v)

  -- what is shown: the text as it is, or (--json, --tail) line by line;
  -- with --tail, the lines already there wait in a ring until the end of
  -- the log is reached, then the last N show
  local write = stdout_writer()
  local by_line = opts.json or tail ~= nil
  local ring, tailing, pending = {}, tail ~= nil, ""
  local function line_out(line)
    if tailing then
      ring[#ring + 1] = line
      if #ring > tail then table.remove(ring, 1) end
    elseif opts.json then
      write(json.encode({ time = sys.iso8601(), stream = "output",
                          job = v.id, line = line }) .. "\n", true)
    else
      write(line .. "\n", true)
    end
  end
  local function put(text)
    if not by_line then write(text); return end
    pending = pending .. text
    local start = 1
    for line, e in pending:gmatch("([^\n]*)\n()") do
      line_out(line)
      start = e
    end
    pending = pending:sub(start)
  end
  local function reached_end(final)
    if final and pending ~= "" then line_out(pending); pending = "" end
    if tailing then
      tailing = false
      for _, line in ipairs(ring) do line_out(line) end
      ring = {}
    end
  end

  local at_line_end = false
  while true do
    local chunk = jobs.log_chunk(v, offset)
    if #chunk > 0 then
      offset = offset + #chunk
      put(redact:write(chunk))
      at_line_end = chunk:sub(-1) == "\n"
    elseif not opts.follow or jobs.FINAL[v.state] then
      -- one last read after the end, then stop
      if opts.follow then
        chunk = jobs.log_chunk(v, offset)
        put(redact:write(chunk))
      end
      put(redact:flush())
      reached_end(true)
      if not by_line then write("", true) end
      break
    else
      -- the log is quiet: a complete line held back is shown now (a
      -- line cut in the middle waits, so no secret shows in halves)
      if at_line_end then put(redact:flush()) end
      reached_end(false)
      sys.sleep(0.2)
      v = jobs.get(v.id)
    end
  end
  return 0
end


return M
