#!/usr/bin/env bash
# slurm_login_test.sh BUILD_DIR: a client outside the cluster with nothing but ssh to the login
# node (a loopback sshd beside the fake Slurm cluster of cluster.sh). The client runs in a mount
# namespace where the job directory is an empty tmpfs and Slurm's commands are gone, so submit,
# --wait, status, logs, metrics and stop can only work through ssh: the job directory is written
# there, sbatch/squeue/scancel run there, and the journals are read from there.
set -uo pipefail
source "$(dirname "$0")/job_test_setup.sh"
sshd=$here/../installer/loopback_sshd.sh
cleanup_more() { "$sshd" down "$dir/ssh"; }
mkdir -p "$dir/ssh" "$dir/jobs"
LOOPBACK_SSHD_ENV="SLURM_CONF=$SLURM_CONF" "$sshd" up "$dir/ssh" || exit $?
unset SLURM_CONF  # the client's side knows nothing of the cluster but its login node
slurm() { SLURM_CONF=$dir/cluster/slurm.conf "$@"; }  # this test's own look at the cluster

export RINGMASTER_SSH_CONFIG=$dir/ssh/ssh_config
cat >"$RINGMASTER_CLUSTER" <<YAML
slurm:
  - name: hpc
    login: root@testhost
    job_dir: $dir/jobs
    agent: $build/bin/ringmaster-agent
    bind: 127.0.0.1
    partition: debug
YAML
# ringmasterctl where only ssh reaches the cluster.
client() {
  unshare -m --propagation private sh -c '
    mount -t tmpfs none "$0" || exit 1
    for program in sbatch squeue sacct scancel scontrol; do
      path=$(command -v "$program") && mount --bind /dev/null "$path"
    done
    exec "$@"' "$dir/jobs" "$ctl" "$@"
}
client status >/dev/null 2>&1
check "the client cannot see the job directory or run squeue" \
  unshare -m sh -c 'mount -t tmpfs none "$0" && ! ls "$0"/* && ! squeue' "$dir/jobs" 2>/dev/null

client submit "$spec" --wait >"$dir/submit.txt" 2>&1
rc=$?
cat "$dir/submit.txt"
job=$(head -1 "$dir/submit.txt")
slurm_id=$(sed -n 's/^slurm job \([0-9]*\) on hpc, .*/\1/p' "$dir/submit.txt" | head -1)
check "submit --wait through the login node succeeds" test "$rc" = 0
check "the job ran on three nodes" grep -q "succeeded: 6 rank(s)" "$dir/submit.txt"
check "its job directory was written on the login node's side" test -s "$dir/jobs/$job/batch.sh"
check "with Slurm's id" grep -qx "$slurm_id" "$dir/jobs/$job/slurm_job_id"
check "the job directory is the user's alone" test "$(stat -c %a "$dir/jobs/$job")" = 700
for _ in $(seq 300); do [[ -z $(slurm squeue -h -j "$slurm_id" 2>/dev/null) ]] && break; sleep 0.1; done
client status "$job" >"$dir/status.txt" 2>&1
cat "$dir/status.txt"
check "status asks Slurm through the login node" grep -q "slurm job $slurm_id on hpc: completed" "$dir/status.txt"
check "ranks ran on n1, n2 and n3" test "$(grep -cE '^[0-5] +n[123] .* succeeded' "$dir/status.txt")" = 6
client metrics "$job" --name loss >"$dir/metrics.csv"
rows=$(grep -c ",loss," "$dir/metrics.csv")
unique=$(cut -d, -f1-5 "$dir/metrics.csv" | grep ",loss" | sort -u | wc -l)
check "every rank's loss came through ssh ($rows rows)" test "$rows" -gt 60
check "no metric row is stored twice" test "$rows" = "$unique"
client logs "$job" --rank 4 >"$dir/rank4.log" 2>&1
check "logs reads a rank's log on the login node" grep -q '"loss"' "$dir/rank4.log"

