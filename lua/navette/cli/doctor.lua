-- `navette doctor`: checks the control surface, this machine, the way
-- `brew doctor` does: git and its identity, each credential the profile
-- declares (loaded, not too old), the Keychain (macOS), every endpoint
-- the profile uses (reachable with TLS verified, and its clock, read from
-- its Date header, against ours), the local agent and the free space
-- under NAVETTE_HOME. Each check ends ok, warn, fail or skip (does not
-- apply here), with what to do; exit 1 when one failed.
local errors = require "navette.errors"
local term = require "navette.term"
local util = require "navette.util"
local common = require "navette.cli.common"
local sys, json, core = _navette.sys, _navette.json, _navette.core

local M = {
  name = "doctor",
  summary = { { "doctor", "check this machine: git, creds, TLS, disk" } },
  usage = [[
usage: navette doctor [--profile P] [--json]
  Checks this machine for the profile (default: the project's default):
  git and its identity (user.name, user.email); each declared credential
  loads (it runs a credential's command or the Keychain's tool, as
  `creds check` does) and is not older than max_credential_age (older:
  warn); the Keychain's tool on macOS; each endpoint the profile uses
  (its s3 endpoint, a backend's endpoint, the registries of its images,
  its endpoints table) answers with TLS verified or its pin matching,
  and its clock, read from its Date header, is within 60 s of this one
  (warn past 60 s, fail past 5 min: SigV4 refuses a request 15 min off);
  the team's policy when the project has a team.lua (warn on a
  credential two members share); the local agent; free space under
  NAVETTE_HOME (warn under 1 GiB, fail
  under 100 MiB). Each check prints ok, warn, fail or skip (does not
  apply here) and what to do. --json prints {profile, checks = [{name,
  status, detail, hint}], ok}. Exit 0 when no check failed (warnings
  allowed), 1 when one did.]],
  flags = { profile = "value", json = "bool" },
  -- it loads credentials the way `creds check` does: on request
  read_only = false,
}

M.SKEW_WARN_S = 60
M.SKEW_FAIL_S = 300
M.SIGV4_LIMIT_S = 900
M.DISK_WARN_BYTES = 1024 ^ 3
M.DISK_FAIL_BYTES = 100 * 1024 ^ 2
local REQUEST_TIMEOUT_MS = 10000

local function check(name, status, detail, hint)
  return { name = name, status = status, detail = detail, hint = hint }
end

-- Text from a server or a file, made safe to print on one line.
local function printable(s)
  s = tostring(s):gsub("[%c\127]", "?")
  if #s > 200 then s = s:sub(1, 197) .. "..." end
  return s
end

-- ---- judgements (pure; tests/lua/doctor_test.lua) --------------------------

local MONTHS = { Jan = 1, Feb = 2, Mar = 3, Apr = 4, May = 5, Jun = 6,
                 Jul = 7, Aug = 8, Sep = 9, Oct = 10, Nov = 11, Dec = 12 }

