#!/usr/bin/env bash
# install-agent.sh: turns a host you can ssh into into a trusted, supervised Ringmaster agent.
# See usage below. It uses your own ssh (keys, agent, ~/.ssh/config) over one shared connection
# per host, runs installer/remote-agent.sh there as root (directly or with passwordless sudo),
# reads the agent's public key back over that connection (so the key is pinned through a channel
# you already trust), and adds the agent to your cluster file with ringmasterctl.
set -euo pipefail

usage() {
  cat <<'EOF'
usage: install-agent.sh [options] USER@HOST[:SSHPORT]...
       install-agent.sh [options] --hosts FILE
Installs (or upgrades in place, keeping keys and state) the Ringmaster agent on each host,
in parallel, and adds it to this client's cluster file.
  --port P           agent port (default 7070)
  --bind ADDRESS     address it listens on (default 0.0.0.0: every interface)
  --name N           agent name (default: the host's short name; one host only)
  --slots N          ranks it runs at once (default: GPUs, else CPUs)
  --gpus LIST        GPUs its ranks may use: 0,1 (default: all)
  --rank-memory SIZE each rank's memory limit, e.g. 64G (needs cgroup v2)
  --user NAME        user the ranks run as (default ringmaster, created when missing)
  --job-uids FIRST-LAST  each job's ranks run as a uid of their own from this range (default
                     1879048192-1879113727: above the host's own users; the agent refuses a
                     range that holds a user or group of the host), so jobs cannot signal each
                     other's ranks, open each other's files or find the last job's in /tmp;
                     "off": every job's ranks run as --user (one person's hosts only)
  --prefix DIR       install everything (program, config, state) under DIR
  --method deb|bundle  the Debian package or the relocatable binaries (default: deb on a
                     host of this machine's Debian/Ubuntu release without --prefix, else
                     bundle: the build's own where the host's glibc is as new as it needs,
                     else the glibc 2.31 one of make-bundle-glibc231.sh, made when missing)
  --no-systemd       start the agent without systemd (not restarted after a reboot)
  --uninstall        stop the agent and remove everything the installer made
  --hosts FILE       hosts to install, one USER@HOST[:SSHPORT] a line (# comments)
  --ssh-config FILE  ssh configuration file (ssh -F; default $RINGMASTER_SSH_CONFIG, else ssh's)
  --cluster FILE     cluster file (default: ringmasterctl's)
  --build-dir DIR    the Ringmaster build to ship (default: build/ beside installer/)
  --package FILE     the ringmaster-agent .deb to ship (default: the build's, made with
                     cpack when missing or older than the build)
EOF
}

here=$(cd "$(dirname "$0")" && pwd)
port=7070 bind=0.0.0.0 name="" slots="" gpus="" rank_memory="" run_user=ringmaster prefix=""
job_uids=1879048192-1879113727
method="" systemd=yes uninstall=no hosts_file="" ssh_config=${RINGMASTER_SSH_CONFIG:-} cluster=""
build_dir="" package=""
targets=() options=()
while (($#)); do
  case $1 in
    -h | --help) usage; exit 0 ;;
    --no-systemd) systemd=no options+=("$1") ;;
    --uninstall) uninstall=yes options+=("$1") ;;
    --port | --bind | --name | --slots | --gpus | --rank-memory | --user | --prefix | --method | \
      --hosts | --ssh-config | --cluster | --build-dir | --package | --job-uids)
      (($# >= 2)) || { echo "install-agent.sh: $1 needs a value" >&2; exit 2; }
      case $1 in
        --port) port=$2 ;; --bind) bind=$2 ;; --name) name=$2 ;; --slots) slots=$2 ;;
        --gpus) gpus=$2 ;; --rank-memory) rank_memory=$2 ;; --user) run_user=$2 ;;
        --prefix) prefix=$2 ;; --method) method=$2 ;; --hosts) hosts_file=$2 ;;
        --ssh-config) ssh_config=$2 ;; --cluster) cluster=$2 ;; --build-dir) build_dir=$2 ;;
        --package) package=$2 ;; --job-uids) job_uids=$2 ;;
      esac
      [[ $1 == --hosts || $1 == --name ]] || options+=("$1" "$2")
      shift ;;
    -*) echo "install-agent.sh: unknown option $1 (--help lists them)" >&2; exit 2 ;;
    *) targets+=("$1") ;;
  esac
  shift
