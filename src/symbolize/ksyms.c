// SPDX-License-Identifier: Apache-2.0
/* Kernel text symbols from /proc/kallsyms: sorted array plus one name arena, binary search. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "symbolize/symcache.h"

#define LOG_MODULE "ksyms"
#include "util/log.h"

#define KSYMS_MAX_SYMS	(4u << 20)   /* bound: real kernels have < 1M text symbols */
#define KSYMS_MAX_NAMES (256u << 20) /* bound on the name arena */
#define KSYMS_MAX_FUNC	(1u << 20)   /* no kernel function is larger than this */
#define KSYMS_LAST_FUNC (64u << 10)  /* plausible size of the last symbol */

struct ksym {
	uint64_t addr;
	uint32_t name;
	uint32_t rank; /* 0 global (T), 1 local (t), 2 weak: aliases keep the best one */
};

struct ksyms {
	struct ksym *syms;
	size_t nsyms, cap;
	char *names;
	size_t names_len, names_cap;
};

static int ksym_cmp(const void *a, const void *b)
{
	const struct ksym *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	return (int)x->rank - (int)y->rank;
}

static int add_sym(struct ksyms *ks, uint64_t addr, uint32_t rank, const char *name, size_t len)
{
	if (ks->nsyms == KSYMS_MAX_SYMS || ks->names_len + len + 1 > KSYMS_MAX_NAMES)
		return -E2BIG;
	if (ks->nsyms == ks->cap) {
		size_t cap = ks->cap ? ks->cap * 2 : 16384;
		struct ksym *p = realloc(ks->syms, cap * sizeof(*p));

		if (!p)
			return -ENOMEM;
		ks->syms = p;
		ks->cap = cap;
	}
	if (ks->names_len + len + 1 > ks->names_cap) {
		size_t cap = ks->names_cap ? ks->names_cap * 2 : (1u << 20);
		char *p;

		while (cap < ks->names_len + len + 1)
			cap *= 2;
		p = realloc(ks->names, cap);
		if (!p)
			return -ENOMEM;
		ks->names = p;
		ks->names_cap = cap;
	}
	memcpy(ks->names + ks->names_len, name, len);
	ks->names[ks->names_len + len] = '\0';
	ks->syms[ks->nsyms++] = (struct ksym){.addr = addr, .name = ks->names_len, .rank = rank};
	ks->names_len += len + 1;
	return 0;
}

/* Parses "ffffffff81000000 T name [module]"; returns 1 for a text symbol, 0 to skip. */
static int parse_line(char *line, uint64_t *addr, uint32_t *rank, char **name, size_t *len)
{
	char *end, *p;

	errno = 0;
	*addr = strtoull(line, &end, 16);
	if (end == line || errno || *end != ' ')
		return 0;
	p = end + 1;
	switch (*p) {
	case 'T':
		*rank = 0;
		break;
	case 't':
		*rank = 1;
		break;
	case 'W':
	case 'w':
		*rank = 2;
		break;
	default:
		return 0;
	}
	if (p[1] != ' ' || !p[2])
		return 0;
	*name = p + 2;
	*len = strcspn(*name, " \t\n");
	return *len > 0;
}

/* See symcache.h. NULL with errno EPERM when kallsyms hides addresses (not root). */
struct ksyms *ksyms__load(const char *path)
{
	struct ksyms *ks;
	char line[512];
	bool nonzero = false, truncated = false;
	FILE *f;
	int err = 0;

	if (!path)
		path = "/proc/kallsyms";
	ks = calloc(1, sizeof(*ks));
	if (!ks)
		return NULL;
	f = fopen(path, "re");
	if (!f) {
		err = -errno;
		pr_warn("cannot open %s: %s", path, strerror(errno));
		goto cleanup;
	}
	while (fgets(line, sizeof(line), f)) {
		uint64_t addr;
		uint32_t rank;
		char *name;
		size_t len;
		bool partial = !strchr(line, '\n') && !feof(f);

		if (parse_line(line, &addr, &rank, &name, &len)) {
			if (addr)
				nonzero = true;
			if (addr && !truncated) {
				err = add_sym(ks, addr, rank, name, len);
				if (err == -E2BIG) {
					pr_warn("%s: more than %u symbols, rest ignored", path,
						KSYMS_MAX_SYMS);
					truncated = true;
					err = 0;
				} else if (err) {
					goto cleanup;
				}
			}
		}
		/* skip the remainder of an over-long line */
		while (partial && fgets(line, sizeof(line), f) && !strchr(line, '\n'))
			;
	}
	if (ferror(f)) {
		err = -EIO;
		goto cleanup;
	}
	if (!nonzero) {
		/* kptr_restrict shows all-zero addresses to unprivileged readers */
		err = -EPERM;
		goto cleanup;
	}
	qsort(ks->syms, ks->nsyms, sizeof(*ks->syms), ksym_cmp);
	/* drop aliases: after sorting the best-ranked name comes first at each address */
	if (ks->nsyms) {
		size_t out = 1;

		for (size_t i = 1; i < ks->nsyms; i++)
			if (ks->syms[i].addr != ks->syms[out - 1].addr)
				ks->syms[out++] = ks->syms[i];
		ks->nsyms = out;
	}
	fclose(f);
	return ks;

cleanup:
	if (f)
		fclose(f);
	ksyms__free(ks);
	errno = -err;
	return NULL;
}

/* See symcache.h. */
void ksyms__free(struct ksyms *ks)
{
	if (!ks)
		return;
	free(ks->syms);
	free(ks->names);
	free(ks);
}

/*
 * See symcache.h. The name is owned by ks. A symbol is assumed to extend to the next one,
 * but never beyond KSYMS_MAX_FUNC (KSYMS_LAST_FUNC for the last one), so addresses in gaps
 * (e.g. between kernel text and modules) are not misattributed.
 */
const char *ksyms__lookup(const struct ksyms *ks, uint64_t addr, uint64_t *offset)
{
	size_t lo = 0, hi;
	const struct ksym *s;
	uint64_t limit;

	if (!ks || !addr || !ks->nsyms || addr < ks->syms[0].addr)
		return NULL;
	hi = ks->nsyms;
	/* last symbol with s->addr <= addr */
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;

		if (ks->syms[mid].addr <= addr)
			lo = mid;
		else
			hi = mid;
	}
	s = &ks->syms[lo];
	limit = lo + 1 < ks->nsyms ? ks->syms[lo + 1].addr - s->addr : KSYMS_LAST_FUNC;
	if (limit > KSYMS_MAX_FUNC)
		limit = KSYMS_MAX_FUNC;
	if (addr - s->addr >= limit)
		return NULL;
	if (offset)
		*offset = addr - s->addr;
	return ks->names + s->name;
}