# stop is scancel on the login node.
sed 's/epochs: 4$/epochs: 2000/' "$spec" >"$dir/long.yaml"
client submit "$dir/long.yaml" >"$dir/long.txt" 2>&1
long_job=$(head -1 "$dir/long.txt")
long_id=$(sed -n 's/^slurm job \([0-9]*\) on hpc, .*/\1/p' "$dir/long.txt")
check "a long job's six ranks run" wait_for_workers "$long_job" 6
client logs "$long_job" --rank 3 --follow >"$dir/follow.log" 2>&1 &
follower=$!
# The follower's lag is what is checked, not the trainer's start: a loss line reaches it within
# 10 s of rank 3 writing it on the cluster's side (its polls are 1 s apart, through ssh). Running
# workers are not yet training: six ranks' rendezvous and first step took more than the 10 s this
# wait once allowed from their start on a slower 2-core machine (issue 36), so it first waits
# (60 s at most) for the line in the rank's own log.
rank3_has_loss() {
  find "$dir/jobs/$long_job" -path '*/attempt-1/rank-3.log' -exec grep -q '"loss"' {} \; -print |
    grep -q .
}
for _ in $(seq 600); do rank3_has_loss && break; sleep 0.1; done
check "rank 3 of the long job trains" rank3_has_loss
# 10 s was too little on a loaded 2-core machine (CI runs tests two at a time; 2026-11-30, 2-core
# AMD EPYC VM: with two busy loops beside it the follower missed 10 s in three of four runs,
# before that day's agent changes too): each poll is an ssh command, whose start waits for a core.
waited=0
for _ in $(seq 300); do grep -q '"loss"' "$dir/follow.log" && break; sleep 0.1; waited=$((waited + 1)); done
echo "the follower showed a loss line after $((waited / 10)) s"
check "logs --follow shows a rank's lines as they come, through ssh" grep -q '"loss"' "$dir/follow.log"
client stop "$long_job" >"$dir/stop.txt" 2>&1
cat "$dir/stop.txt"
check "stop cancels it through the login node" grep -q "scancel $long_id on hpc" "$dir/stop.txt"
# (The follower's ssh commands name the job directory too: agents and ranks only.)
left() { pgrep -f "ringmaster-(agent|worker) .*$dir/jobs/$long_job" >/dev/null; }
for _ in $(seq 300); do left || break; sleep 0.1; done
check "no agent or rank of it is left" eval "! left"
for _ in $(seq 300); do kill -0 "$follower" 2>/dev/null || break; sleep 0.1; done
check "logs --follow ends with the job" eval "! kill -0 $follower 2>/dev/null"

# What goes wrong is named.
cat >>"$RINGMASTER_CLUSTER" <<YAML
  - {name: nossh, login: root@127.0.0.1:1, job_dir: $dir/jobs, agent: /opt/ringmaster-agent}
  - {name: noagent, login: root@testhost, job_dir: $dir/jobs}
YAML
client submit "$spec" --slurm nossh --nodes 1 >"$dir/nossh.txt" 2>&1
nossh_rc=$?
cat "$dir/nossh.txt"
check "an unreachable login node fails the submission" test $nossh_rc != 0
check "and says ssh could not connect" grep -q "127.0.0.1:1.*Connection refused" "$dir/nossh.txt"
client submit "$spec" --slurm noagent --nodes 1 >"$dir/noagent.txt" 2>&1
check "a login without agent: is refused" grep -q "give its agent:" "$dir/noagent.txt"
check "nothing was queued by them" test -z "$(slurm squeue -h -o %i | grep -vx "$long_id")"
# The login node unreachable: status says so and shows Slurm's last known state.
sed -i 's/login: root@testhost$/login: root@127.0.0.1:1/' "$RINGMASTER_CLUSTER"
client status "$job" >"$dir/unreachable.txt" 2>&1
cat "$dir/unreachable.txt"
check "status names the unreachable login node" grep -q "ssh to root@127.0.0.1:1 failed" "$dir/unreachable.txt"
check "and shows Slurm's last known state" grep -q "slurm job $slurm_id on hpc: completed" "$dir/unreachable.txt"

finish_checks slurm_login_test
