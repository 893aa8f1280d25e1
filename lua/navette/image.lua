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
-- (no builder, no daemon); build{...}, rebuild{...} and debootstrap{...}
-- are in navette.image.builder. Registry credentials: `credential =
-- NAME` (a basic or bearer credential of navette.lua), else one declared
-- with `host` = the registry, else ~/.docker/config.json, else anonymous.
-- Side effects honour plan mode: they are recorded, not done. A failure
-- raises; each function has a try_ twin returning nil, err (errors.lua).
local errors = require "navette.errors"
local common = require "navette.image.common"
local confine = require "navette.image.confine"
local native, json = _navette.image, _navette.json

local image = {}

local fail, check, string_arg = common.fail, common.check, common.string_arg
local known_keys, native_options = common.known_keys, common.native_options
local repo_root, audit = common.repo_root, common.audit
local table_spec = common.table_spec
local confined_repo, confined_output = confine.repo, confine.output

-- The platform the nodes run (navette.image.common).
image.DEFAULT_PLATFORM = common.DEFAULT_PLATFORM
image.target_platform = common.target_platform
image.check_platform = common.check_platform

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
  table_spec("check_credential", opts, CHECK_KEYS, ": " .. what
             .. "{ registry = \"host:port\", credential = ... }")
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

local CODE_KEYS = { "base", "to", "into", "platform", "repo", "commit",
                    "source", "credential", "base_credential",
                    "docker_config", "ca_bundle", "progress", "step",
                    "tmp_dir" }

-- image.code_layer{base=, to=, into=, platform=, repo=, commit=, ...} ->
-- {reference = "repo@sha256:...", digest, tag, base, base_digest,
--  layer_digest, diff_id, commit, bytes_uploaded, ...}
local function code_layer(spec, trusted)
  table_spec("code_layer", spec, CODE_KEYS, " { base = ..., to = ... }")
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
  table_spec("pack", spec, PACK_KEYS, " { output = ... }")
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

-- The keys each call accepts (for the LuaLS definitions: navette.luals;
-- build's, rebuild's and debootstrap's: navette.image.builder).
image.OPTION_KEYS = { read = READ_KEYS, code_layer = CODE_KEYS,
                      pack = PACK_KEYS }

-- The calls as recipes make them (public.lua hands these out), and as
-- the command line does (image.trusted: the user's paths as given).
image.trusted = {}
for name, fn in pairs({ code_layer = code_layer, pack = pack }) do
  image[name] = function(spec) return fn(spec, false) end
  image.trusted[name] = function(spec) return fn(spec, true) end
end

-- The non-raising twins: try_resolve(...) -> digest, info | nil, err.
errors.add_try(image, { "parse", "resolve", "exists", "inspect",
                        "code_layer", "pack", "check_platform",
                        "check_credential" })

return image
