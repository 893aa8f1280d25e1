-- What a recipe may name on this machine through navette.image (review
-- M6, L9): its `repo` is its run's own repository or a folder of it
-- (real paths: a symlink, a `..` or a nested clone does not lead out);
-- pack's `output` and code_layer's `tmp_dir` go where git ignores them in
-- that repository or into navette's temporary folder, never over a
-- tracked file, a file outside, or into .git; build's and debootstrap's
-- `storage_root`/`run_root` name a folder of navette's own. Each refusal
-- is code refused (exit 3) and says what is allowed; the command line
-- (image.trusted) takes the user's paths as given.
local t = test
local sys, core = _navette.sys, _navette.core
local image = require "navette.image"
local errors = require "navette.errors"
local fixtures = assert(loadfile(
  (debug.getinfo(1, "S").source:match("^@(.*)/[^/]*$") or ".")
  .. "/fixtures.lua"))()

local function sh(command)
  assert(os.execute(command .. " >/dev/null 2>&1"), command)
end

-- The run's repository R (out/ and *.tmp ignored, a.txt and sub/ tracked)
-- and another repository O; recipes' calls go through the public API.
local function setup()
  local R = fixtures.repo(t, { [".gitignore"] = "out/\n*.tmp\nnested/\n",
                               ["a.txt"] = "mine\n" })
  sh("mkdir -p '" .. R .. "/sub' '" .. R .. "/out' && echo s > '" .. R
     .. "/sub/s.txt' && cd '" .. R .. "' && git add -A && git -c "
     .. "user.name=t -c user.email=t@example.invalid commit -qm sub")
  local O = fixtures.repo(t, { ["secret-plans.txt"] = "theirs\n" })
  R, O = sys.realpath(R), sys.realpath(O)
  require("navette.context").enter({ repo_root = R })
  return R, O, require("navette.public").new().image
end

local function refused(fn, pattern)
  local e = t.raises(fn, pattern)
  t.eq(e.code, "refused", pattern)
  t.eq(errors.exit_status[e.code], 3)
  return e
end

t.test("repo: another repository is refused, its own folders are not",
       function()
  local R, O, api = setup()
  local e = refused(function()
    api.pack { repo = O, output = R .. "/out/l.tgz" }
  end, "repo '" .. O:gsub("%p", "%%%0") .. "' is outside the run's repository")
  t.match(e.hint, "its own repository %(" .. R:gsub("%p", "%%%0") .. "%)")
  refused(function() api.pack { repo = R .. "/../" .. O:match("[^/]+$"),
                                output = "out/l.tgz" } end, "outside")
  -- a symlink of the repository to another one
  sh("ln -s '" .. O .. "' '" .. R .. "/out/link'")
  refused(function() api.pack { repo = "out/link", output = "out/l.tgz" } end,
          "outside the run's repository")
  -- a clone nested in the repository is another repository
  sh("git clone -q '" .. O .. "' '" .. R .. "/nested'")
  refused(function() api.pack { repo = "nested", output = "out/l.tgz" } end,
          "is another git repository")
  refused(function()
    api.code_layer { repo = O, base = "127.0.0.1:9/b:1", to = "127.0.0.1:9/t" }
  end, "outside the run's repository")
  refused(function() api.build { repo = O, to = "127.0.0.1:9/t" } end,
          "outside the run's repository")
  refused(function() api.rebuild { repo = O, to = "127.0.0.1:9/t:cur" } end,
          "outside the run's repository")
  t.eq(sys.stat(R .. "/out/l.tgz"), nil, "nothing written")
  -- the repository itself, and a folder of it: packed
  local res = api.pack { repo = "sub", output = "out/l.tgz" }
  t.match(res.layer_digest, "^sha256:")
  t.eq(sys.stat(R .. "/out/l.tgz").type, "file")
  api.pack { output = R .. "/out/m.tgz" }
  t.eq(sys.stat(R .. "/out/m.tgz").type, "file")
end)

