-- Small helpers shared by the library: edit distance for suggestions,
-- sorted keys, the check of a table's keys, path joins, durations and
-- sizes.
local util = {}

function util.sorted_keys(t)
  local keys = {}
  for k in pairs(t) do keys[#keys + 1] = k end
  table.sort(keys, function(a, b) return tostring(a) < tostring(b) end)
  return keys
end

local function distance(a, b)
  local prev, cur = {}, {}
  for j = 0, #b do prev[j] = j end
  for i = 1, #a do
    cur[0] = i
    for j = 1, #b do
      local cost = a:sub(i, i) == b:sub(j, j) and 0 or 1
      cur[j] = math.min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost)
    end
    prev, cur = cur, prev
  end
  return prev[#b]
end

-- The words of Lua, which a table key cannot be written as bare.
local LUA_WORDS = {}
for w in ([[and break do else elseif end false for function goto if in
  local nil not or repeat return then true until while]]):gmatch("%a+") do
  LUA_WORDS[w] = true
end

-- name as a key in Lua source that a hint shows: bare where Lua takes it
-- (profiles = { gpu = ... }), else ["skimage-astronaut"], ["local"].
function util.lua_key(name)
  name = tostring(name)
  if name:match("^[%a_][%w_]*$") and not LUA_WORDS[name] then return name end
  return "[" .. string.format("%q", name) .. "]"
end

-- " (did you mean 'name'?)" when a known word is close to word.
function util.suggest(word, known)
  local best, best_d
  for _, k in ipairs(known) do
    local d = distance(word, k)
    if d <= 2 and (not best_d or d < best_d) then best, best_d = k, d end
  end
  return best and (" (did you mean '" .. best .. "'?)") or ""
end

-- Checks that every key of t is one of the names listed in known: for
-- the first that is not (in pairs order; a key that is not a string is
-- never known), calls refuse(key, suggestion, list), where suggestion is
-- util.suggest's " (did you mean ...?)" or "" and list is known joined
-- by ", ". refuse raises, with the caller's own message.
function util.check_keys(t, known, refuse)
  for k in pairs(t) do
    local ok = false
    for _, name in ipairs(known) do
      if k == name then ok = true; break end
    end
    if not ok then
      refuse(k, util.suggest(tostring(k), known), table.concat(known, ", "))
    end
  end
end

-- The table of options of a recipe call named what: raises "recipe" when
-- opts is not a table ("WHAT expects a table: WHAT" .. shape) or holds a
-- key not in keys (the hint "it takes: " and the list).
function util.check_options(what, opts, keys, shape)
  local errors = require "navette.errors"
  if type(opts) ~= "table" then
    errors.raise("recipe", what .. " expects a table: " .. what .. shape)
  end
  util.check_keys(opts, keys, function(k, suggestion, list)
    errors.raise("recipe", what .. ": unknown key '" .. tostring(k) .. "'"
                 .. suggestion, "it takes: " .. list)
  end)
end

-- JSON's array mark (_navette.json.array), the one metatable a plain
-- table of navette's may carry
local JSON_ARRAY = getmetatable(_navette.json.array({}))

-- A deep copy of a plain table (a recipe's declaration, a default);
-- any other value is returned as it is.
function util.deep_copy(v)
  if type(v) ~= "table" then return v end
  local t = {}
  for k, x in pairs(v) do t[k] = util.deep_copy(x) end
  return t
end

-- A deep copy of the plain tables in v, JSON's array mark kept (a
-- validated job's lists); any other value, a table with another
-- metatable (a sealed object) included, is the same value in the copy.
function util.clone(v)
  if type(v) ~= "table" then return v end
  local mt = getmetatable(v)
  if mt ~= nil and mt ~= JSON_ARRAY then return v end
  local t = {}
  for k, x in next, v do t[k] = util.clone(x) end
  return setmetatable(t, mt)
end

-- The check of a name field of a declaration (a job's, a task's), as
-- their field tables take it: (value, out, key) stores out.name, or calls
-- bad(message) when it is not letters, digits, '.', '_' and '-' (at most
-- 63, the first a letter or digit).
function util.name_check(bad)
  return function(v, out, key)
    if not v:match("^[%w][%w._-]*$") or #v > 63 then
      bad("'" .. key .. "' = '" .. v .. "': use letters, digits, '.', '_' "
          .. "and '-' (at most 63)")
    end
    out.name = v
  end
end

-- A declaration a recipe passed to name (navette.use, navette.sweep),
-- checked with its module's bad(message, hint): a table (else "expects a
-- table: " and name .. shape) of the keys listed.
function util.check_declaration(decl, keys, bad, name, shape)
  if type(decl) ~= "table" then
    bad("expects a table: " .. name .. shape)
  end
  util.check_keys(decl, keys, function(k, suggestion, list)
    bad("unknown key '" .. tostring(k) .. "'" .. suggestion,
        name .. " takes: " .. list)
  end)
end

function util.dirname(path)
  local dir = path:match("^(.*)/[^/]*$")
  if dir == nil then return "." end
  if dir == "" then return "/" end
  return dir
end

function util.basename(path)
  return path:match("([^/]*)/*$")
end

function util.join(a, b)
  if b:sub(1, 1) == "/" then return b end
  if a:sub(-1) == "/" then return a .. b end
  return a .. "/" .. b
end

-- The largest size or duration taken: a double holds every whole number
-- up to it exactly and C's int64 takes it (8 PiB; 285 million years).
-- Beyond it, and NaN and infinities, are mistakes, refused.
util.NUMBER_MAX = 2 ^ 53

-- "90", "90s", "30m", "2h", "1d" -> seconds
function util.parse_duration(v)
  if type(v) == "number" then
    return v > 0 and v <= util.NUMBER_MAX and v or nil
  end
  if type(v) ~= "string" then return nil end
  local n, unit = v:match("^(%d+%.?%d*)%s*([smhd]?)$")
  if not n then return nil end
  local mult = ({ [""] = 1, s = 1, m = 60, h = 3600, d = 86400 })[unit]
  local secs = tonumber(n) * mult
  return secs > 0 and secs <= util.NUMBER_MAX and secs or nil
end

-- 1024, "512MiB", "4GiB", "2G", "100MB" -> bytes
function util.parse_size(v)
  if type(v) == "number" then
    return v > 0 and v <= util.NUMBER_MAX and math.floor(v) or nil
  end
  if type(v) ~= "string" then return nil end
  local n, unit = v:match("^(%d+%.?%d*)%s*(%a*)$")
  if not n then return nil end
  local units = {
    [""] = 1, B = 1, K = 1024, KB = 1000, KiB = 1024, M = 1024 ^ 2,
    MB = 1000 ^ 2, MiB = 1024 ^ 2, G = 1024 ^ 3, GB = 1000 ^ 3,
    GiB = 1024 ^ 3, T = 1024 ^ 4, TB = 1000 ^ 4, TiB = 1024 ^ 4,
  }
  local mult = units[unit]
  if not mult then return nil end
  local bytes = tonumber(n) * mult
  return bytes <= util.NUMBER_MAX and math.floor(bytes) or nil
end

-- Days since 1970-01-01 of a civil date (Howard Hinnant's algorithm).
local function days_from_civil(y, m, d)
  if m <= 2 then y = y - 1 end
  local era = (y >= 0 and y or y - 399) // 400
  local yoe = y - era * 400
  local mp = (m + 9) % 12
  local doy = (153 * mp + 2) // 5 + d - 1
  local doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
  return era * 146097 + doe - 719468
end

-- "2025-01-31T12:00:00Z" (a fraction, a "+HH:MM" offset allowed) ->
-- seconds since 1970 (with the fraction), or nil.
function util.parse_iso8601(v)
  if type(v) ~= "string" then return nil end
  local y, mo, d, h, mi, s, rest =
    v:match("^(%d%d%d%d)-(%d%d)-(%d%d)[T ](%d%d):(%d%d):(%d%d)(.*)$")
  if not y then return nil end
  local frac = rest:match("^(%.%d+)") or ""
  rest = rest:sub(#frac + 1)
  local offset = 0
  if rest ~= "Z" and rest ~= "" then
    local sign, oh, om = rest:match("^([+-])(%d%d):?(%d%d)$")
    if not sign then return nil end
    offset = (tonumber(oh) * 3600 + tonumber(om) * 60)
             * (sign == "+" and 1 or -1)
  end
  y, mo, d = tonumber(y), tonumber(mo), tonumber(d)
  h, mi, s = tonumber(h), tonumber(mi), tonumber(s)
  if mo < 1 or mo > 12 or d < 1 or d > 31 or h > 23 or mi > 59 or s > 60 then
    return nil
  end
  return days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + s
         - offset + (frac ~= "" and tonumber("0" .. frac) or 0)
end

function util.human_size(n)
  if n < 1024 then return string.format("%d B", n) end
  local units = { "KiB", "MiB", "GiB", "TiB" }
  local i = 0
  repeat n = n / 1024; i = i + 1 until n < 1024 or i == #units
  return string.format("%.1f %s", n, units[i])
end

-- s with every byte outside RFC 3986's unreserved set percent-encoded
-- (as %XX); keep_slash leaves '/' as it is (a path).
function util.url_encode(s, keep_slash)
  return (s:gsub(keep_slash and "[^%w%-%._~/]" or "[^%w%-%._~]", function(c)
    return string.format("%%%02X", c:byte())
  end))
end

-- "https://Host:443/x" -> "https://host:443", host
function util.origin_of(url)
  local scheme, authority = url:match("^(%a[%w+.-]*)://([^/?#]+)")
  if not scheme then return nil end
  authority = authority:gsub("^.*@", ""):lower()
  local host = authority:gsub(":%d+$", "")
  if not authority:find(":%d+$") then
    authority = authority .. (scheme:lower() == "https" and ":443" or ":80")
  end
  return scheme:lower() .. "://" .. authority, host
end

-- Whether a and b hold the same: equal values, or plain tables with the
-- same keys and, key by key, the same (keys of skip left out at the top).
-- Plain: no metatable but JSON's array mark (which runner.spec puts on
-- some of a declaration's lists). Where it says no, first_difference
-- names what differs. util.same(a, b [, skip]), in C (json.same).
util.same = _navette.json.same

-- The path of the first field where two declared jobs differ ("command",
-- "env.EPOCHS", "inputs.data"...), or nil when they are the same value.

function util.first_difference(a, b, path, depth, skip)
  depth = depth or 0
  if type(a) ~= "table" or type(b) ~= "table" then
    if a == b then return nil end
    return path or "value"
  end
  if rawequal(a, b) then return nil end
  if depth > 32 then return path or "value" end
  local keys = {}
  for k in next, a do keys[#keys + 1] = k end
  for k in next, b do
    if rawget(a, k) == nil then keys[#keys + 1] = k end
  end
  table.sort(keys, function(x, y) return tostring(x) < tostring(y) end)
  for _, k in ipairs(keys) do
    if not (skip and skip[k]) then
      local sub = (path and (path .. ".") or "") .. tostring(k)
      local d = util.first_difference(rawget(a, k), rawget(b, k), sub,
                                      depth + 1)
      if d then return d end
    end
  end
  return nil
end

return util
