# PyTorch side of bench/serve-lane.ts gpt (B.7): GPT-2 124M offline forward (inference_mode, bf16
# weights, SDPA), the same architecture as gpt2_train.py, on 128-token inputs at the given batch sizes.
# Two heads: 'last' (next-token logits of the last position only, what the served scoring computes) and
# 'full' (logits at every position). One JSON line per batch size with the faster head as `ms`.
# usage: python3 gpt2_infer.py [1,64] [--once]
# --once: 3 warm-up passes and one timed 'last' pass per batch size, nothing printed but the line — for a
# profiler (scripts/gpu/kernel-times.sh runs it under Nsight Compute) to see a few passes only.
import json, sys, time, torch, torch.nn as nn, torch.nn.functional as F
C, L, H, V, T = 768, 12, 12, 50304, 1024
S = 128
class B(nn.Module):
    def __init__(s):
        super().__init__(); s.l1 = nn.LayerNorm(C); s.a = nn.Linear(C, 3 * C); s.p = nn.Linear(C, C)
        s.l2 = nn.LayerNorm(C); s.f = nn.Linear(C, 4 * C); s.q = nn.Linear(4 * C, C)
    def forward(s, x):
        b, t, _ = x.shape
        q, k, v = s.a(s.l1(x)).view(b, t, 3, H, C // H).permute(2, 0, 3, 1, 4)
        x = x + s.p(F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(b, t, C))
        return x + s.q(F.gelu(s.f(s.l2(x)), approximate='tanh'))
class G(nn.Module):
    def __init__(s):
        super().__init__(); s.e = nn.Embedding(V, C); s.pe = nn.Embedding(T, C)
        s.h = nn.Sequential(*[B() for _ in range(L)]); s.lf = nn.LayerNorm(C); s.lm = nn.Linear(C, V, bias=False)
        s.lm.weight = s.e.weight
    def forward(s, i, last):
        x = s.lf(s.h(s.e(i) + s.pe(torch.arange(i.shape[1], device=i.device))))
        return s.lm(x[:, -1]) if last else s.lm(x)
def timed(m, x, last, reps):
    with torch.inference_mode():
        for _ in range(10): m(x, last)
        torch.cuda.synchronize(); t0 = time.perf_counter()
        for _ in range(reps): m(x, last)
        torch.cuda.synchronize()
    return (time.perf_counter() - t0) / reps * 1e3
torch.manual_seed(1)
m = G().cuda().to(torch.bfloat16).eval()
once = '--once' in sys.argv
args = [a for a in sys.argv[1:] if not a.startswith('--')]
for n in [int(b) for b in (args[0] if args else '1,64').split(',')]:
    x = torch.randint(0, 50257, (n, S), device='cuda')
    if once:
        with torch.inference_mode():
            for _ in range(3): m(x, True)
            torch.cuda.synchronize(); t0 = time.perf_counter(); m(x, True); torch.cuda.synchronize()
        print(json.dumps({"side": "torch", "once": True, "batch": n, "ms": (time.perf_counter() - t0) * 1e3}), flush=True)
        continue
    last = timed(m, x, True, 100); full = timed(m, x, False, 100)
    ms = min(last, full)
    print(json.dumps({"side": "torch", "batch": n, "seq": S, "ms": ms, "lastMs": last, "fullMs": full,
                      "sequencesPerSecond": n / ms * 1e3, "torch": torch.__version__}), flush=True)
