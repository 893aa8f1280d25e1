/* Credential sources (see source.h). Child processes (the Keychain's
 * `security`, credential commands) run without a shell, with stdout read
 * through a bounded pipe and a time limit; their output is wiped after
 * parsing. */
#include "creds/source.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <openssl/crypto.h>

#include "core/clock.h"
#include "core/fsutil.h"
#include "core/hex.h"
#include "core/proc.h"
#include "ssh/ssh_cert.h"

/* ---- the in-process cache of command results --------------------------- */

typedef struct cached {
	char key[512];
	nv_secret *secret;
	struct cached *next;
} cached;

static cached *cache_head;

static nv_secret *secret_copy(const nv_secret *s, nv_err *err)
{
	nv_secret *c = nv_secret_new(s->name, s->kind, s->source, err);
	if (!c)
		return NULL;
	memcpy(c->origin, s->origin, sizeof(c->origin));
	c->loaded_at = s->loaded_at;
	c->created_at = s->created_at;
	c->expires_at = s->expires_at;
	for (int i = 0; i < s->nfields; i++) {
		if (s->fields[i].value &&
		    nv_secret_set(c, s->fields[i].name, s->fields[i].value,
				  s->fields[i].len, err) != 0) {
			nv_secret_free(c);
			return NULL;
		}
	}
	return c;
}

void nv_creds_cache_clear(void)
{
	while (cache_head) {
		cached *next = cache_head->next;
		nv_secret_free(cache_head->secret);
		free(cache_head);
		cache_head = next;
	}
}

static void cache_key(const nv_creds_decl *d, char *out, size_t cap)
{
	size_t used = (size_t)snprintf(out, cap, "%s|%d", d->name, d->kind);
	for (int i = 0; d->argv[i] && used < cap; i++)
		used += (size_t)snprintf(out + used, cap - used, "|%s",
					 d->argv[i]);
}

/* ---- helpers ------------------------------------------------------------ */

double nv_creds_parse_time(const char *iso)
{
	struct tm tm;
	int y, mo, d, h, mi;
	double sec;
	char rest[16] = "";

	memset(&tm, 0, sizeof(tm));
	int consumed = 0;
	if (!iso ||
	    sscanf(iso, "%4d-%2d-%2dT%2d:%2d:%lf%15[^ ]%n", &y, &mo, &d, &h,
		   &mi, &sec, rest, &consumed) < 7 ||
	    iso[consumed] != '\0')
		return -1;
	/* only UTC is accepted, explicitly: no guessing of offsets */
	if (strcmp(rest, "Z") != 0 && strcmp(rest, "+00:00") != 0)
		return -1;
	tm.tm_year = y - 1900;
	tm.tm_mon = mo - 1;
	tm.tm_mday = d;
	tm.tm_hour = h;
	tm.tm_min = mi;
	tm.tm_sec = (int)sec;
	return (double)timegm(&tm) + (sec - (int)sec);
}

static size_t trim_end(const unsigned char *p, size_t len)
{
	while (len && (p[len - 1] == '\n' || p[len - 1] == '\r' ||
		       p[len - 1] == ' ' || p[len - 1] == '\t'))
		len--;
	return len;
}

/* Runs argv without a shell; stdout (bounded) into a malloc'd buffer the
 * caller wipes and frees. *exit_status gets the exit status when the
 * command ran and exited (-1 otherwise). */
