/* _navette.s3: the Lua binding of the S3 client (s3.h). A client is a full
 * userdata (liolib style: created closed before it is filled, closing twice
 * is harmless, use after close raises) holding an nv_s3_config whose
 * strings and credential handle live in its user value table, so they stay
 * reachable (and, Lua's collector never moving strings, at the same
 * address) as long as the client. The secret behind the handle is looked up
 * again at every call: closing the handle makes the client's next call
 * raise instead of reading freed memory.
 *
 * Misuse raises; expected failures (a bad key, a missing object, a refusal)
 * return nil, {code, message, hint}. In plan mode every side effect is
 * recorded instead of done. No malloc'd memory is held across a Lua call
 * that can raise: C results go into userdata boxes first. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <lauxlib.h>
#include <lua.h>

#include "core/buf.h"
#include "core/clock.h"
#include "core/nv_err.h"
#include "core/nv_lua.h"
#include "core/output.h"
#include "creds/creds_lua.h"
#include "storage/rgw_admin.h"
#include "storage/s3.h"
#include "storage/s3_lifecycle.h"
#include "storage/s3_policy.h"
#include "storage/sigv4.h"
#include "storage/storage_lua.h"

#define S3_CLIENT_MT "navette.s3.client"
#define S3_BOX_MT    "navette.s3.box"
#define S3_PAGE_MT   "navette.s3.page"
#define SIGNED_MAX   ((size_t)64 * 1024) /* a URL or a POST form */
#define EXPLAIN_MAX  NV_SIGV4_OUTPUT_MAX
#define PROGRESS_EVERY_NS                                                      \
	100000000L /* between calls of a progress function                     \
		    */

typedef struct l_s3_client {
	nv_s3_config cfg;
	int open;
} l_s3_client;

/* Two C buffers owned by the collector (they may hold a session token:
 * wiped when collected). */
typedef struct l_s3_box {
	nv_buf a, b;
} l_s3_box;

/* One page of a listing, filled by C without calling Lua. */
typedef struct s3_page {
	nv_object_info *items; /* NV_S3_LIST_MAX of them */
	unsigned n;
} s3_page;

/* ---- helpers ------------------------------------------------------------ */

static void buf_wipe_free(nv_buf *b)
{
	if (b->data)
		memset(b->data, 0, b->cap);
	nv_buf_free(b);
}

static int l_s3_box_gc(lua_State *L)
{
	l_s3_box *box = luaL_checkudata(L, 1, S3_BOX_MT);
	buf_wipe_free(&box->a);
	buf_wipe_free(&box->b);
	return 0;
}

static l_s3_box *push_box(lua_State *L, size_t max)
{
	l_s3_box *box = lua_newuserdatauv(L, sizeof(*box), 0); // [.., box]
	nv_buf_init(&box->a, max);
	nv_buf_init(&box->b, max);
	luaL_setmetatable(L, S3_BOX_MT);
	return box;
}

static int l_s3_page_gc(lua_State *L)
{
	s3_page *list = luaL_checkudata(L, 1, S3_PAGE_MT);
	free(list->items);
	list->items = NULL;
	return 0;
}

static l_s3_client *to_client(lua_State *L)
{
	return luaL_checkudata(L, 1, S3_CLIENT_MT);
}

/* The open client at 1 with its credential looked up now (raises when the
 * client or its credential handle was closed). */
static const nv_s3_config *check_client(lua_State *L)
{
	l_s3_client *c = to_client(L);

	nv_lua_check_open(L, c->open, S3_CLIENT_MT);
	lua_getiuservalue(L, 1, 1);        // [.., uv]
	lua_getfield(L, -1, "credential"); // [.., uv, handle|nil]
	c->cfg.credential = lua_isnil(L, -1) ? NULL : nv_creds_check(L, -1);
	lua_pop(L, 2); // [..] the user value keeps the handle alive
	return &c->cfg;
}

static const char *check_bucket(lua_State *L, int idx, nv_err *err)
{
	size_t len;
	const char *bucket = luaL_checklstring(L, idx, &len);

	if (strlen(bucket) != len) {
		nv_err_set(err, NV_EINVAL, NULL, "bucket name holds a NUL");
		return NULL;
	}
	if (nv_s3_bucket_check(bucket, err))
		return NULL;
	return bucket;
}

/* Pushes {key=, size=, sha256=, mtime=} (no mtime when unknown). */
/* The bucket at idx and the key after it: -1 with err filled when either
 * is malformed (an expected failure), 0 when both are good. */
static int check_object(lua_State *L, int idx, const char **bucket,
			const char **key, nv_err *err)
{
	if (!(*bucket = check_bucket(L, idx, err)) ||
	    !(*key = nv_storage_check_key(L, idx + 1, err)))
		return -1;
	return 0;
}

static void push_info(lua_State *L, const nv_object_info *info)
{
	nv_storage_push_object(L, info); // [.., info]
	if (info->mtime) {
		lua_pushinteger(L, (lua_Integer)info->mtime);
		lua_setfield(L, -2, "mtime");
	}
}

/* Adds what a transfer moved to the info table on top. */
static void push_stats(lua_State *L, const nv_s3_stats *stats)
{
	lua_pushinteger(L, (lua_Integer)stats->bytes_sent);
	lua_setfield(L, -2, "bytes_sent");
	if (stats->parts_resumed) {
		lua_pushinteger(L, (lua_Integer)stats->bytes_resumed);
		lua_setfield(L, -2, "bytes_resumed");
		lua_pushinteger(L, stats->parts_resumed);
		lua_setfield(L, -2, "parts_resumed");
	}
}

