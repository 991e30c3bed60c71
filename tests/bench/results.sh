#!/usr/bin/env bash
# tests/bench/results.sh: the benchmarks' figures and docs/benchmarks.md's table, from one file.
#
#   results.sh [BENCH ...]           runs the benchmarks (all of them, or those named, e.g.
#                                    bench_launch) from build/bin, one after another, and prints
#                                    each one's RESULT lines as lines of docs/bench-results.txt
#   results.sh --record [BENCH ...]  the same, and writes those lines into docs/bench-results.txt
#                                    (in place of that benchmark's earlier ones), then the table
#   results.sh --update-docs         writes the table between docs/benchmarks.md's
#                                    "bench-results" markers from docs/bench-results.txt; runs
#                                    nothing
#   results.sh --check               exits 1 when docs/benchmarks.md's table is not what
#                                    --update-docs would write (ctest: bench_table_test)
#
# docs/bench-results.txt holds one line per RESULT line: "BENCH [ARGS] | DATE | COMMIT | MACHINE |
# RESULT key=value ...", the machine, date and commit it was measured on. A line whose kind is
# FIGURES instead of RESULT holds figures transcribed from a run's printed report where its whole
# RESULT line was not kept. So every figure of the table names where and when it was measured,
# and the table cannot drift from the lines. A benchmark that skips (exit 77, e.g.
# bench_gpu_trainer without a GPU) or fails records nothing; the run's output says why. The GUI
# benchmarks run offscreen.
set -uo pipefail

repo=$(cd "$(dirname "$0")/../.." && pwd)
bin=${RINGMASTER_BENCH_BIN_DIR:-$repo/build/bin}
results_file=${RINGMASTER_BENCH_RESULTS:-$repo/docs/bench-results.txt}
docs_file=${RINGMASTER_BENCH_DOCS:-$repo/docs/benchmarks.md}
mode=run
case "${1:-}" in
  --record) mode=record; shift ;;
  --update-docs) mode=update; shift ;;
  --check) mode=check; shift ;;
  -h|--help) sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  --*) echo "results.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
esac

