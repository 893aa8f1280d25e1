/* The Lua binding of the git primitive: _navette.git, wrapped for recipes by
 * lua/navette/git.lua. A repository is a full userdata ("navette.git.repo")
 * created closed before libgit2 opens anything, so the GC always finds a
 * consistent handle; close() is idempotent and a closed handle raises.
 * Misuse (wrong argument types) raises; expected failures (unknown ref, not
 * a repository, non-empty export folder...) return nil, err. All C-side
 * buffers live on the C stack or inside git.c calls that return before any
 * Lua call that could raise, so a longjmp never leaks memory. */
#include <lua.h>
#include <lauxlib.h>

#include "core/nv_lua.h"
#include "core/runtime.h"
#include "core/watchdog.h"
#include "git/archive.h"
#include "git/cache.h"
#include "git/git.h"
#include "git/pgzip.h"

#define NV_GIT_REPO_MT "navette.git.repo"

typedef struct l_git_repo {
	nv_git_repo *repo; /* NULL once closed (or before it is opened) */
} l_git_repo;

static nv_git_repo *check_repo(lua_State *L, int idx)
{
	l_git_repo *box = luaL_checkudata(L, idx, NV_GIT_REPO_MT);

	nv_lua_check_open(L, box->repo != NULL, "git repository");
	return box->repo;
}

/* A repository handle opened by opener (a work tree or a bare one) at the
 * path in argument 1 -> repo | nil, err */
static int push_repo(lua_State *L,
		     int (*opener)(nv_git_repo **, const char *, nv_err *))
{
	const char *path = luaL_checkstring(L, 1);
	l_git_repo *box;
	nv_err err;

	box = lua_newuserdatauv(L, sizeof(*box), 0);
	box->repo = NULL;
	luaL_setmetatable(L, NV_GIT_REPO_MT); // [path, udata]
	/* From here the handle belongs to the GC: __gc frees box->repo. */
	nv_err_clear(&err);
	if (opener(&box->repo, path, &err))
		return nv_lua_push_error(L, &err);
	return 1;
}

static int l_git_open(lua_State *L)
{
	return push_repo(L, nv_git_open);
}

/* Frees the repository once; shared by close(), __close and __gc. */
static int l_git_repo_release(lua_State *L)
{
	l_git_repo *box = luaL_checkudata(L, 1, NV_GIT_REPO_MT);

	if (box->repo) {
		nv_git_free(box->repo);
		box->repo = NULL;
	}
	return 0;
}

static int l_git_close(lua_State *L)
{
	l_git_repo_release(L);
	lua_pushboolean(L, 1);
	return 1;
}

static int l_git_tostring(lua_State *L)
{
	l_git_repo *box = luaL_checkudata(L, 1, NV_GIT_REPO_MT);

	return nv_lua_push_handle_name(L, NV_GIT_REPO_MT,
				       box->repo ? nv_git_workdir(box->repo)
						 : NULL);
}

static int l_git_workdir(lua_State *L)
{
	lua_pushstring(L, nv_git_workdir(check_repo(L, 1)));
	return 1;
}

/* The commit id ref names in the repository at 1 -> id | nil, err */
static int push_resolved(lua_State *L, const char *ref)
{
	nv_git_repo *repo = check_repo(L, 1);
	char oid[NV_GIT_OID_HEX_LEN + 1];
	nv_err err;
	int rc;

	nv_err_clear(&err);
	rc = nv_git_resolve(repo, ref, oid, &err);
	return nv_lua_string_result(L, rc, oid, &err);
}

static int l_git_head(lua_State *L)
{
	return push_resolved(L, "HEAD");
}

static int l_git_resolve(lua_State *L)
{
	check_repo(L, 1);
	return push_resolved(L, luaL_checkstring(L, 2));
}

/* repo:path_state(rel) -> "tracked" | "ignored" | "untracked" | nil, err
 * (git.h: nv_git_path_state) */
