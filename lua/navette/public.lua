-- The public API as a recipe gets it from `require "navette"`: the
-- functions the README documents (the same list as the editor definitions,
-- navette.luals), and nothing else. The recipe receives a sealed object
-- (read-only, a fresh one per evaluation); every call crosses a boundary
-- that copies the arguments with raw reads (a table with metamethods
-- cannot show the validator one value and the submitter another) and
-- seals the results (read-only copies: nothing the trusted code keeps can
-- be changed through them). The trusted modules behind it keep their own
-- references: nothing a recipe can reach replaces how the runner scans,
-- pins, validates or submits.
local core = _navette.core

local public = {}

-- Calls fn across the boundary.
local function boundary(fn)
  local copy, seal, pack, unpack = core.copy, core.seal, table.pack,
                                   table.unpack
  return function(...)
    local args = pack(copy(...))
    return seal(fn(unpack(args, 1, args.n)))
  end
end

-- Each public function: its path and the trusted function behind it
-- (looked up when called, so that a module is loaded only when used).
local FUNCTIONS = {
  { "job",
    function(spec) return require("navette.run.declare").declare(spec) end },
  { "sweep",
    function(spec)
      return require("navette.run.declare").declare_sweep(spec)
    end },
  { "outputs",
    function(...) return require("navette.run.declare").outputs(...) end },
  { "context",
    function() return require("navette.run.declare").context() end },
  { "use", function(spec) return require("navette.library").use(spec) end },
  { "task", function(spec) return require("navette.task").declare(spec) end },
  { "retest", function(spec) return require("navette.retest").retest(spec) end },
  { "storage.url", function(...) return require("navette.storage").url(...) end },
  { "storage.put", function(...) return require("navette.storage").put(...) end },
  { "storage.put_string",
    function(...) return require("navette.storage").put_string(...) end },
  { "storage.head", function(...) return require("navette.storage").head(...) end },
  { "storage.list", function(...) return require("navette.storage").list(...) end },
  { "storage.read", function(...) return require("navette.storage").read(...) end },
  { "storage.copy", function(...) return require("navette.storage").copy(...) end },
  { "storage.delete",
    function(...) return require("navette.storage").delete(...) end },
  { "storage.sha256",
    function(...) return require("navette.storage").sha256(...) end },
  { "storage.lifecycle",
    function(...) return require("navette.storage").lifecycle(...) end },
  { "storage.keys",
    function(...) return require("navette.storage.keys").keys(...) end },
  { "storage.create_key",
    function(...) return require("navette.storage.keys").create_key(...) end },
  { "storage.remove_key",
    function(...) return require("navette.storage.keys").remove_key(...) end },
  { "storage.check_credential",
    function(...)
      return require("navette.storage.keys").check_credential(...)
    end },
  { "image.parse", function(...) return require("navette.image").parse(...) end },
  { "image.resolve",
    function(...) return require("navette.image").resolve(...) end },
  { "image.exists", function(...) return require("navette.image").exists(...) end },
  { "image.inspect",
    function(...) return require("navette.image").inspect(...) end },
  { "image.code_layer",
    function(...) return require("navette.image").code_layer(...) end },
  { "image.pack", function(...) return require("navette.image").pack(...) end },
  { "image.build",
    function(...) return require("navette.image.builder").build(...) end },
  { "image.rebuild",
    function(...) return require("navette.image.builder").rebuild(...) end },
  { "image.debootstrap",
    function(...)
      return require("navette.image.builder").debootstrap(...)
    end },
  { "image.target_platform",
    function(...) return require("navette.image").target_platform(...) end },
  { "image.check_platform",
    function(...) return require("navette.image").check_platform(...) end },
  { "creds.get",
    function(...) return require("navette.creds").recipe_get(...) end },
  { "creds.jwt", function(...) return require("navette.creds").jwt(...) end },
  { "creds.store",
    function(...) return require("navette.creds.rotation").store(...) end },
  { "creds.generate",
    function(...) return require("navette.creds.rotation").generate(...) end },
  { "creds.htpasswd",
    function(...) return require("navette.creds.rotation").htpasswd(...) end },
  { "creds.stage",
    function(...) return require("navette.creds.rotation").stage(...) end },
  { "creds.staged",
    function(...) return require("navette.creds.rotation").staged(...) end },
  { "creds.declared",
    function(...) return require("navette.creds").declared(...) end },
  { "image.check_credential",
    function(...) return require("navette.image").check_credential(...) end },
  { "http.request",
    function(...) return require("navette.http").request(...) end },
  { "http.get", function(...) return require("navette.http").get(...) end },
}
-- each backend's check_credential (its contract: backends/init.lua), as
-- navette.<backend>.check_credential
do
  local backends = require "navette.backends"
  for _, name in ipairs(backends.names()) do
    if backends.get(name).check_credential then
      FUNCTIONS[#FUNCTIONS + 1] = { name .. ".check_credential",
        function(...) return backends.get(name).check_credential(...) end }
    end
  end
end
public.FUNCTIONS = FUNCTIONS

-- The names, "job", "storage.put", ... (for the tests and the definitions).
function public.names()
  local names = {}
  for i, f in ipairs(FUNCTIONS) do names[i] = f[1] end
  return names
end

-- A fresh sealed `navette` object. with (optional): a trusted function
-- by path that replaces FUNCTIONS' (a library's navette.use is its own).
function public.new(with)
  local api = { version = (core.version()) }
  for _, f in ipairs(FUNCTIONS) do
    local path, fn = f[1], (with and with[f[1]]) or f[2]
    local group, name = path:match("^([%w_-]+)%.([%w_]+)$")
    if group then
      api[group] = api[group] or {}
      api[group][name] = boundary(fn)
    else
      api[path] = boundary(fn)
    end
  end
  return core.seal(api)
end

return public
