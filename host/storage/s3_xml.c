/* The XML answers of S3 (errors, listings, multipart results), parsed with
 * expat and bounded: nesting depth, text per element, document size. A
 * document type declaration (entities) is refused outright: S3 never sends
 * one. Pure C, no I/O. */
#include "storage/s3.h"
#include "core/hex.h"

#include <errno.h>
#include <expat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define XML_DEPTH_MAX 8
#define XML_NAME_MAX  64
#define XML_TEXT_MAX  (3 * NV_FILESTORE_KEY_MAX + 64) /* a %-encoded key */

struct walk {
	XML_Parser parser;
	int depth; /* of the element being read; the root is 1 */
	char names[XML_DEPTH_MAX][XML_NAME_MAX];
	char text[XML_TEXT_MAX + 1];
	size_t text_len;
	int text_over; /* the element's text was cut */
	int (*on_end)(struct walk *w);
	void *payload;
	int rc; /* set when a handler stopped the parse */
	nv_err *err;
};

static const char *walk_name(const struct walk *w, int depth)
{
	return depth >= 1 && depth <= w->depth ? w->names[depth - 1] : "";
}

static void walk_stop(struct walk *w, int rc)
{
	if (!w->rc)
		w->rc = rc;
	XML_StopParser(w->parser, XML_FALSE);
}

static void XMLCALL on_start(void *ud, const XML_Char *name,
			     const XML_Char **attrs)
{
	struct walk *w = ud;

	(void)attrs;
	if (w->depth >= XML_DEPTH_MAX) {
		walk_stop(w, nv_err_set(w->err, NV_EBACKEND,
					"the server misbehaves",
					"S3 answer nested deeper than %d",
					XML_DEPTH_MAX));
		return;
	}
	snprintf(w->names[w->depth], XML_NAME_MAX, "%s", name);
	w->depth++;
	w->text_len = 0;
	w->text_over = 0;
	w->text[0] = '\0';
}

static void XMLCALL on_end(void *ud, const XML_Char *name)
{
	struct walk *w = ud;
	int rc;

	(void)name;
	if (w->on_end) {
		rc = w->on_end(w);
		if (rc) {
			walk_stop(w, rc);
			return;
		}
	}
	w->depth--;
	w->text_len = 0;
	w->text[0] = '\0';
}

static void XMLCALL on_text(void *ud, const XML_Char *s, int len)
{
	struct walk *w = ud;
	size_t n = len > 0 ? (size_t)len : 0;

	if (n > XML_TEXT_MAX - w->text_len) {
		n = XML_TEXT_MAX - w->text_len;
		w->text_over = 1;
	}
	memcpy(w->text + w->text_len, s, n);
	w->text_len += n;
	w->text[w->text_len] = '\0';
}

static void XMLCALL on_doctype(void *ud, const XML_Char *name,
			       const XML_Char *sysid, const XML_Char *pubid,
			       int has_internal_subset)
{
	struct walk *w = ud;

	(void)name;
	(void)sysid;
	(void)pubid;
	(void)has_internal_subset;
	walk_stop(w, nv_err_set(w->err, NV_EBACKEND, "the server misbehaves",
				"S3 answer holds a document type declaration"));
}

/* Parses xml into w (zeroed first), calling on_end_fn(w) with w->payload set
 * to payload at each element's end; root (may be NULL) is the name the
 * root element must have. */
