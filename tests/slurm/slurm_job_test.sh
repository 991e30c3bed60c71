#!/usr/bin/env bash
# slurm_job_test.sh BUILD_DIR: Ringmaster jobs on a real Slurm cluster of three fake nodes
# (cluster.sh): the batch script of --dry-run, and a 3-node native job submitted with sbatch that
# trains under one per-job agent per node and lands in the history once, with Slurm's id; a job
# left with no client; stop mid-run; two GPUs per node reaching torchrun ranks; an agent that
# cannot start.
set -uo pipefail
source "$(dirname "$0")/job_test_setup.sh"
write_fake_cluster_file
# --dry-run: the script, and nothing queued.
"$ctl" submit "$spec" --dry-run >"$dir/script.txt" 2>&1
check "--dry-run prints the batch script" grep -q '^#SBATCH --nodes=3$' "$dir/script.txt"
check "the script asks for the cluster's partition" grep -q '^#SBATCH --partition=debug$' "$dir/script.txt"
check "the script requeues on node failure" grep -q '^#SBATCH --requeue$' "$dir/script.txt"
check "the script starts one agent per node" grep -q "^srun .*ringmaster-agent' slurm-node --job-dir '$dir/jobs/slurm-demo-.*' --ranks-per-node 2 --bind '127.0.0.1'$" "$dir/script.txt"
check "--dry-run queues nothing" test -z "$(squeue -h)"

# A 3-node job, waited for: it trains and lands in the history.
started=$(date +%s%N)
"$ctl" submit "$spec" --wait >"$dir/submit.txt" 2>&1
rc=$?
cat "$dir/submit.txt"
job=$(head -1 "$dir/submit.txt")
slurm_id=$(sed -n 's/^slurm job \([0-9]*\) on fake, .*/\1/p' "$dir/submit.txt" | head -1)
check "submit --wait succeeds" test "$rc" = 0
check "submit says Slurm's job id" test -n "$slurm_id"
check "the job ran on three nodes" grep -q "succeeded: 6 rank(s)" "$dir/submit.txt"
# The agents exit once every one of them has heard the outcome (they used to linger 10 s,
# holding the allocation), and Slurm ends the job.
for _ in $(seq 300); do [[ -z $(squeue -h -j "$slurm_id" 2>/dev/null) ]] && break; sleep 0.1; done
# From the outcome to the last agent's exit, in milliseconds (the agents' log stamps have them);
# the gang's lines are printed for a failure to be read.
release_ms=$(python3 - "$dir/jobs/$job/slurm-$slurm_id.out" <<'PY'
import datetime, sys
stamps = {"outcome": [], "exit": []}
for line in open(sys.argv[1]):
    kind = "outcome" if "succeeded after" in line else "exit" if "over: exiting" in line else None
    if kind:
        stamps[kind].append(datetime.datetime.fromisoformat(line.split()[0]))
print(int((max(stamps["exit"]) - min(stamps["outcome"])).total_seconds() * 1000))
PY
)
echo "slurm_job_test: from the job's outcome to its last agent's exit: $release_ms ms"
check "the agents exit within a second of the outcome ($release_ms ms)" \
  test "${release_ms:-99999}" -le 1000
((${release_ms:-99999} <= 1000)) || grep "ringmaster-agent\[" "$dir/jobs/$job/slurm-$slurm_id.out" | tail -40
"$ctl" status "$job" >"$dir/status.txt" 2>&1
cat "$dir/status.txt"
for node in n1 n2 n3; do
  check "ranks ran on $node" grep -qE "^[0-9]+ +$node " "$dir/status.txt"
done
check "status shows Slurm's state and id" grep -q "slurm job $slurm_id on fake: completed" "$dir/status.txt"
"$ctl" restart "$job" >"$dir/restart.txt" 2>&1
check "restart of a job on Slurm says what to do instead" \
  grep -q "runs on Slurm (job $slurm_id on fake).*'scontrol requeue $slurm_id'" "$dir/restart.txt"
