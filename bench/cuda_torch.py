"""PyTorch baselines for bench/cuda-bench.ts, printed as one JSON line (same machine, same run)."""
import json, sys, torch

n = int(sys.argv[1]) if len(sys.argv) > 1 else 8192
out = {"torch": torch.__version__}
dev = torch.device("cuda")

def timed(fn, reps):
    fn(); torch.cuda.synchronize()
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record()
    for _ in range(reps): fn()
    e.record(); torch.cuda.synchronize()
    return s.elapsed_time(e) / 1000 / reps

for name, dtype, tf32 in [("bf16", torch.bfloat16, False), ("f32", torch.float32, False), ("tf32", torch.float32, True)]:
    torch.backends.cuda.matmul.allow_tf32 = tf32
    a = torch.rand(n, n, device=dev, dtype=dtype) - 0.5
    b = torch.rand(n, n, device=dev, dtype=dtype) - 0.5
    reps = {"bf16": 60, "tf32": 30, "f32": 8}[name]  # as many as bench/cuda-bench.ts runs
    t = timed(lambda: a @ b, reps)
    out["gemm_" + name] = 2 * n**3 / t
    del a, b

out["preferred_blas"] = str(torch.backends.cuda.preferred_blas_library())
for lib in ("cublas", "cublaslt"):
    try:
        torch.backends.cuda.preferred_blas_library(lib)
        a = torch.rand(n, n, device=dev, dtype=torch.bfloat16) - 0.5
        b = torch.rand(n, n, device=dev, dtype=torch.bfloat16) - 0.5
        out["gemm_bf16_" + lib] = 2 * n**3 / timed(lambda: a @ b, 60)
        del a, b
    except Exception as e:  # noqa: BLE001 - report, do not fail the baseline
        out["gemm_bf16_" + lib + "_error"] = str(e)[:200]

size = 1 << 30
h = torch.empty(size, dtype=torch.uint8).pin_memory()
d = torch.empty(size, dtype=torch.uint8, device=dev)
out["h2d_pinned"] = size / timed(lambda: d.copy_(h, non_blocking=True), 5)
out["d2h_pinned"] = size / timed(lambda: h.copy_(d, non_blocking=True), 5)
print(json.dumps(out))
