/* _navette.creds: credentials as opaque handles. A handle is a full
 * userdata that prints as <secret:NAME>, refuses concatenation, length and
 * JSON encoding, exposes only metadata to Lua, and wipes its values when
 * collected or closed (liolib-style: closing twice is harmless, use after
 * close raises). Values are read only by C modules (nv_creds_check). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>

#include "core/nv_lua.h"
#include "creds/creds_lua.h"
#include "creds/jwt.h"
#include "creds/redact.h"
#include "creds/scan.h"
#include "creds/source.h"
#include "creds/htpasswd.h"
#include "creds/store.h"
#include "ssh/ssh_cert.h"

typedef struct handle {
	nv_secret *secret; /* NULL once closed */
	/* a stand-in for a credential whose source was not run (plan mode):
	 * metadata only, refused by every primitive */
	int not_run;
} handle;

static handle *to_handle(lua_State *L, int idx)
{
	return luaL_checkudata(L, idx, NV_SECRET_MT);
}

/* The live handle at idx, loaded or a stand-in. */
static handle *check_open(lua_State *L, int idx)
{
	handle *h = to_handle(L, idx);
	nv_lua_check_open(L, h->secret != NULL, "credential");
	return h;
}

const nv_secret *nv_creds_check(lua_State *L, int idx)
{
	handle *h = check_open(L, idx);
	if (h->not_run)
		luaL_error(L,
			   "credential %s was not loaded: plan, a run's "
			   "checking pass and read-only commands load no "
			   "credential and run no credential program (the "
			   "pass that submits loads it)",
			   h->secret->name);
	return h->secret;
}

const nv_secret *nv_creds_check_planned(lua_State *L, int idx)
{
	return check_open(L, idx)->secret;
}

/* Takes ownership of s: it is in the userdata before anything can raise
 * again. */
static void push_handle(lua_State *L, nv_secret *s, int not_run)
{
	handle *h = lua_newuserdatauv(L, sizeof(*h), 0);
	h->secret = NULL;
	h->not_run = not_run;
	luaL_setmetatable(L, NV_SECRET_MT);
	h->secret = s;
}

nv_secret **nv_creds_push_slot(lua_State *L)
{
	handle *h = lua_newuserdatauv(L, sizeof(*h), 0); // [.., handle]
	h->secret = NULL;
	h->not_run = 0;
	luaL_setmetatable(L, NV_SECRET_MT);
	return &h->secret;
}

static int l_secret_close(lua_State *L)
{
	handle *h = to_handle(L, 1);
	nv_secret_free(h->secret);
	h->secret = NULL;
	return 0;
}

static int l_secret_tostring(lua_State *L)
{
	handle *h = to_handle(L, 1);
	if (h->secret && h->not_run)
		lua_pushfstring(L, "<secret:%s, not run>", h->secret->name);
	else if (h->secret)
		lua_pushfstring(L, "<secret:%s>", h->secret->name);
	else
		lua_pushliteral(L, "<secret:closed>");
	return 1;
}

static int l_secret_refuse(lua_State *L)
{
	return luaL_error(L, "a credential cannot be turned into text: pass "
			     "the handle itself to the primitive that needs "
			     "it");
}

static void push_time(lua_State *L, double t, const char *key)
{
	if (t > 0) {
		lua_pushnumber(L, t);
		lua_setfield(L, -2, key);
	}
}

/* [.., info] -> the same with info.certificate = {key_id, serial (a
 * string: 64 bits), principals = {...}, valid_after, valid_before (nil:
 * forever), type, key_type, fingerprint, ca_fingerprint} of an ssh-cert's
 * certificate (public: sshd logs it; the line itself stays in C). */
