/* _navette.storage: the Lua binding of the file:// object store. A store is
 * a full userdata (like liolib's files) created closed before the store is
 * opened, so an error while opening leaks nothing; closing twice is
 * harmless and use after close raises. Misuse raises; expected failures
 * (missing object, bad key, I/O) return nil, {code, message, hint}. In plan
 * mode every side effect is recorded instead of done. No malloc'd memory is
 * held across a Lua call that can raise: buffers live in userdata. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>

#include "core/nv_err.h"
#include "core/nv_lua.h"
#include "core/sha256.h"
#include "storage/filestore.h"
#include "storage/storage_lua.h"

#define STORAGE_STORE_MT  "navette.storage.store"
#define STORAGE_BUFFER_MT "navette.storage.buffer"
#define READ_DEFAULT_MAX  ((lua_Integer)64 * 1024 * 1024)
#define URL_CAP           (NV_FILESTORE_PATH_MAX * 3 + 8)

typedef struct l_store {
	nv_filestore *store; /* NULL once closed */
} l_store;

/* Holds nv_filestore_read()'s malloc'd bytes while Lua copies them. */
typedef struct l_buffer {
	char *data;
} l_buffer;

static l_store *check_store(lua_State *L)
{
	l_store *s = luaL_checkudata(L, 1, STORAGE_STORE_MT);

	nv_lua_check_open(L, s->store != NULL, STORAGE_STORE_MT);
	return s;
}

const char *nv_storage_check_key(lua_State *L, int idx, nv_err *err)
{
	size_t len;
	const char *key = luaL_checklstring(L, idx, &len);

	if (nv_filestore_key_check_len(key, len, err))
		return NULL;
	return key;
}

/* Pushes the file:// URL of key. */
static void push_url(lua_State *L, nv_filestore *store, const char *key)
{
	char url[URL_CAP];
	nv_err err;

	if (nv_filestore_url(url, sizeof(url), store, key, &err))
		lua_pushnil(L);
	else
		lua_pushstring(L, url);
}

void nv_storage_push_object(lua_State *L, const nv_object_info *info)
{
	lua_createtable(L, 0, 5); /* [info] */
	lua_pushstring(L, info->key);
	lua_setfield(L, -2, "key");
	lua_pushinteger(L, (lua_Integer)info->size);
	lua_setfield(L, -2, "size");
	if (info->sha256[0]) {
		lua_pushstring(L, info->sha256);
		lua_setfield(L, -2, "sha256");
	}
}

/* Pushes {key=, size=, sha256=, mtime=[, url=]}. */
static void push_info(lua_State *L, nv_filestore *store,
		      const nv_object_info *info, int with_url)
{
	nv_storage_push_object(L, info); /* [info] */
	lua_pushinteger(L, (lua_Integer)info->mtime);
	lua_setfield(L, -2, "mtime");
	if (with_url) {
		push_url(L, store, info->key);
		lua_setfield(L, -2, "url");
	}
}

static void mark_planned(lua_State *L)
{
	lua_pushboolean(L, 1);
	lua_setfield(L, -2, "planned"); /* [info] */
}

/* What a plan reports for an object it cannot describe yet (it would be
 * made by an earlier step that the plan did not perform). */
static void push_planned_stub(lua_State *L, nv_filestore *store,
			      const char *key)
{
	lua_createtable(L, 0, 3);
	lua_pushstring(L, key);
	lua_setfield(L, -2, "key");
	push_url(L, store, key);
	lua_setfield(L, -2, "url");
	mark_planned(L);
}

/* ---- module functions ------------------------------------------------- */

/* open([root_or_url [, create]]): no argument opens the local store at
 * $NAVETTE_HOME/store, made if needed. */
