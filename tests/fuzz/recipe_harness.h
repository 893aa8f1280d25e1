/* Shared by the fuzz targets of recipe-facing validation (fuzz_job_spec,
 * fuzz_project_file): one runtime per process, opened through navette.h
 * with small memory and time limits, and a trusted Lua harness that
 * evaluates the input as Lua source in the recipe sandbox and passes the
 * result through the runner's own validation. Opening a runtime costs
 * milliseconds, so the state is reused; an input that changed what the
 * trusted code sees (a sandbox escape) is itself a finding, checked
 * after every input.
 *
 * libFuzzer sees the coverage of C only, and the validators are Lua: a
 * line hook on the library's chunks ("=navette/...") counts the lines
 * they run into libFuzzer's extra counters, so an input that reaches a
 * new check is kept. It chains to whatever hook the runtime has set (the
 * count hook of its time bound), which keeps running as before.
 *
 * The sandbox's `require` is taken away here: a fuzzer that found a way
 * to a module that runs commands would run them on the fuzzing machine.
 * The Lua tests (tests/lua/sandbox_test.lua) cover require. */
#ifndef NV_FUZZ_RECIPE_HARNESS_H
#define NV_FUZZ_RECIPE_HARNESS_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <lauxlib.h>
#include <lua.h>

#include "core/runtime.h"
#include "navette.h"

#define HARNESS_MEMORY_LIMIT ((size_t)64 * 1024 * 1024)
#define HARNESS_TIMEOUT_S    0.05
#define HARNESS_MAX_INPUT    ((size_t)64 * 1024)

/* The trusted side. Returns a table of checks; each takes the source and
 * the harness folder, and returns nothing, or a string naming a broken
 * invariant (the C side aborts with it). */
