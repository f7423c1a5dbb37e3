// SPDX-License-Identifier: Apache-2.0
/* A minimal JSON DOM parser: bounded depth, size and node count; strings unescaped in place. */
#include "util/json.h"

#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define JSON_MAX_DEPTH 64
#define JSON_MAX_NODES (8 << 20)

struct jparser {
	struct json_doc *d;
	char *p, *end;
};

static void jskip_ws(struct jparser *ps)
{
	while (ps->p < ps->end &&
	       (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r'))
		ps->p++;
}

static int jnew(struct json_doc *d, enum json_type t)
{
	if (d->n == d->cap) {
		int cap = d->cap ? d->cap * 2 : 256;
		struct json_node *nn;

		if (cap > JSON_MAX_NODES)
			return -E2BIG;
		nn = realloc(d->nodes, sizeof(*nn) * (size_t)cap);
		if (!nn)
			return -ENOMEM;
		d->nodes = nn;
		d->cap = cap;
	}
	d->nodes[d->n] = (struct json_node){.t = t, .child = -1, .next = -1};
	return d->n++;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static int jhex4(const char *p, const char *end, unsigned int *out)
{
	unsigned int v = 0;

	if (end - p < 4)
		return -EINVAL;
	for (int i = 0; i < 4; i++) {
		int h = hexval(p[i]);
		if (h < 0)
			return -EINVAL;
		v = v << 4 | (unsigned int)h;
	}
	*out = v;
	return 0;
}

/* Parses a string at ps->p (on the quote), unescaping in place; *out points to it. */
static int jstring(struct jparser *ps, const char **out)
{
	char *w, *r;

	r = ++ps->p;
	w = r;
	*out = w;
	while (r < ps->end && *r != '"') {
		unsigned char c = (unsigned char)*r;

		if (c < 0x20)
			return -EINVAL;
		if (c != '\\') {
			*w++ = *r++;
			continue;
		}
		if (++r >= ps->end)
			return -EINVAL;
		switch (*r) {
		case '"':
		case '\\':
		case '/':
			*w++ = *r++;
			break;
		case 'b':
			*w++ = '\b';
			r++;
			break;
		case 'f':
			*w++ = '\f';
			r++;
			break;
		case 'n':
			*w++ = '\n';
			r++;
			break;
		case 'r':
			*w++ = '\r';
			r++;
			break;
		case 't':
			*w++ = '\t';
			r++;
			break;
		case 'u': {
			unsigned int cp, lo;

			if (jhex4(r + 1, ps->end, &cp))
				return -EINVAL;
			r += 5;
			if (cp >= 0xd800 && cp <= 0xdbff && ps->end - r >= 6 && r[0] == '\\' &&
			    r[1] == 'u' && !jhex4(r + 2, ps->end, &lo) && lo >= 0xdc00 &&
			    lo <= 0xdfff) {
				cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
				r += 6;
			} else if (cp >= 0xd800 && cp <= 0xdfff) {
				cp = '?';
			}
			if (cp == 0)
				cp = '?'; /* keep C strings intact */
			if (cp < 0x80) {
				*w++ = (char)cp;
			} else if (cp < 0x800) {
				*w++ = (char)(0xc0 | cp >> 6);
				*w++ = (char)(0x80 | (cp & 0x3f));
			} else if (cp < 0x10000) {
				*w++ = (char)(0xe0 | cp >> 12);
				*w++ = (char)(0x80 | ((cp >> 6) & 0x3f));
				*w++ = (char)(0x80 | (cp & 0x3f));
			} else {
				*w++ = (char)(0xf0 | cp >> 18);
				*w++ = (char)(0x80 | ((cp >> 12) & 0x3f));
				*w++ = (char)(0x80 | ((cp >> 6) & 0x3f));
				*w++ = (char)(0x80 | (cp & 0x3f));
			}
			break;
		}
		default:
			return -EINVAL;
		}
	}
	if (r >= ps->end)
		return -EINVAL;
	*w = '\0'; /* w <= r: the closing quote or earlier */
	ps->p = r + 1;
	return 0;
}

static int jvalue(struct jparser *ps, int depth);

static int jcontainer(struct jparser *ps, int depth, bool obj)
{
	int idx = jnew(ps->d, obj ? JSON_OBJ : JSON_ARR), last = -1;
	char close = obj ? '}' : ']';

	if (idx < 0)
		return idx;
	ps->p++;
	jskip_ws(ps);
	if (ps->p < ps->end && *ps->p == close) {
		ps->p++;
		return idx;
	}
	for (;;) {
		const char *key = NULL;
		int child, err;

		jskip_ws(ps);
		if (obj) {
			if (ps->p >= ps->end || *ps->p != '"')
				return -EINVAL;
			if ((err = jstring(ps, &key)))
				return err;
			jskip_ws(ps);
			if (ps->p >= ps->end || *ps->p != ':')
				return -EINVAL;
			ps->p++;
		}
		child = jvalue(ps, depth + 1);
		if (child < 0)
			return child;
		ps->d->nodes[child].key = key;
		if (last < 0)
			ps->d->nodes[idx].child = child;
		else
			ps->d->nodes[last].next = child;
		last = child;
		jskip_ws(ps);
		if (ps->p >= ps->end)
			return -EINVAL;
		if (*ps->p == ',') {
			ps->p++;
			continue;
		}
		if (*ps->p == close) {
			ps->p++;
			return idx;
		}
		return -EINVAL;
	}
}

static int jvalue(struct jparser *ps, int depth)
{
	int idx, err;

	if (depth > JSON_MAX_DEPTH)
		return -E2BIG;
	jskip_ws(ps);
	if (ps->p >= ps->end)
		return -EINVAL;
	switch (*ps->p) {
	case '{':
		return jcontainer(ps, depth, true);
	case '[':
		return jcontainer(ps, depth, false);
	case '"':
		idx = jnew(ps->d, JSON_STR);
		if (idx < 0)
			return idx;
		if ((err = jstring(ps, &ps->d->nodes[idx].str)))
			return err;
		return idx;
	default:
		break;
	}
	if (ps->end - ps->p >= 4 && !memcmp(ps->p, "null", 4)) {
		ps->p += 4;
		return jnew(ps->d, JSON_NULL);
	}
	if (ps->end - ps->p >= 4 && !memcmp(ps->p, "true", 4)) {
		ps->p += 4;
		return jnew(ps->d, JSON_BOOL);
	}
	if (ps->end - ps->p >= 5 && !memcmp(ps->p, "false", 5)) {
		ps->p += 5;
		return jnew(ps->d, JSON_BOOL);
	}
	if (*ps->p == '-' || isdigit((unsigned char)*ps->p)) {
		ps->p++;
		while (ps->p < ps->end &&
		       (isdigit((unsigned char)*ps->p) || *ps->p == '.' || *ps->p == 'e' ||
			*ps->p == 'E' || *ps->p == '+' || *ps->p == '-'))
			ps->p++;
		return jnew(ps->d, JSON_NUM);
	}
	return -EINVAL;
}

/* See json.h. */
void json_doc__free(struct json_doc *d)
{
	free(d->text);
	free(d->nodes);
	memset(d, 0, sizeof(*d));
}

/* See json.h. */
int json_doc__parse(struct json_doc *d, const char *json, size_t len)
{
	struct jparser ps = {.d = d};
	int root;

	memset(d, 0, sizeof(*d));
	if (len > JSON_MAX_BYTES)
		return -E2BIG;
	d->text = malloc(len + 1);
	if (!d->text)
		return -ENOMEM;
	memcpy(d->text, json, len);
	d->text[len] = '\0';
	ps.p = d->text;
	ps.end = d->text + len;
	root = jvalue(&ps, 0);
	if (root < 0)
		return root;
	jskip_ws(&ps);
	if (ps.p != ps.end)
		return -EINVAL;
	return root;
}

/* See json.h. */
const struct json_node *json_doc__get(const struct json_doc *d, const struct json_node *obj,
				      const char *key)
{
	if (!obj || obj->t != JSON_OBJ)
		return NULL;
	for (int i = obj->child; i >= 0; i = d->nodes[i].next)
		if (d->nodes[i].key && !strcmp(d->nodes[i].key, key))
			return &d->nodes[i];
	return NULL;
}

/* See json.h. */
const char *json_doc__get_str(const struct json_doc *d, const struct json_node *obj,
			      const char *key)
{
	const struct json_node *n = json_doc__get(d, obj, key);

	return n && n->t == JSON_STR ? n->str : NULL;
}
