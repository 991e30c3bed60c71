#!/usr/bin/env bash
# slurm_failure_test.sh BUILD_DIR: what Slurm does to a Ringmaster job, on a real Slurm cluster of
# three fake nodes (cluster.sh). A rank that dies is restarted inside the allocation. A node that
# fails (not the batch host) and a job in a higher partition each make Slurm requeue the job; its
# next run resumes from the checkpoints in the job directory as the next attempt. scancel still
# cancels a job that was requeued, leaving no process. The time limit stops the ranks early enough
# to checkpoint, and the job ends as timed out. Prints the time from the killed node to training
# again.
set -uo pipefail
source "$(dirname "$0")/job_test_setup.sh"
write_fake_cluster_file
# The demo, long enough to be failed mid-run: 3 nodes of 2 ranks, a checkpoint every 50 steps.
sed 's/epochs: 4$/epochs: 2000/' "$spec" >"$dir/long.yaml"

now() { date +%s.%N; }
since() { python3 -c "print(round($(now) - $1, 1))"; }
# wait_for SECONDS COMMAND...: until the command succeeds; false when time ran out.
wait_for() {
  local deadline=$(($(date +%s) + $1))
  until "${@:2}"; do (($(date +%s) < deadline)) || return 1; sleep 0.2; done
}
slurm_state() { squeue -h -j "$1" -o %T 2>/dev/null; }
ended() { [[ -z $(slurm_state "$1") ]]; }  # Slurm job $1 is no longer in the queue
# A checkpoint of every rank, past the first 50 steps.
checkpointed() { [[ $(ls "$dir/jobs/$1/checkpoints"/rank-*/ckpt-*.rmck 2>/dev/null | wc -l) -ge 6 ]]; }
# Slurm's run R of the job has a rank log saying it resumed from a checkpoint.
resumed_in_run() { grep -lsq "resumed from" "$dir/jobs/$1"/run-"$2"/node-*/jobs/"$1"/*/rank-*.log; }
# When a requeued run did not resume (a flake under load: its run ends at once, NonZeroExitCode),
# what Slurm and the nodes' agents said, for the next person to read.
explain_requeue() {
  resumed_in_run "$1" 1 && return
  echo "slurm_failure_test: run 1 of $1 did not resume; Slurm's output and the agents' logs:"
  tail -n 40 "$dir/jobs/$1"/slurm-*.out 2>/dev/null | sed 's/^/  | /'
  tail -n 20 "$dir/jobs/$1"/run-1/node-*/agent.log 2>/dev/null | sed 's/^/  | /'
  ls -R "$dir/jobs/$1" 2>/dev/null | head -40 | sed 's/^/  | /'
}
# The history has a loss of attempt A.
trains_in_attempt() {
  "$ctl" metrics "$1" --name loss 2>/dev/null | awk -F, -v a="$2" '$2 == a { found = 1 } END { exit !found }'
}
# submit NAME [SPEC]: SPEC (default long.yaml) submitted; its ids in $job and $slurm_id.
submit() {
  "$ctl" submit "${2:-$dir/long.yaml}" >"$dir/$1.txt" 2>&1
  job=$(head -1 "$dir/$1.txt")
  slurm_id=$(sed -n 's/^slurm job \([0-9]*\) on fake, .*/\1/p' "$dir/$1.txt")
}

# 3 (first, as it waits out a 2-minute time limit): Slurm's --signal stops the ranks before the
# limit (they checkpoint), and the job ends as timed out, not completed. On n4 alone (partition
# 'side'), beside the other cases' jobs, which neither preempt it nor fail its node; checked last.
# Long enough to outlast the limit: on one node its two ranks allreduce in shared memory, and
# 2000 epochs took under 2 minutes.
sed -e 's/nodes: 3$/nodes: 1\n  partition: side/' -e 's/time: "30:00"/time: "2"/' \
  -e 's/epochs: 2000$/epochs: 100000/' "$dir/long.yaml" >"$dir/limit.yaml"
echo "stop_grace_seconds: 5" >>"$dir/limit.yaml"
submit limit "$dir/limit.yaml"
limit_job=$job limit_slurm_id=$slurm_id
check "a job with a 2-minute limit is submitted to partition side" test -n "$limit_slurm_id"

