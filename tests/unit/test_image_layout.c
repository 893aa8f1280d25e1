/* Unit tests of host/image/layout.c without a registry: index.json parsed
 * (one image manifest, its media type, digest and size; every malformed
 * or unexpected form refused), and OCI layouts written here into a
 * temporary folder read back: a good one, then one fault each (manifest
 * bytes or size not what the index says, a blob missing, of the wrong
 * size or a symlink, an index or a list where an image belongs). */
#include "image/layout.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/fsutil.h"
#include "core/sha256.h"

#include "nv_test.h"

#define H8(c) c c c c c c c c
/* "sha256:" and 64 times the character c */
#define D(c) "sha256:" H8(c) H8(c) H8(c) H8(c) H8(c) H8(c) H8(c) H8(c)

static char tmp[256];

/* An index.json naming one entry. */
static const char *index_text(const char *media_type, const char *digest,
			      const char *size)
{
	static char text[1024];

	snprintf(text, sizeof(text),
		 "{\"schemaVersion\":2,\"mediaType\":\"" NV_OCI_MT_INDEX
		 "\",\"manifests\":[{\"mediaType\":\"%s\",\"digest\":\"%s\","
		 "\"size\":%s,\"annotations\":{\"org.opencontainers.image."
		 "ref.name\":\"latest\"}}]}",
		 media_type, digest, size);
	return text;
}

static int parse(const char *text, size_t len, char *mt, char *digest,
		 int64_t *size, nv_err *err)
{
	nv_err_clear(err);
	memset(mt, 0, NV_OCI_MEDIA_MAX);
	memset(digest, 0, NV_IMAGE_DIGEST_LEN + 1);
	*size = -1;
	return nv_oci_layout_index_parse(text, len, mt, digest, size, err);
}

