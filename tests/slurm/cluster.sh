#!/usr/bin/env bash
# cluster.sh up|down DIR: a real Slurm cluster of fake nodes on loopback, for tests. Debian's
# slurm-wlm (built with multiple-slurmd support) runs one slurmctld and four slurmd (n1 to n4, one
# port each) as root without systemd, with its own munged; every node has 2 CPUs and two fake
# GPUs (GRES files). Partition 'debug' (n1-n3) is the default; a job in 'high' (n1-n3) preempts
# its jobs (SIGTERM, 10 s of grace, requeued); 'side' is n4 alone, for a job that runs beside
# theirs untouched. `up` writes DIR/slurm.conf and DIR/env (SLURM_CONF=...)
# and waits until the nodes are idle; `down` stops every daemon it started. Exit 77 when it
# cannot run, saying why. `kill-node DIR NODE` and `start-node DIR NODE` fail a node and bring
# it back.
set -euo pipefail
action=$1 dir=$(mkdir -p "$2" && cd "$2" && pwd)
skip() { echo "slurm cluster: cannot start: $*" >&2; exit 77; }
source "$(dirname "$0")/../shell/checks.sh"  # free_port
# Whether the process environment file ENVIRON has a line matching PATTERN entirely. Not
# `tr | grep -q` under pipefail: grep quits at its match and tr's next write dies of SIGPIPE,
# which reads as "no match" on a large environment.
environ_has() { grep -qx "$2" < <(tr '\0' '\n' 2>/dev/null <"$1"); }

stop_all() {
  for pid_file in "$dir"/run/*.pid; do
    [[ -f $pid_file ]] && kill "$(cat "$pid_file" 2>/dev/null)" 2>/dev/null || true
  done
  for _ in $(seq 50); do
    alive=0
    for pid_file in "$dir"/run/*.pid; do
      [[ -f $pid_file ]] && kill -0 "$(cat "$pid_file" 2>/dev/null)" 2>/dev/null && alive=1
    done
    ((alive)) || break
    sleep 0.1
  done
  rm -f "$dir"/run/*.pid
  # slurmstepd and the jobs' processes outlive a killed slurmd: end this cluster's stepds and
  # job processes (SLURM_JOB_ID set; not the shell that runs this, which may have SLURM_CONF).
  local environ pid
  for environ in /proc/[0-9]*/environ; do
    pid=${environ#/proc/}
    pid=${pid%/environ}
    environ_has "$environ" "SLURM_CONF=$dir/slurm.conf" || continue
    if [[ $(cat "/proc/$pid/comm" 2>/dev/null) == slurmstepd ]] ||
      environ_has "$environ" 'SLURM_JOB_ID=.*'; then
      kill -KILL "$pid" 2>/dev/null || true
    fi
  done
}
# kill-node DIR NODE: NODE fails as a host that loses power would: its slurmd, its step daemons
# and every process of its jobs are killed at once. start-node DIR NODE brings its slurmd back.
kill_node() {
  local node=$1 environ pid pids=() parent
  pids+=("$(cat "$dir/run/slurmd-$node.pid")")
  for environ in /proc/[0-9]*/environ; do
    pid=${environ#/proc/}
    pid=${pid%/environ}
    environ_has "$environ" "SLURMD_NODENAME=$node" || continue
    environ_has "$environ" "SLURM_CONF=$dir/slurm.conf" || continue
    pids+=("$pid")
    parent=$(awk '{print $4}' "/proc/$pid/stat" 2>/dev/null)
    [[ $(cat "/proc/$parent/comm" 2>/dev/null) == slurmstepd ]] && pids+=("$parent")
  done
  # Frozen first, then killed: one `kill -KILL` signals them one after the other, and a step daemon
  # that outlived its task by a moment told srun "task 1: Killed", so srun ended the step (and the
  # batch script the job, NonZeroExitCode) before Slurm declared the node down and requeued it. A
  # host that loses power reports nothing.
  kill -STOP "${pids[@]}" 2>/dev/null || true
  kill -KILL "${pids[@]}" 2>/dev/null || true
}
case $action in
  down) stop_all; exit 0 ;;
  kill-node) kill_node "$3"; exit 0 ;;
  start-node) SLURM_CONF=$dir/slurm.conf slurmd -N "$3"; exit $? ;;
