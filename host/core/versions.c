/* `navette version`: the versions of navette and of every library it runs
 * on, as linked (not as compiled against), for bug reports. The navette
 * program loads every library but Lua on first use (host/cli/lazy_libs.c);
 * asking one would load it, so unless the caller wants them loaded (or
 * they already are) they are given as built against, marked so. */
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
#include "core/versions.h"

#define BUILT_AGAINST " (as built)"

/* Set by the navette program when it loads libraries lazily
 * (host/cli/main.c); NULL in libnavette used alone. */
static nv_versions_pending_fn pending_hook;

void nv_versions_set_pending(nv_versions_pending_fn pending)
{
	pending_hook = pending;
}

static int pending(const char *symbol)
{
	return pending_hook && pending_hook(symbol);
}

/* t[key] = the version built against, marked so, when the library of
 * symbol is not loaded yet and the caller does not want it loaded: 1.
 * Otherwise 0, and the caller asks the library. */
static int put_built(lua_State *L, int load, const char *symbol,
		     const char *key, const char *built)
{
	char buf[96];

	if (load || !pending(symbol))
		return 0;
	snprintf(buf, sizeof(buf), "%s" BUILT_AGAINST, built);
	lua_pushstring(L, buf);
	lua_setfield(L, -2, key);
	return 1;
}

static void put(lua_State *L, const char *key, const char *version)
{
	lua_pushstring(L, version);
	lua_setfield(L, -2, key);
}

/* See versions.h. */
int nv_core_versions(lua_State *L)
{
	char buf[64];
	int major, minor, rev;
	int load = lua_toboolean(L, 1);

	lua_createtable(L, 0, 9);
	put(L, "navette", NAVETTE_VERSION);
	put(L, "lua", &LUA_RELEASE[4]); /* "Lua 5.4.4" -> "5.4.4" */
	if (!put_built(L, load, "git_libgit2_version", "libgit2",
		       LIBGIT2_VERSION)) {
		git_libgit2_version(&major, &minor, &rev);
		snprintf(buf, sizeof(buf), "%d.%d.%d", major, minor, rev);
		put(L, "libgit2", buf);
	}
	if (!put_built(L, load, "curl_version_info", "libcurl",
		       LIBCURL_VERSION)) {
		curl_version_info_data *curl =
			curl_version_info(CURLVERSION_NOW);
		if (curl) {
			snprintf(buf, sizeof(buf), "%s (%s)", curl->version,
				 curl->ssl_version ? curl->ssl_version
						   : "no TLS");
			put(L, "libcurl", buf);
		}
	}
	if (!put_built(L, load, "sqlite3_libversion", "sqlite", SQLITE_VERSION))
		put(L, "sqlite", sqlite3_libversion());
	if (!put_built(L, load, "OpenSSL_version", "openssl",
		       OPENSSL_VERSION_TEXT))
		put(L, "openssl", OpenSSL_version(OPENSSL_VERSION));
	snprintf(buf, sizeof(buf), "%d.%d.%d", CJSON_VERSION_MAJOR,
		 CJSON_VERSION_MINOR, CJSON_VERSION_PATCH);
	if (!put_built(L, load, "cJSON_Version", "cjson", buf))
		put(L, "cjson", cJSON_Version());
	if (!put_built(L, load, "zlibVersion", "zlib", ZLIB_VERSION))
		put(L, "zlib", zlibVersion());
	snprintf(buf, sizeof(buf), "expat_%d.%d.%d", XML_MAJOR_VERSION,
		 XML_MINOR_VERSION, XML_MICRO_VERSION);
	if (!put_built(L, load, "XML_ExpatVersion", "expat", buf))
		put(L, "expat", XML_ExpatVersion());
	/* the engines of the redactor and of the code layers' gzip are
	 * their floors' to say (creds.redact_engine, git.gzip_engine):
	 * navette.cli.version adds them */
	return 1;
}
