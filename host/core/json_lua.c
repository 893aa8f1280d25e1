/* _navette.json: encode Lua values to JSON (keys sorted, so output is stable
 * and diffable) and decode JSON into Lua values, over cJSON. Bounded in size
 * and depth. json.null stands for JSON null; a table with the metatable
 * json.array_mt encodes as an array even when empty.
 *
 * Text is refused, never escaped: a string or key that holds a NUL (which
 * C would cut short) or a byte that is not UTF-8 (which would make the
 * JSON invalid) raises an error naming the key and the byte offset. JSON
 * has no way to carry raw bytes, and a silent replacement would make a
 * plan or record that no longer says what ran; job.lua refuses such text
 * in a recipe before it gets here. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <lauxlib.h>
#include <lua.h>

#include "core/runtime.h"
#include "core/utf8.h"

#define JSON_MAX_BYTES ((size_t)64 * 1024 * 1024)
#define JSON_MAX_DEPTH 64
#define ARRAY_MT       "navette.json.array"

/* Holds a cJSON tree during encoding so that an error raised by Lua in the
 * middle frees it (STYLE rule 4). */
typedef struct {
	cJSON *root;
} json_box;

static int box_gc(lua_State *L)
{
	json_box *b = lua_touserdata(L, 1);
	if (b->root) {
		cJSON_Delete(b->root);
		b->root = NULL;
	}
	return 0;
}

static json_box *push_box(lua_State *L)
{
	json_box *b = lua_newuserdatauv(L, sizeof(*b), 0);
	b->root = NULL;
	if (luaL_newmetatable(L, "navette.json.box")) {
		lua_pushcfunction(L, box_gc);
		lua_setfield(L, -2, "__gc");
	}
	lua_setmetatable(L, -2);
	return b;
}

static int is_null(lua_State *L, int idx)
{
	lua_getfield(L, LUA_REGISTRYINDEX, "navette.json.null");
	int eq = lua_rawequal(L, idx, -1);
	lua_pop(L, 1);
	return eq;
}

/* Array when keys are exactly 1..n (n>0), or marked with the array mt. */
static int table_is_array(lua_State *L, int idx, size_t *n_out)
{
	size_t n = lua_rawlen(L, idx);
	size_t count = 0;

	lua_pushnil(L);
	while (lua_next(L, idx)) {
		lua_pop(L, 1);
		if (lua_type(L, -1) != LUA_TNUMBER || !lua_isinteger(L, -1)) {
			lua_pop(L, 1);
			return 0;
		}
		count++;
	}
	*n_out = n;
	if (count == n && n > 0)
		return 1;
	if (count == 0 && lua_getmetatable(L, idx)) {
		luaL_getmetatable(L, ARRAY_MT);
		int marked = lua_rawequal(L, -1, -2);
		lua_pop(L, 2);
		return marked;
	}
	return 0;
}

/* Writes s[0..len) for a message: printable ASCII as it is, other bytes
 * as \xNN, at most 48 bytes of it. */
static void show_text(char *out, size_t cap, const char *s, size_t len)
{
	size_t o = 0, i;

	for (i = 0; i < len && i < 48 && o + 5 < cap; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c >= 0x20 && c < 0x7f && c != '\\') {
			out[o++] = (char)c;
		} else {
			snprintf(out + o, cap - o, "\\x%02x", c);
			o += 4;
		}
	}
	if (i < len && o + 4 < cap) {
		memcpy(out + o, "...", 3);
		o += 3;
	}
	out[o] = '\0';
}

/* The string at idx as JSON takes it, or raises naming where it is: an
 * object key when is_key, else a value under key (NULL in an array). */
static const char *check_text(lua_State *L, int idx, int is_key,
			      const char *key)
{
	size_t len, at;
	const char *s = lua_tolstring(L, idx, &len);
	const char *nul = memchr(s, '\0', len);
	char shown[48 * 4 + 8];

	at = nul ? (size_t)(nul - s) : nv_utf8_invalid_at(s, len);
	if (at == NV_UTF8_VALID)
		return s;
	if (is_key)
		show_text(shown, sizeof(shown), s, len);
	else if (key)
		show_text(shown, sizeof(shown), key, strlen(key));
	luaL_error(L,
		   "json: %s%s%s holds %s at byte offset %d: JSON takes "
		   "UTF-8 text only",
		   is_key ? "the key '"
		   : key  ? "the string at key '"
			  : "a string in an array",
		   is_key || key ? shown : "", is_key || key ? "'" : "",
		   nul ? "a NUL byte" : "a byte that is not UTF-8",
		   (int)(at > 2147483647 ? 2147483647 : at));
	return NULL;
}