static void push_certificate(lua_State *L, const nv_secret *s)
{
	const nv_secret_field *f = nv_secret_get(s, "certificate");
	nv_ssh_cert c;
	nv_err err;
	char serial[24];

	if (s->kind != NV_SECRET_SSH_CERT || !f ||
	    nv_ssh_cert_parse((const char *)f->value, f->len, &c, NULL, 0,
			      &err) != 0)
		return;
	lua_createtable(L, 0, 9); // [.., info, cert]
	lua_pushstring(L, c.key_id);
	lua_setfield(L, -2, "key_id");
	snprintf(serial, sizeof(serial), "%llu", (unsigned long long)c.serial);
	lua_pushstring(L, serial);
	lua_setfield(L, -2, "serial");
	lua_createtable(L, c.nprincipals, 0);
	for (int i = 0; i < c.nprincipals; i++) {
		lua_pushstring(L, c.principals[i]);
		lua_rawseti(L, -2, i + 1);
	}
	lua_setfield(L, -2, "principals");
	lua_pushnumber(L, (lua_Number)c.valid_after);
	lua_setfield(L, -2, "valid_after");
	if (c.valid_before != NV_SSH_CERT_FOREVER) {
		lua_pushnumber(L, (lua_Number)c.valid_before);
		lua_setfield(L, -2, "valid_before");
	}
	lua_pushstring(L, c.type);
	lua_setfield(L, -2, "type");
	lua_pushstring(L, c.key_type);
	lua_setfield(L, -2, "key_type");
	lua_pushstring(L, c.fingerprint);
	lua_setfield(L, -2, "fingerprint");
	lua_pushstring(L, c.ca_fingerprint);
	lua_setfield(L, -2, "ca_fingerprint");
	lua_setfield(L, -2, "certificate"); // [.., info]
}

/* handle:info() -> {name, kind, source, origin, loaded_at, created_at,
 * expires_at, fields = {...}, not_run = true for a stand-in,
 * certificate = {...} for an ssh-cert} (never a value) */
static int l_secret_info(lua_State *L)
{
	const handle *h = check_open(L, 1);
	const nv_secret *s = h->secret;

	lua_createtable(L, 0, 9);
	if (h->not_run) { /* a plan's stand-in: no value was loaded */
		lua_pushboolean(L, 1);
		lua_setfield(L, -2, "not_run");
		lua_pushboolean(L, 1);
		lua_setfield(L, -2, "planned");
	}
	lua_pushstring(L, s->name);
	lua_setfield(L, -2, "name");
	lua_pushstring(L, nv_secret_kind_name(s->kind));
	lua_setfield(L, -2, "kind");
	lua_pushstring(L, s->source);
	lua_setfield(L, -2, "source");
	lua_pushstring(L, s->origin);
	lua_setfield(L, -2, "origin");
	push_time(L, s->loaded_at, "loaded_at");
	push_time(L, s->created_at, "created_at");
	push_time(L, s->expires_at, "expires_at");
	lua_newtable(L);
	for (int i = 0; i < s->nfields; i++) {
		if (!s->fields[i].value)
			continue;
		lua_pushstring(L, s->fields[i].name);
		lua_rawseti(L, -2, (lua_Integer)lua_rawlen(L, -2) + 1);
	}
	lua_setfield(L, -2, "fields");
	if (!h->not_run)
		push_certificate(L, s);
	return 1;
}

/* handle:access_key_id() -> the id of an s3 key pair, or nil (another
 * kind, a stand-in). Not a secret: every signed request carries it, and a
 * key rotation must tell its keys apart. Still a field of the secret, so
 * the redactor masks it in everything printed; info() leaves it out. */
static int l_secret_access_key_id(lua_State *L)
{
	const handle *h = check_open(L, 1);
	const nv_secret_field *id =
		h->secret->kind == NV_SECRET_S3 && !h->not_run
			? nv_secret_get(h->secret, "access_key_id")
			: NULL;

	if (!id)
		lua_pushnil(L);
	else
		lua_pushlstring(L, (const char *)id->value, id->len);
	return 1;
}

/* handle:equals(other) in constant time over every field. */
static int l_secret_equals(lua_State *L)
{
	const nv_secret *a = nv_creds_check(L, 1);
	const nv_secret *b = nv_creds_check(L, 2);
	int same = a->kind == b->kind && a->nfields == b->nfields;

	for (int i = 0; i < a->nfields && i < b->nfields; i++)
		same &= nv_secret_equal(a->fields[i].value, a->fields[i].len,
					b->fields[i].value, b->fields[i].len);
	lua_pushboolean(L, same);
	return 1;
}

static int l_secret_name(lua_State *L)
{
	lua_pushstring(L, check_open(L, 1)->secret->name);
	return 1;
}

/* String fields of a declaration table, copied into stable Lua strings
 * that stay on the stack while the C struct points at them. */
