"""Attention kernel lab: compiles .cu variants with nvcc (cubin, ptxas -v), runs them on torch tensors
through CuPy, checks them against torch's SDPA and its autograd grads, and times them beside SDPA.
Usage (see README.md): python3 bench/attention-lab/lab.py [--b 64] [--reps 20] [--only name,name]"""
import argparse, json, math, os, subprocess, sys
import numpy as np
import torch
import torch.nn.functional as F
import cupy

ap = argparse.ArgumentParser()
ap.add_argument("--b", type=int, default=64)
ap.add_argument("--h", type=int, default=12)
ap.add_argument("--t", type=int, default=1024)
ap.add_argument("--d", type=int, default=64)
ap.add_argument("--reps", type=int, default=20)
ap.add_argument("--only", default="")
ap.add_argument("--no-torch", action="store_true")
a = ap.parse_args()
B, H, T, d = a.b, a.h, a.t, a.d
C = H * d
HERE = os.path.dirname(os.path.abspath(__file__))
dev = torch.device("cuda")
torch.manual_seed(0)

# name, file, entry, kind, rows per block, threads, dynamic smem bytes; kinds:
#   fwd      (qkv, y, lse, T, H, scale_log2)
#   bwd      (dy, qkv, lse, delta, dqkv, T, H, scale, scale_log2): checks "checks" (default dk, dv)
#   bwd_acc  bwd's parameters + dq_acc (f32 [B, T, C]): dq accumulated by atomics, so dq_acc is zeroed
#            before every launch, inside the timed function; "pair" names the aux kernel (same parameters)
#            that converts dq_acc into dqkv, "prep" the aux kernel (dy, y, delta, dq_acc, T, H) that
#            computes delta and zeroes dq_acc in one pass (timed as the whole backward: prep + main + pair)
#   aux      launched only by the variants that name it
VARIANTS = json.load(open(os.path.join(HERE, "variants.json")))
only = set(x for x in a.only.split(",") if x)


_modules = {}


def build(v):
    """(function, ptxas lines of its entry) for variant v; one nvcc run per (file, flags)."""
    key = (v["file"], tuple(v.get("flags", [])))
    if key not in _modules:
        out = "/tmp/lab-%d.cubin" % len(_modules)
        cmd = ["nvcc", "-arch=sm_90", "-cubin", "-o", out, "-Xptxas", "-v", "-std=c++17", "-DHD=%d" % d,
               "-DIS_BF16=1", *v.get("flags", []), "-x", "cu", os.path.join(HERE, v["file"])]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            print(json.dumps({"variant": v["name"], "build": "failed", "stderr": r.stderr[-3000:]}), flush=True)
            _modules[key] = None
        else:
            _modules[key] = (cupy.RawModule(path=out), r.stderr)
    if _modules[key] is None:
        return None
    mod, stderr = _modules[key]
    # ptxas's lines for this variant's entry (a file may hold several kernels).
    info, mine = [], True
    for l in stderr.splitlines():
        if "Compiling entry function" in l:
            mine = ("'%s'" % v["entry"]) in l
        elif mine and ("registers" in l or "spill" in l):
            info.append(l.strip())
    fn = mod.get_function(v["entry"])
    if v.get("smem", 0) > 48 * 1024:
        fn.max_dynamic_shared_size_bytes = v["smem"]
    return fn, " ".join(info)


def timed(fn, reps):
    fn(); fn(); torch.cuda.synchronize()
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record()
    for _ in range(reps):
        fn()
    e.record(); torch.cuda.synchronize()
    return s.elapsed_time(e) / reps


P = lambda t: np.uint64(t.data_ptr())
qkv = (torch.rand(B, T, 3 * C, device=dev, dtype=torch.bfloat16) - 0.5)
dy = (torch.rand(B, T, C, device=dev, dtype=torch.bfloat16) - 0.5)
scale = 1.0 / math.sqrt(d)


def heads(x):
    return x.view(B, T, H, d).transpose(1, 2)


def sdpa(q):
    qq, kk, vv = q.split(C, dim=2)
    return F.scaled_dot_product_attention(heads(qq), heads(kk), heads(vv), is_causal=True)