static void test_index_parse(void)
{
	static const char *const refused[] = {
		"",
		"{",
		"[]",
		"null",
		"\"x\"",
		"{}",
		/* schemaVersion */
		"{\"manifests\":[{\"mediaType\":\"" NV_OCI_MT_MANIFEST
		"\",\"digest\":\"" D("a") "\",\"size\":300}]}",
		"{\"schemaVersion\":1,\"manifests\":[{\"mediaType\":"
		"\"" NV_OCI_MT_MANIFEST
		"\",\"digest\":\"" D("a") "\","
					  "\"size\":300}]}",
		"{\"schemaVersion\":\"2\",\"manifests\":[{\"mediaType\":"
		"\"" NV_OCI_MT_MANIFEST
		"\",\"digest\":\"" D("a") "\","
					  "\"size\":300}]}",
		/* manifests: none, empty, two, not a list, not an object */
		"{\"schemaVersion\":2}",
		"{\"schemaVersion\":2,\"manifests\":[]}",
		"{\"schemaVersion\":2,\"manifests\":{}}",
		"{\"schemaVersion\":2,\"manifests\":[1]}",
		"{\"schemaVersion\":2,\"manifests\":[{\"mediaType\":"
		"\"" NV_OCI_MT_MANIFEST "\",\"digest\":\"" D(
			"a") "\","
			     "\"size\":300},{\"mediaType\":"
			     "\"" NV_OCI_MT_MANIFEST "\","
			     "\"digest\":\"" D("b") "\",\"size\":300}]}",
	};
	static const struct {
		const char *media_type, *digest, *size;
	} entries[] = {
		/* not an image manifest */
		{NV_OCI_MT_INDEX, D("a"), "300"},
		{NV_DOCKER_MT_LIST, D("a"), "300"},
		{NV_OCI_MT_CONFIG, D("a"), "300"},
		{NV_OCI_MT_LAYER_GZ, D("a"), "300"},
		{"", D("a"), "300"},
		{"application/vnd.oci.image.manifest.v1+jsonx", D("a"), "300"},
		/* digests */
		{NV_OCI_MT_MANIFEST, "sha256:abc", "300"},
		{NV_OCI_MT_MANIFEST, "", "300"},
		{NV_OCI_MT_MANIFEST, D("A"), "300"},
		{NV_OCI_MT_MANIFEST, D("g"), "300"},
		{NV_OCI_MT_MANIFEST, D("a") "0", "300"},
		{NV_OCI_MT_MANIFEST,
		 "sha512:" H8("a") H8("a") H8("a") H8("a") H8("a") H8("a")
			 H8("a") H8("a"),
		 "300"},
		{NV_OCI_MT_MANIFEST, "sha256:../../../../etc/passwd", "300"},
		/* sizes */
		{NV_OCI_MT_MANIFEST, D("a"), "0"},
		{NV_OCI_MT_MANIFEST, D("a"), "1"},
		{NV_OCI_MT_MANIFEST, D("a"), "-5"},
		{NV_OCI_MT_MANIFEST, D("a"), "\"300\""},
		{NV_OCI_MT_MANIFEST, D("a"), "null"},
		{NV_OCI_MT_MANIFEST, D("a"), "1e300"},
		{NV_OCI_MT_MANIFEST, D("a"), "4194305"},
		/* a size is a whole number of bytes (manifest.c says so
		 * of every other descriptor) */
		{NV_OCI_MT_MANIFEST, D("a"), "300.5"},
	};
	char mt[NV_OCI_MEDIA_MAX], digest[NV_IMAGE_DIGEST_LEN + 1];
	char *big;
	const char *t;
	int64_t size;
	nv_err err;
	size_t i;

	/* the index buildah writes */
	t = index_text(NV_OCI_MT_MANIFEST, D("a"), "529");
	CHECK(parse(t, strlen(t), mt, digest, &size, &err) == 0);
	CHECK_STR(mt, NV_OCI_MT_MANIFEST);
	CHECK_STR(digest, D("a"));
	CHECK(size == 529);
	/* a Docker schema2 manifest is an image too */
	t = index_text(NV_DOCKER_MT_MANIFEST, D("b"), "2");
	CHECK(parse(t, strlen(t), mt, digest, &size, &err) == 0);
	CHECK_STR(mt, NV_DOCKER_MT_MANIFEST);
	CHECK_STR(digest, D("b"));
	CHECK(size == 2);
	/* the largest manifest navette reads */
	t = index_text(NV_OCI_MT_MANIFEST, D("c"), "4194304");
	CHECK(parse(t, strlen(t), mt, digest, &size, &err) == 0);
	CHECK(size == (int64_t)NV_OCI_MANIFEST_MAX);
	/* only len bytes are read */
	t = index_text(NV_OCI_MT_MANIFEST, D("a"), "529");
	CHECK(parse(t, strlen(t) - 1, mt, digest, &size, &err) == NV_EINVAL);

	for (i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		if (parse(refused[i], strlen(refused[i]), mt, digest, &size,
			  &err) != NV_EINVAL) {
			fprintf(stderr, "index accepted: %s\n", refused[i]);
			CHECK(0);
			continue;
		}
		CHECK(err.message[0] != '\0' && err.hint[0] != '\0');
	}
	for (i = 0; i < sizeof(entries) / sizeof(entries[0]); i++) {
		t = index_text(entries[i].media_type, entries[i].digest,
			       entries[i].size);
		if (parse(t, strlen(t), mt, digest, &size, &err) != NV_EINVAL) {
			fprintf(stderr,
				"index entry accepted: mediaType '%s', "
				"digest '%s', size %s (read as %lld)\n",
				entries[i].media_type, entries[i].digest,
				entries[i].size, (long long)size);
			CHECK(0);
		}
	}
	t = index_text(NV_OCI_MT_INDEX, D("a"), "300");
	CHECK(parse(t, strlen(t), mt, digest, &size, &err) == NV_EINVAL);
	CHECK(strstr(err.message, NV_OCI_MT_INDEX) != NULL);

	/* index.json is bounded: padded to the bound it is read, one byte
	 * more and it is refused before parsing */
	big = malloc(NV_OCI_LAYOUT_INDEX_MAX + 2);
	if (!big) {
		CHECK(0);
		return;
	}
	t = index_text(NV_OCI_MT_MANIFEST, D("a"), "529");
	memset(big, ' ', NV_OCI_LAYOUT_INDEX_MAX + 1);
	memcpy(big, t, strlen(t));
	big[NV_OCI_LAYOUT_INDEX_MAX + 1] = '\0';
	CHECK(parse(big, NV_OCI_LAYOUT_INDEX_MAX, mt, digest, &size, &err) ==
	      0);
	CHECK(parse(big, NV_OCI_LAYOUT_INDEX_MAX + 1, mt, digest, &size,
		    &err) == NV_EINVAL);
	CHECK(strstr(err.message, "over") != NULL);
	free(big);
}

