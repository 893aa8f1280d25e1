-- Command-line flags, one parser for every command: flags is {name =
-- "bool" | "value" | "values" (repeatable: a list)}; `--name value`,
-- `--name=value`, `-h`/`--help` and `--` are understood, and `-x` for a
-- one-letter bool flag named x. An unknown option gets the nearest known
-- one as a suggestion.
-- fail(message) is called (and must raise) on a usage error. Returns
-- opts, args.
local args = {}

-- " (did you mean --name?)" for the known flag nearest to name, or "".
local function suggest(name, flags)
  local known = { "help" }
  for k in pairs(flags) do
    if #k > 1 then known[#known + 1] = k end
  end
  table.sort(known)
  local util = require "navette.util"
  local hint = util.suggest(name, known)
  if hint == "" and #name >= 3 then
    -- a prefix of exactly one flag (--rec for --recursive)
    local found
    for _, k in ipairs(known) do
      if k:sub(1, #name) == name then
        if found then found = nil; break end
        found = k
      end
    end
    if found then return " (did you mean --" .. found .. "?)" end
  end
  return (hint:gsub("'(.-)'", "--%1"))
end

-- Set while args.flags_of runs: the next parse records its flags and stops.
local probe

-- The flags a command takes, read from the very table it hands to parse
-- (so shell completions cannot drift from the parser): calls run(), whose
-- first parse records its flags and raises to stop the command before it
-- does anything. Returns that table, or nil when run() never parsed.
function args.flags_of(run)
  local mine = { stop = {} }
  probe = mine
  pcall(run)
  probe = nil
  return mine.flags
end

function args.parse(argv, flags, fail)
  if probe then
    probe.flags = flags
    error(probe.stop, 0)
  end
  local opts, rest = {}, {}
  local i = 1
  while i <= #argv do
    local a = argv[i]
    if a == "-h" or a == "--help" then
      opts.help = true
    elseif a:match("^%-%a$") and flags[a:sub(2)] == "bool" then
      opts[a:sub(2)] = true
    elseif a:match("^%-%a") then
      fail("unknown option " .. a)
    elseif a == "--" then
      for j = i + 1, #argv do rest[#rest + 1] = argv[j] end
      break
    elseif a:sub(1, 2) == "--" then
      local name, value = a:match("^%-%-([%w-]+)=(.*)$")
      name = name or a:sub(3)
      local kind = flags[name]
      if not kind then fail("unknown option " .. a .. suggest(name, flags)) end
      if kind == "value" or kind == "values" then
        if not value then
          i = i + 1
          value = argv[i]
          if not value then fail("option --" .. name .. " needs a value") end
        end
        if kind == "values" then
          opts[name] = opts[name] or {}
          table.insert(opts[name], value)
        else
          opts[name] = value
        end
      else
        if value then fail("--" .. name .. " takes no value") end
        opts[name] = true
      end
    else
      rest[#rest + 1] = a
    end
    i = i + 1
  end
  return opts, rest
end

return args