esac

((EUID == 0)) || skip "slurmd must run as root"
for program in slurmctld slurmd munged sbatch; do
  command -v "$program" >/dev/null || skip "$program is not installed (apt-get install slurm-wlm munge)"
done
stop_all
rm -rf "$dir/state" "$dir/spool" "$dir/log"
mkdir -p "$dir/run" "$dir/state" "$dir/log" "$dir/munge" "$dir/gpus"
for node in n1 n2 n3 n4; do
  mkdir -p "$dir/spool/$node"
  # Slurm wants GPU files to be devices: these are /dev/null's (1:3), under other names.
  for gpu in 0 1; do
    [[ -c $dir/gpus/$node-gpu$gpu ]] || mknod "$dir/gpus/$node-gpu$gpu" c 1 3
  done
done

# munge: its own key and socket, so a munged of the machine is left alone.
chmod 700 "$dir/munge"
dd if=/dev/urandom of="$dir/munge/munge.key" bs=128 count=1 status=none
chmod 400 "$dir/munge/munge.key"
munged --force --socket="$dir/munge/munge.socket" --key-file="$dir/munge/munge.key" \
  --pid-file="$dir/run/munged.pid" --log-file="$dir/log/munged.log" \
  --seed-file="$dir/munge/seed" || skip "munged did not start: $(tail -1 "$dir/log/munged.log")"

host=$(hostname -s)
ctld_port=$(free_port)
cat >"$dir/slurm.conf" <<CONF
ClusterName=rmtest
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
# cred_expire: a requeued job would otherwise wait about 121 s before it may run again.
AuthInfo=socket=$dir/munge/munge.socket,cred_expire=10
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool/%n
SlurmctldPidFile=$dir/run/slurmctld.pid
SlurmdPidFile=$dir/run/slurmd-%n.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd-%n.log
SlurmdParameters=config_overrides
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
ReturnToService=2
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
GresTypes=gpu
SlurmdTimeout=10
SlurmctldTimeout=10
InactiveLimit=0
MinJobAge=300
KillWait=5
# A job in 'high' preempts one in 'debug': that one gets SIGTERM, GraceTime to stop, and is requeued.
PreemptType=preempt/partition_prio
PreemptMode=REQUEUE
CONF
for n in 1 2 3 4; do
  echo "NodeName=n$n NodeHostname=$host NodeAddr=127.0.0.1 Port=$(free_port) CPUs=2 RealMemory=1000 Gres=gpu:2 State=UNKNOWN" >>"$dir/slurm.conf"
done
cat >>"$dir/slurm.conf" <<CONF
PartitionName=debug Nodes=n[1-3] Default=YES MaxTime=INFINITE State=UP PriorityTier=1 GraceTime=10
PartitionName=high Nodes=n[1-3] MaxTime=INFINITE State=UP PriorityTier=2 PreemptMode=OFF
PartitionName=side Nodes=n4 MaxTime=INFINITE State=UP PriorityTier=1
CONF
for n in 1 2 3 4; do
  echo "NodeName=n$n Name=gpu File=$dir/gpus/n$n-gpu[0-1]"
done >"$dir/gres.conf"
echo "export SLURM_CONF=$dir/slurm.conf" >"$dir/env"
export SLURM_CONF=$dir/slurm.conf

slurmctld -i || skip "slurmctld did not start: $(tail -3 "$dir/log/slurmctld.log" | tr '\n' ' ')"
for n in 1 2 3 4; do
  slurmd -N "n$n" || skip "slurmd n$n did not start: $(tail -3 "$dir/log/slurmd-n$n.log" | tr '\n' ' ')"
done
for _ in $(seq 100); do
  if [[ $(sinfo -h -N -o '%N %t' 2>/dev/null | sort -u | grep -c ' idle$') -eq 4 ]]; then
    exit 0
  fi
  sleep 0.2
done
skip "the nodes did not become idle: $(sinfo -N 2>&1 | tr '\n' ' ')"