static int l_storage_open(lua_State *L)
{
	char path[NV_FILESTORE_PATH_MAX];
	int create = lua_toboolean(L, 2);
	nv_filestore *store = NULL;
	l_store *s;
	nv_err err;
	int rc;

	if (lua_isnoneornil(L, 1)) {
		const char *home = nv_lua_home(L);
		if (strlen(home) + sizeof("/store") > sizeof(path))
			return luaL_error(L, "NAVETTE_HOME is too long");
		memcpy(path, home, strlen(home));
		memcpy(path + strlen(home), "/store", sizeof("/store"));
		create = 1;
	} else if (nv_filestore_path_from_url(path, sizeof(path),
					      luaL_checkstring(L, 1), &err)) {
		return nv_lua_push_error(L, &err);
	}
	/* created closed: if anything below raises, __gc has nothing to do */
	s = lua_newuserdatauv(L, sizeof(*s), 0); /* [.., s] */
	s->store = NULL;
	luaL_setmetatable(L, STORAGE_STORE_MT);

	if (create && nv_plan_mode(L)) {
		/* A plan opens what exists and records what it would make. */
		rc = nv_filestore_open(&store, path, 0, &err);
		if (rc == NV_ENOTFOUND) {
			lua_pushfstring(L, "file://%s (new store)", path);
			nv_plan_record(L, "storage", "create",
				       lua_tostring(L, -1));
			lua_pop(L, 1);
			nv_err_set(&err, NV_EREFUSED,
				   "run it for real once, or create the store "
				   "before planning",
				   "store '%s' does not exist yet and a plan "
				   "does not create it",
				   path);
		}
	} else {
		rc = nv_filestore_open(&store, path, create, &err);
	}
	if (rc)
		return nv_lua_push_error(L, &err);
	s->store = store; /* from here the store belongs to the GC */
	return 1;
}

/* find(url) -> root, key */
static int l_storage_find(lua_State *L)
{
	char root[NV_FILESTORE_PATH_MAX], key[NV_FILESTORE_KEY_MAX + 1];
	nv_err err;

	if (nv_filestore_find(root, sizeof(root), key, sizeof(key),
			      luaL_checkstring(L, 1), &err))
		return nv_lua_push_error(L, &err);
	lua_pushstring(L, root);
	lua_pushstring(L, key); /* [root, key] */
	return 2;
}

/* path_from_url(url) -> the absolute path a file:// URL names (decoded,
 * no "." or ".." step), as the store reads it | nil, err */
static int l_storage_path_from_url(lua_State *L)
{
	char path[NV_FILESTORE_PATH_MAX];
	nv_err err;
	int rc;

	rc = nv_filestore_path_from_url(path, sizeof(path),
					luaL_checkstring(L, 1), &err);
	return nv_lua_string_result(L, rc, path, &err);
}

/* ---- store methods ---------------------------------------------------- */

/* A put in a plan: recorded, not done; -> the info it would give (no
 * mtime: nothing written). from: the source file, or "string". */
static int plan_put(lua_State *L, l_store *s, const char *key,
		    nv_object_info *info, const char *from)
{
	memcpy(info->key, key, strlen(key) + 1);
	push_url(L, s->store, key);
	lua_pushfstring(L, "%s <- %s (sha256 %s, %I bytes)",
			lua_tostring(L, -1), from, info->sha256,
			(lua_Integer)info->size);
	nv_plan_record(L, "storage", "put", lua_tostring(L, -1));
	lua_pop(L, 2);
	push_info(L, s->store, info, 1);
	lua_pushnil(L);
	lua_setfield(L, -2, "mtime");
	mark_planned(L);
	return 1;
}

/* The end of a call that gives an object's info: info | nil, err */
static int info_result(lua_State *L, l_store *s, int rc,
		       const nv_object_info *info, const nv_err *err)
{
	if (rc)
		return nv_lua_push_error(L, err);
	push_info(L, s->store, info, 1);
	return 1;
}

