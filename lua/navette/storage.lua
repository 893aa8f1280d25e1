-- navette.storage: the recipe's view of object storage. Keys are relative
-- to the profile's store, file:/// or s3:// (navette.s3store, the same
-- calls); URLs (file:///..., s3://BUCKET/KEY) name objects anywhere. A path
-- given to put() is read from the recipe's repository, never from outside
-- it, unless the project file names it as a dataset. Every side effect
-- honours plan mode.
local errors = require "navette.errors"
local util = require "navette.util"
local native, sys, core = _navette.storage, _navette.sys, _navette.core

local storage = {}

-- The run's scope (navette.context): profile, repository root, datasets.
local scope = require("navette.context").scope

-- A URL in another profile's storage is refused (navette.isolation).
local function check_isolation(target, what)
  require("navette.isolation").check_url(scope().profile, target, what)
end

-- The profile's s3:// store, opened once per run (its credential too).
local function s3_store()
  if not scope().s3 then
    scope().s3 = require("navette.s3store").open(scope().profile)
    scope().s3.shared = true -- callers' close() leaves it open
  end
  return scope().s3
end
function storage._s3() return s3_store() end

local function store_root()
  local profile = scope().profile
  if not profile then
    errors.raise("usage", "navette.storage needs a profile: run the recipe "
                 .. "with `navette run` or `navette plan`")
  end
  return profile.storage
end

-- Whether the run's project may bind what it declares (navette.trust):
-- its data sets, its declared profiles' stores. Before it is trusted a
-- plan reads none of them (no file of the user's reaches the recipe),
-- and a run is refused.
local function untrusted(what)
  local proj = scope().project
  if not proj or proj.trusted ~= false then return false end
  if not core.plan_mode() then
    error(require("navette.trust").refusal(proj, what), 0)
  end
  return true
end

local function open_store(create)
  local root = store_root()
  if not scope().profile.builtin
     and untrusted("the store of profile " .. tostring(scope().profile.name))
  then
    return nil -- a plan: nothing read, what would change is recorded
  end
  if scope().profile.s3 then return s3_store() end
  if create and core.plan_mode() then create = false end
  local store, err = native.open(root, create)
  if not store and not core.plan_mode() then
    errors.check(nil, err, "cannot open the store " .. root)
  end
  return store
end

-- URL of key in the profile's store.
function storage.url(key)
  if type(key) ~= "string" then
    errors.raise("recipe", "navette.storage.url: key must be a string")
  end
  if scope().profile and scope().profile.s3 then
    return s3_store():url(key)
  end
  local store = open_store(false)
  if store then return errors.check(store:url(key)) end
  return store_root():gsub("/$", "") .. "/" .. util.url_encode(key, true)
end

-- A path with its "." and ".." steps and repeated slashes taken away, as
-- text (nothing on disk is read).
local function lexical(path)
  local parts = {}
  for part in path:gmatch("[^/]+") do
    if part == ".." then
      parts[#parts] = nil
    elseif part ~= "." then
      parts[#parts + 1] = part
    end
  end
  return "/" .. table.concat(parts, "/")
end

-- A path of the recipe's repository, resolved and checked to stay inside.
-- What a recipe learns of a path outside is one answer, whether it exists
-- or not (a pcall must not tell the files of the machine): a path that
-- leaves the repository as written is refused before anything is read,
-- and one whose symlinks lead out of it answers as a missing one does.
-- A file git ignores was never committed nor scanned with the commit: it
-- is refused too.
local function repository_file(path)
  if type(path) ~= "string" or path == "" then
    errors.raise("recipe", "navette.storage.put: the source must be a path "
                 .. "relative to the recipe")
  end
  local full = util.join(scope().recipe_dir or sys.cwd(), path)
  local root = scope().repo_root and (sys.realpath(scope().repo_root)
                                      or scope().repo_root)
  local outside = "recipes upload files that are part of their repository, "
                  .. "or a dataset the project file declares"
  if root and not (sys.path_within(lexical(full), root)
                   or sys.path_within(lexical(full), scope().repo_root)) then
    errors.raise("refused", "navette.storage.put: '" .. path
                 .. "' is outside the repository", outside)
  end
  -- a missing file is a missing input, refused (exit 3) as a missing
  -- input URL is, on every system (macOS's realpath resolves a path
  -- whose last name does not exist: stat says it is missing)
  local real = sys.realpath(full)
  local st = real and sys.stat(real)
  if not st or (root and not sys.path_within(real, root)) then
    errors.raise("refused", "navette.storage.put: '" .. path .. "' is not "
                 .. "a file of the repository (it is missing, or a symlink "
                 .. "leads out of it)", "the path is relative to the "
                 .. "recipe's folder; " .. outside)
  end
  if st.type ~= "file" then
    errors.raise("recipe", "navette.storage.put: '" .. path
                 .. "' is not a file (a " .. tostring(st.type) .. ")",
                 "put uploads one regular file: name a file in it")
  end
  if root and real ~= root then
    local repo = _navette.git.open(root)
    local state = repo and repo:path_state(real:sub(#root + 2))
    if repo then repo:close() end
    if state == "ignored" then
      errors.raise("refused", "navette.storage.put: '" .. path .. "' is "
                   .. "ignored by git: it was never committed nor scanned "
                   .. "with the commit", "commit it (git add -f), or "
                   .. "declare it as a dataset in navette.lua (datasets = "
                   .. "{ NAME = { \"/absolute/path\" } }) and upload "
                   .. "{ dataset = NAME }")
    end
  end
  return real
end

-- Refuses an upload whose scan found what looks like secrets.
local function refuse_findings(report, what, hint)
  if #report.findings == 0 then return end
  local lines = {}
  for i, f in ipairs(report.findings) do
    if i > 20 then
      lines[#lines + 1] = "  ... and " .. (#report.findings - 20) .. " more"
      break
    end
    lines[#lines + 1] = "  " .. f.path .. (f.line > 0 and (":" .. f.line)
                        or "") .. ": " .. f.reason .. " [" .. f.rule .. "]"
  end
  errors.raise("refused", what .. " holds what looks like secrets:\n"
               .. table.concat(lines, "\n"), hint)
end

-- Every local file that leaves the laptop is scanned for secrets first,
-- under the repository's allow-list (.navette-secrets-allow).
local function scan_upload(src, path)
  local root = scope().repo_root
  local inside = root and src:sub(1, #root + 1) == root .. "/"
  local shown = inside and src:sub(#root + 2) or path
  local allow
  if root then
    local f = io.open(root .. "/.navette-secrets-allow", "rb")
    if f then allow = f:read("a"); f:close() end
  end
  local report, err = _navette.creds.scan_file(src, shown, allow)
  errors.check(report, err, "navette.storage.put: scanning '" .. path .. "'")
  refuse_findings(report, "navette.storage.put: '" .. path .. "'",
                  "remove them (and rotate them), or exempt the path with a "
                  .. "written reason in .navette-secrets-allow")
end

-- What an upload returns, recorded: a planned one (plan mode, and the
-- checking pass of a run) is noted so that the jobs declared after it see
-- the input as present; a done one is audited.
local function uploaded(info)
  if info.planned then
    scope().planned[info.url] = info
  else
    require("navette.audit").record({ action = "storage.put",
      target = info.url, detail = "sha256 " .. info.sha256 },
      scope().profile)
  end
  return info
end

-- Where a data set never lives, whatever the project file says: the
-- system's pseudo-files and configuration, other users' and root's
-- homes, and the folders of the user's keys and credentials. Compared
-- after symlinks are resolved (as written too), case-insensitively where
-- the volume folds case.
local SYSTEM_FOLDERS = { "/proc", "/sys", "/dev", "/etc", "/var", "/root",
                         "/private/etc", "/private/var", "/boot", "/run" }
local HOME_FOLDERS = { ".ssh", ".aws", ".config", ".navette", ".kube",
                       ".gnupg", ".docker", ".netrc", ".git-credentials",
                       ".pgpass", ".password-store", "Library/Keychains" }

-- The folders refused, each {path, var}: var for /var, which on macOS
-- holds the user's temporary folder ($TMPDIR, /var/folders/...), where a
-- data set may be staged.
local function forbidden_folders()
  local list = {}
  local function add(p, var)
    if not p or p == "" then return end
    list[#list + 1] = { p, var }
    local r = sys.realpath(p)
    if r and r ~= p then list[#list + 1] = { r, var } end
  end
  for _, f in ipairs(SYSTEM_FOLDERS) do
    add(f, f == "/var" or f == "/private/var")
  end
  local home = sys.getenv("HOME")
  if home and home ~= "" and home ~= "/" then
    for _, f in ipairs(HOME_FOLDERS) do add(home .. "/" .. f) end
  end
  add(core.home())
  return list
end

-- The user's temporary folder, when it lies under /var.
local function temporary_folder()
  local t = sys.getenv("TMPDIR")
  return t and t ~= "" and sys.realpath(t) or nil
end

local function forbidden(path, list, tmp)
  for _, f in ipairs(list) do
    if sys.path_within(path, f[1], true)
       and not (f[2] and tmp and tmp ~= f[1] and sys.path_within(tmp, f[1], true)
                and sys.path_within(path, tmp)) then
      return true
    end
  end
  return false
end

-- A dataset of the project file (datasets = { NAME = { paths... } }): the
-- first of its paths that is a regular file on this machine and outside
-- the folders above. The project file, not the recipe, says which files
-- outside the repository a recipe may upload. A path refused and a path
-- missing give one answer: the recipe learns nothing of which it was.
-- A library's put may name the data set's paths itself ({ dataset = NAME,
-- paths = { ... } }): the paths it ships with, used when the project file
-- does not declare NAME (the project's own paths come first), under the
-- same trust gate, and never under the user's home (a library must not
-- pick the user's own files: the project file names those). A project's
-- own recipe passing paths gets them ignored.
local function library_paths(source, lib)
  local paths = source.paths
  -- (a project's own recipe: only its project file names files outside
  -- the repository, so the paths are not looked at)
  if paths == nil or not lib then return nil end
  if type(paths) == "string" then paths = { paths } end
  if type(paths) ~= "table" or #paths == 0 then
    errors.raise("recipe", "navette.storage.put: paths must be a list of "
                 .. "absolute paths")
  end
  for i, p in ipairs(paths) do
    if type(p) ~= "string" or p:sub(1, 1) ~= "/" then
      errors.raise("recipe", "navette.storage.put: paths[" .. i .. "] "
                   .. "must be an absolute path")
    end
  end
  return paths
end

local function dataset_file(source, lib)
  local name = source.dataset
  if type(name) ~= "string" then
    errors.raise("recipe", "navette.storage.put: the source is a path "
                 .. "relative to the recipe, or { dataset = NAME }")
  end
  local datasets = scope().datasets or {}
  local shipped = library_paths(source, lib)
  local paths = datasets[name] or shipped
  local from_library = shipped and not datasets[name]
  if paths and untrusted("dataset " .. name) then
    -- a plan before trust: the paths are not looked at
    return nil, "dataset " .. name
  end
  if not paths then
    local names = util.sorted_keys(datasets)
    errors.raise("recipe", "navette.storage.put: dataset '" .. name
                 .. "' is not declared in the project file"
                 .. util.suggest(name, names),
                 "declare it in navette.lua: datasets = { "
                 .. util.lua_key(name) .. " = { \"/absolute/path\", ... } }")
  end
  local list, tmp = forbidden_folders(), temporary_folder()
  local home = sys.getenv("HOME")
  if from_library and home and home ~= "" and home ~= "/" then
    list[#list + 1] = { home }
    local r = sys.realpath(home)
    if r and r ~= home then list[#list + 1] = { r } end
  end
  for _, path in ipairs(paths) do
    -- as written first: a refused path is not looked at
    if type(path) == "string" and not forbidden(lexical(path), list, tmp) then
      local real = sys.realpath(path)
      local st = real and not forbidden(real, list, tmp) and sys.stat(real)
      if st and st.type == "file" then return real, path end
    end
  end
  errors.raise("refused", "navette.storage.put: dataset '" .. name
               .. "': none of its paths is a file navette uploads on this "
               .. "machine (" .. table.concat(paths, ", ") .. ")"
               .. (from_library and " (the paths its library ships "
                   .. "with)" or ""),
               "install what ships it, or add its path on this machine to "
               .. "the project file's datasets." .. name .. " (a data set "
               .. "is a regular file, never under /proc, /sys, /dev, /etc, "
               .. "/var, /root, ~/.ssh, ~/.aws, ~/.config, ~/.kube, "
               .. "~/.gnupg or navette's home; a library's paths never "
               .. "under your home)")
end

-- storage.put(key, path) -> {url, key, sha256, size}. lib: the library
-- whose code calls it (library.lua's, never a recipe's argument).
function storage.put(key, path, lib)
  if type(key) ~= "string" then
    errors.raise("recipe", "navette.storage.put: key must be a string")
  end
  local src
  if type(path) == "table" then
    src, path = dataset_file(path, lib)
    if not src then -- (a plan of a project not trusted yet)
      core.plan("storage", "put", storage.url(key) .. " <- " .. path
                .. " (its paths are not read until the project is trusted)")
      return uploaded({ key = key, url = storage.url(key), planned = true })
    end
  else
    src = repository_file(path)
  end
  scan_upload(src, path)
  local store = open_store(true)
  if not store then -- plan mode with a store that does not exist yet
    core.plan("storage", "put", storage.url(key) .. " <- " .. src)
    return uploaded({ key = key, url = storage.url(key), planned = true })
  end
  local info, err = store:put(key, src)
  store:close()
  return uploaded(errors.check(info, err, "navette.storage.put '" .. key
                                           .. "'"))
end

function storage.put_string(key, s)
  if type(key) ~= "string" or type(s) ~= "string" then
    errors.raise("recipe", "navette.storage.put_string(key, string)")
  end
  -- text made by the recipe leaves the laptop too: scanned the same way
  refuse_findings(_navette.creds.scan_string(s, key),
                  "navette.storage.put_string: the text for '" .. key .. "'",
                  "remove them (and rotate them); no allow-list covers a "
                  .. "recipe's own text: to upload a reviewed fixture, "
                  .. "commit it as a file listed in .navette-secrets-allow "
                  .. "and use navette.storage.put")
  local store = open_store(true)
  if not store then
    core.plan("storage", "put", storage.url(key) .. " <- (" .. #s
              .. " bytes)")
    return uploaded({ key = key, url = storage.url(key), planned = true })
  end
  local info, err = store:put_string(key, s)
  store:close()
  return uploaded(errors.check(info, err, "navette.storage.put_string '"
                                           .. key .. "'"))
end

-- The store's answer to head: info | nil, err (whatever the failure).
local function head_answer(target)
  local store, key
  local allowed, refusal = pcall(check_isolation, target,
                                 "navette.storage.head")
  if not allowed then return nil, errors.from(refusal) end
  if type(target) == "string" and target:match("^s3://") then
    if not (scope().profile and scope().profile.s3) then
      return nil, { code = "refused", message = "s3:// objects need a "
                    .. "profile with s3:// storage" }
    end
    return s3_store():head(target)
  elseif type(target) == "string" and target:match("^file://") then
    local root, k = native.find(target)
    if not root then return nil, k end
    store, key = native.open(root), k
  else
    store, key = open_store(false), target
  end
  if not store then
    return nil, { code = "not_found", message = "no store yet" }
  end
  local info, err = store:head(key)
  store:close()
  return info, err
end

-- head(key_or_url) -> info, or nil and a not_found error when the object
-- is missing (a result, not a failure); any other failure raises.
function storage.head(target)
  local info, err = head_answer(target)
  if info == nil and not (err and err.code == "not_found") then
    errors.check(nil, err)
  end
  return info, err
end

function storage.list(prefix, opts)
  local store = open_store(false)
  if not store then return { objects = {}, truncated = false } end
  local result, err = store:list(prefix or "", opts)
  store:close()
  return errors.check(result, err)
end

function storage.read(target, max_bytes)
  local store, key
  check_isolation(target, "navette.storage.read")
  if type(target) == "string" and target:match("^s3://") then
    if not (scope().profile and scope().profile.s3) then
      errors.raise("refused", "s3:// objects need a profile with s3:// "
                   .. "storage")
    end
    return errors.check(s3_store():read(target, max_bytes))
  elseif type(target) == "string" and target:match("^file://") then
    local root, k = native.find(target)
    errors.check(root, k)
    store, key = native.open(root), k
  else
    store, key = open_store(false), target
  end
  if not store then errors.raise("not_found", "no object " .. target) end
  local data, err = store:read(key, max_bytes)
  store:close()
  return errors.check(data, err)
end

-- ---- copies, deletions, checksums and lifecycle ------------------------
-- What moving objects inside the profile's store needs (archive-logs):
-- a copy made by the store itself (CopyObject on S3: the bytes never come
-- here, the recorded sha256 travels with them), a deletion, the sha256 of
-- an object (the recorded one, or the bytes read back), and a bucket
-- lifecycle rule. A target is a key of the store or a URL inside it. Each
-- change is audited; plan mode records it and does nothing.

-- The profile's store (s3store or file store object) and the target as
-- that store takes it (a key, or an s3:// URL of the profile's bucket).
local function own_target(what, target)
  if type(target) ~= "string" or target == "" then
    errors.raise("recipe", what .. ": the object is a key of the store or "
                 .. "a URL inside it")
  end
  store_root()
  check_isolation(target, what)
  if scope().profile.s3 then
    local bucket, key = target:match("^s3://([^/]+)/(.*)$")
    local root = scope().profile.s3.root or ""
    if target:match("^%a[%w+.-]*://") and (bucket ~= scope().profile.s3.bucket
       or key:sub(1, #root) ~= root) then
      errors.raise("refused", what .. ": " .. target .. " is not in the "
                   .. "profile's store (s3://" .. scope().profile.s3.bucket
                   .. "/" .. root .. ")", "name a key of the store")
    end
    return s3_store(), target
  end
  local key = target
  if target:match("^%a[%w+.-]*://") then
    local root, k = native.find(target)
    local mine = open_store(false)
    local own = mine and root and root == mine:root()
    if mine then mine:close() end
    if not own then
      errors.raise("refused", what .. ": " .. target .. " is not in the "
                   .. "profile's store (" .. store_root() .. ")",
                   "name a key of the store")
    end
    key = k
  end
  local store = open_store(false)
  if not store then errors.raise("not_found", what .. ": no object "
                                 .. target .. " (no store yet)") end
  return store, key
end

local function target_url(target)
  if target:match("^%a[%w+.-]*://") then return target end
  return storage.url(target)
end

local function audit(entry)
  require("navette.audit").record(entry, scope().profile)
end

-- copy(from, to) -> info of the copy {url, key, size, sha256 (when the
-- object records it), etag (S3)}: from a key or URL of the profile's
-- store to key to of the same store, made by the store.
function storage.copy(from, to)
  local what = "navette.storage.copy"
  if type(to) ~= "string" or to == "" or to:match("^%a[%w+.-]*://") then
    errors.raise("recipe", what .. "(from, to): to is a key of the store")
  end
  local store, src = own_target(what, from)
  if core.plan_mode() then
    if store.close then store:close() end
    core.plan("storage", "copy", storage.url(to) .. " <- "
              .. target_url(from))
    return { key = to, url = storage.url(to), planned = true }
  end
  local info, err = store:copy(src, to)
  store:close()
  info = errors.check(info, err, what .. " " .. target_url(from) .. " -> "
                      .. to)
  info.key, info.url = to, info.url or storage.url(to)
  audit({ action = "storage.copy", target = info.url,
          detail = "from " .. target_url(from) .. ", " .. info.size
                   .. " bytes" .. (info.sha256 and (", sha256 "
                   .. info.sha256) or "") })
  return info
end

-- delete(target) -> true; an object already gone is no error (S3 says
-- the same of a DeleteObject).
function storage.delete(target)
  local what = "navette.storage.delete"
  local store, key = own_target(what, target)
  local url = target_url(target)
  if core.plan_mode() then
    store:close()
    core.plan("storage", "delete", url)
    return true
  end
  local ok, err = store:delete(key)
  store:close()
  if not ok and not (err and err.code == "not_found") then
    errors.check(nil, err, what .. " " .. url)
  end
  audit({ action = "storage.delete", target = url })
  return true
end

local SHA256_READ_MAX = 64 * 1024 * 1024

-- sha256(target, {read = bool, max_bytes = N}) -> hex, how: the sha256
-- the object records ("recorded": navette's uploads carry it), else, or
-- with read = true always, that of its bytes read back ("read", checked
-- against the recorded one), objects up to max_bytes (default 64 MiB).
-- In plan mode nothing is read: the recorded one, or nil ("unknown").
function storage.sha256(target, opts)
  local what = "navette.storage.sha256"
  opts = opts or {}
  if type(opts) ~= "table" then
    errors.raise("recipe", what .. "(target, {read = bool, max_bytes = N})")
  end
  util.check_keys(opts, { "read", "max_bytes" }, function(k, sugg, list)
    errors.raise("recipe", what .. ": unknown key '" .. tostring(k) .. "'"
                 .. sugg, "it takes: " .. list)
  end)
  local max = opts.max_bytes or SHA256_READ_MAX
  if math.type(max) ~= "integer" or max < 0 then
    errors.raise("recipe", what .. ": max_bytes must be a count of bytes")
  end
  local head = storage.head(target)
  if not head then errors.raise("not_found", what .. ": no object "
                                .. tostring(target)) end
  if head.sha256 and not opts.read then return head.sha256, "recorded" end
  if core.plan_mode() then return head.sha256, "unknown" end
  if head.size and head.size > max then
    errors.raise("refused", what .. ": " .. target_url(target) .. " is "
                 .. head.size .. " bytes, more than " .. max,
                 "raise max_bytes to read it")
  end
  local store, key = own_target(what, target)
  local dir = core.home() .. "/tmp"
  errors.check(sys.mkdir_p(dir))
  local tmp = dir .. "/sha256-" .. sys.pid() .. "-" .. sys.random_hex(8)
  local info, err = store:get(key, tmp)
  store:close()
  sys.remove(tmp)
  info = errors.check(info, err, what .. " " .. target_url(target))
  if head.sha256 and info.sha256 ~= head.sha256 then
    errors.raise("failed", what .. ": " .. target_url(target) .. " holds "
                 .. "bytes of sha256 " .. tostring(info.sha256)
                 .. ", not the recorded " .. head.sha256)
  end
  return info.sha256, "read"
end

local LIFECYCLE_DAYS_MAX = 36500

-- lifecycle{prefix = P, expire_days = N [, id = ID]} -> true, "applied"
-- | true, "present" | false, reason: a rule of the profile's bucket that
-- expires the store's objects under P (a key prefix of the store) N days
-- after their creation. navette writes the rule only where the bucket
-- has none or only its own (a PUT replaces every rule); other rules, a
-- store without lifecycle (501 NotImplemented) or a file:// store give
-- false and why, not an error.
function storage.lifecycle(opts)
  local what = "navette.storage.lifecycle"
  if type(opts) ~= "table" then
    errors.raise("recipe", what .. "{ prefix = \"...\", expire_days = N }")
  end
  util.check_keys(opts, { "prefix", "expire_days", "id" },
                  function(k, sugg, list)
    errors.raise("recipe", what .. ": unknown key '" .. tostring(k) .. "'"
                 .. sugg, "it takes: " .. list)
  end)
  local prefix, days = opts.prefix, opts.expire_days
  if type(prefix) ~= "string" or prefix == "" then
    errors.raise("recipe", what .. ": 'prefix' must be a non-empty key "
                 .. "prefix (an empty one would cover the whole store)")
  end
  if math.type(days) ~= "integer" or days < 1
     or days > LIFECYCLE_DAYS_MAX then
    errors.raise("recipe", what .. ": 'expire_days' must be a whole "
                 .. "number of days, 1 to " .. LIFECYCLE_DAYS_MAX)
  end
  local id = opts.id or ("navette-expire-"
                         .. prefix:gsub("[^%w._-]", "_")):sub(1, 255)
  if type(id) ~= "string" or not id:match("^[%w._-]+$") or #id > 255 then
    errors.raise("recipe", what .. ": 'id' holds 1 to 255 letters, digits, "
                 .. "'.', '_' or '-'")
  end
  store_root()
  if not scope().profile.s3 then
    return false, "a file:// store has no lifecycle rules"
  end
  local url = storage.url(prefix)
  if core.plan_mode() then
    core.plan("storage", "lifecycle", url .. ": expire after " .. days
              .. " days (rule " .. id .. ")")
    return true, "planned"
  end
  local result, err = s3_store():lifecycle(prefix, days, id)
  result = errors.check(result, err, what .. " " .. url)
  if result.outcome == "applied" then
    audit({ action = "storage.lifecycle", target = url,
            detail = "expire after " .. days .. " days, rule " .. id })
    return true, "applied"
  elseif result.outcome == "present" then
    return true, "present"
  elseif result.outcome == "unsupported" then
    return false, "the store does not support lifecycle rules (501 "
                  .. "NotImplemented)"
  end
  return false, "the bucket has " .. result.rules .. " lifecycle rule(s) "
                .. "that navette did not write, which a PUT would replace: "
                .. "add the rule " .. id .. " (prefix " .. url .. ", "
                .. days .. " days) to them by hand"
end

-- The non-raising twins: try_read(...) -> bytes | nil, err (errors.lua).
errors.add_try(storage, { "url", "put", "put_string", "head", "list",
                          "read", "copy", "delete", "sha256", "lifecycle" })

-- What a plan has recorded as put in this run (url -> info).
function storage._planned() return scope().planned end

return storage
