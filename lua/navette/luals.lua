-- LuaLS definitions (a `---@meta` file, written by `navette definitions`:
-- navette.cli.definitions) of what recipes and project files reach, for
-- editors. navette.job's fields are written from navette.job.FIELDS, the
-- table its validator walks, and so is the manual's list of them
-- (job_fields_markdown). The
-- option tables of the primitives and the project file are written from
-- the key lists their validators check; their types and doc lines are
-- kept here, and the generator refuses a key list and an annotation that
-- differ, so a key added to a validator cannot go unwritten.
local errors = require "navette.errors"

local luals = {}

-- {type, doc, required = true|nil} per key of each validated option table. Must name exactly
-- the keys of the list it annotates (see OPTION_CLASSES).
local ANNOTATIONS = {
  image_read = {
    platform = { "string", "Platform of an index to use, \"linux/amd64\" "
                 .. "when unsaid (\"os/arch[/variant]\")." },
    credential = { "string|navette.creds.Handle", "A basic or bearer "
                   .. "credential: its declared name or a handle." },
    docker_config = { "string", "Where docker-style logins are read." },
    ca_bundle = { "string", "A CA bundle to trust for the registry." },
  },
  image_code_layer = {
    base = { "string", "The base image reference (resolved to its "
             .. "digest).", required = true },
    to = { "string", "The repository to push to (tagged with the commit "
           .. "unless it has a tag).", required = true },
    into = { "string", "Where the tree goes in the image (default "
             .. "/workspace)." },
    platform = { "string", "Platform of the base index to use." },
    repo = { "string", "The repository folder (default: the recipe's; "
             .. "only it or a folder of it)." },
    commit = { "string", "The commit whose tree is pushed (default "
               .. "HEAD)." },
    source = { "string", "A folder inside the tree to push alone." },
    credential = { "string|navette.creds.Handle", "Credential for `to`." },
    base_credential = { "string|navette.creds.Handle", "Credential for "
                        .. "`base`." },
    docker_config = { "string", "Where docker-style logins are read." },
    ca_bundle = { "string", "A CA bundle to trust for the registries." },
    progress = { "boolean", "Show a progress bar (command line)." },
    step = { "string", "Label of the progress lines (command line)." },
    tmp_dir = { "string", "Where the layer is staged: a folder git "
                .. "ignores in the repository, or under $NAVETTE_HOME/tmp." },
  },
  image_pack = {
    repo = { "string", "The repository folder (default: the recipe's; "
             .. "only it or a folder of it)." },
    commit = { "string", "The commit whose tree is packed (default "
               .. "HEAD)." },
    into = { "string", "Where the tree goes in the image (default "
             .. "/workspace)." },
    output = { "string", "The .tar.gz file to write: a path git ignores "
               .. "in the repository, or a new file under "
               .. "$NAVETTE_HOME/tmp.", required = true },
  },
  image_build = {
    builder = { "\"buildah\"|\"podman\"|\"docker\"", "The builder "
                .. "(default: the first installed)." },
    file = { "string", "The Containerfile, in the tree (default "
             .. "Containerfile)." },
    context = { "string", "The build context, in the tree (default "
                .. "\".\")." },
    platform = { "string", "The platform to build for." },
    to = { "string", "The repository to push to.", required = true },
    tag = { "string", "A tag instead of the commit and lock-file one." },
    build_args = { "table<string, string>", "Build arguments." },
    labels = { "table<string, string>", "Labels of the image." },
    repo = { "string", "The repository folder (default: the recipe's; "
             .. "only it or a folder of it)." },
    commit = { "string", "The commit whose tree is built (default "
               .. "HEAD)." },
    credential = { "string|navette.creds.Handle", "Credential for `to`." },
    docker_config = { "string", "Where docker-style logins are read." },
    storage_root = { "string", "The builder's storage folder: a NAME, "
                     .. "$NAVETTE_HOME/image-storage/NAME." },
    run_root = { "string", "The builder's run folder: a NAME, "
                 .. "$NAVETTE_HOME/image-run/NAME." },
  },
  image_debootstrap = {
    to = { "string", "The repository to push to; a tag in it is a "
           .. "pointer moved to the image.", required = true },
    suite = { "string", "The Debian suite (default \"bookworm\")." },
    packages = { "string[]", "The packages installed (the image's tag "
                 .. "comes from this list)." },
    variant = { "\"minbase\"|\"buildd\"", "debootstrap's variant "
                .. "(default minbase)." },
    platform = { "string", "The platform to build for (must be this "
                 .. "machine's)." },
    mirror = { "string", "The Debian mirror (default: this machine's apt "
               .. "source)." },
    rebuild = { "boolean", "Build even when the registry has the tag." },
    labels = { "string[]", "More \"KEY=VALUE\" labels." },
    credential = { "string|navette.creds.Handle", "Credential for `to`." },
    docker_config = { "string", "Where docker-style logins are read." },
    storage_root = { "string", "buildah's storage folder: a NAME, "
                     .. "$NAVETTE_HOME/image-storage/NAME." },
    run_root = { "string", "buildah's run folder: a NAME, "
                 .. "$NAVETTE_HOME/image-run/NAME." },
  },
  http = {
    method = { "string", "GET, POST, PUT, DELETE, HEAD... (default GET)." },
    headers = { "table<string, string>", "Request headers." },
    body = { "string", "The request body." },
    credential = { "navette.creds.Handle", "Sent only to the host its "
                   .. "declaration names, never after a redirect "
                   .. "elsewhere." },
    max_redirects = { "integer", "Redirects followed at most." },
    timeout = { "number", "Seconds before the request is abandoned." },
    max_body = { "integer", "The largest response body accepted, in "
                 .. "bytes." },
  },
  sweep = {
    job = { "navette.job.Spec", "The job each combination runs (its "
            .. "name is the sweep's).", required = true },
    matrix = { "table<string, (number|boolean|string)[]>", "Parameter "
               .. "name -> its values.", required = true },
    exclude = { "table<string, number|boolean|string>[]", "Combinations "
                .. "left out (each entry matches those with its values)." },
    include = { "table<string, number|boolean|string>[]", "Combinations "
                .. "added (each names a value for every key)." },
  },
  use = {
    git = { "string", "The library's repository: https://, file:// or a "
            .. "path (relative to the project's root).", required = true },
    ref = { "string", "A tag (or commit id; a branch only on profiles "
            .. "that are not pinned).", required = true },
    module = { "string", "The module to load (default \"init\": "
               .. "init.lua at the library's root)." },
  },
  project = {
    name = { "string", "The project's name (job ids start with it)." },
    profiles = { "table<string, navette.Profile>", "Targets by name; "
                 .. "`local` is built in." },
    default_profile = { "string", "The profile used without --profile." },
    credentials = { "table<string, navette.Credential>", "Credential "
                    .. "definitions: a profile uses one only when it names "
                    .. "it (its credentials list, s3.credential, "
                    .. "slurm.credential)." },
    datasets = { "table<string, string|string[]>", "Files outside the "
                 .. "repository that recipes may upload "
                 .. "(navette.storage.put(key, { dataset = NAME })): "
                 .. "absolute paths, the first that exists is taken." },
    maintenance = { "string[]", "The recipes whose tasks (navette.task) "
                    .. "`navette maintain` runs when given none: paths "
                    .. "relative to the project's folder." },
    team = { "{ git: string, ref: string, file?: string }", "The team "
             .. "policy's repository, pinned by commit in navette.lock "
             .. "(`navette lock`): git (https://, file:// or a path), ref "
             .. "(a tag), file (default \"team.lua\"). Instead of a "
             .. "team.lua beside navette.lua." },
  },
  profile = {
    storage = { "string", "The store: file:///... or s3://BUCKET/PREFIX/." },
    require_pushed = { "boolean", "Refuse commits not on the remote." },
    pinned = { "boolean", "Production: refuse a library (navette.use) "
               .. "whose ref is a branch." },
    remote = { "string", "The git remote that must hold the commit." },
    description = { "string", "A line shown in listings." },
    credentials = { "table<string, navette.Credential>", "This "
                    .. "profile's credentials." },
    max_credential_age = { "integer|string", "Older credentials are "
                           .. "refused by `creds check`." },
    max_token_lifespan = { "integer|string", "Longest token "
                           .. "navette.creds.jwt may mint (default 1 h)." },
    endpoints = { "table<string, navette.Endpoint>", "TLS settings per "
                  .. "https://host:port." },
    s3 = { "navette.profile.S3", "How the s3:// store is reached." },
    max_url_lifetime = { "integer|string", "Longest life of the URLs a "
                         .. "job gets (at most 7 days)." },
    url_margin = { "integer|string", "How long a job's URLs outlive its "
                   .. "time limit." },
    max_output_bytes = { "integer|string", "The largest output a job may "
                         .. "publish." },
    container = { "table", "The container runtime of the nodes." },
    images = { "table<string, string>", "Images by name that recipes run "
               .. "in (navette.context().images): \"catalogue\" for the "
               .. "recipe catalogue." },
    platform = { "string", "The nodes' OS/ARCH[/VARIANT] (default "
                 .. "linux/amd64): images are built and checked for it." },
  },
  s3 = {
    endpoint = { "string", "The S3 service's URL." },
    region = { "string", "The region (default us-east-1)." },
    path_style = { "boolean", "https://host/bucket/key addressing." },
    credential = { "string", "The declared s3 credential's name." },
    ca_bundle = { "string", "A CA bundle to trust." },
    pin = { "string", "The endpoint's public key, \"sha256//...\"." },
  },
  credential = {
    kind = { "\"s3\"|\"bearer\"|\"basic\"|\"hs256\"|\"pem\"|"
             .. "\"ssh-cert\"", "What the credential is.", required = true },
    source = { "\"env\"|\"file\"|\"keychain\"|\"command\"", "Where its "
               .. "value comes from (never the project file).",
               required = true },
    env = { "string|table<string, string>", "The variable(s) of source "
            .. "\"env\"." },
    path = { "string", "The file of source \"file\" (readable by its "
             .. "owner only)." },
    service = { "string", "The Keychain service (macOS)." },
    account = { "string", "The Keychain account (macOS)." },
    command = { "string[]", "The command that prints the value." },
    host = { "string", "The only host it is ever sent to." },
    description = { "string", "A line shown by `creds list`." },
    certificate = { "string", "An ssh-cert's certificate file (source "
                    .. "\"file\"; default: the key's path and -cert.pub)." },
  },
}
-- image.rebuild takes image.build's options, its `to` a pointer, and force
ANNOTATIONS.image_rebuild = {
  to = { "string", "The pointer: registry/repo:TAG, moved to each new "
         .. "build.", required = true },
  force = { "boolean", "Build even when the lock files are unchanged." },
}
for k, v in pairs(ANNOTATIONS.image_build) do
  if k ~= "to" and k ~= "tag" then ANNOTATIONS.image_rebuild[k] = v end
