-- The public API as a recipe gets it from `require "navette"`: the
-- functions the manual documents (the same list as the editor definitions,
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

-- The modules behind the public functions, each loaded when one of its
-- functions is first called.
local function declarations() return require "navette.run.declare" end
local function storage() return require "navette.storage" end
local function storage_keys() return require "navette.storage.keys" end
local function image() return require "navette.image" end
local function image_builder() return require "navette.image.builder" end
local function creds() return require "navette.creds" end
local function creds_rotation() return require "navette.creds.rotation" end
local function http() return require "navette.http" end

-- The function name of the module load() returns, looked up when called;
-- it takes what the caller passes.
local function lazy(load, name)
  return function(...) return load()[name](...) end
end

-- Each public function: its path and the trusted function behind it
-- (looked up when called, so that a module is loaded only when used). A
-- declaration takes its one table, never the trusted second argument.
local FUNCTIONS = {
  { "job", function(spec) return declarations().declare(spec) end },
  { "sweep", function(spec) return declarations().declare_sweep(spec) end },
  { "outputs", lazy(declarations, "outputs") },
  { "context", function() return declarations().context() end },
  { "use", function(spec) return require("navette.library").use(spec) end },
  { "task", function(spec) return require("navette.task").declare(spec) end },
  { "retest", function(spec) return require("navette.retest").retest(spec) end },
  { "storage.url", lazy(storage, "url") },
  { "storage.put", lazy(storage, "put") },
  { "storage.put_string", lazy(storage, "put_string") },
  { "storage.head", lazy(storage, "head") },
  { "storage.list", lazy(storage, "list") },
  { "storage.read", lazy(storage, "read") },
  { "storage.copy", lazy(storage, "copy") },
  { "storage.delete", lazy(storage, "delete") },
  { "storage.sha256", lazy(storage, "sha256") },
  { "storage.lifecycle", lazy(storage, "lifecycle") },
  { "storage.keys", lazy(storage_keys, "keys") },
  { "storage.create_key", lazy(storage_keys, "create_key") },
  { "storage.remove_key", lazy(storage_keys, "remove_key") },
  { "storage.check_credential", lazy(storage_keys, "check_credential") },
  { "image.parse", lazy(image, "parse") },
  { "image.resolve", lazy(image, "resolve") },
  { "image.exists", lazy(image, "exists") },
  { "image.inspect", lazy(image, "inspect") },
  { "image.code_layer", lazy(image, "code_layer") },
  { "image.pack", lazy(image, "pack") },
  { "image.build", lazy(image_builder, "build") },
  { "image.rebuild", lazy(image_builder, "rebuild") },
  { "image.debootstrap", lazy(image_builder, "debootstrap") },
  { "image.target_platform", lazy(image, "target_platform") },
  { "image.check_platform", lazy(image, "check_platform") },
  { "creds.get", lazy(creds, "recipe_get") },
  { "creds.jwt", lazy(creds, "jwt") },
  { "creds.store", lazy(creds_rotation, "store") },
  { "creds.generate", lazy(creds_rotation, "generate") },
  { "creds.htpasswd", lazy(creds_rotation, "htpasswd") },
  { "creds.stage", lazy(creds_rotation, "stage") },
  { "creds.staged", lazy(creds_rotation, "staged") },
  { "creds.declared", lazy(creds, "declared") },
  { "image.check_credential", lazy(image, "check_credential") },
  { "http.request", lazy(http, "request") },
  { "http.get", lazy(http, "get") },
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
