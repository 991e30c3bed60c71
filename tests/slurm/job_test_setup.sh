# Sourced by the Slurm job tests (slurm_*_test.sh BUILD_DIR): checks.sh, a fake Slurm cluster
# (cluster.sh) up in a new $dir with SLURM_CONF set, the client's files there (RINGMASTER_*, the
# cluster file $RINGMASTER_CLUSTER for the test to write), $ctl and $spec (the demo job). On exit
# the test's cleanup_more (when it defines one) runs, then the cluster and $dir go.
build=$(cd "$1" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../shell/checks.sh"
dir=$(mktemp -d "/tmp/rm-$(basename "$0" .sh).XXXXXX")
trap '[[ $(type -t cleanup_more) == function ]] && cleanup_more
  "$here/cluster.sh" down "$dir/cluster"; rm -rf "$dir"' EXIT
"$here/cluster.sh" up "$dir/cluster" || exit $?
source "$dir/cluster/env"
echo "$(basename "$0" .sh): the cluster is up"

export RINGMASTER_CONFIG_DIR=$dir/config RINGMASTER_DB=$dir/history.db
export RINGMASTER_CLUSTER=$dir/cluster.yaml
ctl=$build/bin/ringmasterctl
spec=$here/../../resources/jobs/examples/slurm_demo.yaml

# The cluster file naming the fake cluster `fake`, its jobs in $dir/jobs, partition debug.
write_fake_cluster_file() {
  cat >"$RINGMASTER_CLUSTER" <<YAML
slurm:
  - {name: fake, job_dir: $dir/jobs, bind: 127.0.0.1, partition: debug}
YAML
}

# wait_for_workers JOB N: until N native ranks of JOB run (30 s at most); false when they do not.
wait_for_workers() {
  for _ in $(seq 300); do
    [[ $(pgrep -fc "ringmaster-worker --config $dir/jobs/$1/") -ge $2 ]] && return 0
    sleep 0.1
  done
  return 1
}