static const char *opt_field(lua_State *L, int t, const char *key)
{
	lua_getfield(L, t, key);
	const char *s = lua_isnil(L, -1) ? NULL : luaL_checkstring(L, -1);
	/* left on the stack on purpose: anchors the string */
	return s;
}

/* creds.load{name=, kind=, source=, env={...}, path=, service=, account=,
 * command={...}} -> handle | nil, err */
static int l_creds_load(lua_State *L)
{
	nv_creds_decl d;
	nv_secret *s = NULL;
	nv_err err;
	int required;

	luaL_checktype(L, 1, LUA_TTABLE);
	luaL_checkstack(L, NV_CREDS_ARGV_MAX + 16, "credential declaration");
	memset(&d, 0, sizeof(d));
	d.name = opt_field(L, 1, "name");
	const char *kind = opt_field(L, 1, "kind");
	d.source = opt_field(L, 1, "source");
	d.path = opt_field(L, 1, "path");
	d.certificate = opt_field(L, 1, "certificate");
	d.service = opt_field(L, 1, "service");
	d.account = opt_field(L, 1, "account");
	luaL_argcheck(L, d.name && kind && d.source, 1,
		      "name, kind and source are required");
	d.kind = nv_secret_kind_parse(kind);
	const char *const *fields = nv_secret_kind_fields(d.kind, &required);
	luaL_argcheck(L, fields != NULL, 1, "unknown kind");
	lua_getfield(L, 1, "env"); // [.., env]
	if (lua_istable(L, -1)) {
		int env = lua_gettop(L);
		for (int i = 0; fields[i] && i < NV_SECRET_FIELDS_MAX; i++)
			d.env[i] = opt_field(L, env, fields[i]);
	}
	lua_getfield(L, 1, "command");
	if (lua_istable(L, -1)) {
		int cmd = lua_gettop(L);
		lua_Integer n = (lua_Integer)lua_rawlen(L, cmd);
		luaL_argcheck(L, n <= NV_CREDS_ARGV_MAX, 1, "command too long");
		for (lua_Integer i = 1; i <= n; i++) {
			lua_rawgeti(L, cmd, i);
			d.argv[i - 1] = luaL_checkstring(L, -1);
		}
	}
	/* The one place that decides whether a declaration of the project
	 * file, which comes with a clone, may reach the user's secrets: the
	 * runtime's flag (navette trust), never a caller's argument. Only
	 * the user's own configuration ("user") and navette's own
	 * declarations ("navette": the stand-ins of a hand-over, the AWS_*
	 * variables of `navette storage`) say otherwise. */
	const char *origin = opt_field(L, 1, "origin");
	if (!nv_project_trusted(L) &&
	    !(origin && (strcmp(origin, "user") == 0 ||
			 strcmp(origin, "navette") == 0))) {
		nv_err_set(&err, NV_EREFUSED,
			   "read what the project binds with `navette trust "
			   "--show`, then trust it with `navette trust`",
			   "credential %s: the project file declares it, and "
			   "this project is not trusted on this machine",
			   d.name);
		return nv_lua_push_error_as(L, "untrusted", &err);
	}
	/* The one place that decides whether a program may run for a
	 * credential: the runtime's flag, never a caller's argument. */
	d.no_exec = nv_exec_forbidden(L);
	luaL_checkstack(L, 2, NULL);
	if (nv_creds_load(&d, &s, &err) != 0)
		return nv_lua_push_error(L, &err);
	push_handle(L, s, 0);
	return 1;
}

/* creds.not_run{name=, kind=, source=, origin=} -> a stand-in handle for a
 * credential that plan mode did not load (nv_creds_load said not_run): a
 * recipe can hold it and pass it on, and a primitive that needs its value
 * raises. Only in plan mode, where nothing uses a value. */
static int l_creds_not_run(lua_State *L)
{
	nv_secret *s;
	nv_err err;

	luaL_checktype(L, 1, LUA_TTABLE);
	luaL_checkstack(L, 8, NULL);
	const char *name = opt_field(L, 1, "name");
	const char *kind = opt_field(L, 1, "kind");
	const char *source = opt_field(L, 1, "source");
	const char *origin = opt_field(L, 1, "origin");
	luaL_argcheck(L, name && kind && source, 1,
		      "name, kind and source are required");
	luaL_argcheck(L, nv_secret_kind_parse(kind) != 0, 1, "unknown kind");
	if (!nv_plan_mode(L))
		return luaL_error(L, "creds.not_run: only in plan mode");
	s = nv_secret_new(name, nv_secret_kind_parse(kind), source, &err);
	if (!s)
		return nv_lua_push_error(L, &err);
	snprintf(s->origin, sizeof(s->origin), "%s", origin ? origin : "");
	lua_newtable(L); /* room for the handle before ownership moves */
	lua_pop(L, 1);
	push_handle(L, s, 1);
	return 1;
}

