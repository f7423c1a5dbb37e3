// SPDX-License-Identifier: Apache-2.0
/*
 * NCCL workload for it.record_cuda: a data-parallel "training loop" calling collectives
 * of known sizes and types from fixed noinline chains. Linked against libnccl.so.2, the
 * test double built from fake_libnccl.c (no GPUs, no communication).
 *
 * Usage: nccl_train [ITERATIONS]
 *   Waits 300 ms (mlprof attaches its probes when it sees libnccl.so.2 mapped), then per
 *   iteration: 4 ncclAllReduce (float32, sum, AR_COUNT elements) and 1 ncclAllGather
 *   (bfloat16, AG_COUNT); in the first 30 iterations also 1 ncclReduceScatter (float16,
 *   avg, RS_COUNT); in the first 10, 1 ncclBroadcast (int64, BC_COUNT); in the first 5,
 *   1 ncclSend and 1 ncclRecv (uint8, P2P_COUNT); 2 ms sleep. Prints one JSON line.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

typedef struct fake_comm *ncclComm_t;

int ncclGetVersion(int *version);
int ncclCommInitRank(ncclComm_t *comm, int nranks, const void *id, int rank);
int ncclAllReduce(const void *send, void *recv, size_t count, int dtype, int op, ncclComm_t comm,
		  void *stream);
int ncclReduceScatter(const void *send, void *recv, size_t count, int dtype, int op,
		      ncclComm_t comm, void *stream);
int ncclAllGather(const void *send, void *recv, size_t count, int dtype, ncclComm_t comm,
		  void *stream);
int ncclBroadcast(const void *send, void *recv, size_t count, int dtype, int root, ncclComm_t comm,
		  void *stream);
int ncclSend(const void *buf, size_t count, int dtype, int peer, ncclComm_t comm, void *stream);
int ncclRecv(void *buf, size_t count, int dtype, int peer, ncclComm_t comm, void *stream);

/* nccl.h */
enum { ncclUint8 = 1, ncclInt64 = 4, ncclFloat16 = 6, ncclFloat32 = 7, ncclBfloat16 = 9 };
enum { ncclSum = 0, ncclAvg = 4 };

#define AR_COUNT  (1u << 20)
#define AG_COUNT  4096u
#define RS_COUNT  8192u
#define BC_COUNT  1000u
#define P2P_COUNT 300u

static volatile unsigned long g_done; /* work after each call: no tail calls */
static int g_err;
static ncclComm_t g_comm;
static char g_buf[64]; /* stands in for device buffers: NCCL's double touches nothing */

NOINLINE void allreduce_grads(void)
{
	g_err |= ncclAllReduce(g_buf, g_buf, AR_COUNT, ncclFloat32, ncclSum, g_comm, NULL);
	g_done++;
}

NOINLINE void sync_gradients(void)
{
	for (int i = 0; i < 4; i++)
		allreduce_grads();
	g_done++;
}

NOINLINE void gather_params(void)
{
	g_err |= ncclAllGather(g_buf, g_buf, AG_COUNT, ncclBfloat16, g_comm, NULL);
	g_done++;
}

NOINLINE void shard_grads(void)
{
	g_err |= ncclReduceScatter(g_buf, g_buf, RS_COUNT, ncclFloat16, ncclAvg, g_comm, NULL);
	g_done++;
}

NOINLINE void broadcast_weights(void)
{
	g_err |= ncclBroadcast(g_buf, g_buf, BC_COUNT, ncclInt64, 0, g_comm, NULL);
	g_done++;
}

NOINLINE void exchange_activations(void)
{
	g_err |= ncclSend(g_buf, P2P_COUNT, ncclUint8, 0, g_comm, NULL);
	g_err |= ncclRecv(g_buf, P2P_COUNT, ncclUint8, 0, g_comm, NULL);
	g_done++;
}

NOINLINE void train_loop(int iters)
{
	struct timespec ts = {0, 2 * 1000 * 1000};

	for (int i = 0; i < iters; i++) {
		sync_gradients();
		gather_params();
		if (i < 30)
			shard_grads();
		if (i < 10)
			broadcast_weights();
		if (i < 5)
			exchange_activations();
		nanosleep(&ts, NULL);
	}
	g_done++;
}

int main(int argc, char **argv)
{
	int iters = argc > 1 ? atoi(argv[1]) : 50;
	struct timespec w = {0, 300 * 1000 * 1000};
	int version = 0;

	if (iters < 30) {
		fprintf(stderr, "nccl_train: ITERATIONS must be >= 30\n");
		return 2;
	}
	nanosleep(&w, NULL);
	g_err |= ncclGetVersion(&version);
	g_err |= ncclCommInitRank(&g_comm, 1, NULL, 0);
	train_loop(iters);
	printf("{\"pid\": %d, \"version\": %d, \"allreduce\": {\"calls\": %d, \"count\": %u}, "
	       "\"allgather\": {\"calls\": %d, \"count\": %u}, "
	       "\"reducescatter\": {\"calls\": 30, \"count\": %u}, "
	       "\"broadcast\": {\"calls\": 10, \"count\": %u}, "
	       "\"send\": {\"calls\": 5, \"count\": %u}, \"recv\": {\"calls\": 5, \"count\": %u}, "
	       "\"err\": %d}\n",
	       (int)getpid(), version, 4 * iters, AR_COUNT, iters, AG_COUNT, RS_COUNT, BC_COUNT,
	       P2P_COUNT, P2P_COUNT, g_err);
	return g_err ? 1 : 0;
}