static const char harness_lua[] =
	"local core, json, jobs = _navette.core, _navette.json, "
	"_navette.jobs\n"
	"local job = require 'navette.job'\n"
	"local project = require 'navette.project'\n"
	"local H = {}\n"
	/* every bounded call counts lines; the runtime's call_bounded
	 * replaces the hook when it starts and clears it when it ends */
	"local cover = ...\n"
	"local bounded = core.call_bounded\n"
	"core.call_bounded = function(fn, ...)\n"
	"  local r = table.pack(bounded(function(...) cover() return fn(...) "
	"end, ...))\n"
	"  cover()\n"
	"  return table.unpack(r, 1, r.n)\n"
	"end\n"
	/* what trusted code must keep seeing, whatever an input does */
	"local function snapshot()\n"
	"  local s = {}\n"
	"  for _, lib in ipairs({ 'string', 'table', 'math', 'utf8',\n"
	"                         'coroutine', 'os' }) do\n"
	"    for k, v in pairs(_G[lib]) do s[lib .. '.' .. k] = v end\n"
	"  end\n"
	"  for k, v in pairs(job) do s['job.' .. k] = v end\n"
	"  for k, v in pairs(project) do s['project.' .. k] = v end\n"
	"  for k, v in pairs(core) do s['core.' .. k] = v end\n"
	"  s['string metatable'] = getmetatable('')\n"
	"  s['string __index'] = getmetatable('').__index\n"
	"  for _, name in ipairs({ 'pairs', 'ipairs', 'type', 'tostring',\n"
	"                          'error', 'pcall', 'next', 'select',\n"
	"                          'setmetatable', 'getmetatable' }) do\n"
	"    s['_G.' .. name] = _G[name]\n"
	"  end\n"
	"  return s\n"
	"end\n"
	"local before = snapshot()\n"
	"function H.unchanged()\n"
	"  local now = snapshot()\n"
	"  for k, v in pairs(before) do\n"
	"    if now[k] ~= v then return 'trusted ' .. k .. ' was changed' end\n"
	"  end\n"
	"  for k in pairs(now) do\n"
	"    if before[k] == nil then return 'trusted ' .. k .. ' was added' "
	"end\n"
	"  end\n"
	"end\n"
	/* the sandbox of the runtime, less require (see above) */
	"local sandbox = core.sandbox\n"
	"local function no_require(name)\n"
	"  error('require is not available in the fuzz harness', 2)\n"
	"end\n"
	"core.sandbox = function(dir, ...)\n"
	"  local env = sandbox(dir, ...)\n"
	"  if type(env) == 'table' and rawget(env, 'require') ~= nil then\n"
	"    rawset(env, 'require', no_require)\n"
	"  end\n"
	"  return env\n"
	"end\n"
	"before['core.sandbox'] = core.sandbox\n"
	"before['core.call_bounded'] = core.call_bounded\n"
	/* An error of validation is the library's own (a table with a code
	 * and a message) or the recipe's; a Lua error raised at a line of
	 * the library is a bug, except running out of time or memory. */
	"local function internal(err)\n"
	"  if type(err) ~= 'table' then return 'an error that is not a table' "
	"end\n"
	/* a table the recipe raised itself is its own business */
	"  if rawget(err, 'code') == nil then return nil end\n"
	"  local m = rawget(err, 'message')\n"
	"  if type(m) ~= 'string' then return 'an error without a message' "
	"end\n"
	"  if m:find('ran longer than', 1, true) or m:find('not enough "
	"memory', 1, true)\n"
	"     or m:find('stack overflow', 1, true) then\n"
	"    return nil\n"
	"  end\n"
	"  if m:match('^navette/[%w_/.]+%.lua:%d+:') then\n"
	"    return 'internal error: ' .. m\n"
	"  end\n"
	"end\n"
	/* Lua values to compare with their JSON round trip */
	"local function same(a, b, path)\n"
	"  if type(a) == 'number' and type(b) == 'number' then\n"
	"    if a == b or math.abs(a - b) <= 1e-9 * math.abs(a) then return "
	"end\n"
	"    return path .. ': ' .. tostring(a) .. ' came back as ' .. "
	"tostring(b)\n"
	"  end\n"
	"  if type(a) ~= type(b) then\n"
	"    if type(a) == 'table' and next(a) == nil and type(b) == "
	"'table' then\n"
	"      return\n"
	"    end\n"
	"    return path .. ': a ' .. type(a) .. ' came back as a ' .. "
	"type(b)\n"
	"  end\n"
	"  if type(a) ~= 'table' then\n"
	"    if a ~= b then return path .. ': ' .. string.format('%q', a) .. "
	"' came back as ' .. string.format('%q', b) end\n"
	"    return\n"
	"  end\n"
	"  for k, v in pairs(a) do\n"
	"    local why = same(v, b[k], path .. '.' .. tostring(k))\n"
	"    if why then return why end\n"
	"  end\n"
	"  for k in pairs(b) do\n"
	"    if a[k] == nil then return path .. '.' .. tostring(k) .. ' "
	"appeared' end\n"
	"  end\n"
	"end\n"
	"local function json_round_trip(value, what)\n"
	"  local ok, text = pcall(json.encode, value)\n"
	"  if not ok then return what .. ' does not encode: ' .. "
	"tostring(text) end\n"
	"  if not utf8.len(text) then return what .. ' encodes to bytes that "
	"are not UTF-8' end\n"
	"  local back = json.decode(text)\n"
	"  if back == nil then return what .. ' encodes to JSON that does not "
	"parse' end\n"
	"  return same(value, back, what), text\n"
	"end\n"
	/* every number finite, and exact in a double and an int64 */
	"local function numbers_ok(v, path)\n"
	"  if type(v) == 'number' and not (v >= -2^53 and v <= 2^53) then\n"
	"    return path .. ' = ' .. tostring(v)\n"
	"  end\n"
	"  if type(v) == 'table' then\n"
	"    for k, x in pairs(v) do\n"
	"      local why = numbers_ok(x, path .. '.' .. tostring(k))\n"
	"      if why then return why end\n"
	"    end\n"
	"  end\n"
	"end\n"
	"local function key_like(s)\n"
	"  if s:find('[%z\\1-\\31\\\\]') or s:sub(1, 1) == '/' then return "
	"false end\n"
	"  for seg in (s:gsub('/$', '') .. '/'):gmatch('([^/]*)/') do\n"
	"    if seg == '' or seg == '.' or seg == '..' then return false end\n"
	"  end\n"
	"  return true\n"
	"end\n"
	/* what a validated job must be */
	"local function check_job(j)\n"
	"  if type(j) ~= 'table' then return 'validate returned a ' .. "
	"type(j) end\n"
	"  if type(j.name) ~= 'string' or #j.name > 63\n"
	"     or not j.name:match('^[%w][%w._-]*$') then\n"
	"    return 'accepted name ' .. string.format('%q', "
	"tostring(j.name))\n"
	"  end\n"
	"  if type(j.command) ~= 'table' or #j.command == 0 then\n"
	"    return 'accepted a job without a command'\n"
	"  end\n"
	"  for i, a in ipairs(j.command) do\n"
	"    if type(a) ~= 'string' then return 'command[' .. i .. '] is a ' "
	"..\n"
	"      type(a) end\n"
	"  end\n"
	"  if type(j.outputs) ~= 'string' or not key_like(j.outputs) then\n"
	"    return 'accepted outputs ' .. string.format('%q', "
	"tostring(j.outputs))\n"
	"  end\n"
	"  for _, o in ipairs(j.success.outputs) do\n"
	"    if not key_like(o) then return 'accepted success output ' .. "
	"string.format('%q', o) end\n"
	"  end\n"
	"  for k, v in pairs(j.env) do\n"
	"    if type(k) ~= 'string' or not jobs.env_name_ok(k) or type(v) ~= "
	"'string' then\n"
	"      return 'accepted env ' .. string.format('%q', tostring(k))\n"
	"    end\n"
	"  end\n"
	"  local why = numbers_ok(j, 'accepted job')\n"
	"  if why then return why end\n"
	"  why = json_round_trip(j, 'the validated job')\n"
	"  if why then return why end\n"
	/* what the runner validated, the launcher takes */
	"  local spec = { id = 'fuzz-20260101-000000-0000000-000000',\n"
	"    commit = ('0'):rep(40), project = 'fuzz', name = j.name,\n"
	"    command = j.command, env = next(j.env) and j.env or nil,\n"
	"    outputs = { prefix = 'fuzz/' } }\n"
	"  local ok, script, err = pcall(jobs.launcher, json.encode(spec))\n"
	"  if not ok then return 'launcher raised: ' .. tostring(script) "
	"end\n"
	"  if not script and not tostring(err and err.message):find('larger "
	"than', 1, true) then\n"
	"    return 'the launcher refused a validated job: ' .. "
	"tostring(err and err.message)\n"
	"  end\n"
	"end\n"
	"function H.job(src, dir)\n"
	"  local env = core.sandbox(dir, { require = false })\n"
	"  local chunk = load(src, '=fuzz', 't', env)\n"
	"  if not chunk then return end\n"
	"  local ok, spec = core.call_bounded(chunk)\n"
	"  if not ok then return internal(spec) end\n"
	/* validated under the bound, as navette.job{} is: metamethods of
	 * the spec are the recipe's code */
	"  local ok2, j = core.call_bounded(job.validate, spec)\n"
	"  if not ok2 then return internal(j) end\n"
	"  return check_job(j)\n"
	"end\n"
	"local function check_project(p)\n"
	"  if type(p.name) ~= 'string' or not p.name:match('^[a-z0-9-]+$') "
	"then\n"
	"    return 'project name ' .. string.format('%q', tostring(p.name))\n"
	"  end\n"
	"  if not p.profiles[p.default_profile] then\n"
	"    return 'default profile ' .. tostring(p.default_profile) .. ' is "
	"not declared'\n"
	"  end\n"
	"  for name, prof in pairs(p.profiles) do\n"
	"    if type(name) ~= 'string' or not name:match('^[%w_-]+$') then\n"
	"      return 'accepted profile name ' .. string.format('%q', "
	"tostring(name))\n"
	"    end\n"
	"    if prof.backend ~= 'local' and prof.backend ~= 'slurm' then\n"
	"      return 'accepted backend ' .. tostring(prof.backend)\n"
	"    end\n"
	"    if type(prof.storage) ~= 'string' or not "
	"(prof.storage:match('^file:///')\n"
	"       or prof.storage:match('^s3://')) then\n"
	"      return 'accepted storage ' .. tostring(prof.storage)\n"
	"    end\n"
	"    if type(prof.require_pushed) ~= 'boolean' then\n"
	"      return 'require_pushed is a ' .. type(prof.require_pushed)\n"
	"    end\n"
	"    for _, k in ipairs({ 'max_url_lifetime', 'url_margin', "
	"'max_output_bytes',\n"
	"                         'max_token_lifespan' }) do\n"
	"      local v = prof[k]\n"
	"      if v ~= nil and (type(v) ~= 'number' or not (v >= 0 and v <= "
	"2^53)) then\n"
	"        return 'profile ' .. name .. ': ' .. k .. ' = ' .. "
	"tostring(v)\n"
	"      end\n"
	"    end\n"
	"  end\n"
	"end\n"
	"function H.project(src, dir)\n"
	"  local f = assert(io.open(dir .. '/navette.lua', 'wb'))\n"
	"  f:write(src)\n"
	"  f:close()\n"
	/* as the CLI calls it: the file's chunk runs under the bound, the
	 * checks after it do not */
	"  local ok, p = core.pcall(project.load, dir, dir)\n"
	"  if not ok then return internal(p) end\n"
	"  return check_project(p)\n"
	"end\n"
	"return H\n";

