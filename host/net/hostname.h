/* The host of a URL in one canonical form, so that two hosts are compared
 * by the address they reach and not by how they are written: profile
 * isolation (lua/navette/isolation.lua) must see that `localhost`,
 * `127.1`, `0x7f000001` and `[::ffff:127.0.0.1]` are one machine.
 *
 * What is read is what libcurl's URL parser accepts as a host: a name
 * (%XX decoded, any case, one trailing dot), an IPv4 address in the forms
 * of inet_aton (1 to 4 parts, each decimal, 0x hex or 0 octal: 127.1,
 * 2130706433, 0177.0.0.1), or an IPv6 address in brackets (an optional
 * zone after '%'). The canonical form is:
 *   - IPv4: dotted decimal, "127.0.0.1";
 *   - IPv6: RFC 5952 text in brackets, "[::1]"; an IPv4-mapped address
 *     (::ffff:a.b.c.d) is its IPv4 address;
 *   - a name: lower case, decoded, without its trailing dot.
 * loopback is set for what reaches this machine without leaving it: a
 * name `localhost` or under `.localhost` (libcurl resolves those itself),
 * 127.0.0.0/8, ::1, and the unspecified addresses 0.0.0.0 and :: (a
 * connection to them reaches the local host).
 *
 * Pure C: no allocation, no resolver, no Lua. */
#ifndef NV_NET_HOSTNAME_H
#define NV_NET_HOSTNAME_H

#include <stddef.h>

#include "core/nv_err.h"

/* Longest host accepted, and of its canonical form (with its NUL). */
#define NV_HOST_MAX 256

enum nv_host_kind { NV_HOST_NAME, NV_HOST_IPV4, NV_HOST_IPV6 };

typedef struct nv_host {
	enum nv_host_kind kind;
	int loopback;
	char canonical[NV_HOST_MAX];
} nv_host;

/* Reads the len bytes of text (a URL's host, without port or userinfo)
 * into *out. Returns 0, or NV_EINVAL with a message for an empty or
 * too long host, a bad %XX escape, a control byte or a malformed
 * bracketed address. */
int nv_host_canonical(const char *text, size_t len, nv_host *out, nv_err *err);

#endif
