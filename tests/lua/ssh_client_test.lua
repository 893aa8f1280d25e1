-- _navette.ssh (host/ssh/), run against tests/data/ssh/fake_ssh.sh as
-- NAVETTE_SSH (tests/CMakeLists.txt): the command's words arrive as they
-- were given, with its status and stdin; what a login node prints around
-- it is set aside; each way ssh fails comes back as an error with its
-- reason and what to check; output over the bound, a lost connection and
-- a slow host are refused, never read to the end; first contact's probe
-- runs ssh with its own options (host keys accepted: the stand-in, which
-- wants StrictHostKeyChecking=yes, says so) and refuses the same values.
local t = test
local ssh = _navette.ssh

local dir = t.tmpdir()

local function target(host, extra)
  local o = { host = host, user = "alice", known_hosts = dir .. "/known_hosts",
              identity = dir .. "/id_ed25519", timeout = 20 }
  for k, v in pairs(extra or {}) do o[k] = v end
  return o
end

t.test("the words arrive as given, with the status and stdin", function()
  local r, err = ssh.run(target("ok.test", {
    command = { "printf", "%s|", "a b", "it's", "$HOME `id`", "",
                "line\nbreak", "\255\254" } }))
  t.ok(r, err and err.message)
  t.eq(r.stdout, "a b|it's|$HOME `id`||line\nbreak|\255\254|")
  t.eq(r.status, 0)
  r = assert(ssh.run(target("ok.test", { command = { "sh", "-c", "exit 7" } })))
  t.eq(r.status, 7)
  r = assert(ssh.run(target("ok.test", { command = { "cat" },
                                         stdin = "one\ntwo" })))
  t.eq(r.stdout, "one\ntwo")
  r = assert(ssh.run(target("ok.test", {
    command = { "sh", "-c", "echo warn >&2; printf out" } })))
  t.eq(r.stdout, "out")
  t.eq(r.stderr, "warn\n")
end)

t.test("what the login node prints around the command is set aside",
       function()
  local r, err = ssh.run(target("banner.test",
                                { command = { "echo", "12345;cluster" } }))
  t.ok(r, err and err.message)
  t.eq(r.stdout, "12345;cluster\n")
end)

t.test("each failure of ssh has its reason and hint", function()
  local r, err = ssh.run(target("hostkey.test", { command = { "true" } }))
  t.eq(r, nil)
  t.eq(err.code, "refused")
  t.eq(err.reason, "host_key")
  t.ok(err.message:find("hostkey.test port 22", 1, true), err.message)
  t.ok(err.hint:find("navette ssh trust", 1, true), err.hint)
  r, err = ssh.run(target("changed.test", { command = { "true" } }))
  t.eq(err.reason, "host_key")
  r, err = ssh.run(target("denied.test", { command = { "true" } }))
  t.eq(err.reason, "denied")
  t.eq(err.code, "refused")
  t.ok(err.hint:find("certificate", 1, true), err.hint)
  r, err = ssh.run(target("refused.test", { command = { "true" } }))
  t.eq(err.reason, "unreachable")
  t.eq(err.code, "backend")
  t.ok(err.message:find("Connection refused", 1, true), err.message)
  r, err = ssh.run(target("nowhere.test", { command = { "true" } }))
  t.eq(err.reason, "unreachable")
end)

