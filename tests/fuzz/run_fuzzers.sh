#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, ASan + UBSan, every library instrumented) into build-fuzz
# and runs each on its corpus (tests/fuzz/corpus/NAME) and then for FUZZ_SECONDS more of fuzzing
# (default 10; 0: the corpus only). New inputs go to build-fuzz/found/NAME, never into the
# corpus; a crash fails the run and leaves its input (crash-*) in build-fuzz/found.
# Only the fuzz targets and what they link are built: no Qt app, no CUDA.
set -euo pipefail
cd "$(dirname "$0")/../.."
seconds="${FUZZ_SECONDS:-10}"
targets=(line_parser protocol spec cluster_config slurm_output journal)

if ! command -v clang++ >/dev/null; then
  sudo=""; [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends clang
fi
cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=clang \
  -DCMAKE_CXX_COMPILER=clang++ -DRINGMASTER_FUZZ=ON -DRINGMASTER_WITH_CUDA=OFF \
  -DRINGMASTER_BUILD_BENCHMARKS=OFF >/dev/null
cmake --build build-fuzz -j"${RINGMASTER_JOBS:-2}" --target "${targets[@]/%/_fuzz}"

for name in "${targets[@]}"; do
  found="build-fuzz/found/$name"
  mkdir -p "$found"
  echo "== $name: the corpus, then ${seconds} s of fuzzing"
  # libFuzzer runs every file of the corpus first; -max_total_time=0 would mean "forever".
  runs=(); ((seconds > 0)) && runs=(-max_total_time="$seconds") || runs=(-runs=0)
  (cd build-fuzz/found && "../bin/${name}_fuzz" "${runs[@]}" -timeout=10 -rss_limit_mb=4096 \
    -print_final_stats=1 "$name" "$PWD/../../tests/fuzz/corpus/$name" 2>&1 | tail -n 12)
done