static int l_git_path_state(lua_State *L)
{
	static const char *const names[] = {"tracked", "ignored", "untracked"};
	nv_git_repo *repo = check_repo(L, 1);
	const char *rel = luaL_checkstring(L, 2);
	enum nv_git_path_state state;
	nv_err err;

	nv_err_clear(&err);
	if (nv_git_path_state(repo, rel, &state, &err))
		return nv_lua_push_error(L, &err);
	lua_pushstring(L, names[state]);
	return 1;
}

static int l_git_commit(lua_State *L)
{
	nv_git_repo *repo = check_repo(L, 1);
	const char *ref = luaL_optstring(L, 2, "HEAD");
	char oid[NV_GIT_OID_HEX_LEN + 1];
	nv_git_commit info;
	nv_err err;

	nv_err_clear(&err);
	if (nv_git_resolve(repo, ref, oid, &err) ||
	    nv_git_commit_info(repo, oid, &info, &err))
		return nv_lua_push_error(L, &err);
	lua_createtable(L, 0, 7); // [..., info]
	lua_pushstring(L, info.id);
	lua_setfield(L, -2, "id");
	lua_pushstring(L, info.short_id);
	lua_setfield(L, -2, "short");
	lua_pushinteger(L, (lua_Integer)info.time);
	lua_setfield(L, -2, "time");
	lua_pushinteger(L, info.tz_offset_min);
	lua_setfield(L, -2, "tz_offset");
	lua_pushstring(L, info.summary);
	lua_setfield(L, -2, "summary");
	lua_pushstring(L, info.author_name);
	lua_setfield(L, -2, "author");
	lua_pushstring(L, info.author_email);
	lua_setfield(L, -2, "email");
	return 1;
}

/* nv_git_status holds libgit2's status list (malloc'd) while it calls us
 * back, so each entry is added under lua_pcall: a memory error is caught,
 * the walk stops and frees its list, and only then do we re-raise. */
struct status_walk {
	lua_State *L;
	int table;
	lua_Integer n;
	int failed;
};

static int l_git_status_add(lua_State *L)
{
	// [entries, path (light), kind (light), n]
	const char *path = lua_touserdata(L, 2);
	const char *kind = lua_touserdata(L, 3);
	lua_Integer n = lua_tointeger(L, 4);

	lua_createtable(L, 0, 2); // [..., entry]
	lua_pushstring(L, path);
	lua_setfield(L, -2, "path");
	lua_pushstring(L, kind);
	lua_setfield(L, -2, "status");
	lua_rawseti(L, 1, n);
	return 0;
}

static int status_entry(const char *path, const char *kind, void *payload)
{
	struct status_walk *w = payload;
	lua_State *L = w->L;

	/* None of these pushes allocates: the slots were reserved. */
	lua_pushcfunction(L, l_git_status_add);
	lua_pushvalue(L, w->table);
	lua_pushlightuserdata(L, (void *)path);
	lua_pushlightuserdata(L, (void *)kind);
	lua_pushinteger(L, ++w->n);
	if (lua_pcall(L, 4, 0, 0) != LUA_OK) {
		w->failed = 1; // [..., entries, error]
		return 1;
	}
	return 0;
}

static int l_git_status(lua_State *L)
{
	nv_git_repo *repo = check_repo(L, 1);
	struct status_walk w = {L, 0, 0, 0};
	nv_err err;
	int rc;

	lua_settop(L, 1);
	lua_newtable(L); // [repo, entries]
	w.table = lua_gettop(L);
	if (!lua_checkstack(L, 8))
		return luaL_error(L, "git status: Lua stack exhausted");
	nv_err_clear(&err);
	rc = nv_git_status(repo, status_entry, &w, NULL, &err);
	if (w.failed)
		return lua_error(L); // re-raise the entry's error
	if (rc)
		return nv_lua_push_error(L, &err);
	return 1;
}

static int l_git_on_remote(lua_State *L)
{
	nv_git_repo *repo = check_repo(L, 1);
	const char *ref = luaL_checkstring(L, 2);
	const char *remote = luaL_optstring(L, 3, NULL);
	char oid[NV_GIT_OID_HEX_LEN + 1];
	int present = 0;
	nv_err err;

	nv_err_clear(&err);
	if (nv_git_resolve(repo, ref, oid, &err) ||
	    nv_git_on_remote(repo, remote, oid, &present, &err))
		return nv_lua_push_error(L, &err);
	lua_pushboolean(L, present);
	return 1;
}

