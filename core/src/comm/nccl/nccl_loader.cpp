// NCCL, loaded on first use: the functions of nccl.h that nccl_communicator.cpp calls, defined
// here as forwarders to libnccl.so.2 opened with dlopen. So the agent and the worker need no NCCL
// to start, and CPU-only hosts run them without it; a GPU job on a host without NCCL fails with
// ncclSystemError and a message that says NCCL is missing.
#include <nccl.h>

#include "util/lazy_library.h"

namespace {

ringmaster::util::LazyLibrary& nccl() {
  static ringmaster::util::LazyLibrary library("libnccl.so.2", "NCCL");
  return library;
}

}  // namespace

// Each forwarder resolves its symbol once; the declaration in nccl.h checks the signature.
#define RM_NCCL_FORWARD(name, params, args)                                            \
  ncclResult_t name params {                                                           \
    static auto* const real = reinterpret_cast<decltype(&name)>(nccl().symbol(#name)); \
    return real != nullptr ? real args : ncclSystemError;                              \
  }

extern "C" {

RM_NCCL_FORWARD(ncclGetUniqueId, (ncclUniqueId * id), (id))
RM_NCCL_FORWARD(ncclCommInitRankConfig,
                (ncclComm_t * comm, int nranks, ncclUniqueId id, int rank, ncclConfig_t* config),
                (comm, nranks, id, rank, config))
RM_NCCL_FORWARD(ncclCommFinalize, (ncclComm_t comm), (comm))
RM_NCCL_FORWARD(ncclCommDestroy, (ncclComm_t comm), (comm))
RM_NCCL_FORWARD(ncclCommAbort, (ncclComm_t comm), (comm))
RM_NCCL_FORWARD(ncclCommGetAsyncError, (ncclComm_t comm, ncclResult_t* state), (comm, state))
RM_NCCL_FORWARD(ncclBroadcast,
                (const void* send, void* recv, size_t count, ncclDataType_t type, int root,
                 ncclComm_t comm, cudaStream_t stream),
                (send, recv, count, type, root, comm, stream))
RM_NCCL_FORWARD(ncclAllReduce,
                (const void* send, void* recv, size_t count, ncclDataType_t type, ncclRedOp_t op,
                 ncclComm_t comm, cudaStream_t stream),
                (send, recv, count, type, op, comm, stream))
RM_NCCL_FORWARD(ncclAllGather,
                (const void* send, void* recv, size_t count, ncclDataType_t type, ncclComm_t comm,
                 cudaStream_t stream),
                (send, recv, count, type, comm, stream))

RM_NCCL_FORWARD(ncclSend,
                (const void* send, size_t count, ncclDataType_t type, int peer, ncclComm_t comm,
                 cudaStream_t stream),
                (send, count, type, peer, comm, stream))
RM_NCCL_FORWARD(ncclRecv,
                (void* recv, size_t count, ncclDataType_t type, int peer, ncclComm_t comm,
                 cudaStream_t stream),
                (recv, count, type, peer, comm, stream))

const char* ncclGetErrorString(ncclResult_t result) {
  static auto* const real =
      reinterpret_cast<decltype(&ncclGetErrorString)>(nccl().symbol("ncclGetErrorString"));
  return real != nullptr ? real(result) : nccl().error().c_str();
}

const char* ncclGetLastError(ncclComm_t comm) {
  static auto* const real =
      reinterpret_cast<decltype(&ncclGetLastError)>(nccl().symbol("ncclGetLastError"));
  return real != nullptr ? real(comm) : nccl().error().c_str();
}

}  // extern "C"
