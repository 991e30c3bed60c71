#!/usr/bin/env bash
# Installs what Ringmaster needs from Debian 12's archive and builds it into ./build (executables
# in build/bin). Run as root (or with sudo available).
#
#   bootstrap.sh          what `ringmaster --demo` runs: the app, the agent, the worker and the CLI
#   bootstrap.sh --tests  everything: the tests and benchmarks too, and what they run besides
#                         (PyTorch, Open MPI, Slurm, sshd, Xvfb, debootstrap...)
#
# Idempotent and quick to repeat: apt is asked only for packages that are missing, CMake
# configures only a new build tree (or for --tests once their packages are in, to find what the
# tests use), and make rebuilds nothing that is up to date.
set -euo pipefail
cd "$(dirname "$0")/.."

tests=0
case "${1:-}" in
  "") ;;
  --tests) tests=1 ;;
  *) echo "usage: $0 [--tests]" >&2; exit 2 ;;
esac

# What the build needs (GoogleTest and Google Benchmark too: CMake finds them when it
# configures) and what the app runs: the demo trains Fashion-MNIST (Debian's 30 MB package) with
# Ringmaster's own trainer, no Python.
packages=(
  cmake g++ make pkg-config git
  qt6-base-dev qt6-charts-dev libqt6opengl6-dev libqt6sql6-sqlite
  libzmq3-dev cppzmq-dev libsodium-dev libsqlite3-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libgloo-dev libopenblas-dev libprotobuf-dev protobuf-compiler
  libyaml-cpp-dev nlohmann-json3-dev libcli11-dev libre2-dev zlib1g-dev
  dataset-fashion-mnist
)
# What the tests and benchmarks run or compare against besides.
test_packages=(
  sqlite3 openmpi-bin libopenmpi-dev python3 python3-torch python3-numpy
  xvfb xauth x11-apps imagemagick xdotool
  binutils debootstrap xz-utils
  openssh-client openssh-server desktop-file-utils sudo
  slurm-wlm munge bc
  clang  # tests/fuzz/run_fuzzers.sh (CI's libFuzzer build)
)
((tests)) && packages+=("${test_packages[@]}")

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  sudo=""; [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get update -q
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

build_type="${RINGMASTER_BUILD_TYPE:-RelWithDebInfo}"
# CMake looks again when apt brought something, and once for what the tests use (a stamp says
# it did): a tree configured by the first command, or before the test packages were in.
configured_for_tests=build/.configured-with-test-packages
if [[ ! -f build/CMakeCache.txt || -n ${RINGMASTER_CMAKE_ARGS:-} ]] || ((${#missing[@]})) ||
  [[ $tests == 1 && ! -f $configured_for_tests ]]; then
  cmake -S . -B build -DCMAKE_BUILD_TYPE="$build_type" ${RINGMASTER_CMAKE_ARGS:-}
  if ((tests)); then touch "$configured_for_tests"; fi
fi
if ((tests)); then
  cmake --build build -j"${RINGMASTER_JOBS:-2}"
else
  # The app first: the tests and benchmarks (most of a full build) wait for --tests.
  cmake --build build -j"${RINGMASTER_JOBS:-2}" \
    --target ringmaster ringmaster-agent ringmaster-worker ringmasterctl
fi
