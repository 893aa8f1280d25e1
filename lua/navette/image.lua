-- navette.image: images pinned by digest, for recipes and the CLI.
--
--   local img = navette.image.code_layer {
--     base = "127.0.0.1:5000/base/python:3.12",   -- resolved to a digest
--     to = "127.0.0.1:5000/team/train",           -- tag: from the commit
--     into = "/workspace",                        -- where the tree goes
--   }
--   -- img.reference == "127.0.0.1:5000/team/train@sha256:..."
--
-- resolve(ref) -> digest, info; exists(ref) -> bool; inspect(ref) -> the
-- manifest, config, labels, layers and platform; code_layer{...} pushes
-- the repository's tree at a commit as one deterministic layer on a base
-- (no builder, no daemon); build{...} drives buildah, podman or docker on
-- a Containerfile of the commit. Registry credentials: `credential =
-- NAME` (a basic or bearer credential of navette.lua), else one declared
-- with `host` = the registry, else ~/.docker/config.json, else anonymous.
-- Side effects honour plan mode: they are recorded, not done. A failure
-- raises; each function has a try_ twin returning nil, err (errors.lua).
local errors = require "navette.errors"
local util = require "navette.util"
local native, core, sys, json = _navette.image, _navette.core, _navette.sys,
                                _navette.json

local image = {}

-- the run being evaluated, and the scope (navette.context)
local current = require("navette.context").current
local scope = require("navette.context").scope

local function fail(err, what)
  local message = err and err.message or "image operation failed"
  if what then message = what .. ": " .. message end
  errors.raise(err and err.code or "backend", message, err and err.hint)
end

local function check(value, err, what)
  if value == nil then fail(err, what) end
  return value
end

local function string_arg(fn, name, v, optional)
  if v == nil and optional then return nil end
  if type(v) ~= "string" or v == "" then
    errors.raise("recipe", "navette.image." .. fn .. ": " .. name
                 .. " must be a non-empty string")
  end
  return v
end

local function known_keys(fn, t, keys)
  util.check_keys(t, keys, function(k, suggestion, list)
    errors.raise("recipe", "navette.image." .. fn .. ": unknown key '"
                 .. tostring(k) .. "'" .. suggestion, "keys: " .. list)
  end)
end

-- The registries entry of one registry: its credential handle, from a
-- name, a handle, or the declared credential bound to that host.
local function registry_entry(registry, credential)
  local creds = require "navette.creds"
  local entry = {}
  if type(credential) == "string" then
    local decl = creds.declaration and creds.declaration(credential)
    if decl and decl.kind ~= "basic" and decl.kind ~= "bearer" then
      errors.raise("recipe", "credential '" .. credential .. "' is of kind "
                   .. tostring(decl.kind) .. ", not basic or bearer",
                   "a registry credential is basic (user, password) or "
                   .. "bearer (token)")
    end
    entry.credential = creds.get(credential)
    entry.credential_host = decl and decl.host or nil
  elseif credential ~= nil then
    -- a handle: sent to its declaration's host only (one not declared,
    -- a rotation's new secret, to the registry it was given for)
    local decl = creds.declaration and type(credential) == "userdata"
                 and creds.declaration(credential:name())
    if decl and decl.host then
      local function bare(h)
        h = h:lower():gsub("%.$", "")
        return h:match("^(.-):%d+$") or h
      end
      if decl.host:lower() ~= registry:lower()
         and not (not decl.host:find(":%d+$") and bare(decl.host) == bare(registry)) then
        errors.raise("refused", "credential '" .. credential:name() .. "' is "
                     .. "bound to " .. decl.host .. ", not to registry "
                     .. registry, "give the registry its own credential")
      end
      entry.credential_host = decl.host
    end
    entry.credential = credential
  elseif creds.for_host then
    local name = creds.for_host(registry, { "basic", "bearer" })
    if name then
      entry.credential = creds.get(name)
      entry.credential_host = creds.declaration(name).host
    end
  end
  return entry
end

-- The platform the nodes run, which images are built, layered, resolved
-- and checked for: the caller's, else the running recipe's profile's, else
-- linux/amd64. Never this machine's: an Apple Silicon Mac would make arm64
-- images that amd64 nodes fail to run ("exec format error").
image.DEFAULT_PLATFORM = "linux/amd64"
function image.target_platform(platform)
  if platform then return platform end
  local run = current()
  return run and run.profile and run.profile.platform
         or image.DEFAULT_PLATFORM
end

