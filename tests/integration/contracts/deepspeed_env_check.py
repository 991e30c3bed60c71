#!/usr/bin/env python3
"""A rank of a `launcher: deepspeed` job, checking what it got as DeepSpeed reads it.

DeepSpeed cannot be installed where Ringmaster's tests run, so this reimplements the rules of its
own sources:
  - deepspeed/launcher/launch.py, which spawns each rank of a node: RANK, LOCAL_RANK, WORLD_SIZE,
    MASTER_ADDR, MASTER_PORT, CROSS_RANK (the node), CROSS_SIZE (nodes), LOCAL_SIZE (ranks on the
    node), CUDA_VISIBLE_DEVICES (the node's GPUs); ranks numbered node by node; and the command
    [python, -u, script, --local_rank=N, *args];
  - deepspeed/comm/comm.py init_distributed: RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT and
    LOCAL_RANK all set, or it goes looking for MPI;
  - deepspeed/runtime/engine.py _do_args_sanity_check: LOCAL_RANK set, and args.local_rank (the
    script's --local_rank) equal to it.
Then it does what torch.distributed's env:// rendezvous does with MASTER_ADDR:MASTER_PORT: rank 0
listens there and every other rank reaches it with its RANK, so the world is shown to meet. It
prints one line, "CONTRACT <json>", and exits non-zero naming the rule that failed.
"""
import argparse
import json
import os
import socket
import sys
import time


def fail(message):
    print("CONTRACT-FAILED " + message, flush=True)
    sys.exit(1)


def integer(name):
    value = os.environ.get(name)
    if value is None:
        fail("%s is not set" % name)
    try:
        return int(value)
    except ValueError:
        fail("%s=%r is not an integer" % (name, value))


def rendezvous(rank, world_size, addr, port):
    """Rank 0 hears every other rank once at MASTER_ADDR:MASTER_PORT; the others reach it."""
    if rank == 0:
        listener = socket.socket(socket.AF_INET6 if ":" in addr else socket.AF_INET)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("", port))
        listener.listen(world_size)
        listener.settimeout(60)
        seen = set()
        while len(seen) < world_size - 1:
            conn, _ = listener.accept()
            with conn:
                other = int(conn.recv(16).decode())
                if other in seen or not 0 < other < world_size:
                    fail("rank %d reached MASTER_PORT twice or is outside the world" % other)
                seen.add(other)
                conn.sendall(b"ok")
        return sorted(seen)
    deadline = time.time() + 60
    while True:
        try:
            with socket.create_connection((addr, port), timeout=2) as conn:
                conn.sendall(str(rank).encode())
                if conn.recv(4) != b"ok":
                    fail("rank 0 did not welcome this rank")
                return []
        except OSError as error:
            if time.time() > deadline:
                fail("cannot reach MASTER_ADDR:MASTER_PORT %s:%d: %s" % (addr, port, error))
            time.sleep(0.1)


def main():
    # A DeepSpeed script's own parser: --local_rank (DeepSpeed's tutorials), then its options.
    parser = argparse.ArgumentParser()
    parser.add_argument("--local_rank", type=int, default=-1)
    parser.add_argument("--steps", type=int, default=1)
    args = parser.parse_args()

    # comm.py init_distributed: without all five it would try MPI discovery instead.
    required_env = ["RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "LOCAL_RANK"]
    missing = [v for v in required_env if v not in os.environ]
    if missing:
        fail("init_distributed would look for MPI: %s not set" % ", ".join(missing))
    # engine.py _do_args_sanity_check.
    if args.local_rank < 0:
        fail("--local_rank was not passed")
    if int(os.environ.get("LOCAL_RANK")) != args.local_rank:
        fail("Mismatch in local rank setting, args.local_rank=%d but env['LOCAL_RANK']=%s"
             % (args.local_rank, os.environ["LOCAL_RANK"]))
    # launch.py's variables and how it numbers ranks.
    rank, world_size = integer("RANK"), integer("WORLD_SIZE")
    local_rank, local_size = integer("LOCAL_RANK"), integer("LOCAL_SIZE")
    cross_rank, cross_size = integer("CROSS_RANK"), integer("CROSS_SIZE")
    master_port = integer("MASTER_PORT")
    if not 0 <= local_rank < local_size:
        fail("LOCAL_RANK %d is outside LOCAL_SIZE %d" % (local_rank, local_size))
    if not 0 <= cross_rank < cross_size:
        fail("CROSS_RANK %d is outside CROSS_SIZE %d" % (cross_rank, cross_size))
    if not 0 <= rank < world_size or local_size > world_size:
        fail("RANK %d, WORLD_SIZE %d and LOCAL_SIZE %d disagree" % (rank, world_size, local_size))
    met = rendezvous(rank, world_size, os.environ["MASTER_ADDR"], master_port)
    print("CONTRACT " + json.dumps({
        "rank": rank, "local_rank": local_rank, "args_local_rank": args.local_rank,
        "world_size": world_size, "local_size": local_size, "cross_rank": cross_rank,
        "cross_size": cross_size, "steps": args.steps, "met": met,
        "argv": sys.argv[1:]}, sort_keys=True), flush=True)


if __name__ == "__main__":
    main()
