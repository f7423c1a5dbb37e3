/* SPDX-License-Identifier: Apache-2.0 */
/* A minimal, bounded JSON reader (DOM in one node array) for untrusted documents. */
#ifndef MLPROF_JSON_H
#define MLPROF_JSON_H

#include <stddef.h>

#define JSON_MAX_BYTES (64u << 20) /* largest document parsed */

enum json_type { JSON_NULL, JSON_BOOL, JSON_NUM, JSON_STR, JSON_ARR, JSON_OBJ };

/* One value; children and siblings are indexes into json_doc.nodes. */
struct json_node {
	enum json_type t;
	const char *key; /* member name inside an object */
	const char *str; /* JSON_STR value */
	int child;	 /* first child index, -1 */
	int next;	 /* next sibling index, -1 */
};

/* A parsed document: strings are unescaped in place in a private copy of the input. */
struct json_doc {
	char *text;
	struct json_node *nodes;
	int n, cap;
};

/*
 * Parses len bytes of json into d (depth, size and node count bounded). Returns the index
 * of the root node, or -EINVAL (not JSON), -E2BIG (over a bound), -ENOMEM. Free d with
 * json_doc__free whatever the result.
 */
int json_doc__parse(struct json_doc *d, const char *json, size_t len);
void json_doc__free(struct json_doc *d);
/* Member key of object obj (NULL or not an object: NULL). NULL when absent. */
const struct json_node *json_doc__get(const struct json_doc *d, const struct json_node *obj,
				      const char *key);
/* String member key of obj; NULL when absent or not a string. */
const char *json_doc__get_str(const struct json_doc *d, const struct json_node *obj,
			      const char *key);

#endif