/* put(key, path) and put_string(key, bytes): data is NULL for a file. */
static int put(lua_State *L, const char *path, const char *data, size_t len)
{
	l_store *s = check_store(L);
	nv_object_info info;
	const char *key;
	nv_err err;
	int rc;

	key = nv_storage_check_key(L, 2, &err);
	if (!key)
		return nv_lua_push_error(L, &err);
	if (nv_plan_mode(L)) {
		/* reading the source is no side effect: the plan shows the
		 * checksum that would be published */
		memset(&info, 0, sizeof(info));
		info.size = len;
		if (data)
			rc = nv_sha256_bytes(data, len, info.sha256, &err);
		else
			rc = nv_sha256_file(path, info.sha256, &info.size,
					    &err);
		if (rc)
			return nv_lua_push_error(L, &err);
		return plan_put(L, s, key, &info, data ? "string" : path);
	}
	if (data)
		rc = nv_filestore_put_bytes(s->store, key, data, len, &info,
					    &err);
	else
		rc = nv_filestore_put_file(s->store, key, path, &info, &err);
	return info_result(L, s, rc, &info, &err);
}

static int l_storage_put(lua_State *L)
{
	check_store(L);
	return put(L, luaL_checkstring(L, 3), NULL, 0);
}

static int l_storage_put_string(lua_State *L)
{
	size_t len;
	const char *data;

	check_store(L);
	data = luaL_checklstring(L, 3, &len);
	return put(L, NULL, data, len);
}

static int l_storage_get(lua_State *L)
{
	l_store *s = check_store(L);
	const char *dest = luaL_checkstring(L, 3);
	nv_object_info info;
	const char *key;
	nv_err err;
	int rc;

	key = nv_storage_check_key(L, 2, &err);
	if (!key)
		return nv_lua_push_error(L, &err);
	if (nv_plan_mode(L)) {
		/* get writes a local file: recorded, not done */
		rc = nv_filestore_head(s->store, key, &info, &err);
		if (rc && rc != NV_ENOTFOUND)
			return nv_lua_push_error(L, &err);
		push_url(L, s->store, key);
		lua_pushfstring(L, "%s -> %s", lua_tostring(L, -1), dest);
		nv_plan_record(L, "storage", "get", lua_tostring(L, -1));
		lua_pop(L, 2);
		if (rc)
			push_planned_stub(L, s->store, key);
		else
			push_info(L, s->store, &info, 1);
		mark_planned(L);
		return 1;
	}
	rc = nv_filestore_get_file(s->store, key, dest, &info, &err);
	return info_result(L, s, rc, &info, &err);
}

static int l_storage_buffer_gc(lua_State *L)
{
	l_buffer *b = luaL_checkudata(L, 1, STORAGE_BUFFER_MT);

	free(b->data);
	b->data = NULL;
	return 0;
}

/* read(key [, max_bytes]) -> string, info */
static int l_storage_read(lua_State *L)
{
	l_store *s = check_store(L);
	lua_Integer max = nv_lua_optrange(L, 3, 1, LUA_MAXINTEGER,
					  READ_DEFAULT_MAX, "read: max_bytes");
	nv_object_info info;
	const char *key;
	l_buffer *b;
	size_t len;
	nv_err err;
	char *data;

	luaL_argcheck(L, max > 0 && (uint64_t)max <= SIZE_MAX, 3,
		      "max_bytes must be a positive integer");
	key = nv_storage_check_key(L, 2, &err);
	if (!key)
		return nv_lua_push_error(L, &err);
	b = lua_newuserdatauv(L, sizeof(*b), 0); /* [.., buf] */
	b->data = NULL;
	luaL_setmetatable(L, STORAGE_BUFFER_MT);
	if (nv_filestore_read(s->store, key, (size_t)max, &data, &len, &info,
			      &err))
		return nv_lua_push_error(L, &err);
	b->data = data; /* the GC frees it if the copy below raises */
	lua_pushlstring(L, data, len); /* [.., buf, string] */
	free(b->data);
	b->data = NULL;
	push_info(L, s->store, &info, 1); /* [.., buf, string, info] */
	return 2;
}

static int l_storage_head(lua_State *L)
{
	l_store *s = check_store(L);
	nv_object_info info;
	const char *key;
	nv_err err;
	int rc;

	key = nv_storage_check_key(L, 2, &err);
	if (!key)
		return nv_lua_push_error(L, &err);
	rc = nv_filestore_head(s->store, key, &info, &err);
	return info_result(L, s, rc, &info, &err);
}

struct list_page {
	nv_object_info *items; /* userdata memory, max_keys long */
	unsigned n, cap;
};

