-- navette.sweep{ job = {...}, matrix = {...}, exclude = {...},
-- include = {...} }: one job per combination of the matrix's values (the
-- cartesian product, as in CI matrices), each a navette.job of its own.
-- A job of the sweep is named after the job and its parameters,
-- "train[lr=0.001,seed=2]" (keys in alphabetical order), gets each
-- parameter in its environment (NAVETTE_PARAM_LR=0.001) and carries them
-- in its spec and its run record (`params`).
local errors = require "navette.errors"
local util = require "navette.util"

local sweep = {}

sweep.KEYS = { "job", "matrix", "exclude", "include" }
-- a sweep larger than this is a mistake more often than a plan
sweep.MAX_JOBS = 10000
local PARAM_MAX, VALUE_MAX = 32, 64

local bad = errors.raiser("recipe", "navette.sweep: ")

-- A parameter's value as text: what the name, the environment and the
-- record carry.
local function text_of(v, where)
  local kind = type(v)
  if kind == "number" then
    if v ~= v or v == math.huge or v == -math.huge then
      bad(where .. ": a value must be a finite number")
    end
    -- 1 and 1.0 are one value ("1")
    local whole = math.tointeger(v)
    return whole and string.format("%d", whole) or tostring(v)
  elseif kind == "boolean" then
    return tostring(v)
  elseif kind == "string" then
    if #v == 0 or #v > VALUE_MAX or not v:match("^[%w._+-]+$") then
      bad(where .. ": '" .. v .. "' is not a value a job name can carry",
          "values are numbers, booleans, or strings of letters, digits, "
          .. "'.', '_', '+' and '-' (at most " .. VALUE_MAX .. ")")
    end
    return v
  end
  bad(where .. ": a value is a number, a boolean or a string (found a "
      .. kind .. ")")
end

local function env_name(key)
  return "NAVETTE_PARAM_" .. key:upper()
end