/* Records "s3 ACTION DETAIL" in the plan and pushes {key=, planned=true}. */
static int plan_stub(lua_State *L, const char *action, const char *key)
{
	nv_plan_record(L, "s3", action, lua_tostring(L, -1));
	lua_pop(L, 1); // [..] the detail pushed by the caller
	lua_createtable(L, 0, 2);
	if (key) {
		lua_pushstring(L, key);
		lua_setfield(L, -2, "key");
	}
	lua_pushboolean(L, 1);
	lua_setfield(L, -2, "planned"); // [.., stub]
	return 1;
}

/* Seconds since the epoch of an optional argument (nil or 0: now). */
static time_t opt_time(lua_State *L, int idx)
{
	return (time_t)nv_lua_optrange(L, idx, 0, (lua_Integer)NV_TIME_MAX, 0,
				       "s3: signing time");
}

static int check_expires(lua_State *L, int idx)
{
	/* out of range is an expected failure the C layer names; only a
	 * value that does not fit an int is misuse */
	return (int)nv_lua_checkrange(L, idx, INT32_MIN, INT32_MAX,
				      "s3: expiry (seconds)");
}

/* Keeps the last text this client signed in its user value, so that
 * write_signed() can tell it from any other string. */
static void remember_signed(lua_State *L)
{
	lua_getiuservalue(L, 1, 1); // [.., text, uv]
	lua_pushvalue(L, -2);       // [.., text, uv, text]
	lua_setfield(L, -2, "signed");
	lua_pop(L, 1); // [.., text]
}

/* ---- module functions --------------------------------------------------- */

/* open{endpoint=, region=, path_style=, credential=, credential_host=,
 * ca_bundle=, pin=, attempts=} -> client */
static int l_s3_open(lua_State *L)
{
	l_s3_client *c;
	int uv;

	luaL_checktype(L, 1, LUA_TTABLE);
	lua_settop(L, 1);
	/* created closed: if anything below raises, __gc has nothing to do */
	c = lua_newuserdatauv(L, sizeof(*c), 1); // [opts, client]
	memset(c, 0, sizeof(*c));
	luaL_setmetatable(L, S3_CLIENT_MT);
	lua_createtable(L, 0, 8); // [opts, client, uv]
	uv = lua_gettop(L);

	/* Each string is copied into uv (stack top is uv when
	 * opt_string_field stores it), so the pointers live with the
	 * client. */
	lua_pushvalue(L, 1); // [opts, client, uv, opts]
#define STRING_FIELD(field, name)                                              \
	do {                                                                   \
		int type = lua_getfield(L, -1, name); /* [.., opts, v] */      \
		if (type == LUA_TSTRING) {                                     \
			if (strlen(lua_tostring(L, -1)) != lua_rawlen(L, -1))  \
				return luaL_error(                             \
					L, "s3.open: %s holds a NUL", name);   \
			c->cfg.field = lua_tostring(L, -1);                    \
			lua_setfield(L, uv, name); /* [.., opts] */            \
		} else if (type == LUA_TNIL) {                                 \
			lua_pop(L, 1);                                         \
		} else {                                                       \
			return luaL_error(L, "s3.open: %s must be a string",   \
					  name);                               \
		}                                                              \
	} while (0)
	STRING_FIELD(endpoint, "endpoint");
	STRING_FIELD(region, "region");
	STRING_FIELD(ca_bundle, "ca_bundle");
	STRING_FIELD(pinned_pubkey, "pin");
	STRING_FIELD(credential_host, "credential_host");
#undef STRING_FIELD
	if (!c->cfg.endpoint)
		return luaL_error(L, "s3.open: endpoint is required");

	lua_getfield(L, -1, "path_style"); // [.., opts, ps]
	if (!lua_isnil(L, -1) && !lua_isboolean(L, -1))
		return luaL_error(L, "s3.open: path_style must be a boolean");
	c->cfg.virtual_host = !lua_isnil(L, -1) && !lua_toboolean(L, -1);
	lua_pop(L, 1);

	lua_getfield(L, -1, "attempts"); // [.., opts, n]
	if (!lua_isnil(L, -1)) {
		c->cfg.max_attempts = (int)nv_lua_checkrange(
			L, -1, 1, NV_S3_ATTEMPTS_MAX, "s3.open: attempts");
	}
	lua_pop(L, 1);

	lua_getfield(L, -1, "credential"); // [.., opts, handle|nil]
	if (!lua_isnil(L, -1)) {
		const nv_secret *s = nv_creds_check(L, -1);
		if (s->kind != NV_SECRET_S3)
			return luaL_error(L,
					  "s3.open: credential %s is of kind "
					  "%s, not s3",
					  s->name,
					  nv_secret_kind_name(s->kind));
		lua_setfield(L, uv, "credential"); // [.., opts]
	} else {
		lua_pop(L, 1);
	}
	lua_pop(L, 1);               // [opts, client, uv]
	lua_setiuservalue(L, -2, 1); // [opts, client]
	{
		nv_err err;

		/* the client's calls keep one connection alive */
		c->cfg.session = nv_http_session_new(&err);
		if (!c->cfg.session)
			return luaL_error(L, "s3.open: %s", err.message);
	}
	c->open = 1;
	return 1;
}

/* check_key(key) -> true | nil, err: the rule every call applies. */
static int l_s3_check_key(lua_State *L)
{
	nv_err err;
	int rc;

	rc = !nv_storage_check_key(L, 1, &err);
	return nv_lua_result(L, rc, &err);
}