-- image.check_platform(info, platform, what): raises "refused" unless the
-- image of info (from inspect: its config_json) runs on platform (nil: the
-- target platform).
function image.check_platform(info, platform, what)
  local ok, err = native.platform_check(info.config_json,
                                        image.target_platform(platform),
                                        what or info.reference)
  if not ok then fail(err) end
  return true
end

-- Native options for refs (list of {registry, credential}) and opts.
local function native_options(opts, refs)
  local run = current()
  if run and run.profile then
    for _, r in ipairs(refs) do
      require("navette.isolation").check_registry(run.profile, r.registry,
                                                  "navette.image")
    end
  end
  local o = { platform = image.target_platform(opts.platform),
              registries = {},
              docker_config = opts.docker_config, progress = opts.progress,
              step = opts.step }
  for _, r in ipairs(refs) do
    if not o.registries[r.registry] then
      o.registries[r.registry] = registry_entry(r.registry, r.credential)
    elseif r.credential ~= nil then
      o.registries[r.registry] = registry_entry(r.registry, r.credential)
    end
  end
  if opts.ca_bundle then
    for _, e in pairs(o.registries) do e.ca_bundle = opts.ca_bundle end
  end
  return o
end

-- image.parse(ref) -> {registry, repository, tag, digest, name, full}
function image.parse(ref)
  string_arg("parse", "the reference", ref)
  return check(native.parse(ref))
end

local READ_KEYS = { "platform", "credential", "docker_config", "ca_bundle" }

local function read_call(fn, ref, opts)
  string_arg(fn, "the reference", ref)
  opts = opts or {}
  if type(opts) ~= "table" then
    errors.raise("recipe", "navette.image." .. fn .. ": options must be a "
                 .. "table")
  end
  known_keys(fn, opts, READ_KEYS)
  local parsed = image.parse(ref)
  return parsed, native_options(opts, { { registry = parsed.registry,
                                          credential = opts.credential } })
end

-- image.resolve(ref, opts) -> digest, {digest, reference, index_digest,
-- media_type, platform}: the digest of the image manifest for the
-- platform (an index is resolved to its entry).
function image.resolve(ref, opts)
  local _, o = read_call("resolve", ref, opts)
  local info, err = native.resolve(ref, o)
  check(info, err, "cannot resolve " .. ref)
  return info.digest, info
end

-- image.exists(ref, opts) -> true, digest | false
function image.exists(ref, opts)
  local _, o = read_call("exists", ref, opts)
  local present, digest = native.exists(ref, o)
  if present == nil then fail(digest, "cannot look up " .. ref) end
  return present, digest
end

-- image.check_credential{ registry = "host:port", credential = NAME or
-- HANDLE, ca_bundle = ... } -> true when the registry accepts the
-- credential (GET /v2/, a token fetched first where the registry asks for
-- one); raises refused when it answers 401 or 403. A handle not declared
-- is sent to that registry only.
local CHECK_KEYS = { "registry", "credential", "ca_bundle" }
function image.check_credential(opts)
  local what = "navette.image.check_credential"
  if type(opts) ~= "table" then
    errors.raise("recipe", what .. " expects a table: " .. what
                 .. "{ registry = \"host:port\", credential = ... }")
  end
  known_keys("check_credential", opts, CHECK_KEYS)
  string_arg("check_credential", "registry", opts.registry)
  if type(opts.credential) ~= "string" and type(opts.credential) ~= "userdata" then
    errors.raise("recipe", what .. ": credential must name a declared "
                 .. "credential or be a handle")
  end
  local name = type(opts.credential) == "string" and opts.credential
               or opts.credential:name()
  local o = native_options({ ca_bundle = opts.ca_bundle, docker_config = false },
                           { { registry = opts.registry,
                               credential = opts.credential } })
  local ok, err = native.ping(opts.registry, o)
  if ok then return true end
  if err.code == "refused" then
    errors.raise("refused", what .. ": " .. opts.registry .. " refuses "
                 .. "credential " .. name .. " (" .. err.message .. ")",
                 err.hint)
  end
  fail(err, what .. ": cannot reach " .. opts.registry)
end

-- image.inspect(ref, opts) -> {digest, reference, platform, media_type,
-- manifest, config, labels, layers = {{digest, size, media_type}}}
function image.inspect(ref, opts)
  local _, o = read_call("inspect", ref, opts)
  local info, err = native.inspect(ref, o)
  check(info, err, "cannot inspect " .. ref)
  info.manifest = json.decode(info.manifest_json)
  info.config = json.decode(info.config_json)
  local cfg = type(info.config) == "table" and info.config.config or nil
  info.labels = type(cfg) == "table" and type(cfg.Labels) == "table"
                and cfg.Labels or {}
  return info
