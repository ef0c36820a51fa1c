"""PyTorch side of bench/conv.ts: the Fashion-MNIST CNN's conv and pool layers on CUDA, one JSON line
per (op, dtype, batch) with the median milliseconds per call over 5 runs of `reps` calls.
    python3 bench/torch/conv.py [batch=128] [reps=50]
conv2d_backward is aten.convolution_backward (dx, dw, db), pool2d_backward max_pool2d_with_indices_backward
(the forward's indices computed outside the timing), as the Tandem ops compute the same things.
"""
import json
import sys
import time

import torch
import torch.nn.functional as F

B = int(sys.argv[1]) if len(sys.argv) > 1 else 128
REPS = int(sys.argv[2]) if len(sys.argv) > 2 else 50
dev = "cuda"


def median_ms(fn):
    fn()
    torch.cuda.synchronize()
    runs = []
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(REPS):
            fn()
        torch.cuda.synchronize()
        runs.append((time.perf_counter() - t0) * 1000 / REPS)
    return sorted(runs)[2]


def emit(op, layer, dtype, ms):
    print(json.dumps({"side": "torch", "device": "cuda", "op": op, "layer": layer, "dtype": dtype, "batch": B, "ms": ms}), flush=True)


for name, dtype in (("f32", torch.float32), ("bf16", torch.bfloat16)):
    for c, o, hw in ((1, 32, 28), (32, 64, 14)):
        layer = f"{c}->{o} {hw}x{hw}"
        x = torch.randn(B, c, hw, hw, device=dev, dtype=dtype)
        w = torch.randn(o, c, 3, 3, device=dev, dtype=dtype)
        b = torch.randn(o, device=dev, dtype=dtype)
        y = F.conv2d(x, w, b, padding=1)
        dy = torch.randn_like(y)
        emit("conv2d", layer, name, median_ms(lambda: F.conv2d(x, w, b, padding=1)))
        emit(
            "conv2d_backward",
            layer,
            name,
            median_ms(
                lambda: torch.ops.aten.convolution_backward(
                    dy, x, w, [o], [1, 1], [1, 1], [1, 1], False, [0, 0], 1, [True, True, True]
                )
            ),
        )
        play = f"max2 {o}x{hw}x{hw}"
        pooled, idx = F.max_pool2d(y, 2, return_indices=True)
        dp = torch.randn_like(pooled)
        emit("pool2d", play, name, median_ms(lambda: F.max_pool2d(y, 2)))
        emit(
            "pool2d_backward",
            play,
            name,
            median_ms(lambda: torch.ops.aten.max_pool2d_with_indices_backward(dp, y, [2, 2], [2, 2], [0, 0], [1, 1], False, idx)),
        )
