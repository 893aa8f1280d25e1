-- `navette image`: images from the command line (resolve, inspect, exists,
-- push-code, pack, build). A thin layer over navette.image: flags parsed by
-- navette.args, credentials found like in recipes (the project's declared
-- basic/bearer credential for the registry's host, --credential NAME, or
-- ~/.docker/config.json), results on stdout, progress on stderr and only
-- on a terminal. Errors are raised as error objects; navette.cli maps them
-- to exit codes (2 usage, 3 refused, 4 backend).
local errors = require "navette.errors"
local subcommand = require "navette.cli.subcommand"
local term = require "navette.term"
local util = require "navette.util"
local image = require "navette.image"
local builder = require "navette.image.builder"
local sys, out, json = _navette.sys, _navette.out, _navette.json

local COMMON = [[
common options:
  --platform OS/ARCH[/VARIANT]  the platform of an index to use
                                (default linux/amd64)
  --credential NAME   a basic or bearer credential declared in navette.lua
  --profile P         the profile that declares it
  --docker-config PATH  where docker-style logins are read (default
                      $DOCKER_CONFIG/config.json, ~/.docker/config.json)
  --ca-bundle PATH    trust these CA certificates
  --json              print the result as JSON
  Plain http is used, and accepted, only for registries on loopback.]]

local HELP = {
  resolve = [[
usage: navette image resolve REF [options]
  Prints REPO@sha256:... of REF (a tag is resolved to the digest of its
  manifest; an index to the entry of the platform).]],
  inspect = [[
usage: navette image inspect REF [options]
  Shows the digest, platform, layers and labels of REF; --json adds the
  manifest and config as the registry holds them.]],
  exists = [[
usage: navette image exists REF [options]
  Exit 0 when the registry has REF, 1 when it does not.]],
  ["push-code"] = [[
usage: navette image push-code --base REF --to REPO [--repo DIR]
         [--commit SHA] [--into PATH] [--base-credential NAME] [options]
  Pushes the repository's tree at the commit (default HEAD) as one
  deterministic layer under PATH (default /workspace) on top of the base,
  resolved to its digest; tagged with the commit (12 hex digits) unless
  REPO has a tag. No builder, no daemon. The tree is scanned for secrets
  first. Blobs the registry has are not sent again. Prints REPO@sha256:...;
  a progress bar shows on a terminal.]],
  pack = [[
usage: navette image pack --output FILE [--repo DIR] [--commit SHA]
         [--into PATH] [--json]
  Writes the layer push-code would push (a deterministic .tar.gz) and
  prints its diff_id and digest. Nothing is sent.]],
  build = [[
usage: navette image build --to REPO [--file F] [--context DIR]
         [--builder buildah|podman|docker] [--repo DIR] [--commit SHA]
         [--storage-root DIR --run-root DIR] [options]
  Builds F (default Containerfile) of the commit's tree (not the working
  folder) with the installed builder (buildah and podman: vfs storage,
  chroot isolation), tags it with the commit and the lock-file hash
  unless REPO has a tag, pushes it and prints REPO@sha256:...]],
}
local VERBS = { "resolve", "inspect", "exists", "push-code", "pack", "build" }

local COMMON_FLAGS = { platform = "value", credential = "value",
                       profile = "value", ["docker-config"] = "value",
                       ["ca-bundle"] = "value", json = "bool" }

local cmd = subcommand.new { name = "image", verbs = VERBS, help = HELP,
                             common = COMMON, common_flags = COMMON_FLAGS }

-- The project's credentials (when run inside a repository), so a declared
-- credential bound to a registry host is found.
local function load_project(opts, dir)
  local project = require "navette.project"
  local creds = require "navette.creds"
  local where = dir or sys.cwd()
  local repo = _navette.git.open(where)
  local root = repo and repo:workdir() or nil
  if repo then repo:close() end
  if not root then
    if opts.credential then
      cmd:usage_error("--credential needs a project (navette.lua) in a git "
                      .. "repository")
    end
    require("navette.context").enter()
    return nil
  end
  local proj = project.load(where, root)
  local profile = project.profile(proj, opts.profile)
  require("navette.context").enter { profile = profile, project = proj }
  return root
