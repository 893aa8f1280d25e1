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

-- The run context (set by the runner): profile and repository root.
local context = { profile = nil, repo_root = nil, recipe_dir = nil,
                  planned = {} }
function storage._set_context(ctx)
  if context.s3 then context.s3:dispose() end
  context = ctx
end

-- The profile's s3:// store, opened once per run (its credential too).
local function s3_store()
  if not context.s3 then
    context.s3 = require("navette.s3store").open(context.profile)
    context.s3.shared = true -- callers' close() leaves it open
  end
  return context.s3
end
function storage._s3() return s3_store() end

local function store_root()
  local profile = context.profile
  if not profile then
    errors.raise("usage", "navette.storage needs a profile: run the recipe "
                 .. "with `navette run` or `navette plan`")
  end
  return profile.storage
end

local function percent_encode_path(path)
  return (path:gsub("[^%w%-%._~/]", function(c)
    return string.format("%%%02X", c:byte())
  end))
end

local function open_store(create)
  local root = store_root()
  if context.profile.s3 then return s3_store() end
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
  if context.profile and context.profile.s3 then
    return s3_store():url(key)
  end
  local store = open_store(false)
  if store then return errors.check(store:url(key)) end
  return store_root():gsub("/$", "") .. "/" .. percent_encode_path(key)
end

-- A path of the recipe's repository, resolved and checked to stay inside.
local function repository_file(path)
  if type(path) ~= "string" or path == "" then
    errors.raise("recipe", "navette.storage.put: the source must be a path "
                 .. "relative to the recipe")
  end
  local full = util.join(context.recipe_dir or sys.cwd(), path)
  local real, err = sys.realpath(full)
  if not real then
    errors.raise("recipe", "navette.storage.put: cannot read '" .. path
                 .. "' (" .. (err and err.message or "?") .. ")",
                 "the path is relative to the recipe's folder")
  end
  local root = context.repo_root
  if root and real ~= root and real:sub(1, #root + 1) ~= root .. "/" then
    errors.raise("refused", "navette.storage.put: '" .. path
                 .. "' is outside the repository",
                 "recipes upload files that are part of their repository")
  end
  local st = sys.stat(real)
  if not st or st.type ~= "file" then
    errors.raise("recipe", "navette.storage.put: '" .. path
                 .. "' is not a file")
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
  local root = context.repo_root
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
    context.planned[info.url] = info
  else
    require("navette.audit").record({ action = "storage.put",
      target = info.url, detail = "sha256 " .. info.sha256 },
      context.profile)
  end
  return info
end

-- A dataset of the project file (datasets = { NAME = { paths... } }): the
-- first of its paths that is a regular file on this machine. The project
-- file, not the recipe, says which files outside the repository a recipe
-- may upload.
local function dataset_file(source)
  local name = source.dataset
  if type(name) ~= "string" then
    errors.raise("recipe", "navette.storage.put: the source is a path "
                 .. "relative to the recipe, or { dataset = NAME }")
  end
  local datasets = context.datasets or {}
  local paths = datasets[name]
  if not paths then
    local names = util.sorted_keys(datasets)
    errors.raise("recipe", "navette.storage.put: dataset '" .. name
                 .. "' is not declared in the project file"
                 .. util.suggest(name, names),
                 "declare it in navette.lua: datasets = { " .. name
                 .. " = { \"/absolute/path\", ... } }")
  end
  for _, path in ipairs(paths) do
    local real = sys.realpath(path)
    local st = real and sys.stat(real)
    if st and st.type == "file" then return real, path end
  end
  errors.raise("refused", "navette.storage.put: dataset '" .. name
               .. "': none of its paths is a file on this machine ("
               .. table.concat(paths, ", ") .. ")",
               "install what ships it, or add its path on this machine to "
               .. "the project file's datasets." .. name)
end

-- storage.put(key, path) -> {url, key, sha256, size}
function storage.put(key, path)
  if type(key) ~= "string" then
    errors.raise("recipe", "navette.storage.put: key must be a string")
  end
  local src
  if type(path) == "table" then
    src, path = dataset_file(path)
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
  if type(target) == "string" and target:match("^s3://") then
    if not (context.profile and context.profile.s3) then
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
  if type(target) == "string" and target:match("^s3://") then
    if not (context.profile and context.profile.s3) then
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

-- The non-raising twins: try_read(...) -> bytes | nil, err (errors.lua).
errors.add_try(storage, { "url", "put", "put_string", "head", "list",
                          "read" })

-- What a plan has recorded as put in this run (url -> info).
function storage._planned() return context.planned end

return storage