"$ctl" metrics "$job" --name loss >"$dir/metrics.csv"
rows=$(grep -c ",loss," "$dir/metrics.csv")
unique=$(cut -d, -f1-5 "$dir/metrics.csv" | grep ",loss" | sort -u | wc -l)
check "every rank's loss is in the history ($rows rows)" test "$rows" -gt 60
check "no metric row is stored twice" test "$rows" = "$unique"
"$ctl" status "$job" >/dev/null 2>&1
"$ctl" metrics "$job" --name loss >"$dir/metrics-again.csv"
check "syncing again adds nothing" cmp -s "$dir/metrics.csv" "$dir/metrics-again.csv"
"$ctl" logs "$job" --rank 4 >"$dir/rank4.log" 2>&1
check "logs reads a rank's log from the job directory" grep -q '"loss"' "$dir/rank4.log"
"$ctl" logs "$job" >"$dir/all.log" 2>&1
check "logs of every rank, prefixed" test "$(grep -o '^\[rank [0-5]\]' "$dir/all.log" | sort -u | wc -l)" = 6
check "the job's agents are gone" eval "! pgrep -f 'ringmaster-agent slurm-node' >/dev/null"
first_metric=$(cut -d, -f7 "$dir/metrics.csv" | grep -E '^[0-9.]+$' | sort -n | head -1)
echo "slurm_job_test: sbatch to the first metric took $(python3 -c "print(round($first_metric - $started / 1e9, 2))") s"

# No client running: submitted and left; Slurm starts it, the agents run it, and status (later)
# catches up from the job directory.
"$ctl" submit "$spec" >"$dir/left.txt" 2>&1
left_job=$(head -1 "$dir/left.txt")
left_id=$(sed -n 's/^slurm job \([0-9]*\) on fake, .*/\1/p' "$dir/left.txt")
for _ in $(seq 600); do [[ -z $(squeue -h -j "$left_id" 2>/dev/null) ]] && break; sleep 0.1; done
"$ctl" sync >"$dir/sync.txt" 2>&1
cat "$dir/sync.txt"
check "sync catches up the job on Slurm" grep -q "caught up 1 job(s) on Slurm" "$dir/sync.txt"
"$ctl" status "$left_job" >"$dir/left-status.txt" 2>&1
cat "$dir/left-status.txt"
check "a job left alone ran and is synced afterwards" grep -q "^job $left_job (slurm-demo, native) succeeded, attempt 1, 6 rank(s)" "$dir/left-status.txt"
check "its ranks are in the history" test "$(grep -cE '^[0-5] +n[123] .* succeeded' "$dir/left-status.txt")" = 6