static int run_capture(const char *const *argv, unsigned char **out,
		       size_t *len, int *exit_status, nv_err *err)
{
	/* one byte more: proc keeps cap - 1 and a NUL */
	const size_t cap = NV_CREDS_OUTPUT_MAX + 1;
	nv_proc_opts o = {0};
	nv_proc_result r;
	char *buf;
	int rc, why;

	*out = NULL;
	*len = 0;
	*exit_status = -1;
	buf = calloc(1, cap);
	if (!buf)
		return nv_err_set(err, NV_ENOMEM, NULL, "out of memory");
	o.argv = argv;
	o.search_path = 1;
	o.out = (nv_proc_stream){NV_PROC_CAPTURE, buf, cap, 0};
	o.err.to = NV_PROC_INHERIT;
	o.timeout_s = NV_CREDS_COMMAND_TIMEOUT_S;
	o.stop_at_cap = 1;
	rc = nv_proc_run(&o, &r, &why, err);
	if (rc != 0 && why != 0)
		rc = nv_err_set(err, NV_EREFUSED,
				"check that the command is installed and on "
				"PATH",
				"cannot run %s: %s", argv[0], strerror(why));
	else if (rc == 0 && r.timed_out)
		rc = nv_err_set(err, NV_EREFUSED,
				"the command must print its JSON and exit",
				"%s did not finish within %d s", argv[0],
				NV_CREDS_COMMAND_TIMEOUT_S);
	else if (rc == 0 && r.over_cap)
		rc = nv_err_set(err, NV_EREFUSED, NULL,
				"%s printed more than %zu bytes", argv[0],
				NV_CREDS_OUTPUT_MAX);
	else if (rc == 0) {
		*exit_status = r.exit_status;
		if (!r.exited || r.exit_status != 0)
			rc = nv_err_set(err, NV_EREFUSED,
					"run the command by hand to see why",
					"%s failed (exit status %d)", argv[0],
					r.exit_status);
	}
	if (rc != 0) {
		OPENSSL_cleanse(buf, cap);
		free(buf);
		return rc;
	}
	*out = (unsigned char *)buf;
	*len = r.out_len;
	return 0;
}

static int set_json_string(nv_secret *s, const cJSON *o, const char *key,
			   const char *field, nv_err *err)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	if (!v)
		return 0;
	if (!cJSON_IsString(v))
		return nv_err_set(err, NV_EREFUSED, NULL,
				  "credential %s: %s is not a string", s->name,
				  key);
	return nv_secret_set(s, field, v->valuestring, strlen(v->valuestring),
			     err);
}

/* The credential_process JSON (and its analogues for other kinds). */
static int parse_json(nv_secret *s, const unsigned char *text, size_t len,
		      nv_err *err)
{
	cJSON *o = cJSON_ParseWithLength((const char *)text, len);
	const cJSON *version, *expiration;
	int rc = 0;

	if (!cJSON_IsObject(o)) {
		cJSON_Delete(o);
		return nv_err_set(err, NV_EREFUSED,
				  "it must print {\"Version\": 1, ...}",
				  "credential %s: the %s output is not a JSON "
				  "object",
				  s->name, s->source);
	}
	version = cJSON_GetObjectItemCaseSensitive(o, "Version");
	if (version && (!cJSON_IsNumber(version) || version->valueint != 1))
		rc = nv_err_set(err, NV_EREFUSED, NULL,
				"credential %s: unsupported Version", s->name);
	if (!rc && s->kind == NV_SECRET_S3) {
		rc = set_json_string(s, o, "AccessKeyId", "access_key_id", err);
		if (!rc)
			rc = set_json_string(s, o, "SecretAccessKey",
					     "secret_access_key", err);
		if (!rc)
			rc = set_json_string(s, o, "SessionToken",
					     "session_token", err);
	} else if (!rc) {
		static const char *const map[][2] = {
			{"Token", "token"},
			{"User", "user"},
			{"Password", "password"},
			{"Key", "key"},
			{"Certificate", "certificate"}};
		for (size_t i = 0; !rc && i < 5; i++) {
			int required;
			const char *const *names =
				nv_secret_kind_fields(s->kind, &required);
			for (int j = 0; names && names[j]; j++)
				if (strcmp(names[j], map[i][1]) == 0)
					rc = set_json_string(s, o, map[i][0],
							     map[i][1], err);
		}
	}
	expiration = cJSON_GetObjectItemCaseSensitive(o, "Expiration");
	if (!rc && cJSON_IsString(expiration)) {
		double t = nv_creds_parse_time(expiration->valuestring);
		if (t < 0)
			rc = nv_err_set(err, NV_EREFUSED,
					"Expiration is ISO-8601 in UTC",
					"credential %s: bad Expiration '%s'",
					s->name, expiration->valuestring);
		else
			s->expires_at = t;
	}
	/* cJSON's copies of the values: wipe before freeing */
	for (cJSON *c = o->child; c; c = c->next)
		if (cJSON_IsString(c) && c->valuestring)
			OPENSSL_cleanse(c->valuestring, strlen(c->valuestring));
	cJSON_Delete(o);
	return rc;
}

/* ---- the sources -------------------------------------------------------- */