static int l_git_remote_url(lua_State *L)
{
	nv_git_repo *repo = check_repo(L, 1);
	const char *name = luaL_optstring(L, 2, NULL);
	char url[4096];
	nv_err err;
	int rc;

	nv_err_clear(&err);
	rc = nv_git_remote_url(repo, name, url, sizeof(url), &err);
	return nv_lua_string_result(L, rc, url, &err);
}

/* git.config(name [, repo]) -> value | nil, err (not_found when unset):
 * the repository's view when repo is given, else the global one. */
static int l_git_config(lua_State *L)
{
	const char *name = luaL_checkstring(L, 1);
	const nv_git_repo *repo =
		lua_isnoneornil(L, 2) ? NULL : check_repo(L, 2);
	char value[4096];
	nv_err err;
	int rc;

	nv_err_clear(&err);
	rc = nv_git_config_string(repo, name, value, sizeof(value), &err);
	return nv_lua_string_result(L, rc, value, &err);
}

/* Sets what a commit's tree holds (an export's or an archive's) in the
 * result table on top. */
static void set_tree_counts(lua_State *L, uint64_t files, uint64_t dirs,
			    uint64_t symlinks, uint64_t submodules)
{
	lua_pushinteger(L, (lua_Integer)files);
	lua_setfield(L, -2, "files");
	lua_pushinteger(L, (lua_Integer)dirs);
	lua_setfield(L, -2, "dirs");
	lua_pushinteger(L, (lua_Integer)symlinks);
	lua_setfield(L, -2, "symlinks");
	lua_pushinteger(L, (lua_Integer)submodules);
	lua_setfield(L, -2, "submodules");
}

static int l_git_export(lua_State *L)
{
	nv_git_repo *repo = check_repo(L, 1);
	const char *ref = luaL_checkstring(L, 2);
	const char *dest = luaL_checkstring(L, 3);
	char oid[NV_GIT_OID_HEX_LEN + 1];
	nv_git_export_stats st;
	nv_err err;

	luaL_argcheck(L, dest[0] != '\0', 3, "empty export folder");
	nv_err_clear(&err);
	/* Resolving is a read, so plan mode records the real commit id. */
	if (nv_git_resolve(repo, ref, oid, &err))
		return nv_lua_push_error(L, &err);
	if (nv_plan_mode(L)) {
		lua_pushfstring(L, "%s -> %s", oid, dest); // [..., detail]
		nv_plan_record(L, "git", "export", lua_tostring(L, -1));
		lua_createtable(L, 0, 3); // [..., detail, result]
		lua_pushboolean(L, 1);
		lua_setfield(L, -2, "planned");
		lua_pushstring(L, oid);
		lua_setfield(L, -2, "id");
		lua_pushstring(L, dest);
		lua_setfield(L, -2, "dest");
		return 1;
	}
	if (nv_git_export(repo, oid, dest, &st, &err))
		return nv_lua_push_error(L, &err);
	lua_createtable(L, 0, 6); // [..., stats]
	lua_pushstring(L, oid);
	lua_setfield(L, -2, "id");
	set_tree_counts(L, st.files, st.dirs, st.symlinks, st.submodules);
	lua_pushinteger(L, (lua_Integer)st.bytes);
	lua_setfield(L, -2, "bytes");
	return 1;
}

static int discard(void *payload, const void *data, size_t len)
{
	(void)payload;
	(void)data;
	(void)len;
	return 0;
}

/* archive(ref, path|nil [, {prefix=, gzip=}]) -> {id, sha256, size,
 * tar_sha256, tar_size, files, dirs, symlinks, submodules, mtime}: the
 * commit's tree as a deterministic tar (gzip by default) written to path,
 * or only hashed when path is nil. In plan mode nothing is written (the
 * digests are still computed: they are what the plan shows). */
