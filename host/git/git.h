/* navette's view of the user's git repository, in pure C over libgit2.
 *
 * The code flow starts here: a recipe names a commit, and the runtime needs
 * that commit's identity (resolve, commit info), whether the working tree
 * matches it (status), whether the node can fetch it (on_remote, remote_url),
 * its files (export, for workspaces and code layers) and a fingerprint of its
 * dependency lock files (to decide when an image must be rebuilt). Nothing
 * here calls Lua; git_lua.c is the binding.
 *
 * Conventions: every function returns 0 or a negative NV_E* code and fills
 * the caller's nv_err (message + hint); libgit2's own message is appended to
 * ours. Out-parameters come first. Object ids cross this API as 40-character
 * lowercase hex strings (SHA-1 repositories only). */
#ifndef NV_GIT_H
#define NV_GIT_H

#include <stddef.h>
#include <stdint.h>

#include "core/nv_err.h"

#define NV_GIT_OID_HEX_LEN  40
#define NV_GIT_SHORT_ID_LEN 7
#define NV_GIT_SUMMARY_MAX  256 /* bytes, NUL included; cut on UTF-8 bounds */
#define NV_GIT_NAME_MAX     128
#define NV_GIT_EMAIL_MAX    128
#define NV_GIT_SHA256_HEX   64
/* Trees nested deeper than this are refused by export (bounds the recursion
 * and the directory descriptors held open at once). */
#define NV_GIT_EXPORT_MAX_DEPTH 128
/* The longest path export writes, below or including dest_dir: a project
 * limit, not PATH_MAX (1024 on macOS, 4096 on Linux), so that a commit
 * exports the same on both. Every write is openat-relative, so no system
 * call sees a path that long. */
#define NV_GIT_EXPORT_PATH_MAX 4096

typedef struct nv_git_repo nv_git_repo;

/* Opens the repository that contains path (a file or a folder), walking up
 * the parents like git does (without crossing a filesystem boundary).
 * Not in a repository: NV_ENOTFOUND. Bare repositories and repositories
 * owned by another user: NV_EREFUSED. On success *out is owned by the caller
 * and released with nv_git_free(). Initialises libgit2 (refcounted; the
 * matching shutdown happens in nv_git_free). */
int nv_git_open(nv_git_repo **out, const char *path, nv_err *err);

/* Opens the bare repository at gitdir exactly (no discovery): a cache of
 * shared libraries (cache.h). nv_git_workdir() then gives gitdir. Same
 * ownership and libgit2 initialisation as nv_git_open(). */
int nv_git_open_bare(nv_git_repo **out, const char *gitdir, nv_err *err);

/* For the other files of host/git: sets err (code, an NV_E* code) from a
 * failed libgit2 call, message followed by libgit2's own. Returns code. */
int nv_git_fail(nv_err *err, int code, const char *hint, const char *message);

/* Releases repo and everything it holds. NULL is accepted. */
void nv_git_free(nv_git_repo *repo);

/* Absolute working directory, no trailing slash ("/" stays "/"). Owned by
 * repo, valid until nv_git_free(). */
const char *nv_git_workdir(const nv_git_repo *repo);

/* Resolves "HEAD", a branch, a tag (peeled to its commit), a full or short
 * sha, or any git revision expression to a commit id. Unknown ref:
 * NV_ENOTFOUND; ambiguous short sha: NV_EINVAL; HEAD with no commit yet:
 * NV_EREFUSED. */
int nv_git_resolve(const nv_git_repo *repo, const char *ref,
		   char oid_hex[NV_GIT_OID_HEX_LEN + 1], nv_err *err);

typedef struct nv_git_commit {
	char id[NV_GIT_OID_HEX_LEN + 1];
	char short_id[NV_GIT_SHORT_ID_LEN + 1];
	int64_t time;      /* committer time, seconds since the epoch */
	int tz_offset_min; /* committer timezone, minutes east of UTC */
	char summary[NV_GIT_SUMMARY_MAX]; /* first paragraph, one line */
	char author_name[NV_GIT_NAME_MAX];
	char author_email[NV_GIT_EMAIL_MAX];
} nv_git_commit;

