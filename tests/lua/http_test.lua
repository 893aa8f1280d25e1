-- navette.http's policy: verification cannot be switched off, a
-- credential goes only to the host its declaration names, plain http
-- only on loopback.
-- (these tests load declarations as a trusted project's: the trust gate
-- itself is trust_test.lua's)
_navette.core.set_trusted(true)
local t = test
local http = require "navette.http"
local sys = _navette.sys

t.test("TLS verification cannot be switched off", function()
  for _, opt in ipairs({ "insecure", "verify", "ssl_verify" }) do
    t.raises(function()
      http.request("https://example.invalid/", { [opt] = false })
    end, "cannot be switched off")
  end
end)

t.test("unknown options and non-URLs are refused", function()
  t.raises(function() http.request("https://example.invalid/",
                                   { retries = 3 }) end, "unknown option")
  t.raises(function() http.request("example.invalid") end, "not a URL")
end)

t.test("plain http is refused off loopback, before any connection", function()
  local e = t.raises(function() http.get("http://example.invalid/") end)
  t.match(e.message, "TLS")
end)

t.test("a credential without a declared host is sent nowhere", function()
  local dir = t.tmpdir()
  assert(sys.write_file(dir .. "/tok", "tok-" .. sys.random_hex(12), 384))
  local handle = assert(_navette.creds.load{ name = "api", kind = "bearer",
                                             source = "file",
                                             path = dir .. "/tok" })
  require("navette.context").enter { profile = { name = "p", credentials = {
    api = { name = "api", kind = "bearer", source = "file" } } } }
  t.raises(function()
    http.get("https://example.invalid/", { credential = handle })
  end, "declares no host")
  require("navette.context").enter { profile = { name = "p", credentials = {
    api = { name = "api", kind = "bearer", source = "file",
            host = "127.0.0.1" } } } }
  -- bound to 127.0.0.1: refused for another host, before connecting
  local e = t.raises(function()
    http.get("http://localhost:9/", { credential = handle })
  end)
  t.match(e.message, "bound to")
  require("navette.context").enter()
end)

t.test("endpoint origins are normalised", function()
  t.eq(http.origin_of("https://Example.COM/x"), "https://example.com:443")
  t.eq(http.origin_of("http://u:p@h:8080/"), "http://h:8080")
end)
