#!/usr/bin/env bash
# minroot_test.sh BUILD_DIR: the relocatable bundle (installer/make-bundle.sh) runs
# `ringmasterctl demo` in a minimal Debian root made with `debootstrap --variant=minbase`: no
# compiler, none of the build's -dev packages or libraries, no CUDA (NCCL and cuBLAS are opened
# only when a GPU job needs them), nothing of the build tree: a CPU-only host.
# Needs root (chroot, mount) and the Debian mirror the first time; the root is kept in
# BUILD_DIR/minroot for later runs. Exit 77 (skipped) where it cannot run, saying why.
set -euo pipefail
# The demo that needs no data set (a minimal host has no dataset-fashion-mnist).
quick_demo=/opt/ringmaster/share/ringmaster/jobs/examples/quick_demo.yaml

build=$(cd "$1" && pwd)
source_dir=$(cd "$(dirname "$0")/../.." && pwd)
root=$build/minroot
skip() { echo "minroot_test: skipped: $*"; exit 77; }
((EUID == 0)) || skip "needs root for chroot"
command -v debootstrap >/dev/null || skip "debootstrap is not installed"

if [[ ! -x $root/usr/bin/dpkg ]]; then
  rm -rf "$root.partial"
  debootstrap --variant=minbase bookworm "$root.partial" http://deb.debian.org/debian \
    >"$build/minroot-debootstrap.log" 2>&1 || skip "debootstrap failed (no mirror?): $(tail -1 "$build/minroot-debootstrap.log")"
  mv "$root.partial" "$root"
fi
if chroot "$root" dpkg -l | grep -E '^ii +[^ ]+-dev[: ]'; then
  echo "minroot_test: the root has -dev packages" >&2
  exit 1
fi

"$source_dir/installer/make-bundle.sh" "$build" "$root/opt/ringmaster"

mkdir -p "$root/proc"
chroot "$root" /bin/true || skip "chroot is not permitted here"
# The agent finds ringmaster-worker through /proc/self/exe.
mount -t proc proc "$root/proc" || skip "cannot mount /proc in the root here"
trap 'umount "$root/proc" 2>/dev/null || true' EXIT

out=$(chroot "$root" /usr/bin/env -i HOME=/root PATH=/usr/bin:/bin \
  /opt/ringmaster/bin/ringmasterctl demo --spec "$quick_demo" 2>&1) || {
  echo "$out"
  echo "minroot_test: ringmasterctl demo failed in the minimal root" >&2
  exit 1
}
echo "$out" | tail -8
grep -q "succeeded" <<<"$out" || { echo "minroot_test: the demo job did not succeed" >&2; exit 1; }

# Two agents in two roots with one state dir path (the root's /root/.local/share/ringmaster/
# local-agent, and the same path on the host in a mount namespace of its own): the host's agent,
# starting while the root's demo trains, must not end its ranks. Found by their environment
# alone, they were ended (bundle_bullseye_test's agent did it to this test's demo).
chroot "$root" /usr/bin/env -i HOME=/root PATH=/usr/bin:/bin \
  /opt/ringmaster/bin/ringmasterctl demo --spec "$quick_demo" >"$build/minroot-demo-beside.log" 2>&1 &
demo=$!
for _ in $(seq 200); do
  pgrep -af ringmaster-worker | grep -q "/root/.local/share/ringmaster/local-agent" && break
  sleep 0.05
done
unshare -m sh -c 'mount -t tmpfs none /root && exec "$0" --listen tcp://127.0.0.1:0 \
  --state-dir /root/.local/share/ringmaster/local-agent --name beside --slots 1' \
  "$build/bin/ringmaster-agent" >/dev/null 2>&1 &
beside=$!
sleep 2
kill "$beside" 2>/dev/null
wait "$beside" 2>/dev/null
if ! wait "$demo" || ! grep -q "succeeded" "$build/minroot-demo-beside.log"; then
  tail -8 "$build/minroot-demo-beside.log"
  echo "minroot_test: an agent with the same state dir path in another root ended the demo's ranks" >&2
  exit 1
fi
echo "minroot_test: the demo trained through an agent of the same state dir path starting beside it"