end

-- A profile's backend and each backend's settings table, from the files
-- of lua/navette/backends (a backend documents its settings' table in
-- settings_doc).
do
  local backends = require "navette.backends"
  local quoted = {}
  for i, n in ipairs(backends.names()) do
    quoted[i] = "\"" .. n .. "\""
    local b = backends.get(n)
    if b.profile_keys then
      ANNOTATIONS.profile[n] = { "table", b.settings_doc or (n .. " settings "
                                 .. "(backend = \"" .. n .. "\")") }
    end
  end
  ANNOTATIONS.profile.backend = { table.concat(quoted, "|"), "Where jobs run." }
end

-- The classes written from validators' key lists: class name, the list
-- (a function, so a module loads only when definitions are made), its
-- annotations, and a doc line.
local OPTION_CLASSES = {
  { "navette.image.ReadOptions", function()
      return require("navette.image").OPTION_KEYS.read end,
    "image_read", "Options of navette.image.resolve, exists and inspect." },
  { "navette.image.CodeLayerSpec", function()
      return require("navette.image").OPTION_KEYS.code_layer end,
    "image_code_layer", "What navette.image.code_layer pushes." },
  { "navette.image.PackSpec", function()
      return require("navette.image").OPTION_KEYS.pack end,
    "image_pack", "What navette.image.pack writes." },
  { "navette.image.BuildSpec", function()
      return require("navette.image.builder").OPTION_KEYS.build end,
    "image_build", "What navette.image.build builds." },
  { "navette.image.RebuildSpec", function()
      return require("navette.image.builder").OPTION_KEYS.rebuild end,
    "image_rebuild", "What navette.image.rebuild builds when the lock "
    .. "files changed." },
  { "navette.image.DebootstrapSpec", function()
      return require("navette.image.builder").OPTION_KEYS.debootstrap
    end,
    "image_debootstrap", "The Debian base image navette.image.debootstrap "
    .. "builds." },
  { "navette.http.Options", function()
      return require("navette.http").OPTIONS end,
    "http", "Options of navette.http.request (TLS is always verified)." },
  { "navette.SweepSpec", function()
      return require("navette.sweep").KEYS end,
    "sweep", "A sweep: a job and the matrix of parameters it runs "
    .. "with." },
  { "navette.UseSpec", function()
      return require("navette.library").KEYS end,
    "use", "A shared library: its repository and the ref pinned in "
    .. "navette.lock." },
  { "navette.Project", function()
      return require("navette.project").KEYS.project end,
    "project", "The project file, navette.lua at the repository's root: "
    .. "`return { name = ..., profiles = {...} }`." },
  { "navette.Profile", function()
      return require("navette.project").KEYS.profile end,
    "profile", "A profile: a target (backend, store, policies)." },
  { "navette.profile.S3", function()
      return require("navette.project").KEYS.s3 end,
    "s3", "How a profile's s3:// store is reached." },
  { "navette.Credential", function()
      return require("navette.creds").DECL_KEYS end,
    "credential", "A credential's declaration: where its value comes "
    .. "from, never the value." },
}

