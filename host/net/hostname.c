/* A URL's host in one canonical form (see hostname.h): names decoded and
 * lowered, IPv4 in every form inet_aton reads turned dotted, IPv6 written
 * as RFC 5952 says, IPv4-mapped IPv6 turned IPv4, and the loopback flag. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "core/hex.h"
#include "net/hostname.h"

static int invalid(nv_err *err, const char *why)
{
	return nv_err_set(err, NV_EINVAL,
			  "write the host as a name, an IPv4 address or an "
			  "IPv6 address in brackets",
			  "bad host: %s", why);
}

/* One part of an IPv4 address as inet_aton reads it: 0x hex, 0 octal or
 * decimal, at most 32 bits. 0 when s[0..n) is not one. */
static int ipv4_part(const char *s, size_t n, uint32_t *out)
{
	uint64_t v = 0;
	unsigned base = 10;
	size_t i = 0;

	if (n == 0)
		return 0;
	if (n >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		base = 16;
		i = 2;
		if (n == 2)
			return 0; /* "0x" alone: a name */
	} else if (n >= 2 && s[0] == '0') {
		base = 8;
		i = 1;
	}
	for (; i < n; i++) {
		int d = nv_hex_value((unsigned char)s[i]);
		if (d < 0 || (unsigned)d >= base)
			return 0;
		v = v * base + (unsigned)d;
		if (v > 0xffffffffu)
			return 0;
	}
	*out = (uint32_t)v;
	return 1;
}

/* s[0..n) as an IPv4 address of 1 to 4 parts (the last fills the bytes
 * left: 127.1 is 127.0.0.1). 0 when it is not one. */
static int ipv4_parse(const char *s, size_t n, uint32_t *addr)
{
	uint32_t parts[4];
	size_t count = 0, start = 0, i;

	for (i = 0; i <= n; i++) {
		if (i < n && s[i] != '.')
			continue;
		if (count == 4 ||
		    !ipv4_part(s + start, i - start, &parts[count]))
			return 0;
		count++;
		start = i + 1;
	}
	*addr = 0;
	for (i = 0; i + 1 < count; i++) {
		if (parts[i] > 255)
			return 0;
		*addr |= parts[i] << (8 * (3 - i));
	}
	if (count < 4 && parts[count - 1] > (0xffffffffu >> (8 * (count - 1))))
		return 0;
	if (count == 4 && parts[3] > 255)
		return 0;
	*addr |= parts[count - 1];
	return 1;
}

static void ipv4_set(uint32_t addr, nv_host *out)
{
	out->kind = NV_HOST_IPV4;
	out->loopback = (addr >> 24) == 127 || addr == 0;
	snprintf(out->canonical, sizeof(out->canonical), "%u.%u.%u.%u",
		 (unsigned)(addr >> 24), (unsigned)((addr >> 16) & 0xff),
		 (unsigned)((addr >> 8) & 0xff), (unsigned)(addr & 0xff));
}

/* The inside of [...]: an address, then an optional zone after '%'
 * ("%25" in a URL). */
static int ipv6_read(const char *s, size_t n, nv_host *out, nv_err *err)
{
	static const unsigned char mapped[12] = {0, 0, 0, 0, 0,    0,
						 0, 0, 0, 0, 0xff, 0xff};
	static const unsigned char zero[16];
	/* [text%zone] fits NV_HOST_MAX */
	char addr[64], text[INET6_ADDRSTRLEN],
		zone[NV_HOST_MAX - INET6_ADDRSTRLEN - 4];
	const char *pct = memchr(s, '%', n);
	size_t alen = pct ? (size_t)(pct - s) : n, zlen = 0;
	unsigned char bin[16];

	if (alen == 0 || alen >= sizeof(addr))
		return invalid(err, "malformed IPv6 address");
	memcpy(addr, s, alen);
	addr[alen] = '\0';
	if (inet_pton(AF_INET6, addr, bin) != 1)
		return invalid(err, "malformed IPv6 address");
	if (pct) {
		const char *z = pct + 1;
		size_t left = n - alen - 1;
		if (left >= 2 && z[0] == '2' && z[1] == '5') {
			z += 2;
			left -= 2;
		}
		if (left == 0 || left >= sizeof(zone))
			return invalid(err, "malformed IPv6 zone");
		for (size_t i = 0; i < left; i++) {
			unsigned char c = (unsigned char)z[i];
			if (c <= ' ' || c == 0x7f || c == '%' || c == ']')
				return invalid(err, "malformed IPv6 zone");
			zone[zlen++] =
				(char)(c >= 'A' && c <= 'Z' ? c + 32 : c);
		}
	}
	zone[zlen] = '\0';
	if (memcmp(bin, mapped, sizeof(mapped)) == 0) {
		ipv4_set((uint32_t)bin[12] << 24 | (uint32_t)bin[13] << 16 |
				 (uint32_t)bin[14] << 8 | bin[15],
			 out);
		return 0;
	}
	if (!inet_ntop(AF_INET6, bin, text, sizeof(text)))
		return invalid(err, "malformed IPv6 address");
	out->kind = NV_HOST_IPV6;
	out->loopback = memcmp(bin, zero, 15) == 0 && bin[15] <= 1;
	snprintf(out->canonical, sizeof(out->canonical), "[%s%s%s]", text,
		 zlen ? "%" : "", zone);
	return 0;
}

int nv_host_canonical(const char *text, size_t len, nv_host *out, nv_err *err)
{
	char name[NV_HOST_MAX];
	size_t n = 0, i;
	uint32_t v4;

	memset(out, 0, sizeof(*out));
	if (!text || len == 0)
		return invalid(err, "empty host");
	if (len >= NV_HOST_MAX * 3)
		return invalid(err, "host too long");
	if (text[0] == '[') {
		if (len < 3 || text[len - 1] != ']')
			return invalid(err, "unclosed '['");
		return ipv6_read(text + 1, len - 2, out, err);
	}
	/* a name: %XX decoded (libcurl decodes a host before it resolves
	 * it), lowered */
	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)text[i];
		if (c == '%') {
			int hi = i + 2 < len
					 ? nv_hex_value(
						   (unsigned char)text[i + 1])
					 : -1;
			int lo = hi >= 0 ? nv_hex_value(
						   (unsigned char)text[i + 2])
					 : -1;
			if (lo < 0)
				return invalid(err, "bad %XX escape");
			c = (unsigned char)(hi * 16 + lo);
			i += 2;
		}
		if (c < ' ' || c == 0x7f)
			return invalid(err, "control character");
		if (n + 1 >= sizeof(name))
			return invalid(err, "host too long");
		name[n++] = (char)(c >= 'A' && c <= 'Z' ? c + 32 : c);
	}
	if (n > 1 && name[n - 1] == '.')
		n--;
	name[n] = '\0';
	if (ipv4_parse(name, n, &v4)) {
		ipv4_set(v4, out);
		return 0;
	}
	/* an unbracketed IPv6 address (a registry written host:port has
	 * none, but a bare host may) */
	if (memchr(name, ':', n) && ipv6_read(name, n, out, NULL) == 0)
		return 0;
	memset(out, 0, sizeof(*out));
	out->kind = NV_HOST_NAME;
	memcpy(out->canonical, name, n + 1);
	out->loopback = strcmp(name, "localhost") == 0 ||
			(n > 10 && strcmp(name + n - 10, ".localhost") == 0);
	return 0;
}
