/* Writing a credential back where its source reads it (a rotation's new
 * key): a file source's file, atomically, in the format load_file reads
 * for the kind, and a Keychain item on macOS through `security`. env and
 * command sources cannot be written by navette: the caller says so. Pure
 * C; every buffer that holds a value is wiped before it is freed. */
#ifndef NV_CREDS_STORE_H
#define NV_CREDS_STORE_H

#include <stddef.h>

#include "creds/secret.h"

/* The value of s as the source reads it back (source.c), in a malloc'd
 * buffer the caller wipes (OPENSSL_cleanse, *len + 1 bytes) and frees:
 * kind s3, the credential_process JSON on one line ({"Version": 1,
 * "AccessKeyId", "SecretAccessKey"[, "SessionToken"]}); bearer and pem,
 * the value; basic, "user:password" (file) or the password (keychain);
 * hs256, the key. for_keychain: no final newline, and a value of several
 * lines is refused (security -w would print it in hex). */
int nv_creds_store_text(const nv_secret *s, int for_keychain,
			unsigned char **out, size_t *len, nv_err *err);

/* Replaces path with s's value: a temp file of mode 0600 in the same
 * folder, synced, renamed over path (nv_write_file_atomic), so a reader
 * sees the old value or the new one, never a part. The folder must
 * exist; a path that is a folder or another user's file is refused. */
int nv_creds_store_file(const nv_secret *s, const char *path, nv_err *err);

/* Adds or updates (-U) the generic password SERVICE/ACCOUNT in the login
 * Keychain: nv_creds_keychain_tool() add-generic-password -U -s SERVICE
 * -a ACCOUNT -w VALUE, run without a shell, with a time limit. The value
 * is on that program's argv for its lifetime (a few milliseconds), where
 * a process of the same user could read it: security takes it no other
 * way without a prompt. */
int nv_creds_store_keychain(const nv_secret *s, const char *service,
			    const char *account, nv_err *err);

#endif
