-- Team-shared recipe libraries: navette.use{ git = URL, ref = REF }.
-- A library is a git repository of recipe code, pinned by commit in
-- navette.lock at the project's root, cached by content under
-- $NAVETTE_HOME/libraries (one bare repository per URL, host/git/cache.c),
-- scanned for secrets like the project, and evaluated in a sandbox of its
-- own whose `require` reaches only the library's files at that commit.
-- What a run does with a library depends on the command:
--   run (and lock --check): fetch (the cache serves it when the remote is
--     unreachable), then refuse a library not in the lock, a ref that
--     points elsewhere than the lock says, a branch on a pinned profile;
--   plan: the same checks from the cache and the lock alone, no network;
--   lock: fetch and take the commit the ref points to now.
-- The lock file's parse and format are pure (tests/lua/library_test.lua).
local errors = require "navette.errors"
local util = require "navette.util"
local core, sys, git = _navette.core, _navette.sys, _navette.git

local library = {}

library.LOCK_FILE = "navette.lock"
library.KEYS = { "git", "ref", "module" }

local URL_MAX, REF_MAX = 2048, 200

-- The deepest chain of libraries using libraries.
library.NEST_MAX = 16

-- The last fetch of each cache by this process, by folder: {ok, err}. A
-- run evaluates its recipe twice and fetches in the first pass only.
local fetched = {}

local recipe_error = errors.raiser("recipe", "navette.use: ")

-- ---- the lock file (pure) -------------------------------------------------

local LOCK_HEADER = "# navette.lock: the commit of each library navette.use "
  .. "brings, and of the team's\n# policy repository (navette.lua's team).\n"
  .. "# Written by `navette lock [RECIPE...]`; review it and commit it.\n"