static int l_s3_check_bucket(lua_State *L)
{
	nv_err err;
	int rc;

	rc = !check_bucket(L, 1, &err);
	return nv_lua_result(L, rc, &err);
}

/* ---- client methods ----------------------------------------------------- */

/* One put_file() or get_file(). With a progress function, the transfer
 * runs on a thread of its own while this one calls the function with
 * (done, total) every PROGRESS_EVERY_NS and once at the end; the thread
 * never touches the Lua state. */
struct transfer {
	nv_s3_config cfg;
	int put;
	const char *bucket, *key, *path; /* on the Lua stack: outlive it */
	nv_object_info info;
	nv_err err;
	int rc;
	int finished; /* atomic */
};

static void *transfer_main(void *arg)
{
	struct transfer *t = arg;

	t->rc = t->put ? nv_s3_put_file(&t->cfg, t->bucket, t->key, t->path,
					&t->info, &t->err)
		       : nv_s3_get_file(&t->cfg, t->bucket, t->key, t->path,
					&t->info, &t->err);
	__atomic_store_n(&t->finished, 1, __ATOMIC_RELEASE);
	return NULL;
}

static void report_progress(lua_State *L, int fn, const nv_s3_progress *p)
{
	uint64_t done, total;

	nv_s3_progress_read(p, &done, &total);
	lua_pushvalue(L, fn); // [fn]
	lua_pushinteger(L, (lua_Integer)done);
	lua_pushinteger(L, (lua_Integer)total); // [fn, done, total]
	if (lua_pcall(L, 2, 0, 0) != LUA_OK)
		lua_pop(L, 1); /* a broken progress bar is no reason to stop */
}

/* Runs t (fn: the stack index of a progress function, or 0). Nothing in
 * here raises while the thread runs: the stack room is made first and
 * the function is called protected. */
static int transfer_run(lua_State *L, struct transfer *t, int fn)
{
	nv_s3_progress progress;
	pthread_t thread;
	struct timespec pause = {0, PROGRESS_EVERY_NS};

	if (!fn) {
		transfer_main(t);
		return t->rc;
	}
	luaL_checkstack(L, 8, "progress");
	memset(&progress, 0, sizeof(progress));
	t->cfg.progress = &progress;
	if (pthread_create(&thread, NULL, transfer_main, t) != 0) {
		transfer_main(t);
	} else {
		while (!__atomic_load_n(&t->finished, __ATOMIC_ACQUIRE)) {
			report_progress(L, fn, &progress);
			nanosleep(&pause, NULL);
		}
		pthread_join(thread, NULL);
	}
	if (!t->rc)
		report_progress(L, fn, &progress);
	t->cfg.progress = NULL;
	return t->rc;
}

/* put/get(bucket, key, path [, progress]). reading: a get into navette's
 * own temporary file, which is reading and runs in plan mode too. */
static int put_or_get(lua_State *L, int put, int reading)
{
	const nv_s3_config *cfg = check_client(L);
	nv_s3_stats stats;
	struct transfer t;
	int fn = 0;

	memset(&t, 0, sizeof(t));
	t.put = put;
	t.path = luaL_checkstring(L, 4);
	if (!lua_isnoneornil(L, 5)) {
		luaL_checktype(L, 5, LUA_TFUNCTION);
		fn = 5;
	}
	if (check_object(L, 2, &t.bucket, &t.key, &t.err))
		return nv_lua_push_error(L, &t.err);
	if (!reading && nv_plan_mode(L)) {
		lua_pushfstring(L,
				put ? "s3://%s/%s <- %s" : "s3://%s/%s -> %s",
				t.bucket, t.key, t.path);
		return plan_stub(L, put ? "put" : "get", t.key);
	}
	t.cfg = *cfg;
	t.cfg.stats = &stats;
	if (reading && !lua_isnoneornil(L, 6)) {
		/* a read's bound, held as the body streams in: a HEAD that
		 * said less cannot make it download more */
		uint64_t max =
			(uint64_t)nv_lua_optrange(L, 6, 0, (lua_Integer)1 << 40,
						  0, "read_into: max_bytes");
		if (max &&
		    (!t.cfg.max_object_size || max < t.cfg.max_object_size))
			t.cfg.max_object_size = max;
	}
	if (transfer_run(L, &t, fn))
		return nv_lua_push_error(L, &t.err);
	push_info(L, &t.info);
	push_stats(L, &stats);
	return 1;
}

/* put(bucket, key, path [, progress]) -> info (with bytes_sent, and
 * bytes_resumed and parts_resumed when an interrupted upload was
 * continued); progress(done, total) is called while it runs. */
static int l_s3_put(lua_State *L)
{
	return put_or_get(L, 1, 0);
}

/* get(bucket, key, path [, progress]) -> info (stats as for put): path is
 * written only when complete. */
static int l_s3_get(lua_State *L)
{
	return put_or_get(L, 0, 0);
}

/* read_into(bucket, key, path [, progress [, max_bytes]]): get, for a
 * read whose bytes navette takes from path (a temporary file of its own,
 * removed by the caller), refused past max_bytes as it streams. No side
 * effect: runs in plan mode too. */
static int l_s3_read_into(lua_State *L)
{
	return put_or_get(L, 0, 1);
}

