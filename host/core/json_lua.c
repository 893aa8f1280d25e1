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
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <lauxlib.h>
#include <lua.h>

#include "core/buf.h"
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

/* No metatable, or the array mark. */
static int plain_table(lua_State *L, int idx)
{
	int plain;

	if (!lua_getmetatable(L, idx))
		return 1;
	luaL_getmetatable(L, ARRAY_MT);
	plain = lua_rawequal(L, -1, -2);
	lua_pop(L, 2);
	return plain;
}

/* Whether skip[key at k] is set (a true value). */
static int skipped(lua_State *L, int skip, int k)
{
	int yes;

	lua_pushvalue(L, k);
	lua_rawget(L, skip);
	yes = lua_toboolean(L, -1);
	lua_pop(L, 1);
	return yes;
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

/* An object's key: bytes and length (a canonical key may hold a NUL). */
struct key {
	const char *s;
	size_t n;
};

/* Bytewise, a prefix first: strcmp's order, and Lua's in the C locale. */
static int cmp_keys(const void *a, const void *b)
{
	const struct key *x = a, *y = b;
	int c = memcmp(x->s, y->s, x->n < y->n ? x->n : y->n);

	return c ? c : (x->n > y->n) - (x->n < y->n);
}

/* Encoding writes the text straight into a buffer (no tree): the same
 * bytes cJSON_PrintUnformatted gives for the tree the value would make,
 * keys sorted. The buffer is held by a box on the Lua stack, so an error
 * raised midway frees it (STYLE rule 4).
 *
 * The canonical form (json.canonical, the text a reuse key hashes:
 * navette.reuse.key) is what Python's json.dumps(v, sort_keys=True,
 * separators=(",", ":"), ensure_ascii=False) writes: the same escapes,
 * integers only (another number raises), every byte of a string as it is
 * (no UTF-8 check: the key hashes what the job holds), an empty table with
 * any metatable a list, at most 32 levels; its errors name
 * navette.reuse.key. */
struct enc {
	nv_buf b;
	int canonical;
};

static int enc_gc(lua_State *L)
{
	struct enc *e = lua_touserdata(L, 1);
	nv_buf_free(&e->b);
	return 0;
}

#define KEY_ERR "navette.reuse.key: "

static void put(lua_State *L, struct enc *e, const char *s, size_t n)
{
	if (nv_buf_append(&e->b, s, n) != 0)
		luaL_error(L,
			   "json: the text would exceed %d MiB (or memory "
			   "ran out)",
			   (int)(JSON_MAX_BYTES >> 20));
}

/* A string as cJSON (and Python) escape it: '"', '\\' and the control
 * characters; every other byte as it is. */
static void put_string(lua_State *L, struct enc *e, const char *s, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	size_t from = 0;

	put(L, e, "\"", 1);
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		char esc[6] = {'\\', 0, 0, 0, 0, 0};
		size_t len = 2;
		if (c >= 0x20 && c != '"' && c != '\\')
			continue;
		switch (c) {
		case '"': esc[1] = '"'; break;
		case '\\': esc[1] = '\\'; break;
		case '\b': esc[1] = 'b'; break;
		case '\f': esc[1] = 'f'; break;
		case '\n': esc[1] = 'n'; break;
		case '\r': esc[1] = 'r'; break;
		case '\t': esc[1] = 't'; break;
		default:
			memcpy(esc + 1, "u00", 3);
			esc[4] = hex[c >> 4];
			esc[5] = hex[c & 15];
			len = 6;
		}
		put(L, e, s + from, i - from);
		put(L, e, esc, len);
		from = i + 1;
	}
	put(L, e, s + from, n - from);
	put(L, e, "\"", 1);
}

/* A number as cJSON prints it: 15 significant digits when they give the
 * value back, else 17; canonical: an integer, in full. */
static void put_number(lua_State *L, struct enc *e, int idx)
{
	char text[64];
	double d;
	int n, vi;

	if (e->canonical) {
		if (!lua_isinteger(L, idx))
			luaL_error(L,
				   KEY_ERR "%s is not an integer: give it "
					   "as text",
				   lua_tostring(L, idx));
		n = snprintf(text, sizeof(text), "%lld",
			     (long long)lua_tointeger(L, idx));
		put(L, e, text, (size_t)n);
		return;
	}
	d = lua_tonumber(L, idx);
	if (d != d || d > 1e308 || d < -1e308)
		luaL_error(L, "json: cannot encode nan or inf");
	/* an integral value within int: what %1.15g would print, faster
	 * (but -0, which it prints "-0") */
	vi = d >= INT_MAX ? INT_MAX : d <= (double)INT_MIN ? INT_MIN : (int)d;
	if (d == (double)vi && !(vi == 0 && signbit(d))) {
		n = snprintf(text, sizeof(text), "%d", vi);
	} else {
		double back;
		n = snprintf(text, sizeof(text), "%1.15g", d);
		back = strtod(text, NULL);
		double big = fabs(back) > fabs(d) ? fabs(back) : fabs(d);
		if (!(fabs(back - d) <= big * DBL_EPSILON))
			n = snprintf(text, sizeof(text), "%1.17g", d);
	}
	put(L, e, text, (size_t)n);
}

