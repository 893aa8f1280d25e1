/* The export of a commit's tree into a new folder (nv_git_export, see
 * git.h), split from git.c. It writes only through folder descriptors it
 * created itself, which is what keeps a hostile tree (a symlink followed
 * by a path through it) from writing outside dest_dir; on a volume that
 * folds case or Unicode, names that would land on one file are refused
 * first. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <git2.h>

#include "core/buf.h"
#include "core/fsname.h"
#include "core/fsutil.h"
#include "git/git_internal.h"

struct export_ctx {
	git_repository *repo;
	git_odb *odb;
	nv_git_export_stats st;
	nv_err *err;
	/* relative path of the current folder (messages only: writes are
	 * openat-relative), and a symlink's target */
	char path[NV_GIT_EXPORT_PATH_MAX];
	size_t path_len;
	char target[NV_GIT_EXPORT_PATH_MAX];
};

static const char HINT_UNSAFE[] =
	"the commit holds a path that could escape the export folder; "
	"fix the tree or export another commit";

/* Whether a volume could take name for .git: in any case, with trailing
 * dots or blanks (SMB shares drop them), or with code points HFS+ ignores
 * (git's list: U+200C..U+200F, U+202A..U+202E, U+206A..U+206F, U+FEFF). */
static int git_name_is_dotgit(const char *name)
{
	const unsigned char *p = (const unsigned char *)name;
	char kept[64];
	size_t n = 0;

	while (*p) {
		if ((p[0] == 0xe2 && p[1] == 0x80 &&
		     ((p[2] >= 0x8c && p[2] <= 0x8f) ||
		      (p[2] >= 0xaa && p[2] <= 0xae))) ||
		    (p[0] == 0xe2 && p[1] == 0x81 && p[2] >= 0xaa &&
		     p[2] <= 0xaf) ||
		    (p[0] == 0xef && p[1] == 0xbb && p[2] == 0xbf)) {
			p += 3;
			continue;
		}
		if (n == sizeof(kept))
			return 0; /* far longer than .git and its dots */
		kept[n++] = (char)*p++;
	}
	return nv_fsname_is_reserved(kept, n, ".git");
}

