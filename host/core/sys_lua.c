/* _navette.sys: what the trusted library (never a recipe) needs from the
 * operating system: clock, sleep, paths, small files, identity. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <limits.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include <lauxlib.h>
#include <lua.h>
#include <openssl/evp.h>

#include "core/fsname.h"
#include "core/fsutil.h"
#include "core/nv_lua.h"
#include "core/runtime.h"
#include "core/sha256.h"

#define SYS_READ_MAX ((size_t)16 * 1024 * 1024)

static int l_sys_now(lua_State *L)
{
	lua_pushnumber(L, nv_now());
	return 1;
}

static int l_sys_iso8601(lua_State *L)
{
	char buf[32];
	nv_iso8601(luaL_optnumber(L, 1, nv_now()), buf);
	lua_pushstring(L, buf);
	return 1;
}

/* Ctrl-C while the CLI follows a job (run --wait, watch): the job goes on
 * in the agent, so the CLI catches SIGINT, ends its sleep and says how to
 * follow the job again, instead of dying mid-line. */
static volatile sig_atomic_t sys_interrupted;

static void on_interrupt(int sig)
{
	(void)sig;
	sys_interrupted = 1;
}

/* sys.trap_interrupt(on): catch SIGINT (on) or restore the default. */
static int l_sys_trap_interrupt(lua_State *L)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sigemptyset(&sa.sa_mask);
	sa.sa_handler = lua_toboolean(L, 1) ? on_interrupt : SIG_DFL;
	sys_interrupted = 0;
	sigaction(SIGINT, &sa, NULL); /* no SA_RESTART: sleeps end at once */
	return 0;
}

/* sys.interrupted() -> whether SIGINT came since trap_interrupt(true). */
static int l_sys_interrupted(lua_State *L)
{
	lua_pushboolean(L, sys_interrupted != 0);
	return 1;
}

static int l_sys_sleep(lua_State *L)
{
	/* (a deadline already passed gives a negative time: no sleep) */
	double s =
		nv_lua_checkrangef(L, 1, -HUGE_VAL, 1e9, "sys.sleep: seconds");
	struct timespec ts;

	if (s <= 0)
		return 0;
	ts.tv_sec = (time_t)s;
	ts.tv_nsec = (long)((s - (double)ts.tv_sec) * 1e9);
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR && !sys_interrupted)
		;
	return 0;
}

static int l_sys_getenv(lua_State *L)
{
	lua_pushstring(L, getenv(luaL_checkstring(L, 1)));
	return 1;
}

static int l_sys_cwd(lua_State *L)
{
	char buf[PATH_MAX];
	if (!getcwd(buf, sizeof(buf)))
		return luaL_error(L, "cannot read the working folder");
	lua_pushstring(L, buf);
	return 1;
}

static int l_sys_realpath(lua_State *L)
{
	char buf[PATH_MAX];
	const char *p = luaL_checkstring(L, 1);

	if (!realpath(p, buf)) {
		nv_err err;
		nv_err_set_errno(&err, errno == ENOENT ? NV_ENOTFOUND : NV_EIO,
				 errno, NULL, "%s", p);
		return nv_lua_push_error(L, &err);
	}
	lua_pushstring(L, buf);
	return 1;
}

/* 1 when path is root or lies under it, byte for byte. */
static int under(const char *path, size_t plen, const char *root, size_t rlen)
{
	while (rlen > 1 && root[rlen - 1] == '/')
		rlen--;
	if (rlen == 1 && root[0] == '/')
		return plen > 0 && path[0] == '/';
	return plen >= rlen && memcmp(path, root, rlen) == 0 &&
	       (plen == rlen || path[rlen] == '/');
}

/* sys.path_within(path, root [, fold]) -> bool: whether the real path
 * path is root or lies under the real path root, compared as root's
 * volume compares names (case-insensitively on a volume that folds case,
 * as macOS's do by default: core/fsname.h), or always folded with fold
 * (for a list of refused folders: folding only refuses more). Both
 * should come from sys.realpath: nothing is resolved here. */
