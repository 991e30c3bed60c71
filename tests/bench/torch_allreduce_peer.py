#!/usr/bin/env python3
"""One torch.distributed (gloo) rank for bench_allreduce, the peer figure it compares against.

bench_allreduce starts N of these with RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT set (the
env:// contract; torchrun itself crashes under Debian 12's Python 3.11, see NOTES.md). Every rank
times each float32 allreduce after a barrier; per repetition the slowest rank's time counts, and
the best and the median repetition are reported, as bench_allreduce measures its own side. Rank 0
prints one line per size:

    TORCH size=<bytes> best_s=<seconds> median_s=<seconds>

Exit status 3 (and a line "TORCH_UNAVAILABLE <why>") when torch.distributed cannot be imported.
"""

import argparse
import datetime
import statistics
import sys
import time


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", required=True, help="comma-separated buffer sizes in bytes")
    parser.add_argument(
        "--reps",
        default="7",
        help="timed repetitions: one number, or one per size (comma-separated)",
    )
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds for any collective")
    args = parser.parse_args()

    try:
        import torch
        import torch.distributed as dist
    except Exception as error:  # noqa: BLE001 - any import failure means "no torch peer"
        print(f"TORCH_UNAVAILABLE {error}", flush=True)
        return 3
    if not dist.is_available() or not dist.is_gloo_available():
        print("TORCH_UNAVAILABLE torch.distributed has no gloo backend", flush=True)
        return 3

    torch.set_num_threads(1)
    dist.init_process_group(
        "gloo", init_method="env://", timeout=datetime.timedelta(seconds=args.timeout)
    )
    rank = dist.get_rank()
    sizes = [int(s) for s in args.sizes.split(",") if s]
    reps = [int(r) for r in args.reps.split(",") if r]
    if len(reps) == 1:
        reps = reps * len(sizes)
    if len(reps) != len(sizes):
        parser.error("--reps needs one number or one per size")
    buffer = torch.zeros(max(sizes) // 4, dtype=torch.float32)

    for size, count in zip(sizes, reps):
        tensor = buffer[: size // 4]
        dist.all_reduce(tensor)  # warm-up: connections, page faults
        times = torch.zeros(count, dtype=torch.float64)
        for i in range(count):
            dist.barrier()
            start = time.perf_counter()
            dist.all_reduce(tensor)
            times[i] = time.perf_counter() - start
        dist.all_reduce(times, op=dist.ReduceOp.MAX)
        if rank == 0:
            best = times.min().item()
            median = statistics.median(times.tolist())
            print(f"TORCH size={size} best_s={best:.9f} median_s={median:.9f}", flush=True)

    dist.barrier()
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
