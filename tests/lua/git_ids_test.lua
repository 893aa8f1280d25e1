-- What a commit holds at a path, by id (repo:path_id), and its dependency
-- lock files in any folder (repo:lockfiles): the code's identity that a
-- job's content key is made from (issue 32), compared with git's own.
local t = test
local sys = _navette.sys

local function sh(dir, command)
  assert(os.execute("cd '" .. dir .. "' && " .. command .. " >/dev/null 2>&1"),
         command)
end

local function rev(dir, spec)
  local p = assert(io.popen("git -C '" .. dir .. "' rev-parse '" .. spec
                            .. "'"))
  local out = p:read("l")
  p:close()
  return out
end

local function repo_with_locks()
  local dir = t.tmpdir()
  sh(dir, "git init -q -b main . && git config user.email t@example.com "
          .. "&& git config user.name t && mkdir -p src/a docs svc "
          .. "&& printf 'x' > src/a/train.py && printf 'y' > docs/README "
          .. "&& printf 'numpy==2\\n' > requirements.txt "
          .. "&& printf 'l' > svc/uv.lock && printf 'n' > svc/notes.txt "
          .. "&& git add -A && git commit -qm one")
  return dir, assert(_navette.git.open(dir))
end

t.test("path_id: trees and files by git's ids", function()
  local dir, repo = repo_with_locks()
  local id, kind = repo:path_id("HEAD", "")
  t.eq(id, rev(dir, "HEAD^{tree}"))
  t.eq(kind, "tree")
  id, kind = repo:path_id("HEAD", "src/")
  t.eq(id, rev(dir, "HEAD:src"))
  t.eq(kind, "tree")
  id, kind = repo:path_id("HEAD", "src/a/train.py")
  t.eq(id, rev(dir, "HEAD:src/a/train.py"))
  t.eq(kind, "file")
  local none, err = repo:path_id("HEAD", "src/b")
  t.eq(none, nil)
  t.match(err.message, "has no 'src/b'")
  none, err = repo:path_id("HEAD", "../etc")
  t.eq(none, nil)
  t.match(err.message, "is not a path of the repository")
  -- an edit outside src/ leaves src/'s id as it was
  local before = repo:path_id("HEAD", "src")
  sh(dir, "printf 'z' > docs/README && git commit -qam two")
  t.eq(repo:path_id("HEAD", "src"), before)
  t.ok(repo:path_id("HEAD", "") ~= rev(dir, "HEAD~1^{tree}"))
  repo:close()
end)

t.test("lockfiles: in any folder, by blob id, in the tree's order",
       function()
  local dir, repo = repo_with_locks()
  local got = {}
  for _, l in ipairs(assert(repo:lockfiles("HEAD"))) do
    got[#got + 1] = l.path .. "=" .. l.blob
  end
  t.eq(table.concat(got, " "),
       "requirements.txt=" .. rev(dir, "HEAD:requirements.txt")
       .. " svc/uv.lock=" .. rev(dir, "HEAD:svc/uv.lock"))
  repo:close()
  t.ok(sys.now() > 0)
end)
