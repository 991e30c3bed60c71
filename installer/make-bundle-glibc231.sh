#!/usr/bin/env bash
# make-bundle-glibc231.sh [OUT_DIR]: the relocatable bundle of make-bundle.sh (ringmaster-agent,
# ringmaster-worker, ringmasterctl; bin/ lib/ share/) for hosts with glibc 2.31 or newer:
# Ubuntu 22.04 (2.35), RHEL 9 (2.34), Debian 11 (2.31), as well as Debian 12 and newer. A build
# on Debian 12 needs glibc 2.36 (its libstdc++, libgcc_s and libraries), so this one compiles
# Ringmaster inside a Debian 11 root (debootstrap bullseye) with that root's GCC 10, libstdc++ 10
# and libraries. OUT_DIR defaults to build/bundle-glibc231 of this checkout; the build tree and
# the rest stay in the cache. Needs root (chroot, mount) and Debian's archive the first time.
#
# What the root does not have comes from this Debian 12 host or from this directory:
#   cmake 3.25   the host's cmake, run with its own loader and libraries (Debian 11 has 3.18)
#   CLI11        the host's headers (header-only; Debian 11 has none)
#   SQLite 3.40  the host's static libsqlite3.a: the store's upserts need 3.35 (Debian 11 has
#                3.34); it is C and needs nothing of glibc newer than 2.30
#   Gloo         glibc231/gloo-5b14351.tar.xz, the commit Debian 12 packages (not in Debian 11),
#                less its tests, benchmarks and CUDA/ibverbs/libuv parts, built as a static library
#   compat.h     glibc231/compat.h, included first in every file: the few C++20 and glibc 2.32
#                pieces that GCC 10 and glibc 2.31 lack
# With the CUDA toolkit at $CUDA_HOME or /usr/local/cuda (mounted into the root read-only) the
# bundle has the GPU paths as the main build does; NCCL and cuBLAS are still opened at run time.
# RINGMASTER_BUNDLE_CUDA=OFF builds without them. Its GPU kernels are built for every generation
# (RINGMASTER_BUNDLE_CUDA_ARCHITECTURES, default all: see core/src/train/CMakeLists.txt).
#
# RINGMASTER_JOBS=N compiles at once (default 2). RINGMASTER_BUNDLE_IDLE_JOBS=1: all but one of
# them run under SCHED_IDLE, on CPU nothing else wants (a build beside other work: the bundle's
# test, beside the rest of the test suite).
# RINGMASTER_BULLSEYE_MINBASE=DIR: a minimal bullseye root (debootstrap --variant=minbase, from
# the same mirror) to copy instead of running debootstrap.
#
# The cache ($RINGMASTER_BULLSEYE_CACHE, default /var/cache/ringmaster-bullseye) keeps the root,
# its packages, Gloo and the build tree, each redone only when what made it changed, so a second
# run rebuilds only what changed. One run at a time per cache (a lock).
set -euo pipefail

source_dir=$(cd "$(dirname "$0")/.." && pwd)
out_dir=${1:-$source_dir/build/bundle-glibc231}
cache=${RINGMASTER_BULLSEYE_CACHE:-/var/cache/ringmaster-bullseye}
jobs=${RINGMASTER_JOBS:-2}
glibc_floor=2.31
die() { echo "make-bundle-glibc231.sh: $*" >&2; exit 1; }

((EUID == 0)) || die "needs root (debootstrap, chroot, mount): run it with sudo"
[[ $(uname -m) == x86_64 ]] || die "made for x86_64 hosts (this is $(uname -m))"
for tool in debootstrap unshare chroot flock objdump xz; do
  command -v "$tool" >/dev/null ||
    die "$tool is needed (apt-get install debootstrap util-linux binutils xz-utils)"
