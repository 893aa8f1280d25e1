-- The repository's tree: a run evaluates and runs committed code only
-- (a clean tree, recipe files read from the commit).
local refusal = require "navette.run.report"
local refuse = refusal.refuse
local core, sys = _navette.core, _navette.sys

local M = {}

-- The path of an absolute file under the repository's work tree, or nil.
local function repo_relative(run, path)
  local root = run.repo:workdir():gsub("/$", "")
  if path:sub(1, #root + 1) ~= root .. "/" then return nil end
  return path:sub(#root + 2)
end

-- The source of a recipe file: from the commit (HEAD, or run.at: a
-- rerun's) when the file is
-- there, so that what is evaluated is what the commit holds; a file the
-- commit lacks (untracked, gitignored) is read from the folder and noted,
-- and the run is refused before anything is done (plan shows it too).
-- Never through a link: a name the commit holds as a link or a
-- submodule is refused, and a file read from the folder must be a
-- regular file whose real path is in the repository (a link to ~/.env
-- would otherwise be evaluated, and its text shown in the error).
function M.committed_source(run, path, shown)
  local rel = repo_relative(run, path)
  if rel and not run.working then
    local src, err = run.repo:read_file(run.at or "HEAD", rel)
    if src then return src end
    if err and err.code ~= "not_found" then
      return nil, shown .. ": " .. err.message
    end
  end
  local real = sys.realpath(path)
  local root = sys.realpath(run.repo:workdir())
  local st = real and sys.stat(real)
  if not st then return nil, "no such file (" .. shown .. ")" end
  if not root or real:sub(1, #root + 1) ~= root .. "/"
     or st.type ~= "file" then
    return nil, shown .. " is not a file of the repository (a link to "
           .. "a file outside it, or not a regular file): recipe code is "
           .. "read only from the repository's own files"
  end
  local f = io.open(real, "rb")
  if not f then return nil, "no such file (" .. shown .. ")" end
  local src = f:read("a")
  f:close()
  run.uncommitted[#run.uncommitted + 1] = rel or path
  return src
end

-- Refuses a run whose recipe or modules were not read from the commit.
-- `navette plan` (run.allow_dirty) submits nothing: it lists untracked
-- ones instead, and refuses only a file git ignores (never meant to be
-- committed, it may hold what a plan must not show).
function M.check_committed(run)
  if #run.uncommitted == 0 then return end
  if run.allow_dirty then
    local ignored = false
    for _, rel in ipairs(run.uncommitted) do
      ignored = ignored or run.repo:path_state(rel) == "ignored"
    end
    if not ignored then return end
  end
  refuse("the recipe's code is not all in commit "
         .. (run.at and run.at:sub(1, 12) or "HEAD") .. " of "
         .. run.repo:workdir() .. ":\n  " .. table.concat(run.uncommitted,
         "\n  ") .. "\n(untracked or ignored by .gitignore)",
         "commit these files (git add -f for an ignored one): recipe code "
         .. "comes from the commit, never from the working folder", run)
end

-- The working tree must be clean before anything is done. A plan
-- (run.allow_dirty) keeps the changes in run.dirty and shows HEAD.
function M.check_tree(run)
  local dirty = run.repo:status()
  if #dirty == 0 then return end
  if run.allow_dirty then
    run.dirty = dirty
    return
  end
  local lines, finder = {}, false
  for i, e in ipairs(dirty) do
    -- Finder leaves .DS_Store in every folder a Mac user opens
    finder = finder or (e.path:match("[^/]+$") == ".DS_Store")
    if i <= 20 then
      lines[#lines + 1] = "  " .. e.status .. ": " .. e.path
    elseif i == 21 then
      lines[#lines + 1] = "  ... and " .. (#dirty - 20) .. " more"
    end
  end
  local hint = "commit (or stash) these changes: a job runs a commit, "
    .. "never the working folder"
  if finder then
    hint = hint .. "; .DS_Store is the Mac Finder's: add .DS_Store to a "
      .. "global gitignore: git config --global core.excludesFile "
      .. "~/.gitignore_global; echo .DS_Store >> ~/.gitignore_global"
  end
  refuse("the working tree of " .. run.repo:workdir() .. " is not clean:\n"
         .. table.concat(lines, "\n"), hint, run, run.recipe)
end

return M
