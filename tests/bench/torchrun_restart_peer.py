"""The peer of bench_recovery: torchrun restarting a killed local worker.

Each worker joins a Gloo process group and writes "ready RESTART RANK TIME" to the file named by
argv[1] once every rank is in. In the first attempt rank 1 writes "kill TIME" and SIGKILLs itself
a second later; torchrun must notice, stop rank 0 and start both again (TORCHELASTIC_RESTART_COUNT
1), which then write "ready 1 ..." and exit.
"""
import os
import signal
import sys
import time

import torch
import torch.distributed as dist


def note(line):
    with open(sys.argv[1], "a") as out:
        out.write(line + "\n")


def main():
    restart = int(os.environ["TORCHELASTIC_RESTART_COUNT"])
    rank = int(os.environ["RANK"])
    dist.init_process_group("gloo")
    dist.all_reduce(torch.zeros(1))
    note(f"ready {restart} {rank} {time.time()}")
    if restart == 0:
        if rank == 1:
            time.sleep(1.0)
            note(f"kill {time.time()}")
            os.kill(os.getpid(), signal.SIGKILL)
        time.sleep(60)  # as if waiting in a collective for the rank that died
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