/* creds.mint_jwt(key_handle, name, claims_json, lifespan_s) -> handle */
static int l_creds_mint_jwt(lua_State *L)
{
	/* a stand-in key is fine in plan mode, where nothing is minted */
	const nv_secret *key = nv_plan_mode(L) ? check_open(L, 1)->secret
					       : nv_creds_check(L, 1);
	const char *name = luaL_checkstring(L, 2);
	const char *claims = luaL_checkstring(L, 3);
	/* (ten years at most: a bound, and never inf or NaN in "exp") */
	double lifespan =
		nv_lua_checkrangef(L, 4, 0, 3.2e8, "creds.mint_jwt: lifespan");
	nv_secret *token = NULL;
	nv_err err;

	if (nv_plan_mode(L))
		return nv_lua_planned_nil(L, "creds", "mint", name);
	luaL_checkstack(L, 2, NULL);
	lua_newtable(L); /* room for the handle before ownership moves */
	lua_pop(L, 1);
	if (nv_jwt_mint_hs256(key, name, claims, lifespan, &token, &err) != 0)
		return nv_lua_push_error(L, &err);
	push_handle(L, token, 0);
	return 1;
}

/* creds.redact(text) -> text with every known secret and shape masked */
static int l_creds_redact(lua_State *L)
{
	size_t len;
	const char *in = luaL_checklstring(L, 1, &len);
	nv_buf out;

	nv_buf_init(&out, len * 4 + 4096);
	if (nv_redact_buffer(nv_redact_global(), in, len, &out) != 0) {
		nv_buf_free(&out);
		return luaL_error(L, "redactor: out of memory");
	}
	/* copy into Lua through a buffer that Lua owns first */
	luaL_Buffer b;
	size_t n = out.len;
	char *dst = luaL_buffinitsize(L, &b, n);
	memcpy(dst, out.data ? out.data : "", n);
	nv_buf_free(&out); /* freed before anything below can raise */
	luaL_pushresultsize(&b, n);
	return 1;
}

/* A redacting stream for text that arrives in pieces (logs --follow):
 * stream:write(chunk) -> text ready to print; stream:flush() -> the rest. */
#define REDACT_STREAM_MT "navette.redact.stream"

typedef struct stream_box {
	nv_redact_stream *stream;
	nv_buf pending; /* what emit() produced during one call */
} stream_box;

static void stream_emit(const char *buf, size_t len, void *payload)
{
	stream_box *box = payload;
	nv_buf_append(&box->pending, buf, len);
}

static int push_pending(lua_State *L, stream_box *box)
{
	luaL_Buffer b;
	size_t n = box->pending.len;
	char *dst = luaL_buffinitsize(L, &b, n);
	memcpy(dst, box->pending.data ? box->pending.data : "", n);
	box->pending.len = 0;
	luaL_pushresultsize(&b, n);
	return 1;
}

static stream_box *check_stream(lua_State *L)
{
	stream_box *box = luaL_checkudata(L, 1, REDACT_STREAM_MT);
	nv_lua_check_open(L, box->stream != NULL, "redacting stream");
	return box;
}

static int l_stream_write(lua_State *L)
{
	stream_box *box = check_stream(L);
	size_t len;
	const char *s = luaL_checklstring(L, 2, &len);
	nv_redact_stream_write(box->stream, s, len);
	return push_pending(L, box);
}

static int l_stream_flush(lua_State *L)
{
	stream_box *box = check_stream(L);
	nv_redact_stream_flush(box->stream);
	return push_pending(L, box);
}

static int l_stream_gc(lua_State *L)
{
	stream_box *box = luaL_checkudata(L, 1, REDACT_STREAM_MT);
	if (box->stream) {
		nv_redact_stream_free(box->stream);
		box->stream = NULL;
	}
	nv_buf_free(&box->pending);
	return 0;
}