/* head(bucket, key) -> info (with etag) */
static int l_s3_head(lua_State *L)
{
	const nv_s3_config *cfg = check_client(L);
	char etag[NV_S3_ETAG_MAX + 1];
	const char *bucket, *key;
	nv_object_info info;
	nv_err err;

	if (check_object(L, 2, &bucket, &key, &err))
		return nv_lua_push_error(L, &err);
	if (nv_s3_head_etag(cfg, bucket, key, &info, etag, &err))
		return nv_lua_push_error(L, &err);
	push_info(L, &info);
	lua_pushstring(L, etag);
	lua_setfield(L, -2, "etag");
	return 1;
}

static int list_collect(const nv_object_info *info, void *payload)
{
	s3_page *list = payload;

	if (list->n >= NV_S3_LIST_MAX)
		return NV_ENOMEM;
	list->items[list->n++] = *info;
	return 0;
}

static const char *opt_option(lua_State *L, int t, const char *name)
{
	const char *s;

	if (lua_getfield(L, t, name) == LUA_TNIL) {
		lua_pop(L, 1);
		return NULL;
	}
	s = lua_tostring(L, -1);
	if (!lua_isstring(L, -1) || !s)
		luaL_error(L, "list: %s must be a string", name);
	return s; /* left on the stack: anchors the string */
}

/* list(bucket [, prefix [, {start_after=, max_keys=, continuation=}]])
 * -> {objects = {info...}, truncated = bool, continuation = token|nil} */
static int l_s3_list(lua_State *L)
{
	const nv_s3_config *cfg = check_client(L);
	char token[NV_S3_TOKEN_MAX + 1] = "";
	const char *bucket, *prefix = luaL_optstring(L, 3, NULL);
	const char *start_after = NULL, *continuation = NULL;
	unsigned max_keys = 0;
	int truncated = 0, rc;
	s3_page *list;
	nv_err err;

	if (!lua_isnoneornil(L, 4)) {
		luaL_checktype(L, 4, LUA_TTABLE);
		start_after = opt_option(L, 4, "start_after");
		continuation = opt_option(L, 4, "continuation");
		if (lua_getfield(L, 4, "max_keys") != LUA_TNIL) {
			max_keys = (unsigned)nv_lua_checkrange(
				L, -1, 1, NV_S3_LIST_MAX, "s3.list: max_keys");
		}
		lua_pop(L, 1);
	}
	if (!(bucket = check_bucket(L, 2, &err)))
		return nv_lua_push_error(L, &err);
	if (prefix && strlen(prefix) != lua_rawlen(L, 3)) {
		nv_err_set(&err, NV_EINVAL, NULL, "prefix holds a NUL");
		return nv_lua_push_error(L, &err);
	}
	if (continuation) {
		if (strlen(continuation) > NV_S3_TOKEN_MAX)
			return luaL_argerror(L, 4, "continuation too long");
		memcpy(token, continuation, strlen(continuation) + 1);
	}
	list = lua_newuserdatauv(L, sizeof(*list), 0); // [.., list]
	list->items = NULL;
	list->n = 0;
	luaL_setmetatable(L, S3_PAGE_MT);
	list->items = malloc(NV_S3_LIST_MAX * sizeof(*list->items));
	if (!list->items)
		return luaL_error(L, "not enough memory");
	rc = nv_s3_list(cfg, bucket, prefix, start_after, token, max_keys,
			list_collect, list, &truncated, &err);
	if (rc == NV_ENOMEM && list->n >= NV_S3_LIST_MAX)
		nv_err_set(&err, NV_EBACKEND, "the server misbehaves",
			   "S3 listing longer than its page");
	if (rc)
		return nv_lua_push_error(L, &err);
	lua_createtable(L, 0, 3);            // [.., list, result]
	lua_createtable(L, (int)list->n, 0); // [.., list, result, objects]
	for (unsigned i = 0; i < list->n; i++) {
		push_info(L, &list->items[i]);
		lua_rawseti(L, -2, (lua_Integer)i + 1);
	}
	lua_setfield(L, -2, "objects");
	lua_pushboolean(L, truncated);
	lua_setfield(L, -2, "truncated");
	if (truncated) {
		lua_pushstring(L, token);
		lua_setfield(L, -2, "continuation");
	}
	return 1;
}

/* delete(bucket, key) -> true */
static int l_s3_delete(lua_State *L)
{
	const nv_s3_config *cfg = check_client(L);
	const char *bucket, *key;
	nv_err err;
	int rc;

	if (check_object(L, 2, &bucket, &key, &err))
		return nv_lua_push_error(L, &err);
	if (nv_plan_mode(L)) {
		lua_pushfstring(L, "s3://%s/%s", bucket, key);
		return plan_stub(L, "delete", key);
	}
	rc = nv_s3_delete(cfg, bucket, key, &err);
	return nv_lua_result(L, rc, &err);
}

/* Collects a batch delete's reports into a box: a holds the deleted keys,
 * b "key\0code\0message\0" per failure (no Lua call meanwhile). */
struct batch_box {
	l_s3_box *box;
	size_t deleted, failed;
};

static int batch_report(const char *key, const char *code, const char *message,
			void *payload)
{
	struct batch_box *bb = payload;

	if (!code) {
		nv_buf_append(&bb->box->a, key, strlen(key) + 1);
		bb->deleted++;
	} else {
		nv_buf_append(&bb->box->b, key, strlen(key) + 1);
		nv_buf_append(&bb->box->b, code, strlen(code) + 1);
		nv_buf_append(&bb->box->b, message, strlen(message) + 1);
		bb->failed++;
	}
	return 0;
}