-- The functions recipes call, in the order they are written.
local FUNCTIONS = {
  { "navette.job", { { "spec", "navette.job.Spec" } }, "navette.job.Spec",
    "Declares a job of the run; returns the validated declaration (a "
    .. "wrong key or type is a recipe error naming the line)." },
  { "navette.sweep", { { "spec", "navette.SweepSpec" } },
    "navette.job.Spec[]", "Declares one job per combination of the "
    .. "matrix's values (each named job[key=value,...], its values in "
    .. "NAVETTE_PARAM_<KEY> and in its record's params); returns them." },
  { "navette.outputs", { { "jobs", "navette.job.Spec[]" },
    { "path", "string" } }, "table[]", "Output path of each job of a "
    .. "list (what navette.sweep returned), as one input: the job that "
    .. "takes it finds them at $NAVETTE_INPUTS/<name>/1, 2..." },
  { "navette.use", { { "spec", "navette.UseSpec" } }, "table",
    "A team's recipe library at the commit navette.lock pins, evaluated "
    .. "in the sandbox; returns its module (sealed)." },
  { "navette.task", { { "spec", "navette.task.Spec" } },
    "{name: string, schedule: string}", "Declares a scheduled task of the "
    .. "recipe, run by `navette maintain` when due (a wrong key, name or "
    .. "schedule is a recipe error naming the line)." },
  { "navette.retest", { { "spec", "{job: table, nodes: string[]?, "
      .. "baseline: string?, timeout: integer|string?}" } }, "table",
    "Submits the smoke job once per node, follows them, and compares each "
    .. "run record with that node's baseline in the store (state, phases, "
    .. "outputs' sha256; the fingerprint shown): {ok, regressions, rows, "
    .. "nodes, text}." },
  { "navette.context", {}, "navette.Context?",
    "Facts about the run in progress (nil outside one)." },
  { "navette.storage.url", { { "key", "string" } }, "string",
    "The URL of key in the profile's store." },
  { "navette.storage.put", { { "key", "string" },
    { "path", "string|{dataset: string}" } },
    "navette.storage.Object", "Uploads a file of the recipe's repository "
    .. "(a path relative to the recipe), or a dataset the project file "
    .. "declares ({ dataset = NAME }), to key." },
  { "navette.storage.put_string", { { "key", "string" },
    { "data", "string" } }, "navette.storage.Object",
    "Uploads a string to key." },
  { "navette.storage.head", { { "target", "string" } },
    "navette.storage.Object?", "An object's size and sha256 (key or URL); "
    .. "nil and an error when it is missing (other failures raise)." },
  { "navette.storage.list", { { "prefix", "string?" },
    { "opts", "{max: integer}?" } },
    "{objects: navette.storage.Object[], truncated: boolean}",
    "Objects under prefix." },
  { "navette.storage.read", { { "target", "string" },
    { "max_bytes", "integer?" } }, "string",
    "An object's bytes (key or URL)." },
  { "navette.storage.copy", { { "from", "string" }, { "to", "string" } },
    "navette.storage.Object", "A copy made by the store itself of an "
    .. "object of the profile's store (key or URL inside it) under key to "
    .. "(S3 CopyObject: its recorded sha256 travels with it); audited." },
  { "navette.storage.delete", { { "target", "string" } }, "true",
    "Deletes an object of the profile's store (key or URL inside it); one "
    .. "already gone is no error; audited." },
  { "navette.storage.sha256", { { "target", "string" },
    { "opts", "{read: boolean?, max_bytes: integer?}?" } }, "string, string",
    "An object's sha256 and how it was known: \"recorded\" (navette's "
    .. "uploads carry it), or \"read\" (its bytes read back, checked "
    .. "against the recorded one; always with read = true), up to "
    .. "max_bytes (default 64 MiB)." },
  { "navette.storage.lifecycle", { { "opts",
    "{prefix: string, expire_days: integer, id: string?}" } },
    "boolean, string", "A lifecycle rule of the profile's bucket expiring "
    .. "the objects under prefix after expire_days: true and \"applied\" or "
    .. "\"present\"; false and why where the store has none (file://, 501 "
    .. "NotImplemented) or the bucket has rules navette did not write." },
  { "navette.storage.keys", { { "opts", "{user: string, credential: string}" } },
    "string[]", "The S3 access key ids of a radosgw user, from the admin API "
    .. "at the profile's s3.endpoint signed with credential (a declared s3 "
    .. "credential of an admin with the caps users=*)." },
  { "navette.storage.create_key", { { "opts",
    "{user: string, credential: string, name: string?}" } },
    "navette.creds.Handle", "A new S3 key of a radosgw user, made by the "
    .. "server, as a handle (its id: handle:access_key_id()); audited." },
  { "navette.storage.remove_key", { { "opts",
    "{user: string, access_key: string, credential: string}" } }, "true",
    "Removes an S3 key of a radosgw user (not_found when the user has no "
    .. "such key); audited." },
  { "navette.storage.check_credential", { { "opts",
    "{credential: string|navette.creds.Handle}" } }, "true",
    "True when the server accepts a signed request (ListBuckets) with the "
    .. "credential; raises refused with the server's code otherwise." },
  { "navette.image.check_credential", { { "opts", "{registry: string, "
      .. "credential: string|navette.creds.Handle, ca_bundle: string?}" } },
    "true",
    "True when the registry accepts the credential (GET /v2/); raises "
    .. "refused on 401 or 403." },
  { "navette.image.parse", { { "ref", "string" } }, "navette.image.Ref",
    "The parts of an image reference." },
  { "navette.image.resolve", { { "ref", "string" },
    { "opts", "navette.image.ReadOptions?" } }, "string, table",
    "The digest of ref's manifest for the platform, and details." },
  { "navette.image.exists", { { "ref", "string" },
    { "opts", "navette.image.ReadOptions?" } }, "boolean, string?",
    "Whether the registry has ref, and its digest." },
  { "navette.image.inspect", { { "ref", "string" },
    { "opts", "navette.image.ReadOptions?" } }, "table",
    "Digest, platform, layers, labels, manifest and config of ref." },
  { "navette.image.code_layer", { { "spec", "navette.image.CodeLayerSpec" } },
    "navette.image.Result", "Pushes a commit's tree as one layer on a "
    .. "base; give the result to navette.job{image = ...}." },
  { "navette.image.pack", { { "spec", "navette.image.PackSpec" } }, "table",
    "Writes the layer code_layer would push; nothing is sent." },
  { "navette.image.build", { { "spec", "navette.image.BuildSpec" } },
    "navette.image.Result", "Builds the commit's tree with the installed "
    .. "builder and pushes it." },
  { "navette.image.rebuild", { { "spec", "navette.image.RebuildSpec" } },
    "table", "Builds the commit (image.build) only when its lock-file "
    .. "hash differs from the pointer's image's label, then moves the "
    .. "pointer; {built, up_to_date, reference, digest, previous}." },
  { "navette.image.debootstrap",
    { { "spec", "navette.image.DebootstrapSpec" } }, "navette.image.Result",
    "A Debian base image of a package list (debootstrap and buildah, "
    .. "Linux, as root), built only when the registry lacks its tag." },
  { "navette.image.target_platform", { { "platform", "string?" } },
    "string", "The nodes' platform: platform, else the profile's, else "
    .. "linux/amd64 (never this machine's)." },
  { "navette.image.check_platform", { { "info", "table" },
    { "platform", "string?" }, { "what", "string?" } }, "true",
    "Raises unless the image inspect described runs on the platform." },
  { "navette.creds.get", { { "name", "string" } }, "navette.creds.Handle",
    "An opaque handle on a declared credential (never its value)." },
  { "navette.creds.jwt", { { "key", "navette.creds.Handle" },
    { "opts", "{claims: table, lifespan: integer|string?, name: string?, "
      .. "job: navette.job.Spec?}" } }, "navette.creds.Handle",
    "Mints a JWT signed with key, for at most the profile's "
    .. "max_token_lifespan." },
  { "navette.creds.store", { { "name", "string" },
    { "handle", "navette.creds.Handle" } }, "true",
    "Writes handle's value where the declared source of credential name "
    .. "reads it (a file, atomically and 0600, or the macOS Keychain; a "
    .. "file of a kind other than s3 only inside navette's folders); drops "
    .. "a staged value; audited." },
  { "navette.creds.generate", { { "opts", "{kind: \"hs256\"|\"basic\", "
      .. "user: string?, length: integer?, name: string?}" } },
    "navette.creds.Handle",
    "A new random secret: an hs256 key of length bytes, or a basic "
    .. "password of length characters for user (16 to 512, default 32)." },
  { "navette.creds.htpasswd", { { "handle", "navette.creds.Handle" },
    { "cost", "integer?" } }, "string",
    "The htpasswd line (user:bcrypt hash, cost 4 to 14, default 10) of a "
    .. "basic credential." },
  { "navette.creds.stage", { { "name", "string" },
    { "handle", "navette.creds.Handle" } }, "string",
    "Keeps handle aside as the next value of credential name, in "
    .. "NAVETTE_HOME/staged/NAME (0600), and returns that path; audited." },
  { "navette.creds.staged", { { "name", "string" } },
    "navette.creds.Handle?, string?",
    "The value staged for credential name and its path, or nil." },
  { "navette.creds.declared", {}, "table<string, {kind: string, "
      .. "source: string, host: string?}>",
    "The credentials the profile declares (never a value or a path)." },
  { "navette.http.request", { { "url", "string" },
    { "opts", "navette.http.Options?" } }, "navette.http.Response",
    "An HTTP request under the profile's TLS policy." },
  { "navette.http.get", { { "url", "string" },
    { "opts", "navette.http.Options?" } }, "navette.http.Response",
    "A GET request." },
}