static int l_git_archive(lua_State *L)
{
	nv_git_repo *repo = check_repo(L, 1);
	const char *ref = luaL_checkstring(L, 2);
	const char *path = luaL_optstring(L, 3, NULL);
	char oid[NV_GIT_OID_HEX_LEN + 1];
	nv_archive_opts opts = {.prefix = NULL, .gzip = 1};
	nv_archive_result res;
	nv_err err;
	int rc;

	if (!lua_isnoneornil(L, 4)) {
		luaL_checktype(L, 4, LUA_TTABLE);
		lua_getfield(L, 4, "prefix"); // [.., prefix] (kept by arg 4)
		opts.prefix = luaL_optstring(L, -1, NULL);
		lua_pop(L, 1);
		lua_getfield(L, 4, "gzip");
		if (!lua_isnil(L, -1))
			opts.gzip = lua_toboolean(L, -1);
		lua_pop(L, 1);
	}
	nv_err_clear(&err);
	if (nv_git_resolve(repo, ref, oid, &err))
		return nv_lua_push_error(L, &err);
	if (path && nv_plan_mode(L)) {
		lua_pushfstring(L, "%s -> %s", oid, path); // [.., detail]
		nv_plan_record(L, "git", "archive", lua_tostring(L, -1));
		lua_pop(L, 1);
		path = NULL;
	}
	if (path)
		rc = nv_archive_commit_file(repo, oid, &opts, path, &res, &err);
	else
		rc = nv_archive_commit(repo, oid, &opts, discard, NULL, &res,
				       &err);
	if (rc)
		return nv_lua_push_error(L, &err);
	lua_createtable(L, 0, 10); // [.., result]
	lua_pushstring(L, oid);
	lua_setfield(L, -2, "id");
	lua_pushstring(L, res.sha256);
	lua_setfield(L, -2, "sha256");
	lua_pushinteger(L, (lua_Integer)res.size);
	lua_setfield(L, -2, "size");
	lua_pushstring(L, res.tar_sha256);
	lua_setfield(L, -2, "tar_sha256");
	lua_pushinteger(L, (lua_Integer)res.tar_size);
	lua_setfield(L, -2, "tar_size");
	set_tree_counts(L, res.files, res.dirs, res.symlinks, res.submodules);
	lua_pushinteger(L, (lua_Integer)res.mtime);
	lua_setfield(L, -2, "mtime");
	return 1;
}

static int l_git_lockfile_hash(lua_State *L)
{
	nv_git_repo *repo = check_repo(L, 1);
	const char *ref = luaL_optstring(L, 2, "HEAD");
	char oid[NV_GIT_OID_HEX_LEN + 1], hex[NV_GIT_SHA256_HEX + 1];
	nv_err err;
	int rc;

	nv_err_clear(&err);
	rc = nv_git_resolve(repo, ref, oid, &err) ||
	     nv_git_lockfile_hash(repo, oid, hex, &err);
	return nv_lua_string_result(L, rc, hex, &err);
}

/* repo:path_id(ref, path) -> id, kind ("tree" | "file" | "submodule") |
 * nil, err: what the commit holds at path ("" the root tree), by id. */
static int l_git_path_id(lua_State *L)
{
	nv_git_repo *repo = check_repo(L, 1);
	const char *ref = luaL_checkstring(L, 2);
	const char *path = luaL_checkstring(L, 3);
	char oid[NV_GIT_OID_HEX_LEN + 1], id[NV_GIT_OID_HEX_LEN + 1];
	char kind = 0;
	nv_err err;

	nv_err_clear(&err);
	if (nv_git_resolve(repo, ref, oid, &err) ||
	    nv_git_path_id(repo, oid, path, id, &kind, &err))
		return nv_lua_push_error(L, &err);
	lua_pushstring(L, id);
	lua_pushstring(L, kind == 't'   ? "tree"
			  : kind == 'c' ? "submodule"
					: "file");
	return 2;
}

/* Each lock file found is added under lua_pcall (a memory error stops
 * the walk, which frees what it holds, and is raised after); the walk
 * stays under LUA_MINSTACK values on the stack. */
struct lockfile_walk {
	lua_State *L;
	int table;
	lua_Integer n;
};

