-- What `navette maintain --install` writes so that the system runs
-- `navette maintain --once` on time, and `--uninstall` removes: a launchd
-- agent on macOS (a plist in ~/Library/LaunchAgents), a systemd user
-- service and timer elsewhere (in $XDG_CONFIG_HOME/systemd/user). Both
-- generators are plain functions of the same facts, so that the tests
-- check both files on Linux (NAVETTE_SERVICE_MANAGER=launchd|systemd
-- picks one, as NAVETTE_FS_CASE_INSENSITIVE forces the macOS file rules).
-- Each file starts with a marker line: uninstall removes only files that
-- carry it.
local errors = require "navette.errors"
local sys, native = _navette.sys, _navette.tasks

local service = {}

service.MARKER = "written by `navette maintain`: its uninstall removes it"
local SYSTEMD_DAYS = { [0] = "Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat" }

-- The service manager of this system: "launchd" (macOS) or "systemd".
function service.manager()
  local forced = sys.getenv("NAVETTE_SERVICE_MANAGER")
  if forced == "launchd" or forced == "systemd" then return forced end
  return sys.os == "macos" and "launchd" or "systemd"
end

-- The unit or label name of a project's maintenance.
function service.name(project_slug)
  return "navette-maintain-" .. project_slug
end
function service.label(project_slug)
  return "org.navette.maintain." .. project_slug
end

