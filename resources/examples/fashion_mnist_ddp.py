"""Fashion-MNIST with PyTorch DDP (gloo, init_method="env://"), written as a PyTorch user would:
a TensorDataset, a DistributedSampler and a DataLoader, an MLP, SGD with momentum, warm-up then
cosine decay, test accuracy after every epoch. The same model, data, optimizer, batch and
schedule as resources/jobs/demo.yaml's native job, so bench_time_to_accuracy compares the two.

Reads Debian's dataset-fashion-mnist (the gzipped IDX files) with numpy; reports loss and
accuracy as Ringmaster metric lines.
Usage: python3 fashion_mnist_ddp.py [--epochs N] [--batch B] [--hidden 1024,512] [--lr LR]
       [--data DIR]
"""
import argparse
import gzip
import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
from torch.utils.data import DataLoader, TensorDataset  # noqa: E402
from torch.utils.data.distributed import DistributedSampler  # noqa: E402
from ringmaster_metrics import log  # noqa: E402


def read_idx(path):
    with gzip.open(path, "rb") as f:
        data = f.read()
    dims = data[3]
    shape = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(dims)]
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * dims).reshape(shape)


def load(directory, prefix):
    images = read_idx(os.path.join(directory, f"{prefix}-images-idx3-ubyte.gz"))
    labels = read_idx(os.path.join(directory, f"{prefix}-labels-idx1-ubyte.gz"))
    x = torch.from_numpy(images.reshape(len(images), -1).astype(np.float32))
    return x, torch.from_numpy(labels.astype(np.int64))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=8)
    parser.add_argument("--batch", type=int, default=64, help="per rank")
    parser.add_argument("--hidden", default="1024,512")
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--warmup", type=int, default=100)
    parser.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    args = parser.parse_args()

    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method="env://")
    rank, world = dist.get_rank(), dist.get_world_size()

    train_x, train_y = load(args.data, "train")
    test_x, test_y = load(args.data, "t10k")
    mean, std = train_x.mean(), train_x.std()  # one scale for every pixel, as the native job
    train_x, test_x = (train_x - mean) / std, (test_x - mean) / std

    torch.manual_seed(1)
    widths = [train_x.shape[1]] + [int(w) for w in args.hidden.split(",")]
    layers = []
    for fan_in, fan_out in zip(widths, widths[1:]):
        layers += [torch.nn.Linear(fan_in, fan_out), torch.nn.ReLU()]
    layers.append(torch.nn.Linear(widths[-1], 10))
    model = torch.nn.Sequential(*layers)
    for layer in model:
        if isinstance(layer, torch.nn.Linear):
            torch.nn.init.kaiming_normal_(layer.weight, nonlinearity="relu")
            torch.nn.init.zeros_(layer.bias)
    ddp = torch.nn.parallel.DistributedDataParallel(model)

    sampler = DistributedSampler(TensorDataset(train_x, train_y), shuffle=True, seed=1)
    loader = DataLoader(TensorDataset(train_x, train_y), batch_size=args.batch, sampler=sampler)
    optimizer = torch.optim.SGD(ddp.parameters(), lr=args.lr, momentum=0.9, weight_decay=1e-4)
    total = args.epochs * len(loader)

    def lr_at(step):  # linear warm-up, then cosine to 0 (the native trainer's schedule)
        if step < args.warmup:
            return (step + 1) / args.warmup
        return 0.5 * (1 + math.cos(math.pi * (step - args.warmup) / max(1, total - args.warmup)))

    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lr_at)
    loss_fn = torch.nn.CrossEntropyLoss()
    step = 0
    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)
        ddp.train()
        for x, y in loader:
            loss = loss_fn(ddp(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            scheduler.step()
            step += 1
            if step % 20 == 0:
                log(step=step, loss=loss.item())
        ddp.eval()
        with torch.no_grad():
            correct = (model(test_x).argmax(1) == test_y).sum().item()
        log(step=step, loss=loss.item(), accuracy=correct / len(test_y), epoch=epoch)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
