-- Error objects of the library: {code, message, hint}. Messages about a
-- recipe carry "file:line:" of the recipe's own frame (not the library's),
-- found by walking the stack past library chunks, whose names start with
-- "navette/".
local errors = {}

-- code -> CLI exit status (README "Exit codes")
errors.exit_status = {
  failed = 1,
  recipe = 2, invalid = 2, usage = 2, not_found = 2,
  refused = 3,
  backend = 4, io = 4, no_memory = 4,
  interrupted = 130, -- Ctrl-C, as a shell reports SIGINT
}

local function is_library(source)
  return source:sub(1, 8) == "navette/" or source:sub(1, 1) == "="
end

-- "recipe.lua:12:" of the innermost frame that belongs to a recipe, or "".
function errors.where()
  for level = 2, 64 do
    local info = debug.getinfo(level, "Sl")
    if not info then break end
    if info.what ~= "C" and not is_library(info.short_src)
       and info.currentline and info.currentline > 0 then
      return info.short_src .. ":" .. info.currentline .. ": "
    end
  end
  return ""
end

function errors.new(code, message, hint)
  return setmetatable({ code = code, message = message, hint = hint },
                      errors.mt)
end

errors.mt = {
  __tostring = function(e)
    if e.hint then return e.message .. "\n  check: " .. e.hint end
    return e.message
  end,
}

-- Raises an error located at the recipe's current line.
function errors.raise(code, message, hint)
  error(errors.new(code, errors.where() .. message, hint), 0)
end

-- Turns a native (nil, err) into a raise, keeping code and hint.
function errors.check(value, err, context)
  if value ~= nil then return value end
  local message = err and err.message or "unknown error"
  if context then message = context .. ": " .. message end
  errors.raise(err and err.code or "io", message, err and err.hint)
end

-- Normalises anything caught by pcall into an error object.
function errors.from(caught)
  if type(caught) == "table" then
    return errors.new(caught.code or "recipe", tostring(caught.message),
                      caught.hint)
  end
  local message = tostring(caught)
  if message:find("not enough memory", 1, true) then
    return errors.new("recipe", "the recipe ran out of memory",
                      "it used more than the memory limit; "
                      .. "NAVETTE_MEMORY_LIMIT (bytes) raises it")
  end
  return errors.new("recipe", message, nil)
end

return errors