end

-- resolve, exists and inspect are read-only: they run no program, so a
-- credential bound to the registry's host in the project file is not
-- loaded if its source is a command (see navette.cli, read_only). One
-- named with --credential is loaded on request, as `creds check NAME`
-- does.
local function read_only(opts)
  if not opts.credential then _navette.core.forbid_exec() end
end

local function read_opts(opts)
  return { platform = opts.platform, credential = opts.credential,
           docker_config = opts["docker-config"],
           ca_bundle = opts["ca-bundle"] }
end

local function one_ref(verb, args)
  if #args ~= 1 then cmd:usage_error("expected one image reference", verb) end
  return args[1]
end

-- A read-only verb on one reference, with the project loaded:
-- run(ref, opts) does the rest.
local function read_verb(verb, run)
  return function(argv)
    local opts, args = cmd:parse(verb, argv)
    if opts.help then return cmd:print_help(verb) end
    local ref = one_ref(verb, args)
    read_only(opts)
    load_project(opts)
    return run(ref, opts)
  end
end

local cmd_resolve = read_verb("resolve", function(ref, opts)
  local _, info = image.resolve(ref, read_opts(opts))
  if opts.json then term.print(json.encode(info, true)) return 0 end
  term.print(info.reference)
  return 0
end)

local cmd_exists = read_verb("exists", function(ref, opts)
  local present, digest = image.exists(ref, read_opts(opts))
  if opts.json then
    term.print(json.encode({ exists = present, digest = digest }, true))
  elseif present then
    term.print(digest)
  end
  return present and 0 or 1
end)