-- each backend's check_credential, documented by the backend
-- (check_credential_doc: backends/init.lua)
do
  local backends = require "navette.backends"
  for _, n in ipairs(backends.names()) do
    local b = backends.get(n)
    if b.check_credential then
      FUNCTIONS[#FUNCTIONS + 1] = { "navette." .. n .. ".check_credential",
        { { "opts", "{credential: string|navette.creds.Handle}" } }, "true",
        b.check_credential_doc or ("True when the " .. n .. " backend "
          .. "accepts the credential; raises refused otherwise.") }
    end
  end
end

-- Classes of results, written as they are.
local RESULT_CLASSES = [[
---@class navette.Context
---@field project string
---@field profile string
---@field plan boolean true when run by `navette plan`
---@field recipe string

---What a task's body gets (navette.task{ run = function(ctx) ... end }).
---@class navette.task.Context
---@field name string
---@field schedule string the schedule, written canonically
---@field slot string the slot this run is for (ISO-8601 UTC)
---@field missed integer slots that fell due since the last run (1 on time)
---@field last_run? string when the last run started (ISO-8601 UTC)
---@field last_result? string "ok" or "failed"
---@field last_message? string
---@field plan boolean true under `navette maintain --plan`
---@field profile string
---@field project string
---@field recipe string the recipe's path in the project

---@class navette.storage.Object
---@field url string
---@field key string
---@field sha256? string
---@field size? integer
---@field planned? boolean true in plan mode (nothing was uploaded)

---@class navette.image.Ref
---@field registry string
---@field repository string
---@field tag? string
---@field digest? string
---@field name string
---@field full string

---@class navette.image.Result
---@field reference string repository@sha256:...
---@field digest string
---@field tag? string
---@field planned? boolean

---An opaque credential: only C reads its value.
---@class navette.creds.Handle: userdata
---@field access_key_id fun(self: navette.creds.Handle): string? the id of an s3 key pair (masked in output like the rest)

---@class navette.http.Response
---@field status integer
---@field headers table<string, string>
---@field body string

---@class navette.Endpoint
---@field ca_bundle? string a CA bundle to trust
---@field pin? string the public key, "sha256//..."
]]

