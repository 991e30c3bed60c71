#!/usr/bin/env bash
# cluster_test.sh: the fake Slurm cluster of tests/slurm/cluster.sh is a real one: three nodes
# run a 3-node step, a batch job runs and writes its output file, two fake GPUs per node reach a
# step as CUDA_VISIBLE_DEVICES=0,1, a pending job names Slurm's reason, and scancel of a running
# job leaves none of its processes. The Slurm launcher's tests build on this cluster.
# Exit 77 (skipped) where it cannot run, saying why.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
source "$here/../shell/checks.sh"
dir=$(mktemp -d /tmp/rm-slurm-test.XXXXXX)
cleanup() {
  "$here/cluster.sh" down "$dir/cluster"
  rm -rf "$dir"
}
trap cleanup EXIT
# sbatch --wrap writes slurm-<id>.out in the working directory: not in the source tree.
cd "$dir"

started=$(date +%s.%N)
set +e
"$here/cluster.sh" up "$dir/cluster"
status=$?
set -e
((status == 0)) || { echo "cluster_test: skipped: the Slurm cluster did not start"; exit 77; }
printf 'cluster_test: the cluster is up in %.1f s\n' "$(echo "$(date +%s.%N) - $started" | bc)"
source "$dir/cluster/env"

# Whether a live process's command line matches (zombies are left out: this machine's PID 1 may
# not reap the daemons' children). The list is read whole before grep: in a pipeline under
# pipefail, `grep -q` quitting at its match kills awk's next write with SIGPIPE and a match reads
# as a miss when many processes run (failed CI twice: "the busy job's processes run").
running() {
  local processes
  processes=$(ps -eo stat=,args= | awk '$1 !~ /^Z/ { $1 = ""; print substr($0, 2) }')
  grep -qE "$1" <<<"$processes"
}

nodes=$(timeout 60 srun -N3 --ntasks-per-node=1 bash -c 'echo $SLURMD_NODENAME' | sort | tr '\n' ' ')
check "a step runs on the three nodes" test "$nodes" = "n1 n2 n3 "

gpus=$(timeout 60 srun -N1 --gpus-per-node=2 bash -c 'echo $CUDA_VISIBLE_DEVICES')
check "two fake GPUs reach a step" test "$gpus" = "0,1"

cat >"$dir/batch.sh" <<EOF
#!/bin/bash
#SBATCH --nodes=2
#SBATCH --output=$dir/batch-%j.out
srun bash -c 'echo rank \$SLURM_PROCID on \$SLURMD_NODENAME'
EOF
job=$(sbatch --parsable "$dir/batch.sh")
for _ in $(seq 100); do
  [[ $(squeue -h -j "$job" -o %T 2>/dev/null) == "" ]] && break
  sleep 0.2
done
check "a batch job runs and writes its output" grep -q "rank 1 on n" "$dir/batch-$job.out"

# Three nodes busy with one job: a second job waits, and Slurm says why.
busy=$(sbatch --parsable --nodes=3 --exclusive --wrap 'sleep 3571')
for _ in $(seq 200); do [[ $(squeue -h -j "$busy" -o %T) == RUNNING ]] && break; sleep 0.1; done
check "a job on all three nodes runs" test "$(squeue -h -j "$busy" -o %T)" = RUNNING
waiting=$(sbatch --parsable --nodes=1 --wrap 'true')
for _ in $(seq 100); do  # the reason is None until the scheduler has looked at the job
  reason=$(squeue -h -j "$waiting" -o '%T %r')
  [[ $reason != "PENDING None" ]] && break
  sleep 0.1
done
check "a job that cannot start is pending with Slurm's reason ($reason)" grep -qE '^PENDING (Resources|Priority)$' <<<"$reason"

# The sleeps' lengths are this test's own: other tests (command_job_test) run `sleep 300` too.
# RUNNING means the nodes are allocated; the batch step forks its script a moment later (seconds
# on a loaded machine: 10 s was not always enough with another test running beside this one).
for _ in $(seq 300); do running '^sleep 3571$' && break; sleep 0.1; done
check "the busy job's processes run" running '^sleep 3571$'
scancel "$busy" "$waiting"
for _ in $(seq 100); do running '^sleep 3571$' || break; sleep 0.1; done
check "scancel leaves none of its processes" eval "! running '^sleep 3571$'"

# A job whose node's slurmd dies keeps running under its slurmstepd: `down` ends it too, so no
# test leaves processes behind.
orphan=$(sbatch --parsable --nodelist=n3 --wrap 'sleep 3572')
# n3 may still be completing the cancelled job, and the batch step forks its script seconds
# after RUNNING on a loaded machine: a slurmd killed before that leaves no job to outlive it
# (failed with 5 s here under load, and once in CI with 30 s).
for _ in $(seq 600); do running '^sleep 3572$' && break; sleep 0.1; done
check "a job's script runs on n3 ($(squeue -h -j "$orphan" -o '%T %r'))" running '^sleep 3572$'
kill "$(cat "$dir/cluster/run/slurmd-n3.pid")"
sleep 1
check "a job outlives its node's slurmd" running '^sleep 3572$'
"$here/cluster.sh" down "$dir/cluster"
sleep 0.5
check "down ends it and every daemon" eval "! running '^sleep 3572$|^slurmd -N n[123]$|^slurmstepd|^slurmctld'"

finish_checks cluster_test