end

-- The repository: given, the scope's, the running recipe's, or the
-- current folder's.
local function repo_root(opts_repo)
  if opts_repo then return opts_repo end
  if scope().repo_root then return scope().repo_root end
  local run = current()
  if run and run.repo then return run.repo:workdir() end
  return sys.cwd()
end

-- ---- what a recipe may name on this machine -----------------------------
-- A recipe is untrusted (a clone may be the first thing run): through the
-- public API (the functions of this module) its `repo` is its run's own
-- repository or a folder of it, never another repository on disk; what
-- it writes (pack's `output`, code_layer's `tmp_dir`) goes to a path git
-- ignores in that repository or to navette's temporary folder
-- ($NAVETTE_HOME/tmp), never over a tracked file or outside them; and
-- the builder's `storage_root`/`run_root` (buildah may run as root) name
-- a folder of navette's own ($NAVETTE_HOME/image-storage/NAME, .../
-- image-run/NAME). image.trusted holds the same calls for the command
-- line, which takes the user's paths as given.

-- The run's repository: its real root (the running recipe's, else the
-- scope's, else the current folder's).
local function own_repository(fn)
  local root
  local run = current()
  if run and run.repo then
    root = run.repo:workdir()
  elseif scope().repo_root then
    root = scope().repo_root
  else
    local repo = _navette.git.open(sys.cwd())
    if repo then root = repo:workdir(); repo:close() end
  end
  local real = root and sys.realpath(root)
  if not real then
    errors.raise("refused", "navette.image." .. fn .. ": no repository "
                 .. "for this run", "run the recipe inside its git "
                 .. "repository")
  end
  return real
end

local function refuse_path(fn, key, given, why, allowed)
  errors.raise("refused", "navette.image." .. fn .. ": " .. key .. " '"
               .. given .. "' " .. why, allowed)
end

-- A `repo` of a recipe: the run's repository or one of its folders (its
-- real path, symlinks followed, compared as the volume compares names),
-- that opens as that same repository (a nested clone or a submodule is
-- another one).
local function confined_repo(fn, given)
  local root = own_repository(fn)
  if given == nil then return root end
  string_arg(fn, "repo", given)
  local allowed = "a recipe's repo is its own repository (" .. root
                  .. ") or a folder of it"
  local real = sys.realpath(given:sub(1, 1) == "/" and given
                            or (root .. "/" .. given))
  if not real then
    refuse_path(fn, "repo", given, "does not exist", allowed)
  end
  if not sys.path_within(real, root) then
    refuse_path(fn, "repo", given, "is outside the run's repository",
                allowed)
  end
  local repo = _navette.git.open(real)
  local wd = repo and sys.realpath(repo:workdir())
  if repo then repo:close() end
  if not wd or not (sys.path_within(wd, root) and sys.path_within(root, wd)) then
    refuse_path(fn, "repo", given, "is another git repository ("
                .. tostring(wd) .. ")", allowed)
  end
  return real
end

