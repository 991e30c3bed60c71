#!/usr/bin/env bash
# tests/bench/results.sh [--update-readme] [BENCH ...]: runs the benchmarks (all of them, or those
# named, e.g. bench_launch) from build/bin, one after another, and prints a Markdown table of
# their RESULT lines with the commit and date. With --update-readme it also replaces the table
# between the README's "bench-results" markers, so the figures there come from the benchmarks'
# own output at this commit and cannot drift from the code. A benchmark that skips (exit 77, e.g.
# bench_gpu_trainer without a GPU) or fails is listed as such. Needs a built tree (build/) and,
# for the GUI benchmarks, nothing more: they run offscreen.
set -uo pipefail

repo=$(cd "$(dirname "$0")/../.." && pwd)
bin=${RINGMASTER_BENCH_BIN_DIR:-$repo/build/bin}
update=false
if [[ "${1:-}" == --update-readme ]]; then
  update=true
  shift
fi

# name|arguments|what it measures (the README's longer table explains each)
all=(
  "bench_launch||submit --wait of 8 x /bin/true on 2 agents vs mpirun -np 8"
  "bench_recovery||kill -9 of a rank, then of an agent: detect, teardown, resume vs torchrun"
  "bench_metrics_pipeline||10^6 metric records journal -> CURVE -> SQLite vs SQLite's raw insert"
  "bench_allreduce||comm layer vs raw Gloo over TCP, 2 and 4 ranks, 1-64 MB"
  "bench_allreduce|--shared-memory|ranks on one host in shared memory vs Open MPI's MPI_Allreduce"
  "bench_trainer||native trainer vs PyTorch CPU; 1 to 2 ranks scaling"
  "bench_time_to_accuracy||Fashion-MNIST to 0.87 test accuracy, 2 ranks on 2 agents: native vs PyTorch DDP under torchrun"
  "bench_strategies||each spec of resources/jobs/strategies (Fashion-MNIST) on loopback, plain and with rank 0 at a third of its speed"
  "bench_strategies|--link 1gbit --no-straggler|the same through a 1 Gb/s link between the two agents' network namespaces (root)"
  "bench_scale|8:64 32:256 128:1024|N agents, one job of R ranks vs mpirun -np R"
  "bench_gpu_trainer||GPU trainer vs PyTorch CUDA (skips without a GPU)"
  "bench_charts||chart redraw, 10^3 to 10^7 points vs a plain QLineSeries"
  "bench_log_search||a 200 MB log searched from the log pane vs grep"
  "bench_gui_stall||longest GUI event-loop gap while 50k samples/s stream in"
  "bench_fair_service||an unrelated key's inventory while one key runs 32 following clients and 16 unread 16 MB log floods, vs the idle agent"
)

selected=("$@")
rows=()
for entry in "${all[@]}"; do
  IFS='|' read -r name args what <<<"$entry"
  if ((${#selected[@]})) && [[ " ${selected[*]} " != *" $name "* ]]; then continue; fi
  if [[ ! -x "$bin/$name" ]]; then
    rows+=("| \`$name $args\` | $what | not built |")
    continue
  fi
  echo "== $name $args" >&2
  start=$SECONDS
  # shellcheck disable=SC2086  # the arguments are words
  output=$(cd "$repo" && QT_QPA_PLATFORM=offscreen "$bin/$name" $args 2>&1)
  rc=$?
  echo "$output" | grep '^RESULT' >&2
  results=$(echo "$output" | grep '^RESULT' | sed -e 's/^RESULT //' -e 's/|/\\|/g' |
    awk 'BEGIN { ORS = "" } { if (NR > 1) print "<br>"; print "`" $0 "`" }')
  case $rc in
    0) verdict="$results" ;;
    77) verdict="skipped: $(echo "$output" | tail -1 | sed 's/|/\\|/g')" ;;
    *) verdict="FAILED (exit $rc) ${results}" ;;
  esac
  rows+=("| \`$name${args:+ $args}\` | $what | $verdict ($((SECONDS - start)) s) |")
done

commit=$(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo unknown)
changes=$(git -C "$repo" status --porcelain --untracked-files=no 2>/dev/null)
dirty=${changes:+, with uncommitted changes}
table=$(
  echo "Measured by \`tests/bench/results.sh\` at commit $commit$dirty on $(date -u +%F), $(nproc) cores:"
  echo
  echo "| benchmark | measures | RESULT |"
  echo "|---|---|---|"
  printf '%s\n' "${rows[@]}"
)
echo "$table"

if $update; then
  readme=$repo/README.md
  begin='<!-- bench-results:begin -->'
  end='<!-- bench-results:end -->'
  if ! grep -qF "$begin" "$readme" || ! grep -qF "$end" "$readme"; then
    echo "results.sh: README.md has no '$begin' ... '$end' section" >&2
    exit 2
  fi
  python3 - "$readme" "$begin" "$end" "$table" <<'EOF'
import sys
path, begin, end, table = sys.argv[1:5]
text = open(path, encoding="utf-8").read()
head, rest = text.split(begin, 1)
_, tail = rest.split(end, 1)
open(path, "w", encoding="utf-8").write(head + begin + "\n" + table + "\n" + end + tail)
EOF
  echo "results.sh: README.md updated" >&2
fi
