/* A commit's tree as a deterministic tar stream, in pure C over libgit2 and
 * a deflate engine (host/git/pgzip.h): the bytes of a job workspace and of
 * an image code layer.
 *
 * The same commit gives the same bytes on every machine, because nothing of
 * the machine goes in: entries are sorted bytewise by their name in the
 * archive (folders end with '/', so a folder comes right before what it
 * holds), every mtime is the commit's committer time, uid/gid are 0,
 * uname/gname empty, modes come from git (0644 or 0755 files, 0755 folders,
 * 0777 symlinks). The format is POSIX ustar; a name or link target over 100
 * bytes, or a size over 8 GiB, gets a pax extended header ('x') before its
 * entry. The archive ends with two zero blocks and no further padding.
 *
 * What the tree may hold: regular and executable files, folders, symlinks.
 * A symlink is kept as a symlink and its target checked, never followed on
 * disk: an absolute target, or one that leaves the tree once resolved
 * (".." components and in-tree symlinks it passes through, followed up to
 * NV_ARCHIVE_LINK_HOPS), is refused with the path named. Gitlinks
 * (submodules) are skipped and counted: their content is in another
 * repository, as for nv_git_export. Entry names are checked like export's
 * (nv_git_entry_name_ok). No device, fifo or hard-link entries are ever
 * written.
 *
 * Optional gzip is deterministic too, and runs on several cores
 * (host/git/pgzip.h): deflate at NV_ARCHIVE_GZIP_LEVEL in blocks of
 * NV_PGZIP_BLOCK by the engine the build has (nv_pgzip_engine: libdeflate,
 * a gzip member per block, or zlib, one member), gzip headers with
 * mtime 0, OS byte 3 (Unix) and no name; the bytes do not depend on the
 * number of threads. The stream's sha256 is computed while it is
 * written, both before compression (an OCI layer's diff_id) and after (its
 * blob digest), with both sizes. Determinism of the compressed bytes holds
 * for a given engine and version, on any CPU (ISA-L's igzip, faster
 * still, was left out for that: it picks its code per CPU and does not
 * promise the same bytes from each); the diff_id does not depend on it. */
#ifndef NV_ARCHIVE_H
#define NV_ARCHIVE_H

#include <stddef.h>
#include <stdint.h>

#include "core/nv_err.h"
#include "git/git.h"

/* Changing any of these changes every digest: they are part of the format.
 * Level 1: with zlib about 2.5 times faster than 6 for a layer 5-10%
 * larger on a mix of code and binaries, a good trade for a layer pushed
 * per commit; libdeflate's level 1 is about 2.5 times zlib's level 1 for
 * a layer slightly smaller. */
#define NV_ARCHIVE_GZIP_LEVEL  1
#define NV_ARCHIVE_GZIP_OS     3 /* Unix, whatever the machine */
#define NV_ARCHIVE_LINK_HOPS   40
#define NV_ARCHIVE_MAX_ENTRIES ((size_t)4 * 1024 * 1024)
#define NV_ARCHIVE_PATH_MAX    4096 /* bytes of a name in the archive */

/* Receives the archive's bytes (compressed when gzip is on), in order.
 * Returns 0, or non-zero to stop: the call then fails with NV_EIO. */
typedef int (*nv_archive_write_fn)(void *payload, const void *data, size_t len);

typedef struct nv_archive_opts {
	/* Folder the tree is written under, e.g. "workspace" (or
	 * "/workspace/": leading and trailing '/' are ignored); NULL or ""
	 * puts the tree's entries at the root. Each folder of the prefix is
	 * an entry of its own. Components "", ".", ".." are refused. */
	const char *prefix;
	int gzip;    /* 1: deterministic gzip, see above */
	int threads; /* for gzip; 0: the online cores (at most 8) */
} nv_archive_opts;

typedef struct nv_archive_result {
	char tar_sha256[65]; /* hex of the uncompressed tar (the diff_id) */
	uint64_t tar_size;
	char sha256[65]; /* hex of the bytes written (== tar_sha256 without
			    gzip) */
	uint64_t size;
	uint64_t files, dirs, symlinks, submodules; /* dirs: prefix's too */
	uint64_t file_bytes;                        /* content of files */
	int64_t mtime; /* the commit time used for every entry */
} nv_archive_result;

/* Writes the tree of commit oid_hex (40 hex) as described above, calling
 * write for the bytes. opts may be NULL (no prefix, no gzip); res may be
 * NULL. Errors: NV_EINVAL (bad id or prefix), NV_ENOTFOUND (unknown
 * commit), NV_EREFUSED (an unsafe name, a symlink target that is absolute
 * or leaves the tree, a tree deeper than NV_GIT_EXPORT_MAX_DEPTH, more than
 * NV_ARCHIVE_MAX_ENTRIES entries, a name over NV_ARCHIVE_PATH_MAX), NV_EIO
 * (a write callback or libgit2 read failed), NV_ENOMEM. Nothing is written
 * before the whole tree has been checked, so a refusal writes no byte. */
int nv_archive_commit(const nv_git_repo *repo, const char *oid_hex,
		      const nv_archive_opts *opts, nv_archive_write_fn write,
		      void *payload, nv_archive_result *res, nv_err *err);

/* The same into the file path (mode 0644), written to a temporary file in
 * the same folder and renamed into place only when complete. */
int nv_archive_commit_file(const nv_git_repo *repo, const char *oid_hex,
			   const nv_archive_opts *opts, const char *path,
			   nv_archive_result *res, nv_err *err);

#endif
