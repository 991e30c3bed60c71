#pragma once
// Which of OpenBLAS's kernel sets a process on this CPU should ask for. OpenBLAS reads
// OPENBLAS_CORETYPE once, when it loads, so the choice goes into a process's environment before it
// starts (the agent's native ranks; the benchmarks' PyTorch peers, so that both sides of a
// comparison run the same GEMM kernels).

namespace ringmaster::train {

// "SkylakeX" on a CPU with AVX-512 (F, BW, DQ, VL: what those kernels use), else "" (OpenBLAS's
// own choice). Debian 12's OpenBLAS (0.3.21) does not know Intel CPUs newer than it: recent Xeons
// fall back to its SSE3 kernels (~3x slower for the native trainer's GEMMs). The demo MLP's GEMMs
// take 4.7 ms a step with the AVX2 ("Haswell") kernels on a Zen 5, 3.0 ms with SkylakeX's.
inline const char* preferredOpenblasCoreType() {
  __builtin_cpu_init();
  const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
  return avx512 ? "SkylakeX" : "";
}

}  // namespace ringmaster::train
