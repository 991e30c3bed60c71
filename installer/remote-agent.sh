#!/usr/bin/env bash
# remote-agent.sh ACTION [KEY=VALUE...]: the host side of install-agent.sh, which sends this file
# over ssh and runs it as root with `bash -s`. It never runs on the client.
#
#   probe      (as the ssh user) os, arch, glibc, uid, sudo, systemd, hostname as KEY=VALUE lines
#   install    stop an earlier agent, put the files in place, create the ranks' user and the state
#              dir, write the config, authorize the client key, start the agent, wait until it
#              listens; prints "name=..." and "public_key=..." last
#   uninstall  stop the agent and remove everything install made; prints "name=..."
#
# Every failure prints "error: <what happened and what to do>" and exits non-zero.
set -euo pipefail

action=$1
shift
for assignment in "$@"; do
  # Only the names install-agent.sh sends; values may hold any character.
  case ${assignment%%=*} in
    method | prefix | run_user | job_uids | port | bind | name | slots | gpus | rank_memory | \
      systemd | client_key | comment | upload) printf -v "${assignment%%=*}" '%s' "${assignment#*=}" ;;
    *) echo "error: remote-agent.sh: unknown setting ${assignment%%=*}" >&2; exit 2 ;;
  esac
done

fail() { echo "error: $*" >&2; exit 1; }

# Where things go. The package puts the agent in /usr and its unit in /lib/systemd/system; a
# bundle goes to /opt/ringmaster, or with a prefix everything (config and state too) goes under it.
layout() {
  if [[ -n ${prefix:-} ]]; then
    bin_dir=$prefix/bin config=$prefix/etc/agent.toml state=$prefix/var/lib/ringmaster-agent
  elif [[ ${method:-bundle} == deb ]]; then
    bin_dir=/usr/bin config=/etc/ringmaster/agent.toml state=/var/lib/ringmaster-agent
  else
    prefix=/opt/ringmaster
    bin_dir=$prefix/bin config=/etc/ringmaster/agent.toml state=/var/lib/ringmaster-agent
  fi
  manifest=$(dirname "$config")/installed-by
  log_file=$state/agent.log
  pid_file=$state/agent.pid
  unit=/etc/systemd/system/ringmaster-agent.service
}

probe() {
  local libc sudo_state=none
  libc=$(getconf GNU_LIBC_VERSION 2>/dev/null | awk '{print $2}') || true
  if [[ $(id -u) -eq 0 ]]; then
    sudo_state=root
  elif command -v sudo >/dev/null; then
    if sudo -n true 2>/dev/null; then sudo_state=ok; else sudo_state=password; fi
  fi
  local os_id="" os_like="" os_name="" os_version=""
  if [[ -r /etc/os-release ]]; then
    os_id=$(. /etc/os-release && echo "${ID:-}")
    os_version=$(. /etc/os-release && echo "${VERSION_ID:-}")
    os_like=$(. /etc/os-release && echo "${ID_LIKE:-}")
    os_name=$(. /etc/os-release && echo "${PRETTY_NAME:-}")
  fi
  echo "os=$(uname -s)"
  echo "arch=$(uname -m)"
  echo "glibc=${libc:-}"
  echo "os_id=$os_id"
  echo "os_like=$os_like"
  echo "os_name=$os_name"
  echo "os_version=$os_version"
  echo "user=$(id -un)"
  echo "sudo=$sudo_state"
  echo "systemd=$([[ -d /run/systemd/system ]] && echo yes || echo no)"
  echo "hostname=$(hostname -s 2>/dev/null || hostname)"
}

