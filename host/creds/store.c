/* Writing a credential back to its source (see store.h). */
#include "creds/store.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "core/fsutil.h"
#include "core/proc.h"
#include "creds/source.h"

/* A buffer of fixed size (never realloc'd: no copy of a value is left in
 * freed memory) that the values are written into. */
struct text {
	unsigned char *data;
	size_t len, cap;
	int over;
};

static void put(struct text *t, const void *p, size_t n)
{
	if (t->over || n > t->cap - t->len) {
		t->over = 1;
		return;
	}
	memcpy(t->data + t->len, p, n);
	t->len += n;
}

static void put_str(struct text *t, const char *s)
{
	put(t, s, strlen(s));
}

/* A JSON string of a value: quotes, backslashes and control bytes
 * escaped. */
static void put_json(struct text *t, const unsigned char *v, size_t n)
{
	put_str(t, "\"");
	for (size_t i = 0; i < n; i++) {
		char esc[8];
		/* Every ASCII byte outside a key's usual alphabet is written
		 * \u00XX: the file may be read by more than a JSON parser (a
		 * path a project file chose), and "$(...)" inside quotes is
		 * a shell's. Bytes of UTF-8 sequences pass as they are. */
		if (v[i] >= 0x80 || isalnum(v[i]) ||
		    (v[i] && strchr("+/=._-", v[i]))) {
			put(t, &v[i], 1);
		} else {
			snprintf(esc, sizeof(esc), "\\u%04x", v[i]);
			put(t, esc, 6);
		}
	}
	put_str(t, "\"");
}

static const nv_secret_field *field(const nv_secret *s, const char *name)
{
	const nv_secret_field *f = nv_secret_get(s, name);
	return f && f->len ? f : NULL;
}

int nv_creds_store_text(const nv_secret *s, int for_keychain,
			unsigned char **out, size_t *len, nv_err *err)
{
	struct text t = {NULL, 0, 0, 0};
	const nv_secret_field *a, *b, *c;
	int rc;

	*out = NULL;
	*len = 0;
	rc = nv_secret_complete(s, err);
	if (rc)
		return rc;
	for (int i = 0; i < s->nfields; i++)
		t.cap += s->fields[i].len * 6; /* \u00XX at worst */
	t.cap += 128;
	t.data = malloc(t.cap + 1);
	if (!t.data)
		return nv_err_set(err, NV_ENOMEM, NULL, "out of memory");
	switch (s->kind) {
	case NV_SECRET_S3:
		a = field(s, "access_key_id");
		b = field(s, "secret_access_key");
		c = field(s, "session_token");
		put_str(&t, "{\"Version\": 1, \"AccessKeyId\": ");
		put_json(&t, a->value, a->len);
		put_str(&t, ", \"SecretAccessKey\": ");
		put_json(&t, b->value, b->len);
		if (c) {
			put_str(&t, ", \"SessionToken\": ");
			put_json(&t, c->value, c->len);
		}
		put_str(&t, "}");
		break;
	case NV_SECRET_BASIC:
		a = field(s, "user");
		b = field(s, "password");
		if (!for_keychain) {
			put(&t, a->value, a->len);
			put_str(&t, ":");
		}
		put(&t, b->value, b->len);
		break;
	case NV_SECRET_BEARER:
		a = field(s, "token");
		put(&t, a->value, a->len);
		break;
	default:
		a = field(s, "key");
		put(&t, a->value, a->len);
		break;
	}
	/* an hs256 key is read as it is, every byte; the others are read
	 * with the end trimmed, so a newline ends them as files usually do */
	if (!for_keychain && s->kind != NV_SECRET_HS256)
		put_str(&t, "\n");
	if (t.over) {
		rc = nv_err_set(err, NV_ENOMEM, NULL, "credential too long");
		goto fail;
	}
	if (for_keychain &&
	    (memchr(t.data, '\n', t.len) || memchr(t.data, '\r', t.len) ||
	     memchr(t.data, '\0', t.len))) {
		rc = nv_err_set(err, NV_EREFUSED,
				"use a file source for a value of several "
				"lines",
				"credential %s: a Keychain value must be one "
				"line (security -w prints others in hex)",
				s->name);
		goto fail;
	}
	t.data[t.len] = '\0';
	*out = t.data;
	*len = t.len;
	return 0;
fail:
	OPENSSL_cleanse(t.data, t.cap + 1);
	free(t.data);
	return rc;
}