# stop mid-run is scancel: Slurm stops every node's agent, which stops its ranks; nothing is left.
sed 's/epochs: 4$/epochs: 400/' "$spec" >"$dir/long.yaml"
"$ctl" submit "$dir/long.yaml" >"$dir/long.txt" 2>&1
long_job=$(head -1 "$dir/long.txt")
long_id=$(sed -n 's/^slurm job \([0-9]*\) on fake, .*/\1/p' "$dir/long.txt")
check "a long job's six ranks run" wait_for_workers "$long_job" 6
"$ctl" logs "$long_job" --follow >"$dir/follow.log" 2>&1 &
follower=$!
for _ in $(seq 100); do grep -q '^\[rank 5\] .*"loss"' "$dir/follow.log" && break; sleep 0.1; done
check "logs --follow shows the ranks' lines as they come" grep -q '^\[rank 5\] .*"loss"' "$dir/follow.log"
"$ctl" stop "$long_job" >"$dir/stop.txt" 2>&1
check "stop cancels it in Slurm" grep -q "scancel $long_id on fake" "$dir/stop.txt"
for _ in $(seq 300); do pgrep -f "$dir/jobs/$long_job" >/dev/null || break; sleep 0.1; done
check "no agent or rank of it is left" eval "! pgrep -f '$dir/jobs/$long_job' >/dev/null"
for _ in $(seq 300); do [[ -z $(squeue -h -j "$long_id" 2>/dev/null) ]] && break; sleep 0.1; done
"$ctl" status "$long_job" >"$dir/long-status.txt" 2>&1
head -3 "$dir/long-status.txt"
check "status says Slurm cancelled it" grep -q "slurm job $long_id on fake: cancelled" "$dir/long-status.txt"
for _ in $(seq 150); do kill -0 "$follower" 2>/dev/null || break; sleep 0.1; done
check "logs --follow ends with the job" eval "! kill -0 $follower 2>/dev/null"
wait "$follower"
check "and exits 0" test $? = 0
check "having printed each rank's log to its end" \
  test "$(grep -c '^\[rank 0\]' "$dir/follow.log")" -ge "$(wc -l <"$(ls "$dir"/jobs/"$long_job"/run-0/node-0/jobs/*/attempt-1/rank-0.log)")"

# scancel by hand, behind Ringmaster's back: status says so within 5 s (it asks Slurm).
"$ctl" submit "$dir/long.yaml" >"$dir/cancel.txt" 2>&1
cancel_job=$(head -1 "$dir/cancel.txt")
cancel_id=$(sed -n 's/^slurm job \([0-9]*\) on fake, .*/\1/p' "$dir/cancel.txt")
check "another long job's six ranks run" wait_for_workers "$cancel_job" 6
scancel "$cancel_id"
cancelled_at=$(date +%s%N)
for _ in $(seq 50); do
  "$ctl" status "$cancel_job" >"$dir/cancel-status.txt" 2>&1
  grep -q "slurm job $cancel_id on fake: cancelled" "$dir/cancel-status.txt" && break
  sleep 0.1
done
took_ms=$((($(date +%s%N) - cancelled_at) / 1000000))
head -3 "$dir/cancel-status.txt"
check "status says Slurm cancelled it within 5 s of scancel (${took_ms} ms)" \
  grep -q "slurm job $cancel_id on fake: cancelled" "$dir/cancel-status.txt"
check "and the job is not running" eval "! grep -q '^job $cancel_job .* running' '$dir/cancel-status.txt'"

# GPUs from Slurm: gpus_per_node 2 runs two torchrun ranks on the node, which see both GPUs
# Slurm gave the job and pick theirs by LOCAL_RANK, as under torchrun.
cat >"$dir/gpu-probe.yaml" <<'YAML'
name: gpu-probe
launcher: torchrun
command: [/usr/bin/python3, -c, "import os; e = os.environ; print('gpus=%s local_rank=%s local_world_size=%s' % (e.get('CUDA_VISIBLE_DEVICES'), e['LOCAL_RANK'], e['LOCAL_WORLD_SIZE']))"]
slurm: {nodes: 1, gpus_per_node: 2}
YAML
"$ctl" submit "$dir/gpu-probe.yaml" --follow >"$dir/gpu.txt" 2>&1
cat "$dir/gpu.txt"
gpu_job=$(head -1 "$dir/gpu.txt")
check "a job with two GPUs per node runs two ranks" grep -q "succeeded: 2 rank(s)" "$dir/gpu.txt"
check "submit --follow streams their logs" grep -q '^\[rank 1\] gpus=0,1 local_rank=1' "$dir/gpu.txt"
for rank in 0 1; do
  "$ctl" logs "$gpu_job" --rank $rank >"$dir/gpu-$rank.log" 2>&1
  check "rank $rank sees Slurm's two GPUs and LOCAL_RANK $rank" \
    grep -q "gpus=0,1 local_rank=$rank local_world_size=2" "$dir/gpu-$rank.log"
done

# An agent that cannot start: Slurm's own words come back, not a timeout.
cat >>"$RINGMASTER_CLUSTER" <<YAML
  - {name: broken, job_dir: $dir/jobs, agent: /nonexistent/ringmaster-agent}
YAML
"$ctl" submit "$spec" --slurm broken --nodes 1 --wait >"$dir/broken.txt" 2>&1
rc=$?
cat "$dir/broken.txt"
check "a job whose agents never start fails" test "$rc" = 1
check "it says Slurm's state" grep -q "slurm: failed" "$dir/broken.txt"
check "it shows Slurm's error from the output file" grep -q "/nonexistent/ringmaster-agent.*No such file or directory" "$dir/broken.txt"
broken_job=$(head -1 "$dir/broken.txt")
"$ctl" status "$broken_job" >"$dir/broken-status.txt" 2>&1
check "the history has it failed, as Slurm says" grep -q "^job $broken_job (slurm-demo, native) failed" "$dir/broken-status.txt"

finish_checks slurm_job_test