-- A path a recipe has navette write (folder = true: a folder navette
-- creates its files in): its real path, in navette's temporary folder
-- (a new file there, never one that exists) or in the run's repository
-- where git ignores it (never a tracked file, nothing under .git).
local function confined_output(fn, key, given, folder)
  string_arg(fn, key, given)
  local root = own_repository(fn)
  local tmp = core.home() .. "/tmp"
  local allowed = "a recipe writes to a path git ignores in its "
                  .. "repository (add the folder to .gitignore) or under "
                  .. tmp
  local path = given:sub(1, 1) == "/" and given or (root .. "/" .. given)
  local dir, base = path, nil
  if not folder then
    dir, base = path:match("^(.*)/([^/]+)$")
    if not base or base == "." or base == ".." then
      refuse_path(fn, key, given, "names no file", allowed)
    end
  end
  local rdir = sys.realpath(dir == "" and "/" or dir)
  if not rdir then
    refuse_path(fn, key, given, "is in a folder that does not exist",
                allowed)
  end
  local real = base and ((rdir == "/" and "" or rdir) .. "/" .. base)
               or rdir
  if not core.plan_mode() then sys.mkdir_p(tmp, 448) end
  local rtmp = sys.realpath(tmp)
  if rtmp and sys.path_within(real, rtmp) then
    if base and sys.stat(real) then
      refuse_path(fn, key, given, "exists already", "name a new file "
                  .. "under " .. tmp)
    end
    return real
  end
  if not sys.path_within(real, root) then
    refuse_path(fn, key, given, "is outside the run's repository and "
                .. "navette's temporary folder", allowed)
  end
  local rel = real:sub(#root + 2)
  for part in (rel .. "/"):gmatch("([^/]*)/") do
    if part:lower() == ".git" then
      refuse_path(fn, key, given, "is in the repository's .git folder",
                  allowed)
    end
  end
  local state = "tracked" -- the root itself
  if rel ~= "" then
    local repo = check(_navette.git.open(root))
    local st, err = repo:path_state(rel)
    repo:close()
    state = check(st, err, "navette.image." .. fn)
  end
  if state ~= "ignored" then
    refuse_path(fn, key, given, "is " .. (state == "tracked"
                and "tracked by git" or "not ignored by git") .. " in "
                .. root, allowed)
  end
  return real
end

-- A builder folder of a recipe: a NAME (letters, digits, '.', '_', '-')
-- of navette's folder of that kind, created 0700.
local STORE_FOLDERS = { storage_root = "image-storage", run_root = "image-run" }
local function confined_store(fn, key, name)
  if name == nil then return nil end
  local base = core.home() .. "/" .. STORE_FOLDERS[key]
  if type(name) ~= "string" or not name:match("^[%w_-][%w._-]*$")
     or #name > 64 then
    errors.raise("refused", "navette.image." .. fn .. ": " .. key .. " '"
                 .. tostring(name) .. "' is not a name",
                 "a recipe names one of navette's builder folders: " .. key
                 .. " = \"NAME\" (letters, digits, '.', '_', '-') is "
                 .. base .. "/NAME; a path is for the command line (--"
                 .. key:gsub("_", "-") .. ")")
  end
  if not core.plan_mode() then check(sys.mkdir_p(base .. "/" .. name, 448)) end
  return base .. "/" .. name
end

local function audit(action, target, result, detail)
  local a = _navette.audit
  if a and a.append then
    -- (the team member the run acts for, as audit.record names them)
    pcall(a.append, { action = action, target = target, result = result,
                      detail = detail,
                      identity = require("navette.audit").member_identity })
  end
end

local CODE_KEYS = { "base", "to", "into", "platform", "repo", "commit",
                    "source", "credential", "base_credential",
                    "docker_config", "ca_bundle", "progress", "step",
                    "tmp_dir" }

-- image.code_layer{base=, to=, into=, platform=, repo=, commit=, ...} ->
-- {reference = "repo@sha256:...", digest, tag, base, base_digest,
--  layer_digest, diff_id, commit, bytes_uploaded, ...}
local function code_layer(spec, trusted)
  if type(spec) ~= "table" then
    errors.raise("recipe", "navette.image.code_layer expects a table "
                 .. "{ base = ..., to = ... }")
  end
  known_keys("code_layer", spec, CODE_KEYS)
  string_arg("code_layer", "base", spec.base)
  string_arg("code_layer", "to", spec.to)
  string_arg("code_layer", "into", spec.into, true)
  string_arg("code_layer", "platform", spec.platform, true)
  string_arg("code_layer", "commit", spec.commit, true)
  local base, target = image.parse(spec.base), image.parse(spec.to)
  if target.digest then
    errors.raise("recipe", "navette.image.code_layer: `to` names a digest ("
                 .. spec.to .. ")", "give the repository to push to: the "
                 .. "digest is what the push produces")
  end
  local o = native_options(spec, {
    { registry = base.registry, credential = spec.base_credential },
    { registry = target.registry, credential = spec.credential } })
  o.repo = trusted and repo_root(spec.repo)
           or confined_repo("code_layer", spec.repo)
  o.commit, o.base, o.to = spec.commit, spec.base, spec.to
  o.into, o.source, o.tmp_dir = spec.into, spec.source, spec.tmp_dir
  if not trusted and spec.tmp_dir ~= nil then
    o.tmp_dir = confined_output("code_layer", "tmp_dir", spec.tmp_dir, true)
  end
  local res, err = native.code_layer(o)
  if res == nil and err == "planned" then
    return { planned = true, base = spec.base, to = spec.to,
             into = spec.into or "/workspace" }
  end
  if res == nil then
    audit("image.push", spec.to, "failed", err and err.message)
    fail(err, "code layer for " .. spec.to)
  end
  -- the checking pass of a run: all checked and the reference computed,
  -- nothing pushed (the real pass pushes)
  if res.planned then return res end
  audit("image.push", res.reference, "ok", "code layer of " .. res.commit
        .. " on " .. res.base)
  return res
end

local PACK_KEYS = { "repo", "commit", "into", "output" }

-- image.pack{repo=, commit=, into=, output=} -> the layer code_layer
-- would push, written to output (diff_id, layer_digest, sizes).
local function pack(spec, trusted)
  if type(spec) ~= "table" then
    errors.raise("recipe", "navette.image.pack expects a table "
                 .. "{ output = ... }")
  end
  known_keys("pack", spec, PACK_KEYS)
  string_arg("pack", "output", spec.output)
  local repo = trusted and repo_root(spec.repo)
               or confined_repo("pack", spec.repo)
  local output = trusted and spec.output
                 or confined_output("pack", "output", spec.output)
  local res, err = native.pack { repo = repo, commit = spec.commit,
                                 into = spec.into, output = output }
  if res == nil and err == "planned" then return { planned = true } end
  return check(res, err, "pack")
end

local BUILD_KEYS = { "builder", "file", "context", "platform", "to", "tag",
                     "build_args", "labels", "repo", "commit", "credential",
                     "docker_config", "storage_root", "run_root" }

-- The keys each call accepts (for the LuaLS definitions: navette.luals).
image.OPTION_KEYS = { read = READ_KEYS, code_layer = CODE_KEYS,
                      pack = PACK_KEYS, build = BUILD_KEYS }

-- navette's own labels (io.navette.*: the lock-file hash, the package
-- list) are what rebuild and the checks read: a recipe does not set them.
local function check_label(fn, l)
  if type(l) == "string" and l:lower():match("^io%.navette%.") then
    errors.raise("recipe", "navette.image." .. fn .. ": the label '"
                 .. l:match("^[^=]*") .. "' is navette's own",
                 "name your labels outside io.navette. (org.example.*)")
  end
