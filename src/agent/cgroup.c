// SPDX-License-Identifier: Apache-2.0
/* Container id, pod uid and path of a process from /proc/PID/cgroup (v1 and v2). */
#include "agent/cgroup.h"

#include <ctype.h>
#include <stdbool.h>
#include <string.h>

static bool all_hex(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!isxdigit((unsigned char)s[i]))
			return false;
	return true;
}

/* Container id in one path segment, e.g. "cri-containerd-<64hex>.scope" or "<64hex>". */
static bool segment_container_id(const char *seg, size_t n, char *out)
{
	static const char *const prefixes[] = {"cri-containerd-", "docker-", "crio-", "libpod-",
					       "containerd-",	  "",	     NULL};
	const char *colon;

	if (n > 6 && !memcmp(seg + n - 6, ".scope", 6))
		n -= 6;
	/* "kubepods-...slice:cri-containerd:<id>" (systemd driver, some runtimes) */
	colon = memrchr(seg, ':', n);
	if (colon) {
		n -= (size_t)(colon + 1 - seg);
		seg = colon + 1;
	}
	if (n >= 11 && !memcmp(seg, "crio-conmon-", n < 12 ? n : 12))
		return false;
	for (int i = 0; prefixes[i]; i++) {
		size_t pl = strlen(prefixes[i]);

		if (n == pl + 64 && !memcmp(seg, prefixes[i], pl) && all_hex(seg + pl, 64)) {
			for (int j = 0; j < 64; j++)
				out[j] = (char)tolower((unsigned char)seg[pl + j]);
			out[64] = '\0';
			return true;
		}
	}
	return false;
}

/* Pod uid in a segment: "pod<uid>" or "kubepods-besteffort-pod<uid_with_underscores>.slice". */
static bool segment_pod_uid(const char *seg, size_t n, char *out, size_t outlen)
{
	const char *p = NULL;
	size_t l;

	for (size_t i = 0; i + 3 <= n; i++)
		if (!memcmp(seg + i, "pod", 3) && (i == 0 || seg[i - 1] == '-'))
			p = seg + i + 3;
	if (!p)
		return false;
	l = n - (size_t)(p - seg);
	if (l > 6 && !memcmp(p + l - 6, ".slice", 6))
		l -= 6;
	if (l != 36 || l >= outlen)
		return false;
	for (size_t i = 0; i < l; i++) {
		char c = p[i] == '_' ? '-' : (char)tolower((unsigned char)p[i]);
		if (!(isxdigit((unsigned char)c) || c == '-')) {
			out[0] = '\0'; /* no partial uid: a later segment may still hold one */
			return false;
		}
		out[i] = c;
	}
	out[l] = '\0';
	return true;
}

/* See cgroup.h. */
void labels__parse_cgroup(const char *text, size_t len, struct cgroup_info *out)
{
	const char *line = text, *end = text + len;

	memset(out, 0, sizeof(*out));
	while (line < end) {
		const char *nl = memchr(line, '\n', (size_t)(end - line));
		const char *le = nl ? nl : end, *c1, *c2, *path;
		size_t plen;

		c1 = memchr(line, ':', (size_t)(le - line));
		c2 = c1 ? memchr(c1 + 1, ':', (size_t)(le - c1 - 1)) : NULL;
		if (c2) {
			bool v2 = (c1 - line == 1 && line[0] == '0' && c2 == c1 + 1);

			path = c2 + 1;
			plen = (size_t)(le - path);
			if ((v2 || !out->path[0]) && plen < sizeof(out->path)) {
				memcpy(out->path, path, plen);
				out->path[plen] = '\0';
			}
			/* segments from the leaf up */
			for (const char *se = path + plen; se > path;) {
				const char *ss = se;
				while (ss > path && ss[-1] != '/')
					ss--;
				if (!out->container_id[0])
					segment_container_id(ss, (size_t)(se - ss),
							     out->container_id);
				if (!out->pod_uid[0])
					segment_pod_uid(ss, (size_t)(se - ss), out->pod_uid,
							sizeof(out->pod_uid));
				se = ss > path ? ss - 1 : path;
			}
		}
		line = le + 1;
	}
}