static int cmp_keys(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Creates the item for the value at idx and attaches it to parent (an
 * array when key is NULL) before descending, so everything built so far is
 * reachable from the boxed root if Lua raises midway. Keys and string
 * values are not copied: the tree points at the Lua strings, which the
 * value being encoded holds until l_json_encode has printed the tree
 * (cJSON_Delete leaves such strings alone). */
static void encode_into(lua_State *L, int idx, int depth, cJSON *parent,
			const char *key);

static void attach(lua_State *L, cJSON *parent, const char *key, cJSON *item)
{
	if (!item)
		luaL_error(L, "json: out of memory");
	if (key)
		cJSON_AddItemToObjectCS(parent, key, item);
	else
		cJSON_AddItemToArray(parent, item);
}

static void encode_table(lua_State *L, int idx, int depth, cJSON *parent,
			 const char *key)
{
	size_t n;

	if (table_is_array(L, idx, &n)) {
		cJSON *arr = cJSON_CreateArray();
		attach(L, parent, key, arr);
		for (size_t i = 1; i <= n; i++) {
			lua_rawgeti(L, idx, (lua_Integer)i);
			encode_into(L, lua_gettop(L), depth + 1, arr, NULL);
			lua_pop(L, 1);
		}
		return;
	}
	/* Collect string keys, sorted, for a stable output. */
	size_t count = 0;
	lua_pushnil(L);
	while (lua_next(L, idx)) {
		lua_pop(L, 1);
		if (lua_type(L, -1) != LUA_TSTRING)
			luaL_error(L,
				   "json: object keys must be strings (got "
				   "a %s key)",
				   luaL_typename(L, -1));
		count++;
	}
	const char **keys = lua_newuserdatauv(L, (count + 1) * sizeof(char *),
					      0); // [..., keys]
	size_t i = 0;
	lua_pushnil(L);
	while (lua_next(L, idx)) {
		lua_pop(L, 1);
		/* anchored by the table */
		keys[i++] = check_text(L, -1, 1, NULL);
	}
	qsort(keys, count, sizeof(char *), cmp_keys);
	cJSON *obj = cJSON_CreateObject();
	attach(L, parent, key, obj);
	for (i = 0; i < count; i++) {
		lua_getfield(L, idx, keys[i]);
		encode_into(L, lua_gettop(L), depth + 1, obj, keys[i]);
		lua_pop(L, 1);
	}
	lua_pop(L, 1); /* keys */
}

static void encode_into(lua_State *L, int idx, int depth, cJSON *parent,
			const char *key)
{
	if (depth > JSON_MAX_DEPTH)
		luaL_error(L, "json: nesting deeper than %d (a cycle?)",
			   JSON_MAX_DEPTH);
	luaL_checkstack(L, 8, "json: nesting too deep");
	switch (lua_type(L, idx)) {
	case LUA_TNIL: attach(L, parent, key, cJSON_CreateNull()); return;
	case LUA_TBOOLEAN:
		attach(L, parent, key, cJSON_CreateBool(lua_toboolean(L, idx)));
		return;
	case LUA_TNUMBER: {
		double d = lua_tonumber(L, idx);
		if (d != d || d > 1e308 || d < -1e308)
			luaL_error(L, "json: cannot encode nan or inf");
		attach(L, parent, key, cJSON_CreateNumber(d));
		return;
	}
	case LUA_TSTRING:
		attach(L, parent, key,
		       cJSON_CreateStringReference(check_text(L, idx, 0, key)));
		return;
	case LUA_TTABLE: encode_table(L, idx, depth, parent, key); return;
	case LUA_TLIGHTUSERDATA:
		if (is_null(L, idx)) {
			attach(L, parent, key, cJSON_CreateNull());
			return;
		}
		break;
	default: break;
	}
	if (luaL_getmetafield(L, idx, "__name") != LUA_TNIL) {
		const char *name = lua_tostring(L, -1);
		luaL_error(L, "json: cannot encode a %s value",
			   name ? name : "userdata");
	}
	luaL_error(L, "json: cannot encode a %s value", luaL_typename(L, idx));
}

/* json.encode(value [, pretty]) */
static int l_json_encode(lua_State *L)
{
	int pretty = lua_toboolean(L, 2);
	luaL_checkany(L, 1);
	lua_settop(L, 1);
	json_box *box = push_box(L); // [value, box]
	box->root = cJSON_CreateArray();
	if (!box->root)
		return luaL_error(L, "json: out of memory");
	encode_into(L, 1, 0, box->root, NULL);
	cJSON *v = box->root->child;
	char *s = pretty ? cJSON_Print(v) : cJSON_PrintUnformatted(v);
	if (!s)
		return luaL_error(L, "json: out of memory");
	lua_pushstring(L, s);
	free(s);
	cJSON_Delete(box->root);
	box->root = NULL;
	return 1;
}

static void decode_value(lua_State *L, const cJSON *item, int depth)
{
	if (depth > JSON_MAX_DEPTH)
		luaL_error(L, "json: nesting deeper than %d", JSON_MAX_DEPTH);
	luaL_checkstack(L, 4, "json: too deep");
	if (cJSON_IsNull(item)) {
		lua_getfield(L, LUA_REGISTRYINDEX, "navette.json.null");
	} else if (cJSON_IsBool(item)) {
		lua_pushboolean(L, cJSON_IsTrue(item));
	} else if (cJSON_IsNumber(item)) {
		double d = item->valuedouble;
		/* the range first: casting a double beyond lua_Integer's
		 * range (2^63, 1e300 in a record) is undefined */
		if (d < 9.0e15 && d > -9.0e15 && d == (double)(lua_Integer)d)
			lua_pushinteger(L, (lua_Integer)d);
		else
			lua_pushnumber(L, d);
	} else if (cJSON_IsString(item)) {
		lua_pushstring(L, item->valuestring);
	} else if (cJSON_IsArray(item)) {
		lua_createtable(L, cJSON_GetArraySize(item), 0);
		int i = 1;
		for (const cJSON *c = item->child; c; c = c->next) {
			decode_value(L, c, depth + 1);
			lua_rawseti(L, -2, i++);
		}
		luaL_setmetatable(L, ARRAY_MT);
	} else if (cJSON_IsObject(item)) {
		lua_newtable(L);
		for (const cJSON *c = item->child; c; c = c->next) {
			decode_value(L, c, depth + 1);
			lua_setfield(L, -2, c->string ? c->string : "");
		}
	} else {
		lua_pushnil(L);
	}
}

/* json.decode(s) -> value | nil, message */
static int l_json_decode(lua_State *L)
{
	size_t len;
	const char *s = luaL_checklstring(L, 1, &len);

	if (len > JSON_MAX_BYTES) {
		lua_pushnil(L);
		lua_pushfstring(L, "JSON document larger than %d MiB",
				(int)(JSON_MAX_BYTES >> 20));
		return 2;
	}
	json_box *box = push_box(L);
	box->root = cJSON_ParseWithLength(s, len);
	if (!box->root) {
		const char *at = cJSON_GetErrorPtr();
		lua_pushnil(L);
		if (at && at >= s && at <= s + len)
			lua_pushfstring(L, "malformed JSON at byte %d",
					(int)(at - s));
		else
			lua_pushliteral(L, "malformed JSON");
		return 2;
	}
	decode_value(L, box->root, 0);
	cJSON_Delete(box->root);
	box->root = NULL;
	return 1;
}

static int l_json_array(lua_State *L)
{
	if (lua_isnoneornil(L, 1))
		lua_newtable(L);
	luaL_checktype(L, 1, LUA_TTABLE);
	lua_settop(L, 1);
	luaL_setmetatable(L, ARRAY_MT);
	return 1;
}

int luaopen_navette_json(lua_State *L)
{
	static const luaL_Reg fns[] = {{"encode", l_json_encode},
				       {"decode", l_json_decode},
				       {"array", l_json_array},
				       {NULL, NULL}};
	luaL_newmetatable(L, ARRAY_MT);
	lua_pop(L, 1);
	luaL_newlib(L, fns); // [json]
	lua_pushlightuserdata(L, (void *)&luaopen_navette_json);
	lua_pushvalue(L, -1);
	lua_setfield(L, LUA_REGISTRYINDEX, "navette.json.null");
	lua_setfield(L, -2, "null");
	return 1;
}