# One row of the table each: name|arguments|what it measures|the peer it is compared with|the
# target|the RESULT keys the table shows (the whole line is in docs/bench-results.txt).
all=(
  "bench_launch||submit --wait of 8 x /bin/true over 2 agents, end to end|mpirun -np 8 /bin/true; one process spawning the 8 (floor)|at least mpirun's speed (met)|launch_ms mpirun_ms ratio_vs_mpirun"
  "bench_recovery||kill -9 of one rank of a 4-rank native job on 2 agents, no client connected; then of an agent|torchrun (python3-torch 1.13) restarting a killed local worker|a rank found in ≤ 1 s, an agent in ≤ 5 s; training again ≤ 5 s plus the checkpoint's load (met)|detect_ms teardown_ms resume_ms agent_detect_ms torchrun_restart_ms ratio_resume_vs_torchrun"
  "bench_metrics_pipeline||10^6 metric records: journal -> CURVE -> client -> SQLite|SQLite's raw insert ceiling|≥ 0.85 of the ceiling (met)|records_per_s sqlite_ceiling_per_s ratio_vs_sqlite lost duplicated"
  "bench_allreduce||busbw of the comm layer (its own TCP ring for float32) vs raw Gloo on the same connections, 2 and 4 ranks, 1-64 MB|raw Gloo over TCP; torch.distributed's gloo|≥ 0.95 of Gloo at every size (met)|ratio_vs_gloo_pooled min_ratio_vs_gloo ratio_vs_gloo_r2 ratio_vs_gloo_r4 min_ratio_vs_torch"
  "bench_allreduce|--shared-memory|ranks on one host through shared memory, 4 KB to 64 MB|Open MPI 4.1's MPI_Allreduce (vader)|≥ 1.0 of Open MPI at 2 ranks and ≥ 0.9 at 4 ranks in every cell (met)|min_ratio_vs_mpi ratio_vs_mpi_r2_1MB shm_busbw_r2_1MB ratio_vs_mpi_r4_1MB"
  "bench_trainer||native trainer, MLP 32-128-64-4, batch 64, one thread; 1 to 2 ranks on one host|PyTorch 1.13 CPU, same model, batch and threads|at least PyTorch's speed (met); 2 ranks ≥ 1.0× one (met), 1.5× the goal (not met)|samples_per_s torch_samples_per_s ratio_vs_torch scaling_2ranks large_scaling_2ranks"
  "bench_time_to_accuracy|8 3|Fashion-MNIST to 0.87 test accuracy, the demo's MLP, 2 ranks on 2 agents (and on one host)|PyTorch DDP under the torchrun launcher, the same OpenBLAS kernels|2× sooner at the same final accuracy, within 0.5 points (met)|native_to_0.87_s torch_ddp_to_0.87_s ratio native_final torch_final ratio_one_host"
  "bench_strategies||each spec of resources/jobs/strategies on loopback, plain and with rank 0 at a third of its speed|the strategies against each other|—|allreduce_to_target_s local_sgd_to_target_s"
  "bench_strategies|--link 1gbit|the same through a shaped 1 Gb/s link between two agents' network namespaces (root)|the strategies against each other|— (what to pick: docs/strategies.md)|allreduce_to_target_s local_sgd_to_target_s pipeline_to_target_s allreduce_slowed_ratio parameter_server_async_slowed_ratio"
  "bench_scale|8:64 32:256 128:1024 256:2048|N agents on loopback, one job of R ranks; then one sleeping rank per agent for the gang's standing cost|mpirun --oversubscribe -np R|1024 ranks over 128 agents within mpirun's time, every row stored; the leader within 2× of a member (both met)|agents ranks submit_ms mpirun_ms rows expected_rows leader_vs_median"
  "bench_gang_simulation|--schedules 1000000|the gang's own coordinators, 3-16 agents on a virtual clock and network, each schedule a seed's splits, one-way loss, crashes, restarts, rank failures and stops|— (the invariants: one copy trains, each decision journaled once, nothing left running)|zero violations over 10^6 schedules|schedules violations succeeded failed stopped restarted"
  "bench_gang_model||the gang's tree beyond one machine, from its layout; the reports the root's children carry, decoded for real|the star's leader of the same size|the leader's standing cost bounded, not linear in agents (met)|agents depth root_contacts root_decode_ms_per_s star_leader_decode_ms_per_s"
  "bench_gpu_trainer||the GPU trainer on three MLPs (m0 32-128-64-4, m1 32-1024-1024-4, m2 256-4096-4096-16), the loss read every step|PyTorch CUDA, same model, batch and optimizer|at least PyTorch's speed (met; m2 at parity)|m0_ratio_vs_torch m1_ratio_vs_torch m2_ratio_vs_torch"
  "bench_charts||chart redraw (decimate, draw, render an 800x400 chart), one series of 10^3 to 10^7 points|the same points in a plain QLineSeries|≤ 50 ms at 10^7 (met)|redraw_ms_1e6 redraw_ms_1e7 qlineseries_ms_1e6 ratio_1e6"
  "bench_log_search||a rank's 200 MB log searched whole from the log pane (agent -> CURVE -> I/O thread -> worker thread)|grep -c -i -F over the agent's file, in the page cache|the whole log, the GUI responsive throughout (met)|search_ms first_match_ms grep_ms search_max_stall_ms open_ms"
  "bench_gui_stall||longest GUI event-loop gap while a real job streams 50k samples/s into an open dashboard (4 ranks; 8 ranks while the smoothing slider is dragged); a 10^5-step 8-rank past run opened; an 8-rank job live for 5 minutes|the same loop idle|< 50 ms; the past run ≤ 2 s, ≤ 300 MB; live ≤ 35 % of a core, ≤ 20 MB growth (all met)|max_stall_ms max_stall_ms_8ranks_dragging open_stall_ms_8ranks past_run_open_s past_run_peak_rss_mb live_gui_cpu_percent live_rss_growth_mb"
  "bench_fair_service|30 issue|an unrelated key's inventory every 100 ms while one key runs 32 clients following jobs and 16 connections with unread 16 MB log reads|the idle agent|p99 ≤ 100 ms, max ≤ 500 ms (met on the Intel VM; p99 155 ms on the AMD EPYC VM)|other_key_p50_ms other_key_p99_ms other_key_max_ms follows rows_lost"
  "bench_fair_service|30|the same plus 8 clients reading a 20 MB log 16 MiB at a time|the idle agent|—|other_key_p99_ms other_key_max_ms other_read_p99_ms follows rows_lost"
)

# The table, from the results file: written to stdout.
make_table() {
  printf '%s\n' "${all[@]}" | python3 -c '
import sys
results_path = sys.argv[1]
specs = [line.rstrip("\n").split("|") for line in sys.stdin if line.strip()]
lines = {}
for raw in open(results_path, encoding="utf-8"):
    raw = raw.rstrip("\n")
    if not raw.strip() or raw.startswith("#"):
        continue
    fields = [f.strip() for f in raw.split(" | ")]
    if len(fields) != 5:
        sys.exit("results.sh: %s: expected 5 fields separated by \" | \": %s" % (results_path, raw))
    key, date, commit, machine, result = fields
    kind, _, pairs = result.partition(" ")
    if kind not in ("RESULT", "FIGURES"):
        sys.exit("results.sh: %s: the fifth field must begin with RESULT or FIGURES: %s" % (results_path, raw))
    lines.setdefault(key, []).append((date, commit, machine, kind, pairs))
known = {(n + (" " + a if a else "")) for n, a, *_ in specs}
for key in lines:
    if key not in known:
        sys.exit("results.sh: %s: %s is no benchmark of results.sh" % (results_path, key))
def cell(text):
    return text.replace("|", "\\|")
print("| benchmark | what it measures | peer | figure | target | measured on |")
print("|---|---|---|---|---|---|")
for name, args, what, peer, target, shown in specs:
    key = name + (" " + args if args else "")
    got = lines.get(key)
    if not got:
        print("| `%s` | %s | %s | no figure kept | %s | — |" % (key, cell(what), cell(peer), cell(target)))
        continue
    figures, places = [], []
    for date, commit, machine, kind, pairs in got:
        values = dict(p.split("=", 1) for p in pairs.split() if "=" in p)
        picked = " ".join("%s=%s" % (k, values[k]) for k in shown.split() if k in values)
        figures.append("`%s`%s" % (picked or pairs, " (transcribed)" if kind == "FIGURES" else ""))
        place = "%s, %s, %s" % (machine, date, commit)
        if place not in places:
            places.append(place)
    print("| `%s` | %s | %s | %s | %s | %s |" % (key, cell(what), cell(peer), "<br>".join(figures),
                                                cell(target), cell("; ".join(places))))
' "$results_file"
}

