/* File names on case-insensitive, normalising volumes (APFS and HFS+ by
 * default, SMB and other Windows shares mounted on Linux). Two names that
 * such a volume takes for one file must never be taken for two objects by
 * navette: this module folds names so that they can be compared the way
 * the volume compares them, and detects whether a folder's volume folds.
 *
 * What the fold covers: ASCII letters without regard to case; the Latin-1
 * Supplement and Latin Extended-A letters (U+00C0..U+017F) without regard
 * to case and to NFC/NFD form (a precomposed letter equals its base letter
 * followed by its combining mark, U+0300..U+036F). Not covered: other
 * scripts' case (Greek, Cyrillic...), the reordering of two or more
 * combining marks after one letter, and compatibility forms; such names
 * are compared byte for byte after the fold. Pure C: no Lua here. */
#ifndef NV_FSNAME_H
#define NV_FSNAME_H

#include <stddef.h>

/* The environment switch that forces the case-insensitive rules ("1") or
 * switches the detection off ("0"); tests use it on Linux. */
#define NV_FSNAME_ENV "NAVETTE_FS_CASE_INSENSITIVE"

/* Bytes a fold of len bytes may take, its NUL included: a two-byte letter
 * becomes at most three bytes (letter + mark). */
#define NV_FSNAME_FOLD_CAP(len) ((len) + (len) / 2 + 1)

/* Longest name nv_fsname_equal folds (longer ones: compared as bytes). */
#define NV_FSNAME_MAX 1024

enum nv_fsname_volume {
	NV_FSNAME_SENSITIVE = 0, /* names are compared as bytes */
	NV_FSNAME_FOLDING = 1,   /* detected: the volume folds case */
	NV_FSNAME_FORCED = 2,    /* NAVETTE_FS_CASE_INSENSITIVE=1 */
};

/* Writes the fold of name[0..len) to out (NUL-terminated). Returns its
 * length, or (size_t)-1 when cap is too small (NV_FSNAME_FOLD_CAP(len)
 * always suffices). Invalid UTF-8 is copied unchanged. */
size_t nv_fsname_fold(const char *name, size_t len, char *out, size_t cap);

/* 1 when a folding volume takes a and b for the same name. */
int nv_fsname_equal(const char *a, size_t alen, const char *b, size_t blen);

/* 1 when name[0..len) names reserved (an ASCII lower-case name) on some
 * volume: equal after the fold, trailing dots and spaces ignored (Windows
 * shares drop them). Used on every system, whatever its volumes. */
int nv_fsname_is_reserved(const char *name, size_t len, const char *reserved);

/* Whether the volume of the folder open on dir_fd folds names: the
 * environment switch first; on macOS pathconf(_PC_CASE_SENSITIVE); else a
 * probe (a temp file with a lower-case name is created in the folder and
 * looked up by its upper-case name). A folder we cannot write to is taken
 * as NV_FSNAME_SENSITIVE. */
enum nv_fsname_volume nv_fsname_volume_of(int dir_fd);

#endif
