/* Secret scanning of a tree before it leaves the laptop as code.
 *
 * A workspace export or an image code layer is refused when the commit's
 * tree holds something that looks like a secret (DESIGN: "no secret ever in
 * a repo, an image..."). This module finds those things, in pure C: it scans
 * a commit's tree through libgit2 (what git holds, never the working folder),
 * a plain folder, or one buffer, and reports each finding through a callback
 * with the path, the line and the rule, never the secret value itself (at
 * most a masked preview such as "AKIA…WXYZ").
 *
 * Rules (stable ids, for messages and tests):
 *   private-key            a -----BEGIN ... PRIVATE KEY----- block
 *   private-key-file       a file named id_rsa, id_dsa, id_ecdsa, id_ed25519
 *                          that is not empty
 *   pkcs12                 a binary .p12/.pfx key store
 *   dotenv                 a .env or .env.* file (not .env.example, .sample,
 *                          .template) setting at least one non-placeholder
 *                          value; one finding per file, at the first value
 *   aws-access-key-id      AKIA.../ASIA... followed by 16 [A-Z0-9] (a
 *                          token shape, below)
 *   aws-secret-access-key  40 characters after aws_secret_access_key or
 *                          SecretAccessKey on the same line
 *   secret-assignment      a literal of 16+ characters with 3.5+ bits of
 *                          entropy per character assigned to a name holding
 *                          token, secret, password, passwd, api_key, apikey,
 *                          private_key or client_secret. Only what is written
 *                          out whole counts: a quoted string, or in a file
 *                          that is not a programming language's (YAML, INI,
 *                          .env, shell) an unquoted value. Expressions,
 *                          fields, calls and references are not literals.
 *                          Interpolations count only where the file's
 *                          language expands them ($x in shell, Perl, PHP
 *                          and Kotlin "...", `${x}` in JavaScript, #{x} in
 *                          Ruby, {x} in f-strings, C# $"" and Rust, %s in
 *                          code, ${X} and {{ x }} anywhere): "q7$Lr9..." in
 *                          Python or '...$...' in shell is a literal. They
 *                          are cut out and the longest literal run left
 *                          is judged (16+ characters). Not reported: values
 *                          with blanks, URLs (see url-credentials), words
 *                          (only [A-Za-z0-9_.-/:+]: identifiers, paths,
 *                          slugs), identifiers of words in camelCase
 *                          (id-regCtrl-regToken, challengePassword: the
 *                          object names of crypto headers), whatever the
 *                          name says, made-up runs of the alphabet, stored
 *                          password hashes ($6$..., pbkdf2_sha256$...)
 *   url-credentials        the password of a URL's userinfo (8+ characters,
 *                          not a placeholder such as password, pass, xxx,
 *                          ${X}, <password>, changeme, nor a word and a
 *                          number such as secret123), or a random value of
 *                          a query parameter named like sig, key, secret,
 *                          signature, pass (token= and api_key= are
 *                          secret-assignment's). A URL whose host is filled
 *                          in (%HOSTIP, ${HOST}) is a template. changeme
 *                          counts as a placeholder: in committed examples
 *                          it is a slot to fill far more often than a live
 *                          password
 *   slack-webhook          https://hooks.slack.com/services/T.../B.../KEY
 *   github-token, gitlab-token, slack-token, google-api-key, stripe-key, jwt
 *                          well-known token shapes: the table of
 *                          creds/token_shapes.h, which the log redactor
 *                          masks too. Placeholders (EXAMPLE, xxxx...) and
 *                          low-entropy runs are not reported
 *   nul-in-text            a file named like text (scan_binary.c's list:
 *                          .env, .txt, .json, .yaml, .ini, .sh, code...)
 *                          that holds NUL bytes and is not UTF-16: it
 *                          cannot be read as text, so it is refused
 *   allowlist              a line of .navette-secrets-allow without a reason
 *
 * Allow-list: a file .navette-secrets-allow at the root of the tree, one
 * "PATH_GLOB  reason text" per line, '#' comments. The glob matches the whole
 * path from the root, '/'-separated, as fnmatch(FNM_PATHNAME) does per
 * component, plus a "**" component for any number of folders and a trailing
 * '/' for "everything below". Findings in a matching path are counted as
 * allowed, not reported.
 *
 * Binary files (a NUL byte in the first NV_SCAN_BINARY_PROBE bytes) are
 * not read line by line: their raw bytes are searched for private key
 * blocks and the token shapes only (line 0, the reason names the byte),
 * and a name that promises text refuses them (nul-in-text). UTF-16 text
 * (a byte order mark, or three code units in four an ASCII character) is
 * decoded to UTF-8 and read like any text.
 *
 * Bounds: files over NV_SCAN_MAX_FILE_SIZE are not read (their name
 * rules still apply); long lines are scanned in overlapping windows; a scan
 * stops after NV_SCAN_MAX_FINDINGS findings; trees deeper than
 * NV_SCAN_MAX_DEPTH are refused. */
