#!/usr/bin/env bash
# loopback_sshd.sh up|down DIR [ROOT]: Debian's OpenSSH server on a free loopback port, as a
# stand-in for a remote host in tests (the agent installer; later Slurm's login node). With ROOT,
# sshd runs chrooted in that Debian root (its own openssh-server; DIR is then a path inside it):
# a second "host" with its own packages and users on the same network. `up` makes a
# throwaway host key and client key in DIR, starts sshd (as root: it must be able to log users
# in), and writes DIR/ssh_config with a host alias `testhost` (127.0.0.1, that port, that key,
# known_hosts in DIR). Every user whose login is allowed may log in with DIR/client_key.
# DIR/fakebin comes first on the PATH of every ssh session, so a test can stand in for a host's
# uname or getconf; $LOOPBACK_SSHD_ENV (NAME=VALUE ...) is set in every session too. Exit 77
# when it cannot run, saying why; `down` stops it.
set -euo pipefail
action=$1 dir=$2 root=${3:-}
here=$root$dir  # DIR as this side sees it
skip() { echo "loopback_sshd: cannot start: $*" >&2; exit 77; }
source "$(dirname "$0")/../shell/checks.sh"  # free_port

if [[ $action == down ]]; then
  [[ -f $here/sshd.pid ]] && kill "$(cat "$here/sshd.pid")" 2>/dev/null || true
  exit 0
fi
((EUID == 0)) || skip "sshd needs root to log users in"
[[ -x $root/usr/sbin/sshd ]] || skip "openssh-server is not installed (apt-get install openssh-server)"
command -v ssh >/dev/null || skip "openssh-client is not installed"
mkdir -p "$here/fakebin" "$root/run/sshd"
chmod 755 "$here" "$here/fakebin"
rm -f "$here/host_key" "$here/client_key"
ssh-keygen -q -t ed25519 -N '' -C rm-test-host -f "$here/host_key"
ssh-keygen -q -t ed25519 -N '' -C rm-test-client -f "$here/client_key"
cp "$here/client_key.pub" "$here/authorized_keys"
port=$(free_port)
cat >"$here/sshd_config" <<CONF
Port $port
ListenAddress 127.0.0.1
HostKey $dir/host_key
AuthorizedKeysFile $dir/authorized_keys
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin prohibit-password
StrictModes no
UsePAM no
PidFile $dir/sshd.pid
SetEnv PATH=$dir/fakebin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin ${LOOPBACK_SSHD_ENV:-}
CONF
sshd=(/usr/sbin/sshd -f "$dir/sshd_config" -E "$dir/sshd.log")
[[ -z $root ]] || sshd=(chroot "$root" "${sshd[@]}")
"${sshd[@]}" || skip "sshd did not start: $(tail -1 "$here/sshd.log")"
cat >"$here/ssh_config" <<CONF
Host testhost
  HostName 127.0.0.1
  Port $port
  IdentityFile $here/client_key
  IdentitiesOnly yes
  UserKnownHostsFile $here/known_hosts
  StrictHostKeyChecking accept-new
  LogLevel ERROR
CONF
for _ in $(seq 50); do
  ssh -F "$here/ssh_config" -o BatchMode=yes root@testhost true 2>/dev/null && exit 0
  sleep 0.1
done
skip "sshd on port $port does not let root in: $(tail -2 "$here/sshd.log" | tr '\n' ' ')"
