#!/usr/bin/env bash
# install_agent_test.sh BUILD_DIR: installer/install-agent.sh for real, through Debian's OpenSSH
# server on a loopback port (tests/installer/loopback_sshd.sh): install an agent into a test
# prefix (--no-systemd: this machine's PID 1 is not systemd), run a job on it with ringmasterctl,
# upgrade it (same key, same journal), uninstall it (nothing left), and cause each failure the
# installer names: no ssh access, no sudo, no systemd, unsupported OS, architecture and glibc,
# port in use, an agent that does not come up; several hosts at once with one failing.
# Exit 77 (skipped) where sshd cannot run, saying why.
set -euo pipefail

build=$(cd "$1" && pwd)
source_dir=$(cd "$(dirname "$0")/../.." && pwd)
source "$source_dir/tests/shell/checks.sh"
installer=$source_dir/installer/install-agent.sh
ctl=$build/bin/ringmasterctl
work=$(mktemp -d /tmp/rm-install-test.XXXXXX)
chmod 755 "$work"
suffix=$$
run_user=rmtest$suffix      # the ranks' user the installer creates (and removes)
nosudo_user=rmnosudo$suffix # a login without root or sudo
sudo_user=rmsudo$suffix     # a login with passwordless sudo
sudoers=/etc/sudoers.d/ringmaster-test-$suffix

