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
    reps = 20 if name != "f32" else 5
    t = timed(lambda: a @ b, reps)
    out["gemm_" + name] = 2 * n**3 / t
    del a, b

size = 1 << 30
h = torch.empty(size, dtype=torch.uint8).pin_memory()
d = torch.empty(size, dtype=torch.uint8, device=dev)
out["h2d_pinned"] = size / timed(lambda: d.copy_(h, non_blocking=True), 5)
out["d2h_pinned"] = size / timed(lambda: h.copy_(d, non_blocking=True), 5)
print(json.dumps(out))