static int load_env(const nv_creds_decl *d, nv_secret *s, nv_err *err)
{
	static const char *const s3_defaults[] = {"AWS_ACCESS_KEY_ID",
						  "AWS_SECRET_ACCESS_KEY",
						  "AWS_SESSION_TOKEN", NULL};
	int required;
	const char *const *fields = nv_secret_kind_fields(d->kind, &required);
	size_t used = 0;

	for (int i = 0; fields[i]; i++) {
		const char *var = d->env[i];
		if (!var && d->kind == NV_SECRET_S3)
			var = s3_defaults[i];
		if (!var)
			continue;
		used += (size_t)snprintf(
			s->origin + used,
			used < sizeof(s->origin) ? sizeof(s->origin) - used : 0,
			"%s$%s", used ? " " : "", var);
		if (used >= sizeof(s->origin))
			used = sizeof(s->origin) - 1;
		const char *value = getenv(var);
		if (!value || !*value) {
			if (i < required)
				return nv_err_set(
					err, NV_EREFUSED,
					"export the variable, or change the "
					"credential's source",
					"credential %s: environment variable "
					"%s is not set",
					d->name, var);
			continue;
		}
		if (nv_secret_set(s, fields[i], value, strlen(value), err))
			return err->code;
	}
	return 0;
}

/* An ssh-cert's certificate file: d->certificate, or the key's path and
 * "-cert.pub" when that file exists (ssh-keygen -s writes it there). A
 * certificate is public (sshd logs it): any mode, but a regular file, not
 * a link. */
static int load_certificate_file(const nv_creds_decl *d, nv_secret *s,
				 nv_err *err)
{
	char path[4096];
	struct stat st;
	char *text = NULL;
	size_t got = 0;
	int fd, rc;

	if (d->certificate)
		snprintf(path, sizeof(path), "%s", d->certificate);
	else if ((size_t)snprintf(path, sizeof(path), "%s-cert.pub", d->path) >=
		 sizeof(path))
		return nv_err_set(err, NV_EREFUSED, NULL,
				  "credential %s: the path is too long",
				  d->name);
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0 && errno == ENOENT && !d->certificate)
		return 0; /* none yet: the profile's signer may make one */
	if (fd < 0)
		return nv_err_set_errno(err, NV_EREFUSED, errno,
					"check the path (symlinks are refused)",
					"credential %s: cannot open its "
					"certificate %s",
					d->name, path);
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
	    (size_t)st.st_size > NV_SSH_KEY_BLOB_MAX * 2) {
		close(fd);
		return nv_err_set(err, NV_EREFUSED, NULL,
				  "credential %s: its certificate %s is not a "
				  "regular file of at most %zu bytes",
				  d->name, path, NV_SSH_KEY_BLOB_MAX * 2);
	}
	rc = nv_read_fd(&text, &got, fd, (size_t)st.st_size, err);
	close(fd);
	if (rc)
		return rc;
	rc = nv_secret_set(s, "certificate", text,
			   trim_end((unsigned char *)text, got), err);
	OPENSSL_cleanse(text, got);
	free(text);
	return rc;
}