static int l_sys_path_within(lua_State *L)
{
	size_t plen, rlen;
	const char *path = luaL_checklstring(L, 1, &plen);
	const char *root = luaL_checklstring(L, 2, &rlen);
	char fp[NV_FSNAME_FOLD_CAP(PATH_MAX)], fr[NV_FSNAME_FOLD_CAP(PATH_MAX)];
	size_t fplen, frlen;
	int fd, folds;

	if (under(path, plen, root, rlen) || plen >= PATH_MAX ||
	    rlen >= PATH_MAX) {
		lua_pushboolean(L, under(path, plen, root, rlen));
		return 1;
	}
	if (lua_toboolean(L, 3)) {
		folds = 1;
	} else {
		fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		folds = fd >= 0 &&
			nv_fsname_volume_of(fd) != NV_FSNAME_SENSITIVE;
		if (fd >= 0)
			close(fd);
	}
	fplen = folds ? nv_fsname_fold(path, plen, fp, sizeof(fp)) : (size_t)-1;
	frlen = folds ? nv_fsname_fold(root, rlen, fr, sizeof(fr)) : (size_t)-1;
	lua_pushboolean(L, fplen != (size_t)-1 && frlen != (size_t)-1 &&
				   under(fp, fplen, fr, frlen));
	return 1;
}

/* sys.stat(path) -> {type=, size=, mode=, mtime=} | nil (no follow) */
static int l_sys_stat(lua_State *L)
{
	struct stat st;
	const char *type;

	if (lstat(luaL_checkstring(L, 1), &st) != 0) {
		lua_pushnil(L);
		return 1;
	}
	if (S_ISREG(st.st_mode))
		type = "file";
	else if (S_ISDIR(st.st_mode))
		type = "directory";
	else if (S_ISLNK(st.st_mode))
		type = "symlink";
	else
		type = "other";
	lua_createtable(L, 0, 4);
	lua_pushstring(L, type);
	lua_setfield(L, -2, "type");
	lua_pushinteger(L, (lua_Integer)st.st_size);
	lua_setfield(L, -2, "size");
	lua_pushinteger(L, (lua_Integer)(st.st_mode & 07777));
	lua_setfield(L, -2, "mode");
	lua_pushinteger(L, (lua_Integer)st.st_mtime);
	lua_setfield(L, -2, "mtime");
	lua_pushinteger(L, (lua_Integer)st.st_uid);
	lua_setfield(L, -2, "uid");
	return 1;
}

static int l_sys_mkdir_p(lua_State *L)
{
	nv_err err;
	int rc;
	const char *path = luaL_checkstring(L, 1);
	int mode = (int)nv_lua_optrange(L, 2, 0, 07777, 0755, "mkdir_p: mode");

	rc = nv_mkdir_p(path, mode, &err);
	return nv_lua_result(L, rc, &err);
}

static int l_sys_write_file(lua_State *L)
{
	size_t len;
	const char *path = luaL_checkstring(L, 1);
	const char *data = luaL_checklstring(L, 2, &len);
	int mode =
		(int)nv_lua_optrange(L, 3, 0, 07777, 0644, "write_file: mode");
	nv_err err;
	int rc;

	rc = nv_write_file_atomic(path, data, len, mode, &err);
	return nv_lua_result(L, rc, &err);
}

/* sys.read_file(path [, max]) -> string | nil, err. The buffer is copied
 * into Lua before anything can raise. */
static int l_sys_read_file(lua_State *L)
{
	const char *path = luaL_checkstring(L, 1);
	lua_Integer max =
		nv_lua_optrange(L, 2, 0, (lua_Integer)1 << 40,
				(lua_Integer)SYS_READ_MAX, "read_file: max");
	char *buf;
	size_t len;
	nv_err err;

	if (nv_read_file(&buf, &len, path, (size_t)max, &err) != 0)
		return nv_lua_push_error(L, &err);
	lua_pushlstring(L, buf, len); /* may raise: free on both paths */
	free(buf);
	return 1;
}

