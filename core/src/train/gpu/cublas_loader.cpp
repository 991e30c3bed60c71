// cuBLAS, loaded on first use: the functions gpu_model.cu calls, defined here as forwarders to
// libcublas.so.<major> opened with dlopen, so that programs built with the GPU path start and run
// on hosts without cuBLAS (every CPU-only host); the GPU path then fails with a message naming it.
#include <cublas_v2.h>

#include <string>

#include "util/lazy_library.h"

namespace {

ringmaster::util::LazyLibrary& cublas() {
  static const std::string soname = "libcublas.so." + std::to_string(CUBLAS_VER_MAJOR);
  static ringmaster::util::LazyLibrary library(soname.c_str(), "cuBLAS");
  return library;
}

}  // namespace

// Each forwarder resolves its symbol once; the declaration in cublas_api.h checks the signature.
#define RM_CUBLAS_FORWARD(name, params, args)                                            \
  cublasStatus_t CUBLASWINAPI name params {                                              \
    static auto* const real = reinterpret_cast<decltype(&name)>(cublas().symbol(#name)); \
    return real != nullptr ? real args : CUBLAS_STATUS_NOT_INITIALIZED;                  \
  }

extern "C" {

RM_CUBLAS_FORWARD(cublasCreate_v2, (cublasHandle_t * handle), (handle))
RM_CUBLAS_FORWARD(cublasDestroy_v2, (cublasHandle_t handle), (handle))
RM_CUBLAS_FORWARD(cublasSetStream_v2, (cublasHandle_t handle, cudaStream_t stream),
                  (handle, stream))
RM_CUBLAS_FORWARD(cublasSetMathMode, (cublasHandle_t handle, cublasMath_t mode), (handle, mode))
RM_CUBLAS_FORWARD(cublasSgemm_v2,
                  (cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m,
                   int n, int k, const float* alpha, const float* a, int lda, const float* b,
                   int ldb, const float* beta, float* c, int ldc),
                  (handle, transa, transb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc))

const char* CUBLASWINAPI cublasGetStatusString(cublasStatus_t status) {
  static auto* const real =
      reinterpret_cast<decltype(&cublasGetStatusString)>(cublas().symbol("cublasGetStatusString"));
  if (real != nullptr) return real(status);
  return status == CUBLAS_STATUS_NOT_INITIALIZED ? cublas().error().c_str() : "cuBLAS error";
}

}  // extern "C"