int nv_creds_store_file(const nv_secret *s, const char *path, nv_err *err)
{
	unsigned char *text;
	size_t len;
	struct stat st;
	int rc;

	if (!path || !path[0])
		return nv_err_set(err, NV_EINVAL, NULL, "no path");
	if (lstat(path, &st) == 0) {
		if (S_ISDIR(st.st_mode))
			return nv_err_set(err, NV_EREFUSED, NULL,
					  "credential %s: %s is a folder",
					  s->name, path);
		if (st.st_uid != getuid())
			return nv_err_set(err, NV_EREFUSED,
					  "the file must belong to you",
					  "credential %s: %s is owned by uid "
					  "%ld, not by you",
					  s->name, path, (long)st.st_uid);
	} else if (errno != ENOENT) {
		return nv_err_set_errno(err, NV_EIO, errno, NULL,
					"credential %s: cannot inspect %s",
					s->name, path);
	}
	rc = nv_creds_store_text(s, 0, &text, &len, err);
	if (rc)
		return rc;
	rc = nv_write_file_atomic(path, text, len, 0600, err);
	OPENSSL_cleanse(text, len + 1);
	free(text);
	return rc;
}

int nv_creds_store_keychain(const nv_secret *s, const char *service,
			    const char *account, nv_err *err)
{
	const char *tool = nv_creds_keychain_tool();
	nv_proc_opts o = {0};
	nv_proc_result r;
	unsigned char *text;
	size_t len;
	int rc, why;

	if (!service || !account || !service[0] || !account[0])
		return nv_err_set(err, NV_EINVAL, "give service and account",
				  "credential %s: a keychain source needs a "
				  "service and an account",
				  s->name);
	rc = nv_creds_store_text(s, 1, &text, &len, err);
	if (rc)
		return rc;
	{
		/* On the argv of security for its lifetime: see store.h. */
		const char *argv[] = {tool,
				      "add-generic-password",
				      "-U",
				      "-s",
				      service,
				      "-a",
				      account,
				      "-w",
				      (const char *)text,
				      NULL};
		/* by its full path, never looked up in PATH; its stderr is
		 * ours */
		o.argv = argv;
		o.err.to = NV_PROC_INHERIT;
		o.timeout_s = NV_CREDS_COMMAND_TIMEOUT_S;
		rc = nv_proc_run(&o, &r, &why, err);
	}
	OPENSSL_cleanse(text, len + 1);
	free(text);
	if (rc != 0 && why != 0)
		return nv_err_set(err, NV_EREFUSED, NULL,
				  "credential %s: cannot run %s: %s", s->name,
				  tool, strerror(why));
	if (rc != 0)
		return rc;
	if (r.timed_out)
		return nv_err_set(
			err, NV_EREFUSED,
			"is the Keychain waiting for a password? "
			"unlock it first",
			"credential %s: %s did not finish within %d s", s->name,
			tool, NV_CREDS_COMMAND_TIMEOUT_S);
	if (r.exited && r.exit_status == 0)
		return 0;
	if (r.exited && r.exit_status == NV_CREDS_KEYCHAIN_NO_INTERACTION)
		return nv_err_set(err, NV_EREFUSED,
				  "unlock it first (security unlock-keychain), "
				  "or run navette from the Mac's own login "
				  "session",
				  "credential %s: the Keychain is locked and "
				  "cannot ask for its password here",
				  s->name);
	return nv_err_set(err, NV_EREFUSED,
			  "run security add-generic-password -U -s SERVICE -a "
			  "ACCOUNT -w by hand to see why",
			  "credential %s: %s add-generic-password failed "
			  "(exit status %d)",
			  s->name, tool, r.exit_status);
}