/* A tree entry name must stay a single component inside its folder. */
int nv_git_entry_name_ok(const char *name)
{
	if (!name[0] || strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
		return 0;
	if (strchr(name, '/'))
		return 0;
	/* Case-insensitive filesystems (macOS) see .GIT as .git, SMB shares
	 * drop trailing dots and blanks (.git.), and HFS+ ignores some
	 * invisible code points (.g\u200cit), as git itself refuses. */
	if (git_name_is_dotgit(name))
		return 0;
	return 1;
}

static int export_io_fail(struct export_ctx *x, int errnum, const char *what,
			  const char *name)
{
	return nv_err_set_errno(x->err, NV_EIO, errnum,
				"check the destination's space and rights",
				"export: cannot %s '%s%s'", what, x->path,
				name);
}

/* Streams a loose object in bounded memory; packed objects (which libgit2
 * cannot stream) are read whole. */
static int export_blob_content(struct export_ctx *x, int fd, const git_oid *id,
			       const char *name)
{
	git_odb_stream *stream = NULL;
	git_object_t type;
	git_blob *blob = NULL;
	size_t len = 0, total = 0;
	char buf[32768];

	if (git_odb_open_rstream(&stream, &len, &type, x->odb, id) == 0) {
		int n = 0;

		if (type != GIT_OBJECT_BLOB) {
			git_odb_stream_free(stream);
			return nv_err_set(x->err, NV_EIO, NULL,
					  "export: '%s%s' is not a blob",
					  x->path, name);
		}
		while ((n = git_odb_stream_read(stream, buf, sizeof(buf))) >
		       0) {
			if (nv_write_all(fd, buf, (size_t)n) < 0) {
				int e = errno;
				git_odb_stream_free(stream);
				return export_io_fail(x, e, "write", name);
			}
			total += (size_t)n;
		}
		git_odb_stream_free(stream);
		if (n < 0 || total != len)
			return nv_git_failf(
				x->err, NV_EIO, NULL,
				"export: cannot read blob of '%s%s'", x->path,
				name);
		x->st.bytes += total;
		return 0;
	}
	git_error_clear();
	if (git_blob_lookup(&blob, x->repo, id) < 0)
		return nv_git_failf(x->err, NV_EIO, NULL,
				    "export: cannot read blob of '%s%s'",
				    x->path, name);
	len = (size_t)git_blob_rawsize(blob);
	if (nv_write_all(fd, git_blob_rawcontent(blob), len) < 0) {
		int e = errno;
		git_blob_free(blob);
		return export_io_fail(x, e, "write", name);
	}
	git_blob_free(blob);
	x->st.bytes += len;
	return 0;
}

static int export_file(struct export_ctx *x, int dirfd, const char *name,
		       const git_oid *id, mode_t mode)
{
	int fd, rc;

	/* O_EXCL|O_NOFOLLOW: never reuse or follow what is already there. */
	fd = openat(dirfd, name,
		    O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
	if (fd < 0)
		return export_io_fail(x, errno, "create", name);
	if (fchmod(fd, mode) < 0) { /* the umask must not decide the mode */
		rc = export_io_fail(x, errno, "set the mode of", name);
		close(fd);
		return rc;
	}
	rc = export_blob_content(x, fd, id, name);
	if (close(fd) < 0 && !rc)
		rc = export_io_fail(x, errno, "write", name);
	if (!rc)
		x->st.files++;
	return rc;
}

static int export_symlink(struct export_ctx *x, int dirfd, const char *name,
			  const git_oid *id)
{
	char *target = x->target;
	git_blob *blob = NULL;
	size_t len;

	if (git_blob_lookup(&blob, x->repo, id) < 0)
		return nv_git_failf(x->err, NV_EIO, NULL,
				    "export: cannot read link '%s%s'", x->path,
				    name);
	len = (size_t)git_blob_rawsize(blob);
	if (len == 0 || len >= sizeof(x->target) ||
	    memchr(git_blob_rawcontent(blob), '\0', len)) {
		git_blob_free(blob);
		return nv_err_set(x->err, NV_EREFUSED, HINT_UNSAFE,
				  "export: symlink '%s%s' has an invalid "
				  "target",
				  x->path, name);
	}
	memcpy(target, git_blob_rawcontent(blob), len);
	target[len] = '\0';
	git_blob_free(blob);
	/* The target is stored verbatim and never opened by us. */
	if (symlinkat(target, dirfd, name) < 0)
		return export_io_fail(x, errno, "create symlink", name);
	x->st.symlinks++;
	return 0;
}

static int export_tree(struct export_ctx *x, const git_tree *tree, int dirfd,
		       int depth);

static int export_subtree(struct export_ctx *x, int dirfd, const char *name,
			  const git_oid *id, int depth)
{
	git_tree *sub = NULL;
	size_t saved = x->path_len, nlen = strlen(name);
	int fd, rc;

	if (depth >= NV_GIT_EXPORT_MAX_DEPTH)
		return nv_err_set(x->err, NV_EREFUSED, HINT_UNSAFE,
				  "export: '%s%s' is nested deeper than %d "
				  "folders",
				  x->path, name, NV_GIT_EXPORT_MAX_DEPTH);
	if (saved + nlen + 2 > sizeof(x->path))
		return nv_err_set(x->err, NV_EREFUSED, HINT_UNSAFE,
				  "export: path too long under '%s'", x->path);
	/* mkdirat fails on anything already there, symlink included, and
	 * O_NOFOLLOW|O_DIRECTORY makes sure we opened the folder we made. */
	if (mkdirat(dirfd, name, 0755) < 0)
		return export_io_fail(x, errno, "create folder", name);
	fd = openat(dirfd, name,
		    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return export_io_fail(x, errno, "open folder", name);
	if (fchmod(fd, 0755) < 0) {
		rc = export_io_fail(x, errno, "set the mode of", name);
		close(fd);
		return rc;
	}
	x->st.dirs++;
	if (git_tree_lookup(&sub, x->repo, id) < 0) {
		close(fd);
		return nv_git_failf(x->err, NV_EIO, NULL,
				    "export: cannot read tree '%s%s'", x->path,
				    name);
	}
	memcpy(x->path + saved, name, nlen);
	x->path[saved + nlen] = '/';
	x->path[saved + nlen + 1] = '\0';
	x->path_len = saved + nlen + 1;
	rc = export_tree(x, sub, fd, depth + 1);
	x->path[saved] = '\0';
	x->path_len = saved;
	git_tree_free(sub);
	close(fd);
	return rc;
}

static int export_tree(struct export_ctx *x, const git_tree *tree, int dirfd,
		       int depth)
{
	size_t i, n = git_tree_entrycount(tree);
	int rc = 0;

	for (i = 0; i < n && !rc; i++) {
		const git_tree_entry *e = git_tree_entry_byindex(tree, i);
		const char *name = git_tree_entry_name(e);
		const git_oid *id = git_tree_entry_id(e);

		if (!nv_git_entry_name_ok(name))
			return nv_err_set(x->err, NV_EREFUSED, HINT_UNSAFE,
					  "export: unsafe entry '%s%.200s'",
					  x->path, name);
		switch (git_tree_entry_filemode(e)) {
		case GIT_FILEMODE_TREE:
			rc = export_subtree(x, dirfd, name, id, depth);
			break;
		case GIT_FILEMODE_BLOB:
			rc = export_file(x, dirfd, name, id, 0644);
			break;
		case GIT_FILEMODE_BLOB_EXECUTABLE:
			rc = export_file(x, dirfd, name, id, 0755);
			break;
		case GIT_FILEMODE_LINK:
			rc = export_symlink(x, dirfd, name, id);
			break;
		case GIT_FILEMODE_COMMIT:
			/* A gitlink: the content lives in another repo. */
			x->st.submodules++;
			break;
		default:
			return nv_err_set(x->err, NV_EREFUSED, HINT_UNSAFE,
					  "export: '%s%s' has an unknown mode",
					  x->path, name);
		}
	}
	return rc;
}

/* A stream over the folder open on dirfd, which stays open and ours (the
 * stream reads a duplicate, from its first entry); NULL on failure. */
static DIR *open_dir_stream(int dirfd)
{
	int fd = dup(dirfd);
	DIR *dir = fd >= 0 ? fdopendir(fd) : NULL;

	if (!dir && fd >= 0)
		close(fd);
	if (dir)
		rewinddir(dir);
	return dir;
}

/* Removes everything below dirfd without following symlinks. Best effort:
 * errors are ignored, the export's own error is what the caller reports. */
static void remove_below(int dirfd, int depth)
{
	int removed;

	if (depth > NV_GIT_EXPORT_MAX_DEPTH + 1)
		return;
	do {
		struct dirent *d;
		DIR *dir = open_dir_stream(dirfd);

		removed = 0;
		if (!dir)
			return;
		while ((d = readdir(dir)) != NULL) {
			struct stat st;

			if (strcmp(d->d_name, ".") == 0 ||
			    strcmp(d->d_name, "..") == 0)
				continue;
			if (fstatat(dirfd, d->d_name, &st,
				    AT_SYMLINK_NOFOLLOW) < 0)
				continue;
			if (S_ISDIR(st.st_mode)) {
				int sub =
					openat(dirfd, d->d_name,
					       O_RDONLY | O_DIRECTORY |
						       O_NOFOLLOW | O_CLOEXEC);
				if (sub >= 0) {
					remove_below(sub, depth + 1);
					close(sub);
				}
				if (unlinkat(dirfd, d->d_name, AT_REMOVEDIR) ==
				    0)
					removed = 1;
			} else if (unlinkat(dirfd, d->d_name, 0) == 0) {
				removed = 1;
			}
		}
		closedir(dir);
		/* Removing while reading may hide entries: go again. */
	} while (removed);
}

/* Opens dest_dir, made with its missing parents when absent, one segment
 * at a time with openat: its length is then bounded by the project's limit
 * and not by the system's PATH_MAX. dest_dir is the caller's and trusted,
 * so links on the way are followed. *fd_out: the folder; *parent_out and
 * leaf: where it sits, to remove it again; *created: made by this call. */
static int open_dest(const char *path, int *fd_out, int *parent_out,
		     char leaf[NAME_MAX + 1], int *created, nv_err *err)
{
	size_t len = strlen(path), i = 0, end;
	int cur, next;

	*fd_out = *parent_out = -1;
	*created = 0;
	while (len > 1 && path[len - 1] == '/')
		len--;
	if (len >= NV_GIT_EXPORT_PATH_MAX)
		return nv_err_set(err, NV_EINVAL, NULL,
				  "export folder path longer than %d bytes",
				  NV_GIT_EXPORT_PATH_MAX - 1);
	cur = open(path[0] == '/' ? "/" : ".",
		   O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (cur < 0)
		return nv_err_set_errno(err, NV_EIO, errno, NULL,
					"cannot open export folder '%s'", path);
	while (i < len) {
		while (i < len && path[i] == '/')
			i++;
		end = i + strcspn(path + i, "/");
		if (end > len)
			end = len;
		if (end - i > NAME_MAX) {
			close(cur);
			return nv_err_set(err, NV_EINVAL, NULL,
					  "export folder '%.200s': a segment "
					  "is longer than %d bytes",
					  path, NAME_MAX);
		}
		memcpy(leaf, path + i, end - i);
		leaf[end - i] = '\0';
		if (end == len &&
		    (strcmp(leaf, ".") == 0 || strcmp(leaf, "..") == 0)) {
			/* an existing folder named by the path itself */
			*fd_out = openat(cur, leaf,
					 O_RDONLY | O_DIRECTORY | O_CLOEXEC);
			close(cur);
			if (*fd_out < 0)
				return nv_err_set_errno(
					err, NV_EIO, errno, NULL,
					"cannot open export folder '%s'", path);
			leaf[0] = '\0';
			return 0;
		}
		next = openat(cur, leaf, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (next < 0 && errno == ENOENT) {
			if (mkdirat(cur, leaf, 0755) == 0)
				*created = end == len;
			else if (errno != EEXIST)
				goto fail;
			next = openat(cur, leaf,
				      O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		}
		if (next < 0)
			goto fail;
		if (end == len) {
			*parent_out = cur;
			*fd_out = next;
			return 0;
		}
		close(cur);
		cur = next;
		i = end;
	}
	/* "/" itself */
	*fd_out = cur;
	leaf[0] = '\0';
	return 0;
fail : {
	int e = errno;
	close(cur);
	if (e == ENOTDIR)
		return nv_err_set(err, NV_EREFUSED,
				  "choose a folder path for the export",
				  "export destination '%s' is not a "
				  "folder",
				  path);
	return nv_err_set_errno(err, NV_EIO, e, NULL,
				"cannot create export folder '%s'", path);
}
}

/* ---- names a folding volume takes for one ---- */

#define COLLISIONS_SHOWN 8

struct folded_name {
	char *fold;
	const char *name;
};

static int folded_cmp(const void *a, const void *b)
{
	return strcmp(((const struct folded_name *)a)->fold,
		      ((const struct folded_name *)b)->fold);
}

/* Lists, into report, the pairs of names of tree (and of its subtrees)
 * that differ only in case or NFC/NFD form; *count gets their number.
 * Reads trees only, writes nothing. */
static int find_collisions(struct export_ctx *x, const git_tree *tree,
			   int depth, nv_buf *report, unsigned *count)
{
	size_t i, n = git_tree_entrycount(tree), used = 0;
	struct folded_name *names = calloc(n ? n : 1, sizeof(*names));
	int rc = 0;

	if (!names)
		return nv_err_set(x->err, NV_ENOMEM, NULL, "out of memory");
	for (i = 0; i < n; i++) {
		const git_tree_entry *e = git_tree_entry_byindex(tree, i);
		const char *name = git_tree_entry_name(e);
		size_t len = strlen(name), cap = NV_FSNAME_FOLD_CAP(len);

		if (git_tree_entry_filemode(e) == GIT_FILEMODE_COMMIT)
			continue; /* a gitlink writes nothing */
		names[used].fold = malloc(cap);
		if (!names[used].fold) {
			rc = nv_err_set(x->err, NV_ENOMEM, NULL,
					"out of memory");
			goto out;
		}
		nv_fsname_fold(name, len, names[used].fold, cap);
		names[used++].name = name;
	}
	if (used > 1)
		qsort(names, used, sizeof(*names), folded_cmp);
	for (i = 1; i < used; i++) {
		if (strcmp(names[i - 1].fold, names[i].fold) != 0)
			continue;
		if (++*count <= COLLISIONS_SHOWN)
			nv_buf_printf(report, "\n  '%s%s' and '%s%s'", x->path,
				      names[i - 1].name, x->path,
				      names[i].name);
	}
	for (i = 0; i < n && !rc && depth < NV_GIT_EXPORT_MAX_DEPTH; i++) {
		const git_tree_entry *e = git_tree_entry_byindex(tree, i);
		const char *name = git_tree_entry_name(e);
		size_t saved = x->path_len, nlen = strlen(name);
		git_tree *sub = NULL;

		if (git_tree_entry_filemode(e) != GIT_FILEMODE_TREE ||
		    saved + nlen + 2 > sizeof(x->path))
			continue; /* too long: the export refuses it */
		if (git_tree_lookup(&sub, x->repo, git_tree_entry_id(e)) < 0) {
			rc = nv_git_failf(x->err, NV_EIO, NULL,
					  "export: cannot read tree '%s%s'",
					  x->path, name);
			break;
		}
		memcpy(x->path + saved, name, nlen);
		x->path[saved + nlen] = '/';
		x->path[saved + nlen + 1] = '\0';
		x->path_len = saved + nlen + 1;
		rc = find_collisions(x, sub, depth + 1, report, count);
		x->path[saved] = '\0';
		x->path_len = saved;
		git_tree_free(sub);
	}
out:
	for (i = 0; i < used; i++)
		free(names[i].fold);
	free(names);
	return rc;
}

/* On a volume that folds names, two names of one folder that differ only
 * in case would meet as one file ("File exists" halfway through): refused
 * before anything is written, listing them. */
static int refuse_collisions(struct export_ctx *x, const git_tree *tree,
			     const char *oid_hex)
{
	unsigned count = 0;
	nv_buf report;
	int rc;

	nv_buf_init(&report, 4096);
	rc = find_collisions(x, tree, 0, &report, &count);
	if (!rc && count)
		rc = nv_err_set(
			x->err, NV_EREFUSED,
			"this volume does not tell case (or accents' NFC/NFD "
			"form) apart: rename one name of each pair in the "
			"repository (git mv), or export to a case-sensitive "
			"volume",
			"export: commit %.12s holds %u pair%s of names that "
			"this volume takes for one:%s%s",
			oid_hex, count, count == 1 ? "" : "s",
			report.data ? report.data : "",
			count > COLLISIONS_SHOWN ? "\n  ..." : "");
	nv_buf_free(&report);
	return rc;
}

/* 1 when the folder open on fd has no entry, 0 when it has, -1 on error. */
static int dir_is_empty(int fd)
{
	struct dirent *d;
	DIR *dir = open_dir_stream(fd);
	int empty = 1;

	if (!dir)
		return -1;
	while ((d = readdir(dir)) != NULL) {
		if (strcmp(d->d_name, ".") != 0 &&
		    strcmp(d->d_name, "..") != 0) {
			empty = 0;
			break;
		}
	}
	closedir(dir);
	return empty;
}

int nv_git_export(const nv_git_repo *repo, const char *oid_hex,
		  const char *dest_dir, nv_git_export_stats *stats, nv_err *err)
{
	struct export_ctx *x = NULL;
	git_tree *tree = NULL;
	int created = 0, fd = -1, parent_fd = -1, rc, empty;
	char leaf[NAME_MAX + 1];

	if (stats)
		memset(stats, 0, sizeof(*stats));
	if (!dest_dir || !dest_dir[0])
		return nv_err_set(err, NV_EINVAL, NULL, "empty export folder");
	rc = nv_git_lookup_tree(&tree, repo->repo, oid_hex, err);
	if (rc)
		return rc;
	x = calloc(1, sizeof(*x));
	if (!x) {
		rc = nv_err_set(err, NV_ENOMEM, NULL, "out of memory");
		goto out;
	}
	x->repo = repo->repo;
	x->err = err;
	if (git_repository_odb(&x->odb, repo->repo) < 0) {
		rc = nv_git_failf(err, NV_EIO, NULL,
				  "cannot open the object store");
		goto out;
	}

	/* dest_dir itself comes from the caller and is trusted (it may be a
	 * symlink); only what the tree holds is not. */
	rc = open_dest(dest_dir, &fd, &parent_fd, leaf, &created, err);
	if (rc)
		goto out;
	empty = dir_is_empty(fd);
	if (empty != 1) {
		rc = empty < 0 ? nv_err_set_errno(err, NV_EIO, errno, NULL,
						  "cannot read '%s'", dest_dir)
			       : nv_err_set(err, NV_EREFUSED,
					    "choose a new folder or empty it "
					    "first",
					    "export folder '%s' is not empty",
					    dest_dir);
		goto out;
	}
	if (nv_fsname_volume_of(fd) != NV_FSNAME_SENSITIVE)
		rc = refuse_collisions(x, tree, oid_hex);
	if (!rc)
		rc = export_tree(x, tree, fd, 0);
	if (rc) {
		remove_below(fd, 0);
		if (created && parent_fd >= 0)
			unlinkat(parent_fd, leaf, AT_REMOVEDIR);
		goto out;
	}
	if (stats)
		*stats = x->st;

out:
	if (fd >= 0)
		close(fd);
	if (parent_fd >= 0)
		close(parent_fd);
	if (x)
		git_odb_free(x->odb);
	free(x);
	git_tree_free(tree);
	return rc;
}