static int walk_run(struct walk *w, int (*on_end_fn)(struct walk *),
		    void *payload, const char *xml, size_t len,
		    const char *root, nv_err *err)
{
	enum XML_Status st;
	int rc = 0;

	memset(w, 0, sizeof(*w));
	w->on_end = on_end_fn;
	w->payload = payload;
	w->err = err;
	if (len > NV_S3_XML_MAX)
		return nv_err_set(err, NV_ENOMEM, "the server misbehaves",
				  "S3 answer over %zu bytes", NV_S3_XML_MAX);
	w->parser = XML_ParserCreate(NULL);
	if (!w->parser)
		return nv_err_set(err, NV_ENOMEM, NULL, "out of memory");
	XML_SetUserData(w->parser, w);
	XML_SetElementHandler(w->parser, on_start, on_end);
	XML_SetCharacterDataHandler(w->parser, on_text);
	XML_SetStartDoctypeDeclHandler(w->parser, on_doctype);
	st = XML_Parse(w->parser, xml, (int)len, XML_TRUE);
	if (w->rc) {
		rc = w->rc;
	} else if (st != XML_STATUS_OK) {
		rc = nv_err_set(
			err, NV_EBACKEND, "the server misbehaves",
			"malformed XML from S3: %s (line %lu)",
			XML_ErrorString(XML_GetErrorCode(w->parser)),
			(unsigned long)XML_GetCurrentLineNumber(w->parser));
	} else if (root && strcmp(w->names[0], root) != 0) {
		rc = nv_err_set(err, NV_EBACKEND, "the server misbehaves",
				"S3 answered <%s>, expected <%s>", w->names[0],
				root);
	}
	XML_ParserFree(w->parser);
	w->parser = NULL;
	return rc;
}

/* --- <Error> ------------------------------------------------------------- */

/* Cut to the field's size on purpose (a server's text is bounded here). */
static void copy_text(char *out, size_t cap, const struct walk *w)
{
	size_t n = strnlen(w->text, cap - 1);
	memcpy(out, w->text, n);
	out[n] = '\0';
}

static int error_end(struct walk *w)
{
	nv_s3_error_doc *e = w->payload;
	const char *name = walk_name(w, w->depth);

	if (w->depth != 2 || strcmp(walk_name(w, 1), "Error") != 0)
		return 0;
	if (strcmp(name, "Code") == 0)
		copy_text(e->code, sizeof(e->code), w);
	else if (strcmp(name, "Message") == 0)
		copy_text(e->message, sizeof(e->message), w);
	else if (strcmp(name, "RequestId") == 0)
		copy_text(e->request_id, sizeof(e->request_id), w);
	return 0;
}

int nv_s3_xml_error(const char *xml, size_t len, nv_s3_error_doc *out)
{
	struct walk w;

	memset(out, 0, sizeof(*out));
	if (!xml || len == 0 ||
	    walk_run(&w, error_end, out, xml, len, "Error", NULL)) {
		memset(out, 0, sizeof(*out));
		return -1;
	}
	return 0;
}

/* --- listings ------------------------------------------------------------ */

struct list_state {
	nv_s3_xml_list_cb callback;
	void *payload;
	int uploads; /* ListMultipartUploadsResult */
	int url_encoded;
	nv_object_info info;
	char upload_id[NV_S3_UPLOAD_ID_MAX + 1];
	int has_key;
	int truncated;
	char *next_token;
	size_t next_token_cap;
};

/* encoding-type=url: %XX escapes, and '+' for a space (as AWS sends). */
static int url_decode(char *out, size_t cap, const char *in, size_t *out_len)
{
	size_t n = 0;

	for (const char *p = in; *p; p++) {
		int c = (unsigned char)*p;

		if (c == '%') {
			int hi = nv_hex_value((unsigned char)p[1]),
			    lo = hi < 0 ? -1
					: nv_hex_value((unsigned char)p[2]);

			if (hi < 0 || lo < 0)
				return -1;
			c = hi * 16 + lo;
			p += 2;
		} else if (c == '+') {
			c = ' ';
		}
		if (n + 1 >= cap)
			return -1;
		out[n++] = (char)c;
	}
	out[n] = '\0';
	*out_len = n;
	return 0;
}

/* "2024-05-01T12:34:56.000Z" -> seconds since the epoch; 0 if unparsable. */
static int64_t iso8601_parse(const char *s)
{
	struct tm tm;
	int y, mo, d, h, mi, sec;

	if (sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d", &y, &mo, &d, &h, &mi, &sec) !=
	    6)
		return 0;
	memset(&tm, 0, sizeof(tm));
	tm.tm_year = y - 1900;
	tm.tm_mon = mo - 1;
	tm.tm_mday = d;
	tm.tm_hour = h;
	tm.tm_min = mi;
	tm.tm_sec = sec;
	return (int64_t)timegm(&tm);
}