t.test("no frame, a frame cut short, output over the bound", function()
  local r, err = ssh.run(target("menu.test", { command = { "true" } }))
  t.eq(r, nil)
  t.eq(err.reason, "no_frame")
  t.ok(err.message:find("This account is restricted", 1, true), err.message)
  r, err = ssh.run(target("cut.test", {
    command = { "sh", "-c", "i=0; while [ $i -lt 50 ]; do echo $i; "
                .. "i=$((i+1)); done" } }))
  t.eq(err.reason, "cut")
  t.ok(err.message:find("closed by remote host", 1, true), err.message)
  r, err = ssh.run(target("ok.test", {
    command = { "sh", "-c", "yes | head -c 200000" }, max_output = 1000 }))
  t.eq(r, nil)
  t.eq(err.reason, "too_big")
  t.ok(err.message:find("1000 bytes", 1, true), err.message)
  r = assert(ssh.run(target("ok.test", {
    command = { "sh", "-c", "yes | head -c 1000" }, max_output = 1000 })))
  t.eq(#r.stdout, 1000)
end)

t.test("a host that does not answer is given up at the time limit",
       function()
  local started = _navette.sys.now()
  local r, err = ssh.run(target("slow.test", { command = { "true" },
                                               timeout = 1 }))
  t.eq(r, nil)
  t.eq(err.reason, "timeout")
  t.ok(_navette.sys.now() - started < 10, "killed at the limit")
end)

t.test("values ssh would misread are refused, naming the field", function()
  local r, err = ssh.run(target("-oProxyCommand=touch x",
                                { command = { "true" } }))
  t.eq(r, nil)
  t.eq(err.code, "invalid")
  t.ok(err.message:find("host", 1, true), err.message)
  r, err = ssh.run(target("ok.test", { known_hosts = "known_hosts",
                                       command = { "true" } }))
  t.ok(err.message:find("known_hosts", 1, true), err.message)
  r, err = ssh.run(target("ok.test", { command = { "echo", "a\0b" } }))
  t.ok(err.message:find("NUL", 1, true), err.message)
  t.ok(not pcall(ssh.run, { user = "alice", command = { "true" } }),
       "no host raises")
  t.ok(not pcall(ssh.run, target("ok.test", { command = {} })),
       "no command raises")
  t.ok(not pcall(ssh.run, target("ok.test", { command = { "true" },
                                               port = 70000 })),
       "a port out of range raises")
end)

t.test("fingerprints and known_hosts lines", function()
  local key = "AAAAC3NzaC1lZDI1NTE5AAAAIGNJ/M0CT1BgX/P/NRxHVTpVqDjnPdkI"
              .. "akR1lk2fXRF5"
  t.eq(ssh.fingerprint("ssh-ed25519 " .. key .. " navette-test"),
       "SHA256:5P49M9WKN1oRdR/zUaNjM0bxWgYQDWpwhrsGPiPLn94")
  local fp, err = ssh.fingerprint("ssh-rsa " .. key)
  t.eq(fp, nil)
  t.eq(err.code, "invalid")
  t.eq(ssh.known_hosts_line("Login", 2222, "ssh-ed25519", key),
       "[login]:2222 ssh-ed25519 " .. key)
  t.eq(ssh.known_hosts_line("login", 22, "ssh-ed25519", key),
       "login ssh-ed25519 " .. key)
end)

t.test("plan mode runs no ssh", function()
  _navette.core.set_plan(true)
  local r, err = ssh.run(target("ok.test", { command = { "true" } }))
  _navette.core.set_plan(false)
  t.eq(r, nil)
  t.eq(err.code, "not_run")
  t.eq(err.reason, "not_run")
end)

t.test("first contact's probe", function()
  local r, err = ssh.probe { host = "ok.test", port = 2222, user = "alice",
                             known_hosts = dir .. "/throwaway", timeout = 5 }
  t.ok(r, err and err.message)
  t.eq(r.status, 254, "the stand-in ran and refused the probe's options")
  t.match(r.stderr, "no StrictHostKeyChecking=yes", "it accepts any key")
  r, err = ssh.probe { host = "ok.test", user = "alice",
                       known_hosts = "throwaway" }
  t.eq(r, nil)
  t.eq(err.code, "invalid")
  t.ok(err.message:find("known_hosts", 1, true), err.message)
  r, err = ssh.probe { host = "-oProxyCommand=x", user = "alice",
                       known_hosts = dir .. "/throwaway" }
  t.ok(err and err.message:find("host", 1, true), "a host read as an option")
  t.ok(not pcall(ssh.probe, { host = "ok.test", known_hosts = "/x" }),
       "no user raises")
  _navette.core.set_plan(true)
  r, err = ssh.probe { host = "ok.test", user = "alice",
                       known_hosts = dir .. "/throwaway" }
  _navette.core.set_plan(false)
  t.eq(err and err.code, "not_run", "plan mode runs no ssh")
end)