/* delete_batch(bucket, {key, ...}) -> {deleted = {key...}, failed =
 * {{key=, code=, message=}...}} once the service answered for every key
 * (some may have failed), or nil, err when the request itself failed. At
 * most 1000 keys. */
static int l_s3_delete_batch(lua_State *L)
{
	const nv_s3_config *cfg = check_client(L);
	const char *bucket, **keys;
	struct batch_box bb;
	lua_Integer n;
	nv_err err;
	int rc;

	if (!(bucket = check_bucket(L, 2, &err)))
		return nv_lua_push_error(L, &err);
	luaL_checktype(L, 3, LUA_TTABLE);
	n = (lua_Integer)lua_rawlen(L, 3);
	luaL_argcheck(L, n >= 1 && n <= NV_S3_DELETE_BATCH_MAX, 3,
		      "1 to 1000 keys");
	/* the strings stay alive in the table at 3 */
	keys = lua_newuserdatauv(L, (size_t)n * sizeof(*keys),
				 0); // [.., keys]
	for (lua_Integer i = 1; i <= n; i++) {
		lua_rawgeti(L, 3, i); // [.., keys, key]
		if (lua_type(L, -1) != LUA_TSTRING)
			return luaL_argerror(L, 3, "keys must be strings");
		if (!(keys[i - 1] = nv_storage_check_key(L, -1, &err)))
			return nv_lua_push_error(L, &err);
		lua_pop(L, 1); // [.., keys]
	}
	if (nv_plan_mode(L)) {
		lua_pushfstring(L, "s3://%s (%d keys)", bucket, (int)n);
		return plan_stub(L, "delete_batch", NULL);
	}
	bb.box = push_box(L, (size_t)4 * 1024 * 1024); // [.., keys, box]
	bb.deleted = bb.failed = 0;
	rc = nv_s3_delete_batch(cfg, bucket, keys, (size_t)n, batch_report, &bb,
				&err);
	if (rc && bb.deleted + bb.failed != (size_t)n)
		return nv_lua_push_error(L, &err);
	if (bb.box->a.failed || bb.box->b.failed)
		return luaL_error(L, "delete_batch: report over its cap");
	lua_createtable(L, 0, 2);               // [.., box, result]
	lua_createtable(L, (int)bb.deleted, 0); // [.., result, deleted]
	for (size_t i = 0, off = 0; i < bb.deleted; i++) {
		const char *k = bb.box->a.data + off;

		lua_pushstring(L, k);
		lua_rawseti(L, -2, (lua_Integer)i + 1);
		off += strlen(k) + 1;
	}
	lua_setfield(L, -2, "deleted");        // [.., result]
	lua_createtable(L, (int)bb.failed, 0); // [.., result, failed]
	for (size_t i = 0, off = 0; i < bb.failed; i++) {
		const char *k = bb.box->b.data + off;
		const char *code = k + strlen(k) + 1;
		const char *msg = code + strlen(code) + 1;

		lua_createtable(L, 0, 3);
		lua_pushstring(L, k);
		lua_setfield(L, -2, "key");
		lua_pushstring(L, code);
		lua_setfield(L, -2, "code");
		lua_pushstring(L, msg);
		lua_setfield(L, -2, "message");
		lua_rawseti(L, -2, (lua_Integer)i + 1);
		off = (size_t)(msg + strlen(msg) + 1 - bb.box->b.data);
	}
	lua_setfield(L, -2, "failed"); // [.., result]
	return 1;
}

/* copy(src_bucket, src_key, dst_bucket, dst_key) -> info of the copy */
static int l_s3_copy(lua_State *L)
{
	const nv_s3_config *cfg = check_client(L);
	const char *sb, *sk, *db, *dk;
	nv_object_info info;
	nv_err err;

	if (check_object(L, 2, &sb, &sk, &err) ||
	    check_object(L, 4, &db, &dk, &err))
		return nv_lua_push_error(L, &err);
	if (nv_plan_mode(L)) {
		lua_pushfstring(L, "s3://%s/%s -> s3://%s/%s", sb, sk, db, dk);
		return plan_stub(L, "copy", dk);
	}
	if (nv_s3_copy(cfg, sb, sk, db, dk, &info, &err))
		return nv_lua_push_error(L, &err);
	push_info(L, &info);
	return 1;
}

/* client:lifecycle(bucket, id, prefix, days) -> {outcome, rules}: outcome
 * "applied", "present", "unsupported" (the store answers 501) or
 * "foreign" (rules navette did not write are there: left alone), rules
 * the number the bucket had | nil, err */
static int l_s3_lifecycle(lua_State *L)
{
	static const char *const names[] = {"", "applied", "present",
					    "unsupported", "foreign"};
	const nv_s3_config *cfg = check_client(L);
	const char *bucket, *id, *prefix;
	nv_s3_lifecycle_outcome outcome = NV_S3_LIFECYCLE_APPLIED;
	lua_Integer days;
	int rules = 0;
	nv_err err;

	if (!(bucket = check_bucket(L, 2, &err)))
		return nv_lua_push_error(L, &err);
	id = luaL_checkstring(L, 3);
	prefix = luaL_checkstring(L, 4);
	days = luaL_checkinteger(L, 5);
	luaL_argcheck(L, days >= 1 && days <= NV_S3_LIFECYCLE_DAYS_MAX, 5,
		      "days out of range");
	if (nv_plan_mode(L)) {
		lua_pushfstring(L, "s3://%s: expire %s after %d days", bucket,
				prefix, (int)days);
		return plan_stub(L, "lifecycle", NULL);
	}
	if (nv_s3_lifecycle_apply(cfg, bucket, id, prefix, (long)days, &outcome,
				  &rules, &err))
		return nv_lua_push_error(L, &err);
	lua_createtable(L, 0, 2); // [.., result]
	lua_pushstring(L, names[outcome]);
	lua_setfield(L, -2, "outcome");
	lua_pushinteger(L, rules);
	lua_setfield(L, -2, "rules");
	return 1;
}