local cmd_inspect = read_verb("inspect", function(ref, opts)
  local info = image.inspect(ref, read_opts(opts))
  if opts.json then
    info.manifest_json, info.config_json = nil, nil
    term.print(json.encode(info, true))
    return 0
  end
  term.printf("%-10s %s\n", "reference", info.reference)
  if info.index_digest then
    term.printf("%-10s %s\n", "index", info.index_digest)
  end
  term.printf("%-10s %s\n", "platform", info.platform)
  term.printf("%-10s %s\n", "type", info.media_type)
  term.printf("%-10s %s\n", "config", info.config_digest)
  if type(info.config) == "table" and info.config.created then
    term.printf("%-10s %s\n", "created", tostring(info.config.created))
  end
  term.printf("layers (%d):\n", #info.layers)
  for _, l in ipairs(info.layers) do
    term.printf("  %s %10s  %s\n", l.digest, util.human_size(l.size),
                l.media_type)
  end
  local keys = util.sorted_keys(info.labels)
  if #keys > 0 then
    term.print("labels:")
    for _, k in ipairs(keys) do
      term.printf("  %s=%s\n", k, tostring(info.labels[k]))
    end
  end
  return 0
end)

-- A progress bar on stderr, on a terminal only (term.progress, the one
-- storage cp draws too): one line per blob, labelled by its digest.
local function progress_printer()
  local progress = term.progress("stderr")
  if not progress.tty then return nil, function() end end
  local function bar(digest, done, total)
    progress:update("upload " .. digest:sub(8, 19), done, total)
    if done >= total then progress:done() end
  end
  local function step(name, detail)
    progress:done()
    term.write_styled("stderr", "dim", name .. ": " .. detail)
    out.write("stderr", "\n")
  end
  return bar, step
end

-- push-code, pack and build take flags, no argument; required lists the
-- flags that must be given, in order: {name, "--NAME WHAT"}.
local function flags_only(verb, opts, args, required)
  if #args > 0 then
    cmd:usage_error("unexpected argument " .. args[1], verb)
  end
  for _, r in ipairs(required) do
    if not opts[r[1]] then cmd:usage_error(r[2] .. " is required", verb) end
  end
end

local function cmd_push_code(argv)
  local opts, args = cmd:parse("push-code", argv, {
    base = "value", to = "value", repo = "value", commit = "value",
    into = "value", ["base-credential"] = "value" })
  if opts.help then return cmd:print_help("push-code") end
  flags_only("push-code", opts, args, { { "base", "--base REF" },
                                         { "to", "--to REPO" } })
  local root = load_project(opts, opts.repo)
  if not root then
    error(errors.new("refused", "not in a git repository: "
                     .. (opts.repo or sys.cwd()), "run it in the "
                     .. "repository, or pass --repo DIR"), 0)
  end
  local bar, step = progress_printer()
  local res = image.trusted.code_layer {
    base = opts.base, to = opts.to, repo = root, commit = opts.commit,
    into = opts.into, platform = opts.platform,
    credential = opts.credential, base_credential = opts["base-credential"],
    docker_config = opts["docker-config"], ca_bundle = opts["ca-bundle"],
    progress = bar, step = step,
  }
  if opts.json then term.print(json.encode(res, true)) return 0 end
  term.print(res.reference)
  return 0
end

local function cmd_pack(argv)
  local opts, args = cmd:parse("pack", argv, {
    output = "value", repo = "value", commit = "value", into = "value" })
  if opts.help then return cmd:print_help("pack") end
  flags_only("pack", opts, args, { { "output", "--output FILE" } })
  local res = image.trusted.pack { repo = opts.repo or sys.cwd(),
                                   commit = opts.commit, into = opts.into,
                                   output = opts.output }
  if opts.json then term.print(json.encode(res, true)) return 0 end
  term.printf("%-8s %s\n", "commit", res.commit)
  term.printf("%-8s %s (%d bytes uncompressed)\n", "diff_id", res.diff_id,
              res.tar_size)
  term.printf("%-8s %s (%d bytes)\n", "digest", res.layer_digest,
              res.layer_size)
  term.printf("%-8s %d files, %d folders, %d symlinks\n", "entries",
              res.files, res.dirs, res.symlinks)
  return 0
end

local function cmd_build(argv)
  local opts, args = cmd:parse("build", argv, {
    to = "value", file = "value", context = "value", builder = "value",
    repo = "value", commit = "value", ["storage-root"] = "value",
    ["run-root"] = "value" })
  if opts.help then return cmd:print_help("build") end
  flags_only("build", opts, args, { { "to", "--to REPO" } })
  local root = load_project(opts, opts.repo)
  if not root then
    error(errors.new("refused", "not in a git repository", "run it in the "
                     .. "repository, or pass --repo DIR"), 0)
  end
  local res = builder.trusted.build {
    to = opts.to, file = opts.file, context = opts.context,
    builder = opts.builder, platform = opts.platform, repo = root,
    commit = opts.commit, credential = opts.credential,
    docker_config = opts["docker-config"],
    storage_root = opts["storage-root"], run_root = opts["run-root"] }
  if opts.json then term.print(json.encode(res, true)) return 0 end
  term.print(res.reference)
  return 0
end

cmd.commands = { resolve = cmd_resolve, inspect = cmd_inspect,
                 exists = cmd_exists, ["push-code"] = cmd_push_code,
                 pack = cmd_pack, build = cmd_build }

local M = {
  name = "image",
  summary = { { "image VERB ...", "images by digest, code layers" } },
  usage = [[
usage: navette image resolve|inspect|exists|push-code|pack|build ...
  Images pinned by digest; push-code pushes a commit as a code layer
  (see `navette image help`).]],
  flags = COMMON_FLAGS, -- those every verb takes; each verb adds its own
  -- resolve, inspect and exists forbid programs themselves (read_only
  -- above): they may load a credential --credential names
  read_only = false,
}

-- argv without "image"; returns the exit status (errors raise).
function M.run(argv) return cmd:main(argv) end

return M
