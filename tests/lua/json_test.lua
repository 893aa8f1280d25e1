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