/* client:bucket_policy(bucket) -> json | false (none) | nil, err */
static int l_s3_bucket_policy(lua_State *L)
{
	const nv_s3_config *cfg = check_client(L);
	const char *bucket;
	nv_buf out;
	int none = 0;
	nv_err err;

	if (!(bucket = check_bucket(L, 2, &err)))
		return nv_lua_push_error(L, &err);
	nv_buf_init(&out, NV_S3_POLICY_MAX + 1);
	if (nv_s3_policy_get(cfg, bucket, &out, &none, &err)) {
		nv_buf_free(&out);
		return nv_lua_push_error(L, &err);
	}
	if (none)
		lua_pushboolean(L, 0);
	else
		lua_pushlstring(L, out.data ? out.data : "", out.len);
	nv_buf_free(&out);
	return 1;
}

/* client:put_bucket_policy(bucket, json) -> true | nil, err;
 * client:put_bucket_policy(bucket, nil) removes it. Plan mode: recorded. */
static int l_s3_put_bucket_policy(lua_State *L)
{
	const nv_s3_config *cfg = check_client(L);
	const char *bucket, *json = NULL;
	size_t len = 0;
	nv_err err;
	int rc;

	if (!(bucket = check_bucket(L, 2, &err)))
		return nv_lua_push_error(L, &err);
	if (!lua_isnoneornil(L, 3)) {
		json = luaL_checklstring(L, 3, &len);
		if (nv_s3_policy_check(json, len, &err))
			return nv_lua_push_error(L, &err);
	}
	if (nv_plan_mode(L)) {
		lua_pushfstring(L, "s3://%s: %s", bucket,
				json ? "bucket policy written"
				     : "bucket policy removed");
		return plan_stub(L, "bucket_policy", NULL);
	}
	rc = json ? nv_s3_policy_put(cfg, bucket, json, len, &err)
		  : nv_s3_policy_delete(cfg, bucket, &err);
	return nv_lua_result(L, rc, &err);
}

/* create_bucket(bucket) -> true (also when the caller already owns it) */
static int l_s3_create_bucket(lua_State *L)
{
	const nv_s3_config *cfg = check_client(L);
	const char *bucket;
	nv_err err;
	int rc;

	if (!(bucket = check_bucket(L, 2, &err)))
		return nv_lua_push_error(L, &err);
	if (nv_plan_mode(L)) {
		lua_pushfstring(L, "s3://%s", bucket);
		return plan_stub(L, "create_bucket", NULL);
	}
	rc = nv_s3_create_bucket(cfg, bucket, &err);
	return nv_lua_result(L, rc, &err);
}

/* presign(method, bucket, key, expires_s [, at]) -> url. No side effect:
 * runs in plan mode too. */
static int l_s3_presign(lua_State *L)
{
	/* (DELETE: a job's sealed secrets, which its launcher deletes once
	 * fetched: backends/slurm.lua) */
	static const char *const methods[] = {"GET", "PUT", "DELETE", NULL};
	const nv_s3_config *cfg = check_client(L);
	const char *method = methods[luaL_checkoption(L, 2, NULL, methods)];
	int expires = check_expires(L, 5);
	time_t at = opt_time(L, 6);
	const char *bucket, *key;
	l_s3_box *box;
	nv_err err;

	if (check_object(L, 3, &bucket, &key, &err))
		return nv_lua_push_error(L, &err);
	box = push_box(L, SIGNED_MAX); // [.., box]
	if (nv_s3_presign(cfg, method, bucket, key, expires, at, &box->a, &err))
		return nv_lua_push_error(L, &err);
	lua_pushlstring(L, box->a.data, box->a.len); // [.., box, url]
	remember_signed(L);
	return 1;
}

/* post_policy(bucket, prefix, expires_s, max_bytes [, at [, meta]]) ->
 * JSON text; meta: a list of metadata names the form may set. */
static int l_s3_post_policy(lua_State *L)
{
	const nv_s3_config *cfg = check_client(L);
	size_t plen;
	const char *prefix = luaL_checklstring(L, 3, &plen);
	int expires = check_expires(L, 4);
	lua_Integer max_bytes =
		nv_lua_checkrange(L, 5, LUA_MININTEGER, LUA_MAXINTEGER,
				  "s3.post_policy: max_bytes");
	time_t at = opt_time(L, 6);
	const char *meta[NV_S3_POST_META_MAX + 2] = {NULL};
	const char *bucket;
	l_s3_box *box;
	nv_err err;

	if (!lua_isnoneornil(L, 7)) {
		luaL_checktype(L, 7, LUA_TTABLE);
		lua_Integer n = luaL_len(L, 7);
		luaL_argcheck(L, n <= NV_S3_POST_META_MAX + 1, 7,
			      "too many metadata names");
		for (lua_Integer i = 1; i <= n; i++) {
			lua_geti(L, 7, i); // [.., name] kept alive by arg 7
			meta[i - 1] = luaL_checkstring(L, -1);
			lua_pop(L, 1);
		}
	}
	if (!(bucket = check_bucket(L, 2, &err)))
		return nv_lua_push_error(L, &err);
	if (strlen(prefix) != plen) {
		nv_err_set(&err, NV_EINVAL, NULL, "key prefix holds a NUL");
		return nv_lua_push_error(L, &err);
	}
	if (max_bytes < 0)
		max_bytes =
			0; /* refused by the C layer, as an expected failure */
	box = push_box(L, SIGNED_MAX); // [.., box]
	if (nv_s3_post_policy(cfg, bucket, prefix, expires, (uint64_t)max_bytes,
			      meta, at, &box->a, &err))
		return nv_lua_push_error(L, &err);
	lua_pushlstring(L, box->a.data, box->a.len); // [.., box, json]
	remember_signed(L);
	return 1;
}