static int load_file(const nv_creds_decl *d, nv_secret *s, nv_err *err)
{
	struct stat st;
	int fd, rc = 0;
	char *text;
	unsigned char *buf;
	size_t got = 0;

	if (!d->path)
		return nv_err_set(err, NV_EINVAL, "give path = \"...\"",
				  "credential %s: a file source needs a path",
				  d->name);
	snprintf(s->origin, sizeof(s->origin), "%s", d->path);
	/* O_NONBLOCK: a FIFO planted at the path must not hang us before
	 * the regular-file check below. */
	fd = open(d->path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return nv_err_set_errno(err, NV_EREFUSED, errno,
					"check the path (symlinks are refused)",
					"credential %s: cannot open %s",
					d->name, d->path);
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return nv_err_set(err, NV_EREFUSED, NULL,
				  "credential %s: %s is not a regular file",
				  d->name, d->path);
	}
	if (st.st_uid != getuid()) {
		close(fd);
		return nv_err_set(
			err, NV_EREFUSED, "the file must belong to you (chown)",
			"credential %s: %s is owned by uid %ld, not "
			"by you (uid %ld)",
			d->name, d->path, (long)st.st_uid, (long)getuid());
	}
	if (st.st_mode & 077) {
		close(fd);
		return nv_err_set(err, NV_EREFUSED,
				  "chmod 600 the file: others must not read a "
				  "secret",
				  "credential %s: %s has mode %03o, readable "
				  "by group or others",
				  d->name, d->path,
				  (unsigned)(st.st_mode & 0777));
	}
	if ((size_t)st.st_size > NV_SECRET_VALUE_MAX) {
		close(fd);
		return nv_err_set(err, NV_EREFUSED, NULL,
				  "credential %s: %s is too large", d->name,
				  d->path);
	}
	rc = nv_read_fd(&text, &got, fd, (size_t)st.st_size, err);
	close(fd);
	if (rc)
		return rc;
	buf = (unsigned char *)text;
	s->created_at = (double)st.st_mtime;

	switch (d->kind) {
	case NV_SECRET_S3: rc = parse_json(s, buf, got, err); break;
	case NV_SECRET_HS256:
		rc = nv_secret_set(s, "key", buf, got, err);
		break;
	case NV_SECRET_SSH_CERT:
		/* the key file as ssh-keygen wrote it; its certificate */
		rc = nv_secret_set(s, "key", buf, got, err);
		if (!rc)
			rc = load_certificate_file(d, s, err);
		break;
	case NV_SECRET_PEM:
	case NV_SECRET_BEARER:
		rc = nv_secret_set(s,
				   d->kind == NV_SECRET_PEM ? "key" : "token",
				   buf, trim_end(buf, got), err);
		break;
	case NV_SECRET_BASIC: {
		/* "user:password" on the first line */
		size_t n = trim_end(buf, got);
		unsigned char *colon = memchr(buf, ':', n);
		if (!colon) {
			rc = nv_err_set(err, NV_EREFUSED,
					"write user:password in the file",
					"credential %s: %s holds no "
					"user:password",
					d->name, d->path);
			break;
		}
		rc = nv_secret_set(s, "user", buf, (size_t)(colon - buf), err);
		if (!rc)
			rc = nv_secret_set(s, "password", colon + 1,
					   n - (size_t)(colon - buf) - 1, err);
		break;
	}
	}
	OPENSSL_cleanse(buf, (size_t)st.st_size + 1);
	free(buf);
	return rc;
}

/* ---- the macOS Keychain -------------------------------------------------- */

/* Called by its full path: an earlier folder of PATH could otherwise answer
 * for it. Tests point it at a stand-in. */
static const char *keychain_tool = NV_CREDS_KEYCHAIN_TOOL;

void nv_creds_set_keychain_tool(const char *path)
{
	keychain_tool = path ? path : NV_CREDS_KEYCHAIN_TOOL;
}

const char *nv_creds_keychain_tool(void)
{
	return keychain_tool;
}

int nv_creds_keychain_hex_multiline(const unsigned char *p, size_t len)
{
	int newline = 0;

	if (len < 4 || len % 2)
		return 0;
	for (size_t i = 0; i < len; i += 2) {
		int hi = nv_hex_value((unsigned char)p[i]),
		    lo = nv_hex_value((unsigned char)p[i + 1]);
		if (hi < 0 || lo < 0)
			return 0;
		int c = hi * 16 + lo;
		if (c == '\n')
			newline = 1;
		else if (c != '\r' && c != '\t' && (c < 0x20 || c > 0x7e))
			return 0; /* not text: a hex value, kept as it is */
	}
	return newline;
}