t.test("output: only where git ignores it, or a new file of navette's "
       .. "temporary folder", function()
  local R, _, api = setup()
  local outside = t.tmpdir()
  assert(sys.write_file(outside .. "/victim", "keep\n"))
  for _, case in ipairs({
    { "a.txt", "is tracked by git" },
    { R .. "/a.txt", "is tracked by git" },
    { "sub", "is tracked by git" },
    { "new.txt", "is not ignored by git" },
    { "sub/new.txt", "is not ignored by git" },
    { outside .. "/victim", "outside the run's repository and navette's "
                            .. "temporary folder" },
    { outside .. "/new", "outside" },
    { "out/../a.txt", "is tracked by git" },
    { ".git/hooks/pre-commit", "in the repository's .git folder" },
    { ".git/config", ".git folder" },
    { "none/x.tgz", "in a folder that does not exist" },
    { "out/", "names no file" },
  }) do
    local e = refused(function() api.pack { output = case[1] } end, case[2])
    t.match(e.hint, "path git ignores in its repository")
  end
  t.eq(sys.read_file(outside .. "/victim"), "keep\n")
  t.eq(sys.read_file(R .. "/a.txt"), "mine\n")
  t.eq(sys.stat(outside .. "/new"), nil)
  -- a symlinked folder inside an ignored one leads outside: refused
  sh("ln -s '" .. outside .. "' '" .. R .. "/out/esc'")
  refused(function() api.pack { output = "out/esc/victim" } end, "outside")
  t.eq(sys.read_file(outside .. "/victim"), "keep\n")
  -- a symlink as the file itself is replaced, never followed
  sh("ln -s '" .. outside .. "/victim' '" .. R .. "/out/v.tgz'")
  api.pack { output = "out/v.tgz" }
  t.eq(sys.read_file(outside .. "/victim"), "keep\n")
  t.eq(sys.stat(R .. "/out/v.tgz").type, "file")
  -- an ignored file by its pattern, anywhere
  api.pack { output = "sub/layer.tmp" }
  -- navette's temporary folder: a new file, never one that is there
  local tmp = core.home() .. "/tmp/pack-" .. sys.random_hex(4) .. ".tgz"
  api.pack { output = tmp }
  refused(function() api.pack { output = tmp } end, "exists already")
  -- plan mode: refused the same, nothing recorded
  core.set_plan(true)
  local ok, e = pcall(api.pack, { output = outside .. "/victim" })
  core.set_plan(false)
  t.ok(not ok and e.code == "refused", "plan refuses too")
  -- code_layer's tmp_dir: the same rule, for a folder
  refused(function()
    api.code_layer { base = "127.0.0.1:9/b:1", to = "127.0.0.1:9/t",
                     tmp_dir = outside }
  end, "outside the run's repository")
end)

t.test("the command line's calls take the user's paths", function()
  local _, O = setup()
  local out = t.tmpdir() .. "/layer.tgz"
  local res = image.trusted.pack { repo = O, output = out }
  t.match(res.diff_id, "^sha256:")
  t.eq(sys.stat(out).type, "file")
end)

t.test("storage_root and run_root name navette's folders", function()
  local _, _, api = setup()
  for _, v in ipairs({ "/tmp/x", "../x", "a/b", "..", ".hidden", "" }) do
    for _, key in ipairs({ "storage_root", "run_root" }) do
      local e = refused(function()
        api.build { to = "127.0.0.1:9/t", [key] = v }
      end, key .. " '.*' is not a name")
      t.match(e.hint, core.home():gsub("%p", "%%%0") .. "/image%-")
      refused(function()
        api.debootstrap { to = "127.0.0.1:9/t", [key] = v }
      end, "is not a name")
      refused(function()
        api.rebuild { to = "127.0.0.1:9/t:cur", [key] = v }
      end, "is not a name")
    end
  end
end)

t.test("build: a file or context that is a symlink out of the commit's "
       .. "tree is refused before the builder runs", function()
  if not sys.which("buildah") then t.skip("no buildah here") end
  local R, _, api = setup()
  local home = t.tmpdir()
  assert(sys.write_file(home .. "/id_rsa.pub", "not a secret\n"))
  sh("cd '" .. R .. "' && ln -s '" .. home .. "' ctx && ln -s /etc/hostname "
     .. "Containerfile && git add -A && git -c user.name=t -c "
     .. "user.email=t@example.invalid commit -qm links")
  refused(function() api.build { to = "127.0.0.1:9/t", context = "ctx",
                                 file = "a.txt", builder = "buildah" } end,
          "'ctx' is a symlink out of the commit's tree")
  refused(function() api.build { to = "127.0.0.1:9/t", builder = "buildah" } end,
          "'Containerfile' is a symlink out of the commit's tree")
end)