done
[[ $out_dir == /* ]] || out_dir=$PWD/$out_dir

# Every mount below lives in a mount namespace of this script's own, so that none outlives it,
# whatever way it ends.
if [[ -z ${RM_BUNDLE_NAMESPACE:-} ]]; then
  RM_BUNDLE_NAMESPACE=1 exec unshare --mount --propagation private "$0" "$out_dir"
fi

mkdir -p "$cache"
exec 8>"$cache/.lock"
flock 8
root=$cache/root
step() { echo "==> $*"; }
# in_root COMMAND...: run in the root, with a plain environment.
in_root() {
  chroot "$root" /usr/bin/env -i HOME=/root LC_ALL=C PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin \
    DEBIAN_FRONTEND=noninteractive ${CUDACXX:+CUDACXX=$CUDACXX} "$@"
}
# stamp_ok NAME TEXT: whether the step NAME was last done from TEXT; stamp_set NAME TEXT records it.
stamp_ok() { [[ -f $cache/stamps/$1 && $(cat "$cache/stamps/$1") == "$2" ]]; }
stamp_set() { mkdir -p "$cache/stamps"; printf '%s' "$2" >"$cache/stamps/$1"; }

# ---- The Debian 11 root. ----
mirror=${RINGMASTER_DEBIAN_MIRROR:-$(sed -n 's|^URIs: *\(\S*/debian\)/*$|\1|p' \
  /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -1)}
mirror=${mirror:-http://deb.debian.org/debian}
if ! stamp_ok root "$mirror"; then
  step "debootstrap bullseye (Debian 11, glibc 2.31) from $mirror"
  rm -rf "$root" "$root.partial" "$cache/stamps"
  if [[ -n ${RINGMASTER_BULLSEYE_MINBASE:-} ]]; then
    # A pristine `debootstrap --variant=minbase bullseye` root made by the caller (the bundle's
    # test keeps one of its own): a copy takes seconds, a second debootstrap a minute or more.
    [[ -x $RINGMASTER_BULLSEYE_MINBASE/usr/bin/dpkg ]] ||
      die "RINGMASTER_BULLSEYE_MINBASE=$RINGMASTER_BULLSEYE_MINBASE is not a Debian root"
    cp -a "$RINGMASTER_BULLSEYE_MINBASE" "$root.partial"
  else
    debootstrap --variant=minbase bullseye "$root.partial" "$mirror" >"$cache/debootstrap.log" 2>&1 ||
      die "debootstrap failed: $(tail -1 "$cache/debootstrap.log") (the whole log: $cache/debootstrap.log)"
  fi
  cat >"$root.partial/etc/apt/sources.list" <<EOF
deb $mirror bullseye main
deb $mirror bullseye-updates main
deb ${mirror%/debian}/debian-security bullseye-security main
EOF
  mv "$root.partial" "$root"
  stamp_set root "$mirror"
fi
mount -t proc proc "$root/proc"

packages=(g++ make pkg-config binutils libzmq3-dev libsodium-dev libprotobuf-dev protobuf-compiler
  libyaml-cpp-dev nlohmann-json3-dev libre2-dev libopenblas-dev)
if ! stamp_ok packages "${packages[*]}"; then
  step "installing the build's packages in the root"
  { in_root apt-get update -q && in_root apt-get install -y -q --no-install-recommends "${packages[@]}"; } \
    >"$cache/apt.log" 2>&1 || die "apt-get failed in the root: $(tail -3 "$cache/apt.log")"
  stamp_set packages "${packages[*]}"
fi

# ---- What comes from this host: cmake, CLI11, SQLite. ----
host_packages=(cmake cmake-data libcli11-dev libsqlite3-dev)
host_versions=$(dpkg-query -W -f='${Package}=${Version};' "${host_packages[@]}" 2>/dev/null) ||
  die "this host lacks one of ${host_packages[*]} (installer/bootstrap.sh installs them)"
if ! stamp_ok host "$host_versions"; then
  step "copying cmake, CLI11 and SQLite from this host into the root"
  rm -rf "$root/opt/host-cmake"
  mkdir -p "$root/opt/host-cmake/bin" "$root/opt/host-cmake/lib" "$root/usr/local/share"
  install -m 755 /usr/bin/cmake "$root/opt/host-cmake/bin/cmake"
  # Every library it loads, glibc's and its loader included: it runs on them, not the root's.
  ldd /usr/bin/cmake | grep -o '/[^ ]*' | sort -u | xargs -I{} cp -L {} "$root/opt/host-cmake/lib/"
  cmake_share=$(dpkg -L cmake-data | grep -x '/usr/share/cmake-[0-9.]*' | tail -1)
  rm -rf "$root/usr/local/share/${cmake_share##*/}"
  cp -a "$cmake_share" "$root/usr/local/share/"
  # --argv0 makes cmake take itself for /usr/local/bin/cmake: its modules are found from there,
  # and the Makefiles it writes call this wrapper back.
  cat >"$root/usr/local/bin/cmake" <<'EOF'