-- text -> entries {kind, url, ref, commit} (in the file's order; kind
-- "library" or "team"), the libraries by url, and the team entry (one
-- at most: [team "URL"], with the policy's file). where: the file's name
-- in messages.
function library.parse_lock(text, where)
  local entries, by_url, current, team = {}, {}, nil, nil
  local function fail(n, message)
    error(errors.new("recipe", where .. ":" .. n .. ": " .. message,
                     "write it again with `navette lock RECIPE`"), 0)
  end
  local n = 0
  for line in (text .. "\n"):gmatch("([^\n]*)\n") do
    n = n + 1
    line = line:gsub("\r$", "")
    local kind, url = line:match('^%[(%l+) "([^"]+)"%]%s*$')
    local key, value = line:match("^%s*([%w_]+)%s*=%s*(%S+)%s*$")
    if url and kind == "library" then
      if by_url[url] then fail(n, "library " .. url .. " is listed twice") end
      current = { kind = kind, url = url, line = n }
      entries[#entries + 1], by_url[url] = current, current
    elseif url and kind == "team" then
      if team then fail(n, "a second team repository (one policy per "
                           .. "project)") end
      current = { kind = kind, url = url, line = n }
      entries[#entries + 1], team = current, current
    elseif key and current and (key == "ref" or key == "commit"
                                or (key == "file" and current.kind == "team")) then
      if current[key] then fail(n, key .. " is given twice") end
      current[key] = value
    elseif not (line:match("^%s*$") or line:match("^%s*#")) then
      -- (never the line itself: a lock that is some other file would
      -- print that file's content)
      fail(n, "expected [library \"URL\"], [team \"URL\"], ref = REF or "
           .. "commit = ID, a comment (#) or a blank line")
    end
  end
  for _, e in ipairs(entries) do
    if not e.ref or not e.commit then
      fail(e.line, e.kind .. " " .. e.url .. " needs both ref and commit")
    elseif not e.commit:match("^" .. ("%x"):rep(40) .. "$") then
      fail(e.line, e.kind .. " " .. e.url .. ": commit must be a full "
           .. "40-character commit id")
    end
    e.line = nil
  end
  return entries, by_url, team
end

-- entries -> the file's text, one section per entry: the team's first,
-- then the libraries sorted by url.
function library.format_lock(entries)
  local sorted = {}
  for i, e in ipairs(entries) do sorted[i] = e end
  table.sort(sorted, function(a, b)
    local ka, kb = a.kind == "team" and 0 or 1, b.kind == "team" and 0 or 1
    if ka ~= kb then return ka < kb end
    return a.url < b.url
  end)
  local out = { LOCK_HEADER }
  for _, e in ipairs(sorted) do
    out[#out + 1] = "\n[" .. (e.kind or "library") .. ' "' .. e.url
                    .. '"]\nref = ' .. e.ref .. "\ncommit = " .. e.commit
                    .. "\n" .. (e.file and ("file = " .. e.file .. "\n") or "")
  end
  return table.concat(out)
end

-- ---- the declaration (pure) -----------------------------------------------

-- "a/./b/../c" -> "a/c" (an absolute path stays absolute)
local function clean_path(path)
  local parts = {}
  for part in path:gmatch("[^/]+") do
    if part == ".." then
      if #parts > 0 and parts[#parts] ~= ".." then parts[#parts] = nil
      elseif path:sub(1, 1) ~= "/" then parts[#parts + 1] = ".." end
    elseif part ~= "." then
      parts[#parts + 1] = part
    end
  end
  return (path:sub(1, 1) == "/" and "/" or "") .. table.concat(parts, "/")
end

-- Where a library is fetched from: an https:// URL (scheme and host in
-- lower case) or an absolute path (file://PATH or a path, relative to
-- root). Anything else is refused: navette offers no credentials, and a
-- URL carrying some would be written in the lock and the run records.
-- nested: the navette.use is a library's own, which may name only an
-- https:// URL (its author cannot know the user's disk, and a path would
-- let it read the user's other repositories).
function library.source(url, root, nested)
  local scheme, rest = url:match("^(%a[%w+.-]*)://(.*)$")
  if scheme then
    scheme = scheme:lower()
    local host, path = rest:match("^([^/]*)(.*)$")
    if host:find("@", 1, true) then
      recipe_error("the URL " .. url .. " carries a user name or "
                   .. "password", "libraries are fetched anonymously; "
                   .. "a URL is written in navette.lock and run records")
    end
    if scheme == "https" then
      return "https://" .. host:lower() .. (path:gsub("/+$", ""))
    end
    if nested then
      recipe_error("a library's own navette.use names " .. url .. ": a "
                   .. "library may use only https:// libraries", "local "
                   .. "paths and file:// URLs are for the project's own "
                   .. "recipes (ask the library's maintainers)")
    end
    if scheme == "file" then return clean_path(path) end
    recipe_error("the URL " .. url .. " uses " .. scheme .. "://",
                 "use https://, file:// or a path (navette fetches "
                 .. "libraries without credentials, over TLS)")
  end
  if url:match("^[^/]*:") then
    recipe_error("the URL " .. url .. " looks like an ssh address",
                 "use https://, file:// or a path (ssh needs "
                 .. "credentials, which library fetches do not use)")
  end
  if nested then
    recipe_error("a library's own navette.use names the path " .. url
                 .. ": a library may use only https:// libraries",
                 "local paths and file:// URLs are for the project's "
                 .. "own recipes (ask the library's maintainers)")
  end
  return clean_path(util.join(root, url))
end

-- A library's URL as navette keys it: without trailing slashes.
function library.normal_url(url)
  return (url:gsub("(.)/+$", "%1"))
end

-- Checks what a recipe passed. -> {url, ref, module}
function library.validate(decl)
  util.check_declaration(decl, library.KEYS, recipe_error, "navette.use",
                         "{ git = URL, ref = TAG }")
  local url, ref, module = decl.git, decl.ref, decl.module or "init"
  if type(url) ~= "string" or url == "" or #url > URL_MAX
     or url:find('[%s%c"]') then
    recipe_error("git must be the library's URL or path (no spaces or "
                 .. "quotes, at most " .. URL_MAX .. " bytes)")
  end
  if type(ref) ~= "string" or #ref > REF_MAX
     or not ref:match("^[%w_][%w._/-]*$") or ref:find("..", 1, true)
     or ref:match("[/.]$") or ref:match("%.lock$") then
    recipe_error("ref must be a tag, a branch or a commit id of the "
                 .. "library (got " .. tostring(ref) .. ")",
                 "a tag pins a release: ref = \"v1.4\"")
  end
  if type(module) ~= "string" or not module:match("^[%w_.-]+$")
     or module:match("^%.") or module:match("%.$")
     or module:find("..", 1, true) then
    recipe_error("module must be a module name of the library, such as "
                 .. "\"init\" or \"patterns.sweep\"")
  end
  return { url = library.normal_url(url), ref = ref, module = module }
end

-- ---- the lock of a run ------------------------------------------------------

-- The largest navette.lock read (a lock lists a few libraries).
library.LOCK_MAX = 1024 * 1024

-- The text of the lock file at path in the folder, nil when there is
-- none. Only a regular file (lstat: a symlink is refused, never followed)
-- of at most LOCK_MAX bytes.
function library.read_lock_file(path)
  local st = sys.stat(path)
  if not st then return nil end
  if st.type ~= "file" then
    error(errors.new("refused", path .. " is a " .. st.type .. ", not a "
                     .. "regular file", "make it a file (remove it and run "
                     .. "`navette lock RECIPE`)"), 0)
  elseif st.size > library.LOCK_MAX then
    error(errors.new("refused", path .. " is larger than "
                     .. library.LOCK_MAX .. " bytes", "write it again with "
                     .. "`navette lock RECIPE`"), 0)
  end
  return errors.check(sys.read_file(path, library.LOCK_MAX))
end

-- The lock of the project at root, in git repository repo: the
-- folder's (from_folder: `navette lock`, which writes it) or commit
-- HEAD's (what a run and a team command check against).
-- -> by_url, the team entry (see parse_lock)
function library.read_lock_at(root, repo, from_folder)
  local path = root .. "/" .. library.LOCK_FILE
  local top = repo:workdir():gsub("/$", "")
  local text
  local rel = path:sub(#top + 2)
  local function bad(what, hint)
    error(errors.new("refused", path .. " " .. what, hint), 0)
  end
  if from_folder then
    text = library.read_lock_file(path) or ""
  else
    local err
    text, err = repo:read_file("HEAD", rel, library.LOCK_MAX)
    if not text and err and err.code ~= "not_found" then
      -- (a symlink, a folder, too large: read_file says which)
      bad("in commit HEAD cannot be read: " .. err.message, "make it a "
          .. "regular file of at most " .. library.LOCK_MAX .. " bytes, "
          .. "written by `navette lock RECIPE`, and commit it")
    elseif not text and sys.stat(path) then
      error(errors.new("refused", library.LOCK_FILE .. " is not in "
                       .. "commit HEAD", "commit it (git add "
                       .. rel .. "): a run reads the committed lock"), 0)
    end
  end
  local _, by_url, team = library.parse_lock(text or "", path)
  return by_url, team
end

-- The lock a run checks against: the commit's (HEAD) for run and plan,
-- the folder's for `navette lock`. -> by_url
function library.read_lock(run)
  if run.library_lock then return run.library_lock end
  run.library_lock = library.read_lock_at(run.project.root, run.repo,
    run.libraries_mode == "lock" or run.libraries_mode == "check")
  return run.library_lock
end

-- ---- fetching and pinning ---------------------------------------------------

local function mode_of(run)
  return run.libraries_mode or (run.plan_command and "plan") or "run"
end

-- Fetches the cache once per run: the pass of `navette run` that does
-- what its checking pass checked takes that pass's fetch (a program that
-- embeds navette fetches again at its next run). -> ok, err
local function fetch(run, dir, source)
  run.library_fetched = run.library_fetched or {}
  local known = fetched[dir]
  local reuse = known and not run.checking and mode_of(run) == "run"
  if not reuse and not run.library_fetched[dir] then
    known = { git.cache_fetch(dir, source) }
    fetched[dir] = known
  end
  run.library_fetched[dir] = true
  return known[1], known[2]
end

-- A refusal of the run in progress, audited as the runner's are.
local function refuse(message, hint)
  local run = require("navette.context").current()
  require("navette.run.report").refuse("library " .. message, hint, run,
                                       run and run.recipe)
end

-- Pins spec {url, ref} to a commit of its cache. ctx says for whom:
--   root     the project's folder (a path is relative to it)
--   mode     "run" | "check" (fetch, check against the lock), "plan"
--            (the cache and the lock alone), "lock" (fetch, take the
--            commit the ref points to now)
--   what     "library" or "team repository", the start of messages
--   entry()  the lock's entry for spec.url, or nil (not for "lock")
--   again    what to do when the lock is behind ("run `navette lock ...`")
--   check    the command that fetches without pinning, for hints
--   refuse   (message, hint): raises the refusal
--   fetch    (dir, source) -> ok, err: fetches the cache
--   pinned   the name of a pinned profile (a branch is refused), or nil
-- The ref is checked against the remote when it was fetched; in plan, or
-- when the remote is unreachable, the cache serves the locked commit.
-- -> {url, ref, commit, kind, repo, dir}
function library.pin_source(spec, ctx)
  local mode, what = ctx.mode, ctx.what
  local function refuse_(message, hint) ctx.refuse(message, hint) end
  local source = library.source(spec.url, ctx.root)
  local dir = core.home() .. "/libraries/"
              .. errors.check(git.cache_name(source))
  local ok, ferr = true, nil
  if mode ~= "plan" then ok, ferr = ctx.fetch(dir, source) end
  ferr = not ok and ferr or nil
  local repo, oerr
  if sys.stat(dir) then repo, oerr = git.open_cache(dir) end
  if oerr then
    error(errors.new("io", what .. " " .. spec.url .. ": its cache " .. dir
                     .. " cannot be read: " .. oerr.message, "remove "
                     .. "that folder: the next run fetches it again"), 0)
  elseif not repo and mode == "plan" then
    refuse_(spec.url .. " is not in the cache (" .. dir .. ")",
            "fetch it first: " .. ctx.check .. " (changes nothing) or "
            .. ctx.again .. "; plan does not use the network")
  elseif not repo then
    error(errors.new(ferr.code, what .. " " .. spec.url .. ": "
                     .. ferr.message .. " (and it is not in the cache)",
                     ferr.hint), 0)
  end
  local asked = mode ~= "plan" and not ferr
  local current, kind = repo:library_ref(spec.ref)
  if not current and (asked or mode == "lock") then
    refuse_(spec.url .. ": " .. kind.message, kind.hint)
  elseif not current then
    kind = nil
  end
  if kind == "branch" and ctx.pinned then
    refuse_(spec.url .. ": ref " .. spec.ref .. " is a branch, which "
            .. "moves; profile '" .. ctx.pinned .. "' is pinned",
            "name a tag or a commit id (pinned = true refuses floating "
            .. "refs)")
  end
  if current and kind == "commit" and current ~= spec.ref:lower() then
    refuse_(spec.url .. ": ref " .. spec.ref .. " is a commit id, but it "
            .. "resolved to commit " .. current, "report this: a commit "
            .. "id is looked up as that commit, never through a tag")
  end
  local commit = current
  if mode ~= "lock" then
    -- the checks against the lock: the entry is there with the ref asked
    -- for, the ref points where the lock says (when the remote was
    -- asked), and the cache holds that commit
    local entry = ctx.entry()
    current = asked and current or nil
    if not entry then
      refuse_(spec.url .. " (ref " .. spec.ref .. ") is not in "
              .. library.LOCK_FILE, ctx.again)
    elseif entry.ref ~= spec.ref then
      refuse_(spec.url .. ": " .. library.LOCK_FILE .. " pins ref "
              .. entry.ref .. ", " .. ctx.asker .. " asks for " .. spec.ref,
              ctx.again)
    elseif current and current ~= entry.commit then
      refuse_(spec.url .. ": ref " .. spec.ref .. " now points to "
              .. "commit " .. current .. ", but " .. library.LOCK_FILE
              .. " pins commit " .. entry.commit .. " (the " .. kind
              .. " moved)", "ask the " .. what .. "'s maintainers why; "
              .. "if the new commit is wanted, " .. ctx.again:gsub(
              " and commit ", ", review and commit ", 1))
    elseif not repo:library_commit(entry.commit) then
      refuse_(spec.url .. ": commit " .. entry.commit .. " of "
              .. library.LOCK_FILE .. " is not in the cache", "fetch it: "
              .. ctx.check .. " (with the remote reachable)")
    end
    commit = entry.commit
  end
  if ferr and not ferr.warned then
    ferr.warned = true -- (once: a run evaluates its recipe twice)
    require("navette.term").eprint("warning: " .. what .. " " .. spec.url
      .. " is unreachable (" .. ferr.message .. "); using commit "
      .. commit:sub(1, 12) .. " from the cache")
  end
  return { url = spec.url, ref = spec.ref, commit = commit, kind = kind,
           repo = repo, dir = dir }
end

-- A library of the run, pinned (see pin_source).
local function pin(run, spec)
  return library.pin_source(spec, {
    root = run.project.root, mode = mode_of(run), what = "library",
    entry = function() return library.read_lock(run)[spec.url] end,
    again = "run `navette lock " .. run.recipe .. "` and commit "
            .. library.LOCK_FILE,
    check = "`navette lock --check " .. run.recipe .. "`",
    asker = "the recipe",
    refuse = refuse,
    fetch = function(dir, source) return fetch(run, dir, source) end,
    pinned = run.profile.pinned and run.profile.name or nil,
  })
end

-- The fetch of a cache by this process: once (a team command reads its
-- policy more than once). -> ok, err
function library.fetch_once(dir, source)
  if not fetched[dir] then fetched[dir] = { git.cache_fetch(dir, source) } end
  return fetched[dir][1], fetched[dir][2]
end

-- What the project's allow-list (.navette-secrets-allow, as committed)
-- grants the library at url: its lines "@library URL GLOB REASON", as an
-- allow-list of the library's own files ("GLOB REASON" lines).
local function granted(run, url)
  local text = run.repo and run.repo:read_file("HEAD", ".navette-secrets-allow")
  local out = {}
  for line in (text or ""):gmatch("[^\n]+") do
    local u, rest = line:match("^%s*@library%s+(%S+)%s+(%S.-)%s*$")
    if u and library.normal_url(u) == url then out[#out + 1] = rest end
  end
  return table.concat(out, "\n")
end

-- The secret scan of the library's commit, as of the project's commits,
-- but not under the library's own .navette-secrets-allow, which would let
-- its author exempt any file: under what the project's allow-list grants
-- it (reviewed in the project, with a reason each).
local function scan(run, lib)
  run.library_scanned = run.library_scanned or {}
  if run.library_scanned[lib.commit] then return end
  local grant = granted(run, lib.url)
  local report, err = _navette.creds.scan_commit(lib.dir, lib.commit,
    { allowlist = grant ~= "" and grant or false })
  if not report then
    refuse(lib.url .. ": cannot scan commit " .. lib.commit:sub(1, 12)
           .. " for secrets: " .. err.message, err.hint)
  end
  if #report.findings > 0 then
    refuse(lib.url .. ": commit " .. lib.commit:sub(1, 12) .. " holds "
           .. "what looks like secrets:\n"
           .. require("navette.run.pin").findings_text(report.findings),
           "ask the library's maintainers to remove them (and rotate "
           .. "them); a library's own .navette-secrets-allow does not "
           .. "apply: to accept a file you reviewed, add a line '@library "
           .. lib.url .. " PATH REASON' to your project's "
           .. ".navette-secrets-allow")
  end
  run.library_scanned[lib.commit] = true
end

-- ---- evaluation ---------------------------------------------------------

-- Evaluates the library's module in a sandbox of its own: its require
-- reads the library's files at the pinned commit, nothing else.
local function evaluate(run, lib, module)
  local shown = lib.url .. "@" .. lib.commit:sub(1, 12)
  local from = { url = lib.url }
  -- (only what the secret scan read: at most its size cap, no NUL byte,
  -- which the scan takes for a binary file and skips)
  local max = _navette.creds.scan_max_file_size
  local function source(rel)
    local src, err = lib.repo:read_file(lib.commit, rel, max)
    if not src then
      return nil, err.message, err.message:find("is larger than", 1, true)
             and "the secret scan reads files of at most " .. max
                 .. " bytes: navette loads no larger module of a library"
    end
    if src:find("\0", 1, true) then
      return nil, "'" .. rel .. "' holds a NUL byte (the secret scan "
                  .. "skips binary files, so navette loads none)",
             "a library's module is Lua text, with no NUL byte"
    end
    return src, shown .. ":" .. rel
  end
  local env = core.sandbox(run.recipe_dir, {
    -- (its navette.use is marked as the library's own, whenever called)
    -- (the public API's maker, which the run holds: public.lua is above
    -- this module)
    navette = run.new_api({
      use = function(decl) return library.use(decl, from) end,
      -- (code = "library": this library's commit)
      job = function(decl)
        return require("navette.run.declare").declare(decl, lib)
      end,
      sweep = function(decl)
        return require("navette.run.declare").declare_sweep(decl, lib)
      end,
      -- (a data set's paths may come with the library: storage.lua)
      ["storage.put"] = function(key, source)
        return require("navette.storage").put(key, source, lib)
      end,
    }),
    print = run.print,
    load_module = function(_, rel) return source(rel) end,
  })
  local rel = module:gsub("%.", "/") .. ".lua"
  local src, why, hint = source(rel)
  if not src then
    recipe_error("library " .. lib.url .. ": " .. why, hint or ("a "
                 .. "library's module is init.lua at its root, or the "
                 .. "file that module = \"a.b\" names (a/b.lua)"))
  end
  local chunk = errors.check(core.load_recipe(shown .. ":" .. rel, env,
                                              shown .. ":" .. rel, src))
  return chunk(module)
end

-- navette.use{ git, ref [, module] } -> the library's module. from: the
-- library whose own navette.use this is (nil for the project's recipes).
function library.use(decl, from)
  local spec = library.validate(decl)
  local run = require("navette.context").current()
  if not run then
    errors.raise("usage", "navette.use was called outside a recipe run",
                 "run the recipe with `navette run` or `navette plan`")
  end
  -- A module being evaluated that is used again: a loop, which would
  -- recurse until the memory limit. (Compared by where it is fetched
  -- from: https://H/a and HTTPS://h/a/ are one library.)
  run.library_evaluating = run.library_evaluating or {}
  local chain = run.library_evaluating
  local ok, where = pcall(library.source, spec.url, run.project.root)
  local shown = spec.url .. " (" .. spec.module .. ")"
  local key = (ok and where or spec.url) .. "\0" .. spec.module
  for i, c in ipairs(chain) do
    if c.key == key then
      local names = {}
      for j = i, #chain do names[#names + 1] = chain[j].shown end
      names[#names + 1] = shown
      recipe_error("libraries use each other in a loop: "
                   .. table.concat(names, " -> "), "a library must not "
                   .. "use itself, directly or through another")
    end
  end
  if #chain >= library.NEST_MAX then
    recipe_error("libraries nest more than " .. library.NEST_MAX
                 .. " deep: " .. shown, "a library's own navette.use "
                 .. "should bring few others")
  end
  if from then library.source(spec.url, run.project.root, true) end
  run.library_used = run.library_used or {}
  local used = run.library_used[spec.url]
  if used and used.ref ~= spec.ref then
    recipe_error("library " .. spec.url .. " is used with ref " .. used.ref
                 .. " and ref " .. spec.ref, "use one ref of a library "
                 .. "in a project")
  end
  if not used then
    used = pin(run, spec)
    scan(run, used)
    -- (only now that every check passed: a library refused under pcall
    -- is neither served later nor written in the lock or the records)
    used.modules = {}
    run.library_used[spec.url] = used
    run.libraries = run.libraries or {}
    run.libraries[#run.libraries + 1] = { url = used.url, ref = used.ref,
                                          commit = used.commit }
    if core.plan_mode() and run.plan_command then
      core.plan("git", "library", used.url .. " " .. used.ref .. " -> "
                .. used.commit .. " (as locked; plan does not ask the "
                .. "remote)")
    end
  end
  if used.modules[spec.module] == nil then
    local entry = { key = key, shown = shown }
    chain[#chain + 1] = entry
    local _ <close> = setmetatable({}, { __close = function()
      for i = #chain, 1, -1 do
        if chain[i] == entry then table.remove(chain, i); break end
      end
    end })
    local value = evaluate(run, used, spec.module)
    if value == nil then value = true end -- (as require does)
    used.modules[spec.module] = value
  end
  return used.modules[spec.module]
end

-- What a job's spec and run record list: {url, ref, commit} of each
-- library of the run, or nil.
function library.spec_field(run)
  if not run.libraries then return nil end
  local out = {}
  for i, l in ipairs(run.libraries) do
    out[i] = { url = l.url, ref = l.ref, commit = l.commit }
  end
  return _navette.json.array(out)
end

return library