qg = qkv.clone().requires_grad_(True)
yref = sdpa(qg)
yref.backward(dy.view(B, T, H, d).transpose(1, 2))
y_ref = yref.transpose(1, 2).reshape(B, T, C).detach()
dqkv_ref = qg.grad.detach()
flops = 4 * B * H * (T * T / 2) * d
res = {"B": B, "H": H, "T": T, "d": d}
if not a.no_torch:
    def tf():
        with torch.no_grad():
            sdpa(qkv)
    qg2 = qkv.clone().requires_grad_(True)
    dyh = dy.view(B, T, H, d).transpose(1, 2)
    def tfb():
        qg2.grad = None
        sdpa(qg2).backward(dyh)
    res["torch_fwd_ms"] = timed(tf, a.reps)
    res["torch_fwdbwd_ms"] = timed(tfb, a.reps)
    res["torch_bwd_ms"] = res["torch_fwdbwd_ms"] - res["torch_fwd_ms"]
    # Which SDPA backend the default picked: each one forced (those that cannot run this call say so).
    from torch.nn.attention import SDPBackend, sdpa_kernel
    for name in ("FLASH_ATTENTION", "CUDNN_ATTENTION", "EFFICIENT_ATTENTION"):
        try:
            with sdpa_kernel(getattr(SDPBackend, name)):
                res[f"torch_{name.lower()}_fwd_ms"] = timed(tf, a.reps)
                res[f"torch_{name.lower()}_fwdbwd_ms"] = timed(tfb, a.reps)
        except Exception as e:  # not built in, or not for these shapes
            res[f"torch_{name.lower()}"] = f"unavailable: {str(e)[:120]}"
    res["torch"] = torch.__version__
print(json.dumps(res), flush=True)

y = torch.empty(B, T, C, device=dev, dtype=torch.bfloat16)
lse = torch.empty(B, H, T, device=dev, dtype=torch.float32)
dqkv = torch.empty(B, T, 3 * C, device=dev, dtype=torch.bfloat16)
dq_acc = torch.empty(B, T, C, device=dev, dtype=torch.float32)
base_lse = None


def err(got, want):
    g, w = got.float(), want.float()
    bad = (~torch.isfinite(g)).sum().item()
    return {"max_abs": (g - w).abs().nan_to_num(1e9).max().item(), "ref_max": w.abs().max().item(), "nonfinite": bad}