static int list_collect(const nv_object_info *info, void *payload)
{
	struct list_page *page = payload;

	if (page->n == page->cap)
		return -1; /* cannot happen: the store stops at max_keys */
	page->items[page->n++] = *info;
	return 0;
}

/* list([prefix [, {start_after=, max_keys=}]]) ->
 * {objects = {...}, truncated = bool, next_start_after = key|nil} */
static int l_storage_list(lua_State *L)
{
	l_store *s = check_store(L);
	size_t prefix_len, after_len = 0;
	const char *prefix = luaL_optlstring(L, 2, "", &prefix_len);
	const char *after = NULL;
	lua_Integer max = NV_FILESTORE_LIST_MAX;
	struct list_page page;
	int truncated = 0;
	nv_err err;
	unsigned i;

	if (!lua_isnoneornil(L, 3)) {
		luaL_checktype(L, 3, LUA_TTABLE);
		if (lua_getfield(L, 3, "start_after") != LUA_TNIL) {
			luaL_argcheck(L, lua_type(L, -1) == LUA_TSTRING, 3,
				      "start_after must be a string");
			after = lua_tolstring(L, -1, &after_len);
		}
		/* the string stays referenced by the options table */
		lua_pop(L, 1);
		if (lua_getfield(L, 3, "max_keys") != LUA_TNIL) {
			max = nv_lua_checkrange(L, -1, 1, NV_FILESTORE_LIST_MAX,
						"list: max_keys");
		}
		lua_pop(L, 1);
	}
	if (strlen(prefix) != prefix_len ||
	    (after && strlen(after) != after_len)) {
		nv_err_set(&err, NV_EINVAL, "remove the NUL byte",
			   "list: prefix or start_after holds a NUL byte");
		return nv_lua_push_error(L, &err);
	}
	page.n = 0;
	page.cap = (unsigned)max;
	page.items = lua_newuserdatauv(L, sizeof(nv_object_info) * page.cap,
				       0); /* [.., items] */
	if (nv_filestore_list(s->store, prefix, after, page.cap, list_collect,
			      &page, &truncated, &err))
		return nv_lua_push_error(L, &err);

	lua_createtable(L, 0, 3);           /* [.., items, result] */
	lua_createtable(L, (int)page.n, 0); /* [.., items, result, objs] */
	for (i = 0; i < page.n; i++) {
		push_info(L, s->store, &page.items[i], 0);
		lua_rawseti(L, -2, (lua_Integer)i + 1);
	}
	lua_setfield(L, -2, "objects"); /* [.., items, result] */
	lua_pushboolean(L, truncated);
	lua_setfield(L, -2, "truncated");
	if (truncated && page.n > 0) {
		lua_pushstring(L, page.items[page.n - 1].key);
		lua_setfield(L, -2, "next_start_after");
	}
	return 1;
}

static int l_storage_delete(lua_State *L)
{
	l_store *s = check_store(L);
	const char *key;
	nv_err err;

	key = nv_storage_check_key(L, 2, &err);
	if (!key)
		return nv_lua_push_error(L, &err);
	if (nv_plan_mode(L)) {
		push_url(L, s->store, key);
		return nv_lua_planned(L, "storage", "delete",
				      lua_tostring(L, -1));
	}
	return nv_lua_result(L, nv_filestore_delete(s->store, key, &err), &err);
}

static int l_storage_copy(lua_State *L)
{
	l_store *s = check_store(L);
	const char *src, *dst;
	nv_object_info info;
	nv_err err;
	int rc;

	src = nv_storage_check_key(L, 2, &err);
	if (!src)
		return nv_lua_push_error(L, &err);
	dst = nv_storage_check_key(L, 3, &err);
	if (!dst)
		return nv_lua_push_error(L, &err);
	if (nv_plan_mode(L)) {
		rc = nv_filestore_head(s->store, src, &info, &err);
		if (rc && rc != NV_ENOTFOUND)
			return nv_lua_push_error(L, &err);
		push_url(L, s->store, dst);
		push_url(L, s->store, src);
		lua_pushfstring(L, "%s <- %s", lua_tostring(L, -2),
				lua_tostring(L, -1));
		nv_plan_record(L, "storage", "copy", lua_tostring(L, -1));
		lua_pop(L, 3);
		if (rc) {
			push_planned_stub(L, s->store, dst);
		} else {
			memcpy(info.key, dst, strlen(dst) + 1);
			push_info(L, s->store, &info, 1);
			lua_pushnil(L);
			lua_setfield(L, -2, "mtime");
			mark_planned(L);
		}
		return 1;
	}
	rc = nv_filestore_copy(s->store, src, dst, &info, &err);
	return info_result(L, s, rc, &info, &err);
}

