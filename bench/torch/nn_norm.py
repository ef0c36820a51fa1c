"""PyTorch side of bench B.2 (bench/nn-norm.ts runs this first, then Tandem, on the same GPU).

Same shapes and dtypes as the Tandem side, one JSON line per measurement: {"what", "ms", "gbps"}, with
GB/s over the same minimum traffic (inputs read once, outputs written once).
  python3 bench/torch/nn_norm.py
"""
import json

import torch
import torch.nn.functional as F

M, C = 65536, 768
ROWS, V = 8192, 50257
dev = torch.device("cuda")
bf = torch.bfloat16


def timed(fn, reps=50):
    """Median of 5 rounds of `reps` calls timed with CUDA events, in ms per call."""
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    rounds = []
    for _ in range(5):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        for _ in range(reps):
            fn()
        e.record()
        torch.cuda.synchronize()
        rounds.append(s.elapsed_time(e) / reps)
    return sorted(rounds)[2]


def report(what, ms, nbytes):
    print(json.dumps({"bench": "nn-norm-torch", "what": what, "ms": round(ms, 4),
                      "gbps": round(nbytes / ms / 1e6, 1), "torch": torch.__version__}), flush=True)


act, stats = M * C * 2, M * 4 * 2
x = torch.rand(M, C, device=dev, dtype=bf) * 2 - 1
w = torch.rand(C, device=dev, dtype=bf) * 2 - 1
b = torch.rand(C, device=dev, dtype=bf) * 2 - 1
dy = torch.rand(M, C, device=dev, dtype=bf) * 2 - 1
fwd = timed(lambda: F.layer_norm(x, (C,), w, b, 1e-5))
report("layernorm_fwd", fwd, 2 * act + stats)
_, mean, rstd = torch.ops.aten.native_layer_norm(x, [C], w, b, 1e-5)
bwd = timed(lambda: torch.ops.aten.native_layer_norm_backward(dy, x, [C], mean, rstd, w, b, [True, True, True]))
report("layernorm_bwd", bwd, 3 * act + stats)
report("layernorm_fwd_bwd", fwd + bwd, 5 * act + 2 * stats)
r = torch.rand(M, C, device=dev, dtype=bf) * 2 - 1


def residual():
    s = x + r
    return s, F.layer_norm(s, (C,), w, b, 1e-5)


report("residual_layernorm", timed(residual), 4 * act + stats)
del x, dy, r, mean, rstd
torch.cuda.empty_cache()

logits = (torch.rand(ROWS, V, device=dev, dtype=bf) * 2 - 1).requires_grad_(True)
targets = torch.randint(0, V, (ROWS,), device=dev)


def xent():
    loss = F.cross_entropy(logits, targets)
    (g,) = torch.autograd.grad(loss, logits)
    return g


report("softmax_xent_fwd_bwd", timed(xent, reps=20), 2 * ROWS * V * 2 + ROWS * 8)
