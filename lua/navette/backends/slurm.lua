-- The slurm backend: jobs submitted to slurmrestd (Slurm's REST API) from
-- the laptop, run on the cluster's nodes by the node launcher (which
-- fetches and publishes through S3 itself), and observed by combining
-- Slurm's state of the job with what the launcher published (its status
-- object, log chunks and run record). Nothing needs a session on the node,
-- and closing the laptop loses nothing: the job is Slurm's, its results
-- are in storage, and `navette status` reads both back.
--
-- This file is the wire: the profile's settings, and the sessions with
-- slurmrestd (its endpoint, TLS, tokens minted from the profile's
-- credential). The job logic (submissions and their lost answers,
-- arrays, `after`, outcomes, cancel, what is shown) is navette.slurm.logic,
-- which every way of reaching Slurm shares: it is handed this file's
-- sessions and does the rest.
local errors = require "navette.errors"
local util = require "navette.util"
local logic = require "navette.slurm.logic"
local settings = require "navette.slurm.settings"
local native = _navette.slurm
local core = _navette.core

local M = { name = "slurm" }

local KEYS = { "endpoint", "user", "credential" }
for _, k in ipairs(settings.KEYS) do KEYS[#KEYS + 1] = k end
for _, k in ipairs({ "api_version", "ca_bundle", "pin" }) do
  KEYS[#KEYS + 1] = k
end
local STATUS_TOKEN_LIFESPAN = 300 -- a status poll's token

-- ---- the profile -----------------------------------------------------------

M.profile_keys = KEYS
-- a job's `after` is Slurm's afterok (a job that cannot run is ended)
M.dependencies = true
M.settings_doc = "Slurm settings (backend = \"slurm\"): see `navette help slurm`."

-- Validates profile.slurm (t) of profile where.profile in project file
-- where.path.
function M.validate(t, where)
  local credentials, storage = where.credentials, where.storage
  local fail = require("navette.backends").profile_fail(where, "slurm")
  if type(t) ~= "table" then
    fail("a slurm profile needs slurm = { endpoint = ..., user = ..., "
         .. "credential = ... }")
  end
  settings.check_keys(t, KEYS, "slurm", fail)
  if not storage:match("^s3://") then
    fail("the slurm backend needs s3:// storage", "the node reads its "
         .. "inputs and publishes its outputs there, with presigned URLs")
  end
  if type(t.endpoint) ~= "string"
     or not t.endpoint:match("^https?://[^/]+") then
    fail("endpoint must be the slurmrestd URL, https://HOST:PORT")
  end
  if type(t.user) ~= "string" or not t.user:match("^[%w._-]+$") then
    fail("user must be the Slurm user name jobs run as")
  end
  if type(t.credential) ~= "string" then
    fail("credential must name a declared credential: kind hs256 (the "
         .. "cluster's JWT key, tokens minted per job) or bearer (a token)")
  end
  local cred = credentials[t.credential]
  if not cred then
    fail("credential '" .. t.credential .. "' is not declared",
         "declare it under credentials = { ... } in navette.lua")
  end
  if cred.kind ~= "hs256" and cred.kind ~= "bearer" then
    fail("credential '" .. t.credential .. "' is of kind " .. cred.kind
         .. ", not hs256 or bearer")
  end
  for _, k in ipairs({ "api_version", "ca_bundle", "pin" }) do
    if t[k] ~= nil and type(t[k]) ~= "string" then
      fail(k .. " must be a string")
    end
  end
  return settings.check(t, fail, {
    endpoint = t.endpoint:gsub("/+$", ""), user = t.user, credential = cred,
    api_version = t.api_version, ca_bundle = t.ca_bundle, pin = t.pin,
  })
end

-- ---- retries and checkpoints ------------------------------------------------

-- Slurm's requeue, or the launcher, runs a job again after the failures
-- its retries name, and the launcher saves and restores its checkpoint
-- (see navette.slurm.description).
M.retries = true
M.checkpoints = true

-- What the node launcher takes from Slurm (navette.slurm.settings).
M.launch = settings.launch

function M.prepare(spec, profile)
  settings.prepare(spec, profile, profile.slurm)
end

-- The profile's nodes, taken in turn by a sweep's jobs.
function M.nodes(profile)
  return profile.slurm.nodes
end

-- ---- sessions ----------------------------------------------------------------

-- A session with slurmrestd as the job's spec describes it (spec.slurm),
-- its tokens living `lifespan` seconds at most, never more than `max`.
local function open(cfg, lifespan, max)
  local handle, err = _navette.creds.load(cfg.credential)
  if not handle then
    error(errors.new("refused", "the Slurm credential '"
                     .. tostring(cfg.credential.name) .. "' cannot be "
                     .. "loaded: " .. err.message, err.hint), 0)
  end
  local session, serr = native.open {
    endpoint = cfg.endpoint, user = cfg.user, credential = handle,
    lifespan = math.min(lifespan, max), max_lifespan = max,
    version = cfg.api_version, ca_bundle = cfg.ca_bundle, pin = cfg.pin,
  }
  if not session then
    error(errors.new(serr.code == "refused" and "refused" or "backend",
                     "slurmrestd at " .. cfg.endpoint .. ": "
                     .. serr.message, serr.hint), 0)
  end
  return session
end
M.open = open

-- A session for a status poll, a listing or a cancel: the tokens it mints
-- live STATUS_TOKEN_LIFESPAN; a bearer token (a team member's, handed
-- over) may live as long as the profile lets a token live (cfg: a spec's
-- slurm, which carries max_token_lifespan).
local function status_session(cfg)
  return open(require("navette.trust").recorded(cfg), STATUS_TOKEN_LIFESPAN,
              cfg.max_token_lifespan or 3600)
end

-- check_credential{ credential = NAME or HANDLE } -> true when the
-- profile's cluster accepts the credential (an hs256 key, whose tokens it
-- must verify, or a bearer token): a token is minted and a job lookup
-- sent through slurmrestd. Raises refused naming what Slurm said when it
-- does not; plan mode records the check and does nothing.
function M.check_credential(opts)
  local what = "navette.slurm.check_credential"
  util.check_options(what, opts, { "credential" },
                     "{ credential = NAME or HANDLE }")
  local run = require("navette.context").current()
  local profile = run and run.profile
  local cfg = profile and profile.slurm
  if not cfg then
    errors.raise("usage", what .. " needs a profile whose backend is slurm",
                 "run the recipe with --profile naming such a profile")
  end
  local handle = opts.credential
  if type(handle) == "string" then
    handle = require("navette.creds").get(handle)
  elseif type(handle) ~= "userdata" then
    errors.raise("recipe", what .. ": credential must name a declared "
                 .. "credential or be a handle")
  end
  local kind = handle:info().kind
  if kind ~= "hs256" and kind ~= "bearer" then
    errors.raise("recipe", what .. ": credential " .. handle:name()
                 .. " is of kind " .. kind .. ", not hs256 or bearer")
  end
  if core.plan_mode() then
    core.plan("slurm", "check credential", handle:name())
    return true
  end
  local max = cfg.max_token_lifespan or 3600
  local session, serr = native.open {
    endpoint = cfg.endpoint, user = cfg.user, credential = handle,
    lifespan = math.min(60, max), max_lifespan = max,
    version = cfg.api_version, ca_bundle = cfg.ca_bundle, pin = cfg.pin,
  }
  local found, err
  if session then
    found, err = session:find { name = "navette-credential-check" }
    session:close()
  else
    err = serr
  end
  if found or err.code == "not_found" then return true end
  errors.raise(err.code == "refused" and "refused" or "backend",
               what .. ": slurmrestd at " .. cfg.endpoint .. " with "
               .. "credential " .. handle:name() .. ": " .. err.message,
               err.hint)
end

-- ---- the wire ------------------------------------------------------------------

-- The lifespan of the tokens of a job's submission: its time limit and a
-- margin, never more than the profile lets a token live.
local function token_lifespan(spec, profile_max)
  local limit = spec.resources and spec.resources.time_limit
  local creds = require "navette.creds"
  return math.min(profile_max, (limit or 0) + creds.JOB_TOKEN_MARGIN)
end

-- The session for spec's cluster and token lifespan (kept in ctx.sessions
-- for the run when given, so a sweep goes through one session: one
-- version discovery, kept-alive connections, per cluster, user,
-- credential and token lifespan), or, when it cannot be opened, false
-- and the error.
local function session_for(spec, ctx)
  local profile_max = spec.slurm.max_token_lifespan or 3600
  local lifespan = token_lifespan(spec, profile_max)
  local cache, key = ctx.sessions, table.concat({ spec.slurm.endpoint,
    spec.slurm.user, tostring(spec.slurm.credential
    and spec.slurm.credential.name), tostring(lifespan) }, "\0")
  local session = cache and cache[key]
  if session then return true, session end
  local ok
  ok, session = pcall(open, spec.slurm, lifespan, profile_max)
  if ok and cache then cache[key] = session end
  return ok, session
