/* SPDX-License-Identifier: Apache-2.0 */
/* Kubernetes pod metadata: the node's pod list (parsed, indexed) and the client refreshing it. */
#ifndef MLPROF_K8S_H
#define MLPROF_K8S_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* --- pod list --- */

struct k8s_container {
	char id[65]; /* runtime container id (hex, without "containerd://") */
	const char *pod, *ns, *uid, *name;
};

struct k8s_pods;

/*
 * Parses a PodList JSON document (items[].metadata.{name,namespace,uid} and
 * status.{,init,ephemeral}containerStatuses[].{name,containerID}). Robust to corrupt input
 * (bounded depth/size): returns NULL with errno EINVAL/E2BIG/ENOMEM.
 */
struct k8s_pods *k8s_pods__parse(const char *json, size_t len);
void k8s_pods__free(struct k8s_pods *pods);
size_t k8s_pods__count(const struct k8s_pods *pods);
/* Finds a container by full id (or unique prefix >= 12 chars). NULL when unknown. */
const struct k8s_container *k8s_pods__find(const struct k8s_pods *pods, const char *id);
/* Finds any container of a pod by pod uid (dashes or underscores). NULL when unknown. */
const struct k8s_container *k8s_pods__find_pod(const struct k8s_pods *pods, const char *uid);

/* --- client: a thread that keeps the pod list of this node fresh --- */

struct k8s_client;

/* The metadata of one container ("" for what is unknown). */
struct k8s_pod_meta {
	char pod[254], ns[64], container[254];
};

struct k8s_client_stats {
	uint64_t fetches, errors; /* pod list requests, and those that failed */
	uint64_t pods;		  /* containers in the current list */
};

/*
 * Starts the refresh thread for node's pods from source ("kubelet": the node's kubelet;
 * else the API server of the in-cluster service account). NULL with errno (EINVAL when
 * node is empty; logged).
 */
struct k8s_client *k8s_client__new(const char *source, const char *node);
/* Stops the thread and frees everything (NULL is a no-op). */
void k8s_client__free(struct k8s_client *k);
/*
 * Copies the metadata of the container container_id (else, of any container of the pod
 * pod_uid: pod and namespace only) into out; *found tells whether the container itself was
 * known. Asks for an early refresh when it was not. Returns the list generation, which
 * changes with every successful refresh.
 */
uint64_t k8s_client__lookup(struct k8s_client *k, const char *container_id, const char *pod_uid,
			    struct k8s_pod_meta *out, bool *found);
/* The current list generation (see k8s_client__lookup). */
uint64_t k8s_client__gen(struct k8s_client *k);
void k8s_client__stats(struct k8s_client *k, struct k8s_client_stats *out);

#endif
