#!/usr/bin/env bash
# package_test.sh BUILD_DIR: the Debian packages of `cpack -G DEB`. dpkg-deb shows what each holds
# (the app and ringmasterctl, the desktop entry and icon; the agent, worker, systemd unit and
# default config) and that their dependencies are Debian's packages; systemd checks the unit.
# Then, as root where the Debian mirror answers, both are installed into a scratch root (an
# overlay on the minimal Debian root of tests/bundle/minroot_test.sh): the agent package creates
# the ranks' user and the state dir, its agent starts from the default config and answers
# `pubkey`, and purging it removes the user, the state and the files. Exit 77 (skipped) with the
# reason where a part cannot run.
set -euo pipefail

build=$(cd "$1" && pwd)
source_dir=$(cd "$(dirname "$0")/../.." && pwd)
packages=$build/packages
source "$source_dir/tests/shell/checks.sh"
has_line() { grep -qE -- "$2" <<<"$1"; }

rm -rf "$packages"
(cd "$build" && cpack -G DEB -B "$packages" >"$build/cpack.log" 2>&1) || {
  tail -20 "$build/cpack.log" >&2
  echo "package_test: cpack failed" >&2
  exit 1
}
agent_deb=$(ls "$packages"/ringmaster-agent_*.deb)
app_deb=$(ls "$packages"/ringmaster_*.deb)

agent_files=$(dpkg-deb -c "$agent_deb" | awk '{print $6}')
agent_fields=$(dpkg-deb -f "$agent_deb")
check "agent package: the agent" has_line "$agent_files" '^\./usr/bin/ringmaster-agent$'
check "agent package: the worker" has_line "$agent_files" '^\./usr/bin/ringmaster-worker$'
check "agent package: the systemd unit" has_line "$agent_files" '^\./usr/lib/systemd/system/ringmaster-agent\.service$'
check "agent package: the default config" has_line "$agent_files" '^\./etc/ringmaster/agent\.toml$'
check "agent package: the config is a conffile" has_line "$(dpkg-deb -I "$agent_deb" conffiles)" '^/etc/ringmaster/agent\.toml$'
check "agent package: its name" has_line "$agent_fields" '^Package: ringmaster-agent$'
check "agent package: depends on libzmq5" has_line "$agent_fields" '^Depends: .*libzmq5'
check "agent package: depends on libgloo0" has_line "$agent_fields" '^Depends: .*libgloo0'
check "agent package: no CUDA library to depend on" bash -c "! grep -qi 'cuda\|nccl' <<<\"\$0\"" "$(grep '^Depends' <<<"$agent_fields")"
app_files=$(dpkg-deb -c "$app_deb" | awk '{print $6}')
app_fields=$(dpkg-deb -f "$app_deb")
check "app package: the app" has_line "$app_files" '^\./usr/bin/ringmaster$'
check "app package: ringmasterctl" has_line "$app_files" '^\./usr/bin/ringmasterctl$'
check "app package: the desktop entry" has_line "$app_files" '^\./usr/share/applications/ringmaster\.desktop$'
check "app package: its icon" has_line "$app_files" '^\./usr/share/icons/hicolor/256x256/apps/ringmaster\.png$'
check "app package: the job templates" has_line "$app_files" '^\./usr/share/ringmaster/jobs/demo\.yaml$'
check "app package: depends on Qt Charts" has_line "$app_fields" '^Depends: .*libqt6charts6'
check "app package: depends on the same agent version" has_line "$app_fields" "ringmaster-agent \(= $(dpkg-deb -f "$agent_deb" Version)\)"

# The unit and the desktop entry, checked by their own tools against the unpacked package.
unpacked=$packages/unpacked
dpkg-deb -x "$agent_deb" "$unpacked"
dpkg-deb -x "$app_deb" "$unpacked"
if command -v systemd-analyze >/dev/null; then
  # Against this machine's units (After=, WantedBy=), with ExecStart on the unpacked agent.
  sed "s|^ExecStart=/usr/bin/|ExecStart=$unpacked/usr/bin/|" \
    "$unpacked/usr/lib/systemd/system/ringmaster-agent.service" >"$packages/ringmaster-agent.service"
  check "systemd-analyze verify: the unit" bash -c \
    "systemd-analyze verify '$packages/ringmaster-agent.service' >'$packages/verify.log' 2>&1 && ! grep . '$packages/verify.log'"
fi
if command -v desktop-file-validate >/dev/null; then
  check "desktop-file-validate: the desktop entry" desktop-file-validate "$unpacked/usr/share/applications/ringmaster.desktop"
fi

skip_install() {
  echo "package_test: the scratch-root install skipped: $*"
  if ((failures)); then exit 1; fi
  exit 77
}
((EUID == 0)) || skip_install "needs root (chroot, mount)"
minroot=$build/minroot
[[ -x $minroot/usr/bin/apt-get ]] || skip_install "no minimal Debian root in $minroot (bundle_minroot_test makes it)"
scratch=$packages/root
mkdir -p "$scratch"/{upper,work,merged}
unmount_all() {
  for m in dev/pts dev proc; do umount -l "$scratch/merged/$m" 2>/dev/null || true; done
  umount -l "$scratch/merged" 2>/dev/null || true
  # Never rm -r the merged root: a mount left inside it would take the host's files along.
  rm -rf "$scratch/upper" "$scratch/work"
  rmdir "$scratch/merged" "$scratch" 2>/dev/null || true
}
trap unmount_all EXIT
mount -t overlay overlay -o "lowerdir=$minroot,upperdir=$scratch/upper,workdir=$scratch/work" \
  "$scratch/merged" || skip_install "overlayfs cannot be mounted here"