static int l_creds_redact_stream(lua_State *L)
{
	stream_box *box = lua_newuserdatauv(L, sizeof(*box), 0);
	memset(box, 0, sizeof(*box));
	nv_buf_init(&box->pending, (size_t)64 * 1024 * 1024);
	if (luaL_newmetatable(L, REDACT_STREAM_MT)) {
		static const luaL_Reg m[] = {{"write", l_stream_write},
					     {"flush", l_stream_flush},
					     {"close", l_stream_gc},
					     {NULL, NULL}};
		luaL_newlib(L, m);
		lua_setfield(L, -2, "__index");
		lua_pushcfunction(L, l_stream_gc);
		lua_setfield(L, -2, "__gc");
		lua_pushcfunction(L, l_stream_gc);
		lua_setfield(L, -2, "__close");
	}
	lua_setmetatable(L, -2);
	box->stream =
		nv_redact_stream_new(nv_redact_global(), stream_emit, box);
	if (!box->stream)
		return luaL_error(L, "redactor: out of memory");
	return 1;
}

/* creds.fingerprints() -> text: salted fingerprints of every secret this
 * process loaded, for a process that must mask them without the values
 * (a job's log filter). */
static int l_creds_fingerprints(lua_State *L)
{
	nv_buf out;
	nv_err err;

	nv_buf_init(&out, (size_t)16 * 1024 * 1024);
	if (nv_redact_export_fingerprints(nv_redact_global(), &out, &err)) {
		nv_buf_free(&out);
		return nv_lua_push_error(L, &err);
	}
	luaL_Buffer b;
	size_t n = out.len;
	char *dst = luaL_buffinitsize(L, &b, n);
	memcpy(dst, out.data ? out.data : "", n);
	nv_buf_free(&out);
	luaL_pushresultsize(&b, n);
	return 1;
}

/* creds.add_fingerprints(text) -> true | nil, err */
static int l_creds_add_fingerprints(lua_State *L)
{
	size_t len;
	const char *text = luaL_checklstring(L, 1, &len);
	nv_err err;
	int rc;

	rc = nv_redact_add_fingerprints(nv_redact_global(), text, len, &err);
	return nv_lua_result(L, rc, &err);
}

static int l_creds_env_allowed(lua_State *L)
{
	lua_pushboolean(L, nv_redact_env_allowed(luaL_checkstring(L, 1)));
	return 1;
}

/* Findings are copied out of the scan (which holds libgit2 objects) and
 * pushed to Lua only once it is over, so nothing can raise mid-scan. */
typedef struct finding_copy {
	char path[512];
	char rule[48];
	char reason[256];
	char preview[64];
	size_t line;
} finding_copy;

typedef struct findings {
	finding_copy items[NV_SCAN_MAX_FINDINGS];
	size_t count;
} findings;

static int collect_finding(const nv_scan_finding *f, void *payload)
{
	findings *all = payload;
	if (all->count == NV_SCAN_MAX_FINDINGS)
		return 1;
	finding_copy *c = &all->items[all->count++];
	snprintf(c->path, sizeof(c->path), "%s", f->path);
	snprintf(c->rule, sizeof(c->rule), "%s", f->rule);
	snprintf(c->reason, sizeof(c->reason), "%s", f->reason);
	snprintf(c->preview, sizeof(c->preview), "%s", f->preview);
	c->line = f->line;
	return 0;
}

static int push_report(lua_State *L, findings *all, const nv_scan_stats *stats);

/* creds.scan_commit(repo_path, oid [, {allowlist = false|text}]) ->
 * {findings = {...}, allowed = n, files = n, truncated = bool} | nil, err.
 * allowlist = false ignores the commit's .navette-secrets-allow; a text
 * is the allow-list used in its place. */
