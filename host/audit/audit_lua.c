/* _navette.audit: the Lua binding of the audit log (audit.c) in
 * $NAVETTE_HOME/audit. Misuse (a missing action, a non-string field, a
 * secret handle passed as the credential) raises; expected failures (I/O,
 * a log that refuses appends until verified) return nil, {code, message,
 * hint}. In plan mode append and mirror record what they would do and
 * write nothing. No malloc'd memory is held across a Lua call that can
 * raise: lines() collects into a userdata freed by the GC. */
#include <stdint.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>

#include "audit/audit.h"
#include "core/buf.h"
#include "core/nv_err.h"
#include "core/nv_lua.h"

#define AUDIT_LINES_MT  "navette.audit.lines"
#define LINES_TOTAL_MAX ((size_t)64 * 1024 * 1024)

/* Holds the lines read by nv_audit_each() while Lua copies them. */
typedef struct l_lines {
	nv_buf buf;
} l_lines;

/* Field name of entry, or NULL when nil; leaves the value on the stack
 * (so the string stays alive). Only strings and numbers are accepted: a
 * credential must be a name, never a secret handle. */
/* The field name of the entry table at t, left on the stack (which keeps
 * the string alive); NULL when absent. */
static const char *opt_field(lua_State *L, int t, const char *name)
{
	int type = lua_getfield(L, t, name); /* [..., value] */

	if (type == LUA_TNIL)
		return NULL;
	if (type != LUA_TSTRING && type != LUA_TNUMBER)
		luaL_error(L, "audit field '%s' must be a string, not %s", name,
			   luaL_typename(L, -1));
	return lua_tostring(L, -1);
}

/* Reads the entry table at t into entry (its strings stay on the stack:
 * 8 slots), checked as append's argument arg. */
static void read_entry(lua_State *L, int t, int arg, nv_audit_entry *entry)
{
	luaL_checkstack(L, 12, "audit entries");
	luaL_argcheck(L, lua_type(L, t) == LUA_TTABLE, arg,
		      "an audit entry is a table");
	memset(entry, 0, sizeof(*entry));
	entry->action = opt_field(L, t, "action");
	entry->target = opt_field(L, t, "target");
	entry->profile = opt_field(L, t, "profile");
	entry->credential = opt_field(L, t, "credential");
	entry->job = opt_field(L, t, "job");
	entry->commit = opt_field(L, t, "commit");
	entry->result = opt_field(L, t, "result");
	entry->detail = opt_field(L, t, "detail"); /* [..., values...] */
	entry->identity = opt_field(L, t, "identity");
	luaL_argcheck(L, entry->action && *entry->action, arg,
		      "audit entry needs an action");
	if (!entry->result)
		entry->result = "ok";
	luaL_argcheck(L,
		      !strcmp(entry->result, "ok") ||
			      !strcmp(entry->result, "refused") ||
			      !strcmp(entry->result, "failed"),
		      arg, "audit result must be ok, refused or failed");
}

static int l_audit_append(lua_State *L)
{
	nv_audit_entry entry;
	uint64_t seq = 0;
	nv_err err;

	luaL_checktype(L, 1, LUA_TTABLE);
	lua_settop(L, 1);
	read_entry(L, 1, 1, &entry); /* [entry, values...] */
	if (nv_plan_mode(L)) {
		nv_plan_record(L, "audit", entry.action,
			       entry.target ? entry.target : "");
		lua_pushinteger(L, 0);
		return 1;
	}
	if (nv_audit_append(nv_lua_home(L), &entry, &seq, &err))
		return nv_lua_push_error(L, &err);
	lua_pushinteger(L, (lua_Integer)seq);
	return 1;
}

/* append_many({entry, ...}) -> first seq | nil, err: the entries as
 * consecutive lines, one lock and one sync for all. */
static int l_audit_append_many(lua_State *L)
{
	lua_Integer n;
	nv_audit_entry *entries;
	uint64_t seq = 0;
	nv_err err;

	luaL_checktype(L, 1, LUA_TTABLE);
	lua_settop(L, 1);
	n = (lua_Integer)lua_rawlen(L, 1);
	luaL_argcheck(L, n >= 1 && n <= 100000, 1, "1 to 100,000 entries");
	entries = lua_newuserdatauv(L, (size_t)n * sizeof(*entries), 0);
	for (lua_Integer i = 1; i <= n; i++) {
		luaL_checkstack(L, 10, "audit entries");
		lua_rawgeti(L, 1, i); /* [list, box, ..., entry] */
		read_entry(L, lua_gettop(L), 1, &entries[i - 1]);
		if (nv_plan_mode(L))
			nv_plan_record(L, "audit", entries[i - 1].action,
				       entries[i - 1].target
					       ? entries[i - 1].target
					       : "");
	}
	if (nv_plan_mode(L)) {
		lua_pushinteger(L, 0);
		return 1;
	}
	if (nv_audit_append_many(nv_lua_home(L), entries, (size_t)n, &seq,
				 &err))
		return nv_lua_push_error(L, &err);
	lua_pushinteger(L, (lua_Integer)seq);
	return 1;
}