# 0. A rank that dies: the job's agents restart the ranks inside the allocation, as the job's
# restart policy says, and Slurm does not requeue it.
submit rank
check "the job is submitted" test -n "$slurm_id"
check "it trains and checkpoints" wait_for 120 checkpointed "$job"
kill -KILL "$(pgrep -f "ringmaster-worker --config $dir/jobs/$job/" | head -1)"
check "its agents restart it as attempt 2" wait_for 60 trains_in_attempt "$job" 2
check "in the same allocation, from the checkpoints" \
  grep -lsq "resumed from" "$dir/jobs/$job"/run-0/node-*/jobs/"$job"/attempt-2/rank-*.log
check "Slurm did not requeue it" eval "[[ ! -d $dir/jobs/$job/run-1 && \$(slurm_state $slurm_id) == RUNNING ]]"
"$ctl" stop "$job" >/dev/null 2>&1
wait_for 60 eval "! pgrep -f '$dir/jobs/$job' >/dev/null"

# 1. A node that is not the batch host fails: Slurm requeues the job once it declares the node
# down, and the next run resumes as attempt 2.
submit node
check "it trains and checkpoints" wait_for 120 checkpointed "$job"
killed=$(now)
"$here/cluster.sh" kill-node "$dir/cluster" n2
echo "slurm_failure_test: n2 killed"
node_down() { sinfo -h -N -p debug -n n2 -o %T | grep -q down; }
check "Slurm declares n2 down" wait_for 90 node_down
"$here/cluster.sh" start-node "$dir/cluster" n2
check "Slurm requeues the job and runs it again" wait_for 120 resumed_in_run "$job" 1
explain_requeue "$job"
check "the new run trains as attempt 2" wait_for 60 trains_in_attempt "$job" 2
echo "slurm_failure_test: from the killed node to training again: $(since "$killed") s"
"$ctl" status "$job" >"$dir/node-status.txt" 2>&1
head -3 "$dir/node-status.txt"
check "status shows attempt 2 running" grep -q "^job $job (slurm-demo, native) running, attempt 2" "$dir/node-status.txt"
check "the ranks resumed from a checkpoint" \
  grep -qE "resumed from .*ckpt-0*[1-9][0-9]*\.rmck" "$dir/jobs/$job"/run-1/node-0/jobs/"$job"/*/rank-0.log
"$ctl" stop "$job" >/dev/null 2>&1
wait_for 60 eval "! pgrep -f '$dir/jobs/$job' >/dev/null"

# 2. Preemption: a job in the higher partition takes all three nodes. The ranks get SIGTERM, Slurm
# requeues the job, and it resumes once the other job is over. Then scancel still cancels it.
submit preempt
check "it trains and checkpoints" wait_for 120 checkpointed "$job"
high=$(sbatch --parsable -p high -N3 --exclusive --output="$dir/high-%j.out" --wrap 'sleep 5')
preempted() { [[ $(slurm_state "$slurm_id") == PENDING ]]; }
check "a job in the higher partition preempts it" wait_for 90 preempted
check "its agents and ranks are gone meanwhile" eval "! pgrep -f '$dir/jobs/$job' >/dev/null"
check "it runs again once the other job is over and resumes" wait_for 180 resumed_in_run "$job" 1
explain_requeue "$job"
check "the new run trains as attempt 2" wait_for 60 trains_in_attempt "$job" 2
check "the other job ran" test -s "$dir/high-$high.out" -o "$(scontrol show job "$high" | grep -c COMPLETED)" = 1
"$ctl" stop "$job" >"$dir/stop.txt" 2>&1
check "stop cancels the requeued job in Slurm" grep -q "scancel $slurm_id on fake" "$dir/stop.txt"
check "no agent or rank of it is left" wait_for 60 eval "! pgrep -f '$dir/jobs/$job' >/dev/null"
wait_for 60 ended "$slurm_id"
"$ctl" status "$job" >"$dir/preempt-status.txt" 2>&1
head -3 "$dir/preempt-status.txt"
check "status says Slurm cancelled it" grep -q "slurm job $slurm_id on fake: cancelled" "$dir/preempt-status.txt"

# 3. The time limit (submitted first, above): it ends as timed out, its ranks stopped before.
check "the job with a 2-minute limit ends at its time limit" wait_for 240 ended "$limit_slurm_id"
"$ctl" status "$limit_job" >"$dir/limit-status.txt" 2>&1
head -3 "$dir/limit-status.txt"
check "status says Slurm timed it out" grep -q "slurm job $limit_slurm_id on fake: timed out" "$dir/limit-status.txt"
check "its ranks were stopped before, and checkpointed" \
  grep -q "stopped at step .*, with a checkpoint there" "$dir/jobs/$limit_job"/run-0/node-0/jobs/"$limit_job"/attempt-1/rank-0.log

finish_checks slurm_failure_test