/* ---- layouts on disk ---- */

static int write_file(const char *dir, const char *name, const void *data,
		      size_t len)
{
	char path[1024];
	FILE *f;
	int ok;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "wb");
	if (!f)
		return -1;
	ok = fwrite(data, 1, len, f) == len;
	return fclose(f) == 0 && ok ? 0 : -1;
}

/* What a case changes of the good layout. */
struct fault {
	const char *name;
	/* the manifest's bytes in its blob (same length, another hash) */
	int tamper_manifest;
	/* added to the manifest's size in index.json */
	int index_size_delta;
	/* the index entry's media type (NULL: the manifest's) */
	const char *index_media_type;
	/* the layer blob: absent, bytes added (may be < 0), a symlink to a
	 * file of the same bytes */
	int no_layer, layer_extra, layer_symlink;
	int no_config, no_index;
	/* the "manifest" is an OCI index naming the good manifest */
	int manifest_is_index;
	/* Docker schema2 media types throughout */
	int docker;
};

static const char CONFIG[] =
	"{\"architecture\":\"amd64\",\"os\":\"linux\",\"rootfs\":{\"type\":"
	"\"layers\",\"diff_ids\":[\"" D("d") "\"]},\"config\":{}}";
static const char OCI_LAYOUT[] = "{\"imageLayoutVersion\": \"1.0.0\"}";
static const char LAYER[] = "not really a gzip'd tar, but bytes of a size\n";

struct written {
	char dir[512];
	char manifest_digest[NV_IMAGE_DIGEST_LEN + 1];
	char config_digest[NV_IMAGE_DIGEST_LEN + 1];
	char layer_digest[NV_IMAGE_DIGEST_LEN + 1];
	char manifest[2048];
	size_t manifest_len;
};

static int digest_of(const void *data, size_t len,
		     char out[NV_IMAGE_DIGEST_LEN + 1])
{
	char hex[NV_SHA256_HEX_LEN + 1];
	nv_err err;

	if (nv_sha256_bytes(data, len, hex, &err))
		return -1;
	snprintf(out, NV_IMAGE_DIGEST_LEN + 1, "sha256:%s", hex);
	return 0;
}

/* Writes the layout of f into tmp/<f->name>. 0, or -1 (the test cannot
 * go on). */
