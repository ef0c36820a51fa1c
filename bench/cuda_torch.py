"""PyTorch baselines for bench/cuda-bench.ts, printed as one JSON line (same machine, same run)."""
import json, sys, time, torch

n = int(sys.argv[1]) if len(sys.argv) > 1 else 8192
parts = sys.argv[2].split(",") if len(sys.argv) > 2 else ["gemm", "copies", "pipeline"]
out = {"torch": torch.__version__}
dev = torch.device("cuda")

def timed(fn, reps):
    fn(); torch.cuda.synchronize()
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record()
    for _ in range(reps): fn()
    e.record(); torch.cuda.synchronize()
    return s.elapsed_time(e) / 1000 / reps

def pipeline():
    """The same 16-chunk pipeline as Tandem's (64 MiB f32 chunks: pinned host -> GPU, sin in place,
    GPU -> pinned host) on three streams chained by events on the GPU: the hardware's best case."""
    chunks, elems = 16, (64 << 20) // 4
    hin = [torch.rand(elems).pin_memory() for _ in range(chunks)]
    hout = [torch.empty(elems).pin_memory() for _ in range(chunks)]
    dbuf = [torch.empty(elems, device=dev) for _ in range(chunks)]
    up, comp, down = torch.cuda.Stream(), torch.cuda.Stream(), torch.cuda.Stream()

    def run(stages):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for i in range(chunks):
            if "h2d" in stages:
                with torch.cuda.stream(up):
                    dbuf[i].copy_(hin[i], non_blocking=True)
                    e = torch.cuda.Event(); e.record(up)
                comp.wait_event(e)
            if "kernel" in stages:
                with torch.cuda.stream(comp):
                    dbuf[i].sin_()
                    e = torch.cuda.Event(); e.record(comp)
                down.wait_event(e)
            if "d2h" in stages:
                with torch.cuda.stream(down):
                    hout[i].copy_(dbuf[i], non_blocking=True)
        torch.cuda.synchronize()
        return (time.perf_counter() - t0) * 1e3

    run(("h2d", "kernel", "d2h"))
    out["pipeline_h2d_ms"] = min(run(("h2d",)) for _ in range(3))
    out["pipeline_kernel_ms"] = min(run(("kernel",)) for _ in range(3))
    out["pipeline_d2h_ms"] = min(run(("d2h",)) for _ in range(3))
    out["pipeline_total_ms"] = min(run(("h2d", "kernel", "d2h")) for _ in range(3))
    del hin, hout, dbuf

if "pipeline" in parts:
    pipeline()

for name, dtype, tf32 in ([] if "gemm" not in parts else [("bf16", torch.bfloat16, False), ("f32", torch.float32, False), ("tf32", torch.float32, True)]):
    torch.backends.cuda.matmul.allow_tf32 = tf32
    a = torch.rand(n, n, device=dev, dtype=dtype) - 0.5
    b = torch.rand(n, n, device=dev, dtype=dtype) - 0.5
    reps = {"bf16": 60, "tf32": 30, "f32": 8}[name]  # as many as bench/cuda-bench.ts runs
    t = timed(lambda: a @ b, reps)
    out["gemm_" + name] = 2 * n**3 / t
    del a, b

out["preferred_blas"] = str(torch.backends.cuda.preferred_blas_library())
for lib in ("cublas", "cublaslt") if "gemm" in parts else ():
    try:
        torch.backends.cuda.preferred_blas_library(lib)
        a = torch.rand(n, n, device=dev, dtype=torch.bfloat16) - 0.5
        b = torch.rand(n, n, device=dev, dtype=torch.bfloat16) - 0.5
        out["gemm_bf16_" + lib] = 2 * n**3 / timed(lambda: a @ b, 60)
        del a, b
    except Exception as e:  # noqa: BLE001 - report, do not fail the baseline
        out["gemm_bf16_" + lib + "_error"] = str(e)[:200]

size = 1 << 30
if "copies" not in parts:
    print(json.dumps(out))
    sys.exit(0)
h = torch.empty(size, dtype=torch.uint8).pin_memory()
d = torch.empty(size, dtype=torch.uint8, device=dev)
out["h2d_pinned"] = size / timed(lambda: d.copy_(h, non_blocking=True), 5)
out["d2h_pinned"] = size / timed(lambda: h.copy_(d, non_blocking=True), 5)
print(json.dumps(out))
