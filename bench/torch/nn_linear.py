"""B.1, the PyTorch side of bench/nn-linear.ts: the same bf16 shapes and passes, one JSON line each.

    python3 bench/torch/nn_linear.py [--m 65536] [--reps 200] [--check-m 256] [--check-rows 16] [--shapes qkv,fc]

forward: torch._addmm_activation(b, x, w.t(), use_gelu=True) for the GELU layer (cuBLASLt's fused
GELU epilogue in PyTorch: it does not keep the pre-activation, so it cannot train), F.linear elsewhere
(F.linear without bias for the head); forward_training for the GELU layer: F.linear then F.gelu, what
autograd runs in training (the pre-activation kept for the backward), beside Tandem's training forward. backward dX:
dy @ w, times gelu'(pre) via aten.gelu_backward(approximate='tanh') after the GELU layer; dW: dy.t() @ x
and db = dy.sum(0). Times: the median of 3 windows of --reps calls between CUDA events, after --reps untimed calls and a lead-in of --reps. Error: normwise
max|got - ref| / max|ref| over the first --check-rows rows at --check-m rows against an fp32 reference
from the same bf16 inputs (the Tandem side uses float64).
"""
import argparse, json, torch
import torch.nn.functional as F

p = argparse.ArgumentParser()
p.add_argument("--m", type=int, default=65536)
p.add_argument("--reps", type=int, default=200)
p.add_argument("--check-m", type=int, default=256)
p.add_argument("--check-rows", type=int, default=16)
p.add_argument("--shapes", default="", help="only the shapes whose names contain one of these words")
a = p.parse_args()
dev = torch.device("cuda")
torch.backends.cuda.matmul.allow_tf32 = False
SHAPES = [("attn_qkv", 768, 2304, False, True, False), ("mlp_fc_gelu", 768, 3072, True, True, False),
          ("mlp_proj", 3072, 768, False, True, True), ("lm_head", 768, 50304, False, False, False)]

def rand(*shape):
    return (torch.rand(*shape, device=dev) * 2 - 1).to(torch.bfloat16)

def passes(k, n, gelu, bias, dx_gelu, m):
    x, w, b, dy, pre = rand(m, k), rand(n, k), rand(n), rand(m, n), rand(m, k)
    if gelu:
        fwd = lambda: torch._addmm_activation(b, x, w.t(), use_gelu=True)
    elif bias:
        fwd = lambda: F.linear(x, w, b)
    else:
        fwd = lambda: F.linear(x, w)
    if dx_gelu:
        bdx = lambda: torch.ops.aten.gelu_backward(dy @ w, pre, approximate="tanh")
    else:
        bdx = lambda: dy @ w
    bdw = (lambda: (dy.t() @ x, dy.sum(0))) if bias else (lambda: dy.t() @ x)
    fns = {"forward": fwd, "backward_dx": bdx, "backward_dw": bdw}
    if gelu:
        fns["forward_training"] = lambda: F.gelu(F.linear(x, w, b), approximate="tanh")
    return fns, (x, w, b, dy, pre)

WINDOWS = 3

def timed(fn, reps):
    # reps untimed calls first, as bench/nn-linear.ts does (a GPU's clocks rise with work); then a lead-in
    # block of reps calls and WINDOWS windows of reps calls between CUDA events, back to back: the median
    # window per call (nn-linear.ts times the same windows from its calls' completions).
    for _ in range(reps): fn()
    torch.cuda.synchronize()
    for _ in range(reps): fn()
    ev = [torch.cuda.Event(enable_timing=True) for _ in range(WINDOWS + 1)]
    ev[0].record()
    for w in range(WINDOWS):
        for _ in range(reps): fn()
        ev[w + 1].record()
    torch.cuda.synchronize()
    return sorted(ev[w].elapsed_time(ev[w + 1]) for w in range(WINDOWS))[WINDOWS // 2] / 1000 / reps

def normwise(got, ref):
    return ((got.float() - ref).abs().max() / ref.abs().max()).item()

def errors(k, n, gelu, bias, dx_gelu):
    fns, (x, w, b, dy, pre) = passes(k, n, gelu, bias, dx_gelu, a.check_m)
    r = a.check_rows
    X, W, B, DY, PRE = (t.float() for t in (x, w, b, dy, pre))
    ref_y = X[:r] @ W.t() + (B if bias else 0)
    if gelu: ref_y = F.gelu(ref_y, approximate="tanh")
    out = {"forward": normwise(fns["forward"]()[:r], ref_y)}
    if gelu: out["forward_training"] = normwise(fns["forward_training"]()[:r], ref_y)
    ref_dx = DY[:r] @ W
    if dx_gelu: ref_dx = torch.ops.aten.gelu_backward(ref_dx, PRE[:r], approximate="tanh")
    out["backward_dx"] = normwise(fns["backward_dx"]()[:r], ref_dx)
    got = fns["backward_dw"]()
    dw = got[0] if bias else got
    out["backward_dw"] = normwise(dw[:r], (DY.t() @ X)[:r])
    if bias: out["backward_dw"] = max(out["backward_dw"], normwise(got[1], DY.sum(0)))
    return out

only = [w for w in a.shapes.split(",") if w]
for name, k, n, gelu, bias, dx_gelu in SHAPES:
    if only and not any(w in name for w in only): continue
    err = errors(k, n, gelu, bias, dx_gelu)
    fns, _ = passes(k, n, gelu, bias, dx_gelu, a.m)
    for pass_ in fns:
        s = timed(fns[pass_], a.reps)
        print(json.dumps({"bench": "B.1", "side": "torch", "torch": torch.__version__,
                          "device": torch.cuda.get_device_name(), "shape": name, "m": a.m, "k": k, "n": n,
                          "pass": pass_, "ms": round(s * 1e3, 4), "tflops": round(2 * a.m * n * k / s / 1e12, 2),
                          "max_rel_err": float(f"{err[pass_]:.3e}"), "check_m": a.check_m, "reps": a.reps}), flush=True)
    del fns
    torch.cuda.empty_cache()