/* explain(method, bucket [, key [, at]]) -> canonical_request,
 * string_to_sign */
static int l_s3_explain(lua_State *L)
{
	static const char *const methods[] = {"GET", "HEAD", "PUT", "DELETE",
					      NULL};
	const nv_s3_config *cfg = check_client(L);
	const char *method = methods[luaL_checkoption(L, 2, NULL, methods)];
	time_t at = opt_time(L, 5);
	const char *bucket, *key = NULL;
	l_s3_box *box;
	nv_err err;

	if (!(bucket = check_bucket(L, 3, &err)) ||
	    (!lua_isnoneornil(L, 4) &&
	     !(key = nv_storage_check_key(L, 4, &err))))
		return nv_lua_push_error(L, &err);
	box = push_box(L, EXPLAIN_MAX); // [.., box]
	if (nv_s3_sign_explain(cfg, method, bucket, key, at, &box->a, &box->b,
			       &err))
		return nv_lua_push_error(L, &err);
	lua_pushlstring(L, box->a.data ? box->a.data : "", box->a.len);
	lua_pushlstring(L, box->b.data ? box->b.data : "", box->b.len);
	return 2; // [.., box, canonical, string_to_sign]
}

/* write_signed(text): prints to stdout, as it is, the URL or form that
 * this client last signed. The redactor would mask its signature and
 * access key id, which the user asked for and must hand on; any other text
 * is refused, so this is no way around the redactor. */
static int l_s3_write_signed(lua_State *L)
{
	size_t len;
	const char *text;

	check_client(L);
	text = luaL_checklstring(L, 2, &len);
	lua_getiuservalue(L, 1, 1);    // [.., uv]
	lua_getfield(L, -1, "signed"); // [.., uv, signed|nil]
	if (!lua_isstring(L, -1) || !lua_rawequal(L, 2, -1))
		return luaL_error(L, "write_signed: not the text this client "
				     "signed last");
	nv_out_flush();
	fwrite(text, 1, len, stdout);
	fputc('\n', stdout);
	fflush(stdout);
	return 0;
}

/* close(), __close and __gc: harmless on a closed client. */
/* ---- radosgw's admin API (rgw_admin.h), on a client signed by an admin -- */

/* client:admin_keys(uid) -> {access key id, ...} | nil, err */
static int l_s3_admin_keys(lua_State *L)
{
	const nv_s3_config *cfg = check_client(L);
	const char *uid = luaL_checkstring(L, 2);
	/* 13 KiB: in a userdata, not on the C stack */
	nv_rgw_key_list *ids = lua_newuserdatauv(L, sizeof(*ids), 0);
	nv_err err;

	if (nv_rgw_user_keys(cfg, uid, ids, &err))
		return nv_lua_push_error(L, &err);
	lua_createtable(L, ids->count, 0); // [.., ids, list]
	for (int i = 0; i < ids->count; i++) {
		lua_pushstring(L, ids->ids[i]);
		lua_rawseti(L, -2, i + 1);
	}
	return 1;
}

/* client:admin_create_key(uid, name) -> handle (kind s3, the new key) |
 * nil, err. Plan mode: recorded, nil, "planned". */
static int l_s3_admin_create_key(lua_State *L)
{
	const nv_s3_config *cfg = check_client(L);
	const char *uid = luaL_checkstring(L, 2);
	const char *name = luaL_checkstring(L, 3);
	nv_secret **slot;
	nv_err err;

	if (nv_plan_mode(L))
		return nv_lua_planned_nil(L, "rgw", "key create", uid);
	/* the handle exists (closed) before the key does: nothing can raise
	 * between the creation and the hand-off of the secret to it */
	slot = nv_creds_push_slot(L); // [.., handle]
	if (nv_rgw_key_create(cfg, uid, name, slot, &err)) {
		lua_pop(L, 1);
		return nv_lua_push_error(L, &err);
	}
	nv_secret_announce(*slot); /* the redactor masks it from now on */
	return 1;
}

/* client:admin_remove_key(uid, access_key) -> true | nil, err */
static int l_s3_admin_remove_key(lua_State *L)
{
	const nv_s3_config *cfg = check_client(L);
	const char *uid = luaL_checkstring(L, 2);
	const char *access_key = luaL_checkstring(L, 3);
	nv_err err;
	int rc;

	if (nv_plan_mode(L))
		return nv_lua_planned(L, "rgw", "key remove", uid);
	rc = nv_rgw_key_remove(cfg, uid, access_key, &err);
	return nv_lua_result(L, rc, &err);
}

/* client:admin_user(uid) -> {uid, display_name, email, suspended, keys =
 * {id, ...}} | nil, err (not_found: no such user) */