-- An HTTP Date header -> seconds since 1970, or nil: IMF-fixdate ("Sun,
-- 06 Nov 1994 08:49:37 GMT") and the two obsolete forms a recipient
-- must still read (RFC 9110, 5.6.7).
function M.http_date(s)
  if type(s) ~= "string" then return nil end
  local d, mon, y, hh, mm, ss = s:match(
    "^%a+, (%d%d?) (%a%a%a) (%d%d%d%d) (%d%d):(%d%d):(%d%d) GMT$")
  if not d then -- RFC 850: "Sunday, 06-Nov-94 08:49:37 GMT"
    d, mon, y, hh, mm, ss = s:match(
      "^%a+, (%d%d)%-(%a%a%a)%-(%d%d) (%d%d):(%d%d):(%d%d) GMT$")
    if y then y = tonumber(y) + (tonumber(y) < 70 and 2000 or 1900) end
  end
  if not d then -- asctime: "Sun Nov  6 08:49:37 1994"
    mon, d, hh, mm, ss, y = s:match(
      "^%a+ (%a%a%a) +(%d%d?) (%d%d):(%d%d):(%d%d) (%d%d%d%d)$")
  end
  if not d or not MONTHS[mon] then return nil end
  return util.parse_iso8601(string.format("%04d-%02d-%02dT%02d:%02d:%02dZ",
    tonumber(y), MONTHS[mon], tonumber(d), tonumber(hh), tonumber(mm),
    tonumber(ss)))
end

-- skew: the endpoint's clock minus ours, in seconds -> ok, warn or fail.
function M.skew_status(skew)
  local a = math.abs(skew)
  if a > M.SKEW_FAIL_S then return "fail" end
  if a > M.SKEW_WARN_S then return "warn" end
  return "ok"
end

-- bytes available -> ok, warn or fail.
function M.disk_status(available)
  if available < M.DISK_FAIL_BYTES then return "fail" end
  if available < M.DISK_WARN_BYTES then return "warn" end
  return "ok"
end

-- ---- git ---------------------------------------------------------------

local function getenv(name)
  local v = sys.getenv(name)
  return v ~= "" and v or nil
end

local function check_git(dir)
  local out = {}
  local path = sys.which("git")
  if path then
    out[#out + 1] = check("git", "ok", "git at " .. path)
  else
    out[#out + 1] = check("git", "warn", "git is not on PATH",
      "install git: navette reads repositories itself, but the commits "
      .. "it runs are made with git")
  end
  -- git's configuration as libgit2 reads it (the repository's over the
  -- global and system files, includes followed), the variables over it
  local git = _navette.git
  local repo = git.open(dir)
  local function config(key)
    local v = git.config(key, repo or nil)
    return v ~= "" and v or nil
  end
  local name = (getenv("GIT_AUTHOR_NAME") and getenv("GIT_COMMITTER_NAME"))
               or config("user.name")
  local email = (getenv("GIT_AUTHOR_EMAIL") and getenv("GIT_COMMITTER_EMAIL"))
                or config("user.email") or getenv("EMAIL")
  if repo then repo:close() end
  local missing, hints = {}, {}
  if not name or name == "" then
    missing[#missing + 1] = "user.name"
    hints[#hints + 1] = "git config --global user.name \"Your Name\""
  end
  if not email or email == "" then
    missing[#missing + 1] = "user.email"
    hints[#hints + 1] = "git config --global user.email you@example.com"
  end
  if #missing == 0 then
    out[#out + 1] = check("git identity", "ok",
      printable(name) .. " <" .. printable(email) .. ">")
  else
    local detail = table.concat(missing, " and ") .. " not set in git's "
                   .. "configuration: commits get a guessed identity, or "
                   .. "git refuses to make them"
    out[#out + 1] = check("git identity", "warn", detail,
                          table.concat(hints, "; "))
  end
  return out
end

-- ---- credentials and the Keychain ----------------------------------------

-- The credentials the profile needs: those it declares, and the AWS_*
-- variables of an s3 store that names no declared credential.
local function needed_credentials(profile)
  local declared = {}
  for k, d in pairs(profile.credentials or {}) do declared[k] = d end
  local s3 = profile.s3
  if s3 and s3.credential and not declared[s3.credential.name] then
    declared[s3.credential.name] = s3.credential
  end
  return declared
end

local function check_credentials(profile)
  local creds = require "navette.creds"
  local declared = needed_credentials(profile)
  if not next(declared) then
    return { check("credentials", "ok", "profile " .. profile.name
                   .. " declares none") }, declared, {}
  end
  local out, by_name = {}, {}
  for _, r in ipairs(creds.inspect(declared, profile.max_credential_age)) do
    local label = "credential " .. r.name
    if profile.s3 and declared[r.name] == profile.s3.credential
       and not (profile.credentials or {})[r.name] then
      label = label .. " (the s3 store's AWS_* variables)"
    end
    local c
    if r.ok and r.not_yet then
      -- an ssh certificate not valid yet: the clocks disagree (sshd
      -- refuses it until then)
      c = check(label, "warn", r.note, "check this machine's clock "
                .. "(timedatectl, or System Settings > Date & Time) and "
                .. "the signer's; a signer should back-date by minutes "
                .. "(ssh-keygen -V -5m:+1h)")
    elseif r.ok then
      local parts = { r.kind .. " from " .. r.source }
      if r.age_s then parts[#parts + 1] = "age " .. common.age_text(r.age_s) end
      if r.expires_in_s then
        parts[#parts + 1] = "expires in " .. common.age_text(r.expires_in_s)
      end
      c = check(label, "ok", table.concat(parts, ", "))
    elseif r.warning then
      c = check(label, "warn", r.kind .. " from " .. r.source .. ", age "
                .. common.age_text(r.age_s) .. ": " .. r.warning,
                r.expired and r.hint or "replace it with a new one (the "
                .. "profile's max_credential_age)")
    elseif r.not_run then
      c = check(label, "warn", "not checked (" .. r.note .. ")", r.hint)
    else
      -- (the row's label already names it)
      local message = tostring(r.error)
      local prefix = "credential " .. r.name .. ": "
      if message:sub(1, #prefix) == prefix then
        message = message:sub(#prefix + 1)
      end
      c = check(label, "fail", message, r.hint)
    end
    by_name[r.name] = r
    out[#out + 1] = c
  end
  return out, declared, by_name
end

local SECURITY = "/usr/bin/security" -- by full path, never from PATH

local function check_keychain(declared, rows)
  local names = {}
  for _, n in ipairs(util.sorted_keys(declared)) do
    if declared[n].source == "keychain" then names[#names + 1] = n end
  end
  if sys.os ~= "macos" then
    return check("keychain", "skip", "not applicable on " .. sys.os
                 .. " (the Keychain is macOS's)" .. (#names > 0 and
                 ("; credentials " .. table.concat(names, ", ")
                  .. " use it: see their rows") or ""))
  end
  local st = sys.stat(SECURITY)
  if not st or st.type ~= "file" then
    return check("keychain", "fail", SECURITY .. " is missing",
                 "it comes with macOS; without it no credential can come "
                 .. "from the Keychain")
  end
  if #names == 0 then
    return check("keychain", "ok", SECURITY .. " present; no credential "
                 .. "of this profile comes from the Keychain")
  end
  for _, n in ipairs(names) do
    local r = rows[n]
    if r and r.error then
      return check("keychain", "warn", "the Keychain did not give "
                   .. "credential " .. n .. " (see its row)",
                   r.hint or "run `security unlock-keychain` in this "
                   .. "session, or run navette from the Mac's own login "
                   .. "session")
    end
  end
  return check("keychain", "ok", SECURITY .. " read " .. #names
               .. " credential(s): " .. table.concat(names, ", "))
end

-- ---- endpoints and clocks --------------------------------------------------

-- Every endpoint the profile uses, once per origin: {url (as the profile
-- writes it), request (the root to ask), uses = {...}, ca_bundle, pin}.
local function endpoints_of(profile)
  local http = require "navette.http"
  local backends = require "navette.backends"
  local list, by_origin = {}, {}
  local function add(url, path, use, tls)
    local origin = type(url) == "string" and http.origin_of(url)
    if not origin then return end
    local e = by_origin[origin]
    if not e then
      local declared = (profile.endpoints or {})[origin] or {}
      e = { url = url:match("^[^/]*//[^/?#]+"), request = nil, uses = {},
            ca_bundle = declared.ca_bundle, pin = declared.pin }
      e.request = e.url .. path
      by_origin[origin] = e
      list[#list + 1] = e
    end
    -- a setting's own CA bundle or pin is what its client uses
    if tls and tls.ca_bundle then e.ca_bundle = tls.ca_bundle end
    if tls and tls.pin then e.pin = tls.pin end
    e.uses[#e.uses + 1] = use
  end
  if profile.s3 then add(profile.s3.endpoint, "/", "s3 store", profile.s3) end
  for _, n in ipairs(backends.names()) do
    local t = profile[n]
    if type(t) == "table" and backends.get(n).profile_keys then
      add(t.endpoint, "/", n .. " backend", t)
    end
  end
  for _, name in ipairs(util.sorted_keys(profile.images or {})) do
    local ref = _navette.image.parse(profile.images[name])
    if ref then add(ref.api, "/v2/", "image " .. name) end
  end
  for _, origin in ipairs(util.sorted_keys(profile.endpoints or {})) do
    add(origin, "/", "endpoints table")
  end
  return list
end

local function clock_hint()
  local fix = sys.os == "macos"
    and "turn on System Settings > General > Date & Time > Set time "
        .. "automatically (or: sudo sntp -sS time.apple.com)"
    or "turn on time synchronisation (timedatectl set-ntp true, or "
       .. "chronyd/ntpd)"
  return fix .. "; if this clock is right, the endpoint's is not: tell "
         .. "its operators"
end

local function check_endpoint(e)
  local net = _navette.net
  local name = e.url .. " (" .. table.concat(e.uses, ", ") .. ")"
  local before = sys.now()
  local response, err = net.request { url = e.request, method = "HEAD",
    ca_bundle = e.ca_bundle, pin = e.pin, timeout_ms = REQUEST_TIMEOUT_MS }
  local after = sys.now()
  if not response then
    return check("endpoint " .. name, "fail", tostring(err.message),
                 err.hint),
           check("clock vs " .. e.url, "skip", "no answer to read a Date "
                 .. "header from")
  end
  local tls
  if e.url:match("^https:") then
    tls = "TLS verified" .. (e.pin and ", key matches the pin" or "")
          .. (e.ca_bundle and (" (CA bundle " .. e.ca_bundle .. ")") or "")
  else
    tls = "plain http (loopback only)"
  end
  local reach = check("endpoint " .. name, "ok", string.format(
    "HTTP %d in %.2f s, %s", response.status, after - before, tls))
  local header = response.headers and response.headers["date"]
  local theirs = M.http_date(header)
  if not theirs then
    return reach, check("clock vs " .. e.url, "warn", header and
      ("its Date header '" .. printable(header) .. "' is not an HTTP date")
      or "it sent no Date header: its clock cannot be compared",
      "compare this clock with a reference another way (a signature or "
      .. "token refused as expired or not yet valid points to skew)")
  end
  -- the Date header has whole seconds: the server's time lies in
  -- [theirs, theirs + 1), ours in [before, after]
  local skew = theirs + 0.5 - (before + after) / 2
  local s = math.floor(math.abs(skew) + 0.5)
  local status = M.skew_status(skew)
  local detail = s == 0 and "same time as this machine (within 1 s)"
    or string.format("%s's clock is %d s %s this machine's", e.url, s,
                     skew > 0 and "ahead of" or "behind")
  if after - before > 2 then
    detail = detail .. string.format(" (±%.0f s: the answer took %.1f s)",
                                     (after - before) / 2, after - before)
  end
  local hint
  if status == "fail" then
    detail = detail .. ": past " .. M.SKEW_FAIL_S // 60 .. " min, "
             .. "signed requests and tokens fail (SigV4 refuses a request "
             .. M.SIGV4_LIMIT_S // 60 .. " min off; JWTs allow a few "
             .. "minutes of leeway at most)"
    hint = clock_hint()
  elseif status == "warn" then
    detail = detail .. ": past " .. M.SKEW_WARN_S .. " s, short-lived "
             .. "tokens may be refused (SigV4 refuses a request "
             .. M.SIGV4_LIMIT_S // 60 .. " min off)"
    hint = clock_hint()
  end
  return reach, check("clock vs " .. e.url, status, detail, hint)
end

-- ---- agent and disk ----------------------------------------------------

local function check_agent()
  local home = core.home()
  if _navette.jobs.agent_alive(home) then
    local pid = (sys.read_file(home .. "/agent.lock", 64) or ""):match("%d+")
    return check("agent", "ok", "running" .. (pid and (" (pid " .. pid
                                              .. ")") or ""))
  end
  if not sys.stat(home .. "/jobs.db") then
    return check("agent", "ok", "not running (starts on demand)")
  end
  local jobs = require "navette.jobview"
  local ok, db = pcall(jobs.db)
  local text, err
  if ok then text, err = db:list(100000) else err = errors.from(db) end
  if not text then
    return check("agent", "fail", "cannot read the job queue "
                 .. home .. "/jobs.db: " .. tostring(err.message), err.hint)
  end
  local waiting = 0
  for _, row in ipairs(json.decode(text)) do
    -- (the agent runs the jobs of the backend it revives: its contract)
    local b = require("navette.backends").get(row.backend)
    if b.revive and (row.state == "queued" or row.state == "running") then
      waiting = waiting + 1
    end
  end
  if waiting > 0 then
    return check("agent", "warn", "not running while " .. waiting
                 .. " local job(s) are queued or running",
                 "`navette jobs` starts it and it takes them over; if it "
                 .. "stops again, read " .. home .. "/agent.log")
  end
  return check("agent", "ok", "not running (starts on demand)")
end

local function check_disk()
  local home = core.home()
  -- the home may not exist yet: the folder it will be made in
  local where = home
  while not sys.stat(where) and where ~= "/" and where ~= "." do
    where = util.dirname(where)
  end
  local available, err = sys.free_space(where)
  if not available then
    return check("disk space", "fail", tostring(err.message), err.hint)
  end
  local status = M.disk_status(available)
  local detail = util.human_size(available) .. " free under " .. home
  local hint
  if status ~= "ok" then
    detail = detail .. (status == "fail" and " (under 100 MiB: jobs, logs "
                        .. "and the queue will fail to write)"
                        or " (under 1 GiB)")
    hint = "free space on that volume, or remove finished jobs' folders "
           .. "under " .. home .. "/jobs/"
  end
  return check("disk space", status, detail, hint)
end

-- The team's policy (team.lua), when the project has one: valid, and no
-- credential two members share (each member has their own: a shared key
-- makes revoking one revoke both, and the audit cannot tell them apart).
local function check_team(proj)
  local team = require "navette.team"
  local ok, policy = pcall(team.load, proj)
  if not ok then
    local e = errors.from(policy)
    return { check("team", "fail", e.message, e.hint) }
  end
  if not policy then return {} end
  local out = {}
  for _, f in ipairs(team.findings(policy)) do
    out[#out + 1] = check("team", "warn", f, "give each member their own "
                          .. "credential (navette team apply makes them) and "
                          .. "list only its key id in " .. team.FILE)
  end
  if #out == 0 then
    out[1] = check("team", "ok", "team " .. policy.name .. ": "
                   .. #team.members(policy, true) .. " active member(s), "
                   .. "no shared credential")
  end
  return out
end

-- ---- the command -----------------------------------------------------------

local function project_here(profile_name)
  local project = require "navette.project"
  local proj = project.at()
  return proj, project.profile(proj, profile_name)
end

local STYLES = { ok = "green", warn = "yellow", fail = "bold_red",
                 skip = "dim" }

function M.run(argv)
  local opts, args = common.command_args(M, argv)
  if not opts then return 0 end
  if #args > 0 then
    common.usage_error("doctor takes no argument, got '" .. args[1] .. "'",
                       M.name)
  end
  local checks = {}
  local function add(...)
    for _, c in ipairs({ ... }) do checks[#checks + 1] = c end
  end
  local ok, proj, profile = pcall(project_here, opts.profile)
  if not ok then
    local e = errors.from(proj)
    if e.code == "usage" then error(e, 0) end -- an unknown --profile
    add(check("project", "fail", e.message, e.hint))
    profile = nil
  else
    add(check("project", "ok", (proj.file and ("project " .. proj.name
        .. " (" .. proj.file .. ")") or ("project " .. proj.name
        .. " (no navette.lua)")) .. ", profile " .. profile.name))
  end
  add(table.unpack(check_git(sys.cwd())))
  if ok and proj.file then add(table.unpack(check_team(proj))) end
  if profile then
    local rows, declared, by_name = check_credentials(profile)
    add(table.unpack(rows))
    add(check_keychain(declared, by_name))
    local endpoints = endpoints_of(profile)
    if #endpoints == 0 then
      add(check("endpoints", "skip", "profile " .. profile.name
                .. " uses no network endpoint"))
    end
    for _, e in ipairs(endpoints) do add(check_endpoint(e)) end
    -- the backend's own checks (its contract: doctor)
    local b = require("navette.backends").get(profile.backend)
    if b.doctor and proj.trusted == false then
      add(check(profile.backend, "skip", "not asked: the project is not "
                .. "trusted on this machine", "read what it binds with "
                .. "`navette trust --show`, then `navette trust`"))
    elseif b.doctor then
      add(table.unpack(b.doctor(profile)))
    end
  end
  add(check_agent())
  add(check_disk())

  local counts = { ok = 0, warn = 0, fail = 0, skip = 0 }
  for _, c in ipairs(checks) do counts[c.status] = counts[c.status] + 1 end
  if opts.json then
    local list = json.array()
    for i, c in ipairs(checks) do
      list[i] = { name = c.name, status = c.status, detail = c.detail,
                  hint = c.hint or json.null }
    end
    term.print(json.encode({ profile = profile and profile.name or json.null,
                             checks = list, ok = counts.fail == 0 }, true))
  else
    for _, c in ipairs(checks) do
      term.print(term.style("stdout", STYLES[c.status],
                            string.format("%-4s", c.status))
                 .. "  " .. c.name .. ": " .. c.detail)
      if c.hint and c.status ~= "ok" then
        term.print("      check: " .. c.hint)
      end
    end
    term.print("")
    term.print(string.format("%d ok, %d warning%s, %d failed%s", counts.ok,
      counts.warn, counts.warn == 1 and "" or "s", counts.fail,
      counts.skip > 0 and (", " .. counts.skip .. " skipped") or ""))
  end
  return counts.fail > 0 and 1 or 0
end

return M