/* libFuzzer's extra counters; a plain array in the replay build */
#define HARNESS_LINE_COUNTERS 65536
__attribute__((section("__libfuzzer_extra_counters"))) static uint8_t
	harness_lines[HARNESS_LINE_COUNTERS];

static lua_Hook harness_chained;
static int harness_chained_mask;

static void harness_line_hook(lua_State *L, lua_Debug *ar)
{
	if (ar->event == LUA_HOOKLINE && lua_getinfo(L, "S", ar) &&
	    strncmp(ar->source, "=navette/", 9) == 0) {
		uintptr_t h = (uintptr_t)ar->source * 31u +
			      (uintptr_t)ar->currentline * 2654435761u;
		uint8_t *c = &harness_lines[(h >> 4) % HARNESS_LINE_COUNTERS];
		if (*c < 255)
			(*c)++;
	}
	if (harness_chained && (harness_chained_mask & (1 << ar->event)) != 0)
		harness_chained(L, ar);
}

/* cover(): adds the line hook to the hook in force (kept and called). */
static int harness_cover(lua_State *L)
{
	lua_Hook hook = lua_gethook(L);
	int mask = lua_gethookmask(L);
	int count = lua_gethookcount(L);

	if (hook != harness_line_hook) {
		harness_chained = hook;
		harness_chained_mask = hook ? mask : 0;
	}
	lua_sethook(L, harness_line_hook, harness_chained_mask | LUA_MASKLINE,
		    count);
	return 0;
}

