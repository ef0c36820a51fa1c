"""B.8 baseline: PyTorch static batching of the same generation requests (bench/serve-generate.ts writes
them): batches of 64 requests in arrival order, each run with a KV cache (preallocated per layer) until
its longest request has its tokens (padding to the longest), greedy, eager PyTorch with SDPA, pure bf16
(or f32) weights from the safetensors file gpt_parity.py `init` wrote. All requests arrive at t = 0:
a request's time to first token is when its batch's prefill has produced it.
Prints one JSON line {tokPerSec, ttftP50Ms, ttftP99Ms, wallS, tokens, batches}.
usage: static_generate.py W.safetensors REQUESTS.json [PREC [BATCH [L H C CTX V VP]]]
"""
import json
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

from gpt_parity import build
from safetensors.torch import load_file

torch.backends.cuda.matmul.allow_tf32 = False
# cuDNN's SDPA builds an execution plan for each new shape, and a decode step's key length (and the cache
# stride, per batch) is new every step: with it on, a decode step took 52-58 ms on an H100 and 3.3 ms in a
# batch whose shapes an earlier batch had planned. Flash / memory-efficient SDPA need no plans.
torch.backends.cuda.enable_cudnn_sdp(False)
# Each batch's mean decode-step time (ms), reported beside the throughput.
STEP_MS = []


def heads(t, B, T, H):
    return t.view(B, T, H, -1).transpose(1, 2)


@torch.no_grad()
def generate(m, H, V, prompts, new):
    """Greedy continuation of equal-length prompts until the longest request is done; returns the
    time (perf_counter) the first tokens were ready."""
    B, T0 = prompts.shape
    N = int(max(new))
    C = m.wte.weight.shape[1]
    d = C // H
    dev, dt = m.wte.weight.device, m.wte.weight.dtype
    kc = [torch.empty(B, H, T0 + N, d, device=dev, dtype=dt) for _ in m.h]
    vc = [torch.empty(B, H, T0 + N, d, device=dev, dtype=dt) for _ in m.h]
    x = m.wte(prompts) + m.wpe(torch.arange(T0, device=dev))
    for l, blk in enumerate(m.h):
        q, k, v = (heads(t, B, T0, H) for t in blk.attn.c_attn(blk.ln_1(x)).split(C, dim=2))
        kc[l][:, :, :T0] = k
        vc[l][:, :, :T0] = v
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(B, T0, C)
        x = x + blk.attn.c_proj(y)
        x = x + blk.mlp.c_proj(F.gelu(blk.mlp.c_fc(blk.ln_2(x)), approximate="tanh"))
    nxt = (m.ln_f(x[:, -1]) @ m.wte.weight.t())[:, :V].argmax(dim=-1)
    torch.cuda.synchronize()
    first = time.perf_counter()
    for step in range(1, N):
        pos = T0 + step - 1
        x = (m.wte(nxt) + m.wpe.weight[pos]).unsqueeze(1)
        for l, blk in enumerate(m.h):
            q, k, v = (heads(t, B, 1, H) for t in blk.attn.c_attn(blk.ln_1(x)).split(C, dim=2))
            kc[l][:, :, pos : pos + 1] = k
            vc[l][:, :, pos : pos + 1] = v
            y = F.scaled_dot_product_attention(q, kc[l][:, :, : pos + 1], vc[l][:, :, : pos + 1])
            x = x + blk.attn.c_proj(y.transpose(1, 2).reshape(B, 1, C))
            x = x + blk.mlp.c_proj(F.gelu(blk.mlp.c_fc(blk.ln_2(x)), approximate="tanh"))
        nxt = (m.ln_f(x[:, -1]) @ m.wte.weight.t())[:, :V].argmax(dim=-1)
    torch.cuda.synchronize()
    STEP_MS.append((time.perf_counter() - first) * 1e3 / max(1, N - 1))
    return first


def main():
    w, reqfile = sys.argv[1:3]
    prec = sys.argv[3] if len(sys.argv) > 3 else "bf16"
    batch = int(sys.argv[4]) if len(sys.argv) > 4 else 64
    L, H, C, ctx, V, VP = map(int, sys.argv[5:11]) if len(sys.argv) > 10 else (12, 12, 768, 1024, 50257, 50304)
    m = build(L, H, C, ctx, V, VP)
    m.load_state_dict(load_file(w))
    m = m.cuda().to({"bf16": torch.bfloat16, "f32": torch.float32}[prec]).eval()
    with open(reqfile) as f:
        reqs = json.load(f)
    prompts = torch.tensor(reqs["prompts"], dtype=torch.long, device="cuda")
    new = np.array(reqs["maxNew"])
    generate(m, H, V, prompts[:batch], np.minimum(new[:batch], 8))  # warm-up
    t0 = time.perf_counter()
    ttft = np.zeros(len(new))
    for s in range(0, len(new), batch):
        first = generate(m, H, V, prompts[s : s + batch], new[s : s + batch])
        ttft[s : s + batch] = first - t0
    wall = time.perf_counter() - t0
    tokens = int(new.sum())
    print(json.dumps({
        "system": "pytorch-static", "precision": prec, "batch": batch, "requests": len(new), "tokens": tokens,
        "wallS": wall, "tokPerSec": tokens / wall,
        "ttftP50Ms": float(np.percentile(ttft, 50) * 1e3), "ttftP99Ms": float(np.percentile(ttft, 99) * 1e3),
        "batches": (len(new) + batch - 1) // batch,
        "decodeStepMs": [round(x, 3) for x in STEP_MS[1:]],
    }), flush=True)


if __name__ == "__main__":
    main()