/* A string value or key: checked UTF-8 without NUL, but canonical. */
static const char *text_at(lua_State *L, struct enc *e, int idx, int is_key,
			   const char *key, size_t *len)
{
	const char *s = lua_tolstring(L, idx, len);

	return e->canonical ? s : check_text(L, idx, is_key, key);
}

static void encode_value(lua_State *L, int idx, int depth, struct enc *e,
			 const char *key);

static void encode_table(lua_State *L, int idx, int depth, struct enc *e)
{
	size_t n = 0; /* (left as it is when a key is not an integer) */
	int list = table_is_array(L, idx, &n);

	if (!list && e->canonical && n == 0 && lua_getmetatable(L, idx)) {
		lua_pop(L, 1);
		lua_pushnil(L);
		list = lua_next(L, idx) == 0; /* empty, with a metatable */
		if (!list)
			lua_pop(L, 2);
	}
	if (list) {
		put(L, e, "[", 1);
		for (size_t i = 1; i <= n; i++) {
			if (i > 1)
				put(L, e, ",", 1);
			lua_rawgeti(L, idx, (lua_Integer)i);
			encode_value(L, lua_gettop(L), depth + 1, e, NULL);
			lua_pop(L, 1);
		}
		put(L, e, "]", 1);
		return;
	}
	/* Collect string keys, sorted, for a stable output. */
	size_t count = 0;
	lua_pushnil(L);
	while (lua_next(L, idx)) {
		lua_pop(L, 1);
		if (lua_type(L, -1) != LUA_TSTRING) {
			if (e->canonical)
				luaL_error(L,
					   KEY_ERR "a key that is not "
						   "text: %s",
					   luaL_tolstring(L, -1, NULL));
			luaL_error(L,
				   "json: object keys must be strings (got "
				   "a %s key)",
				   luaL_typename(L, -1));
		}
		count++;
	}
	struct key *keys = lua_newuserdatauv(L, (count + 1) * sizeof(*keys),
					     0); // [..., keys]
	size_t i = 0;
	lua_pushnil(L);
	while (lua_next(L, idx)) {
		lua_pop(L, 1);
		/* anchored by the table */
		keys[i].s = text_at(L, e, -1, 1, NULL, &keys[i].n);
		i++;
	}
	qsort(keys, count, sizeof(*keys), cmp_keys);
	put(L, e, "{", 1);
	for (i = 0; i < count; i++) {
		if (i > 0)
			put(L, e, ",", 1);
		lua_pushlstring(L, keys[i].s, keys[i].n);
		lua_rawget(L, idx);
		put_string(L, e, keys[i].s, keys[i].n);
		put(L, e, ":", 1);
		encode_value(L, lua_gettop(L), depth + 1, e, keys[i].s);
		lua_pop(L, 1);
	}
	put(L, e, "}", 1);
	lua_pop(L, 1); /* keys */
}

static void encode_value(lua_State *L, int idx, int depth, struct enc *e,
			 const char *key)
{
	size_t len;
	const char *s;

	if (e->canonical && depth > 32)
		luaL_error(L, KEY_ERR "nested too deep");
	if (depth > JSON_MAX_DEPTH)
		luaL_error(L, "json: nesting deeper than %d (a cycle?)",
			   JSON_MAX_DEPTH);
	luaL_checkstack(L, 8, "json: nesting too deep");
	switch (lua_type(L, idx)) {
	case LUA_TNIL: put(L, e, "null", 4); return;
	case LUA_TBOOLEAN:
		if (lua_toboolean(L, idx))
			put(L, e, "true", 4);
		else
			put(L, e, "false", 5);
		return;
	case LUA_TNUMBER: put_number(L, e, idx); return;
	case LUA_TSTRING:
		s = text_at(L, e, idx, 0, key, &len);
		put_string(L, e, s, len);
		return;
	case LUA_TTABLE: encode_table(L, idx, depth, e); return;
	case LUA_TLIGHTUSERDATA:
		if (is_null(L, idx)) {
			put(L, e, "null", 4);
			return;
		}
		break;
	default: break;
	}
	if (e->canonical)
		luaL_error(L, KEY_ERR "a %s cannot be in a key",
			   luaL_typename(L, idx));
	if (luaL_getmetafield(L, idx, "__name") != LUA_TNIL) {
		const char *name = lua_tostring(L, -1);
		luaL_error(L, "json: cannot encode a %s value",
			   name ? name : "userdata");
	}
	luaL_error(L, "json: cannot encode a %s value", luaL_typename(L, idx));
}

