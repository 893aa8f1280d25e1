/* What the library wires together, in one place: the natives of the core
 * and of every primitive into `_navette`, and the redactor in front of
 * every sink of the process (the output module, the audit log, secret
 * loading). The core reaches none of them by name: it offers hooks
 * (nv_out_set_filter), and the primitives offer theirs
 * (nv_audit_set_filter, nv_secret_set_observer). */
#include "lib/lib.h"

#include <stddef.h>

#include <lauxlib.h>

#include "core/buf.h"
#include "core/output.h"
#include "core/runtime.h"
#include "audit/audit.h"
#include "creds/redact.h"
#include "creds/secret.h"

void nv_lib_open_natives(lua_State *L)
{
	static const luaL_Reg natives[] = {
#define NV_NATIVE(name) {#name, luaopen_navette_##name},
#include "lib/natives.def"
#undef NV_NATIVE
		{NULL, NULL}};

	lua_newtable(L); // [_navette]
	for (const luaL_Reg *r = natives; r->name; r++) {
		lua_pushcfunction(L, r->func);
		lua_call(L, 0, 1);
		lua_setfield(L, -2, r->name);
	}
	lua_setglobal(L, "_navette");
}

/* Every loaded secret value is taught to the redactor; values shorter
 * than its minimum are left alone on purpose (short common words). */
static void redact_observer(const char *name, const void *value, size_t len)
{
	nv_err err;
	if (len >= NV_REDACT_SECRET_MIN)
		nv_redact_add_secret(nv_redact_global(), name, value, len,
				     &err);
}

static int audit_redact(const char *line, size_t len, nv_buf *out,
			void *payload)
{
	(void)payload;
	return nv_redact_buffer(nv_redact_global(), line, len, out);
}

/* The sinks of this process all pass the redactor: the output module, the
 * audit log, and (through the output module) plans and errors. */
void nv_lib_install_redactor(void)
{
	nv_out_set_filter(nv_redact_out_filter);
	nv_secret_set_observer(redact_observer);
	nv_audit_set_filter(audit_redact, NULL);
}