# The pid of a process listening on TCP port $1, or "" (ss when present, else /proc/net/tcp*).
listener_of_port() {
  local port=$1
  if command -v ss >/dev/null; then
    ss -Hltnp "sport = :$port" 2>/dev/null | grep -o 'pid=[0-9]*' | head -1 | cut -d= -f2 || true
    return
  fi
  local hex inode
  hex=$(printf '%04X' "$port")
  inode=$(awk -v p=":$hex" '$4 == "0A" && substr($2, length($2) - 4) == p { print $10; exit }' \
    /proc/net/tcp /proc/net/tcp6 2>/dev/null)
  [[ -n $inode ]] || return 0
  for fd in /proc/[0-9]*/fd/*; do
    if [[ $(readlink "$fd" 2>/dev/null) == "socket:[$inode]" ]]; then
      echo "${fd#/proc/}" | cut -d/ -f1
      return
    fi
  done
  echo unknown
}

port_is_listening() {
  [[ -n $(listener_of_port "$1") ]]
}

agent_pid() {
  if [[ ${systemd:-yes} == yes ]]; then
    local pid
    pid=$(systemctl show -p MainPID --value ringmaster-agent 2>/dev/null || true)
    [[ -n $pid && $pid != 0 ]] && echo "$pid"
  elif [[ -f $pid_file ]] && kill -0 "$(cat "$pid_file")" 2>/dev/null; then
    cat "$pid_file"
  fi
  return 0
}

stop_agent() {
  if [[ ${systemd:-yes} == yes ]]; then
    systemctl stop ringmaster-agent 2>/dev/null || true
    return
  fi
  [[ -f $pid_file ]] || return 0
  local pid
  pid=$(cat "$pid_file")
  if kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid"  # the agent stops its ranks, journals their end, and exits
    for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
    kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -f "$pid_file"
}

last_log_lines() {
  if [[ ${systemd:-yes} == yes ]]; then
    journalctl -u ringmaster-agent -n 20 --no-pager 2>/dev/null || true
  else
    tail -n 20 "$log_file" 2>/dev/null || true
  fi
}

start_agent() {
  if [[ ${systemd:-yes} == yes ]]; then
    systemctl daemon-reload
    systemctl enable ringmaster-agent >/dev/null 2>&1 || true
    systemctl restart ringmaster-agent || true
  else
    # setsid: the agent outlives this ssh session. Not restarted after a reboot (no systemd).
    rm -f "$pid_file"
    touch "$log_file" && chmod 600 "$log_file"
    setsid -f sh -c 'echo $$ >"$1" && exec "$2" --config "$3"' sh "$pid_file" \
      "$bin_dir/ringmaster-agent" "$config" >>"$log_file" 2>&1 </dev/null
    for _ in $(seq 50); do [[ -s $pid_file ]] && break; sleep 0.1; done
  fi
  # Up means listening on its port, with its key written.
  for _ in $(seq 150); do
    port_is_listening "$port" && [[ -n $(agent_pid) ]] && return 0
    [[ ${systemd:-yes} == no && -z $(agent_pid) ]] && break  # it exited
    sleep 0.2
  done
  echo "error: the agent did not come up on port $port. The last lines of its log:" >&2
  last_log_lines | sed 's/^/    /' >&2
  exit 1
}

put_files() {
  if [[ $method == deb ]]; then
    export DEBIAN_FRONTEND=noninteractive
    # confold: an upgrade keeps /etc/ringmaster/agent.toml as the installer wrote it.
    if ! apt-get install -y -q --no-install-recommends -o Dpkg::Options::=--force-confdef \
      -o Dpkg::Options::=--force-confold "$upload" >/tmp/ringmaster-apt.log 2>&1; then
      echo "error: apt-get could not install the ringmaster-agent package:" >&2
      tail -n 8 /tmp/ringmaster-apt.log | sed 's/^/    /' >&2
      echo "    (its dependencies come from the host's archive; --method bundle ships them instead)" >&2
      exit 1
    fi
    return
  fi
  # A bundle: bin/ lib/ share/ replaced whole, so no file of an older version stays behind.
  local staging=$prefix/.new
  rm -rf "$staging"
  mkdir -p "$staging"
  tar -xzf "$upload" -C "$staging"
  for part in bin lib share; do
    rm -rf "${prefix:?}/$part"
    mv "$staging/$part" "$prefix/$part"
  done
  rm -rf "$staging"
  local missing
  missing=$(for program in "$bin_dir"/ringmaster-agent "$bin_dir"/ringmaster-worker; do
    ldd "$program" 2>&1 | awk -v p="${program##*/}" '/not found/ { print "    " $1 " (needed by " p ")" }'
  done | sort -u)
  if [[ -n $missing ]]; then
    echo "error: these libraries do not resolve on $(hostname):" >&2
    echo "$missing" >&2
    echo "    install them with the host's package manager, then run the installer again" >&2
    exit 1
  fi
}

write_config() {
  mkdir -p "$(dirname "$config")"
  local tmp=$config.new
  {
    echo "# Written by install-agent.sh; it is rewritten when the installer runs again."
    echo "listen = \"tcp://$bind:$port\""
    echo "state-dir = \"$state\""
    echo "name = \"$name\""
    echo "run-as = \"$run_user\""
    [[ -n $slots ]] && echo "slots = $slots"
    [[ -n $gpus ]] && echo "gpus = \"$gpus\""
    [[ -n $rank_memory ]] && echo "rank-memory = \"$rank_memory\""
    [[ -n ${job_uids:-} ]] && echo "job-uids = \"$job_uids\""
    true
  } >"$tmp"
  mv "$tmp" "$config"
}

