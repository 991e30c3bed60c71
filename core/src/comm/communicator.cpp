#include "ringmaster/comm/communicator.h"

#include "ringmaster/config.h"

namespace ringmaster::comm {

size_t dataTypeSize(DataType type) {
  switch (type) {
    case DataType::kFloat32:
      return 4;
    case DataType::kFloat16:
    case DataType::kBFloat16:
      return 2;
  }
  return 0;
}

const char* dataTypeName(DataType type) {
  switch (type) {
    case DataType::kFloat32:
      return "float32";
    case DataType::kFloat16:
      return "float16";
    case DataType::kBFloat16:
      return "bfloat16";
  }
  return "unknown";
}

// RINGMASTER_HAVE_NCCL is set by core/CMakeLists.txt when the CUDA toolkit comes with NCCL.
#if !RINGMASTER_HAVE_CUDA || !RINGMASTER_HAVE_NCCL
// Built without CUDA or NCCL: the NCCL backend does not exist (see nccl/nccl_communicator.cpp).
Result<std::unique_ptr<Communicator>> createNcclCommunicator(const NcclOptions&) {
  return Status(
      ErrorCode::kUnimplemented,
      "nccl: Ringmaster was built without NCCL (RINGMASTER_WITH_CUDA=OFF, or no CUDA toolkit "
      "or NCCL found)");
}

int cudaDeviceCount() { return 0; }
#endif

}  // namespace ringmaster::comm
