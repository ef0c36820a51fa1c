"""PyTorch side of bench/nn-attention.ts: causal SDPA on GPT-2's packed qkv [B, T, 3C] in bf16, forward
and forward+backward (gradient into qkv), CUDA-event timed over back-to-back runs. One JSON line per batch:
fwd_ms / fwdbwd_ms are SDPA as dispatched (on Hopper with PyTorch 2.11 that is cuDNN's wgmma kernels), and
"backends" times each backend forced with sdpa_kernel: flash (FlashAttention-2), cudnn, efficient.
Usage: python bench/torch/nn_attention.py [--batch 64,8] [--heads 12] [--seq 1024] [--dim 64] [--reps 20]"""
import argparse, json, torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

ap = argparse.ArgumentParser()
ap.add_argument("--batch", default="64,8")
ap.add_argument("--heads", type=int, default=12)
ap.add_argument("--seq", type=int, default=1024)
ap.add_argument("--dim", type=int, default=64)
ap.add_argument("--reps", type=int, default=20)
a = ap.parse_args()
H, T, d = a.heads, a.seq, a.dim
C = H * d
dev = torch.device("cuda")


def timed(fn, reps):
    fn(); fn(); torch.cuda.synchronize()
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record()
    for _ in range(reps):
        fn()
    e.record(); torch.cuda.synchronize()
    return s.elapsed_time(e) / reps


for B in [int(b) for b in a.batch.split(",")]:
    qkv = (torch.rand(B, T, 3 * C, device=dev, dtype=torch.bfloat16) - 0.5).requires_grad_(True)
    dy = torch.rand(B, H, T, d, device=dev, dtype=torch.bfloat16) - 0.5

    def heads(x):  # [B, T, C] view -> [B, H, T, d], as GPT-2 / llm.c do
        return x.view(B, T, H, d).transpose(1, 2)

    def forward():
        q, k, v = qkv.split(C, dim=2)
        return F.scaled_dot_product_attention(heads(q), heads(k), heads(v), is_causal=True)

    def fwd():
        with torch.no_grad():
            forward()

    def fwd_bwd():
        qkv.grad = None
        forward().backward(dy)

    fwd_ms = timed(fwd, a.reps)
    fwdbwd_ms = timed(fwd_bwd, a.reps)
    backends = {}
    for name, backend in [("flash", SDPBackend.FLASH_ATTENTION), ("cudnn", SDPBackend.CUDNN_ATTENTION),
                          ("efficient", SDPBackend.EFFICIENT_ATTENTION)]:
        try:
            with sdpa_kernel(backend):
                backends[name] = {"fwd_ms": timed(fwd, a.reps), "fwdbwd_ms": timed(fwd_bwd, a.reps)}
        except RuntimeError as e:  # a backend that cannot take this shape or GPU
            backends[name] = {"error": str(e).splitlines()[0][:200]}
    flops = 4 * B * H * (T * T / 2) * d
    print(json.dumps({
        "bench": "nn-attention", "side": "torch", "torch": torch.__version__,
        "device": torch.cuda.get_device_name(), "B": B, "H": H, "T": T, "d": d, "dtype": "bf16",
        "reps": a.reps, "fwd_ms": fwd_ms, "fwdbwd_ms": fwdbwd_ms,
        "fwd_tflops": flops / (fwd_ms * 1e-3) / 1e12, "fwdbwd_tflops": 3.5 * flops / (fwdbwd_ms * 1e-3) / 1e12,
        "backends": backends,
    }), flush=True)
    del qkv, dy
    torch.cuda.empty_cache()
