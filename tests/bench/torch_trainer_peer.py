"""PyTorch peer of bench_trainer (CPU) and bench_gpu_trainer (CUDA): the same MLP, batch,
optimizer and thread count.

Usage: torch_trainer_peer.py FEATURES HIDDEN1 HIDDEN2 CLASSES BATCH STEPS THREADS [DEVICE]
DEVICE is cpu (default) or cuda. Prints one line: samples_per_s=<float>
"""
import sys
import time

import torch


def main():
    features, h1, h2, classes, batch, steps, threads = (int(a) for a in sys.argv[1:8])
    device = torch.device(sys.argv[8] if len(sys.argv) > 8 else "cpu")
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(features, h1), torch.nn.ReLU(),
        torch.nn.Linear(h1, h2), torch.nn.ReLU(),
        torch.nn.Linear(h2, classes)).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    loss_fn = torch.nn.CrossEntropyLoss()
    # Pre-made batches, as the native trainer gathers its batches from memory.
    # On the GPU they are already in device memory, which spares PyTorch the host-to-device copy
    # that the native trainer makes every step.
    xs = torch.randn(64, batch, features, device=device)
    ys = torch.randint(0, classes, (64, batch), device=device)

    def sync():
        if device.type == "cuda":
            torch.cuda.synchronize()

    def step(i):
        optimizer.zero_grad(set_to_none=True)
        loss = loss_fn(model(xs[i % 64]), ys[i % 64])
        loss.backward()
        optimizer.step()

    for i in range(200):  # warm-up
        step(i)
    sync()
    best = 0.0
    for _ in range(3):
        start = time.perf_counter()
        for i in range(steps):
            step(i)
        sync()
        best = max(best, steps * batch / (time.perf_counter() - start))
    print(f"samples_per_s={best:.1f}")


if __name__ == "__main__":
    main()
