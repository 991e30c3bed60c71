#!/usr/bin/env bash
# Installs Ringmaster's build dependencies from Debian 12's archive and builds it into ./build.
# Executables land in build/bin. Run as root (or with sudo available). Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(
  cmake g++ make pkg-config git
  qt6-base-dev qt6-charts-dev libqt6opengl6-dev libqt6sql6-sqlite
  libzmq3-dev cppzmq-dev libsodium-dev libsqlite3-dev sqlite3
  libgtest-dev libgmock-dev libbenchmark-dev
  libgloo-dev libopenblas-dev libprotobuf-dev protobuf-compiler
  libyaml-cpp-dev nlohmann-json3-dev libcli11-dev libre2-dev
  openmpi-bin libopenmpi-dev python3 python3-torch python3-numpy
  xvfb xauth x11-apps imagemagick xdotool
  binutils debootstrap xz-utils
  openssh-client openssh-server desktop-file-utils sudo
  slurm-wlm munge bc
)
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
cmake -S . -B build -DCMAKE_BUILD_TYPE="$build_type" ${RINGMASTER_CMAKE_ARGS:-}
cmake --build build -j"${RINGMASTER_JOBS:-2}"