static int load_keychain(const nv_creds_decl *d, nv_secret *s, nv_err *err)
{
	const char *argv[] = {keychain_tool, "find-generic-password",
			      "-s",          d->service,
			      "-a",          d->account,
			      "-w",          NULL};
	unsigned char *out;
	size_t len;
	int rc, exit_status;

	if (!d->service || !d->account)
		return nv_err_set(
			err, NV_EINVAL,
			"give service = \"...\" and account = \"...\"",
			"credential %s: a keychain source needs a "
			"service and an account",
			d->name);
	snprintf(s->origin, sizeof(s->origin), "service %s, account %s",
		 d->service, d->account);
	rc = run_capture(argv, &out, &len, &exit_status, err);
	if (rc && exit_status == NV_CREDS_KEYCHAIN_NO_INTERACTION)
		return nv_err_set(
			err, NV_EREFUSED,
			"unlock it first (security unlock-keychain), or run "
			"navette from the Mac's own login session",
			"credential %s: the Keychain is locked and cannot ask "
			"for its password here (no window session, as over "
			"SSH): security said \"User interaction is not "
			"allowed\"",
			d->name);
	if (rc) {
		char cause[NV_ERR_MESSAGE_MAX];
		memcpy(cause, err->message, sizeof(cause));
		return nv_err_set(err, NV_EREFUSED,
				  "is it there, and the keychain unlocked? add "
				  "it: security add-generic-password -s "
				  "SERVICE -a ACCOUNT -w",
				  "credential %s: cannot read it from the "
				  "Keychain (%.600s)",
				  d->name, cause);
	}
	len = trim_end(out, len);
	if (nv_creds_keychain_hex_multiline(out, len)) {
		OPENSSL_cleanse(out, len);
		free(out);
		return nv_err_set(err, NV_EREFUSED,
				  "store it on one line: security "
				  "add-generic-password -U -s SERVICE -a "
				  "ACCOUNT -w",
				  "credential %s: the Keychain item holds a "
				  "value of several lines, which security -w "
				  "prints in hex; values must be single-line",
				  d->name);
	}
	switch (d->kind) {
	case NV_SECRET_S3:
	case NV_SECRET_SSH_CERT: /* {"Key": ..., "Certificate": ...} */
		rc = parse_json(s, out, len, err);
		break;
	case NV_SECRET_BASIC:
		rc = nv_secret_set(s, "user", d->account, strlen(d->account),
				   err);
		if (!rc)
			rc = nv_secret_set(s, "password", out, len, err);
		break;
	case NV_SECRET_BEARER:
		rc = nv_secret_set(s, "token", out, len, err);
		break;
	default: rc = nv_secret_set(s, "key", out, len, err); break;
	}
	OPENSSL_cleanse(out, len);
	free(out);
	return rc;
}

static int load_command(const nv_creds_decl *d, nv_secret *s, nv_err *err)
{
	unsigned char *out;
	size_t len, used = 0;
	int rc, exit_status;

	if (!d->argv[0])
		return nv_err_set(err, NV_EINVAL,
				  "command = { \"program\", \"arg\" }",
				  "credential %s: a command source needs a "
				  "command",
				  d->name);
	for (int i = 0; d->argv[i] && used < sizeof(s->origin); i++)
		used += (size_t)snprintf(s->origin + used,
					 sizeof(s->origin) - used, "%s%s",
					 i ? " " : "", d->argv[i]);
	rc = run_capture(d->argv, &out, &len, &exit_status, err);
	if (rc)
		return rc;
	rc = parse_json(s, out, len, err);
	OPENSSL_cleanse(out, len);
	free(out);
	return rc;
}

int nv_creds_ssh_cert_check(nv_secret *s, nv_err *err)
{
	const nv_secret_field *key = nv_secret_get(s, "key");
	const nv_secret_field *cert = nv_secret_get(s, "certificate");
	char cert_pub[NV_SSH_PUBLIC_LINE_MAX], key_pub[NV_SSH_PUBLIC_LINE_MAX];
	nv_ssh_cert c;
	nv_err why;

	s->expires_at = 0;
	if (!cert || !cert->len)
		return 0;
	if (nv_ssh_cert_parse((const char *)cert->value, cert->len, &c,
			      cert_pub, sizeof(cert_pub), &why) != 0)
		return nv_err_set(err, NV_EREFUSED,
				  "give the whole line of KEY-cert.pub, as "
				  "ssh-keygen -s wrote it",
				  "credential %s: its certificate cannot be "
				  "read (%.400s)",
				  s->name, why.message);
	if (c.cert_type != NV_SSH_CERT_USER)
		return nv_err_set(err, NV_EREFUSED,
				  "sign the key without -h: ssh-keygen -s CA "
				  "-I ID -n PRINCIPAL KEY.pub",
				  "credential %s: its certificate is a host "
				  "certificate, not a user's",
				  s->name);
	/* a key in the OpenSSH format shows its public part: it must be the
	 * certified one (a key of another format is left to ssh) */
	if (key &&
	    nv_ssh_private_key_public((const char *)key->value, key->len,
				      key_pub, sizeof(key_pub), &why) == 0 &&
	    strcmp(key_pub, cert_pub) != 0)
		return nv_err_set(err, NV_EREFUSED,
				  "the certificate must be the one signed for "
				  "this key's KEY.pub",
				  "credential %s: its certificate (%s) is not "
				  "for its key",
				  s->name, c.fingerprint);
	if (c.valid_before != NV_SSH_CERT_FOREVER)
		s->expires_at = (double)c.valid_before;
	return 0;
}

