/* Error slot shared by every pure-C module of libnavette.
 *
 * Functions return 0 on success or a negative NV_E* code; the message and a
 * hint (what the user should check next) are kept in an nv_err the caller
 * owns. No allocation: the strings are bounded arrays, so an error can be
 * reported even when memory ran out. */
#ifndef NV_ERR_H
#define NV_ERR_H

#include <stddef.h>

enum nv_code {
	NV_OK = 0,
	NV_EINVAL = -1,    /* bad argument or malformed input (usage/recipe) */
	NV_ENOTFOUND = -2, /* object, commit, job... does not exist */
	NV_EREFUSED = -3, /* a precondition or policy said no (dirty tree...) */
	NV_EIO = -4,      /* local filesystem failure */
	NV_EBACKEND = -5, /* a service or backend unreachable or refusing */
	NV_ENOMEM = -6,   /* allocation failed or a size cap was hit */
	NV_EFAILED = -7,  /* the job or check ran and said no */
	NV_ENOTRUN = -8   /* would execute a program where none may run (plan,
			     read-only commands): not done */
};

#define NV_ERR_MESSAGE_MAX 1024
#define NV_ERR_HINT_MAX    512

typedef struct nv_err {
	int code;
	char message[NV_ERR_MESSAGE_MAX];
	char hint[NV_ERR_HINT_MAX];
} nv_err;

/* Clears the slot (code 0, empty strings). */
void nv_err_clear(nv_err *err);

/* Fills the slot and returns code, so callers can write
 * `return nv_err_set(err, NV_EINVAL, "check the key", "bad key '%s'", k);`.
 * err may be NULL. hint may be NULL. */
int nv_err_set(nv_err *err, int code, const char *hint, const char *fmt, ...)
#if defined(__GNUC__)
	__attribute__((format(printf, 4, 5)))
#endif
	;

/* Same, appending ": strerror(errnum)" to the message. */
int nv_err_set_errno(nv_err *err, int code, int errnum, const char *hint,
		     const char *fmt, ...)
#if defined(__GNUC__)
	__attribute__((format(printf, 5, 6)))
#endif
	;

/* A value that fails its format check: NV_EINVAL with the message
 * "bad WHAT 'VALUE'" (VALUE cut at max bytes, NULL shown as ''), the one
 * shape every such check reports in. */
int nv_err_bad(nv_err *err, const char *hint, const char *what,
	       const char *value, int max);

/* A key that is none of known (a NULL-ended list): NV_EINVAL with the
 * message "unknown WHAT 'KEY'; known: see the hint" and the known keys,
 * comma-separated, as the hint. */
int nv_err_unknown_key(nv_err *err, const char *what, const char *key,
		       const char *const *known);

/* Stable lowercase name of a code ("invalid", "not_found", "refused"...). */
const char *nv_err_code_name(int code);

/* The CLI exit status that a code maps to (lua/navette/doc/cli.md: 0..4). */
int nv_err_exit_status(int code);

#endif
