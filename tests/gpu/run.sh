#!/usr/bin/env bash
# tests/gpu/run.sh [BUNDLE_DIR]: everything of Ringmaster that needs a GPU, on a bare CUDA machine
# (a driver, nvcc's tools and PyTorch; no Qt, ZeroMQ, SQLite or protobuf packages, no network).
# It runs the programs of a relocatable bundle made on the build machine with
#   installer/make-bundle.sh build build/gpu-bundle train_gpu_model_test nccl_communicator_test \
#     gradient_sync_test native_job_test gpu_placement_test bench_gpu_trainer host_sampler_test
# (BUNDLE_DIR defaults to build/gpu-bundle) beside a copy of this source tree. Steps:
#   unit       the device unit tests (GPU model, optimizer and trainer vs the CPU; NCCL)
#   health     NVML's fault fields (clocks, throttle reasons, ECC, PCIe) and their words
#   job        a 1-rank native job, backend nccl, through a real agent (ringmasterctl demo)
#   torchrun   a 1-rank PyTorch DDP script on CUDA with NCCL through a real agent
#   auto-cpu   2 native ranks with backend auto on a 1-GPU host: CPU, and status says why
#   preflight  a real agent's GPU health through `ringmasterctl preflight` and `agents --json`:
#              every GPU counted, its clocks and throttle reasons read, no fault on a healthy GPU
#   bench      bench_gpu_trainer: GPU vs CPU trainer on one seed, GPU trainer vs PyTorch CUDA
#   memcheck   compute-sanitizer memcheck over the device unit tests (API errors not reported
#              for NCCL's: it probes kernels with cudaFuncGetAttributes and expects error 209)
#   racecheck  compute-sanitizer racecheck over the GPU model tests
#   integration native_job_test and gpu_placement_test (multi-rank jobs through agents)
# GPU_CHECK_STEPS="unit job" runs only those. Results: one PASS/FAIL line per step in
# RESULTS/summary.txt and every step's output in RESULTS/steps.log, where RESULTS is $OUT when
# set (the device tool's folder), else a new temporary folder. Exits 0 when every step passed,
# 1 when one failed, 77 at once on a machine without a CUDA device.
set -uo pipefail

repo=$(cd "$(dirname "$0")/../.." && pwd)
if ! command -v nvidia-smi >/dev/null || ! nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then
  echo "tests/gpu/run.sh: no CUDA device on this machine (nvidia-smi lists no GPU): nothing run" >&2
  exit 77
fi
bundle=$(cd "${1:-$repo/build/gpu-bundle}" 2>/dev/null && pwd) || {
  echo "tests/gpu/run.sh: no bundle at ${1:-$repo/build/gpu-bundle} (make it with installer/make-bundle.sh)" >&2
  exit 2
}


results=${OUT:-$(mktemp -d)}
mkdir -p "$results"
summary=$results/summary.txt
log=$results/steps.log
: >"$summary"
: >"$log"
work=$(mktemp -d)
trap 'pkill -f "$work/" 2>/dev/null; rm -rf "$work"' EXIT

# NCCL and cuBLAS come from the host: the CUDA toolkit's folders or PyTorch's nvidia-* wheels.
host_libs=()
for dir in /usr/local/cuda/lib64 /usr/local/cuda/lib /usr/lib/x86_64-linux-gnu \
  $(python3 - 2>/dev/null <<'EOF'
import importlib, os
for name in ("nvidia.nccl", "nvidia.cublas", "nvidia.cu13", "nvidia.cuda_runtime"):
    try:
        for path in importlib.import_module(name).__path__:
            print(os.path.join(path, "lib"))
    except ImportError:
        pass
EOF
); do
  if compgen -G "$dir/libnccl.so*" >/dev/null || compgen -G "$dir/libcublas.so*" >/dev/null; then
    host_libs+=("$dir")
  fi
done
export LD_LIBRARY_PATH=$(IFS=:; echo "${host_libs[*]:-}")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export RINGMASTER_TEST_BIN_DIR=$bundle/bin RINGMASTER_TEST_SOURCE_DIR=$repo
export RINGMASTER_CONFIG_DIR=$work/config RINGMASTER_DB=$work/data/history.db
export RINGMASTER_CLUSTER=$work/config/cluster.yaml HOME=$work
export RINGMASTER_PYTHON=${RINGMASTER_PYTHON:-$(command -v python3)}  # the PyTorch peer's