-- A Lua value as a short literal, for a default shown in a doc line.
local function literal(v)
  if type(v) == "string" then return string.format("%q", v) end
  if type(v) ~= "table" then return tostring(v) end
  local parts = {}
  for i, x in ipairs(v) do parts[i] = literal(x) end
  return "{" .. table.concat(parts, ", ") .. "}"
end

local function one_line(s)
  return (s:gsub("%s*\n%s*", " "))
end

-- job.FIELDS (or a nested field list) as classes: name's own first, then
-- the nested ones.
local function field_classes(out, class, doc, fields)
  local nested = {}
  out[#out + 1] = "---" .. one_line(doc)
  out[#out + 1] = "---@class " .. class
  for _, f in ipairs(fields) do
    local text = f.doc
    if f.default ~= nil and not f.fields then
      text = text .. " Default: " .. literal(f.default) .. "."
    end
    out[#out + 1] = "---@field " .. f.name .. (f.required and "" or "?")
                    .. " " .. f.type .. " " .. one_line(text)
    if f.fields then nested[#nested + 1] = f end
  end
  out[#out + 1] = ""
  for _, f in ipairs(nested) do
    field_classes(out, f.type, f.doc, f.fields)
  end
end

-- text as lines of at most width characters: the first starts with
-- first, the others with rest.
local function wrap(text, width, first, rest)
  local lines, line = {}, first
  for word in text:gmatch("%S+") do
    if #line + 1 + #word > width and #line > #rest then
      lines[#lines + 1] = line
      line = rest .. word
    elseif line == first or line == rest then
      line = line .. word
    else
      line = line .. " " .. word
    end
  end
  lines[#lines + 1] = line
  return lines
end

-- job.FIELDS (or a nested list) as a Markdown list, nested fields
-- indented under theirs.
local function field_list(out, fields, indent)
  for _, f in ipairs(fields) do
    local what = "`" .. (f.fields and "table" or f.type) .. "`"
    if f.required then what = what .. ", required" end
    local text = one_line(f.doc)
    if f.default ~= nil and not f.fields then
      text = text .. " Default: `" .. literal(f.default) .. "`."
    end
    for _, l in ipairs(wrap("`" .. f.name .. "` (" .. what .. "): " .. text,
                            76, indent .. "- ", indent .. "  ")) do
      out[#out + 1] = l
    end
    if f.fields then field_list(out, f.fields, indent .. "  ") end
  end
end

-- The manual's list of navette.job's fields, made from job.FIELDS
-- (tests/lua/definitions_test.lua checks that doc/recipes.md holds it).
function luals.job_fields_markdown()
  local out = {}
  field_list(out, require("navette.job").FIELDS, "")
  return table.concat(out, "\n") .. "\n"
end

local function sorted(t)
  local list = {}
  for k in pairs(t) do list[#list + 1] = k end
  table.sort(list)
  return list
end

-- A class from a validator's key list and its annotations; raises when
-- they differ.
local function option_class(out, class, keys, annotations, doc)
  local listed = {}
  for _, k in ipairs(keys) do
    listed[k] = true
    if not annotations[k] then
      errors.raise("invalid", "navette definitions: " .. class .. " has "
                   .. "no type or doc for '" .. k .. "', a key its "
                   .. "validator accepts", "add it to ANNOTATIONS in "
                   .. "lua/navette/luals.lua")
    end
  end
  for _, k in ipairs(sorted(annotations)) do
    if not listed[k] then
      errors.raise("invalid", "navette definitions: " .. class .. " "
                   .. "annotates '" .. k .. "', which its validator does "
                   .. "not accept", "remove it from ANNOTATIONS in "
                   .. "lua/navette/luals.lua")
    end
  end
  out[#out + 1] = "---" .. doc
  out[#out + 1] = "---@class " .. class
  for _, k in ipairs(keys) do
    local a = annotations[k]
    out[#out + 1] = "---@field " .. k .. (a.required and " " or "? ")
                    .. a[1] .. " " .. a[2]
  end
  out[#out + 1] = ""
end

-- The definitions as one ---@meta file (a string).
-- The documented functions, "job", "storage.put", ... (the public API
-- must be exactly these: tests/lua/sandbox_test.lua).
function luals.functions()
  local names = {}
  for i, f in ipairs(FUNCTIONS) do names[i] = f[1]:gsub("^navette%.", "") end
  return names
end

function luals.generate()
  local job = require "navette.job"
  local out = {
    "---@meta navette",
    "-- LuaLS definitions of navette's recipe API, generated by `navette "
    .. "definitions`",
    "-- from the tables navette's validators use. Do not edit: "
    .. "regenerate.",
    "-- navette " .. tostring(_navette.core.version()),
    "",
  }
  field_classes(out, "navette.job.Spec", "A job's declaration: "
                .. "navette.job{...}.", job.FIELDS)
  field_classes(out, "navette.task.Spec", "A scheduled task's "
                .. "declaration: navette.task{...}.",
                require("navette.task").FIELDS)
  for _, c in ipairs(OPTION_CLASSES) do
    option_class(out, c[1], c[2](), ANNOTATIONS[c[3]], c[4])
  end
  out[#out + 1] = RESULT_CLASSES
  out[#out + 1] = "---@class navette"
  out[#out + 1] = "---@field version string navette's version"
  out[#out + 1] = "local navette = {}"
  out[#out + 1] = ""
  local tables = {}
  for _, f in ipairs(FUNCTIONS) do
    local owner = f[1]:match("^(.*)%.[^.]+$")
    if owner ~= "navette" and not tables[owner] then
      tables[owner] = true
      out[#out + 1] = owner .. " = {}"
      out[#out + 1] = ""
    end
    out[#out + 1] = "---" .. f[4]
    local names = {}
    for i, p in ipairs(f[2]) do
      local optional = p[2]:sub(-1) == "?"
      local ptype = optional and p[2]:sub(1, -2) or p[2]
      out[#out + 1] = "---@param " .. p[1] .. (optional and "? " or " ")
                      .. ptype
      names[i] = p[1]
    end
    out[#out + 1] = "---@return " .. f[3]
    out[#out + 1] = "function " .. f[1] .. "(" .. table.concat(names, ", ")
                    .. ") end"
    out[#out + 1] = ""
  end
  out[#out + 1] = "return navette"
  return table.concat(out, "\n") .. "\n"
end

return luals
