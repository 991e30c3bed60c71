"""PyTorch (CPU) peer of bench_trainer: the same MLP, batch, optimizer and thread count.

Usage: torch_trainer_peer.py FEATURES HIDDEN1 HIDDEN2 CLASSES BATCH STEPS THREADS
Prints one line: samples_per_s=<float>
"""
import sys
import time

import torch


def main():
    features, h1, h2, classes, batch, steps, threads = (int(a) for a in sys.argv[1:8])
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(features, h1), torch.nn.ReLU(),
        torch.nn.Linear(h1, h2), torch.nn.ReLU(),
        torch.nn.Linear(h2, classes))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    loss_fn = torch.nn.CrossEntropyLoss()
    # Pre-made batches, as the native trainer gathers its batches from memory.
    xs = torch.randn(64, batch, features)
    ys = torch.randint(0, classes, (64, batch))

    def step(i):
        optimizer.zero_grad(set_to_none=True)
        loss = loss_fn(model(xs[i % 64]), ys[i % 64])
        loss.backward()
        optimizer.step()

    for i in range(200):  # warm-up
        step(i)
    best = 0.0
    for _ in range(3):
        start = time.perf_counter()
        for i in range(steps):
            step(i)
        best = max(best, steps * batch / (time.perf_counter() - start))
    print(f"samples_per_s={best:.1f}")


if __name__ == "__main__":
    main()