static int write_layout(const struct fault *f, struct written *w)
{
	const char *mt_manifest =
		f->docker ? NV_DOCKER_MT_MANIFEST : NV_OCI_MT_MANIFEST;
	const char *mt_config =
		f->docker ? NV_DOCKER_MT_CONFIG : NV_OCI_MT_CONFIG;
	const char *mt_layer =
		f->docker ? NV_DOCKER_MT_LAYER_GZ : NV_OCI_MT_LAYER_GZ;
	char blobs[600], name[NV_IMAGE_DIGEST_LEN + 16], index[1024];
	char size[32], other[600], *manifest;
	nv_err err;
	int n;

	memset(w, 0, sizeof(*w));
	snprintf(w->dir, sizeof(w->dir), "%s/%s", tmp, f->name);
	snprintf(blobs, sizeof(blobs), "%s/blobs/sha256", w->dir);
	if (nv_mkdir_p(blobs, 0755, &err))
		return -1;
	if (write_file(w->dir, "oci-layout", OCI_LAYOUT, strlen(OCI_LAYOUT)))
		return -1;
	if (digest_of(CONFIG, strlen(CONFIG), w->config_digest) ||
	    digest_of(LAYER, strlen(LAYER), w->layer_digest))
		return -1;

	manifest = w->manifest;
	n = snprintf(manifest, sizeof(w->manifest),
		     "{\"schemaVersion\":2,\"mediaType\":\"%s\",\"config\":{"
		     "\"mediaType\":\"%s\",\"digest\":\"%s\",\"size\":%zu},"
		     "\"layers\":[{\"mediaType\":\"%s\",\"digest\":\"%s\","
		     "\"size\":%zu}]}\n",
		     mt_manifest, mt_config, w->config_digest, strlen(CONFIG),
		     mt_layer, w->layer_digest, strlen(LAYER));
	if (n < 0 || (size_t)n >= sizeof(w->manifest))
		return -1;
	if (f->manifest_is_index) {
		/* the good manifest kept as a blob, the index in its place */
		char inner[NV_IMAGE_DIGEST_LEN + 1];

		if (digest_of(manifest, (size_t)n, inner))
			return -1;
		snprintf(name, sizeof(name), "%s", inner + 7);
		if (write_file(blobs, name, manifest, (size_t)n))
			return -1;
		n = snprintf(manifest, sizeof(w->manifest),
			     "{\"schemaVersion\":2,\"mediaType\":\"%s\","
			     "\"manifests\":[{\"mediaType\":\"%s\",\"digest\":"
			     "\"%s\",\"size\":%d,\"platform\":{"
			     "\"architecture\":\"amd64\",\"os\":\"linux\"}}]}",
			     NV_OCI_MT_INDEX, mt_manifest, inner, n);
		if (n < 0 || (size_t)n >= sizeof(w->manifest))
			return -1;
	}
	w->manifest_len = (size_t)n;
	if (digest_of(manifest, w->manifest_len, w->manifest_digest))
		return -1;

	/* the blobs */
	snprintf(name, sizeof(name), "%s", w->manifest_digest + 7);
	if (f->tamper_manifest) {
		/* the same length and valid JSON, but other bytes */
		char bad[sizeof(w->manifest)];

		memcpy(bad, manifest, w->manifest_len);
		if (bad[w->manifest_len - 1] == '\n')
			bad[w->manifest_len - 1] = ' ';
		else
			bad[w->manifest_len - 1] = '\n';
		if (write_file(blobs, name, bad, w->manifest_len))
			return -1;
	} else if (write_file(blobs, name, manifest, w->manifest_len)) {
		return -1;
	}
	snprintf(name, sizeof(name), "%s", w->config_digest + 7);
	if (!f->no_config && write_file(blobs, name, CONFIG, strlen(CONFIG)))
		return -1;
	snprintf(name, sizeof(name), "%s", w->layer_digest + 7);
	if (f->layer_symlink) {
		char target[700], link[700];

		snprintf(other, sizeof(other), "%s/elsewhere", w->dir);
		if (nv_mkdir_p(other, 0755, &err) ||
		    write_file(other, "layer", LAYER, strlen(LAYER)))
			return -1;
		snprintf(target, sizeof(target), "%s/layer", other);
		snprintf(link, sizeof(link), "%s/%s", blobs, name);
		if (symlink(target, link) != 0)
			return -1;
	} else if (!f->no_layer) {
		char bytes[sizeof(LAYER) + 16];
		size_t len = (size_t)((long)strlen(LAYER) + f->layer_extra);

		memset(bytes, 'x', sizeof(bytes));
		memcpy(bytes, LAYER, strlen(LAYER) < len ? strlen(LAYER) : len);
		if (write_file(blobs, name, bytes, len))
			return -1;
	}

	if (f->no_index)
		return 0;
	snprintf(size, sizeof(size), "%lld",
		 (long long)w->manifest_len + f->index_size_delta);
	snprintf(index, sizeof(index), "%s",
		 index_text(f->index_media_type ? f->index_media_type
						: mt_manifest,
			    w->manifest_digest, size));
	return write_file(w->dir, "index.json", index, strlen(index));
}

