"""An unchanged-style PyTorch DDP script on CUDA with NCCL, for tests/gpu/run.sh: the idiom
torch.cuda.set_device(int(os.environ["LOCAL_RANK"])) that every DDP tutorial uses, a small MLP,
and "step N loss=X" lines that the job's metrics patterns read."""
import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel


def main():
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    dist.init_process_group("nccl")
    rank = dist.get_rank()
    device = torch.device("cuda", local_rank)
    print(f"rank {rank}: LOCAL_RANK={local_rank} CUDA_VISIBLE_DEVICES="
          f"{os.environ.get('CUDA_VISIBLE_DEVICES', '(unset)')} devices={torch.cuda.device_count()} "
          f"using {torch.cuda.get_device_name(device)}", flush=True)
    torch.manual_seed(0)
    model = DistributedDataParallel(
        torch.nn.Sequential(torch.nn.Linear(32, 256), torch.nn.ReLU(), torch.nn.Linear(256, 4)).to(device),
        device_ids=[local_rank])
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    generator = torch.Generator(device=device).manual_seed(rank)
    w = torch.randn(32, 4, device=device, generator=torch.Generator(device=device).manual_seed(1))
    for step in range(200):
        x = torch.randn(128, 32, device=device, generator=generator)
        y = (x @ w).argmax(dim=1)
        loss = torch.nn.functional.cross_entropy(model(x), y)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        if step % 20 == 0 or step == 199:
            print(f"step {step} loss={loss.item():.5f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