fwd_ms = {}
bwd_parts = {}
for v in VARIANTS:
    if (only and v["name"] not in only) or v["kind"] == "aux":
        continue
    built = build(v)
    if built is None:
        continue
    fn, info = built
    rows, threads, smem = v["rows"], v.get("threads", 128), v.get("smem", 0)
    grid = (B * H, (T + rows - 1) // rows, 1)
    line = {"variant": v["name"], "kind": v["kind"], "ptxas": info}
    if v["kind"] == "fwd":
        launch = lambda: fn(grid, (threads, 1, 1), (P(qkv), P(y), P(lse), np.int32(T), np.int32(H),
                                                    np.float32(scale * math.log2(math.e))), shared_mem=smem)
        y.fill_(float("nan")); lse.fill_(float("nan"))
        launch(); torch.cuda.synchronize()
        line["y"] = err(y, y_ref)
        ms = timed(launch, a.reps)
        line.update(ms=ms, tflops=flops / ms / 1e9)
        if "torch_fwd_ms" in res:
            line["vs_torch"] = res["torch_fwd_ms"] / ms
        fwd_ms[v["name"]] = ms
        if base_lse is None and line["y"]["max_abs"] < 0.02:
            base_lse = lse.clone()
            y_ours = y.clone()
    else:
        if base_lse is None:
            print(json.dumps({"variant": v["name"], "skipped": "no forward lse"}), flush=True)
            continue
        delta = (dy.float() * y_ours.float()).view(B, T, H, d).sum(-1).transpose(1, 2).contiguous()
        args = (P(dy), P(qkv), P(base_lse), P(delta), P(dqkv), np.int32(T), np.int32(H), np.float32(scale),
                np.float32(scale * math.log2(math.e)))
        if v["kind"] == "bwd_acc":  # dq accumulated in f32 (dq_acc) by the main kernel; "pair" converts it
            args = args + (P(dq_acc),)
        launch = lambda: fn(grid, (threads, 1, 1), args, shared_mem=smem)
        pre = prep = plaunch = None
        if v["kind"] == "bwd_acc":
            pre = lambda: dq_acc.zero_()
        if v.get("pair"):
            pv = next(x for x in VARIANTS if x["name"] == v["pair"])
            pfn, _ = build(pv)
            pgrid = (B * H, (T + pv["rows"] - 1) // pv["rows"], 1)
            plaunch = lambda: pfn(pgrid, (pv.get("threads", 128), 1, 1), args, shared_mem=pv.get("smem", 0))
        if v.get("prep"):
            rv = next(x for x in VARIANTS if x["name"] == v["prep"])
            rfn, _ = build(rv)
            rgrid = (B * H, (T + rv["rows"] - 1) // rv["rows"], 1)
            rargs = (P(dy), P(y_ours), P(delta), P(dq_acc), np.int32(T), np.int32(H))
            prep = lambda: rfn(rgrid, (rv.get("threads", 128), 1, 1), rargs, shared_mem=rv.get("smem", 0))
        dqkv.fill_(float("nan"))
        if prep:  # the prep kernel's delta and zeroed dq_acc feed the checked launch
            want_delta = delta.clone()
            delta.fill_(float("nan")); dq_acc.fill_(float("nan"))
            prep()
        elif pre:
            pre()
        launch()
        if plaunch:
            plaunch()
        torch.cuda.synchronize()
        parts = {"dq": dqkv[:, :, :C], "dk": dqkv[:, :, C:2 * C], "dv": dqkv[:, :, 2 * C:]}
        for k in v.get("checks", ["dk", "dv"]):
            line[k] = err(parts[k], {"dq": dqkv_ref[:, :, :C], "dk": dqkv_ref[:, :, C:2 * C], "dv": dqkv_ref[:, :, 2 * C:]}[k])
        if prep:
            line["delta"] = err(delta, want_delta)
        if pre:
            def both():
                pre(); launch()
            ms = timed(both, a.reps)
        else:
            ms = timed(launch, a.reps)
        line["ms"] = ms
        if pre:  # the kernel alone (dq_acc keeps accumulating: harmless for the time)
            line["ms_kernel"] = timed(launch, a.reps)
        if plaunch:
            def three():
                if pre:
                    pre()
                launch(); plaunch()
            line["ms_with_pair"] = timed(three, a.reps)
        if prep and plaunch:
            def full():
                prep(); launch(); plaunch()
            line["ms_full"] = timed(full, a.reps)
        bwd_parts[v["name"]] = line.get("ms_full", line.get("ms_with_pair", ms))
    print(json.dumps(line), flush=True)

# Summary: forward and backward times beside SDPA's default and flash backends (backward = fwd+bwd - fwd);
# the two-kernel backward is dkdvN + dqN (delta given), the single pass prep + main + convert.
summ = {"summary": True}
ref_f = res.get("torch_flash_attention_fwd_ms", res.get("torch_fwd_ms"))
ref_fb = res.get("torch_flash_attention_fwdbwd_ms", res.get("torch_fwdbwd_ms"))
for n, ms in fwd_ms.items():
    summ[f"{n}_ms"] = round(ms, 4)
    if ref_f:
        summ[f"{n}_x_flash"] = round(ref_f / ms, 3)
bwd = {}
for n, ms in bwd_parts.items():
    if n.startswith("dkdv") and ("dq" + n[4:]) in bwd_parts:
        bwd[n + "+dq" + n[4:]] = ms + bwd_parts["dq" + n[4:]]
    elif not n.startswith("dq") and not n.startswith("dkdv"):
        bwd[n] = ms
for n, ms in bwd.items():
    summ[f"bwd_{n}_ms"] = round(ms, 4)
    if ref_f and ref_fb:
        summ[f"bwd_{n}_x_flash"] = round((ref_fb - ref_f) / ms, 3)
print(json.dumps(summ), flush=True)
