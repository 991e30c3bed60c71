#!/usr/bin/env bash
# make-bundle.sh BUILD_DIR OUT_DIR [EXTRA_EXECUTABLE...]: a relocatable Ringmaster that runs on
# hosts without the build's packages (GPU hosts on other distributions, the device check):
#   OUT_DIR/bin/                ringmaster-agent, ringmaster-worker, ringmasterctl (+ extras)
#   OUT_DIR/lib/                the shared libraries ldd finds for them, but glibc's and the
#                               GPU driver's. NCCL and cuBLAS are opened at run time, and only on
#                               GPU hosts: they come with the host's CUDA or PyTorch's wheels
#                               (too big to carry: hundreds of MB; see tests/gpu/run.sh)
#   OUT_DIR/share/ringmaster/   resources/ (job specs, example scripts, the metrics helper)
# Executables find lib/ through their RPATH $ORIGIN/../lib and share/ through ../share/ringmaster.
# EXTRA_EXECUTABLE names more programs of BUILD_DIR/bin to carry (tests, benchmarks).
# Prints the bundle's size and the newest glibc symbol version it needs.
set -euo pipefail

if [[ $# -lt 2 ]]; then
  echo "usage: $0 BUILD_DIR OUT_DIR [EXTRA_EXECUTABLE...]" >&2
  exit 2
fi
build_dir=$(cd "$1" && pwd)
out_dir=$2
shift 2
source_dir=$(cd "$(dirname "$0")/.." && pwd)
for tool in strip ldd objdump readelf; do
  command -v "$tool" >/dev/null || { echo "$0: $tool is needed (apt-get install binutils)" >&2; exit 1; }
done

programs=(ringmaster-agent ringmaster-worker ringmasterctl "$@")
# A bundle goes to other hosts: a build for this machine's GPU alone (the default) leaves other
# GPUs the PTX to compile at their first run, or no kernel for them at all (`native`).
archs=$(sed -n 's/^RINGMASTER_CUDA_ARCHITECTURES:STRING=//p' "$build_dir/CMakeCache.txt" 2>/dev/null)
if grep -q '^RINGMASTER_CUDA_ARCHITECTURES:' "$build_dir/CMakeCache.txt" 2>/dev/null && [[ $archs != all ]]; then
  echo "$0: note: GPU kernels built for '${archs:-this machine}' only; configure with" \
    "-DRINGMASTER_CUDA_ARCHITECTURES=all for every GPU generation" >&2
fi
rm -rf "$out_dir"
mkdir -p "$out_dir/bin" "$out_dir/lib" "$out_dir/share/ringmaster"

# Libraries every Linux host has (glibc) or must bring itself (the GPU driver; NCCL and cuBLAS,
# which come with the CUDA installation or PyTorch's wheels).
host_library() {
  case "$(basename "$1")" in
    ld-linux*|libc.so*|libm.so*|libdl.so*|libpthread.so*|librt.so*|libresolv.so*|libutil.so*) return 0 ;;
    libcuda.so*|libnvidia-*|libnccl.so*|libcublas.so*|libcublasLt.so*) return 0 ;;
  esac
  return 1
}

for program in "${programs[@]}"; do
  [[ -x "$build_dir/bin/$program" ]] || { echo "$0: $build_dir/bin/$program not built" >&2; exit 1; }
  install -m 755 "$build_dir/bin/$program" "$out_dir/bin/$program"
  # ldd resolves the whole dependency tree, so one pass per program finds every library.
  while read -r path; do
    host_library "$path" && continue
    target="$out_dir/lib/$(basename "$path")"
    [[ -e "$target" ]] || install -m 644 "$(readlink -f "$path")" "$target"
  done < <(ldd "$build_dir/bin/$program" | awk '$2 == "=>" && $3 ~ /^\// { print $3 }')
done

strip --strip-unneeded "$out_dir"/bin/* "$out_dir"/lib/*
# The build links every program with DT_RPATH $ORIGIN/../lib (CMakeLists.txt), which also
# covers the libraries' own dependencies; a program without it would load the host's libraries.
for program in "$out_dir"/bin/*; do
  if ! grep -q 'RPATH.*\$ORIGIN/\.\./lib' <<<"$(readelf -d "$program")"; then
    echo "$0: $program has no RPATH \$ORIGIN/../lib: rebuild $build_dir (reconfigure first)" >&2
    exit 1
  fi
done
cp -r "$source_dir/resources/." "$out_dir/share/ringmaster/"

newest_glibc=$(objdump -T "$out_dir"/bin/* "$out_dir"/lib/* 2>/dev/null |
  grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -1)
echo "bundle: $out_dir, $(du -sh "$out_dir" | cut -f1), ${#programs[@]} programs," \
  "$(ls "$out_dir/lib" | wc -l) libraries; needs ${newest_glibc:-no versioned glibc}"