#ifndef NV_SCAN_H
#define NV_SCAN_H

#include <stddef.h>

#include "core/nv_err.h"

#define NV_SCAN_MAX_FILE_SIZE (2u * 1024 * 1024)
#define NV_SCAN_BINARY_PROBE  8192
#define NV_SCAN_MAX_FINDINGS  100
#define NV_SCAN_MAX_DEPTH     128
#define NV_SCAN_LINE_WINDOW   4096 /* bytes of a long line scanned at once */
#define NV_SCAN_ALLOW_FILE    ".navette-secrets-allow"
/* The first word of an allow-list line that grants a library (its URL,
 * a glob of its files, the reason): skipped by the project's own scan. */
#define NV_SCAN_ALLOW_LIBRARY "@library"
#define NV_SCAN_ALLOW_MAX     1024 /* allow-list entries */

typedef struct nv_scan_finding {
	const char *path;    /* from the root of the tree, '/'-separated */
	size_t line;         /* 1-based; 0 when the whole file is the finding */
	const char *rule;    /* one of the ids above */
	const char *reason;  /* one line for a human, never the secret */
	const char *preview; /* "ABCD…WXYZ" for long tokens, else "" */
} nv_scan_finding;

/* Called once per reported finding. The strings are valid only during the
 * call. Return 0 to go on; a positive value stops the scan, and the scanning
 * function returns it. */
typedef int (*nv_scan_cb)(const nv_scan_finding *finding, void *payload);

typedef struct nv_scan_stats {
	size_t findings;       /* reported through the callback */
	size_t allowed;        /* matched by the allow-list, not reported */
	size_t files;          /* files whose content was scanned */
	size_t skipped_binary; /* binary files (raw token shapes only) */
	size_t skipped_large; /* over NV_SCAN_MAX_FILE_SIZE (name rules only) */
	size_t skipped_other; /* symlinks, submodules, special files */
	size_t cached; /* blobs not read: judged clean before (verdicts) */
	int truncated; /* NV_SCAN_MAX_FINDINGS reached: scan stopped */
} nv_scan_stats;

typedef struct nv_scan_allowlist nv_scan_allowlist;

/* Parses an allow-list (the text of .navette-secrets-allow). A line with a
 * glob but no written reason is reported through cb as an "allowlist"
 * finding (path NV_SCAN_ALLOW_FILE) and ignored, so the refusal that follows
 * is explained; stats (may be NULL) counts it. More than NV_SCAN_ALLOW_MAX
 * entries: NV_EINVAL. On success *out is owned by the caller, released with
 * nv_scan_allowlist_free(). Returns 0, cb's stop value, or NV_E*. */
int nv_scan_allowlist_load(nv_scan_allowlist **out, const char *text,
			   size_t len, nv_scan_cb cb, void *payload,
			   nv_scan_stats *stats, nv_err *err);

/* The reason of the first entry whose glob matches path, or NULL. The string
 * belongs to al. al may be NULL (nothing matches). */
const char *nv_scan_allowlist_match(const nv_scan_allowlist *al,
				    const char *path);

/* NULL is accepted. */
void nv_scan_allowlist_free(nv_scan_allowlist *al);

/* Scans one file's content: path (relative to the tree root) drives the name
 * rules and the allow-list al (may be NULL). Adds to *stats (may be NULL;
 * zero it before a first call): NV_SCAN_MAX_FINDINGS counts from
 * stats->findings, so a caller scanning many buffers keeps one stats.
 * Returns 0 or cb's stop value. */
int nv_scan_buffer(const nv_scan_allowlist *al, const char *path,
		   const char *data, size_t len, nv_scan_cb cb, void *payload,
		   nv_scan_stats *stats);