/* sys.read_from(path, offset [, max]) -> bytes (maybe "") | nil, err:
 * the tail of a growing file, for `logs --follow`. */
static int l_sys_read_from(lua_State *L)
{
	const char *path = luaL_checkstring(L, 1);
	lua_Integer offset =
		nv_lua_checkrange(L, 2, 0, LUA_MAXINTEGER, "read_from: offset");
	lua_Integer max =
		nv_lua_optrange(L, 3, 1, 1 << 24, 65536, "read_from: max");
	FILE *f;
	luaL_Buffer b;

	/* The buffer first: it may raise, the open file must not leak. */
	char *p = luaL_buffinitsize(L, &b, (size_t)max);
	f = fopen(path, "rb");
	if (!f) {
		nv_err err;
		nv_err_set_errno(&err, errno == ENOENT ? NV_ENOTFOUND : NV_EIO,
				 errno, NULL, "cannot open %s", path);
		return nv_lua_push_error(L, &err);
	}
	size_t n = 0;
	if (fseeko(f, (off_t)offset, SEEK_SET) == 0)
		n = fread(p, 1, (size_t)max, f);
	fclose(f); /* nothing below raises before the file is closed */
	luaL_pushresultsize(&b, n);
	return 1;
}

static int l_sys_listdir(lua_State *L)
{
	const char *path = luaL_checkstring(L, 1);
	DIR *d = opendir(path);
	struct dirent *e;
	int i = 1;

	if (!d) {
		nv_err err;
		nv_err_set_errno(&err, errno == ENOENT ? NV_ENOTFOUND : NV_EIO,
				 errno, NULL, "cannot list %s", path);
		return nv_lua_push_error(L, &err);
	}
	lua_newtable(L);
	while ((e = readdir(d))) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		if (!lua_checkstack(L, 2))
			break;
		lua_pushstring(L, e->d_name); /* ENOMEM would leak d: rare */
		lua_rawseti(L, -2, i++);
	}
	closedir(d);
	return 1;
}

static int l_sys_remove_tree(lua_State *L)
{
	nv_err err;
	int rc;

	rc = nv_remove_tree(luaL_checkstring(L, 1), &err);
	return nv_lua_result(L, rc, &err);
}

static int l_sys_remove(lua_State *L)
{
	const char *p = luaL_checkstring(L, 1);
	if (unlink(p) != 0 && errno != ENOENT) {
		nv_err err;
		nv_err_set_errno(&err, NV_EIO, errno, NULL, "cannot remove %s",
				 p);
		return nv_lua_push_error(L, &err);
	}
	lua_pushboolean(L, 1);
	return 1;
}

static int l_sys_identity(lua_State *L)
{
	char host[256] = "localhost";
	struct passwd *pw = getpwuid(getuid());
	const char *user = pw ? pw->pw_name : getenv("USER");

	gethostname(host, sizeof(host) - 1);
	host[sizeof(host) - 1] = '\0';
	lua_pushstring(L, user ? user : "unknown");
	lua_pushstring(L, host);
	return 2;
}

static int l_sys_pid(lua_State *L)
{
	lua_pushinteger(L, (lua_Integer)getpid());
	return 1;
}

static int l_sys_random_hex(lua_State *L)
{
	char buf[129];
	lua_Integer n = nv_lua_checkrange(L, 1, 1, 64, "random_hex: bytes");
	nv_err err;
	int rc;

	rc = nv_random_hex(buf, (size_t)n, &err);
	return nv_lua_string_result(L, rc, buf, &err);
}

/* sha256(text) -> the hex digest of text (a name's fingerprint, never a
 * secret's: the value is a Lua string). */
