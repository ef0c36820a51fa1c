"""torch.amp.GradScaler's scale trajectory for a given sequence of overflowing iterations, one JSON line
per iteration (compact, like bench/grad_scaler.ts prints Tandem's, so the two outputs diff clean).
An overflow is injected by setting one gradient element to inf after backward; `stepped` says whether
the optimizer changed the parameter. With more than 100 iterations only overflows, scale changes and
the last iteration are printed.

  python3 bench/torch/grad_scaler.py --growth-interval 3 --overflow 3,10,11 --steps 12
  diff <(node dist/bench/grad_scaler.js --growth-interval 3 --overflow 3,10,11 --steps 12) \
       <(python3 bench/torch/grad_scaler.py --growth-interval 3 --overflow 3,10,11 --steps 12)
"""
import argparse
import json
import sys

import torch

ap = argparse.ArgumentParser()
ap.add_argument("--steps", type=int, default=12)
ap.add_argument("--overflow", default="3,10,11", help="1-based iterations whose gradients hold an inf")
ap.add_argument("--growth-interval", type=int, default=3)
ap.add_argument("--init-scale", type=float, default=2.0**16)
ap.add_argument("--growth-factor", type=float, default=2.0)
ap.add_argument("--backoff-factor", type=float, default=0.5)
args = ap.parse_args()

device = "cuda" if torch.cuda.is_available() else "cpu"
overflow = {int(s) for s in args.overflow.split(",") if s}
p = torch.nn.Parameter(torch.ones(4, device=device))
opt = torch.optim.SGD([p], lr=0.01)
scaler = torch.amp.GradScaler(device, init_scale=args.init_scale, growth_factor=args.growth_factor,
                              backoff_factor=args.backoff_factor, growth_interval=args.growth_interval)
print(f"# torch {torch.__version__} on {device}", file=sys.stderr)


def num(x):
    return int(x) if float(x).is_integer() else x


prev = scaler.get_scale()
for it in range(1, args.steps + 1):
    opt.zero_grad()
    loss = (p * 2.0).sum()
    scaler.scale(loss).backward()
    if it in overflow:
        with torch.no_grad():
            p.grad[0] = float("inf")
    before = p.detach().clone()
    scaler.step(opt)
    scaler.update()
    stepped = not torch.equal(before, p.detach())
    scale = scaler.get_scale()
    if args.steps <= 100 or it in overflow or scale != prev or it == args.steps:
        print(json.dumps({"iter": it, "overflow": it in overflow, "scale": num(scale),
                          "growth_tracker": scaler._get_growth_tracker(), "stepped": stepped}, separators=(",", ":")))
    prev = scale