/* The value at 1 encoded into a boxed buffer left on the stack. */
static struct enc *encode_top(lua_State *L, int canonical)
{
	struct enc *e;

	luaL_checkany(L, 1);
	lua_settop(L, 1);
	e = lua_newuserdatauv(L, sizeof(*e), 0); // [value, box]
	nv_buf_init(&e->b, JSON_MAX_BYTES);
	e->canonical = canonical;
	if (luaL_newmetatable(L, "navette.json.encoding")) {
		lua_pushcfunction(L, enc_gc);
		lua_setfield(L, -2, "__gc");
	}
	lua_setmetatable(L, -2);
	encode_value(L, 1, 0, e, NULL);
	return e;
}

/* json.encode(value [, pretty]): pretty is cJSON_Print's layout, of the
 * compact text parsed back (for people: plan --json, version --json). */
static int l_json_encode(lua_State *L)
{
	int pretty = lua_toboolean(L, 2);
	struct enc *e = encode_top(L, 0);

	if (!pretty) {
		lua_pushlstring(L, e->b.data ? e->b.data : "", e->b.len);
	} else {
		cJSON *v = cJSON_ParseWithLength(e->b.data, e->b.len);
		char *s = v ? cJSON_Print(v) : NULL;
		cJSON_Delete(v);
		if (!s)
			return luaL_error(L, "json: out of memory");
		lua_pushstring(L, s);
		free(s);
	}
	nv_buf_free(&e->b);
	return 1;
}

/* json.canonical(value): the canonical text (above). */
static int l_json_canonical(lua_State *L)
{
	struct enc *e = encode_top(L, 1);

	lua_pushlstring(L, e->b.data ? e->b.data : "", e->b.len);
	nv_buf_free(&e->b);
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

/* Whether the values at a and b are the same: equal (Lua's ==) when
 * either is not a table; else plain tables (no metatable but the array
 * mark) with the same keys, none a table, and key by key the same. skip
 * (0: none): a table whose keys are left out at the top. */
static int same_value(lua_State *L, int a, int b, int skip, int depth)
{
	int n = 0, same = 1;

	if (lua_type(L, a) != LUA_TTABLE || lua_type(L, b) != LUA_TTABLE)
		return lua_compare(L, a, b, LUA_OPEQ);
	if (lua_rawequal(L, a, b))
		return 1;
	if (depth > 32 || !plain_table(L, a) || !plain_table(L, b))
		return 0;
	luaL_checkstack(L, 6, "json.same: nesting too deep");
	lua_pushnil(L);
	while (same && lua_next(L, a)) { // [.., k, va]
		if (lua_type(L, -2) == LUA_TTABLE) {
			same = 0;
		} else if (!skip || !skipped(L, skip, -2)) {
			lua_pushvalue(L, -2);
			lua_rawget(L, b); // [.., k, va, vb]
			same = same_value(L, lua_gettop(L) - 1, lua_gettop(L),
					  0, depth + 1);
			lua_pop(L, 1);
			n++;
		}
		lua_pop(L, 1); // [.., k]
	}
	if (!same) {
		lua_pop(L, 1); /* the key lua_next left */
		return 0;
	}
	lua_pushnil(L);
	while (lua_next(L, b)) {
		lua_pop(L, 1);
		if (!skip || !skipped(L, skip, -1))
			n--;
	}
	return n == 0;
}

/* json.same(a, b [, skip]) -> boolean (above) */
static int l_json_same(lua_State *L)
{
	int skip = lua_type(L, 3) == LUA_TTABLE ? 3 : 0;

	luaL_checkany(L, 1);
	luaL_checkany(L, 2);
	lua_pushboolean(L, same_value(L, 1, 2, skip, 0));
	return 1;
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
	static const luaL_Reg fns[] = {
		{"encode", l_json_encode}, {"canonical", l_json_canonical},
		{"same", l_json_same},     {"decode", l_json_decode},
		{"array", l_json_array},   {NULL, NULL}};
	luaL_newmetatable(L, ARRAY_MT);
	lua_pop(L, 1);
	luaL_newlib(L, fns); // [json]
	lua_pushlightuserdata(L, (void *)&luaopen_navette_json);
	lua_pushvalue(L, -1);
	lua_setfield(L, LUA_REGISTRYINDEX, "navette.json.null");
	lua_setfield(L, -2, "null");
	return 1;
}