-- The calendar slots (daily and weekly, deduplicated, in order) and the
-- shortest "every" interval in seconds (nil when none) of a list of
-- schedule infos (tasks.parse's second result).
function service.wakeups(infos)
  local slots, seen, shortest = {}, {}, nil
  for _, info in ipairs(infos) do
    if info.kind == "every" then
      if not shortest or info.every < shortest then shortest = info.every end
    else
      local key = (info.weekday or -1) .. ":" .. info.hour .. ":" .. info.minute
      if not seen[key] then
        seen[key] = true
        slots[#slots + 1] = { weekday = info.weekday, hour = info.hour,
                              minute = info.minute }
      end
    end
  end
  table.sort(slots, function(a, b)
    local wa, wb = a.weekday or -1, b.weekday or -1
    if wa ~= wb then return wa < wb end
    if a.hour ~= b.hour then return a.hour < b.hour end
    return a.minute < b.minute
  end)
  return slots, shortest
end

-- ---- systemd --------------------------------------------------------------

-- An argument of ExecStart: quoted, with systemd's specifiers (%) and
-- variables ($) escaped.
local function sd_arg(s)
  local e = s:gsub("\\", "\\\\"):gsub("\"", "\\\""):gsub("%%", "%%%%")
             :gsub("%$", "$$")
  return "\"" .. e .. "\""
end

-- A quoted Environment= assignment: systemd expands no variable there
-- ("$" is itself), so only %, \ and " are escaped.
local function sd_env(s)
  local e = s:gsub("\\", "\\\\"):gsub("\"", "\\\""):gsub("%%", "%%%%")
  return "\"" .. e .. "\""
end

-- Refuses what would break out of a line of a unit file or of the plist:
-- a control character (a newline ends a directive) in anything written.
function service.check_facts(facts)
  local function check(what, v)
    if type(v) == "string" and v:find("%c") then
      error(require("navette.errors").new("refused", "maintain --install: "
        .. what .. " holds a control character (" .. string.format("%q", v)
        .. "), which would end a line of the file written",
        "rename it (a folder, the project's name) without newlines or "
        .. "control characters"), 0)
    end
  end
  for _, k in ipairs({ "project", "name", "program", "workdir", "home" }) do
    check(k, facts[k])
  end
  for i, a in ipairs(facts.argv or {}) do check("argument " .. i, a) end
end

-- A path setting (WorkingDirectory=): % escaped; no quoting there.
local function sd_path(s)
  return (s:gsub("%%", "%%%%"))
end

local function sd_seconds(s)
  if s % 86400 == 0 then return (s // 86400) .. "d" end
  if s % 3600 == 0 then return (s // 3600) .. "h" end
  return (s // 60) .. "min"
end

-- facts: {project, name, program, argv (after the program), workdir,
-- home, slots, every}. Returns the service's and the timer's text.
function service.systemd_units(facts)
  service.check_facts(facts)
  local args = { sd_arg(facts.program) }
  for _, a in ipairs(facts.argv) do args[#args + 1] = sd_arg(a) end
  local unit = table.concat({
    "# " .. facts.name .. ".service: " .. service.MARKER,
    "[Unit]",
    "Description=navette maintain: the due tasks of project " .. facts.project,
    "",
    "[Service]",
    "Type=oneshot",
    "WorkingDirectory=" .. sd_path(facts.workdir),
    "Environment=" .. sd_env("NAVETTE_HOME=" .. facts.home),
    "ExecStart=" .. table.concat(args, " "),
    "" }, "\n")
  local timer = {
    "# " .. facts.name .. ".timer: " .. service.MARKER,
    "[Unit]",
    "Description=navette maintain: when project " .. facts.project
      .. "'s tasks fall due",
    "",
    "[Timer]",
  }
  for _, s in ipairs(facts.slots) do
    timer[#timer + 1] = string.format("OnCalendar=%s*-*-* %02d:%02d:00",
      s.weekday and (SYSTEMD_DAYS[s.weekday] .. " ") or "", s.hour, s.minute)
  end
  if facts.every then
    -- OnUnitActiveSec keeps the shortest interval while the machine is
    -- awake, but its clock stops during a suspend: a calendar wake as
    -- often as that interval allows (hourly at most; a divisor of an
    -- hour below), persistent, brings a laptop back on time after one
    local step = 60
    if facts.every < 3600 then
      for _, d in ipairs({ 30, 20, 15, 12, 10, 6, 5, 4, 3, 2, 1 }) do
        if d * 60 <= facts.every then step = d; break end
      end
    end
    timer[#timer + 1] = step == 60 and "OnCalendar=*-*-* *:00:00"
                        or string.format("OnCalendar=*-*-* *:00/%d:00", step)
    -- once soon after it is enabled, then every shortest interval
    timer[#timer + 1] = "OnActiveSec=1min"
    timer[#timer + 1] = "OnUnitActiveSec=" .. sd_seconds(facts.every)
  end
  -- a calendar wake missed while the machine was off or asleep comes at
  -- the next start (maintain itself runs a task's missed slots once)
  timer[#timer + 1] = "Persistent=true"
  timer[#timer + 1] = "Unit=" .. facts.name .. ".service"
  timer[#timer + 1] = ""
  timer[#timer + 1] = "[Install]"
  timer[#timer + 1] = "WantedBy=timers.target"
  timer[#timer + 1] = ""
  return unit, table.concat(timer, "\n")
end

-- ---- launchd (macOS) --------------------------------------------------------

local function xml(s)
  return (s:gsub("&", "&amp;"):gsub("<", "&lt;"):gsub(">", "&gt;")
           :gsub("\"", "&quot;"))
end

-- facts as for systemd_units, plus label and log (a file under
-- NAVETTE_HOME). Returns the plist's text.
function service.launchd_plist(facts)
  service.check_facts(facts)
  local out = {
    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>",
    "<!DOCTYPE plist PUBLIC \"-//Apple//DTD PLIST 1.0//EN\" "
      .. "\"http://www.apple.com/DTDs/PropertyList-1.0.dtd\">",
    -- (a comment holds no "--")
    "<!-- " .. facts.label .. ".plist: " .. xml(service.MARKER) .. " -->",
    "<plist version=\"1.0\">",
    "<dict>",
    "\t<key>Label</key>",
    "\t<string>" .. xml(facts.label) .. "</string>",
    "\t<key>ProgramArguments</key>",
    "\t<array>",
    "\t\t<string>" .. xml(facts.program) .. "</string>",
  }
  for _, a in ipairs(facts.argv) do
    out[#out + 1] = "\t\t<string>" .. xml(a) .. "</string>"
  end
  out[#out + 1] = "\t</array>"
  out[#out + 1] = "\t<key>WorkingDirectory</key>"
  out[#out + 1] = "\t<string>" .. xml(facts.workdir) .. "</string>"
  out[#out + 1] = "\t<key>EnvironmentVariables</key>"
  out[#out + 1] = "\t<dict>"
  out[#out + 1] = "\t\t<key>NAVETTE_HOME</key>"
  out[#out + 1] = "\t\t<string>" .. xml(facts.home) .. "</string>"
  out[#out + 1] = "\t</dict>"
  if #facts.slots > 0 then
    out[#out + 1] = "\t<key>StartCalendarInterval</key>"
    out[#out + 1] = "\t<array>"
    for _, s in ipairs(facts.slots) do
      out[#out + 1] = "\t\t<dict>"
      if s.weekday then
        out[#out + 1] = "\t\t\t<key>Weekday</key>"
        out[#out + 1] = "\t\t\t<integer>" .. s.weekday .. "</integer>"
      end
      out[#out + 1] = "\t\t\t<key>Hour</key>"
      out[#out + 1] = "\t\t\t<integer>" .. s.hour .. "</integer>"
      out[#out + 1] = "\t\t\t<key>Minute</key>"
      out[#out + 1] = "\t\t\t<integer>" .. s.minute .. "</integer>"
      out[#out + 1] = "\t\t</dict>"
    end
    out[#out + 1] = "\t</array>"
  end
  if facts.every then
    out[#out + 1] = "\t<key>StartInterval</key>"
    out[#out + 1] = "\t<integer>" .. math.tointeger(facts.every)
                    .. "</integer>"
  end
  -- at login and at load: what fell due while the Mac was off
  out[#out + 1] = "\t<key>RunAtLoad</key>"
  out[#out + 1] = "\t<true/>"
  out[#out + 1] = "\t<key>StandardOutPath</key>"
  out[#out + 1] = "\t<string>" .. xml(facts.log) .. "</string>"
  out[#out + 1] = "\t<key>StandardErrorPath</key>"
  out[#out + 1] = "\t<string>" .. xml(facts.log) .. "</string>"
  out[#out + 1] = "</dict>"
  out[#out + 1] = "</plist>"
  out[#out + 1] = ""
  return table.concat(out, "\n")
end

-- ---- installing -------------------------------------------------------------

local function home_dir()
  local home = sys.getenv("HOME")
  if not home or home:sub(1, 1) ~= "/" then
    errors.raise("refused", "HOME is not set to an absolute folder",
                 "the service manager's files go under your home folder")
  end
  return home
end

-- The files of a manager for a project: { {path, text_fn}... }, and the
-- folder they go in.
function service.paths(manager, slug)
  if manager == "launchd" then
    local dir = home_dir() .. "/Library/LaunchAgents"
    return dir, { dir .. "/" .. service.label(slug) .. ".plist" }
  end
  local config = sys.getenv("XDG_CONFIG_HOME")
  if not config or config:sub(1, 1) ~= "/" then
    config = home_dir() .. "/.config"
  end
  local dir = config .. "/systemd/user"
  local name = service.name(slug)
  return dir, { dir .. "/" .. name .. ".service", dir .. "/" .. name .. ".timer" }
end

-- Runs the manager's command; returns ok, a line saying what happened.
local function command(argv)
  local status, output = native.service(argv, 30)
  if not status then return false, output.message end
  if status ~= 0 then
    local first = output:match("^%s*([^\n]*)") or ""
    return false, table.concat(argv, " ") .. ": exit status " .. status
      .. (first ~= "" and (" (" .. first .. ")") or "")
  end
  return true
end
service.command = command

-- The commands that load the files (shown when they cannot be run here).
function service.load_commands(manager, slug, paths)
  if manager == "launchd" then
    local domain = "gui/" .. math.tointeger(native.uid())
    return {
      { "launchctl", "bootout", domain .. "/" .. service.label(slug) },
      { "launchctl", "bootstrap", domain, paths[1] },
    }
  end
  return {
    { "systemctl", "--user", "daemon-reload" },
    { "systemctl", "--user", "enable", "--now", service.name(slug) .. ".timer" },
  }
end

function service.unload_commands(manager, slug)
  if manager == "launchd" then
    local domain = "gui/" .. math.tointeger(native.uid())
    return { { "launchctl", "bootout", domain .. "/" .. service.label(slug) } }
  end
  return {
    { "systemctl", "--user", "disable", "--now", service.name(slug) .. ".timer" },
    { "systemctl", "--user", "daemon-reload" },
  }
end

-- Whether the file at path is one install wrote (its marker line).
function service.ours(path)
  local text = sys.read_file(path)
  return text and text:find(service.MARKER, 1, true) ~= nil
end

return service
