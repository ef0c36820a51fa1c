"""Which kernels PyTorch runs for the bf16 Linear forwards at GPT-2 shapes (M = 65536), and their device
times, from torch.profiler: the names to compare with what ncu shows for Tandem's (bench/RESULTS.md, the
twenty-third session: qkv's F.linear runs nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_bias_TNT).

    python3 bench/torch/linear_kernels.py
"""
import torch, torch.nn.functional as F
from torch.profiler import profile, ProfilerActivity
dev = "cuda"
def rand(*s): return (torch.rand(*s, device=dev) * 2 - 1).to(torch.bfloat16)
M = 65536
for name, k, n, gelu in [("qkv", 768, 2304, False), ("fc", 768, 3072, True), ("proj", 3072, 768, False)]:
    x, w, b = rand(M, k), rand(n, k), rand(n)
    fns = {"F.linear": lambda: F.linear(x, w, b), "mm": lambda: x @ w.t(), "addmm": lambda: torch.addmm(b, x, w.t())}
    if gelu: fns["addmm_gelu"] = lambda: torch._addmm_activation(b, x, w.t(), use_gelu=True)
    for label, fn in fns.items():
        for _ in range(3): fn()
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as p:
            for _ in range(10): fn()
            torch.cuda.synchronize()
        for e in p.key_averages():
            if e.device_type.name == "CUDA" or getattr(e, "self_device_time_total", 0) > 0:
                t = getattr(e, "device_time", None) or getattr(e, "cuda_time", 0)
                print(f"{name:5s} {label:10s} {e.count:3d}x {t / 1000:.4f} ms  {e.key[:150]}")