sanitizer=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer \
  /usr/local/cuda/compute-sanitizer/compute-sanitizer 2>/dev/null | head -1)

{
  echo "== machine"
  nvidia-smi --query-gpu=name,driver_version,memory.total,pci.bus_id,uuid --format=csv,noheader
  ldd --version | head -1
  echo "host NCCL/cuBLAS from: ${host_libs[*]:-nowhere}"
  echo "compute-sanitizer: ${sanitizer:-not found}"
  python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)' 2>&1
  missing=$(ldd "$bundle"/bin/* | grep 'not found' | sort -u)
  [[ -n "$missing" ]] && echo "UNRESOLVED LIBRARIES:" && echo "$missing"
} >>"$log" 2>&1

failed=0
# step NAME TIMEOUT_S COMMAND...: runs COMMAND, records PASS/FAIL with its time.
step() {
  local name=$1 limit=$2
  shift 2
  if [[ -n "${GPU_CHECK_STEPS:-}" && " $GPU_CHECK_STEPS " != *" $name "* ]]; then return; fi
  echo "== $name: $*" >>"$log"
  local start=$SECONDS
  timeout --kill-after=10 "$limit" "$@" >>"$log" 2>&1
  local rc=$?
  local verdict=PASS
  ((rc != 0)) && verdict=FAIL failed=1
  ((rc == 124)) && verdict="FAIL (timed out after ${limit}s)"
  printf '%-12s %-28s %4ds  exit %d\n' "$name" "$verdict" $((SECONDS - start)) "$rc" | tee -a "$summary"
}

# The job steps check the rank's own words (it must have trained on the GPU, not fallen back)
# and, when given, what `ringmasterctl status` records for the job (the device of each rank).
run_job() {
  local spec=$1 expect=$2 status_expect=${3:-} out=$work/job-$(basename "$spec").out
  "$bundle/bin/ringmasterctl" demo --spec "$spec" >"$out" 2>&1
  local rc=$?
  cat "$out"
  ((rc == 0)) || return "$rc"
  grep -q -- "$expect" "$out" || { echo "expected '$expect' in the job's log"; return 1; }
  [[ -z "$status_expect" ]] && return 0
  "$bundle/bin/ringmasterctl" status >"$out.status" 2>&1
  cat "$out.status"
  grep -q -- "$status_expect" "$out.status" || { echo "expected '$status_expect' in status"; return 1; }
}
export -f run_job
export bundle work

cat >"$work/native_gpu.yaml" <<'EOF'
name: gpu-check-native
launcher: native
world_size: 1
backend: nccl
native:
  model: {kind: mlp, hidden: [256, 128], activation: relu, task: classification}
  dataset: {kind: synthetic, samples: 20000, features: 32, classes: 4, seed: 1}
  batch_size: 64
  epochs: 2
  optimizer: {name: sgd, lr: 0.05, momentum: 0.9, warmup_steps: 20, schedule: cosine}
  checkpoint: {every_steps: 200}
  eval_every: 1
  seed: 1
EOF
sed -e 's/^name: .*/name: gpu-check-auto-two/' -e 's/^world_size: 1/world_size: 2/' \
  -e 's/^backend: nccl/backend: auto/' "$work/native_gpu.yaml" >"$work/native_auto2.yaml"
cat >"$work/torchrun_gpu.yaml" <<EOF
name: gpu-check-torchrun
launcher: torchrun
world_size: 1
backend: nccl
command: [python3, ddp_cuda.py]
workdir: $repo/tests/gpu
metrics:
  patterns:
    loss: 'loss=([-+0-9.eE]+)'
    step: 'step (\d+)'
EOF

gtest_args=(--gtest_brief=1)
step unit 300 bash -c "'$bundle/bin/train_gpu_model_test' ${gtest_args[*]} &&
  '$bundle/bin/nccl_communicator_test' ${gtest_args[*]} &&
  '$bundle/bin/gradient_sync_test' ${gtest_args[*]}"
step health 60 "$bundle/bin/host_sampler_test" --gtest_filter='Nvml.*'
gpu0=$(nvidia-smi --query-gpu=uuid --format=csv,noheader | head -1)
step job 180 bash -c 'run_job "$@"' _ "$work/native_gpu.yaml" "native trainer on CUDA device" \
  "GPU 0 $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)"
step torchrun 180 bash -c 'run_job "$@"' _ "$work/torchrun_gpu.yaml" \
  "CUDA_VISIBLE_DEVICES=$gpu0 devices=1"
# Two native ranks, one GPU, backend auto: the whole job on the CPU, and status says why.
step auto-cpu 180 bash -c 'run_job "$@"' _ "$work/native_auto2.yaml" "connected (gloo;" \
  "on the CPU: agent 'local' has 1 GPU for 2 ranks"
# A real agent on this host, checked as a user would before a job: its GPUs counted and their
# health read through NVML (clocks, throttle reasons, ECC, PCIe); a healthy GPU names no fault.
preflight_check() {
  local state=$work/preflight-agent gpus
  gpus=$(nvidia-smi -L | grep -c '^GPU ')
  mkdir -p "$state"
  "$bundle/bin/ringmaster-agent" authorize --state-dir "$state" "$("$bundle/bin/ringmasterctl" keys)" || return 1
  "$bundle/bin/ringmaster-agent" --listen tcp://127.0.0.1:0 --state-dir "$state" --name gpuhost \
    >"$state/banner" 2>&1 &
  local pid=$! endpoint="" key=""
  for _ in $(seq 100); do
    endpoint=$(sed -n 's/^endpoint //p' "$state/banner" | head -1)
    key=$(sed -n 's/^public-key //p' "$state/banner" | head -1)
    [[ -n "$endpoint" && -n "$key" ]] && break
    sleep 0.1
  done
  local cluster=$work/config/preflight-cluster.yaml rc=0
  "$bundle/bin/ringmasterctl" --cluster "$cluster" cluster add gpuhost "$endpoint" --key="$key" &&
    sleep 3 &&  # a health sample or two
    "$bundle/bin/ringmasterctl" --cluster "$cluster" agents --json >"$state/agents.json" &&
    "$bundle/bin/ringmasterctl" --cluster "$cluster" preflight --no-links | tee "$state/preflight.txt" || rc=1
  cat "$state/banner" "$state/agents.json"
  kill "$pid"; wait "$pid"
  ((rc == 0)) || return 1
  python3 - "$state/agents.json" "$gpus" <<'PY' || return 1
import json, sys
agents = json.load(open(sys.argv[1]))
gpus = agents[0]["health"]["gpus"]
assert len(gpus) == int(sys.argv[2]), f"{len(gpus)} GPUs in agents --json, nvidia-smi lists {sys.argv[2]}"
for gpu in gpus:
    print(json.dumps(gpu))
    assert 0 < gpu["sm_clock_max_mhz"] and gpu["sm_clock_mhz"] <= gpu["sm_clock_max_mhz"], gpu
    if gpu["pcie"]["width"] is not None:
        assert gpu["pcie"]["width"] <= gpu["pcie"]["width_max"], gpu
    assert not [f for f in gpu["faults"] if f["severity"] != "notice"], gpu["faults"]
PY
  grep -q "gpuhost" "$state/preflight.txt" || { echo "preflight names no agent"; return 1; }
}
export -f preflight_check
step preflight 120 bash -c preflight_check
step bench 400 "$bundle/bin/bench_gpu_trainer"
if [[ -n "$sanitizer" ]]; then
  step memcheck 400 bash -c "'$sanitizer' --tool memcheck --error-exitcode 3 '$bundle/bin/train_gpu_model_test' ${gtest_args[*]} &&
    '$sanitizer' --tool memcheck --report-api-errors no --error-exitcode 3 '$bundle/bin/nccl_communicator_test' ${gtest_args[*]}"
  step racecheck 400 "$sanitizer" --tool racecheck --error-exitcode 3 \
    "$bundle/bin/train_gpu_model_test" "${gtest_args[@]}"
else
  echo "memcheck     FAIL (compute-sanitizer not found)" | tee -a "$summary"
  failed=1
fi
step integration 300 bash -c "'$bundle/bin/native_job_test' ${gtest_args[*]} &&
  '$bundle/bin/gpu_placement_test' ${gtest_args[*]}"

grep '^RESULT\|largest relative\|samples/s' "$log" >>"$summary"
exit "$failed"