-- The matrix's keys (sorted) and each one's values as text.
local function axes(matrix)
  if type(matrix) ~= "table" then
    bad("matrix must be a table of name = { value, ... }")
  end
  local keys, seen = {}, {}
  for k in pairs(matrix) do
    if type(k) ~= "string" or #k > PARAM_MAX or not k:match("^%a[%w_]*$") then
      bad("matrix: '" .. tostring(k) .. "' is not a parameter name",
          "names are a letter then letters, digits and '_' (at most "
          .. PARAM_MAX .. ")")
    end
    local upper = env_name(k)
    if seen[upper] then
      bad("matrix: '" .. k .. "' and '" .. seen[upper] .. "' give the "
          .. "same variable " .. upper)
    end
    seen[upper] = k
    keys[#keys + 1] = k
  end
  table.sort(keys)
  local values = {}
  for _, k in ipairs(keys) do
    local list = matrix[k]
    if type(list) ~= "table" or #list == 0 then
      bad("matrix." .. k .. " must be a non-empty list of values")
    end
    for key in pairs(list) do
      if math.type(key) ~= "integer" or key < 1 or key > #list then
        bad("matrix." .. k .. " must be a list (found the key '"
            .. tostring(key) .. "')")
      end
    end
    local texts, dup = {}, {}
    for i, v in ipairs(list) do
      local s = text_of(v, "matrix." .. k .. "[" .. i .. "]")
      if dup[s] then bad("matrix." .. k .. ": the value " .. s .. " is "
                         .. "listed twice") end
      dup[s] = true
      texts[#texts + 1] = s
    end
    values[k] = texts
  end
  return keys, values
end

-- A list of assignments (exclude or include): each a table key = value
-- over the matrix's keys; all of them when `full`.
local function assignments(list, what, keys, full)
  if list == nil then return {} end
  if type(list) ~= "table" then
    bad(what .. " must be a list of { name = value, ... }")
  end
  local known = {}
  for _, k in ipairs(keys) do known[k] = true end
  local out = {}
  for i, entry in ipairs(list) do
    local where = what .. "[" .. i .. "]"
    if type(entry) ~= "table" or next(entry) == nil then
      bad(where .. " must be a table of name = value")
    end
    local a = {}
    for k, v in pairs(entry) do
      if not known[k] then
        bad(where .. ": '" .. tostring(k) .. "' is not a key of the matrix"
            .. util.suggest(tostring(k), keys),
            "the matrix's keys are: " .. table.concat(keys, ", "))
      end
      a[k] = text_of(v, where .. "." .. k)
    end
    if full then
      for _, k in ipairs(keys) do
        if a[k] == nil then
          bad(where .. " names no value for '" .. k .. "'",
              "an included combination names a value for every key of "
              .. "the matrix (" .. table.concat(keys, ", ") .. ")")
        end
      end
    end
    out[#out + 1] = a
  end
  local n = 0
  for _ in pairs(list) do n = n + 1 end
  if #out ~= n then
    bad(what .. " must be a list (a table with keys 1..n)")
  end
  return out
end

local function matches(combo, partial)
  for k, v in pairs(partial) do
    if combo[k] ~= v then return false end
  end
  return true
end

local function suffix(keys, combo)
  local parts = {}
  for i, k in ipairs(keys) do parts[i] = k .. "=" .. combo[k] end
  return "[" .. table.concat(parts, ",") .. "]"
end

-- The combinations of decl, in order: the product with the last key
-- varying fastest, less those excluded, then those included (a
-- combination already there is not repeated). -> keys, combos
function sweep.combinations(decl)
  local keys, values = axes(decl.matrix)
  local exclude = assignments(decl.exclude, "exclude", keys, false)
  local include = assignments(decl.include, "include", keys, true)
  local total = 1
  for _, k in ipairs(keys) do
    -- checked as it grows: a product of many keys would wrap around
    total = total * #values[k]
    if total > sweep.MAX_JOBS then
      bad("the matrix makes more than " .. sweep.MAX_JOBS .. " jobs",
          "split the sweep, or narrow the matrix")
    end
  end
  if #include > sweep.MAX_JOBS then
    bad("include adds more than " .. sweep.MAX_JOBS .. " jobs",
        "split the sweep")
  end
  local combos, seen = {}, {}
  local function add(c)
    local id = suffix(keys, c)
    if not seen[id] then
      seen[id] = true
      combos[#combos + 1] = c
    end
  end
  for n = 0, total - 1 do
    local c, rest = {}, n
    for i = #keys, 1, -1 do
      local list = values[keys[i]]
      c[keys[i]] = list[rest % #list + 1]
      rest = rest // #list
    end
    local excluded = false
    for _, e in ipairs(exclude) do
      if matches(c, e) then excluded = true; break end
    end
    if not excluded then add(c) end
  end
  for _, c in ipairs(include) do add(c) end
  -- (the jobs made: the product less what exclude left out, and what
  -- include added that was not there already)
  if #combos > sweep.MAX_JOBS then
    bad("the matrix and its include make " .. #combos .. " jobs, more than "
        .. sweep.MAX_JOBS, "split the sweep, or narrow the matrix")
  end
  if #combos == 0 then
    bad("every combination of the matrix is excluded")
  end
  return keys, combos
end

-- The jobs of a sweep, each {decl = the job's table for navette.job,
-- suffix = what its name gets, params = key -> text}. The launcher gives
-- the command each parameter as NAVETTE_PARAM_<KEY> (host/jobs/launcher.c;
-- a job's own env cannot name NAVETTE_* variables).
function sweep.expand(decl)
  util.check_declaration(decl, sweep.KEYS, bad, "navette.sweep",
                         "{ job = {...}, matrix = {...} }")
  if type(decl.job) ~= "table" then
    bad("job must be the table a navette.job takes")
  end
  local keys, combos = sweep.combinations(decl)
  local out = {}
  for i, c in ipairs(combos) do
    out[i] = { decl = decl.job, suffix = suffix(keys, c), params = c }
  end
  return out
end

return sweep
