"""PyTorch baseline for bench/risk.ts, written the straightforward way: torch.randn, exp, clamp, mean.

python3 bench/py/risk_torch.py [--paths 67108864] [--runs 1000] [--p99-paths 1000000] [--steady-warmup 0]
Prints one JSON line: paths/s for a European call at --paths (median of 5 after warm-up; the normals
are materialised in GPU memory, as a plain PyTorch user would write it) and p50/p99 latency of a
--p99-paths price end to end (.item() brings the mean back to the host) over --runs runs after 20
warm-up prices; with --steady-warmup W > 0, measured again after W more (p50SteadyMs, p99SteadyMs), as
bench/risk.ts measures Tandem at steady state.
"""
import argparse
import json
import math
import time

import torch


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--paths", type=int, default=1 << 26)
    ap.add_argument("--runs", type=int, default=1000)
    ap.add_argument("--p99-paths", type=int, default=1_000_000)
    ap.add_argument("--steady-warmup", type=int, default=0)
    a = ap.parse_args()
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    s0, k, r, vol, t = 100.0, 100.0, 0.05, 0.2, 1.0
    mu = (r - 0.5 * vol * vol) * t
    sig = vol * math.sqrt(t)
    disc = math.exp(-r * t)
    g = torch.Generator(device=dev)
    g.manual_seed(1234)

    def price(n: int) -> float:
        z = torch.randn(n, device=dev, generator=g)
        st = s0 * torch.exp(mu + sig * z)
        return disc * torch.clamp(st - k, min=0.0).mean().item()

    def sync() -> None:
        if dev == "cuda":
            torch.cuda.synchronize()

    for _ in range(3):
        price(a.paths)
    times = []
    p = 0.0
    for _ in range(5):
        sync()
        t0 = time.perf_counter()
        p = price(a.paths)
        sync()
        times.append(time.perf_counter() - t0)
    times.sort()
    def latencies(warmups: int) -> list:
        """Sorted ms of --runs prices after `warmups` untimed ones."""
        for _ in range(warmups):
            price(a.p99_paths)
        lat = []
        for _ in range(a.runs):
            t0 = time.perf_counter()
            price(a.p99_paths)
            lat.append((time.perf_counter() - t0) * 1e3)
        return sorted(lat)

    lat = latencies(20)
    q = lambda x, l=lat: l[min(len(l) - 1, math.ceil(x * len(l)) - 1)]
    steady = {}
    if a.steady_warmup > 0:
        lat2 = latencies(a.steady_warmup)
        steady = {"p50SteadyMs": q(0.5, lat2), "p99SteadyMs": q(0.99, lat2), "steadyWarmup": a.steady_warmup}
    print(json.dumps({
        "device": torch.cuda.get_device_name() if dev == "cuda" else "cpu",
        "torch": torch.__version__,
        "paths": a.paths,
        "seconds": times[2],
        "pathsPerSecond": a.paths / times[2],
        "price": p,
        "p50Ms": q(0.5),
        "p99Ms": q(0.99),
        "runs": a.runs,
        **steady,
    }))


if __name__ == "__main__":
    main()