# The ranks run as $run_user in the state dir's job directories, started from $bin_dir: a parent
# it cannot enter (a prefix under a 0700 home) would fail every job at launch with "Permission
# denied". Refused here, naming the directory.
check_ranks_reach() {
  [[ $run_user == root ]] && return 0
  command -v runuser >/dev/null || return 0
  local target path part
  for target in "$state" "$bin_dir"; do
    path=""
    IFS=/ read -ra parts <<<"${target#/}"
    for part in "${parts[@]}"; do
      path+="/$part"
      runuser -u "$run_user" -- test -x "$path" 2>/dev/null && continue
      fail "the ranks' user $run_user cannot enter $path (mode $(stat -c %a "$path"), owner $(stat -c %U "$path")): every job would fail at launch with 'Permission denied'. Let it pass (chmod o+x $path) or install with another --prefix"
    done
  done
  runuser -u "$run_user" -- test -x "$bin_dir/ringmaster-worker" ||
    fail "the ranks' user $run_user cannot run $bin_dir/ringmaster-worker"
  # With a uid per job, the ranks are a uid of no group: every directory must let others in.
  [[ -n ${job_uids:-} ]] && command -v setpriv >/dev/null || return 0
  local job_uid=${job_uids%%-*}
  for target in "$state" "$bin_dir/ringmaster-worker"; do
    path=""
    IFS=/ read -ra parts <<<"${target#/}"
    for part in "${parts[@]}"; do
      path+="/$part"
      setpriv --reuid="$job_uid" --regid="$job_uid" --clear-groups -- test -x "$path" && continue
      fail "a job's uid ($job_uid, from --job-uids) cannot enter $path (mode $(stat -c %a "$path"), owner $(stat -c %U "$path")): every job would fail at launch with 'Permission denied'. Let others pass (chmod o+x $path) or install with another --prefix"
    done
  done
}

install_agent() {
  layout
  local pid
  pid=$(listener_of_port "$port")
  if [[ -n $pid && $pid != "$(agent_pid)" ]]; then
    local what="another program"
    [[ $pid != unknown ]] && what="$(cat /proc/"$pid"/comm 2>/dev/null) (pid $pid)"
    fail "port $port on $(hostname) is in use by $what: choose another with --port"
  fi
  stop_agent
  mkdir -p "$prefix" 2>/dev/null || true
  put_files
  local created_user=no
  if ! id -u "$run_user" >/dev/null 2>&1; then
    # Its home (caches of pip, torch, triton) is in the state dir, which it may pass through.
    useradd --system --user-group --no-create-home --home-dir "$state/home" \
      --shell /usr/sbin/nologin "$run_user" || fail "could not create the user $run_user"
    created_user=yes
  elif [[ -f $manifest ]] && grep -qx 'created_user=yes' "$manifest"; then
    created_user=yes  # an upgrade: it is still ours to remove
  fi
  mkdir -p "$state"
  chmod 711 "$state"
  if [[ $created_user == yes && ! -d $state/home ]]; then
    install -d -m 700 -o "$run_user" -g "$(id -gn "$run_user")" "$state/home"
  fi
  check_ranks_reach
  write_config
  {
    echo "method=$method"
    echo "prefix=${prefix:-}"
    echo "systemd=$systemd"
    echo "run_user=$run_user"
    echo "created_user=$created_user"
  } >"$manifest"
  "$bin_dir/ringmaster-agent" authorize --state-dir "$state" --comment "$comment" \
    --key="$client_key" >/dev/null || fail "could not authorize the client key"
  local public_key
  public_key=$("$bin_dir/ringmaster-agent" pubkey --state-dir "$state" 2>/dev/null)
  if [[ $systemd == yes && $method != deb ]]; then
    sed -e "s|@AGENT@|$bin_dir/ringmaster-agent|" -e "s|@CONFIG@|$config|" \
      "$prefix/share/ringmaster/systemd/ringmaster-agent.service.in" >"$unit"
  fi
  start_agent
  echo "name=$name"
  echo "public_key=$public_key"
}

uninstall_agent() {
  layout
  [[ -f $manifest ]] || fail "no agent installed by install-agent.sh here ($manifest is missing)"
  local installed_name created_user method_used
  installed_name=$(sed -n 's/^name = "\(.*\)"$/\1/p' "$config" 2>/dev/null)
  created_user=$(sed -n 's/^created_user=//p' "$manifest")
  method_used=$(sed -n 's/^method=//p' "$manifest")
  run_user=$(sed -n 's/^run_user=//p' "$manifest")
  systemd=$(sed -n 's/^systemd=//p' "$manifest")
  stop_agent
  if [[ $systemd == yes ]]; then
    systemctl disable ringmaster-agent >/dev/null 2>&1 || true
    rm -f "$unit"
    systemctl daemon-reload || true
  fi
  if [[ $method_used == deb ]]; then
    DEBIAN_FRONTEND=noninteractive apt-get purge -y -q ringmaster-agent >/dev/null 2>&1 || true
  fi
  rm -rf "$state" "$config" "$manifest"
  rmdir "$(dirname "$config")" 2>/dev/null || true
  if [[ -n ${prefix:-} && $method_used != deb ]]; then
    rm -rf "${prefix:?}/bin" "${prefix:?}/lib" "${prefix:?}/share" "${prefix:?}/etc" "${prefix:?}/var"
    rmdir "$prefix" 2>/dev/null || true
  fi
  if [[ $created_user == yes ]] && id -u "$run_user" >/dev/null 2>&1; then
    pkill -KILL -u "$run_user" 2>/dev/null || true
    userdel "$run_user" 2>/dev/null || true
  fi
  echo "name=$installed_name"
}

case $action in
  probe) probe ;;
  install) install_agent ;;
  uninstall) uninstall_agent ;;
  *) fail "remote-agent.sh: unknown action $action" ;;
esac