static int l_s3_admin_user(lua_State *L)
{
	const nv_s3_config *cfg = check_client(L);
	const char *uid = luaL_checkstring(L, 2);
	nv_rgw_user *u = lua_newuserdatauv(L, sizeof(*u), 0); // [.., box]
	nv_err err;

	if (nv_rgw_user_info(cfg, uid, u, &err))
		return nv_lua_push_error(L, &err);
	lua_createtable(L, 0, 5);
	lua_pushstring(L, u->uid);
	lua_setfield(L, -2, "uid");
	lua_pushstring(L, u->display_name);
	lua_setfield(L, -2, "display_name");
	lua_pushstring(L, u->email);
	lua_setfield(L, -2, "email");
	lua_pushboolean(L, u->suspended);
	lua_setfield(L, -2, "suspended");
	lua_createtable(L, u->keys.count, 0);
	for (int i = 0; i < u->keys.count; i++) {
		lua_pushstring(L, u->keys.ids[i]);
		lua_rawseti(L, -2, i + 1);
	}
	lua_setfield(L, -2, "keys");
	return 1;
}

/* client:admin_create_user(uid, display_name, email) -> true | nil, err.
 * Plan mode: recorded. */
static int l_s3_admin_create_user(lua_State *L)
{
	const nv_s3_config *cfg = check_client(L);
	const char *uid = luaL_checkstring(L, 2);
	const char *name = luaL_checkstring(L, 3);
	const char *email = luaL_optstring(L, 4, NULL);
	nv_err err;
	int rc;

	if (nv_plan_mode(L))
		return nv_lua_planned(L, "rgw", "user create", uid);
	rc = nv_rgw_user_create(cfg, uid, name, email, &err);
	return nv_lua_result(L, rc, &err);
}

/* client:admin_suspend(uid, suspended) -> true | nil, err. Plan mode:
 * recorded. */
static int l_s3_admin_suspend(lua_State *L)
{
	const nv_s3_config *cfg = check_client(L);
	const char *uid = luaL_checkstring(L, 2);
	int suspended = lua_toboolean(L, 3);
	nv_err err;
	int rc;

	if (nv_plan_mode(L))
		return nv_lua_planned(
			L, "rgw", suspended ? "user suspend" : "user enable",
			uid);
	rc = nv_rgw_user_suspend(cfg, uid, suspended, &err);
	return nv_lua_result(L, rc, &err);
}

/* client:check_credential() -> true | nil, err with err.s3_code, the
 * server's code (InvalidAccessKeyId, SignatureDoesNotMatch...) */
static int l_s3_check_credential(lua_State *L)
{
	const nv_s3_config *cfg = check_client(L);
	char code[NV_RGW_CODE_MAX];
	nv_err err;

	if (nv_rgw_check_credential(cfg, code, &err)) {
		nv_lua_push_error(L, &err); // [.., nil, err]
		if (code[0]) {
			lua_pushstring(L, code);
			lua_setfield(L, -2, "s3_code");
		}
		return 2;
	}
	lua_pushboolean(L, 1);
	return 1;
}

static int l_s3_close(lua_State *L)
{
	l_s3_client *c = to_client(L);

	c->open = 0;
	nv_http_session_free(c->cfg.session);
	memset(&c->cfg, 0, sizeof(c->cfg));
	/* drop the strings and the handle: the client holds nothing now */
	lua_pushnil(L);
	lua_setiuservalue(L, 1, 1);
	return 0;
}

static int l_s3_tostring(lua_State *L)
{
	l_s3_client *c = to_client(L);

	return nv_lua_push_handle_name(L, S3_CLIENT_MT,
				       c->open ? c->cfg.endpoint : NULL);
}

int luaopen_navette_s3(lua_State *L)
{
	static const luaL_Reg methods[] = {
		{"put", l_s3_put},
		{"get", l_s3_get},
		{"read_into", l_s3_read_into},
		{"head", l_s3_head},
		{"list", l_s3_list},
		{"delete", l_s3_delete},
		{"delete_batch", l_s3_delete_batch},
		{"copy", l_s3_copy},
		{"lifecycle", l_s3_lifecycle},
		{"bucket_policy", l_s3_bucket_policy},
		{"put_bucket_policy", l_s3_put_bucket_policy},
		{"create_bucket", l_s3_create_bucket},
		{"presign", l_s3_presign},
		{"post_policy", l_s3_post_policy},
		{"explain", l_s3_explain},
		{"write_signed", l_s3_write_signed},
		{"admin_keys", l_s3_admin_keys},
		{"admin_create_key", l_s3_admin_create_key},
		{"admin_remove_key", l_s3_admin_remove_key},
		{"admin_user", l_s3_admin_user},
		{"admin_create_user", l_s3_admin_create_user},
		{"admin_suspend", l_s3_admin_suspend},
		{"check_credential", l_s3_check_credential},
		{"close", l_s3_close},
		{NULL, NULL}};
	static const luaL_Reg meta[] = {{"__gc", l_s3_close},
					{"__close", l_s3_close},
					{"__tostring", l_s3_tostring},
					{NULL, NULL}};
	static const luaL_Reg fns[] = {{"open", l_s3_open},
				       {"check_key", l_s3_check_key},
				       {"check_bucket", l_s3_check_bucket},
				       {NULL, NULL}};

	nv_lua_new_handle_type(L, S3_CLIENT_MT, meta, methods);
	nv_lua_new_box_type(L, S3_BOX_MT, l_s3_box_gc);
	nv_lua_new_box_type(L, S3_PAGE_MT, l_s3_page_gc);
	luaL_newlib(L, fns); // [s3]
	return 1;
}