static int list_key(struct walk *w, struct list_state *st)
{
	size_t n = 0;
	int bad = w->text_over;

	if (!bad && st->url_encoded)
		bad = url_decode(st->info.key, sizeof(st->info.key), w->text,
				 &n) != 0;
	else if (!bad) {
		n = w->text_len;
		bad = n >= sizeof(st->info.key);
		if (!bad)
			memcpy(st->info.key, w->text, n + 1);
	}
	if (bad || n == 0 || memchr(st->info.key, '\0', n))
		return nv_err_set(w->err, NV_EBACKEND,
				  "the store holds a key navette cannot "
				  "handle",
				  "S3 listed an empty, malformed or over-long "
				  "key (more than %d bytes)",
				  NV_FILESTORE_KEY_MAX);
	st->has_key = 1;
	return 0;
}

static int list_end(struct walk *w)
{
	struct list_state *st = w->payload;
	const char *name = walk_name(w, w->depth);
	const char *entry = st->uploads ? "Upload" : "Contents";
	int rc;

	if (w->depth == 2) {
		if (strcmp(name, "IsTruncated") == 0) {
			st->truncated = strcmp(w->text, "true") == 0;
		} else if (strcmp(name, "EncodingType") == 0) {
			st->url_encoded = strcmp(w->text, "url") == 0;
		} else if (strcmp(name, "NextContinuationToken") == 0 &&
			   st->next_token) {
			if (w->text_over || w->text_len >= st->next_token_cap)
				return nv_err_set(w->err, NV_EBACKEND,
						  "the server misbehaves",
						  "S3 continuation token too "
						  "long");
			memcpy(st->next_token, w->text, w->text_len + 1);
		} else if (strcmp(name, entry) == 0) {
			if (!st->has_key)
				return nv_err_set(w->err, NV_EBACKEND,
						  "the server misbehaves",
						  "S3 listed an entry without "
						  "a key");
			rc = st->callback(&st->info,
					  st->uploads ? st->upload_id : NULL,
					  st->payload);
			memset(&st->info, 0, sizeof(st->info));
			st->upload_id[0] = '\0';
			st->has_key = 0;
			return rc;
		}
		return 0;
	}
	if (w->depth != 3 || strcmp(walk_name(w, 2), entry) != 0)
		return 0;
	if (strcmp(name, "Key") == 0)
		return list_key(w, st);
	if (strcmp(name, "Size") == 0) {
		char *stop;
		unsigned long long v = strtoull(w->text, &stop, 10);

		if (!w->text[0] || *stop)
			return nv_err_set(
				w->err, NV_EBACKEND, "the server misbehaves",
				"S3 listed a bad size '%.32s'", w->text);
		st->info.size = v;
	} else if (strcmp(name, "LastModified") == 0 ||
		   strcmp(name, "Initiated") == 0) {
		st->info.mtime = iso8601_parse(w->text);
	} else if (strcmp(name, "UploadId") == 0) {
		if (w->text_over || w->text_len >= sizeof(st->upload_id))
			return nv_err_set(w->err, NV_EBACKEND,
					  "the server misbehaves",
					  "S3 upload id too long");
		memcpy(st->upload_id, w->text, w->text_len + 1);
	}
	return 0;
}

/* The EncodingType element may follow the entries: look for it first, so
 * keys are decoded (or not) whatever the order. */
static int encoding_end(struct walk *w)
{
	int *url = w->payload;

	if (w->depth == 2 &&
	    strcmp(walk_name(w, w->depth), "EncodingType") == 0)
		*url = strcmp(w->text, "url") == 0;
	return 0;
}