end

-- submission, observation, reading back: the logic's, over this wire
logic.backend(M, {
  name = M.name,
  service = "slurmrestd",
  where = function(cfg) return "slurmrestd at " .. tostring(cfg.endpoint) end,
  session = session_for,
  status_session = status_session,
  check_desc = native.check_desc,
  map_state = native.map_state,
})

-- ---- what other modules ask of a backend (backends/init.lua) ---------------

-- The origins the profile's backend reaches (isolation attributes them
-- to the profile): its slurmrestd.
function M.origins(profile)
  return { profile.slurm and profile.slurm.endpoint }
end

-- The credentials a recorded spec needs besides its store's: the
-- cluster's (portability, migrate).
function M.spec_credentials(spec)
  return { spec.slurm and spec.slurm.credential }
end

-- The member's jobs on the cluster now, for the quota note
-- (run/quota.lua): {running, pending, held = what holds the extra ones},
-- or nil when the cluster cannot be asked (the submission says why).
-- The listing is the session user's: the member's own Slurm user.
function M.member_jobs(profile)
  local cfg = setmetatable({ max_token_lifespan =
    profile.max_token_lifespan }, { __index = profile.slurm })
  local listing = M.listing(cfg)
  if not listing then return nil end
  local running, pending = 0, 0
  for _, job in pairs(listing) do
    if job.state == "RUNNING" or job.state == "CONFIGURING"
       or job.state == "SUSPENDED" then
      running = running + 1
    elseif job.state == "PENDING" then
      pending = pending + 1
    end
  end
  return { running = running, pending = pending,
           held = "Slurm holds the others (QOSMaxJobsPerUserLimit) until "
                  .. "one ends" }
end

-- The team services the cluster keeps (team/slurm.lua): Slurm's
-- accounts and associations, through a session that open makes.
M.team_services = { slurm = open }

-- navette.slurm.check_credential's documentation (navette.luals)
M.check_credential_doc = "True when the profile's Slurm cluster accepts "
  .. "the credential (an hs256 key's token, a bearer token); raises "
  .. "refused otherwise."

return M
