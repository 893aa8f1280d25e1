/* `navette version` (versions.c), and the hook by which the program that
 * loads libraries on first use tells it which are not loaded yet: core
 * knows nothing of host/cli, which sets the hook at start-up. */
#ifndef NV_VERSIONS_H
#define NV_VERSIONS_H

#include <lua.h>

/* 1 when calling symbol would load a library not loaded yet, else 0. */
typedef int (*nv_versions_pending_fn)(const char *symbol);

/* Process-wide; NULL (the default, as in libnavette used alone, where
 * every library is linked): every library counts as loaded. Set once at
 * start-up, before any runtime is opened. */
void nv_versions_set_pending(nv_versions_pending_fn pending);

/* _navette.core.versions([load]) -> table; load: ask every library, even
 * one not loaded yet */
int nv_core_versions(lua_State *L);

#endif