begin='<!-- bench-results:begin -->'
end='<!-- bench-results:end -->'

# Replaces the table between the markers of docs/benchmarks.md (update) or compares it (check).
docs_table() {
  local action=$1 table
  table=$(make_table) || exit 1
  if ! grep -qF "$begin" "$docs_file" || ! grep -qF "$end" "$docs_file"; then
    echo "results.sh: $docs_file has no '$begin' ... '$end' section" >&2
    exit 2
  fi
  python3 - "$docs_file" "$begin" "$end" "$table" "$action" <<'EOF'
import sys
path, begin, end, table, action = sys.argv[1:6]
text = open(path, encoding="utf-8").read()
head, rest = text.split(begin, 1)
old, tail = rest.split(end, 1)
if action == "check":
    if old.strip() != table.strip():
        sys.exit("results.sh: %s: the table is not the one docs/bench-results.txt gives; "
                 "run tests/bench/results.sh --update-docs" % path)
    print("results.sh: %s: the table matches docs/bench-results.txt" % path)
else:
    open(path, "w", encoding="utf-8").write(head + begin + "\n" + table + "\n" + end + tail)
    print("results.sh: %s updated" % path, file=sys.stderr)
EOF
}

case $mode in
  update) docs_table update; exit ;;
  check) docs_table check; exit ;;
esac

# Where and when this run measures: the machine in words, the date, the commit.
cores=$(nproc)
cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
grep -qw hypervisor /proc/cpuinfo && vm=" VM" || vm=""
machine="$cores-core ${cpu:-unknown CPU}$vm"
commit=$(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo unknown)
if [[ -n $(git -C "$repo" status --porcelain --untracked-files=no 2>/dev/null) ]]; then
  commit="$commit with uncommitted changes"
fi
today=$(date -u +%F)

selected=("$@")
recorded=()
recorded_keys=()
for entry in "${all[@]}"; do
  IFS='|' read -r name args _ <<<"$entry"
  if ((${#selected[@]})) && [[ " ${selected[*]} " != *" $name "* ]]; then continue; fi
  key="$name${args:+ $args}"
  if [[ ! -x "$bin/$name" ]]; then
    echo "== $key: not built" >&2
    continue
  fi
  echo "== $key" >&2
  start=$SECONDS
  # shellcheck disable=SC2086  # the arguments are words
  output=$(cd "$repo" && QT_QPA_PLATFORM=offscreen "$bin/$name" $args 2>&1)
  rc=$?
  case $rc in
    0) ;;
    77) echo "$key: skipped: $(echo "$output" | tail -1)" >&2; continue ;;
    *) echo "$key: FAILED (exit $rc); nothing recorded" >&2; echo "$output" | tail -5 >&2; continue ;;
  esac
  echo "$key: $((SECONDS - start)) s" >&2
  while IFS= read -r line; do
    recorded+=("$key | $today | $commit | $machine | $line")
  done < <(echo "$output" | grep '^RESULT ')
  recorded_keys+=("$key")
done
((${#recorded[@]})) && printf '%s\n' "${recorded[@]}"

if [[ $mode == record ]] && ((${#recorded[@]})); then
  python3 - "$results_file" "${#recorded_keys[@]}" "${recorded_keys[@]}" "${recorded[@]}" <<'EOF'
import sys
path, count = sys.argv[1], int(sys.argv[2])
keys, new = set(sys.argv[3:3 + count]), sys.argv[3 + count:]
kept, placed = [], False
for raw in open(path, encoding="utf-8"):
    line = raw.rstrip("\n")
    key = line.split(" | ", 1)[0].strip()
    if line and not line.startswith("#") and key in keys:
        if not placed:
            kept.extend(new)
            placed = True
        continue
    kept.append(line)
if not placed:
    kept.extend(new)
open(path, "w", encoding="utf-8").write("\n".join(kept) + "\n")
EOF
  echo "results.sh: $results_file updated" >&2
  docs_table update
fi