static int l_creds_scan_commit(lua_State *L)
{
	const char *repo = luaL_checkstring(L, 1);
	const char *oid = luaL_checkstring(L, 2);
	unsigned flags = 0;
	const char *allow = NULL;
	size_t allow_len = 0;
	nv_scan_stats stats;
	nv_err err;

	if (!lua_isnoneornil(L, 3)) {
		luaL_checktype(L, 3, LUA_TTABLE);
		lua_getfield(L, 3, "allowlist");
		if (lua_type(L, -1) == LUA_TBOOLEAN && !lua_toboolean(L, -1))
			flags |= NV_SCAN_NO_ALLOWLIST;
		if (lua_type(L, -1) == LUA_TSTRING) {
			/* (it stays on the stack while the scan runs) */
			flags |= NV_SCAN_NO_ALLOWLIST;
			allow = lua_tolstring(L, -1, &allow_len);
		} else {
			lua_pop(L, 1);
		}
	}
	findings *all = lua_newuserdatauv(L, sizeof(*all), 0);
	memset(all, 0, sizeof(*all));
	memset(&stats, 0, sizeof(stats));
	int rc = nv_scan_commit_ex(repo, oid, flags, allow, allow_len,
				   collect_finding, all, &stats, &err);
	if (rc < 0)
		return nv_lua_push_error(L, &err);
	return push_report(L, all, &stats);
}

/* A file scanned in chunks cut after a newline: the findings' lines are
 * counted from the start of the file. */
typedef struct chunk_scan {
	findings *all;
	size_t lines_before;
} chunk_scan;

static int collect_chunk_finding(const nv_scan_finding *f, void *payload)
{
	chunk_scan *cs = payload;
	nv_scan_finding shifted = *f;

	if (shifted.line > 0)
		shifted.line += cs->lines_before;
	return collect_finding(&shifted, cs->all);
}

/* The length of the next chunk to scan out of the n bytes at p: all of
 * them when they end the text or fit in a chunk, else cut after the last
 * newline (a line longer than a chunk is cut where it is). */
static size_t chunk_length(const char *p, size_t n, int last)
{
	if (last || n < NV_SCAN_MAX_FILE_SIZE)
		return n;
	for (size_t i = n; i > 0; i--)
		if (p[i - 1] == '\n')
			return i;
	return n;
}

/* Scans one chunk and counts its lines; nonzero when the findings are
 * full and scanning stops. */
static int scan_chunk(nv_scan_allowlist *al, const char *shown, const char *p,
		      size_t n, chunk_scan *cs, nv_scan_stats *stats)
{
	if (nv_scan_buffer(al, shown, p, n, collect_chunk_finding, cs, stats) !=
	    0)
		return 1;
	for (size_t i = 0; i < n; i++)
		cs->lines_before += p[i] == '\n';
	return 0;
}

/* creds.scan_file(path, shown [, allow_text]) -> report | nil, err: one
 * local file that is about to leave the laptop (navette.storage.put),
 * under the name rules of `shown` and the repository's allow-list. A file
 * of any size is read in bounded chunks. */
static int l_creds_scan_file(lua_State *L)
{
	const char *path = luaL_checkstring(L, 1);
	const char *shown = luaL_checkstring(L, 2);
	size_t allow_len = 0;
	const char *allow = luaL_optlstring(L, 3, NULL, &allow_len);
	const size_t cap = NV_SCAN_MAX_FILE_SIZE;
	findings *all = lua_newuserdatauv(L, sizeof(*all), 0);
	char *buf = lua_newuserdatauv(L, cap, 0);
	nv_scan_allowlist *al = NULL;
	nv_scan_stats stats;
	chunk_scan cs = {all, 0};
	size_t used = 0;
	nv_err err;
	FILE *f;

	memset(all, 0, sizeof(*all));
	memset(&stats, 0, sizeof(stats));
	nv_err_clear(&err);
	if (allow &&
	    nv_scan_allowlist_load(&al, allow, allow_len, collect_finding, all,
				   &stats, &err) < 0)
		return nv_lua_push_error(L, &err);
	f = fopen(path, "rb");
	if (!f) {
		nv_scan_allowlist_free(al);
		nv_err_set_errno(&err, NV_EIO, errno, NULL, "cannot read %s",
				 shown);
		return nv_lua_push_error(L, &err);
	}
	for (;;) {
		size_t n = fread(buf + used, 1, cap - used, f);
		int eof = n == 0;
		used += n;
		if (used == 0)
			break;
		if (!eof && used < cap)
			continue; /* a short read: fill the chunk first */
		size_t take = chunk_length(buf, used, eof);
		if (scan_chunk(al, shown, buf, take, &cs, &stats))
			break;
		memmove(buf, buf + take, used - take);
		used -= take;
		if (eof && used == 0)
			break;
	}
	int failed = ferror(f);
	fclose(f);
	nv_scan_allowlist_free(al);
	if (failed) {
		nv_err_set(&err, NV_EIO, NULL, "cannot read %s", shown);
		return nv_lua_push_error(L, &err);
	}
	return push_report(L, all, &stats);
}

