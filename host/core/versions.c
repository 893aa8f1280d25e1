/* `navette version`: the versions of navette and of every library it runs
 * on, as linked (not as compiled against), for bug reports. */
#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <expat.h>
#include <git2.h>
#include <lauxlib.h>
#include <lua.h>
#include <openssl/crypto.h>
#include <sqlite3.h>
#include <stdio.h>
#include <zlib.h>

#include "core/runtime.h"

int nv_core_versions(lua_State *L);

int nv_core_versions(lua_State *L)
{
	char buf[64];
	int major, minor, rev;
	curl_version_info_data *curl = curl_version_info(CURLVERSION_NOW);

	lua_createtable(L, 0, 9);
	lua_pushstring(L, navette_version());
	lua_setfield(L, -2, "navette");
	lua_pushstring(L, &LUA_RELEASE[4]); /* "Lua 5.4.4" -> "5.4.4" */
	lua_setfield(L, -2, "lua");
	git_libgit2_version(&major, &minor, &rev);
	snprintf(buf, sizeof(buf), "%d.%d.%d", major, minor, rev);
	lua_pushstring(L, buf);
	lua_setfield(L, -2, "libgit2");
	if (curl) {
		snprintf(buf, sizeof(buf), "%s (%s)", curl->version,
			 curl->ssl_version ? curl->ssl_version : "no TLS");
		lua_pushstring(L, buf);
		lua_setfield(L, -2, "libcurl");
	}
	lua_pushstring(L, sqlite3_libversion());
	lua_setfield(L, -2, "sqlite");
	lua_pushstring(L, OpenSSL_version(OPENSSL_VERSION));
	lua_setfield(L, -2, "openssl");
	lua_pushstring(L, cJSON_Version());
	lua_setfield(L, -2, "cjson");
	lua_pushstring(L, zlibVersion());
	lua_setfield(L, -2, "zlib");
	lua_pushstring(L, XML_ExpatVersion());
	lua_setfield(L, -2, "expat");
	return 1;
}