#!/bin/sh
exec /opt/host-cmake/lib/ld-linux-x86-64.so.2 --library-path /opt/host-cmake/lib \
  --argv0 /usr/local/bin/cmake /opt/host-cmake/bin/cmake "$@"
EOF
  # Debian 11's protoc (3.12) reads proto3 `optional` fields only behind this flag.
  cat >"$root/usr/local/bin/protoc" <<'EOF'
#!/bin/sh
exec /usr/bin/protoc --experimental_allow_proto3_optional "$@"
EOF
  chmod 755 "$root/usr/local/bin/cmake" "$root/usr/local/bin/protoc"
  for file in $(dpkg -L libcli11-dev); do
    if [[ -f $file && $file != /usr/share/doc/* ]]; then install -D -m 644 "$file" "$root$file"; fi
  done
  install -D -m 644 /usr/include/sqlite3.h "$root/usr/local/include/sqlite3.h"
  install -D -m 644 /usr/include/sqlite3ext.h "$root/usr/local/include/sqlite3ext.h"
  install -D -m 644 /usr/lib/x86_64-linux-gnu/libsqlite3.a "$root/usr/local/lib/libsqlite3.a"
  in_root cmake --version >/dev/null || die "the host's cmake does not run in the root"
  stamp_set host "$host_versions"
fi

# ---- Gloo. ----
gloo_tar=$source_dir/installer/glibc231/gloo-5b14351.tar.xz
gloo_sum=$(sha256sum "$gloo_tar" | cut -d' ' -f1)
if ! stamp_ok gloo "$gloo_sum"; then
  step "building Gloo (static) in the root"
  rm -rf "$root/opt/gloo"
  mkdir -p "$root/opt/gloo"
  tar -xJf "$gloo_tar" -C "$root/opt/gloo"
  in_root sh -c 'cmake -S /opt/gloo/gloo -B /opt/gloo/build -DCMAKE_BUILD_TYPE=Release \
      -DBUILD_SHARED_LIBS=OFF -DCMAKE_INSTALL_PREFIX=/usr/local &&
    cmake --build /opt/gloo/build -j"$1" && cmake --install /opt/gloo/build' sh "$jobs" \
    >"$cache/gloo.log" 2>&1 || die "Gloo did not build: $(tail -3 "$cache/gloo.log") (the log: $cache/gloo.log)"
  stamp_set gloo "$gloo_sum"
fi

# ---- Ringmaster. ----
mkdir -p "$root/src"
mount --bind "$source_dir" "$root/src"
mount -o remount,bind,ro "$root/src"
cuda_option=OFF
CUDACXX=""
cuda_home=${CUDA_HOME:-/usr/local/cuda}
if [[ ${RINGMASTER_BUNDLE_CUDA:-AUTO} != OFF && -x $cuda_home/bin/nvcc ]]; then
  cuda_real=$(readlink -f "$cuda_home")
  mkdir -p "$root$cuda_real"
  mount --bind "$cuda_real" "$root$cuda_real"
  mount -o remount,bind,ro "$root$cuda_real"
  if [[ $cuda_real != "$cuda_home" ]]; then
    mkdir -p "$root$(dirname "$cuda_home")"
    ln -sfn "$cuda_real" "$root$cuda_home"
  fi
  cuda_option=ON
  CUDACXX=$cuda_home/bin/nvcc
fi
# The build tree is this checkout's: make goes by modification times, which say nothing about
# another checkout's files mounted at the same place.
if ! stamp_ok source "$source_dir"; then
  rm -rf "$root/build/ringmaster"
  stamp_set source "$source_dir"
fi
launcher=""
if [[ ${RINGMASTER_BUNDLE_IDLE_JOBS:-0} == 1 ]]; then
  # The compile that gets the lock runs at the build's priority, any other one at the same time
  # under SCHED_IDLE.
  launcher=/usr/local/bin/rm-compile
  cat >"$root$launcher" <<'EOF'
#!/bin/sh
exec 9>>/tmp/rm-compile.lock
flock -n 9 && exec "$@"
exec 9>&-
exec chrt --idle 0 "$@"
EOF
  chmod 755 "$root$launcher"
fi
step "building ringmaster-agent, ringmaster-worker, ringmasterctl with GCC 10 (CUDA $cuda_option)"
# RelWithDebInfo's -O2 as the tested build, without -g: the bundle is stripped anyway.
in_root cmake -S /src -B /build/ringmaster -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -DNDEBUG" -DCMAKE_CUDA_FLAGS_RELWITHDEBINFO="-O2 -DNDEBUG" \
  -DCMAKE_CXX_FLAGS="-include /src/installer/glibc231/compat.h" \
  -DRINGMASTER_BUILD_APP=OFF -DRINGMASTER_BUILD_TESTS=OFF -DRINGMASTER_BUILD_BENCHMARKS=OFF \
  -DRINGMASTER_WITH_CUDA=$cuda_option -DRINGMASTER_CUDA_ARCHITECTURES="${RINGMASTER_BUNDLE_CUDA_ARCHITECTURES:-all}" \
  -DSQLite3_INCLUDE_DIR=/usr/local/include -DSQLite3_LIBRARY=/usr/local/lib/libsqlite3.a \
  -DCMAKE_CXX_STANDARD_LIBRARIES="-ldl -lpthread -lm" \
  -DCMAKE_CXX_COMPILER_LAUNCHER="$launcher" -DCMAKE_CUDA_COMPILER_LAUNCHER="$launcher" \
  >"$cache/configure.log" 2>&1 || die "cmake failed: $(tail -5 "$cache/configure.log")"
in_root cmake --build /build/ringmaster -j"$jobs" --target ringmaster-agent ringmaster-worker ringmasterctl \
  >"$cache/build.log" 2>&1 || die "the build failed: $(grep -m5 -E 'error|Error' "$cache/build.log")
    (the log: $cache/build.log)"

step "bundling"
in_root /src/installer/make-bundle.sh /build/ringmaster /build/bundle >"$cache/bundle.log" 2>&1 ||
  die "make-bundle.sh failed: $(tail -3 "$cache/bundle.log")"
newest=$(objdump -T "$root"/build/bundle/bin/* "$root"/build/bundle/lib/* 2>/dev/null |
  grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -1)
newest=${newest#GLIBC_}
if [[ $(printf '%s\n%s\n' "$newest" "$glibc_floor" | sort -V | tail -1) != "$glibc_floor" ]]; then
  objdump -T "$root"/build/bundle/bin/* "$root"/build/bundle/lib/* 2>/dev/null |
    grep -E "^/|GLIBC_$newest" >&2
  die "the bundle needs glibc $newest, newer than $glibc_floor"
fi
rm -rf "$out_dir.partial"
mkdir -p "$(dirname "$out_dir")"
cp -a "$root/build/bundle" "$out_dir.partial"
rm -rf "$out_dir"
mv "$out_dir.partial" "$out_dir"
echo "bundle: $out_dir, $(du -sh "$out_dir" | cut -f1), for glibc $glibc_floor and newer (needs $newest)"
