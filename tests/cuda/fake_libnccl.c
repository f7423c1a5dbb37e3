// SPDX-License-Identifier: Apache-2.0
/*
 * TEST DOUBLE of NCCL, for it.record_cuda only. Built as libnccl.so.2 into a test
 * directory of the build tree (never installed): it is NOT NVIDIA's NCCL and communicates
 * nothing. It exports collectives with NCCL's names and argument layouts (nccl.h), each
 * defined as pnccl<Name> with ncclName a weak alias at the same address, as NCCL does, so
 * that mlprof's NCCL uprobes (found by symbol, attached once per address) can be tested
 * without GPUs. Every call with a communicator succeeds (ncclSuccess) and does nothing.
 */
#include <stddef.h>

#define EXPORT __attribute__((visibility("default"), noinline))

typedef int ncclResult_t;
typedef int ncclDataType_t;
typedef int ncclRedOp_t;
typedef struct fake_comm *ncclComm_t;
typedef void *cudaStream_t;

struct fake_comm {
	int nranks, rank;
};

static struct fake_comm the_comm = {1, 0};

#define ncclSuccess	    0
#define ncclInvalidArgument 4

#define ALIAS(name) __attribute__((weak, alias("p" #name), visibility("default")))

EXPORT ncclResult_t pncclGetVersion(int *version)
{
	if (!version)
		return ncclInvalidArgument;
	*version = 22304;
	return ncclSuccess;
}
ncclResult_t ncclGetVersion(int *version) ALIAS(ncclGetVersion);

EXPORT ncclResult_t pncclCommInitRank(ncclComm_t *comm, int nranks, const void *id, int rank)
{
	(void)id;
	if (!comm || nranks != 1 || rank != 0)
		return ncclInvalidArgument;
	*comm = &the_comm;
	return ncclSuccess;
}
ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, const void *id, int rank)
	ALIAS(ncclCommInitRank);

EXPORT ncclResult_t pncclAllReduce(const void *send, void *recv, size_t count, ncclDataType_t dtype,
				   ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream)
{
	(void)send, (void)recv, (void)count, (void)dtype, (void)op, (void)stream;
	return comm ? ncclSuccess : ncclInvalidArgument;
}
ncclResult_t ncclAllReduce(const void *send, void *recv, size_t count, ncclDataType_t dtype,
			   ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream)
	ALIAS(ncclAllReduce);

EXPORT ncclResult_t pncclReduceScatter(const void *send, void *recv, size_t count,
				       ncclDataType_t dtype, ncclRedOp_t op, ncclComm_t comm,
				       cudaStream_t stream)
{
	(void)send, (void)recv, (void)count, (void)dtype, (void)op, (void)stream;
	return comm ? ncclSuccess : ncclInvalidArgument;
}
ncclResult_t ncclReduceScatter(const void *send, void *recv, size_t count, ncclDataType_t dtype,
			       ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream)
	ALIAS(ncclReduceScatter);

EXPORT ncclResult_t pncclAllGather(const void *send, void *recv, size_t count, ncclDataType_t dtype,
				   ncclComm_t comm, cudaStream_t stream)
{
	(void)send, (void)recv, (void)count, (void)dtype, (void)stream;
	return comm ? ncclSuccess : ncclInvalidArgument;
}
ncclResult_t ncclAllGather(const void *send, void *recv, size_t count, ncclDataType_t dtype,
			   ncclComm_t comm, cudaStream_t stream) ALIAS(ncclAllGather);

EXPORT ncclResult_t pncclBroadcast(const void *send, void *recv, size_t count, ncclDataType_t dtype,
				   int root, ncclComm_t comm, cudaStream_t stream)
{
	(void)send, (void)recv, (void)count, (void)dtype, (void)root, (void)stream;
	return comm ? ncclSuccess : ncclInvalidArgument;
}
ncclResult_t ncclBroadcast(const void *send, void *recv, size_t count, ncclDataType_t dtype,
			   int root, ncclComm_t comm, cudaStream_t stream) ALIAS(ncclBroadcast);

EXPORT ncclResult_t pncclSend(const void *buf, size_t count, ncclDataType_t dtype, int peer,
			      ncclComm_t comm, cudaStream_t stream)
{
	(void)buf, (void)count, (void)dtype, (void)peer, (void)stream;
	return comm ? ncclSuccess : ncclInvalidArgument;
}
ncclResult_t ncclSend(const void *buf, size_t count, ncclDataType_t dtype, int peer,
		      ncclComm_t comm, cudaStream_t stream) ALIAS(ncclSend);

EXPORT ncclResult_t pncclRecv(void *buf, size_t count, ncclDataType_t dtype, int peer,
			      ncclComm_t comm, cudaStream_t stream)
{
	(void)buf, (void)count, (void)dtype, (void)peer, (void)stream;
	return comm ? ncclSuccess : ncclInvalidArgument;
}
ncclResult_t ncclRecv(void *buf, size_t count, ncclDataType_t dtype, int peer, ncclComm_t comm,
		      cudaStream_t stream) ALIAS(ncclRecv);
