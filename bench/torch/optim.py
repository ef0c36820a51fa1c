"""PyTorch side of bench/optim.ts: one AdamW step over --n f32 parameters on the GPU (fused, foreach
and the single-tensor loop) and the gradient's norm as clip_grad_norm_ computes it, as effective GB/s
(AdamW 28 bytes per element, the norm 4). Prints JSON lines.

  python3 bench/torch/optim.py [--n 67108864] [--reps 20]
"""
import argparse
import json

import torch

ap = argparse.ArgumentParser()
ap.add_argument("--n", type=int, default=1 << 26)
ap.add_argument("--reps", type=int, default=20)
args = ap.parse_args()
dev = torch.device("cuda")


def timed(fn):
    fn()
    torch.cuda.synchronize()
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record()
    for _ in range(args.reps):
        fn()
    e.record()
    torch.cuda.synchronize()
    return s.elapsed_time(e) / 1000 / args.reps


def report(op, seconds, bytes_per):
    print(json.dumps({"bench": "optim", "side": "torch", "op": op, "n": args.n, "ms": round(seconds * 1e3, 3),
                      "gbps": round(bytes_per * args.n / seconds / 1e9, 1), "torch": torch.__version__}))


p = torch.nn.Parameter(torch.rand(args.n, device=dev) - 0.5)
p.grad = torch.rand(args.n, device=dev) - 0.5
report("clip_grad_norm_", timed(lambda: torch.nn.utils.clip_grad_norm_([p], 1e9)), 4)
for mode in ("fused", "foreach", "single"):
    kw = {"fused": True} if mode == "fused" else {"foreach": mode == "foreach"}
    opt = torch.optim.AdamW([p], lr=1e-3, **kw)
    report(f"adamw_{mode}", timed(opt.step), 28)
