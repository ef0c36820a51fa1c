"""Bench B.9, PyTorch side: checkpoint save/load GB/s (1e9 bytes/s) for the same tensors as
bench/safetensors.ts (--tensors f32 tensors, --mib MiB in all), with safetensors.torch (save_file,
load_file) and torch.save/torch.load, from host tensors (the file path, like Tandem's), and with
--device cuda also from/to GPU tensors (the copies included). Loads read a file the page cache holds.
Prints JSON lines.

  python3 bench/torch/safetensors_bench.py [--mib 1536] [--tensors 24] [--reps 3] [--dir /tmp] [--device cpu|cuda]
"""
import argparse
import json
import os
import shutil
import statistics
import tempfile
import time

import torch
from safetensors.torch import load_file, save_file

ap = argparse.ArgumentParser()
ap.add_argument("--mib", type=int, default=1536)
ap.add_argument("--tensors", type=int, default=24)
ap.add_argument("--reps", type=int, default=3)
ap.add_argument("--dir", default="/tmp")
ap.add_argument("--device", default="cpu")
args = ap.parse_args()

per = (args.mib << 20) // args.tensors // 4
tensors = {f"layers.{i}.weight": torch.rand(per, device=args.device) for i in range(args.tensors)}
total = args.tensors * per * 4


def sync():
    if args.device == "cuda":
        torch.cuda.synchronize()


def report(op, seconds):
    med = statistics.median(seconds)
    print(json.dumps({"bench": "safetensors", "side": "torch", "op": op, "device": args.device, "bytes": total,
                      "tensors": args.tensors, "reps": len(seconds), "best_gbps": round(total / min(seconds) / 1e9, 3),
                      "median_gbps": round(total / med / 1e9, 3), "median_s": round(med, 4), "torch": torch.__version__}))


d = tempfile.mkdtemp(dir=args.dir, prefix="torch-st-bench-")
try:
    st, pt = os.path.join(d, "model.safetensors"), os.path.join(d, "model.pt")
    runs = {"safetensors_save": [], "safetensors_load": [], "torch_save": [], "torch_load": []}
    for _ in range(args.reps):
        for p in (st, pt):
            if os.path.exists(p):
                os.remove(p)
        sync(); t0 = time.perf_counter(); save_file(tensors, st); runs["safetensors_save"].append(time.perf_counter() - t0)
        t0 = time.perf_counter(); loaded = load_file(st, device=args.device); sync()
        runs["safetensors_load"].append(time.perf_counter() - t0)
        assert all(torch.equal(loaded[k], v) for k, v in tensors.items())
        del loaded
        sync(); t0 = time.perf_counter(); torch.save(tensors, pt); runs["torch_save"].append(time.perf_counter() - t0)
        t0 = time.perf_counter(); loaded = torch.load(pt, map_location=args.device); sync()
        runs["torch_load"].append(time.perf_counter() - t0)
        assert all(torch.equal(loaded[k], v) for k, v in tensors.items())
        del loaded
    for op, seconds in runs.items():
        report(op, seconds)
finally:
    shutil.rmtree(d, ignore_errors=True)