/* creds.scan_string(text, shown) -> report: text a recipe made that is
 * about to leave the laptop (navette.storage.put_string), under the name
 * rules of `shown` (its key). No allow-list applies: a recipe's own text
 * is not a file a reviewer exempted. */
static int l_creds_scan_string(lua_State *L)
{
	size_t len;
	const char *text = luaL_checklstring(L, 1, &len);
	const char *shown = luaL_checkstring(L, 2);
	findings *all = lua_newuserdatauv(L, sizeof(*all), 0);
	nv_scan_stats stats;
	chunk_scan cs = {all, 0};
	size_t off = 0;

	memset(all, 0, sizeof(*all));
	memset(&stats, 0, sizeof(stats));
	do {
		size_t left = len - off;
		size_t n = left < NV_SCAN_MAX_FILE_SIZE ? left
							: NV_SCAN_MAX_FILE_SIZE;
		size_t take = chunk_length(text + off, n, off + n == len);
		if (scan_chunk(NULL, shown, text + off, take, &cs, &stats))
			break;
		off += take;
	} while (off < len);
	return push_report(L, all, &stats);
}

static int push_report(lua_State *L, findings *all, const nv_scan_stats *stats)
{
	lua_createtable(L, 0, 4);
	lua_createtable(L, (int)all->count, 0);
	for (size_t i = 0; i < all->count; i++) {
		finding_copy *c = &all->items[i];
		lua_createtable(L, 0, 5);
		lua_pushstring(L, c->path);
		lua_setfield(L, -2, "path");
		lua_pushinteger(L, (lua_Integer)c->line);
		lua_setfield(L, -2, "line");
		lua_pushstring(L, c->rule);
		lua_setfield(L, -2, "rule");
		lua_pushstring(L, c->reason);
		lua_setfield(L, -2, "reason");
		lua_pushstring(L, c->preview);
		lua_setfield(L, -2, "preview");
		lua_rawseti(L, -2, (lua_Integer)i + 1);
	}
	lua_setfield(L, -2, "findings");
	lua_pushinteger(L, (lua_Integer)stats->allowed);
	lua_setfield(L, -2, "allowed");
	lua_pushinteger(L, (lua_Integer)stats->files);
	lua_setfield(L, -2, "files");
	lua_pushboolean(L,
			stats->truncated || all->count == NV_SCAN_MAX_FINDINGS);
	lua_setfield(L, -2, "truncated");
	return 1;
}

/* creds.store_file(handle, path) -> true | nil, err: the handle's value
 * written over path as a file source reads it (store.h). Plan mode:
 * recorded, nothing written. */
static int l_creds_store_file(lua_State *L)
{
	const nv_secret *s = nv_plan_mode(L) ? check_open(L, 1)->secret
					     : nv_creds_check(L, 1);
	const char *path = luaL_checkstring(L, 2);
	nv_err err;
	int rc;

	if (nv_plan_mode(L))
		return nv_lua_planned(L, "creds", "store", path);
	rc = nv_creds_store_file(s, path, &err);
	return nv_lua_result(L, rc, &err);
}

/* creds.store_keychain(handle, service, account) -> true | nil, err:
 * security add-generic-password -U (store.h). Runs a program: not where
 * none may run (plan mode records it). */
static int l_creds_store_keychain(lua_State *L)
{
	const nv_secret *s = nv_plan_mode(L) ? check_open(L, 1)->secret
					     : nv_creds_check(L, 1);
	const char *service = luaL_checkstring(L, 2);
	const char *account = luaL_checkstring(L, 3);
	nv_err err;
	int rc;

	if (nv_plan_mode(L) || nv_exec_forbidden(L))
		return nv_lua_planned(
			L, "creds", "store",
			lua_pushfstring(L, "keychain %s/%s", service, account));
	rc = nv_creds_store_keychain(s, service, account, &err);
	return nv_lua_result(L, rc, &err);
}