int nv_s3_xml_list(const char *xml, size_t len, nv_s3_xml_list_cb callback,
		   void *payload, int *truncated, char *next_token,
		   size_t next_token_cap, nv_err *err)
{
	struct walk w;
	struct list_state st;
	int url = 0, rc;
	const char *root;

	if (truncated)
		*truncated = 0;
	if (next_token && next_token_cap)
		next_token[0] = '\0';
	if (!callback)
		return nv_err_set(err, NV_EINVAL, NULL, "no list callback");
	rc = walk_run(&w, encoding_end, &url, xml, len, NULL, err);
	if (rc)
		return rc;
	if (strcmp(w.names[0], "ListBucketResult") != 0 &&
	    strcmp(w.names[0], "ListMultipartUploadsResult") != 0)
		return nv_err_set(err, NV_EBACKEND, "the server misbehaves",
				  "S3 answered <%s> to a listing", w.names[0]);
	root = w.names[0][4] == 'B' ? "ListBucketResult"
				    : "ListMultipartUploadsResult";

	memset(&st, 0, sizeof(st));
	st.callback = callback;
	st.payload = payload;
	st.uploads = root[4] == 'M';
	st.url_encoded = url;
	st.next_token = next_token;
	st.next_token_cap = next_token_cap;
	rc = walk_run(&w, list_end, &st, xml, len, root, err);
	if (rc)
		return rc;
	if (truncated)
		*truncated = st.truncated;
	return 0;
}

/* --- ListParts ------------------------------------------------------------ */

struct parts_state {
	nv_s3_part_cb callback;
	void *payload;
	int number;
	uint64_t size;
	char etag[NV_S3_ETAG_MAX + 1];
	int has_number, has_size, has_etag;
	int truncated;
	int next_marker;
};

/* A decimal in 0..max, the whole text. */
static int parse_uint(const char *s, unsigned long long max,
		      unsigned long long *out)
{
	char *stop;
	unsigned long long v;

	if (!s[0] || s[0] == '-' || s[0] == '+' || s[0] == ' ')
		return -1;
	errno = 0;
	v = strtoull(s, &stop, 10);
	if (errno || *stop || v > max)
		return -1;
	*out = v;
	return 0;
}

static int parts_end(struct walk *w)
{
	struct parts_state *st = w->payload;
	const char *name = walk_name(w, w->depth);
	unsigned long long v;

	if (w->depth == 2) {
		if (strcmp(name, "IsTruncated") == 0) {
			st->truncated = strcmp(w->text, "true") == 0;
		} else if (strcmp(name, "NextPartNumberMarker") == 0) {
			if (parse_uint(w->text, NV_S3_PARTS_MAX, &v))
				goto bad;
			st->next_marker = (int)v;
		} else if (strcmp(name, "Part") == 0) {
			int rc;

			if (!st->has_number || !st->has_size || !st->has_etag)
				goto bad;
			rc = st->callback(st->number, st->size, st->etag,
					  st->payload);
			st->has_number = st->has_size = st->has_etag = 0;
			return rc;
		}
		return 0;
	}
	if (w->depth != 3 || strcmp(walk_name(w, 2), "Part") != 0)
		return 0;
	if (strcmp(name, "PartNumber") == 0) {
		if (parse_uint(w->text, NV_S3_PARTS_MAX, &v) || v == 0)
			goto bad;
		st->number = (int)v;
		st->has_number = 1;
	} else if (strcmp(name, "Size") == 0) {
		if (parse_uint(w->text, NV_S3_PART_SIZE_MAX, &v))
			goto bad;
		st->size = v;
		st->has_size = 1;
	} else if (strcmp(name, "ETag") == 0) {
		const char *e = w->text;
		size_t n;

		if (*e == '"')
			e++;
		n = strcspn(e, "\"");
		if (w->text_over || n == 0 || n > NV_S3_ETAG_MAX)
			goto bad;
		memcpy(st->etag, e, n);
		st->etag[n] = '\0';
		st->has_etag = 1;
	}
	return 0;
bad:
	return nv_err_set(w->err, NV_EBACKEND, "the server misbehaves",
			  "S3 part listing holds a bad <%s> '%.40s'", name,
			  w->text);
}

