-- _navette.json: stable encoding, bounded decoding.
local t = test
local json = _navette.json

t.test("objects are encoded with sorted keys", function()
  t.eq(json.encode({ b = 1, a = { 2, 3 }, c = "x" }),
       '{"a":[2,3],"b":1,"c":"x"}')
end)

t.test("empty arrays and null survive", function()
  t.eq(json.encode({ list = json.array(), none = json.null }),
       '{"list":[],"none":null}')
  local v = json.decode('{"a":[],"b":null,"c":[1,{"d":true}]}')
  t.eq(json.encode(v), '{"a":[],"b":null,"c":[1,{"d":true}]}')
end)

t.test("malformed JSON is an error value, not a crash", function()
  local v, err = json.decode('{"a": [1, 2')
  t.eq(v, nil)
  t.match(err, "malformed JSON")
end)

t.test("cycles and functions are refused", function()
  local a = {}
  a.self = a
  t.raises(function() json.encode(a) end, "nesting deeper")
  t.raises(function() json.encode({ f = print }) end, "cannot encode")
end)

t.test("deep documents are bounded", function()
  local deep = string.rep("[", 100) .. string.rep("]", 100)
  t.raises(function() json.decode(deep) end, "deeper")
end)

-- JSON carries UTF-8 text only: a NUL (C would cut the string short) or a
-- byte that is not UTF-8 (invalid JSON) is refused, naming the key and
-- the byte offset, never written
t.test("text that JSON cannot carry is refused, naming key and offset",
       function()
  t.raises(function() json.encode({ arg = "ab\0cd" }) end,
           "string at key 'arg' holds a NUL byte at byte offset 2")
  t.raises(function() json.encode({ arg = "abc\xff" }) end,
           "string at key 'arg' holds a byte that is not UTF%-8 at byte "
           .. "offset 3")
  t.raises(function() json.encode({ "ok", "\xed\xa0\x80" }) end,
           "a string in an array holds a byte that is not UTF%-8 at byte "
           .. "offset 0")
  t.raises(function() json.encode({ ["k\xc0\xaf"] = 1 }) end,
           "the key 'k\\xc0\\xaf' holds a byte that is not UTF%-8 at "
           .. "byte offset 1")
  t.raises(function() json.encode({ ["a\0b"] = 1 }) end,
           "the key 'a\\x00b' holds a NUL byte at byte offset 1")
  t.raises(function() json.encode({ x = { y = "\xf4\x90\x80\x80" } }) end,
           "key 'y'")
  t.raises(function() json.encode("\xe2\x82") end, "offset 0")
  t.eq(json.encode({ s = "héllo ✓ 日本 \u{10FFFF}" }),
       '{"s":"héllo ✓ 日本 \u{10FFFF}"}')
end)

-- numbers beyond an integer's range decode as floats, never through an
-- undefined conversion (the UBSan build runs this file)
t.test("huge numbers decode as floats", function()
  local v = json.decode('[9223372036854775808, 1e300, -1e300, 3, 2.5]')
  t.eq(math.type(v[1]), "float")
  t.eq(v[1], 2 ^ 63)
  t.eq(v[2], 1e300)
  t.eq(v[3], -1e300)
  t.eq(math.type(v[4]), "integer")
  t.eq(v[5], 2.5)
end)

-- The encoder writes text itself (no cJSON tree); what it writes is what
-- cJSON_PrintUnformatted printed for the same value (the expected texts
-- below are cJSON 1.7.15's), so stored specs and records keep their bytes.
t.test("strings are escaped as cJSON escapes them", function()
  t.eq(json.encode("a\"b\\c\n\r\t\b\f\1\31\127/é"),
       '"a\\"b\\\\c\\n\\r\\t\\b\\f\\u0001\\u001f\127/é"')
  t.eq(json.encode({ ["k\n\""] = "" }), '{"k\\n\\"":""}')
  t.eq(json.encode({}), "{}")
end)

t.test("numbers are printed as cJSON prints them", function()
  local cases = {
    { 0, "0" }, { -0.0, "-0" }, { 3, "3" }, { -1, "-1" }, { 1.5, "1.5" },
    { 0.1, "0.1" }, { 1e-7, "1e-07" }, { 123456789012, "123456789012" },
    { 3e9, "3000000000" }, { -3e9, "-3000000000" },
    { 2147483647, "2147483647" }, { 2147483648, "2147483648" },
    { -2147483648, "-2147483648" }, { -2147483649, "-2147483649" },
    { 1e300, "1e+300" }, { -1e-300, "-1e-300" },
    { 0.30000000000000004, "0.3" }, { 1 / 3, "0.33333333333333331" },
    { 2.5e-5, "2.5e-05" }, { 6.02e23, "6.02e+23" }, { 1e20, "1e+20" },
    { 4.35, "4.35" }, { 9007199254740993, "9.00719925474099e+15" },
    { 12.75, "12.75" },
  }
  for _, c in ipairs(cases) do
    t.eq(json.encode(c[1]), c[2], tostring(c[1]))
    t.eq(json.encode({ c[1] }), "[" .. c[2] .. "]")
  end
  t.raises(function() json.encode(0 / 0) end, "nan or inf")
  t.raises(function() json.encode({ x = math.huge }) end, "nan or inf")
end)

t.test("pretty printing is cJSON's layout", function()
  t.eq(json.encode({ a = { 1, 2 }, b = "x" }, true),
       '{\n\t"a":\t[1, 2],\n\t"b":\t"x"\n}')
end)

-- json.same: what the runner compares a job of its two passes with
-- (util.same)
t.test("same: plain tables compared key by key", function()
  local a = { name = "x", env = { A = "1" }, list = json.array({ 1, 2 }),
              none = json.array() }
  local b = { name = "x", env = { A = "1" }, list = json.array({ 1, 2.0 }),
              none = json.array() }
  t.eq(json.same(a, b), true)
  b.env.A = "2"
  t.eq(json.same(a, b), false)
  b.env.A, b.extra = "1", true
  t.eq(json.same(a, b), false)
  t.eq(json.same(a, b, { extra = true }), true)
  -- skip holds at the top only
  b.extra, b.env.image = nil, "i"
  t.eq(json.same(a, b, { image = true }), false)
  b.env.image = nil
  t.eq(json.same(a, b), true)
  -- another metatable: not plain, so not the same (but itself)
  local sealed = setmetatable({}, { __index = function() return 1 end })
  t.eq(json.same({ s = sealed }, { s = setmetatable({}, {}) }), false)
  t.eq(json.same({ s = sealed }, { s = sealed }), true)
  t.eq(json.same({ [{}] = 1 }, { [{}] = 1 }), false)
  t.eq(json.same(1, 1.0), true)
  t.eq(json.same("a", "b"), false)
  local deep, other = {}, {}
  local d, o = deep, other
  for _ = 1, 40 do d.x, o.x = {}, {}; d, o = d.x, o.x end
  t.eq(json.same(deep, other), false)
end)
