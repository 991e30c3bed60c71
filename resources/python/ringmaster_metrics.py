"""Report metrics to Ringmaster from any Python training script (no dependencies).

    from ringmaster_metrics import log
    log(step=10, loss=0.31, lr=1e-3)

prints one JSON line, {"step": 10, "loss": 0.31, "lr": 0.001}, which the agent running the rank
reads from stdout and stores as metrics of that rank. Values must be finite numbers.
"""
import json
import math
import sys

__all__ = ["log"]


def log(step=None, **metrics):
    record = {}
    if step is not None:
        record["step"] = int(step)
    for name, value in metrics.items():
        value = float(value)
        if not math.isfinite(value):
            continue  # JSON has no NaN/inf; the agent would not read the line
        record[name] = value
    sys.stdout.write(json.dumps(record) + "\n")
    sys.stdout.flush()