int nv_s3_xml_parts(const char *xml, size_t len, nv_s3_part_cb callback,
		    void *payload, int *truncated, int *next_marker,
		    nv_err *err)
{
	struct walk w;
	struct parts_state st;
	int rc;

	if (truncated)
		*truncated = 0;
	if (next_marker)
		*next_marker = 0;
	if (!callback)
		return nv_err_set(err, NV_EINVAL, NULL, "no part callback");
	memset(&st, 0, sizeof(st));
	st.callback = callback;
	st.payload = payload;
	rc = walk_run(&w, parts_end, &st, xml, len, "ListPartsResult", err);
	if (rc)
		return rc;
	if (truncated)
		*truncated = st.truncated;
	if (next_marker)
		*next_marker = st.next_marker;
	return 0;
}

/* --- DeleteResult ----------------------------------------------------------
 */

struct deleted_state {
	nv_s3_deleted_cb callback;
	void *payload;
	char key[NV_FILESTORE_KEY_MAX + 1];
	char code[64];
	char message[256];
	int has_key;
};

static int deleted_end(struct walk *w)
{
	struct deleted_state *st = w->payload;
	const char *name = walk_name(w, w->depth);
	const char *entry = walk_name(w, 2);

	if (w->depth == 2 &&
	    (strcmp(name, "Deleted") == 0 || strcmp(name, "Error") == 0)) {
		int error = name[0] == 'E', rc;

		if (!st->has_key)
			return nv_err_set(w->err, NV_EBACKEND,
					  "the server misbehaves",
					  "S3 delete result without a key");
		rc = st->callback(st->key, error ? st->code : NULL,
				  error ? st->message : NULL, st->payload);
		memset(st->key, 0, sizeof(st->key));
		st->code[0] = st->message[0] = '\0';
		st->has_key = 0;
		return rc;
	}
	if (w->depth != 3 ||
	    (strcmp(entry, "Deleted") != 0 && strcmp(entry, "Error") != 0))
		return 0;
	if (strcmp(name, "Key") == 0) {
		if (w->text_over || w->text_len == 0 ||
		    w->text_len >= sizeof(st->key) ||
		    memchr(w->text, '\0', w->text_len))
			return nv_err_set(w->err, NV_EBACKEND,
					  "the server misbehaves",
					  "S3 delete result with an empty or "
					  "over-long key");
		memcpy(st->key, w->text, w->text_len + 1);
		st->has_key = 1;
	} else if (strcmp(name, "Code") == 0) {
		copy_text(st->code, sizeof(st->code), w);
	} else if (strcmp(name, "Message") == 0) {
		copy_text(st->message, sizeof(st->message), w);
	}
	return 0;
}

int nv_s3_xml_delete_result(const char *xml, size_t len,
			    nv_s3_deleted_cb callback, void *payload,
			    nv_err *err)
{
	struct walk w;
	struct deleted_state st;

	if (!callback)
		return nv_err_set(err, NV_EINVAL, NULL, "no delete callback");
	memset(&st, 0, sizeof(st));
	st.callback = callback;
	st.payload = payload;
	return walk_run(&w, deleted_end, &st, xml, len, "DeleteResult", err);
}

/* --- one field ----------------------------------------------------------- */

struct field_state {
	const char *name;
	char *out;
	size_t cap;
	int found;
	int too_long;
};

static int field_end(struct walk *w)
{
	struct field_state *f = w->payload;

	if (f->found || w->depth != 2 || strcmp(walk_name(w, 2), f->name) != 0)
		return 0;
	f->found = 1;
	if (w->text_over || w->text_len >= f->cap)
		f->too_long = 1;
	else
		memcpy(f->out, w->text, w->text_len + 1);
	return 0;
}

int nv_s3_xml_field(const char *xml, size_t len, const char *root,
		    const char *name, char *out, size_t cap, nv_err *err)
{
	struct walk w;
	struct field_state f = {name, out, cap, 0, 0};
	int rc;

	if (cap)
		out[0] = '\0';
	rc = walk_run(&w, field_end, &f, xml, len, root, err);
	if (rc)
		return rc;
	if (!f.found || f.too_long || cap == 0)
		return nv_err_set(err, NV_EBACKEND, "the server misbehaves",
				  "S3 answer <%s> lacks a usable <%s>", root,
				  name);
	return 0;
}