cleanup() {
  "$source_dir/tests/installer/loopback_sshd.sh" down "$work/sshd"
  for pid_file in "$work"/*/var/lib/ringmaster-agent/agent.pid; do
    [[ -f $pid_file ]] && kill -KILL "$(cat "$pid_file")" 2>/dev/null
  done
  for user in "$run_user" "$nosudo_user" "$sudo_user"; do
    id -u "$user" >/dev/null 2>&1 && userdel "$user" 2>/dev/null
  done
  rm -f "$sudoers"
  rm -rf "$work"
  return 0
}
trap cleanup EXIT

mkdir -p "$work/sshd"
set +e
"$source_dir/tests/installer/loopback_sshd.sh" up "$work/sshd"
sshd_status=$?
set -e
((sshd_status == 0)) || { echo "install_agent_test: skipped: loopback sshd did not start"; exit 77; }

export RINGMASTER_CONFIG_DIR=$work/client RINGMASTER_DB=$work/history.db
cluster=$work/cluster.yaml
agent_port=$(free_port)
common=(--ssh-config "$work/sshd/ssh_config" --cluster "$cluster" --build-dir "$build" --user "$run_user")

# expect_failure DESCRIPTION TEXT INSTALLER_ARGS...: the installer fails, saying TEXT
expect_failure() {
  local description=$1 text=$2 output status
  shift 2
  set +e
  output=$("$installer" "${common[@]}" "$@" 2>&1)
  status=$?
  set -e
  if ((status != 0)) && grep -qF -- "$text" <<<"$output"; then
    echo "ok: $description"
  else
    echo "FAILED: $description: exit $status, expected '$text' in:" >&2
    sed 's/^/    /' <<<"$output" >&2
    failures=$((failures + 1))
  fi
  last_output=$output
}
listening() { python3 -c 'import socket, sys; s = socket.socket(); sys.exit(s.connect_ex(("127.0.0.1", int(sys.argv[1]))))' "$1"; }

# ---- Install, run a job, upgrade, uninstall. ----
prefix=$work/agent
"$installer" "${common[@]}" --prefix "$prefix" --no-systemd --port "$agent_port" --name loop1 root@testhost |
  tee "$work/install.log"
check "the installer ends with the agent online" grep -q "loop1 .*tcp://127.0.0.1:$agent_port .* ok " "$work/install.log"
check "it showed its progress" grep -q '^==> \[8/8\] checking that it answers' "$work/install.log"
check "the cluster file pins the key read over ssh" \
  grep -qF -- "$("$prefix/bin/ringmaster-agent" pubkey --state-dir "$prefix/var/lib/ringmaster-agent" 2>/dev/null)" "$cluster"
check "the ranks' user was created" id -u "$run_user" >/dev/null
check "the config names that user" grep -qx "run-as = \"$run_user\"" "$prefix/etc/agent.toml"
check "the state dir lets ranks pass but not list" test "$(stat -c %a "$prefix/var/lib/ringmaster-agent")" = 711
key_before=$(grep -o 'server_key: .*' "$cluster")
agent_pid_before=$(cat "$prefix/var/lib/ringmaster-agent/agent.pid")

check "a job trains on the installed agent" bash -c "'$ctl' --cluster '$cluster' submit '$source_dir/tests/installer/small_job.yaml' --wait >'$work/job.out'"
job_id=$(head -1 "$work/job.out")
check "jobs are apart by default: its ranks ran as a uid of their own" \
  grep -q "each job's ranks run as a user of their own, uids 1879048192-1879113727" "$prefix/var/lib/ringmaster-agent/agent.log"
check "the config has the default range" grep -qx 'job-uids = "1879048192-1879113727"' "$prefix/etc/agent.toml"

"$installer" "${common[@]}" --prefix "$prefix" --no-systemd --port "$agent_port" --name loop1 root@testhost >"$work/upgrade.log"
check "an upgrade keeps the agent's key" test "$(grep -o 'server_key: .*' "$cluster")" = "$key_before"
check "an upgrade restarts the agent" test "$(cat "$prefix/var/lib/ringmaster-agent/agent.pid")" != "$agent_pid_before"
check "an upgrade keeps the journal" bash -c "'$ctl' --cluster '$cluster' --db '$work/fresh.db' sync >/dev/null &&
  '$ctl' --cluster '$cluster' --db '$work/fresh.db' runs | grep -q '$job_id'"
check "the cluster file still has one entry" test "$(grep -c 'name:' "$cluster")" = 1
# A uid of its own for each job.
"$installer" "${common[@]}" --prefix "$prefix" --no-systemd --port "$agent_port" --name loop1 \
  --job-uids 1800000000-1800000063 root@testhost >"$work/uids.log" 2>&1
check "--job-uids: the reinstall succeeds" grep -q "loop1 .* ok " "$work/uids.log"
check "--job-uids: the config has the range" grep -qx 'job-uids = "1800000000-1800000063"' "$prefix/etc/agent.toml"
check "--job-uids: a job trains" bash -c "'$ctl' --cluster '$cluster' submit '$source_dir/tests/installer/small_job.yaml' --wait >/dev/null"
check "--job-uids: its ranks ran as a uid of their own" \
  grep -q "each job's ranks run as a user of their own, uids 1800000000-1800000063" "$prefix/var/lib/ringmaster-agent/agent.log"
expect_failure "--job-uids must be a range" "--job-uids is a range of uids" --prefix "$work/x" --no-systemd --job-uids 5 root@testhost
# One person's hosts: every job's ranks as the ranks' user.
"$installer" "${common[@]}" --prefix "$prefix" --no-systemd --port "$agent_port" --name loop1 \
  --job-uids off root@testhost >"$work/shared.log" 2>&1
check "--job-uids off: the config has no range" bash -c "! grep -q job-uids '$prefix/etc/agent.toml'"
check "--job-uids off: a job trains" bash -c "'$ctl' --cluster '$cluster' submit '$source_dir/tests/installer/small_job.yaml' --wait >/dev/null"
check "--job-uids off: its ranks ran as the ranks' user" \
  grep -q "ranks run as user $run_user" "$prefix/var/lib/ringmaster-agent/agent.log"

# ---- Each failure, caused for real. ----
closed_port=$(free_port)
expect_failure "no ssh access" "cannot ssh to it" --prefix "$work/x" --no-systemd "root@127.0.0.1:$closed_port"
expect_failure "a login the host refuses" "Permission denied" --prefix "$work/x" --no-systemd nobody-here@testhost

useradd --no-create-home --shell /bin/bash "$nosudo_user"
usermod -p '*' "$nosudo_user"  # not locked: key logins work, passwords do not
if command -v sudo >/dev/null; then
  expect_failure "no sudo" "sudo asks for a password" --prefix "$work/x" --no-systemd "$nosudo_user@testhost"
  # The usual case on clusters: your own login, with passwordless sudo.
  useradd --no-create-home --shell /bin/bash "$sudo_user"
  usermod -p '*' "$sudo_user"
  echo "$sudo_user ALL=(ALL) NOPASSWD: ALL" >"$sudoers"
  chmod 440 "$sudoers"
  sudo_port=$(free_port)
  "$installer" "${common[@]}" --prefix "$work/sudo" --no-systemd --port "$sudo_port" --name viasudo \
    "$sudo_user@testhost" >"$work/sudo.log" 2>&1 || sed 's/^/    /' "$work/sudo.log" >&2
  check "a login with passwordless sudo installs" grep -q "==> viasudo is online at tcp://127.0.0.1:$sudo_port" "$work/sudo.log"
  check "... and says it used sudo" grep -q "as $sudo_user with sudo" "$work/sudo.log"
  check "... and the agent runs as root" test "$(stat -c %U "$work/sudo/var/lib/ringmaster-agent/agent.key")" = root
  "$installer" "${common[@]}" --prefix "$work/sudo" --no-systemd --uninstall "$sudo_user@testhost" >/dev/null 2>&1
  check "... and uninstalls" test ! -e "$work/sudo"
else
  expect_failure "no sudo" "sudo is not installed" --prefix "$work/x" --no-systemd "$nosudo_user@testhost"
fi
if [[ ! -d /run/systemd/system ]]; then
  expect_failure "no systemd" "does not run systemd: use --no-systemd" --prefix "$work/x" root@testhost
fi

fake() { printf '#!/bin/sh\n%s\n' "$2" >"$work/sshd/fakebin/$1"; chmod 755 "$work/sshd/fakebin/$1"; }
fake uname 'case "$1" in -m) echo aarch64 ;; *) exec /bin/uname "$@" ;; esac'
expect_failure "unsupported architecture" "unsupported architecture: the host is aarch64 and this build is $(uname -m)" \
  --prefix "$work/x" --no-systemd root@testhost
fake uname 'case "$1" in -s) echo FreeBSD ;; *) exec /bin/uname "$@" ;; esac'
expect_failure "unsupported OS" "unsupported OS: the host runs FreeBSD" --prefix "$work/x" --no-systemd root@testhost
rm "$work/sshd/fakebin/uname"
fake getconf 'echo glibc 2.17'
expect_failure "a glibc too old" "has glibc 2.17 and this build needs" --prefix "$work/x" --no-systemd root@testhost
rm "$work/sshd/fakebin/getconf"
check "no failure so far left anything on the host" test ! -e "$work/x"

busy_port=$(free_port)
python3 -c 'import socket, time; s = socket.socket(); s.bind(("0.0.0.0", int(__import__("sys").argv[1]))); s.listen(); time.sleep(600)' "$busy_port" &
squatter=$!
for _ in $(seq 50); do listening "$busy_port" && break; sleep 0.1; done
expect_failure "port in use" "port $busy_port on $(hostname -s) is in use by python3 (pid $squatter)" \
  --prefix "$work/busy" --no-systemd --port "$busy_port" --name busy root@testhost
kill "$squatter"
check "a port in use stops the install before it touches anything" test ! -e "$work/busy/bin"

# 192.0.2.1 (TEST-NET-1) is no address of this host: the agent cannot listen there.
expect_failure "an agent that does not come up" "the agent did not come up" \
  --prefix "$work/down" --no-systemd --port "$(free_port)" --bind 192.0.2.1 --name down root@testhost
check "... with the last lines of its log" grep -q "Cannot assign requested address\|192.0.2.1" <<<"$last_output"
"$installer" "${common[@]}" --prefix "$work/down" --no-systemd --uninstall --name down root@testhost >/dev/null
check "a failed install uninstalls" test ! -e "$work/down"

# ---- Several hosts at once (a hosts file), one of them unreachable: a table says which. ----
multi_port=$(free_port)
set +e
printf '# the hosts file: one USER@HOST[:SSHPORT] a line\nroot@testhost\n\nroot@127.0.0.1:%s  # down\n' \
  "$closed_port" >"$work/hosts.txt"
"$installer" "${common[@]}" --prefix "$work/multi" --no-systemd --port "$multi_port" \
  --hosts "$work/hosts.txt" >"$work/multi.log" 2>&1
multi_status=$?
set -e
cat "$work/multi.log"
check "several hosts: the run fails when one host fails" test "$multi_status" -ne 0
check "several hosts: the table has the installed one" grep -q "^root@testhost .* ok .*online at tcp://127.0.0.1:$multi_port" "$work/multi.log"
check "several hosts: and the failed one, with why" grep -q "^root@127.0.0.1:$closed_port .* failed .*cannot ssh" "$work/multi.log"
check "several hosts: the count" grep -q "^1 of 2 hosts done" "$work/multi.log"
check "several hosts: each line is prefixed by its host" grep -q "^\[root@testhost\] ==> \[1/8\]" "$work/multi.log"
"$installer" "${common[@]}" --prefix "$work/multi" --no-systemd --uninstall root@testhost >/dev/null

# ---- A prefix the ranks' user cannot reach is refused at install, naming the directory. ----
mkdir -p "$work/closed"
chmod 700 "$work/closed"
set +e
"$installer" "${common[@]}" --prefix "$work/closed/agent" --no-systemd --port "$(free_port)" \
  root@testhost >"$work/closed.log" 2>&1
closed_status=$?
set -e
cat "$work/closed.log"
check "unreachable prefix: the install fails" test "$closed_status" -ne 0
check "unreachable prefix: it names the directory" \
  grep -qF "the ranks' user $run_user cannot enter $work/closed (mode 700" "$work/closed.log"
check "unreachable prefix: no agent is left running" \
  bash -c "! pgrep -f '$work/closed/agent/bin/[r]ingmaster-agent' >/dev/null"

# ---- A hosts file cannot smuggle ssh options in: each line is checked like a command-line host. ----
printf 'root@testhost\n-oProxyCommand=touch${IFS}%s/injected\n' "$work" >"$work/evil-hosts.txt"
printf -- '-oProxyCommand=touch${IFS}%s/injected\n' "$work" >"$work/evil-one.txt"
set +e
"$installer" "${common[@]}" --prefix "$work/evil" --no-systemd --hosts "$work/evil-hosts.txt" \
  >"$work/evil.log" 2>&1
evil_status=$?
"$installer" "${common[@]}" --prefix "$work/evil" --no-systemd --hosts "$work/evil-one.txt" \
  >>"$work/evil.log" 2>&1
evil_one_status=$?
set -e
cat "$work/evil.log"
check "hosts file: an option line is refused" test "$evil_status" -eq 2 -a "$evil_one_status" -eq 2
check "hosts file: the refusal names the line and the file" \
  grep -qF -- "not a host: '-oProxyCommand=touch\${IFS}$work/injected'" "$work/evil.log"
check "hosts file: nothing ran" test ! -e "$work/injected"
check "hosts file: nothing was installed" test ! -e "$work/evil"

# ---- Uninstall: nothing left. ----
"$installer" "${common[@]}" --prefix "$prefix" --no-systemd --uninstall root@testhost | tee "$work/uninstall.log"
check "uninstall removes the prefix" test ! -e "$prefix"
check "uninstall removes the ranks' user" bash -c "! id -u $run_user >/dev/null 2>&1"
check "uninstall stops the agent" bash -c "! python3 -c 'import socket, sys; sys.exit(socket.socket().connect_ex((\"127.0.0.1\", $agent_port)) != 0)'"
check "uninstall removes it from the cluster file" bash -c "! grep -q loop1 '$cluster'"
check "the history keeps the job" bash -c "'$ctl' --cluster '$cluster' runs | grep -q '$job_id'"

finish_checks install_agent_test