done
if [[ -n $hosts_file ]]; then
  [[ -r $hosts_file ]] || { echo "install-agent.sh: cannot read the hosts file $hosts_file" >&2; exit 2; }
  while read -r line; do
    line=${line%%#*}
    line=$(echo "$line" | xargs)
    [[ -n $line ]] && targets+=("$line")
  done <"$hosts_file"
fi
bad() { echo "install-agent.sh: $*" >&2; exit 2; }
((${#targets[@]})) || { usage >&2; exit 2; }
# Every host, from the command line or the hosts file, is USER@HOST[:SSHPORT] and nothing that ssh
# could read as an option ("-oProxyCommand=..." would run a command here).
for t in "${targets[@]}"; do
  [[ $t =~ ^([A-Za-z0-9_][A-Za-z0-9._-]*@)?([A-Za-z0-9][A-Za-z0-9.-]*|\[[0-9A-Fa-f:.]+\])(:[0-9]+)?$ ]] ||
    bad "not a host: '$t' (expected USER@HOST[:SSHPORT]${hosts_file:+, in $hosts_file})"
done
[[ -z $name || ${#targets[@]} -eq 1 ]] || bad "--name names one agent: give one host with it"
[[ $port =~ ^[0-9]+$ ]] && ((port >= 1 && port <= 65535)) || bad "--port must be 1-65535, not '$port'"
[[ -z $slots || $slots =~ ^[0-9]+$ ]] || bad "--slots must be a number, not '$slots'"
[[ -z $gpus || $gpus =~ ^[0-9A-Za-z,-]+$ ]] || bad "--gpus is a list like 0,1 or GPU UUIDs, not '$gpus'"
[[ -z $rank_memory || $rank_memory =~ ^[0-9]+[KMGTkmgt]?[Bb]?$ ]] || bad "--rank-memory is a size like 64G, not '$rank_memory'"
[[ $job_uids == off || $job_uids =~ ^[1-9][0-9]*-[1-9][0-9]*$ ]] || bad "--job-uids is a range of uids like 1879048192-1879113727, or off, not '$job_uids'"
[[ $job_uids == off ]] && job_uids=""
[[ -z $name || $name =~ ^[A-Za-z0-9][A-Za-z0-9._-]*$ ]] || bad "--name may hold letters, digits, . _ -, not '$name'"
[[ $run_user =~ ^[a-z_][a-z0-9_-]*$ ]] || bad "--user is not a valid user name: '$run_user'"
[[ $bind =~ ^[0-9A-Fa-f.:]+$ ]] || bad "--bind is an IP address, not '$bind'"
[[ -z $method || $method == deb || $method == bundle ]] || bad "--method is deb or bundle, not '$method'"
[[ -z $prefix || $prefix == /* ]] || bad "--prefix must be an absolute path, not '$prefix'"
[[ -z $prefix || $method != deb ]] || bad "--prefix installs the binaries: it cannot go with --method deb"
[[ -z $package || -r $package ]] || bad "cannot read the package $package"

build_dir=${build_dir:-${RINGMASTER_BUILD_DIR:-$here/../build}}
ctl=$build_dir/bin/ringmasterctl
[[ -x $ctl ]] || ctl=$(command -v ringmasterctl || true)
[[ -n $ctl ]] || bad "ringmasterctl was not found in $build_dir/bin or on PATH: build Ringmaster first"
ctl_args=()
[[ -n $cluster ]] && ctl_args+=(--cluster "$cluster")

# ---- Several hosts: one installer per host, in parallel, then a table of what happened. ----
if ((${#targets[@]} > 1)); then
  results=$(mktemp -d)
  trap 'rm -rf "$results"' EXIT
  pids=()
  for i in "${!targets[@]}"; do
    (RINGMASTER_INSTALL_RESULT=$results/$i "$0" "${options[@]}" "${targets[$i]}" 2>&1 |
      sed -u "s|^|[${targets[$i]}] |") &
    pids+=($!)
  done
  for pid in "${pids[@]}"; do wait "$pid" || true; done
  echo
  printf '%-28s %-16s %-8s %s\n' HOST AGENT RESULT DETAIL
  failed=0
  for i in "${!targets[@]}"; do
    if [[ -s $results/$i ]]; then
      IFS=$'\t' read -r agent result detail <"$results/$i"
    else
      agent=- result=failed detail="the installer stopped without a result"
    fi
    [[ $result == ok ]] || failed=$((failed + 1))
    printf '%-28s %-16s %-8s %s\n' "${targets[$i]}" "$agent" "$result" "$detail"
  done
  echo "$((${#targets[@]} - failed)) of ${#targets[@]} hosts done"
  ((failed == 0))
  exit
fi

# ---- One host. ----
target=${targets[0]}
ssh_port=""
if [[ $target =~ ^(.+):([0-9]+)$ ]]; then
  target=${BASH_REMATCH[1]} ssh_port=${BASH_REMATCH[2]}
fi
steps=8
[[ $uninstall == yes ]] && steps=5
step_number=0
step() {
  step_number=$((step_number + 1))
  echo "==> [$step_number/$steps] $*"
}
result_agent=-
finish() {  # finish RESULT DETAIL: the line the several-hosts table and the app read
  [[ -n ${RINGMASTER_INSTALL_RESULT:-} ]] &&
    printf '%s\t%s\t%s\n' "$result_agent" "$1" "$2" >"$RINGMASTER_INSTALL_RESULT"
  return 0
}
die() {
  echo "install-agent.sh: $target: $*" >&2
  finish failed "$(echo "$1" | head -1)"
  exit 1
}

control_dir=$(mktemp -d /tmp/rm-install.XXXXXX)
ssh_cmd=(ssh -o BatchMode=yes -o ConnectTimeout=10 -o ControlMaster=auto
  -o "ControlPath=$control_dir/%C" -o ControlPersist=300)
[[ -n $ssh_config ]] && ssh_cmd+=(-F "$ssh_config")
[[ -n $ssh_port ]] && ssh_cmd+=(-p "$ssh_port")
cleanup() {
  "${ssh_cmd[@]}" -O exit -- "$target" >/dev/null 2>&1 || true
  rm -rf "$control_dir"
}
trap cleanup EXIT
remote() { "${ssh_cmd[@]}" -- "$target" "$@"; }
# remote_agent ACTION KEY=VALUE...: remote-agent.sh run as root on the host (sudo when needed).
remote_agent() {
  local quoted
  quoted=$(printf ' %q' "$@")
  remote "$as_root bash -s --$quoted" <"$here/remote-agent.sh"
}

step "connecting to $target${ssh_port:+ (port $ssh_port)}"
if ! ssh_error=$(remote true 2>&1 >/dev/null); then
  hint="ssh ${ssh_port:+-p $ssh_port }$target true"
  die "cannot ssh to it: $(echo "$ssh_error" | tr -d '\r' | grep -v '^Warning: Permanently added\|^$' | tail -1)
    The installer uses your ssh (keys, agent, ~/.ssh/config) without prompting: check that
    '$hint' works without a password (ssh-copy-id gives a host your key)."
fi

step "checking the host"
probe=$(remote "bash -s -- probe" <"$here/remote-agent.sh") || die "could not look around on the host: $probe"
fact() { echo "$probe" | sed -n "s/^$1=//p"; }
local_arch=$(uname -m)
[[ $(fact os) == Linux ]] ||
  die "unsupported OS: the host runs $(fact os); the agent runs on Linux ($local_arch, glibc)"
[[ $(fact arch) == "$local_arch" ]] ||
  die "unsupported architecture: the host is $(fact arch) and this build is $local_arch; build Ringmaster on a $(fact arch) machine and install from there"
case $(fact sudo) in
  root) as_root="" ;;
  ok) as_root="sudo -n" ;;
  password) die "no sudo: $(fact user) is not root there and sudo asks for a password. Log in as root, or give $(fact user) passwordless sudo (a line '$(fact user) ALL=(ALL) NOPASSWD: ALL' in /etc/sudoers.d/ringmaster)" ;;
  *) die "no sudo: $(fact user) is not root there and sudo is not installed. Log in as root, or install sudo and give $(fact user) passwordless sudo" ;;
esac
if [[ $systemd == yes && $(fact systemd) != yes ]]; then
  die "the host does not run systemd: use --no-systemd (the installer then starts the agent itself; it is not restarted after a reboot)"
fi
host_name=$(fact hostname)
name=${name:-$host_name}
result_agent=$name
os_name=$(fact os_name)
echo "    $host_name: ${os_name:-Linux} $(fact arch), glibc $(fact glibc), as $(fact user)${as_root:+ with sudo}"

if [[ $uninstall == yes ]]; then
  step "syncing its journal into your history"
  "$ctl" "${ctl_args[@]}" sync >/dev/null 2>&1 || echo "    (not every agent answered: what it held may be lost)"
  step "removing the agent"
  out=$(remote_agent uninstall "prefix=$prefix" 2>&1) || die "$(echo "$out" | sed -n 's/^error: //p')"
  installed_name=$(echo "$out" | sed -n 's/^name=//p' | tail -1)
  step "removing '${installed_name:-$name}' from your cluster file"
  "$ctl" "${ctl_args[@]}" cluster remove "${installed_name:-$name}" 2>/dev/null ||
    echo "    (it was not in your cluster file)"
  finish ok "uninstalled"
  echo "    uninstalled from $host_name"
  exit 0
fi

# A host of this machine's own Debian or Ubuntu release takes the package (apt brings its
# libraries, the same ones the build used); other hosts, or a prefix, the relocatable bundle.
# The package's dependencies are this release's library packages: another release (Debian 11,
# Ubuntu 22.04 or 24.04) lacks some of them or names them differently.
os_family=" $(fact os_id) $(fact os_like) "
local_release=$(. /etc/os-release 2>/dev/null && echo "${ID:-}:${VERSION_ID:-}")
if [[ -z $method ]]; then
  method=bundle
  [[ -z $prefix && ( $os_family == *" debian "* || $os_family == *" ubuntu "* ) &&
    "$(fact os_id):$(fact os_version)" == "$local_release" ]] && method=deb
fi
# version_at_least A B: A >= B as versions (2.35 >= 2.31).
version_at_least() { [[ $(printf '%s\n%s\n' "$1" "$2" | sort -V | head -1) == "$2" ]]; }
# newest_glibc DIR: the newest glibc symbol version the bundle in DIR uses.
newest_glibc() {
  objdump -T "$1"/bin/* "$1"/lib/* 2>/dev/null | grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -1 |
    sed 's/^GLIBC_//'
}
host_glibc=$(fact glibc)
glibc231_floor=2.31

# Installers for several hosts run at once: one of them makes the package or bundle at a time.
exec 9>"$build_dir/.install-agent.lock"
flock 9
kind=$method
if [[ $method == bundle ]]; then
  bundle=$build_dir/agent-bundle
  if [[ ! -x $bundle/bin/ringmaster-agent || $bundle/bin/ringmaster-agent -ot $build_dir/bin/ringmaster-agent ]]; then
    "$here/make-bundle.sh" "$build_dir" "$bundle" >/dev/null || die "make-bundle.sh failed for $build_dir"
  fi
  needed=$(newest_glibc "$bundle")
  # A host older than this build's glibc (Ubuntu 22.04, RHEL 9, Debian 11) takes the bundle built
  # in a Debian 11 root, which needs glibc 2.31 only.
  if [[ -n $host_glibc ]] && ! version_at_least "$host_glibc" "$needed" &&
    version_at_least "$host_glibc" "$glibc231_floor"; then
    bundle=$build_dir/bundle-glibc231
    kind="bundle for glibc $glibc231_floor"
    if [[ ! -x $bundle/bin/ringmaster-agent || $bundle/bin/ringmaster-agent -ot $build_dir/bin/ringmaster-agent ]]; then
      ((EUID == 0)) || die "the host has glibc $host_glibc and this build's bundle needs $needed: it takes the glibc $glibc231_floor bundle, made as root (a Debian 11 root, chroot):
    sudo $here/make-bundle-glibc231.sh $bundle
  then run the installer again"
      echo "    making the glibc $glibc231_floor bundle for glibc $host_glibc (a Debian 11 build, minutes the first time; log: $build_dir/bundle-glibc231.log)"
      "$here/make-bundle-glibc231.sh" "$bundle" >"$build_dir/bundle-glibc231.log" 2>&1 ||
        die "make-bundle-glibc231.sh failed: $(tail -2 "$build_dir/bundle-glibc231.log")"
    fi
    needed=$(newest_glibc "$bundle")
  fi
fi

step "packaging the agent ($kind)"
if [[ $method == deb ]]; then
  if [[ -z $package ]]; then
    package=$(ls -t "$build_dir"/ringmaster-agent_*.deb 2>/dev/null | head -1 || true)
    if [[ -z $package || $package -ot $build_dir/bin/ringmaster-agent ]]; then
      (cd "$build_dir" && cpack -G DEB >/dev/null) || die "cpack could not build the package in $build_dir"
      package=$(ls -t "$build_dir"/ringmaster-agent_*.deb | head -1)
    fi
  fi
  upload_name=ringmaster-agent.deb
else
  mkdir -p "$bundle/share/ringmaster/systemd"
  cp "$here/systemd/ringmaster-agent.service.in" "$bundle/share/ringmaster/systemd/"
  package=$control_dir/agent.tar.gz
  tar -czf "$package" -C "$bundle" bin lib share
  upload_name=agent.tar.gz
  # The newest glibc symbol version the bundle uses against the host's glibc.
  if [[ -z $host_glibc ]] || ! version_at_least "$host_glibc" "$needed"; then
    die "unsupported OS: ${os_name:-the host} has glibc ${host_glibc:-unknown} and this build needs $needed or newer (its glibc $glibc231_floor bundle, make-bundle-glibc231.sh, needs $glibc231_floor); build Ringmaster on that OS (or an older one) and install from there"
  fi
fi
flock -u 9

step "copying it ($(du -h "$package" | cut -f1))"
remote_dir=$(remote 'mktemp -d /tmp/ringmaster-install.XXXXXX') || die "could not make a temporary directory on the host"
remote "cat > $remote_dir/$upload_name" <"$package" || die "could not copy $package to the host"

step "installing and starting it"
client_key=$("$ctl" "${ctl_args[@]}" keys) || die "ringmasterctl keys failed: no client key"
out=$(remote_agent install "method=$method" "prefix=$prefix" "run_user=$run_user" \
  "job_uids=$job_uids" "port=$port" \
  "bind=$bind" "name=$name" "slots=$slots" "gpus=$gpus" "rank_memory=$rank_memory" \
  "systemd=$systemd" "client_key=$client_key" "upload=$remote_dir/$upload_name" \
  "comment=installed by $(id -un)@$(hostname -s) on $(date +%F)" 2>&1) || {
  remote "rm -rf $remote_dir" || true
  die "$(echo "$out" | sed -n '/^error: /,$p' | sed '1s/^error: //')"
}
remote "$as_root rm -rf $remote_dir" || true

step "reading the agent's key over ssh"
public_key=$(echo "$out" | sed -n 's/^public_key=//p' | tail -1)
[[ ${#public_key} -eq 40 ]] || die "the agent's public key did not come back: $out"

step "adding '$name' to your cluster file"
address=$("${ssh_cmd[@]}" -G -- "$target" 2>/dev/null | sed -n 's/^hostname //p' | head -1)
address=${address:-${target#*@}}
[[ $bind == 0.0.0.0 || $bind == :: ]] || address=$bind
[[ $address == *:* ]] && address="[$address]"
endpoint="tcp://$address:$port"
"$ctl" "${ctl_args[@]}" cluster add --replace "$name" "$endpoint" --key="$public_key" >/dev/null ||
  die "could not add $name to the cluster file"

step "checking that it answers at $endpoint"
for _ in 1 2 3; do
  if answer=$("$ctl" "${ctl_args[@]}" agents "$name" 2>&1); then
    finish ok "online at $endpoint"
    echo "$answer" | sed 's/^/    /'
    echo "==> $name is online at $endpoint"
    exit 0
  fi
  sleep 1
done
result_agent=$name
finish unreachable "running, but this client cannot reach $endpoint"
echo "install-agent.sh: $target: the agent runs, but this client cannot reach $endpoint: check that port $port is open in the host's firewall. ringmasterctl agents says:" >&2
echo "$answer" | sed 's/^/    /' >&2
exit 1
