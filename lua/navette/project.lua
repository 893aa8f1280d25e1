-- The project file (navette.lua at the root of the user's repository),
-- found by walking up from the recipe like .git, and the profiles it
-- declares. Without a project file the project is named after the
-- repository's folder and the only profile is the built-in `local`.
local errors = require "navette.errors"
local util = require "navette.util"
local backends = require "navette.backends"
local trust = require "navette.trust"
local sys, core = _navette.sys, _navette.core

local project = {}

project.FILE = "navette.lua"

local PROJECT_KEYS = { "name", "profiles", "default_profile", "credentials",
                       "datasets", "maintenance", "team" }
-- (then, before "platform", the settings table of each backend that has
-- one, named after it)
local PROFILE_KEYS = { "backend", "storage", "require_pushed", "remote",
                       "pinned",
                       "description", "credentials", "max_credential_age",
                       "max_token_lifespan", "endpoints", "s3",
                       "max_url_lifetime", "url_margin",
                       "max_output_bytes", "container", "images" }
-- the backends whose settings a profile may hold
local function settings_backends()
  local out = {}
  for _, n in ipairs(backends.names()) do
    if backends.get(n).profile_keys then out[#out + 1] = n end
  end
  return out
end
for _, n in ipairs(settings_backends()) do
  PROFILE_KEYS[#PROFILE_KEYS + 1] = n
end
PROFILE_KEYS[#PROFILE_KEYS + 1] = "platform"
local S3_KEYS = { "endpoint", "region", "path_style", "credential",
                  "ca_bundle", "pin" }
-- the keys each table accepts (for the LuaLS definitions: navette.luals)
project.KEYS = { project = PROJECT_KEYS, profile = PROFILE_KEYS,
                 s3 = S3_KEYS }
local URL_LIFETIME_DEFAULT = 12 * 3600
local URL_LIFETIME_MAX = 7 * 24 * 3600 -- SigV4's limit on a signature
local URL_MARGIN_DEFAULT = 15 * 60
local OUTPUT_BYTES_MAX = 5 * 1024 * 1024 * 1024 -- one POST upload

local function builtin_local(home)
  return {
    name = "local", backend = backends.DEFAULT, builtin = true,
    storage = "file://" .. home .. "/store",
    require_pushed = false,
    credentials = {},
    max_token_lifespan = 3600,
  }
end

local function fail(path, message, hint)
  error(errors.new("recipe", path .. ": " .. message, hint), 0)
end

local function validate_credentials(path, t, where, origin)
  local creds = require "navette.creds"
  if type(t) ~= "table" then
    fail(path, where .. "credentials must be a table of name = { ... }")
  end
  local out = {}
  for name, d in pairs(t) do
    out[name] = creds.validate(name, d, path, origin)
  end
  return out
end

-- The credentials the user declares in their own configuration
-- ($XDG_CONFIG_HOME/navette/credentials.lua, returning { NAME = { kind,
-- source, ..., host } }): theirs, so loaded without trusting a project;
-- each names the host it is sent to.
local function user_credentials()
  local dir = trust.config_dir()
  local path = dir and dir .. "/credentials.lua"
  local st = path and sys.stat(path)
  if not st or st.type ~= "file" then return {} end
  local value = project.evaluate_data(path)
  if type(value) ~= "table" then
    fail(path, "the file must return a table of name = { kind = ..., "
         .. "source = ..., host = ... }")
  end
  local out = validate_credentials(path, value, "", "user")
  for name, d in pairs(out) do
    if d.kind ~= "hs256" and d.kind ~= "pem" and d.kind ~= "ssh-cert"
       and not d.host then
      fail(path, "credential '" .. name .. "': a credential of your own "
           .. "configuration names the host it is for (host = "
           .. "\"api.example.com\"), so that no project sends it elsewhere")
    end
  end
  return out
end

-- The project holding dir (default: the working folder): its file found
-- walking up from dir, its root the work tree of the git repository
-- around dir (none outside one).
function project.at(dir)
  dir = dir or sys.cwd()
  local repo = _navette.git.open(dir)
  local root = repo and repo:workdir() or nil
  if repo then repo:close() end
  return project.load(dir, root)
end

-- Finds navette.lua in dir or a parent up to the repository's work tree
-- root (stop), never above it: a folder holding a repository (a shared
-- temporary folder, a home) is not its project. Without stop (no
-- repository), only dir itself. Returns its path or nil.
function project.find(dir, stop)
  local d = dir:gsub("(.)/+$", "%1")
  stop = stop and stop:gsub("(.)/+$", "%1")
  for _ = 1, 128 do
    local candidate = util.join(d, project.FILE)
    local st = sys.stat(candidate)
    if st and st.type == "file" then return candidate end
    if not stop or d == stop or #d <= #stop or d == "/" then
      break
    end
    d = util.dirname(d)
  end
  return nil
end

local function slug(name)
  local s = name:lower():gsub("[^a-z0-9]+", "-"):gsub("^-+", "")
             :gsub("-+$", "")
  if #s > 32 then s = s:sub(1, 32):gsub("-+$", "") end
  return s ~= "" and s or "project"
end
project.slug = slug

-- The S3 side of a profile whose storage is s3://BUCKET[/ROOT/]: where the
-- service is and which credential signs (never its value). Without a
-- credential name, the conventional AWS_* variables are used.
local function validate_s3(path, name, storage, t, credentials)
  local where = "profile '" .. name .. "': "
  local bucket, root = storage:match("^s3://([^/]+)/?(.*)$")
  if not bucket then
    fail(path, where .. "storage " .. storage .. " names no bucket",
         "storage = \"s3://BUCKET\" or \"s3://BUCKET/PREFIX/\"")
  end
  local ok, err = _navette.s3.check_bucket(bucket)
  if not ok then fail(path, where .. err.message, err.hint) end
  if root ~= "" then
    if root:sub(-1) ~= "/" then root = root .. "/" end
    ok, err = _navette.s3.check_key(root .. "x")
    if not ok then
      fail(path, where .. "storage prefix '" .. root .. "': " .. err.message)
    end
  end
  t = t or {}
  if type(t) ~= "table" then
    fail(path, where .. "s3 must be a table { endpoint = ..., region = ... }")
  end
  util.check_keys(t, S3_KEYS, function(k, suggestion, list)
    fail(path, where .. "s3: unknown key '" .. tostring(k) .. "'"
         .. suggestion, "s3 keys are: " .. list)
  end)
  for _, k in ipairs({ "endpoint", "region", "credential", "ca_bundle",
                       "pin" }) do
    if t[k] ~= nil and type(t[k]) ~= "string" then
      fail(path, where .. "s3." .. k .. " must be a string")
    end
  end
  if t.path_style ~= nil and type(t.path_style) ~= "boolean" then
    fail(path, where .. "s3.path_style must be a boolean")
  end
  local region = t.region or "us-east-1"
  local endpoint = t.endpoint
  local path_style = t.path_style
  if endpoint then
    endpoint = endpoint:gsub("/+$", "")
    if not endpoint:match("^https?://[^/]+$") then
      fail(path, where .. "s3.endpoint must be http(s)://HOST[:PORT] "
           .. "without a path, not '" .. endpoint .. "'")
    end
    if path_style == nil then path_style = true end
  else
    endpoint = "https://s3." .. region .. ".amazonaws.com"
    if path_style == nil then path_style = false end
  end
  local credential
  if t.credential then
    credential = credentials[t.credential]
    if not credential then
      fail(path, where .. "s3.credential '" .. t.credential
           .. "' is not declared", "declare it under credentials = { "
           .. util.lua_key(t.credential) .. " = { kind = \"s3\", source = ... } }")
    end
    if credential.kind ~= "s3" then
      fail(path, where .. "s3.credential '" .. t.credential .. "' is of "
           .. "kind " .. credential.kind .. ", not s3")
    end
  else
    credential = { name = "aws", kind = "s3", source = "env", env = {} }
  end
  return { bucket = bucket, root = root, endpoint = endpoint,
           region = region, path_style = path_style,
           ca_bundle = t.ca_bundle, pin = t.pin, credential = credential }
end

-- Every "profile 'NAME': " message of a profile is raised through this.
local function profile_fail(path, name, message, hint)
  fail(path, "profile '" .. name .. "': " .. message, hint)
end

-- Refuses a profile's setting key unless its value t is a table; shape
-- ends the message (what the table holds).
local function profile_table(path, name, t, key, shape)
  if type(t) ~= "table" then
    profile_fail(path, name, key .. " must be a table" .. shape)
  end
end

-- The credentials a profile may use (issue 16: profiles share nothing
-- implicitly). A project-level declaration is a definition, not a grant:
-- a profile uses one when it names it, in the list part of its own
-- credentials (credentials = { "registry", own = { kind = ... } }) or in
-- its settings (s3.credential, slurm.credential...: `refs`). Its own
-- declarations (the name = { ... } part) are its alone.
local function profile_credentials(path, name, t, shared, refs)
  local credentials = {}
  shared = shared or {}
  if t ~= nil then
    profile_table(path, name, t, "credentials", ": names of the project's "
                  .. "credentials, and name = { ... } of its own")
    local own = {}
    for k, v in pairs(t) do
      if math.type(k) == "integer" then
        if type(v) ~= "string" or not shared[v] then
          local names = util.sorted_keys(shared)
          profile_fail(path, name, "credentials[" .. k .. "]: '"
                       .. tostring(v) .. "' is not a credential of the "
                       .. "project" .. util.suggest(tostring(v), names),
                       #names > 0 and ("the project declares: "
                                       .. table.concat(names, ", "))
                       or "declare it under the project's credentials = "
                          .. "{ ... }, or in this profile as NAME = { ... }")
        end
        credentials[v] = shared[v]
      else
        own[k] = v
      end
    end
    for k, v in pairs(validate_credentials(path, own,
                                           "profile '" .. name .. "': ")) do
      credentials[k] = v
    end
  end
  for _, ref in ipairs(refs) do
    if type(ref) == "string" and not credentials[ref] and shared[ref] then
      credentials[ref] = shared[ref]
    end
  end
  return credentials
end

-- The credential names a profile's settings give (s3.credential, and the
-- backends' settings' credential).
local function referenced_credentials(p)
  local refs = {}
  if type(p.s3) == "table" then refs[#refs + 1] = p.s3.credential end
  for _, n in ipairs(settings_backends()) do
    if type(p[n]) == "table" then refs[#refs + 1] = p[n].credential end
  end
  return refs
end

-- p[key] as seconds (nil when absent).
local function profile_duration(path, name, p, key)
  if p[key] == nil then return nil end
  local v = util.parse_duration(p[key])
  if not v then
    profile_fail(path, name, key .. " must be a duration",
                 "for example \"90d\" or \"1h\"")
  end
  return v
end

-- p[key] as whole seconds from 1 to max (default when absent).
local function bounded_duration(path, name, p, key, default, max)
  local v = profile_duration(path, name, p, key) or default
  if v < 1 or v > max then
    profile_fail(path, name, key .. " must be between 1 s and " .. max
                 .. " s")
  end
  return math.floor(v)
end

local function validate_container(path, name, t)
  profile_table(path, name, t, "container", " { runtime = \"podman\" }")
  for k in pairs(t) do
    if k ~= "runtime" then
      profile_fail(path, name, "container: unknown key '" .. tostring(k)
                   .. "'", "container keys are: runtime")
    end
  end
  if type(t.runtime) ~= "string"
     or not t.runtime:match("^[%w._/+-]+$") then
    profile_fail(path, name, "container.runtime must name a program "
                 .. "(podman, docker, or a path)")
  end
  return { runtime = t.runtime }
end

-- images = { NAME = "registry/repository:tag" }: the images the profile
-- says recipes run in (a library's jobs look theirs up by name, e.g. the
-- catalogue's "catalogue"); a tag is resolved to its digest when a job
-- is submitted.
local function validate_images(path, name, t)
  profile_table(path, name, t, "images",
                " { NAME = \"registry/repository:tag\" }")
  local out = {}
  for k, v in pairs(t) do
    if type(k) ~= "string" or not k:match("^[%a_][%w_-]*$") then
      profile_fail(path, name, "images: '" .. tostring(k) .. "' is not a "
                   .. "name", "names are words: catalogue, cuda, ...")
    end
    local ok, err = type(v) == "string" and _navette.image.parse(v)
    if not ok then
      profile_fail(path, name, "images." .. k .. " must be an image "
                   .. "reference" .. (err and (": " .. err.message) or ""),
                   "for example \"registry.example.com/team/base:bookworm\"")
    end
    out[k] = v
  end
  return out
end

-- The nodes' platform: images are built, layered and checked for it.
local function validate_platform(path, name, v)
  local platform = v or "linux/amd64"
  if type(platform) ~= "string"
     or not (platform:match("^[%l%d_.-]+/[%l%d_.-]+$")
             or platform:match("^[%l%d_.-]+/[%l%d_.-]+/[%l%d_.-]+$")) then
    profile_fail(path, name, "platform must be OS/ARCH[/VARIANT]",
                 "for example platform = \"linux/amd64\" or "
                 .. "\"linux/arm64\" (the nodes', not this machine's)")
  end
  return platform
end

-- endpoints = { ["https://host:port"] = { ca_bundle =, pin = } }, by
-- normalised origin.
local function validate_endpoints(path, name, t)
  local endpoints = {}
  if t == nil then return endpoints end
  profile_table(path, name, t, "endpoints", "")
  local origin_of = require("navette.util").origin_of
  for url, e in pairs(t) do
    local origin = type(url) == "string" and origin_of(url)
    if not origin or type(e) ~= "table" then
      profile_fail(path, name, "endpoints are [\"https://host:port\"] = "
                   .. "{ ca_bundle = ..., pin = ... }")
    end
    for k in pairs(e) do
      if k ~= "ca_bundle" and k ~= "pin" then
        profile_fail(path, name, "endpoint " .. url .. ": unknown key '"
                     .. tostring(k) .. "'", k == "verify"
                     and "TLS verification cannot be switched off"
                     or "keys: ca_bundle, pin")
      end
    end
    if e.pin ~= nil and (type(e.pin) ~= "string"
                         or not e.pin:match("^sha256//")) then
      profile_fail(path, name, "endpoint " .. url .. ": pin is "
                   .. "\"sha256//BASE64\" (navette's pin of a PEM "
                   .. "certificate is printed by openssl or "
                   .. "_navette.net.pin)")
    end
    endpoints[origin] = { ca_bundle = e.ca_bundle, pin = e.pin }
  end
  return endpoints
end

local function validate_profile(path, name, p, home, shared_credentials)
  if type(p) ~= "table" then
    fail(path, "profile '" .. name .. "' must be a table")
  end
  -- (with the backends registered since this module was loaded)
  local known, seen = {}, {}
  for _, list in ipairs({ PROFILE_KEYS, settings_backends() }) do
    for _, k in ipairs(list) do
      if not seen[k] then known[#known + 1], seen[k] = k, true end
    end
  end
  util.check_keys(p, known, function(k, suggestion)
    fail(path, "profile '" .. name .. "': unknown key '" .. tostring(k)
         .. "'" .. suggestion,
         "profile keys are: " .. table.concat(PROFILE_KEYS, ", "))
  end)
  local backend = p.backend or backends.DEFAULT
  if type(backend) ~= "string" then
    fail(path, "profile '" .. name .. "': backend must be a string")
  end
  if not backends.known(backend) then
    fail(path, "profile '" .. name .. "': unknown backend '" .. backend
         .. "'", "backends: " .. table.concat(backends.names(), ", "))
  end
  local storage = p.storage or ("file://" .. home .. "/store")
  if type(storage) ~= "string" or not (storage:match("^file:///")
                                       or storage:match("^s3://")) then
    fail(path, "profile '" .. name .. "': storage must be a file:/// or "
         .. "s3:// URL", "for example storage = \"file:///srv/store\" or "
         .. "\"s3://bucket/prefix/\"")
  end
  if p.require_pushed ~= nil and type(p.require_pushed) ~= "boolean" then
    fail(path, "profile '" .. name .. "': require_pushed must be a boolean")
  end
  if p.pinned ~= nil and type(p.pinned) ~= "boolean" then
    fail(path, "profile '" .. name .. "': pinned must be a boolean")
  end
  if p.remote ~= nil and type(p.remote) ~= "string" then
    fail(path, "profile '" .. name .. "': remote must be a string")
  end
  local credentials = profile_credentials(path, name, p.credentials,
                                          shared_credentials,
                                          referenced_credentials(p))
  local s3
  if storage:match("^s3://") then
    s3 = validate_s3(path, name, storage, p.s3, credentials)
  elseif p.s3 ~= nil then
    fail(path, "profile '" .. name .. "': s3 settings need s3:// storage")
  end
  local function output_bytes()
    if p.max_output_bytes == nil then return OUTPUT_BYTES_MAX end
    local v = util.parse_size(p.max_output_bytes)
    if not v or v < 1 or v > OUTPUT_BYTES_MAX then
      fail(path, "profile '" .. name .. "': max_output_bytes must be a "
           .. "size of at most 5GiB", "one output is one POST upload")
    end
    return v
  end
  -- the backend's own settings (profile.<backend>), checked by it
  local settings = {}
  for _, n in ipairs(settings_backends()) do
    if n == backend then
      settings[n] = backends.get(n).validate(p[n], {
        path = path, profile = name, credentials = credentials,
        storage = storage })
    elseif p[n] ~= nil then
      fail(path, "profile '" .. name .. "': " .. n .. " settings need "
           .. "backend = \"" .. n .. "\"")
    end
  end
  local container
  if p.container ~= nil then
    container = validate_container(path, name, p.container)
  end
  local images = p.images ~= nil and validate_images(path, name, p.images)
                 or {}
  local platform = validate_platform(path, name, p.platform)
  local endpoints = validate_endpoints(path, name, p.endpoints)
  local profile = {
    name = name, backend = backend, storage = storage,
    credentials = credentials, endpoints = endpoints,
    max_credential_age = profile_duration(path, name, p,
                                          "max_credential_age"),
    max_token_lifespan = profile_duration(path, name, p,
                                          "max_token_lifespan") or 3600,
    s3 = s3,
    max_url_lifetime = bounded_duration(path, name, p, "max_url_lifetime",
                                        URL_LIFETIME_DEFAULT,
                                        URL_LIFETIME_MAX),
    url_margin = bounded_duration(path, name, p, "url_margin",
                                  URL_MARGIN_DEFAULT, URL_LIFETIME_MAX),
    max_output_bytes = output_bytes(),
    container = container,
    images = images,
    platform = platform,
    -- remote profiles require the commit on a remote by default
    require_pushed = p.require_pushed == nil and name ~= "local"
                     or p.require_pushed == true,
    remote = p.remote,
    -- production: a library's ref must not float (navette.use)
    pinned = p.pinned == true,
  }
  for n, t in pairs(settings) do profile[n] = t end
  return profile
end

-- The team's policy file in the team repository, unless navette.lua's
-- team names another; the keys of navette.lua's team.
project.TEAM_FILE = "team.lua"
local TEAM_SOURCE_KEYS = { "git", "ref", "file" }

-- Checks navette.lua's team (path: the project file). -> {url, ref, file}
local function validate_team_source(path, t)
  if type(t) ~= "table" then
    fail(path, "team must be a table: team = { git = URL, ref = TAG }")
  end
  util.check_keys(t, TEAM_SOURCE_KEYS, function(k, suggestion, list)
    fail(path, "team: unknown key '" .. tostring(k) .. "'" .. suggestion,
         "keys: " .. list)
  end)
  local library = require "navette.library"
  local ok, spec = pcall(library.validate, { git = t.git, ref = t.ref })
  if ok then
    -- (where it is fetched from: https://, file:// or a path)
    local okk, err = pcall(library.source, spec.url, util.dirname(path))
    if not okk then ok, spec = false, err end
  end
  if not ok then
    local e = errors.from(spec)
    fail(path, "team: " .. e.message:gsub("^navette.use: ", ""), e.hint)
  end
  local file = t.file or project.TEAM_FILE
  if type(file) ~= "string" or not file:match("^[%w_][%w_./-]*%.lua$")
     or ("/" .. file .. "/"):find("/%.%.?/") or file:find("//", 1, true) then
    fail(path, "team.file must be the policy's path in the repository "
         .. "(\"team.lua\", \"teams/vision.lua\"), without '.' or '..'")
  end
  return { url = spec.url, ref = spec.ref, file = file }
end

-- datasets = { NAME = { "/absolute/path", ... } }: files outside the
-- repository that a recipe may upload (navette.storage.put(key,
-- { dataset = NAME }) takes the first that exists on this machine).
local function validate_datasets(path, t)
  if type(t) ~= "table" then
    fail(path, "datasets must be a table of NAME = { \"/absolute/path\", ... }")
  end
  local out = {}
  for name, paths in pairs(t) do
    if type(name) ~= "string" or not name:match("^[%w_.-]+$") then
      fail(path, "datasets: names are letters, digits, '.', '_' and '-'")
    end
    if type(paths) == "string" then paths = { paths } end
    if type(paths) ~= "table" or #paths == 0 then
      fail(path, "datasets." .. name .. " must be a path or a list of paths")
    end
    out[name] = {}
    for i, p in ipairs(paths) do
      if type(p) ~= "string" or p:sub(1, 1) ~= "/" or p:find("\0", 1, true) then
        fail(path, "datasets." .. name .. "[" .. i .. "] must be an "
             .. "absolute path", "one per machine kind: the first that "
             .. "exists is uploaded")
      end
      out[name][i] = p
    end
  end
  return out
end

-- maintenance = { "recipes/maintenance/rotate-keys.lua", ... }: the
-- recipes whose tasks (navette.task) `navette maintain` runs when given
-- none: paths relative to the project file's folder, inside it.
local function validate_maintenance(path, t)
  if type(t) == "string" then t = { t } end
  if type(t) ~= "table" then
    fail(path, "maintenance must be a list of recipe paths",
         "maintenance = { \"recipes/maintenance/rotate-keys.lua\" }")
  end
  local n = 0
  for _ in pairs(t) do n = n + 1 end
  if n ~= #t or n > 256 then
    fail(path, "maintenance must be a list of at most 256 recipe paths")
  end
  local out = {}
  for i, p in ipairs(t) do
    local where = "maintenance[" .. i .. "]"
    if type(p) ~= "string" or p == "" or #p > 1024 or p:find("%z") then
      fail(path, where .. " must be a recipe's path (a string)")
    end
    if p:sub(1, 1) == "/" then
      fail(path, where .. " = '" .. p .. "' must be relative to the "
           .. "project's folder", "for example \"recipes/maintenance/"
           .. "rotate-keys.lua\"")
    end
    for segment in (p .. "/"):gmatch("([^/]*)/") do
      if segment == ".." then
        fail(path, where .. " = '" .. p .. "' leaves the project's folder")
      end
    end
    if not p:match("%.lua$") then
      fail(path, where .. " = '" .. p .. "' is not a .lua recipe")
    end
    out[i] = p
  end
  return out
end

-- The value a data file returns (navette.lua, team.lua): evaluated in
-- the sandbox without modules, nothing with a side effect, bounded.
-- text: the file's content when it is not read from path (a file at a
-- commit; path is then its name in messages and dir its folder).
function project.evaluate_data(path, text, dir)
  local env = core.sandbox(dir or util.dirname(path), { require = false })
  local chunk = errors.check(core.load_recipe(path, env, path, text))
  local ok, value = core.call_bounded(chunk)
  if not ok then error(errors.from(value), 0) end
  return value
end

-- Loads the project that holds recipe_dir. repo_root: the git work tree
-- (the project name defaults to its folder name).
function project.load(recipe_dir, repo_root)
  local home = core.home()
  local path = project.find(recipe_dir, repo_root)
  local proj = {
    name = slug(util.basename(repo_root or recipe_dir)),
    root = repo_root or recipe_dir,
    file = path,
    profiles = { ["local"] = builtin_local(home) },
    default_profile = "local",
  }
  local user = user_credentials()
  if not path then
    for k, v in pairs(user) do proj.profiles["local"].credentials[k] = v end
    trust.apply(proj)
    return proj
  end
  proj.root = util.dirname(path)

  local value = project.evaluate_data(path)
  if type(value) ~= "table" then
    fail(path, "the project file must return a table",
         "write: return { name = \"my-project\", profiles = { ... } }")
  end
  util.check_keys(value, PROJECT_KEYS, function(k, suggestion, list)
    fail(path, "unknown key '" .. tostring(k) .. "'" .. suggestion,
         "project keys are: " .. list)
  end)
  if value.name ~= nil then
    if type(value.name) ~= "string" or value.name == "" then
      fail(path, "name must be a non-empty string")
    end
    proj.name = slug(value.name)
  end
  if value.datasets ~= nil then
    proj.datasets = validate_datasets(path, value.datasets)
  end
  if value.maintenance ~= nil then
    proj.maintenance = validate_maintenance(path, value.maintenance)
  end
  if value.team ~= nil then
    proj.team_source = validate_team_source(path, value.team)
  end
  -- what binds the user's secrets, files and endpoints: it takes effect
  -- once the user trusts it (navette.trust)
  proj.bindings = trust.bindings(value)
  local shared = {}
  if value.credentials ~= nil then
    shared = validate_credentials(path, value.credentials, "")
  end
  -- the user's own declarations (their configuration) need no trust and
  -- are not the project's to redefine
  for k, v in pairs(user) do shared[k] = v end
  if next(shared) ~= nil then
    -- a project without profiles has one, the built-in local: nothing to
    -- keep apart, it gets the project's credentials
    if value.profiles == nil then
      for k, v in pairs(shared) do proj.profiles["local"].credentials[k] = v end
    end
  end
  proj.credentials = shared
  if value.profiles ~= nil then
    if type(value.profiles) ~= "table" then
      fail(path, "profiles must be a table of name = { ... }")
    end
    for name, p in pairs(value.profiles) do
      if type(name) ~= "string" or not name:match("^[%w_-]+$") then
        fail(path, "profile names are letters, digits, '_' and '-'")
      end
      proj.profiles[name] = validate_profile(path, name, p, home, shared)
    end
  end
  if value.default_profile ~= nil then
    if not proj.profiles[value.default_profile] then
      fail(path, "default_profile '" .. tostring(value.default_profile)
           .. "' is not a declared profile")
    end
    proj.default_profile = value.default_profile
  end
  trust.apply(proj)
  require("navette.isolation").index(proj)
  return proj
end

function project.profile(proj, name)
  name = name or proj.default_profile
  local p = proj.profiles[name]
  if not p then
    local names = util.sorted_keys(proj.profiles)
    error(errors.new("usage", "unknown profile '" .. name .. "'"
      .. util.suggest(name, names),
      "profiles of project " .. proj.name .. ": "
      .. table.concat(names, ", ")), 0)
  end
  return p
end

return project