static int l_git_lockfile_add(lua_State *L)
{
	struct lockfile_walk *w = lua_touserdata(L, 1);

	/* [w, list, path, blob]: the two strings as light userdata, so
	 * that nothing is allocated outside this protected call */
	lua_createtable(L, 0, 2);
	lua_pushstring(L, lua_touserdata(L, 3));
	lua_setfield(L, -2, "path");
	lua_pushstring(L, lua_touserdata(L, 4));
	lua_setfield(L, -2, "blob");
	lua_rawseti(L, 2, ++w->n);
	return 0;
}

static int lockfile_cb(const char *path, const char *blob, void *payload)
{
	struct lockfile_walk *w = payload;
	lua_State *L = w->L;

	lua_pushcfunction(L, l_git_lockfile_add);
	lua_pushlightuserdata(L, w);
	lua_pushvalue(L, w->table);
	lua_pushlightuserdata(L, (void *)path);
	lua_pushlightuserdata(L, (void *)blob);
	return lua_pcall(L, 4, 0, 0) == LUA_OK ? 0 : NV_ENOMEM;
}

/* repo:lockfiles(ref) -> {{path, blob}, ...} | nil, err: the dependency
 * lock files of the commit, in any folder, in the tree's order. */
static int l_git_lockfiles(lua_State *L)
{
	nv_git_repo *repo = check_repo(L, 1);
	const char *ref = luaL_checkstring(L, 2);
	char oid[NV_GIT_OID_HEX_LEN + 1];
	struct lockfile_walk w;
	nv_err err;
	int rc;

	nv_err_clear(&err);
	if (nv_git_resolve(repo, ref, oid, &err))
		return nv_lua_push_error(L, &err);
	lua_newtable(L);
	w.L = L;
	w.table = lua_gettop(L);
	w.n = 0;
	rc = nv_git_lockfiles(repo, oid, lockfile_cb, &w, &err);
	if (rc == NV_ENOMEM && !err.message[0])
		return lua_error(L); /* the pcall's error, on the top */
	if (rc)
		return nv_lua_push_error(L, &err);
	return 1;
}

/* repo:read_file(ref, path [, max_bytes]) -> bytes | nil, err: a file of
 * the commit (the recipe's modules are loaded from there). */
static int l_git_read_file(lua_State *L)
{
	nv_git_repo *repo = check_repo(L, 1);
	const char *ref = luaL_checkstring(L, 2);
	const char *path = luaL_checkstring(L, 3);
	lua_Integer max = luaL_optinteger(L, 4, 16 * 1024 * 1024);
	char oid[NV_GIT_OID_HEX_LEN + 1];
	size_t size = 0, len = 0;
	nv_err err;

	luaL_argcheck(L, max >= 0, 4, "must not be negative");
	nv_err_clear(&err);
	if (nv_git_resolve(repo, ref, oid, &err) ||
	    nv_git_file_size(repo, oid, path, &size, &err))
		return nv_lua_push_error(L, &err);
	if (size > (size_t)max) {
		nv_err_set(&err, NV_EINVAL, NULL,
			   "'%s' is larger than %lld bytes", path,
			   (long long)max);
		return nv_lua_push_error(L, &err);
	}
	char *buf = lua_newuserdatauv(L, size ? size : 1, 0);
	if (nv_git_read_file(repo, oid, path, buf, size, &len, &err))
		return nv_lua_push_error(L, &err);
	lua_pushlstring(L, buf, len);
	return 1;
}

/* ---- the library cache (cache.h) ---------------------------------- */

/* git.cache_name(url) -> the cache folder's name (hex) */
static int l_git_cache_name(lua_State *L)
{
	const char *url = luaL_checkstring(L, 1);
	char name[NV_GIT_CACHE_NAME_LEN + 1];
	nv_err err;
	int rc;

	nv_err_clear(&err);
	rc = nv_git_cache_name(name, url, &err);
	return nv_lua_string_result(L, rc, name, &err);
}

/* git.cache_fetch(dir, url) -> true | nil, err: a network read into the
 * cache; the caller decides when one is allowed (never in plan). */