static int l_audit_verify(lua_State *L)
{
	nv_audit_report report;
	nv_err err;

	if (nv_audit_verify(nv_lua_home(L), &report, &err))
		return nv_lua_push_error(L, &err);
	lua_createtable(L, 0, 6); /* [report] */
	lua_pushboolean(L, report.ok);
	lua_setfield(L, -2, "ok");
	lua_pushinteger(L, (lua_Integer)report.lines);
	lua_setfield(L, -2, "lines");
	lua_pushinteger(L, (lua_Integer)report.last_seq);
	lua_setfield(L, -2, "last_seq");
	if (!report.ok) {
		lua_pushinteger(L, (lua_Integer)report.line);
		lua_setfield(L, -2, "line");
		lua_pushstring(L, report.kind);
		lua_setfield(L, -2, "kind");
		lua_pushstring(L, report.message);
		lua_setfield(L, -2, "message");
		if (report.hint[0]) {
			lua_pushstring(L, report.hint);
			lua_setfield(L, -2, "hint");
		}
	}
	return 1;
}

static int l_audit_lines_gc(lua_State *L)
{
	l_lines *box = luaL_checkudata(L, 1, AUDIT_LINES_MT);

	nv_buf_free(&box->buf);
	return 0;
}

/* Collects line + '\n' (a line never holds a newline). */
static int collect_line(const char *line, size_t len, uint64_t line_no,
			void *payload)
{
	l_lines *box = payload;

	(void)line_no;
	if (nv_buf_append(&box->buf, line, len) ||
	    nv_buf_append(&box->buf, "\n", 1))
		return NV_ENOMEM;
	return 0;
}

static int l_audit_lines(lua_State *L)
{
	const char *job = luaL_optstring(L, 1, NULL);
	nv_err err;
	int rc;

	l_lines *box = lua_newuserdatauv(L, sizeof(*box), 0); /* [box] */
	nv_buf_init(&box->buf, LINES_TOTAL_MAX);
	luaL_setmetatable(L, AUDIT_LINES_MT);
	/* from here the GC owns box->buf */
	rc = nv_audit_each(nv_lua_home(L), job, collect_line, box, &err);
	if (rc == NV_ENOMEM && box->buf.failed)
		nv_err_set(&err, NV_ENOMEM, "filter by job, or read the file",
			   "the audit log is larger than lines() returns");
	if (rc)
		return nv_lua_push_error(L, &err);

	lua_newtable(L); /* [box, lines] */
	const char *p = box->buf.data, *end = p + box->buf.len;
	lua_Integer n = 0;
	while (p && p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		lua_pushlstring(L, p, (size_t)(nl - p)); /* [box, lines, s] */
		lua_rawseti(L, -2, ++n);
		p = nl + 1;
	}
	return 1;
}

static int l_audit_mirror(lua_State *L)
{
	const char *root = luaL_checkstring(L, 1);
	nv_err err;
	int rc;

	if (nv_plan_mode(L))
		return nv_lua_planned(L, "audit", "mirror", root);
	rc = nv_audit_mirror(nv_lua_home(L), root, &err);
	return nv_lua_result(L, rc, &err);
}

/* audit.mirror_check(head_text | nil) -> true | nil, err: whether the
 * store's mirror with that head record may be replaced by this home's log
 * (nv_audit_mirror_check), for the mirror on S3. */
static int l_audit_mirror_check(lua_State *L)
{
	size_t len = 0;
	const char *text = luaL_optlstring(L, 1, NULL, &len);
	nv_err err;
	int rc;

	rc = nv_audit_mirror_check(nv_lua_home(L), text, len, &err);
	return nv_lua_result(L, rc, &err);
}

static int l_audit_identity(lua_State *L)
{
	char identity[NV_AUDIT_IDENTITY_MAX];

	nv_audit_identity(identity);
	lua_pushstring(L, identity);
	return 1;
}

static const luaL_Reg audit_functions[] = {
	{"append", l_audit_append},     {"append_many", l_audit_append_many},
	{"verify", l_audit_verify},     {"lines", l_audit_lines},
	{"mirror", l_audit_mirror},     {"mirror_check", l_audit_mirror_check},
	{"identity", l_audit_identity}, {NULL, NULL},
};

int luaopen_navette_audit(lua_State *L)
{
	nv_lua_new_box_type(L, AUDIT_LINES_MT, l_audit_lines_gc);

	luaL_newlib(L, audit_functions); /* [audit] */
	return 1;
}