static navette_runtime *harness_rt;
static int harness_ref = LUA_NOREF;
static char harness_dir[256];

static void harness_discard(int stream, const char *text, size_t len,
			    void *payload)
{
	(void)stream;
	(void)text;
	(void)len;
	(void)payload;
}

static void harness_die(const char *what, const char *why)
{
	fprintf(stderr, "fuzz harness: %s: %s\n", what, why ? why : "?");
	abort();
}

/* The folder is the process's own: emptied and removed at exit. */
static void harness_cleanup(void)
{
	char path[sizeof(harness_dir) + 16];

	snprintf(path, sizeof(path), "%s/navette.lua", harness_dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/home", harness_dir);
	rmdir(path);
	rmdir(harness_dir);
}

static lua_State *harness_state(void)
{
	navette_options opts;
	char home[sizeof(harness_dir) + 8];
	const char *tmp = getenv("TMPDIR");
	lua_State *L;

	if (harness_rt)
		return harness_rt->L;
	snprintf(harness_dir, sizeof(harness_dir), "%s/navette-fuzz-XXXXXX",
		 tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(harness_dir))
		harness_die("mkdtemp", harness_dir);
	atexit(harness_cleanup);
	snprintf(home, sizeof(home), "%s/home", harness_dir);
	navette_options_init(&opts);
	opts.home = home;
	opts.output = harness_discard;
	opts.memory_limit = HARNESS_MEMORY_LIMIT;
	opts.recipe_timeout_s = HARNESS_TIMEOUT_S;
	if (navette_open(&harness_rt, &opts) != NAVETTE_OK)
		harness_die("navette_open", navette_last_error(NULL)->message);
	L = harness_rt->L;
	if (luaL_loadbufferx(L, harness_lua, sizeof(harness_lua) - 1,
			     "=fuzz_harness", "t") != LUA_OK) {
		harness_die("harness", lua_tostring(L, -1));
	}
	lua_pushcfunction(L, harness_cover);
	if (nv_pcall(L, 1, 1) != LUA_OK) {
		lua_getfield(L, -1, "message");
		harness_die("harness", lua_tostring(L, -1));
	}
	harness_ref = luaL_ref(L, LUA_REGISTRYINDEX);
	return L;
}

/* Runs check (H.job or H.project) over one input; aborts on a broken
 * invariant or a changed trusted state. */
static void harness_run(const char *check, const uint8_t *data, size_t size)
{
	lua_State *L = harness_state();
	const char *why = NULL;

	if (size > HARNESS_MAX_INPUT)
		return;
	lua_settop(L, 0);
	lua_rawgeti(L, LUA_REGISTRYINDEX, harness_ref); // [H]
	lua_getfield(L, 1, check);                      // [H, fn]
	lua_pushlstring(L, (const char *)data, size);
	lua_pushstring(L, harness_dir); // [H, fn, src, dir]
	if (nv_pcall(L, 2, 1) != LUA_OK) {
		lua_getfield(L, -1, "message");
		harness_die("the harness raised", lua_tostring(L, -1));
	}
	lua_sethook(L, NULL, 0, 0);
	if (lua_isstring(L, -1))
		why = lua_tostring(L, -1);
	if (why)
		harness_die(check, why);
	lua_settop(L, 1);
	lua_getfield(L, 1, "unchanged"); // [H, unchanged]
	if (nv_pcall(L, 0, 1) != LUA_OK || lua_isstring(L, -1))
		harness_die("sandbox escape", lua_tostring(L, -1));
	lua_settop(L, 0);
	/* a finalizer an input left runs here, not during a later input */
	lua_gc(L, LUA_GCCOLLECT);
}

#endif
