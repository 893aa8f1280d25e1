/* What the storage folder's two bindings (storage_lua.c, the file://
 * store, and s3_lua.c, the S3 client) share: one rule for an object key
 * that comes from Lua, one table for an object's info. */
#ifndef NV_STORAGE_LUA_H
#define NV_STORAGE_LUA_H

#include <lua.h>

#include "core/nv_err.h"
#include "storage/filestore.h"

/* The key at idx: a malformed one (an embedded NUL included) is an
 * expected failure, NULL with err filled, since keys often come from
 * data; a non-string is misuse and raises. */
const char *nv_storage_check_key(lua_State *L, int idx, nv_err *err);

/* Pushes {key=, size=, sha256=} for info (an empty sha256, unknown in a
 * listing, left out); each binding adds what its store knows besides. */
void nv_storage_push_object(lua_State *L, const nv_object_info *info);

#endif
