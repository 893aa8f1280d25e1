-- Error objects of the library: {code, message, hint}. Messages about a
-- recipe carry "file:line:" of the recipe's own frame (not the library's),
-- found by walking the stack past library chunks, whose names start with
-- "navette/".
--
-- The one error convention of the Lua API (STYLE rule 3), for every
-- public function of navette.storage, navette.image, navette.http and
-- navette.creds:
--   * A failure raises an error object: misuse (a wrong argument) and
--     expected failures alike (denied, unreachable, invalid), with the
--     native error's code and hint (errors.check). The CLI maps the code
--     to its exit status (errors.exit_status).
--   * An answer to "is it there?" is a result, not a failure:
--     storage.head returns nil and a not_found error object for a missing
--     object, image.exists returns false. Their other failures raise.
--   * Each function of navette.storage, navette.image and navette.http
--     that can fail has a non-raising twin, try_<name>
--     (storage.try_read, image.try_resolve, http.try_request...), made
--     by errors.add_try: it returns what the function returns, or nil
--     and the error object instead of raising. Trusted code calls the
--     twin rather than wrapping a call in pcall; a recipe uses pcall.
-- Below that line, handles answer like Lua's io library: the C bindings
-- (_navette.*) and the store objects (a file:// store of
-- _navette.storage, navette.s3store) return nil, err and raise only on
-- misuse; the modules above turn their answers into raises.
local errors = {}

-- code -> CLI exit status (doc/cli.md, "Exit codes")
errors.exit_status = {
  failed = 1,
  recipe = 2, invalid = 2, usage = 2, not_found = 2,
  refused = 3,
  backend = 4, io = 4, no_memory = 4,
  interrupted = 130, -- Ctrl-C, as a shell reports SIGINT
  internal = 70, -- a bug in navette (sysexits' EX_SOFTWARE)
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

-- A module's raiser: raiser(code, prefix)(message, hint) raises code
-- with prefix before the message ("navette.job: ").
function errors.raiser(code, prefix)
  return function(message, hint)
    errors.raise(code, prefix .. message, hint)
  end
end

-- Turns a native (nil, err) into a raise, keeping code and hint.
function errors.check(value, err, context)
  if value ~= nil then return value end
  local message = err and err.message or "unknown error"
  if context then message = context .. ": " .. message end
  errors.raise(err and err.code or "io", message, err and err.hint)
end

-- Calls fn(...) and returns what it returns; when it raises, returns nil
-- and the error object (errors.from) instead.
function errors.pcall(fn, ...)
  local results = table.pack(pcall(fn, ...))
  if results[1] then return table.unpack(results, 2, results.n) end
  return nil, errors.from(results[2])
end

-- Gives module a try_<name> twin of each function named in names, which
-- calls module[name] as it is when called.
function errors.add_try(module, names)
  for _, name in ipairs(names) do
    module["try_" .. name] = function(...)
      return errors.pcall(module[name], ...)
    end
  end
  return module
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