static int l_git_cache_fetch(lua_State *L)
{
	const char *dir = luaL_checkstring(L, 1);
	const char *url = luaL_checkstring(L, 2);
	nv_err err;

	navette_runtime *rt = nv_runtime_of(L);
	nv_watchdog *dog = rt && rt->deadline > 0 ? rt->watchdog : NULL;
	char note[1024];
	int rc;

	/* the recipe's time bound ends a fetch that hangs: say so, not
	 * "a pattern match that backtracks" */
	snprintf(note, sizeof(note),
		 "error: the recipe ran longer than %d s while navette fetched "
		 "the library %.300s (navette.use); navette ended it one "
		 "second later\n  check: that the library's remote answers "
		 "(git ls-remote URL), or raise NAVETTE_RECIPE_TIMEOUT\n",
		 rt ? (int)(rt->recipe_timeout_s + 0.5) : 0, url);
	nv_watchdog_note(dog, note);
	nv_err_clear(&err);
	rc = nv_git_cache_fetch(dir, url, &err);
	nv_watchdog_note(dog, NULL);
	return nv_lua_result(L, rc, &err);
}

/* git.open_cache(dir) -> repo | nil, err: a cache's bare repository */
static int l_git_open_cache(lua_State *L)
{
	return push_repo(L, nv_git_open_bare);
}

/* repo:library_ref(ref) -> commit, kind ("tag", "branch", "commit") */
static int l_git_library_ref(lua_State *L)
{
	nv_git_repo *repo = check_repo(L, 1);
	const char *ref = luaL_checkstring(L, 2);
	char oid[NV_GIT_OID_HEX_LEN + 1];
	const char *kind = NULL;
	nv_err err;

	nv_err_clear(&err);
	if (nv_git_cache_resolve(repo, ref, oid, &kind, &err))
		return nv_lua_push_error(L, &err);
	lua_pushstring(L, oid);
	lua_pushstring(L, kind);
	return 2;
}

/* repo:library_commit(id) -> true | nil, err: the cache holds commit id
 * (looked up as an object, never through a tag or branch) */
static int l_git_library_commit(lua_State *L)
{
	nv_git_repo *repo = check_repo(L, 1);
	const char *id = luaL_checkstring(L, 2);
	nv_err err;
	int rc;

	nv_err_clear(&err);
	rc = nv_git_cache_has_commit(repo, id, &err);
	return nv_lua_result(L, rc, &err);
}

static const luaL_Reg repo_methods[] = {
	{"library_ref", l_git_library_ref},
	{"library_commit", l_git_library_commit},
	{"read_file", l_git_read_file},
	{"workdir", l_git_workdir},
	{"path_state", l_git_path_state},
	{"head", l_git_head},
	{"resolve", l_git_resolve},
	{"commit", l_git_commit},
	{"status", l_git_status},
	{"on_remote", l_git_on_remote},
	{"remote_url", l_git_remote_url},
	{"export", l_git_export},
	{"archive", l_git_archive},
	{"lockfile_hash", l_git_lockfile_hash},
	{"path_id", l_git_path_id},
	{"lockfiles", l_git_lockfiles},
	{"close", l_git_close},
	{NULL, NULL},
};

static const luaL_Reg repo_meta[] = {
	{"__gc", l_git_repo_release},
	{"__close", l_git_repo_release},
	{"__tostring", l_git_tostring},
	{NULL, NULL},
};

/* git.gzip_engine() -> "libdeflate 1.14" | "zlib 1.2.13": what
 * compresses code layers (git/pgzip.h), for `navette version`. */
static int l_git_gzip_engine(lua_State *L)
{
	lua_pushstring(L, nv_pgzip_engine());
	return 1;
}

static const luaL_Reg git_functions[] = {
	{"open", l_git_open},
	{"config", l_git_config},
	{"open_cache", l_git_open_cache},
	{"cache_name", l_git_cache_name},
	{"cache_fetch", l_git_cache_fetch},
	{"gzip_engine", l_git_gzip_engine},
	{NULL, NULL},
};

int luaopen_navette_git(lua_State *L)
{
	nv_lua_new_handle_type(L, NV_GIT_REPO_MT, repo_meta, repo_methods);
	luaL_newlib(L, git_functions); // [module]
	return 1;
}