end

-- image.build{builder=, file=, context=, platform=, to=, ...} ->
-- {reference, digest, tag, builder}: the commit's tree (never the working
-- folder) is exported, scanned for secrets and built; the tag comes from
-- the commit and the lock-file hash; the digest the push produced is
-- checked against what the registry now serves for that tag.
local function build(spec, trusted)
  if type(spec) ~= "table" then
    errors.raise("recipe", "navette.image.build expects a table")
  end
  known_keys("build", spec, BUILD_KEYS)
  string_arg("build", "to", spec.to)
  local storage_root, run_root = spec.storage_root, spec.run_root
  if not trusted then
    storage_root = confined_store("build", "storage_root", storage_root)
    run_root = confined_store("build", "run_root", run_root)
  end
  local file = string_arg("build", "file", spec.file or "Containerfile")
  local ctx = string_arg("build", "context", spec.context or ".")
  for _, p in ipairs({ file, ctx }) do
    if p:sub(1, 1) == "/" or ("/" .. p .. "/"):find("/../", 1, true) then
      errors.raise("recipe", "navette.image.build: '" .. p .. "' must be a "
                   .. "path inside the repository")
    end
  end
  local target = image.parse(spec.to)
  if target.digest then
    errors.raise("recipe", "navette.image.build: `to` names a digest")
  end
  -- the builder pushes itself: another profile's registry is refused
  -- before it starts (plan mode too)
  local run = current()
  if run and run.profile then
    require("navette.isolation").check_registry(run.profile, target.registry,
                                                "navette.image.build")
  end
  local builder, berr = native.builder(spec.builder)
  if not builder then fail(berr) end

  local git = _navette.git
  local repo = check(git.open(trusted and repo_root(spec.repo)
                              or confined_repo("build", spec.repo)))
  local commit = check(repo:resolve(spec.commit or "HEAD"))
  local lock = check(repo:lockfile_hash(commit))
  local source = repo:remote_url()
  local tag = spec.tag or (target.implicit_tag and
              (native.tag_of(commit) .. "-" .. lock:sub(1, 8)) or target.tag)
  local ref = target.name .. ":" .. tag
  local labels = { "org.opencontainers.image.revision=" .. commit,
                   "io.navette.lockfile.sha256=" .. lock }
  if source then
    labels[#labels + 1] = "org.opencontainers.image.source=" .. source
  end
  for _, l in ipairs(spec.labels or {}) do
    check_label("build", l)
    labels[#labels + 1] = l
  end
  if core.plan_mode() then
    native.build { to = ref } -- recorded only
    repo:close()
    return { planned = true, tagged = ref, builder = builder, tag = tag }
  end
  -- the commit, not the working folder: exported, scanned first
  local report, serr = _navette.creds.scan_commit(repo:workdir(), commit)
  if not report then fail(serr, "secret scan") end
  if #report.findings > 0 then
    local lines = {}
    for i, f in ipairs(report.findings) do
      if i > 10 then break end
      lines[#lines + 1] = "  " .. f.path .. (f.line > 0 and (":" .. f.line)
                          or "") .. ": " .. f.reason .. " [" .. f.rule .. "]"
    end
    errors.raise("refused", "commit " .. commit:sub(1, 12) .. " holds what "
                 .. "looks like secrets; no image is built of it:\n"
                 .. table.concat(lines, "\n"), "remove them (and rotate "
                 .. "them), or exempt a path in .navette-secrets-allow")
  end
  local tmp = (sys.getenv("TMPDIR") or "/tmp") .. "/navette-build-"
              .. sys.random_hex(6)
  local ok, e = pcall(function()
    local exported, xerr = repo:export(commit, tmp .. "/tree")
    check(exported, xerr, "export")
    -- a symlink of the commit must not take the build out of its tree
    -- (a context linked to the user's home would be copied and pushed)
    local tree = check(sys.realpath(tmp .. "/tree"))
    for _, p in ipairs({ file, ctx }) do
      local real = sys.realpath(tmp .. "/tree/" .. p)
      if real and not sys.path_within(real, tree) then
        errors.raise("refused", "navette.image.build: '" .. p .. "' is a "
                     .. "symlink out of the commit's tree", "name a file "
                     .. "and a folder of the commit itself")
      end
    end
    return check(native.build {
      builder = builder, file = tmp .. "/tree/" .. file,
      context = tmp .. "/tree/" .. ctx,
      platform = image.target_platform(spec.platform), to = ref,
      build_args = spec.build_args, labels = labels,
      storage_root = storage_root, run_root = run_root })
  end)
  sys.remove_tree(tmp)
  repo:close()
  if not ok then
    audit("image.build", ref, "failed", type(e) == "table" and e.message)
    error(e, 0)
  end
  local built = e
  -- what the registry serves for the tag must be what the builder pushed
  local present, head = image.exists(ref, { credential = spec.credential,
                                            docker_config = spec.docker_config })
  if not present or head ~= built.digest then
    errors.raise("backend", builder .. " pushed " .. built.digest .. " but "
                 .. ref .. " is " .. tostring(head), "another push may have "
                 .. "raced this one; build again")
  end
  -- and it must run on the nodes: a Containerfile's FROM may name an
  -- image that has no build for the platform asked
  local pushed = target.name .. "@" .. built.digest
  image.check_platform(image.inspect(pushed, {
    platform = spec.platform, credential = spec.credential,
    docker_config = spec.docker_config }), spec.platform, pushed)
  local out = { reference = target.name .. "@" .. built.digest,
                digest = built.digest, tag = tag, tagged = ref,
                builder = builder, commit = commit, lockfile_hash = lock }
  audit("image.build", out.reference, "ok", builder .. " of " .. commit)
  return out
end

local build_call = build

local REBUILD_KEYS = { "builder", "file", "context", "platform", "to",
                       "build_args", "labels", "repo", "commit", "credential",
                       "docker_config", "storage_root", "run_root", "force" }

-- Moves the pointer tag of target's repository to digest (the same
-- manifest put under that tag), unless it is there already; reg: the
-- registry options, credential: for the write. Returns true when moved
-- (plan mode: recorded, false).
local function move_pointer(target, tag, digest, reg, credential)
  local has, at = image.exists(target.name .. ":" .. tag, reg)
  if has and at == digest then return false end
  local moved, merr = native.retag(target.name .. "@" .. digest, tag,
    native_options(reg, { { registry = target.registry,
                            credential = credential } }))
  if moved == nil and merr == "planned" then return false end
  check(moved, merr, "moving " .. target.name .. ":" .. tag)
  return true
end

-- image.rebuild{to = "registry/team/app:POINTER", builder=, file=, ...}
-- -> {built, up_to_date, reference, digest, pointer, lockfile_hash,
-- previous = {digest, lockfile_hash} | nil}: an image built by image.build
-- only when the lock-file hash of the commit (the sha256 of the root's
-- dependency lock files: navette's repo:lockfile_hash) differs from the
-- one the pointer's image carries in its io.navette.lockfile.sha256
-- label, read from the registry. A new build is pushed under its own tag
-- (commit and hash) and the pointer moved to it; otherwise nothing is
-- built and the pointer stays (force = true builds all the same: a
-- change of the Containerfile alone is no change of the lock files).
-- Plan mode: the lookup is done, the build recorded.
local function rebuild(spec, trusted)
  if type(spec) ~= "table" then
    errors.raise("recipe", "navette.image.rebuild expects a table "
                 .. "{ to = \"registry/repo:pointer\", ... }")
  end
  known_keys("rebuild", spec, REBUILD_KEYS)
  string_arg("rebuild", "to", spec.to)
  if not trusted then -- refused before the registry is asked
    confined_store("rebuild", "storage_root", spec.storage_root)
    confined_store("rebuild", "run_root", spec.run_root)
  end
  local target = image.parse(spec.to)
  if target.digest or target.implicit_tag then
    errors.raise("recipe", "navette.image.rebuild: `to` must name a "
                 .. "pointer tag (" .. spec.to .. ")", "write it as "
                 .. "registry/repo:current: the tag a profile's images "
                 .. "names, moved to each new build")
  end
  local reg = { credential = spec.credential,
                docker_config = spec.docker_config,
                platform = image.target_platform(spec.platform) }
  local git = _navette.git
  local repo = check(git.open(trusted and repo_root(spec.repo)
                              or confined_repo("rebuild", spec.repo)))
  local commit = check(repo:resolve(spec.commit or "HEAD"))
  local lock = check(repo:lockfile_hash(commit))
  repo:close()
  local pointer = target.name .. ":" .. target.tag
  local out = { pointer = pointer, lockfile_hash = lock, commit = commit }
  local present, at = image.exists(pointer, reg)
  if present then
    local info = image.inspect(target.name .. "@" .. at, reg)
    local was = info.labels["io.navette.lockfile.sha256"]
    out.previous = { digest = at, lockfile_hash = was }
    if was == lock and not spec.force then
      out.built, out.up_to_date = false, true
      out.digest, out.reference = at, target.name .. "@" .. at
      return out
    end
  end
  local build = {}
  for _, k in ipairs(REBUILD_KEYS) do build[k] = spec[k] end
  build.force = nil
  build.to = target.name -- its own tag: the commit and the hash
  local built = build_call(build, trusted)
  out.built, out.up_to_date = true, false
  if built.planned then
    out.planned, out.tagged = true, built.tagged
    return out
  end
  out.digest, out.reference, out.tagged = built.digest, built.reference,
                                          built.tagged
  move_pointer(target, target.tag, built.digest, reg, spec.credential)
  audit("image.rebuild", pointer, "ok", "to " .. built.reference
        .. " (lock-file hash " .. lock:sub(1, 12) .. ", was "
        .. tostring(out.previous and out.previous.lockfile_hash
                    and out.previous.lockfile_hash:sub(1, 12) or "none")
        .. ")")
  return out
end
image.OPTION_KEYS.rebuild = REBUILD_KEYS

local DEB_KEYS = { "suite", "packages", "variant", "platform", "to",
                   "mirror", "rebuild", "labels", "credential",
                   "docker_config", "storage_root", "run_root" }

-- image.debootstrap{to=, suite=, packages=, variant=, platform=, mirror=,
-- rebuild=, ...} -> {reference, digest, tag, tagged, pointer, built,
-- packages_sha256}: a Debian base image of the packages asked, built by
-- debootstrap and buildah (Linux, as root) and pushed to `to`'s repository
-- under "<suite>-<12 hex of the spec's hash>". A registry that has that
-- tag has the image: nothing is built, unless rebuild = true. A tag in
-- `to` ("registry/team/base:bookworm") is a pointer moved to the image,
-- which a profile's `images` may name. Plan mode: looked up, not built.
local function debootstrap(spec, trusted)
  if type(spec) ~= "table" then
    errors.raise("recipe", "navette.image.debootstrap expects a table "
                 .. "{ to = ..., packages = { ... } }")
  end
  known_keys("debootstrap", spec, DEB_KEYS)
  string_arg("debootstrap", "to", spec.to)
  string_arg("debootstrap", "suite", spec.suite, true)
  string_arg("debootstrap", "variant", spec.variant, true)
  string_arg("debootstrap", "mirror", spec.mirror, true)
  local packages = spec.packages or {}
  if type(packages) ~= "table" then
    errors.raise("recipe", "navette.image.debootstrap: `packages` must be "
                 .. "a list of Debian package names")
  end
  for i, p in ipairs(packages) do
    string_arg("debootstrap", "packages[" .. i .. "]", p)
  end
  for _, l in ipairs(spec.labels or {}) do
    string_arg("debootstrap", "a label", l)
    check_label("debootstrap", l)
  end
  local target = image.parse(spec.to)
  if target.digest then
    errors.raise("recipe", "navette.image.debootstrap: `to` names a digest ("
                 .. spec.to .. ")", "give the repository (and a pointer "
                 .. "tag if you want one): the digest is what the build "
                 .. "produces")
  end
  local storage_root, run_root = spec.storage_root, spec.run_root
  if not trusted then
    storage_root = confined_store("debootstrap", "storage_root",
                                  storage_root)
    run_root = confined_store("debootstrap", "run_root", run_root)
  end
  local suite = spec.suite or "bookworm"
  local platform = image.target_platform(spec.platform)
  local id = check(native.debootstrap_identity {
    suite = suite, variant = spec.variant, platform = platform,
    packages = packages })
  local pointer = not target.implicit_tag and target.tag or nil
  if pointer == id.tag then pointer = nil end
  local reg = { credential = spec.credential,
                docker_config = spec.docker_config, platform = platform }
  -- the target registry's client options (its credential), for writes
  local function target_options()
    return native_options(reg, { { registry = target.registry,
                                    credential = spec.credential } })
  end
  local out = { tag = id.tag, tagged = target.name .. ":" .. id.tag,
                packages_sha256 = id.hash, suite = suite,
                pointer = pointer and (target.name .. ":" .. pointer) }
  local function point(digest)
    if not pointer then return end
    if move_pointer(target, pointer, digest, reg, spec.credential) then
      out.pointer_moved = true
    end
  end
  -- present already: the same spec was built (a read; plan does it too)
  local present, digest = image.exists(out.tagged, reg)
  if present and not spec.rebuild then
    out.digest, out.built = digest, false
    out.reference = target.name .. "@" .. digest
    point(digest)
    return out
  end
  if core.plan_mode() then
    native.debootstrap { suite = suite, to = out.tagged } -- recorded only
    out.planned, out.to = true, out.tagged
    return out
  end
  local mirror = spec.mirror or check(native.apt_mirror(suite))
  local labels = { "io.navette.packages.sha256=" .. id.hash,
                   "io.navette.debian.suite=" .. suite,
                   "io.navette.packages=" .. table.concat(packages, ",") }
  for _, l in ipairs(spec.labels or {}) do labels[#labels + 1] = l end
  local work = (sys.getenv("TMPDIR") or "/tmp") .. "/navette-debootstrap-"
               .. sys.random_hex(6)
  check(sys.mkdir_p(work, 448))
  local ok, e = pcall(function()
    check(native.debootstrap {
      suite = suite, variant = spec.variant, platform = platform,
      packages = packages, mirror = mirror, work_dir = work,
      labels = labels, storage_root = storage_root, run_root = run_root })
    local o = target_options()
    o.layout, o.to, o.tags = work .. "/layout", target.name, { id.tag }
    return check(native.layout_push(o))
  end)
  sys.remove_tree(work)
  if not ok then
    audit("image.debootstrap", out.tagged, "failed",
          type(e) == "table" and e.message)
    error(e, 0)
  end
  out.digest, out.built = e, true
  out.reference = target.name .. "@" .. e
  image.check_platform(image.inspect(out.reference, reg), platform,
                       out.reference)
  point(e)
  audit("image.debootstrap", out.reference, "ok", suite .. " with "
        .. #packages .. " packages, " .. id.hash:sub(1, 12))
  return out
end

image.OPTION_KEYS.debootstrap = DEB_KEYS

-- The calls as recipes make them (public.lua hands these out), and as
-- the command line does (image.trusted: the user's paths as given).
image.trusted = {}
for name, fn in pairs({ code_layer = code_layer, pack = pack, build = build,
                        rebuild = rebuild, debootstrap = debootstrap }) do
  image[name] = function(spec) return fn(spec, false) end
  image.trusted[name] = function(spec) return fn(spec, true) end
end

-- The non-raising twins: try_resolve(...) -> digest, info | nil, err.
errors.add_try(image, { "parse", "resolve", "exists", "inspect",
                        "code_layer", "pack", "build", "debootstrap",
                        "rebuild", "check_platform", "check_credential" })

return image
