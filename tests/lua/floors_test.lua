-- The floors of the Lua layer, read from the sources (lua/navette): the
-- require graph has no cycle, nothing the runner requires requires it
-- back, and only backends/init.lua requires a backend's file (the others
-- look one up by name: backends.get). A require made inside a function
-- counts as much as one at the top: a loop hidden in a function is a loop.
local t = test
local sys = _navette.sys

local here = debug.getinfo(1, "S").source:match("^@(.*)/[^/]*$") or "."
local ROOT = here .. "/../../lua"

-- The text of a line without its comment (a "--" outside a string).
local function code_of(line)
  local quote
  local i = 1
  while i <= #line do
    local c = line:sub(i, i)
    if quote then
      if c == "\\" then
        i = i + 1
      elseif c == quote then
        quote = nil
      end
    elseif c == '"' or c == "'" then
      quote = c
    elseif line:sub(i, i + 1) == "--" then
      return line:sub(1, i - 1)
    end
    i = i + 1
  end
  return line
end

-- module name -> {path, requires = {name -> first line}}
local function read_modules()
  local mods = {}
  local function walk(dir, prefix)
    local names = sys.listdir(dir) or {}
    table.sort(names)
    for _, n in ipairs(names) do
      local path = dir .. "/" .. n
      local st = sys.stat(path)
      if st and st.type == "directory" then
        walk(path, prefix .. n .. ".")
      elseif n:match("%.lua$") then
        local name = prefix .. n:gsub("%.lua$", "")
        name = name:gsub("%.init$", "")
        mods[name] = { path = path, requires = {} }
      end
    end
  end
  walk(ROOT .. "/navette", "navette.")
  for name, m in pairs(mods) do
    local n = 0
    for line in io.lines(m.path) do
      n = n + 1
      for req in code_of(line):gmatch("require%s*%(?%s*[\"']([%w_.]+)[\"']") do
        if req ~= name and not m.requires[req] then m.requires[req] = n end
      end
    end
  end
  return mods
end

local mods = read_modules()

t.test("the sources are found", function()
  t.ok(mods["navette.runner"] ~= nil, "navette.runner under " .. ROOT)
  t.ok(mods["navette.context"] ~= nil, "navette.context")
  local count = 0
  for _ in pairs(mods) do count = count + 1 end
  t.ok(count > 50, "the modules of lua/navette (" .. count .. ")")
end)

-- The cycles of the graph (Tarjan's strongly connected components of more
-- than one module), each as a sorted list.
local function cycles(graph)
  local index, low, stack, on, out, i = {}, {}, {}, {}, {}, 0
  local function visit(v)
    i = i + 1
    index[v], low[v] = i, i
    stack[#stack + 1], on[v] = v, true
    for w in pairs(graph[v] and graph[v].requires or {}) do
      if graph[w] then
        if not index[w] then
          visit(w)
          low[v] = math.min(low[v], low[w])
        elseif on[w] then
          low[v] = math.min(low[v], index[w])
        end
      end
    end
    if low[v] == index[v] then
      local c = {}
      repeat
        local w = table.remove(stack)
        on[w] = nil
        c[#c + 1] = w
      until w == v
      if #c > 1 then
        table.sort(c)
        out[#out + 1] = c
      end
    end
  end
  local names = {}
  for v in pairs(graph) do names[#names + 1] = v end
  table.sort(names)
  for _, v in ipairs(names) do if not index[v] then visit(v) end end
  return out
end

-- The edges of a cycle, "a -> b (line n)", for the message.
local function edges_of(cycle)
  local inside, lines = {}, {}
  for _, v in ipairs(cycle) do inside[v] = true end
  for _, v in ipairs(cycle) do
    local targets = {}
    for w in pairs(mods[v].requires) do
      if inside[w] then targets[#targets + 1] = w end
    end
    table.sort(targets)
    for _, w in ipairs(targets) do
      lines[#lines + 1] = v .. " -> " .. w .. " (line "
                          .. mods[v].requires[w] .. ")"
    end
  end
  return table.concat(lines, "; ")
end

t.test("the require graph has no cycle", function()
  local found = cycles(mods)
  local text = {}
  for _, c in ipairs(found) do text[#text + 1] = edges_of(c) end
  t.eq(#found, 0, "require loops: " .. table.concat(text, " | "))
end)

t.test("a loop planted in a copy of the graph is found", function()
  -- (the check above cannot pass by not looking)
  local copy = {}
  for name, m in pairs(mods) do
    local r = {}
    for k, v in pairs(m.requires) do r[k] = v end
    copy[name] = { requires = r }
  end
  copy["navette.context"].requires["navette.runner"] = 1
  t.ok(#cycles(copy) >= 1, "context -> runner makes a loop")
end)

t.test("nothing the runner requires requires it", function()
  local below, todo = {}, { "navette.runner" }
  while #todo > 0 do
    local v = table.remove(todo)
    for w in pairs(mods[v] and mods[v].requires or {}) do
      if mods[w] and not below[w] then
        below[w] = true
        todo[#todo + 1] = w
      end
    end
  end
  local up = {}
  for v in pairs(below) do
    if mods[v].requires["navette.runner"] then up[#up + 1] = v end
  end
  table.sort(up)
  t.eq(table.concat(up, ", "), "", "modules below the runner requiring it")
  t.ok(below["navette.run.submit"] and below["navette.context"],
       "the runner's floors are below it")
end)

t.test("only backends/init.lua requires a backend's file", function()
  local bad = {}
  for name, m in pairs(mods) do
    for req, line in pairs(m.requires) do
      if req:match("^navette%.backends%.") and name ~= "navette.backends" then
        bad[#bad + 1] = name .. " (line " .. line .. ") requires " .. req
      end
    end
  end
  table.sort(bad)
  t.eq(table.concat(bad, "; "), "", "look the backend up by name: "
       .. "require(\"navette.backends\").get(name)")
end)

t.test("no module outside backends/ compares a backend's name", function()
  local bad = {}
  for name, m in pairs(mods) do
    if not name:match("^navette%.backends") then
      local n = 0
      for line in io.lines(m.path) do
        n = n + 1
        local code = code_of(line)
        local quoted = "[\"'][%w_-]+[\"']"
        if code:match("backend%s*[=~]=%s*[\"']")
           or code:match(quoted .. "%s*[=~]=%s*[%w_.]*backend%f[^%w_]") then
          bad[#bad + 1] = name .. " (line " .. n .. ")"
        end
      end
    end
  end
  table.sort(bad)
  t.eq(table.concat(bad, "; "), "", "ask the backend's contract instead "
       .. "(backends/init.lua)")
end)
