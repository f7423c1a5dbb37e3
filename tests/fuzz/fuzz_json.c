// SPDX-License-Identifier: Apache-2.0
/*
 * libFuzzer target: the JSON reader (src/json.c) walked as a whole tree, and the Kubernetes
 * PodList reader on top of it (src/k8s.c) with its container and pod look-ups.
 */
#include <stdint.h>
#include <string.h>

#include "agent/k8s.h"
#include "fuzz_util.h"
#include "util/json.h"

/* Visits every node once (the node array is a tree: indexes only point forward). */
static uint64_t walk(const struct json_doc *d, int idx, int depth)
{
	uint64_t sum = 0;

	for (; idx >= 0; idx = d->nodes[idx].next) {
		const struct json_node *nd;

		if (idx >= d->n || depth > 1024)
			__builtin_trap();
		nd = &d->nodes[idx];
		if ((nd->next >= 0 && nd->next <= idx) || (nd->child >= 0 && nd->child <= idx))
			__builtin_trap();
		if (nd->key)
			sum += strlen(nd->key);
		if (nd->t == JSON_STR)
			sum += strlen(nd->str) + 1;
		if (nd->t == JSON_OBJ)
			sum += (uintptr_t)json_doc__get_str(d, nd, "name");
		if (nd->t == JSON_ARR || nd->t == JSON_OBJ)
			sum += walk(d, nd->child, depth + 1);
	}
	return sum;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct json_doc d = {.text = NULL};
	struct k8s_pods *pods;
	volatile uint64_t sink = 0;
	int root;

	fuzz__quiet();
	root = json_doc__parse(&d, (const char *)data, size);
	if (root >= 0)
		sink += walk(&d, root, 0);
	json_doc__free(&d);

	pods = k8s_pods__parse((const char *)data, size);
	if (pods) {
		sink += k8s_pods__count(pods);
		sink += (uintptr_t)k8s_pods__find(
			pods, "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef");
		sink += (uintptr_t)k8s_pods__find(pods, "0123456789ab");
		sink += (uintptr_t)k8s_pods__find_pod(pods, "12345678-1234-1234-1234-123456789abc");
		k8s_pods__free(pods);
	}
	(void)sink;
	return 0;
}