/* Fills *info for the commit oid_hex (40 hex). Strings are truncated to their
 * bounds, never mid UTF-8 sequence. */
int nv_git_commit_info(const nv_git_repo *repo, const char *oid_hex,
		       nv_git_commit *info, nv_err *err);

/* What the repository makes of a path of its work tree, relative to its
 * root ("data/x.bin"; the file need not exist): NV_GIT_PATH_TRACKED when
 * the index holds it (even where an ignore rule matches it too),
 * NV_GIT_PATH_IGNORED when an ignore rule (.gitignore, info/exclude,
 * core.excludesFile) matches it or a folder above it, else
 * NV_GIT_PATH_UNTRACKED. */
enum nv_git_path_state {
	NV_GIT_PATH_TRACKED,
	NV_GIT_PATH_IGNORED,
	NV_GIT_PATH_UNTRACKED
};
int nv_git_path_state(const nv_git_repo *repo, const char *rel,
		      enum nv_git_path_state *state, nv_err *err);

/* Called once per dirty entry. kind is one of "modified" (work tree differs
 * from the index), "staged" (index differs from HEAD, work tree does not),
 * "deleted", "renamed" (path is the new name), "typechange", "untracked"
 * (each file, untracked folders are walked) and "conflicted". When an entry
 * has several changes the first of conflicted, deleted, renamed, typechange,
 * modified, staged, untracked wins. A submodule whose checkout differs or is
 * dirty is reported "modified". Ignored files are never reported. The
 * strings are valid only during the call. Return 0 to go on; any other value
 * stops the walk and nv_git_status() returns it. */
typedef int (*nv_git_status_cb)(const char *path, const char *kind,
				void *payload);

/* Walks the dirty entries of the working tree and index. *count (may be
 * NULL) receives how many were reported; 0 means the tree is clean. */
int nv_git_status(const nv_git_repo *repo, nv_git_status_cb cb, void *payload,
		  size_t *count, nv_err *err);

/* *present = 1 when the commit oid_hex is one of the remote-tracking refs
 * refs/remotes/<remote>/... or an ancestor of one, else 0. remote NULL means
 * any remote. No network: this reflects the last fetch or push, not the
 * server now. Unknown remote name: NV_ENOTFOUND naming the configured ones. */
int nv_git_on_remote(const nv_git_repo *repo, const char *remote,
		     const char *oid_hex, int *present, nv_err *err);

/* The value of a git configuration variable ("user.email") as git reads
 * it: the repository's file over the global (GIT_CONFIG_GLOBAL, else
 * ~/.gitconfig), XDG and system (unless GIT_CONFIG_NOSYSTEM) ones, each
 * file's includes followed by libgit2 (conditional ones against repo); with
 * repo NULL, the global, XDG and system ones only. Copies it into buf
 * (at most cap bytes with the NUL); NV_ENOTFOUND when it is not set. */
int nv_git_config_string(const nv_git_repo *repo, const char *name, char *buf,
			 size_t cap, nv_err *err);

/* Copies the fetch URL of remote name (NULL = "origin") into buf with any
 * user:password@ removed, because URLs end up in run records. scp-like
 * addresses (git@host:path) are kept as they are: the user there is not a
 * secret. The URL is the configured remote.<name>.url, without
 * url.*.insteadOf rewriting. buf too small: NV_ENOMEM. Unknown remote:
 * NV_ENOTFOUND naming the configured ones. */
int nv_git_remote_url(const nv_git_repo *repo, const char *name, char *buf,
		      size_t cap, nv_err *err);

/* Removes the userinfo of a "scheme://user:pass@host/..." URL, in place. */
void nv_git_url_strip_userinfo(char *url);

typedef struct nv_git_export_stats {
	uint64_t files;      /* regular files written */
	uint64_t dirs;       /* folders created below dest_dir */
	uint64_t symlinks;   /* symbolic links created (never followed) */
	uint64_t submodules; /* gitlinks skipped: their content is elsewhere */
	uint64_t bytes;      /* bytes of regular files written */
} nv_git_export_stats;