static void test_good_layouts(void)
{
	static const struct fault oci = {.name = "good"};
	static const struct fault docker = {.name = "docker", .docker = 1};
	const struct fault *cases[] = {&oci, &docker};

	for (size_t i = 0; i < 2; i++) {
		struct written w;
		nv_oci_layout l;
		nv_err err;

		if (write_layout(cases[i], &w) != 0) {
			fprintf(stderr, "cannot write the layout %s\n",
				cases[i]->name);
			CHECK(0);
			continue;
		}
		nv_err_clear(&err);
		if (nv_oci_layout_read(w.dir, &l, &err) != 0) {
			fprintf(stderr, "%s: %s\n", cases[i]->name,
				err.message);
			CHECK(0);
			continue;
		}
		CHECK_STR(l.digest, w.manifest_digest);
		CHECK_STR(l.media_type, cases[i]->docker ? NV_DOCKER_MT_MANIFEST
							 : NV_OCI_MT_MANIFEST);
		CHECK(l.manifest.len == w.manifest_len &&
		      memcmp(l.manifest.data, w.manifest, w.manifest_len) == 0);
		CHECK(l.parsed.kind == NV_OCI_IMAGE);
		CHECK(l.parsed.docker == cases[i]->docker);
		CHECK_STR(l.parsed.config.digest, w.config_digest);
		CHECK(l.parsed.config.size == (int64_t)strlen(CONFIG));
		CHECK(l.parsed.nentries == 1);
		if (l.parsed.nentries == 1) {
			CHECK_STR(l.parsed.entries[0].digest, w.layer_digest);
			CHECK(l.parsed.entries[0].size ==
			      (int64_t)strlen(LAYER));
		}
		nv_oci_layout_free(&l);
		/* freeing twice is harmless */
		nv_oci_layout_free(&l);
	}
}

static void test_bad_layouts(void)
{
	static const struct {
		struct fault f;
		const char *named; /* in the message */
	} cases[] = {
		{{.name = "tampered", .tamper_manifest = 1}, "are not sha256:"},
		{{.name = "size-more", .index_size_delta = 1},
		 "index.json says"},
		{{.name = "size-less", .index_size_delta = -1},
		 "index.json says"},
		{{.name = "no-layer", .no_layer = 1}, "lacks the blob"},
		{{.name = "no-config", .no_config = 1}, "lacks the blob"},
		{{.name = "layer-longer", .layer_extra = 1},
		 "the manifest says"},
		{{.name = "layer-shorter", .layer_extra = -1},
		 "the manifest says"},
		{{.name = "layer-symlink", .layer_symlink = 1},
		 "lacks the blob"},
		{{.name = "index-of-index",
		  .index_media_type = NV_OCI_MT_INDEX},
		 "not an image manifest"},
		{{.name = "docker-list", .index_media_type = NV_DOCKER_MT_LIST},
		 "not an image manifest"},
		/* the index says image, the blob is a list */
		{{.name = "list-in-disguise", .manifest_is_index = 1},
		 "a list"},
		{{.name = "no-index", .no_index = 1}, ""},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct written w;
		nv_oci_layout l;
		nv_err err;
		int rc;

		if (write_layout(&cases[i].f, &w) != 0) {
			fprintf(stderr, "cannot write the layout %s\n",
				cases[i].f.name);
			CHECK(0);
			continue;
		}
		nv_err_clear(&err);
		rc = nv_oci_layout_read(w.dir, &l, &err);
		if (rc == 0) {
			fprintf(stderr, "layout %s read\n", cases[i].f.name);
			CHECK(0);
			nv_oci_layout_free(&l);
			continue;
		}
		CHECK(rc < 0 && err.code == rc && err.message[0] != '\0');
		if (!strstr(err.message, cases[i].named)) {
			fprintf(stderr, "%s: message '%s' lacks '%s'\n",
				cases[i].f.name, err.message, cases[i].named);
			CHECK(0);
		}
		/* nothing is left to free, and freeing is harmless */
		CHECK(l.manifest.data == NULL && l.parsed.entries == NULL);
		nv_oci_layout_free(&l);
	}
	{
		nv_oci_layout l;
		nv_err err;
		char missing[600];

		snprintf(missing, sizeof(missing), "%s/no-such-layout", tmp);
		CHECK(nv_oci_layout_read(missing, &l, &err) != 0);
	}
}

int main(void)
{
	nv_err err;
	int rc;

	snprintf(tmp, sizeof(tmp), "/tmp/nv-test-layout-XXXXXX");
	if (!mkdtemp(tmp)) {
		perror("mkdtemp");
		return 2;
	}
	test_index_parse();
	test_good_layouts();
	test_bad_layouts();
	rc = nv_test_done();
	if (nv_remove_tree(tmp, &err) != 0)
		fprintf(stderr, "cannot remove %s: %s\n", tmp, err.message);
	return rc;
}
