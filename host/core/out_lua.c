/* _navette.out: the Lua face of the output module. The CLI (Lua) prints
 * only through these functions: out.write (escaped on stderr, see
 * output.h), out.raw for navette's own control sequences, and out.escape
 * for untrusted text bound for a terminal on stdout. */
#include <lauxlib.h>
#include <lua.h>
#include <string.h>
#include <unistd.h>

#include "core/output.h"
#include "core/runtime.h"

static int stream_arg(lua_State *L, int idx)
{
	static const char *const names[] = {"stdout", "stderr", NULL};
	return luaL_checkoption(L, idx, "stdout", names) == 0 ? NV_OUT_STDOUT
							      : NV_OUT_STDERR;
}

/* Writes the arguments from 2 on to the stream named by argument 1. */
static int write_args(lua_State *L,
		      void (*write)(int stream, const char *s, size_t len))
{
	int stream = stream_arg(L, 1);
	int n = lua_gettop(L);

	for (int i = 2; i <= n; i++) {
		size_t len;
		const char *s = luaL_checklstring(L, i, &len);
		write(stream, s, len);
	}
	return 0;
}

/* out.write(stream, s...) */
static int l_out_write(lua_State *L)
{
	return write_args(L, nv_out_write);
}

/* out.raw(stream, s...): navette's own control sequences (styles, line
 * erasing), which out.write would show escaped on stderr. */
static int l_out_raw(lua_State *L)
{
	return write_args(L, nv_out_write_raw);
}

void nv_out_add_escaped(luaL_Buffer *b, const char *s, size_t len)
{
	size_t i = 0, start = 0;

	while (i < len) {
		char esc[NV_OUT_ESCAPE_MAX];
		size_t shown, n = nv_out_term_char(s + i, len - i, esc, &shown);

		if (shown) {
			luaL_addlstring(b, s + start, i - start);
			luaL_addlstring(b, esc, shown);
			start = i + n;
		}
		i += n;
	}
	luaL_addlstring(b, s + start, len - start);
}

/* out.escape(s) -> s with every character a terminal acts on shown as a
 * visible escape: for text from a job or a recipe bound for a terminal
 * on stdout (which out.write leaves as it is). */
static int l_out_escape(lua_State *L)
{
	size_t len;
	const char *s = luaL_checklstring(L, 1, &len);
	luaL_Buffer b;

	luaL_buffinit(L, &b);
	nv_out_add_escaped(&b, s, len);
	luaL_pushresult(&b);
	return 1;
}

static int l_out_color(lua_State *L)
{
	lua_pushboolean(L, nv_out_color(stream_arg(L, 1)));
	return 1;
}

/* out.tty(stream): whether stream is a terminal; out.tty("stdin"):
 * whether a person can answer a question (stdin and stdout are both
 * terminals, and output is not captured by an embedder). */
static int l_out_tty(lua_State *L)
{
	const char *name = lua_tostring(L, 1);

	if (name && strcmp(name, "stdin") == 0) {
		lua_pushboolean(L, nv_out_tty(NV_OUT_STDOUT) &&
					   isatty(STDIN_FILENO));
		return 1;
	}
	lua_pushboolean(L, nv_out_tty(stream_arg(L, 1)));
	return 1;
}

int luaopen_navette_out(lua_State *L)
{
	static const luaL_Reg fns[] = {
		{"write", l_out_write},   {"raw", l_out_raw},
		{"escape", l_out_escape}, {"color", l_out_color},
		{"tty", l_out_tty},       {NULL, NULL}};
	luaL_newlib(L, fns);
	return 1;
}