int nv_creds_source_executes(const char *source)
{
	return source && (strcmp(source, "command") == 0 ||
			  strcmp(source, "keychain") == 0);
}

/* What a caller that runs no program gets instead of the credential. */
static int not_run(const nv_creds_decl *d, nv_err *err)
{
	char hint[NV_ERR_HINT_MAX];

	snprintf(
		hint, sizeof(hint),
		"it is loaded when a job needs it (navette run), or when named "
		"on the command line: navette creds check %s (or --credential "
		"%s)",
		d->name, d->name);
	if (strcmp(d->source, "keychain") == 0)
		return nv_err_set(err, NV_ENOTRUN, hint,
				  "credential %s: the Keychain was not asked "
				  "(its tool %s is a program, and plan and "
				  "read-only commands run none)",
				  d->name, keychain_tool);
	return nv_err_set(err, NV_ENOTRUN, hint,
			  "credential %s: its command (%s) was not run: plan "
			  "and read-only commands run no program",
			  d->name, d->argv[0] ? d->argv[0] : "none");
}

int nv_creds_load(const nv_creds_decl *d, nv_secret **out, nv_err *err)
{
	nv_secret *s;
	char key[512];
	int rc;

	*out = NULL;
	if (strcmp(d->source, "command") == 0) {
		cache_key(d, key, sizeof(key));
		for (cached *c = cache_head; c; c = c->next) {
			if (strcmp(c->key, key) != 0)
				continue;
			if (c->secret->expires_at == 0 ||
			    c->secret->expires_at - nv_now() >
				    NV_CREDS_REFRESH_MARGIN_S) {
				*out = secret_copy(c->secret, err);
				return *out ? 0 : err->code;
			}
		}
	}
	/* Checked here, under every caller: no flag of a Lua caller can
	 * forget it. */
	if (d->no_exec && nv_creds_source_executes(d->source))
		return not_run(d, err);
	s = nv_secret_new(d->name, d->kind, d->source, err);
	if (!s)
		return err->code;
	s->loaded_at = nv_now();
	if (strcmp(d->source, "env") == 0)
		rc = load_env(d, s, err);
	else if (strcmp(d->source, "file") == 0)
		rc = load_file(d, s, err);
	else if (strcmp(d->source, "keychain") == 0)
		rc = load_keychain(d, s, err);
	else if (strcmp(d->source, "command") == 0)
		rc = load_command(d, s, err);
	else
		rc = nv_err_set(err, NV_EINVAL,
				"sources: env, file, keychain, command",
				"credential %s: unknown source '%s'", d->name,
				d->source);
	if (!rc)
		rc = nv_secret_complete(s, err);
	if (!rc && d->kind == NV_SECRET_SSH_CERT)
		rc = nv_creds_ssh_cert_check(s, err);
	/* an ssh-cert's key outlives its certificate: the profile's signer
	 * renews it, and the backend refuses an expired one it cannot */
	if (!rc && d->kind != NV_SECRET_SSH_CERT && s->expires_at > 0 &&
	    s->expires_at <= nv_now())
		rc = nv_err_set(err, NV_EREFUSED,
				"renew the credential at its source",
				"credential %s expired", d->name);
	if (rc) {
		nv_secret_free(s);
		return rc;
	}
	nv_secret_announce(s);
	if (strcmp(d->source, "command") == 0) {
		cached *c = calloc(1, sizeof(*c));
		nv_err ignored;
		for (cached **pp = &cache_head; *pp;) {
			if (strcmp((*pp)->key, key) == 0) {
				cached *old = *pp;
				*pp = old->next;
				nv_secret_free(old->secret);
				free(old);
			} else {
				pp = &(*pp)->next;
			}
		}
		if (c && (c->secret = secret_copy(s, &ignored)) != NULL) {
			snprintf(c->key, sizeof(c->key), "%s", key);
			c->next = cache_head;
			cache_head = c;
		} else {
			free(c);
		}
	}
	*out = s;
	return 0;
}