static int l_sys_sha256(lua_State *L)
{
	size_t len;
	const char *text = luaL_checklstring(L, 1, &len);
	unsigned char md[32];
	unsigned int n = 0;
	char hex[65];

	if (EVP_Digest(text, len, md, &n, EVP_sha256(), NULL) != 1 || n != 32)
		return luaL_error(L, "sha256: OpenSSL failed");
	for (int i = 0; i < 32; i++)
		snprintf(hex + 2 * i, 3, "%02x", md[i]);
	lua_pushlstring(L, hex, 64);
	return 1;
}

/* sha256_file(path) -> hex digest, size | nil, err: a file's bytes
 * hashed as they stream (`navette outputs`: a file already there). */
static int l_sys_sha256_file(lua_State *L)
{
	char hex[NV_SHA256_HEX_LEN + 1];
	uint64_t size = 0;
	nv_err err;

	if (nv_sha256_file(luaL_checkstring(L, 1), hex, &size, &err))
		return nv_lua_push_error(L, &err);
	lua_pushstring(L, hex);
	lua_pushinteger(L, (lua_Integer)size);
	return 2;
}

/* which(name) -> path | nil: an executable on $PATH. */
static int l_sys_which(lua_State *L)
{
	char path[4200];

	if (nv_which(luaL_checkstring(L, 1), path, sizeof(path)) != 0)
		return 0;
	lua_pushstring(L, path);
	return 1;
}

/* sys.free_space(path) -> available, total | nil, err: bytes of the file
 * system that holds path, available being what an unprivileged user may
 * still write (statvfs's f_bavail), for `navette doctor`. */
static int l_sys_free_space(lua_State *L)
{
	const char *path = luaL_checkstring(L, 1);
	struct statvfs vfs;

	if (statvfs(path, &vfs) != 0) {
		nv_err err;
		nv_err_set_errno(&err, errno == ENOENT ? NV_ENOTFOUND : NV_EIO,
				 errno, NULL,
				 "cannot read the free space of %s", path);
		return nv_lua_push_error(L, &err);
	}
	lua_pushinteger(L, (lua_Integer)((unsigned long long)vfs.f_bavail *
					 vfs.f_frsize));
	lua_pushinteger(L, (lua_Integer)((unsigned long long)vfs.f_blocks *
					 vfs.f_frsize));
	return 2;
}

static int l_sys_isatty(lua_State *L)
{
	lua_pushboolean(L, isatty((int)nv_lua_checkrange(L, 1, 0, INT_MAX,
							 "isatty: fd")));
	return 1;
}

int luaopen_navette_sys(lua_State *L)
{
	static const luaL_Reg fns[] = {{"now", l_sys_now},
				       {"iso8601", l_sys_iso8601},
				       {"sleep", l_sys_sleep},
				       {"getenv", l_sys_getenv},
				       {"cwd", l_sys_cwd},
				       {"realpath", l_sys_realpath},
				       {"path_within", l_sys_path_within},
				       {"stat", l_sys_stat},
				       {"mkdir_p", l_sys_mkdir_p},
				       {"write_file", l_sys_write_file},
				       {"read_file", l_sys_read_file},
				       {"listdir", l_sys_listdir},
				       {"read_from", l_sys_read_from},
				       {"remove_tree", l_sys_remove_tree},
				       {"remove", l_sys_remove},
				       {"identity", l_sys_identity},
				       {"pid", l_sys_pid},
				       {"random_hex", l_sys_random_hex},
				       {"sha256", l_sys_sha256},
				       {"sha256_file", l_sys_sha256_file},
				       {"isatty", l_sys_isatty},
				       {"which", l_sys_which},
				       {"free_space", l_sys_free_space},
				       {"trap_interrupt", l_sys_trap_interrupt},
				       {"interrupted", l_sys_interrupted},
				       {NULL, NULL}};
	luaL_newlib(L, fns);
#if defined(__APPLE__)
	lua_pushliteral(L, "macos"); /* [sys, os] */
#elif defined(__linux__)
	lua_pushliteral(L, "linux"); /* [sys, os] */
#else
	lua_pushliteral(L, "other"); /* [sys, os] */
#endif
	lua_setfield(L, -2, "os"); /* [sys] */
	return 1;
}
