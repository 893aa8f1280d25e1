-- Shared libraries without a repository: the lock file's format (parse,
-- format, the errors naming the line), what navette.use accepts, and where
-- a library is fetched from (the URLs refused for carrying credentials or
-- needing them). The fetch, the pins and the refusals of a run are driven
-- through the binary in tests/integration/catalogue/test_libraries.sh.
local t = test
local library = require "navette.library"

local A = ("a"):rep(40)
local B = ("0123456789"):rep(4)

t.test("the lock: format then parse gives the entries back, sorted", function()
  local text = library.format_lock({
    { url = "https://git.example.com/team/z", ref = "v2", commit = B },
    { url = "../lib", ref = "v1.4", commit = A },
  })
  t.match(text, "^# navette.lock")
  t.ok(text:find('\n%[library "../lib"%]\nref = v1.4\ncommit = ' .. A),
       "one section per library: " .. text)
  t.ok(text:find("../lib", 1, true) < text:find("team/z", 1, true),
       "sorted by url")
  local entries, by_url = library.parse_lock(text, "navette.lock")
  t.eq(#entries, 2)
  t.eq(entries[1].url, "../lib")
  t.eq(by_url["https://git.example.com/team/z"].commit, B)
  t.eq(by_url["../lib"].ref, "v1.4")
  t.eq(library.format_lock(entries), text, "stable")
end)

t.test("the lock: the team repository has its own section, first", function()
  local text = library.format_lock({
    { kind = "library", url = "../a-lib", ref = "v1", commit = A },
    { kind = "team", url = "https://git.example.com/team/policy", ref = "v3",
      commit = B },
  })
  t.ok(text:find('\n%[team "https://git.example.com/team/policy"%]\nref = '
                 .. 'v3\ncommit = ' .. B), "a team section: " .. text)
  t.ok(text:find("[team", 1, true) < text:find("[library", 1, true),
       "the team's first")
  local entries, by_url, team = library.parse_lock(text, "navette.lock")
  t.eq(#entries, 2)
  t.eq(team.url, "https://git.example.com/team/policy")
  t.eq(team.commit, B)
  t.eq(team.kind, "team")
  t.eq(by_url["https://git.example.com/team/policy"], nil,
       "the team's repository is not a library of the lock")
  t.eq(by_url["../a-lib"].kind, "library")
  t.eq(library.format_lock(entries), text, "stable")
  local e = t.raises(function()
    library.parse_lock(text .. '\n[team "x"]\nref = v1\ncommit = ' .. A
                       .. "\n", "p/navette.lock")
  end)
  t.match(e.message, "^p/navette.lock:%d+: a second team repository")
  e = t.raises(function()
    library.parse_lock('[team "x"]\nref = v1\n', "p/navette.lock")
  end)
  t.match(e.message, "^p/navette.lock:1: team x needs both ref and commit")
  e = t.raises(function()
    library.parse_lock('[teams "x"]\nref = v1\n', "p/navette.lock")
  end)
  t.match(e.message, "^p/navette.lock:1: expected")
end)

t.test("the lock: comments, blank lines and CRLF are fine", function()
  local _, by_url = library.parse_lock("# hi\r\n\r\n[library \"x\"]\r\n"
    .. "  ref = main\r\ncommit = " .. A .. "\r\n", "navette.lock")
  t.eq(by_url.x.ref, "main")
  t.eq(by_url.x.commit, A)
  local entries = library.parse_lock("", "navette.lock")
  t.eq(#entries, 0, "an empty lock")
end)

t.test("the lock: a damaged file names its line", function()
  local function bad(text, pattern)
    local e = t.raises(function() library.parse_lock(text, "p/navette.lock") end)
    t.match(e.message, pattern)
    t.eq(e.code, "recipe")
    t.match(e.hint, "navette lock")
  end
  bad('[library "x"]\nref = v1\ncommit = abc\n', "^p/navette.lock:1: .*full "
      .. "40%-character")
  bad('[library "x"]\ncommit = ' .. A .. "\n", "^p/navette.lock:1: .*both "
      .. "ref and commit")
  bad('[library "x"]\nref = v1\nref = v2\n', "^p/navette.lock:3: ref is "
      .. "given twice")
  bad('[library "x"]\nref = v1\ncommit = ' .. A .. '\n[library "x"]\n',
      "^p/navette.lock:4: library x is listed twice")
  bad("ref = v1\n", "^p/navette.lock:1: expected")
  bad('[library "x"]\nbranch = v1\n', "^p/navette.lock:2: expected")
end)

t.test("the lock: a malformed line is never echoed", function()
  -- (a lock that is some other file, a secret, must not be printed)
  for _, text in ipairs({ "never-echoed-marker\n",
                          '[library "x"]\nref = v1\ncommit = ' .. A
                          .. "\nvalue = never-echoed-marker x\n" }) do
    local e = t.raises(function() library.parse_lock(text, "navette.lock") end)
    t.match(e.message, "^navette.lock:%d+: expected")
    t.ok(not e.message:find("never-echoed", 1, true), "echoed: " .. e.message)
    t.ok(not (e.hint or ""):find("never-echoed", 1, true), "echoed: " .. e.hint)
  end
end)

t.test("navette.use: what it accepts", function()
  local s = library.validate({ git = "https://h/team/lib/", ref = "v1.4" })
  t.eq(s.url, "https://h/team/lib", "a trailing slash is not part of it")
  t.eq(s.ref, "v1.4")
  t.eq(s.module, "init")
  t.eq(library.validate({ git = "../lib", ref = A,
                          module = "patterns.sweep" }).module,
       "patterns.sweep")
  local function bad(decl, pattern)
    local e = t.raises(function() library.validate(decl) end)
    t.match(e.message, pattern)
    t.eq(e.code, "recipe")
  end
  bad("x", "expects a table")
  bad({ git = "x", ref = "v1", tag = "v1" }, "unknown key 'tag'")
  bad({ ref = "v1" }, "git must be")
  bad({ git = 'a"b', ref = "v1" }, "git must be")
  bad({ git = "a b", ref = "v1" }, "git must be")
  bad({ git = "x" }, "ref must be")
  for _, ref in ipairs({ "", "-x", "a..b", "v1.lock", "v1/", "a b",
                         "a~1", "HEAD^", ("v"):rep(201) }) do
    bad({ git = "x", ref = ref }, "ref must be")
  end
  for _, module in ipairs({ "", ".a", "a.", "a..b", "a/b", 3 }) do
    bad({ git = "x", ref = "v1", module = module }, "module must be")
  end
end)

t.test("where a library is fetched from", function()
  t.eq(library.source("../lib", "/p/proj"), "/p/lib")
  t.eq(library.source("libs/./x/", "/p/proj"), "/p/proj/libs/x")
  t.eq(library.source("/abs/lib", "/p/proj"), "/abs/lib")
  t.eq(library.source("file:///abs/../lib", "/p"), "/lib")
  t.eq(library.source("HTTPS://Git.Example.COM/Team/Lib/", "/p"),
       "https://git.example.com/Team/Lib")
  local function bad(url, pattern)
    local e = t.raises(function() library.source(url, "/p") end)
    t.match(e.message, pattern)
  end
  bad("https://user:token@h/lib", "user name or password")
  bad("https://token@h/lib", "user name or password")
  bad("http://h/lib", "uses http://")
  bad("git://h/lib", "uses git://")
  bad("ssh://h/lib", "uses ssh://")
  bad("git@h:team/lib", "looks like an ssh address")
end)

t.test("a library's own navette.use: https:// only", function()
  t.eq(library.source("https://h/team/lib", "/p", true), "https://h/team/lib")
  for _, url in ipairs({ "../private", "/abs/lib", ".", "file:///abs/lib",
                         "FILE://../x", "libs/x" }) do
    local e = t.raises(function() library.source(url, "/p/proj", true) end)
    t.match(e.message, "may use only https://")
    t.eq(e.code, "recipe")
  end
  -- (the project's own recipes keep paths and file://)
  t.eq(library.source("file:///abs/lib", "/p"), "/abs/lib")
end)

t.test("navette.use outside a run is a usage error", function()
  local e = t.raises(function()
    library.use({ git = "../lib", ref = "v1" })
  end)
  t.eq(e.code, "usage")
  t.match(e.message, "outside a recipe run")
end)