root=$scratch/merged
mount -t proc proc "$root/proc"
mount --bind /dev "$root/dev"
cp /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null || true
cp "$agent_deb" "$app_deb" "$root/tmp/"
in_root() { chroot "$root" env DEBIAN_FRONTEND=noninteractive PATH=/usr/sbin:/usr/bin:/sbin:/bin "$@"; }
in_root apt-get update -q >"$packages/apt-update.log" 2>&1 ||
  skip_install "the Debian mirror does not answer: $(tail -1 "$packages/apt-update.log")"

check "the agent package installs with its dependencies" bash -c \
  "chroot '$root' env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends /tmp/$(basename "$agent_deb") >'$packages/apt-agent.log' 2>&1 || { tail -5 '$packages/apt-agent.log'; false; }"
check "the app package's dependencies resolve" bash -c \
  "chroot '$root' apt-get install -s -q --no-install-recommends /tmp/$(basename "$app_deb") >'$packages/apt-app.log' 2>&1 || { tail -5 '$packages/apt-app.log'; false; }"
check "postinst made the ranks' user" bash -c "chroot '$root' getent passwd ringmaster >/dev/null"
check "postinst made the state dir (711)" test "$(stat -c %a "$root/var/lib/ringmaster-agent")" = 711
port=$(free_port)
# chroot and env exec the agent: $! is its pid.
chroot "$root" env PATH=/usr/bin:/bin /usr/bin/ringmaster-agent --config /etc/ringmaster/agent.toml \
  --listen "tcp://127.0.0.1:$port" >"$packages/agent.log" 2>&1 &
agent=$!
for _ in $(seq 100); do grep -q '^public-key' "$packages/agent.log" && break; sleep 0.1; done
check "the packaged agent starts from the default config" grep -q '^public-key' "$packages/agent.log"
check "... and gives each job a uid of its own" \
  grep -q "each job's ranks run as a user of their own, uids 1879048192-1879113727" "$packages/agent.log"
kill "$agent" 2>/dev/null || true
wait "$agent" 2>/dev/null || true
check "pubkey reads its key" bash -c "[[ \$(chroot '$root' /usr/bin/ringmaster-agent pubkey --state-dir /var/lib/ringmaster-agent 2>/dev/null | wc -c) -eq 41 ]]"
check "purge removes the package" bash -c "chroot '$root' apt-get purge -y -q ringmaster-agent >'$packages/apt-purge.log' 2>&1"
check "purge removes the state dir" test ! -e "$root/var/lib/ringmaster-agent"
check "purge removes the ranks' user" bash -c "! chroot '$root' getent passwd ringmaster"
check "purge removes the program" test ! -e "$root/usr/bin/ringmaster-agent"

# ---- install-agent.sh --method deb, for real: the scratch root is a second host with its own
# sshd, packages and users (no systemd, no iproute2: the installer's fallbacks run too). ----
if ! chroot "$root" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
  openssh-server >"$packages/apt-sshd.log" 2>&1; then
  echo "package_test: the package over ssh skipped: openssh-server does not install in the root" >&2
else
  sshd_dir=/srv/sshd  # inside the root
  mkdir -p "$root$sshd_dir"
  trap '"$source_dir/tests/installer/loopback_sshd.sh" down "$sshd_dir" "$root"; unmount_all' EXIT
  "$source_dir/tests/installer/loopback_sshd.sh" up "$sshd_dir" "$root"
  export RINGMASTER_CONFIG_DIR=$packages/client RINGMASTER_DB=$packages/history.db
  cluster=$packages/cluster.yaml
  install=("$source_dir/installer/install-agent.sh" --ssh-config "$root$sshd_dir/ssh_config"
    --cluster "$cluster" --build-dir "$build" --package "$agent_deb" --no-systemd
    --port "$port" --name debhost)
  check "install-agent.sh installs the package over ssh" bash -c \
    "$(printf '%q ' "${install[@]}") root@testhost >'$packages/install.log' 2>&1 || { tail -15 '$packages/install.log'; false; }"
  check "... as the package (apt), not the bundle" grep -q 'packaging the agent (deb)' "$packages/install.log"
  check "... into the root's /usr/bin" test -x "$root/usr/bin/ringmaster-agent"
  check "... and it is online" grep -q '==> debhost is online at tcp://127.0.0.1:' "$packages/install.log"
  key_before=$(grep -o 'server_key: .*' "$cluster")
  check "a job trains on it" "$build/bin/ringmasterctl" --cluster "$cluster" submit \
    "$source_dir/tests/installer/small_job.yaml" --wait
  check "an upgrade with the package" bash -c "$(printf '%q ' "${install[@]}") root@testhost >/dev/null 2>&1"
  check "... keeps the key" test "$(grep -o 'server_key: .*' "$cluster")" = "$key_before"
  check "--uninstall purges the package" bash -c \
    "$(printf '%q ' "${install[@]}") --uninstall root@testhost >'$packages/uninstall.log' 2>&1 || { tail -5 '$packages/uninstall.log'; false; }"
  check "... program, state and user gone" bash -c "[[ ! -e '$root/usr/bin/ringmaster-agent' && ! -e '$root/var/lib/ringmaster-agent' ]] && ! chroot '$root' getent passwd ringmaster"
  check "... and the agent stopped" bash -c "! python3 -c 'import socket, sys; sys.exit(socket.socket().connect_ex((\"127.0.0.1\", $port)) != 0)'"
fi

finish_checks package_test
