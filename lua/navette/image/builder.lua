-- navette.image.builder: images built from a commit or from Debian
-- packages. build{...} drives buildah, podman or docker on a Containerfile
-- of the commit; rebuild{...} builds only when the commit's lock files
-- changed and moves a pointer tag; debootstrap{...} makes a Debian base
-- image of a package list. Recipes call them as navette.image.build,
-- rebuild and debootstrap (public.lua); builder.trusted holds the same
-- calls for the command line. Side effects honour plan mode. A failure
-- raises; each function has a try_ twin returning nil, err (errors.lua).
local errors = require "navette.errors"
local image = require "navette.image"
local common = require "navette.image.common"
local confine = require "navette.image.confine"
local native, core, sys = _navette.image, _navette.core, _navette.sys

local M = {}

-- the run being evaluated (navette.context)
local current = require("navette.context").current

local fail, check, string_arg = common.fail, common.check, common.string_arg
local native_options = common.native_options
local repo_root, audit = common.repo_root, common.audit
local table_spec = common.table_spec
local confined_repo, confined_store = confine.repo, confine.store

local BUILD_KEYS = { "builder", "file", "context", "platform", "to", "tag",
                     "build_args", "labels", "repo", "commit", "credential",
                     "docker_config", "storage_root", "run_root" }

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
  table_spec("build", spec, BUILD_KEYS)
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
  table_spec("rebuild", spec, REBUILD_KEYS,
             " { to = \"registry/repo:pointer\", ... }")
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
  table_spec("debootstrap", spec, DEB_KEYS,
             " { to = ..., packages = { ... } }")
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

-- The keys each call accepts (for the LuaLS definitions: navette.luals).
M.OPTION_KEYS = { build = BUILD_KEYS, rebuild = REBUILD_KEYS,
                  debootstrap = DEB_KEYS }

-- The calls as recipes make them (public.lua hands these out), and as
-- the command line does (M.trusted: the user's paths as given).
M.trusted = {}
for name, fn in pairs({ build = build, rebuild = rebuild,
                        debootstrap = debootstrap }) do
  M[name] = function(spec) return fn(spec, false) end
  M.trusted[name] = function(spec) return fn(spec, true) end
end

-- The non-raising twins: try_build(...) -> result | nil, err.
errors.add_try(M, { "build", "debootstrap", "rebuild" })

return M
