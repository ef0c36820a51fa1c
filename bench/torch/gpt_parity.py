"""PyTorch side of the GPT parity check (bench/nn-parity.ts is Tandem's side).

init:  writes the initial weights of a GPT (nanoGPT layout and names, seeded) as safetensors.
train: trains it on the same in-order token batches as Tandem (window i*B+b of T tokens), AdamW
       (betas 0.9/0.95, eps 1e-8, weight decay 0.1 on matrices only), constant lr, clip 1.0,
       and prints one JSON line per step {"step", "loss", "norm"}, then {"val": mean loss}.
Modes: f32 (TF32 off), bf16 (autocast, fp32 params: PyTorch's AMP), fp16 (autocast + GradScaler; the
optional last argument lists steps whose loss is multiplied by 1e6 to force an overflow).

usage: gpt_parity.py init  OUT.safetensors  L H C CTX V VP SEED
       gpt_parity.py same  A.safetensors B.safetensors     (every tensor identical: dtype, shape, bits)
       gpt_parity.py train W.safetensors TOKENS.u16 VAL.u16 L H C CTX V VP STEPS B T LR MODE VALBATCHES [INJECT]
"""
import json
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from safetensors.torch import load_file, save_file

torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False


class Block(nn.Module):
    def __init__(self, C, H):
        super().__init__()
        self.H = H
        self.ln_1 = nn.LayerNorm(C)
        self.attn = nn.Module()
        self.attn.c_attn = nn.Linear(C, 3 * C)
        self.attn.c_proj = nn.Linear(C, C)
        self.ln_2 = nn.LayerNorm(C)
        self.mlp = nn.Module()
        self.mlp.c_fc = nn.Linear(C, 4 * C)
        self.mlp.c_proj = nn.Linear(4 * C, C)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.attn.c_attn(self.ln_1(x)).split(C, dim=2)
        q, k, v = (t.view(B, T, self.H, C // self.H).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(B, T, C)
        x = x + self.attn.c_proj(y)
        return x + self.mlp.c_proj(F.gelu(self.mlp.c_fc(self.ln_2(x)), approximate="tanh"))


class GPT(nn.Module):
    def __init__(self, L, H, C, ctx, V, VP):
        super().__init__()
        self.V = V
        self.wte = nn.Embedding(VP, C)
        self.wpe = nn.Embedding(ctx, C)
        self.h = nn.ModuleList([Block(C, H) for _ in range(L)])
        self.ln_f = nn.LayerNorm(C)

    def forward(self, idx, targets):
        B, T = idx.shape
        x = self.wte(idx) + self.wpe(torch.arange(T, device=idx.device))
        for b in self.h:
            x = b(x)
        logits = self.ln_f(x) @ self.wte.weight.t()
        return F.cross_entropy(logits[..., : self.V].float().reshape(-1, self.V), targets.reshape(-1))


def build(L, H, C, ctx, V, VP):
    m = GPT(L, H, C, ctx, V, VP)
    for name, p in m.named_parameters():
        if name.endswith("c_proj.weight"):
            nn.init.normal_(p, 0.0, 0.02 / (2 * L) ** 0.5)
        elif p.dim() >= 2:
            nn.init.normal_(p, 0.0, 0.02)
        elif name.endswith("ln_1.weight") or name.endswith("ln_2.weight") or name == "ln_f.weight":
            nn.init.ones_(p)
        else:
            nn.init.zeros_(p)
    return m


def batches(tokens, B, T, count):
    for i in range(count):
        x = np.stack([tokens[(i * B + b) * T : (i * B + b) * T + T] for b in range(B)]).astype(np.int64)
        y = np.stack([tokens[(i * B + b) * T + 1 : (i * B + b) * T + T + 1] for b in range(B)]).astype(np.int64)
        yield torch.from_numpy(x).cuda(), torch.from_numpy(y).cuda()


def main():
    cmd = sys.argv[1]
    if cmd == "init":
        out, L, H, C, ctx, V, VP, seed = sys.argv[2], *map(int, sys.argv[3:10])
        torch.manual_seed(seed)
        m = build(L, H, C, ctx, V, VP)
        save_file({k: v.contiguous() for k, v in m.state_dict().items()}, out)
        return
    if cmd == "same":
        a, b = load_file(sys.argv[2]), load_file(sys.argv[3])
        diff = [k for k in a if k not in b or a[k].dtype != b[k].dtype or not torch.equal(a[k], b[k])]
        extra = [k for k in b if k not in a]
        print(json.dumps({"tensors": len(a), "identical": not diff and not extra, "differ": diff[:5], "extra": extra[:5]}))
        return
    w, tok, val = sys.argv[2:5]
    L, H, C, ctx, V, VP, steps, B, T = map(int, sys.argv[5:14])
    lr, mode, valb = float(sys.argv[14]), sys.argv[15], int(sys.argv[16])
    # fp16: GradScaler with its defaults; steps listed in INJECT multiply the loss by 1e6 (overflow).
    inject = {int(x) for x in (sys.argv[17].split(",") if len(sys.argv) > 17 and sys.argv[17] else [])}
    scaler = torch.amp.GradScaler("cuda") if mode == "fp16" else None
    m = build(L, H, C, ctx, V, VP).cuda()
    m.load_state_dict({k: v.cuda() for k, v in load_file(w).items()})
    decay = [p for p in m.parameters() if p.dim() >= 2]
    rest = [p for p in m.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW(
        [{"params": decay, "weight_decay": 0.1}, {"params": rest, "weight_decay": 0.0}],
        lr=lr, betas=(0.9, 0.95), eps=1e-8, fused=False, foreach=False,
    )
    tokens = np.fromfile(tok, dtype=np.uint16)
    amp = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(mode)
    for i, (x, y) in enumerate(batches(tokens, B, T, steps)):
        with torch.autocast("cuda", amp or torch.float32, enabled=amp is not None):
            loss = m(x, y)
        if scaler is None:
            loss.backward()
            norm = torch.nn.utils.clip_grad_norm_(m.parameters(), 1.0)
            opt.step()
            line = {"step": i + 1, "loss": loss.item(), "norm": norm.item()}
        else:
            used = scaler.get_scale()
            scaler.scale(loss * (1e6 if i + 1 in inject else 1.0)).backward()
            scaler.unscale_(opt)
            norm = torch.nn.utils.clip_grad_norm_(m.parameters(), 1.0)
            scaler.step(opt)
            scaler.update()
            line = {"step": i + 1, "loss": loss.item(), "norm": norm.item(), "scale": used, "skipped": scaler.get_scale() < used}
        opt.zero_grad(set_to_none=True)
        print(json.dumps(line), flush=True)
    vt = np.fromfile(val, dtype=np.uint16)
    with torch.no_grad(), torch.autocast("cuda", amp or torch.float32, enabled=amp is not None):
        vals = [m(x, y).item() for x, y in batches(vt, B, T, valb)]
    print(json.dumps({"val": sum(vals) / len(vals)}), flush=True)


if __name__ == "__main__":
    main()
