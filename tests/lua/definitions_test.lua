-- The LuaLS definitions (navette definitions) cannot drift from the
-- validators: every field navette.job accepts is written with its type, a
-- field added to the table is written and accepted, an option key without
-- its annotation stops the generation, and every function a recipe can
-- call is declared.
local t = test
local job = require "navette.job"
local luals = require "navette.luals"

local function has_line(text, line)
  for l in text:gmatch("[^\n]+") do
    if l == line or l:sub(1, #line + 1) == line .. " " then return true end
  end
  return false
end

-- the lines `---@field NAME[?] TYPE` of class in text
local function class_fields(text, class)
  local fields, inside = {}, false
  for l in text:gmatch("[^\n]*") do
    if l == "---@class " .. class then
      inside = true
    elseif inside then
      local name, optional, rest = l:match("^%-%-%-@field ([%w_]+)(%??) (.*)$")
      if not name then break end
      -- rest is "TYPE DOC"; a type may hold spaces (table<K, V>)
      fields[name] = { rest = rest, optional = optional == "?" }
    end
  end
  return fields
end

t.test("every field the validator walks is written with its type", function()
  local text = luals.generate()
  local function check(class, fields)
    local written = class_fields(text, class)
    local count = 0
    for _, f in ipairs(fields) do
      count = count + 1
      t.ok(written[f.name], class .. "." .. f.name .. " is written")
      t.eq(written[f.name].rest:sub(1, #f.type + 1), f.type .. " ",
           class .. "." .. f.name .. " type")
      t.eq(written[f.name].optional, not f.required,
           class .. "." .. f.name .. " optional")
      if f.fields then check(f.type, f.fields) end
    end
    local n = 0
    for _ in pairs(written) do n = n + 1 end
    t.eq(n, count, class .. ": fields written")
  end
  check("navette.job.Spec", job.FIELDS)
  -- and these are the keys validation accepts, nothing more
  local e = t.raises(function()
    job.validate({ name = "a", command = { "x" }, resources = { gpu = 1 } })
  end, "unknown key 'gpu' in resources")
  t.match(e.hint, "^resources takes: cpus, memory, gpus, time_limit, ")
end)

t.test("a field added to the table is validated and written", function()
  local probe = { name = "zz_probe", type = "integer", kind = "number",
                  doc = "A probe field.", default = 7 }
  table.insert(job.FIELDS, probe)
  local ok, e = pcall(function()
    local j = job.validate({ name = "a", command = { "x" }, zz_probe = 3 })
    t.eq(j.zz_probe, 3, "accepted")
    t.eq(job.validate({ name = "a", command = { "x" } }).zz_probe, 7,
         "default")
    t.raises(function()
      job.validate({ name = "a", command = { "x" }, zz_probe = "x" })
    end, "'zz_probe' must be a number, got a string")
    t.ok(has_line(luals.generate(),
                  "---@field zz_probe? integer A probe field. Default: 7."),
         "written")
  end)
  table.remove(job.FIELDS)
  if not ok then error(e, 0) end
  t.ok(not luals.generate():find("zz_probe", 1, true), "gone again")
end)

t.test("an option key without type and doc stops the generation", function()
  local keys = require("navette.http").OPTIONS
  keys[#keys + 1] = "zz_option"
  local ok, e = pcall(luals.generate)
  keys[#keys] = nil
  t.ok(not ok, "generation refused")
  t.match(e.message, "navette.http.Options has no type or doc for "
          .. "'zz_option'")
  t.ok(has_line(luals.generate(), "---@field max_body? integer"),
       "the real keys are written")
end)

t.test("the option classes list exactly what the validators accept",
       function()
  local text = luals.generate()
  local image = require "navette.image"
  local lists = {
    ["navette.image.ReadOptions"] = image.OPTION_KEYS.read,
    ["navette.image.CodeLayerSpec"] = image.OPTION_KEYS.code_layer,
    ["navette.image.BuildSpec"] =
      require("navette.image.builder").OPTION_KEYS.build,
    ["navette.http.Options"] = require("navette.http").OPTIONS,
    ["navette.Credential"] = require("navette.creds").DECL_KEYS,
    ["navette.Profile"] = require("navette.project").KEYS.profile,
  }
  for class, keys in pairs(lists) do
    local written = class_fields(text, class)
    for _, k in ipairs(keys) do t.ok(written[k], class .. "." .. k) end
  end
  -- what the validator refuses is not offered
  t.raises(function() image.resolve("busybox", { platfrom = "x" }) end,
           "platfrom")
  t.ok(not class_fields(text, "navette.image.ReadOptions").platfrom)
end)

t.test("every function a recipe can call is declared", function()
  local text = luals.generate()
  local navette = require("navette.public").new() -- what recipes get
  local count = 0
  local function walk(prefix, tbl)
    for k, v in pairs(tbl) do
      if type(k) == "string" and k:sub(1, 1) ~= "_" then
        if type(v) == "function" then
          count = count + 1
          t.ok(text:find("\nfunction " .. prefix .. k .. "(", 1, true),
               prefix .. k .. " is declared")
        elseif type(v) == "table" and prefix == "navette." then
          walk(prefix .. k .. ".", v)
        end
      end
    end
  end
  walk("navette.", navette)
  t.ok(count >= 15, "functions found: " .. count)
end)

t.test("the definitions are one Lua file LuaLS reads as a library",
       function()
  local text = luals.generate()
  t.eq(text:match("^[^\n]*"), "---@meta navette", "first line")
  t.ok(text:find("\nreturn navette\n$"), "returns the module")
  local chunk, err = load(text, "=definitions", "t", {})
  t.ok(chunk, "parses: " .. tostring(err))
end)

t.test("the manual's list of job fields is the one made from the table",
       function()
  local util = require "navette.util"
  local here = debug.getinfo(1, "S").source:gsub("^@", "")
  local path = util.join(util.dirname(util.dirname(util.dirname(here))),
                         "lua/navette/doc/recipes.md")
  local f = assert(io.open(path, "rb"), "no manual page at " .. path)
  local readme = f:read("a")
  f:close()
  local listed = readme:match("\n<!%-%- navette%.job fields: begin %-%->\n"
                              .. "(.-)<!%-%- navette%.job fields: end %-%->")
  t.ok(listed, "doc/recipes.md holds the markers of the list")
  local made = luals.job_fields_markdown()
  if listed ~= made then
    error({ code = "assertion", message = "doc/recipes.md's list of navette.job "
            .. "fields differs from job.FIELDS; put this between its "
            .. "markers:\n" .. made }, 0)
  end
  -- every field, nested ones too, is in it
  local function each(fields, indent)
    for _, fd in ipairs(fields) do
      t.ok(made:find("\n" .. indent .. "- `" .. fd.name .. "` (", 1, true)
           or made:find("^" .. indent .. "- `" .. fd.name .. "` %("),
           "doc/recipes.md lists " .. fd.name)
      if fd.fields then each(fd.fields, indent .. "  ") end
    end
  end
  each(job.FIELDS, "")
end)