static int l_storage_url(lua_State *L)
{
	l_store *s = check_store(L);
	char url[URL_CAP];
	const char *key;
	nv_err err;
	int rc;

	key = nv_storage_check_key(L, 2, &err);
	if (!key)
		return nv_lua_push_error(L, &err);
	rc = nv_filestore_url(url, sizeof(url), s->store, key, &err);
	return nv_lua_string_result(L, rc, url, &err);
}

static int l_storage_root(lua_State *L)
{
	lua_pushstring(L, nv_filestore_root(check_store(L)->store));
	return 1;
}

/* close(), __close and __gc: harmless on a closed store. */
static int l_storage_close(lua_State *L)
{
	l_store *s = luaL_checkudata(L, 1, STORAGE_STORE_MT);

	nv_filestore_free(s->store);
	s->store = NULL;
	lua_pushboolean(L, 1);
	return 1;
}

static int l_storage_tostring(lua_State *L)
{
	l_store *s = luaL_checkudata(L, 1, STORAGE_STORE_MT);

	return nv_lua_push_handle_name(L, STORAGE_STORE_MT,
				       s->store ? nv_filestore_root(s->store)
						: NULL);
}

static const luaL_Reg store_methods[] = {
	{"put", l_storage_put},       {"put_string", l_storage_put_string},
	{"get", l_storage_get},       {"read", l_storage_read},
	{"head", l_storage_head},     {"list", l_storage_list},
	{"delete", l_storage_delete}, {"copy", l_storage_copy},
	{"url", l_storage_url},       {"root", l_storage_root},
	{"close", l_storage_close},   {NULL, NULL},
};

static const luaL_Reg store_meta[] = {
	{"__gc", l_storage_close},
	{"__close", l_storage_close},
	{"__tostring", l_storage_tostring},
	{NULL, NULL},
};

/* job_prefix(template, project, id) -> prefix | nil, err: where a job
 * publishes, checked in C (the id's grammar, the key rules) */
static int l_storage_job_prefix(lua_State *L)
{
	char prefix[NV_FILESTORE_KEY_MAX + 1];
	size_t tlen, plen, ilen;
	const char *tmpl = luaL_checklstring(L, 1, &tlen);
	const char *project = luaL_checklstring(L, 2, &plen);
	const char *id = luaL_checklstring(L, 3, &ilen);
	nv_err err;
	int rc;

	if (strlen(tmpl) != tlen || strlen(project) != plen ||
	    strlen(id) != ilen) {
		nv_err_set(&err, NV_EINVAL, NULL,
			   "job prefix: a NUL byte in the prefix, project or "
			   "id");
		return nv_lua_push_error(L, &err);
	}
	rc = nv_filestore_job_prefix(prefix, sizeof(prefix), tmpl, project, id,
				     &err);
	return nv_lua_string_result(L, rc, prefix, &err);
}

static const luaL_Reg storage_functions[] = {
	{"open", l_storage_open},
	{"job_prefix", l_storage_job_prefix},
	{"find", l_storage_find},
	{"path_from_url", l_storage_path_from_url},
	{NULL, NULL},
};

int luaopen_navette_storage(lua_State *L)
{
	nv_lua_new_handle_type(L, STORAGE_STORE_MT, store_meta, store_methods);
	nv_lua_new_box_type(L, STORAGE_BUFFER_MT, l_storage_buffer_gc);
	luaL_newlib(L, storage_functions); /* [storage] */
	return 1;
}