/* Writes the tree of commit oid_hex into dest_dir, which must not exist or
 * be an empty folder (missing parents are created). Blob bytes are written
 * as stored: no smudge filters, no line-ending conversion, no LFS. Files get
 * mode 0644 or 0755 from git's mode, symlinks are created as symlinks with
 * their target verbatim. Every write goes through descriptors of folders
 * this call created (openat/mkdirat, O_EXCL|O_NOFOLLOW), so a symlink entry
 * can never redirect a later write outside dest_dir. Entries named "", ".",
 * "..", ".git" (any case) or containing '/' are refused. On a volume that
 * folds names (core/fsname.h: detected in dest_dir, or
 * NAVETTE_FS_CASE_INSENSITIVE=1), a commit whose folders hold two names
 * that differ only in case or NFC/NFD form ("README" and "readme") is
 * refused before anything is written, NV_EREFUSED listing the colliding
 * paths. Paths up to NV_GIT_EXPORT_PATH_MAX bytes work on every system,
 * dest_dir included. Loose objects are
 * streamed in bounded memory; packed blobs are read whole into memory.
 * On failure what was written is removed (best effort: dest_dir itself is
 * removed if this call created it; created parents are left) and the error
 * is returned. stats may be NULL. */
int nv_git_export(const nv_git_repo *repo, const char *oid_hex,
		  const char *dest_dir, nv_git_export_stats *stats,
		  nv_err *err);

/* sha256, as 64 hex, over the dependency lock files at the root of the
 * commit's tree (package-lock.json, yarn.lock, pnpm-lock.yaml, poetry.lock,
 * uv.lock, Pipfile.lock, requirements*.txt, Cargo.lock, go.sum,
 * Gemfile.lock, conda-lock.yml, environment.yml...): the input is one line
 * "name\0<sha256 hex of content>\n" per file present, sorted by name
 * bytewise. No lock file: the hash of empty input. */
int nv_git_lockfile_hash(const nv_git_repo *repo, const char *oid_hex,
			 char hex[NV_GIT_SHA256_HEX + 1], nv_err *err);

/* 1 when name (a file name at the root of a tree) is a known lock file. */
int nv_git_is_lockfile(const char *name);

/* The id (40 hex) of what commit oid_hex holds at path ('/'-separated
 * names, relative to the repository's root; "" or "." the root tree), and
 * its kind: 't' a folder, 'b' a file or link, 'c' a submodule. A path the
 * commit does not hold: NV_ENOTFOUND; one that is not a plain relative
 * path (absolute, "..", empty names, over 4096 bytes): NV_EINVAL. */
int nv_git_path_id(const nv_git_repo *repo, const char *oid_hex,
		   const char *path, char id[NV_GIT_OID_HEX_LEN + 1],
		   char *kind, nv_err *err);

/* Each regular file of commit oid_hex's tree, in any folder, whose name is
 * a lock file (nv_git_is_lockfile), to cb(path, blob id, payload) in the
 * tree's order (folders first walked, names bytewise). At most
 * NV_GIT_LOCKFILES_MAX (more: NV_EREFUSED). cb returning non-zero stops
 * the walk with that status. */
#define NV_GIT_LOCKFILES_MAX 1000
typedef int (*nv_git_lockfile_cb)(const char *path, const char *blob_id,
				  void *payload);
int nv_git_lockfiles(const nv_git_repo *repo, const char *oid_hex,
		     nv_git_lockfile_cb cb, void *payload, nv_err *err);

/* 1 when a tree entry name is one safe component: not "", ".", "..",
 * ".git" (any case), and without '/'. export and the archive writer refuse
 * the others. */
int nv_git_entry_name_ok(const char *name);

/* The libgit2 repository behind repo, for the other files of host/git
 * (archive.c) that walk objects themselves. Owned by repo. */
struct git_repository *nv_git_libgit2(const nv_git_repo *repo);

/* The size of the regular file at path (relative to the repository's
 * root) in commit oid_hex, and its bytes (cap: the size nv_git_file_size
 * gave). A path the commit does not hold: NV_ENOTFOUND. */
int nv_git_file_size(const nv_git_repo *repo, const char *oid_hex,
		     const char *path, size_t *size, nv_err *err);
int nv_git_read_file(const nv_git_repo *repo, const char *oid_hex,
		     const char *path, char *buf, size_t cap, size_t *len,
		     nv_err *err);

#endif