/* creds.generate(kind, name, user, len) -> handle | nil, err: a new
 * secret of kind hs256 or basic (htpasswd.h); the redactor learns it at
 * once. */
static int l_creds_generate(lua_State *L)
{
	nv_secret_kind kind = nv_secret_kind_parse(luaL_checkstring(L, 1));
	const char *name = luaL_checkstring(L, 2);
	const char *user = luaL_optstring(L, 3, NULL);
	lua_Integer len = luaL_optinteger(L, 4, 0);
	nv_secret *s;
	nv_err err;

	luaL_argcheck(L, len >= 0 && len <= NV_GENERATE_MAX, 4,
		      "length out of range");
	luaL_checkstack(L, 2, NULL);
	s = nv_secret_generate(name, kind, user, (size_t)len, &err);
	if (!s)
		return nv_lua_push_error(L, &err);
	nv_secret_announce(s);
	push_handle(L, s, 0);
	return 1;
}

/* creds.htpasswd(handle, cost) -> "user:$2y$..." | nil, err */
static int l_creds_htpasswd(lua_State *L)
{
	const nv_secret *s = nv_creds_check(L, 1);
	lua_Integer cost = luaL_optinteger(L, 2, 0);
	char line[NV_HTPASSWD_LINE_MAX];
	nv_err err;
	int rc;

	luaL_argcheck(L, cost >= 0 && cost <= NV_HTPASSWD_COST_MAX, 2,
		      "bcrypt cost out of range");
	rc = nv_htpasswd_line(s, (int)cost, line, sizeof(line), &err);
	return nv_lua_string_result(L, rc, line, &err);
}

static int l_creds_cache_clear(lua_State *L)
{
	(void)L;
	nv_creds_cache_clear();
	return 0;
}

/* creds.redact_engine([load]) -> "vectorscan 5.4.9" | "aho-corasick
 * (built in)": the redactor's matcher (creds/redact.h), for `navette
 * version`; load: open Vectorscan to ask it. */
static int l_creds_redact_engine(lua_State *L)
{
	lua_pushstring(L, nv_redact_engine(lua_toboolean(L, 1)));
	return 1;
}

int luaopen_navette_creds(lua_State *L)
{
	static const luaL_Reg methods[] = {
		{"info", l_secret_info},
		{"equals", l_secret_equals},
		{"name", l_secret_name},
		{"access_key_id", l_secret_access_key_id},
		{"close", l_secret_close},
		{NULL, NULL}};
	static const luaL_Reg meta[] = {{"__gc", l_secret_close},
					{"__close", l_secret_close},
					{"__tostring", l_secret_tostring},
					{"__concat", l_secret_refuse},
					{"__len", l_secret_refuse},
					{"__call", l_secret_refuse},
					{NULL, NULL}};
	static const luaL_Reg fns[] = {
		{"load", l_creds_load},
		{"not_run", l_creds_not_run},
		{"mint_jwt", l_creds_mint_jwt},
		{"cache_clear", l_creds_cache_clear},
		{"store_file", l_creds_store_file},
		{"store_keychain", l_creds_store_keychain},
		{"generate", l_creds_generate},
		{"htpasswd", l_creds_htpasswd},
		{"redact", l_creds_redact},
		{"redact_stream", l_creds_redact_stream},
		{"env_allowed", l_creds_env_allowed},
		{"scan_commit", l_creds_scan_commit},
		{"scan_file", l_creds_scan_file},
		{"scan_string", l_creds_scan_string},
		{"fingerprints", l_creds_fingerprints},
		{"add_fingerprints", l_creds_add_fingerprints},
		{"redact_engine", l_creds_redact_engine},
		{NULL, NULL}};

	luaL_newmetatable(L, NV_SECRET_MT); // [mt]
	luaL_setfuncs(L, meta, 0);
	luaL_newlib(L, methods);
	lua_setfield(L, -2, "__index");
	lua_pushboolean(L, 0);
	lua_setfield(L, -2, "__metatable"); /* getmetatable hides it */
	lua_pop(L, 1);
	luaL_newlib(L, fns);
	/* the largest file the scan reads (a library serves no larger module)
	 */
	lua_pushinteger(L, (lua_Integer)NV_SCAN_MAX_FILE_SIZE);
	lua_setfield(L, -2, "scan_max_file_size");
	return 1;
}