/* Scans the tree of commit oid_hex (40 hex) in the repository holding
 * repo_path (discovered like git does; bare repositories are accepted),
 * with the allow-list found at the root of that tree. Blobs are read from
 * the object database: uncommitted changes are not seen. Symlinks and
 * submodules are not followed. stats (may be NULL) is reset first. Returns
 * 0 (look at stats->findings), cb's stop value, or NV_E*: NV_ENOTFOUND (no
 * repository, unknown commit), NV_EINVAL (bad id), NV_EREFUSED (tree deeper
 * than NV_SCAN_MAX_DEPTH), NV_EIO. */
int nv_scan_commit(const char *repo_path, const char *oid_hex, nv_scan_cb cb,
		   void *payload, nv_scan_stats *stats, nv_err *err);

/* nv_scan_commit() with flags: NV_SCAN_NO_ALLOWLIST ignores the commit's
 * own allow-list (a library's files are scanned whatever it exempts), and
 * takes allow (allow_len bytes, an allow-list's text; may be NULL) in its
 * place: what the project's allow-list grants that library. */
#define NV_SCAN_NO_ALLOWLIST 1u
int nv_scan_commit_ex(const char *repo_path, const char *oid_hex,
		      unsigned flags, const char *allow, size_t allow_len,
		      nv_scan_cb cb, void *payload, nv_scan_stats *stats,
		      nv_err *err);

/* Clean verdicts, kept between scans of commits: a blob (by its id) that
 * gave no finding, allowed ones included, under a file name is not read
 * again under that name by the same rules. The key of a verdict is the
 * sha256 of the rules' fingerprint, the blob id and the file's base name
 * (the name rules read only that; the allow-list plays no part, since a
 * blob the allow-list excused is never cached). A blob with any finding is
 * never recorded, so a new secret is a new blob and is always read.
 *
 * Bump NV_SCAN_RULES_VERSION with any change to what the scanner reports;
 * the fingerprint also covers navette's version, the limits above and the
 * token shape table, so a stale file is dropped, never trusted. */
#define NV_SCAN_RULES_VERSION "1"
#define NV_SCAN_VERDICTS_MAX  65536 /* verdicts kept in the file */
#define NV_SCAN_VERDICTS_FILE "scan-verdicts"

typedef struct nv_scan_verdicts nv_scan_verdicts;

/* 64 hex digits naming the rules of this build. */
void nv_scan_rules_fingerprint(char hex[65]);

/* Loads the verdicts kept at path. A missing, unreadable, corrupt or stale
 * file (another fingerprint) gives an empty set, never an error: the cost is
 * a full scan. Only NV_ENOMEM fails. *out is the caller's, freed with
 * nv_scan_verdicts_free(). */
int nv_scan_verdicts_load(nv_scan_verdicts **out, const char *path,
			  nv_err *err);

/* Writes the verdicts back to the path they were loaded from, atomically:
 * those added or used by the last scans first, then the others, at most
 * NV_SCAN_VERDICTS_MAX. Creates the folder. */
int nv_scan_verdicts_save(const nv_scan_verdicts *v, nv_err *err);

/* How many verdicts v holds. */
size_t nv_scan_verdicts_count(const nv_scan_verdicts *v);

/* NULL is accepted. */
void nv_scan_verdicts_free(nv_scan_verdicts *v);

/* nv_scan_commit() reading and adding to verdicts (may be NULL: none):
 * a blob found there is skipped (stats->cached), a blob scanned with no
 * finding is added. verdicts is not safe to share between threads. */
int nv_scan_commit_cached(const char *repo_path, const char *oid_hex,
			  nv_scan_verdicts *verdicts, nv_scan_cb cb,
			  void *payload, nv_scan_stats *stats, nv_err *err);

/* Scans a plain folder with the allow-list at its root. Symlinks are never
 * followed (lstat/O_NOFOLLOW) and ".git" entries are skipped. stats (may be
 * NULL) is reset first. Returns like nv_scan_commit(). */
int nv_scan_dir(const char *dir, nv_scan_cb cb, void *payload,
		nv_scan_stats *stats, nv_err *err);

/* Shannon entropy of s[0..len) in bits per byte (0 for an empty string). */
double nv_scan_entropy(const char *s, size_t len);

#endif
