"""A small PyTorch DDP job (gloo, init_method="env://") for Ringmaster's torchrun launcher.

Each rank trains the same MLP on its own shard of a synthetic regression problem, reports loss as
JSON metric lines, and at the end checks that every rank holds the same parameters (exit 3 if not).
Usage: python3 ddp_train.py [--steps N] [--fail-rank R]
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
from ringmaster_metrics import log  # noqa: E402


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--fail-rank", type=int, default=-1, help="this rank exits 1 at step 5")
    args = parser.parse_args()

    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method="env://")
    rank, world = dist.get_rank(), dist.get_world_size()
    print(f"rank {rank}/{world} on {os.uname().nodename}, master "
          f"{os.environ['MASTER_ADDR']}:{os.environ['MASTER_PORT']}", flush=True)

    torch.manual_seed(0)  # same initial weights everywhere (DDP broadcasts rank 0's anyway)
    model = torch.nn.Sequential(torch.nn.Linear(16, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1))
    ddp = torch.nn.parallel.DistributedDataParallel(model)
    optimizer = torch.optim.SGD(ddp.parameters(), lr=0.05, momentum=0.9)
    true_w = torch.randn(16, 1, generator=torch.Generator().manual_seed(7))
    data = torch.Generator().manual_seed(1000 + rank)  # each rank its own shard

    for step in range(args.steps):
        if rank == args.fail_rank and step == 5:
            print("failing on purpose", flush=True)
            sys.exit(1)
        x = torch.randn(args.batch, 16, generator=data)
        y = x @ true_w + 0.01 * torch.randn(args.batch, 1, generator=data)
        loss = torch.nn.functional.mse_loss(ddp(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        log(step=step, loss=loss.item())

    flat = torch.cat([p.detach().flatten() for p in model.parameters()])
    gathered = [torch.zeros_like(flat) for _ in range(world)]
    dist.all_gather(gathered, flat)
    agree = all(torch.equal(gathered[0], t) for t in gathered)
    log(step=args.steps, params_agree=1.0 if agree else 0.0)
    print("parameters agree across ranks" if agree else "PARAMETERS DIFFER", flush=True)
    dist.barrier()
    dist.destroy_process_group()
    sys.exit(0 if agree else 3)


if __name__ == "__main__":
    main()
