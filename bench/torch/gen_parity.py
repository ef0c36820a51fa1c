"""PyTorch side of the GPT inference parity check (bench/gen-parity.ts is Tandem's side).

Loads the weights gpt_parity.py `init` wrote (nanoGPT names), in f32 (TF32 off) or pure bf16, and writes
into DIR:
  score-tokens.i32        B x T random token ids (seeded), the scoring batch
  score-PREC.f32          the logits after each sequence's last token, B x V
  greedy-PREC.json        {"prompts": [[...]], "tokens": [[...]], "margins": [[...]]}: greedy
                          continuations of N tokens by full forwards (no cache: the plainest
                          reference), and each step's top-1 minus top-2 logit
usage: gen_parity.py W.safetensors DIR PREC L H C CTX V VP [B T PROMPTS PROMPT_LEN NEW SEED]
"""
import json
import os
import sys

import numpy as np
import torch

from gpt_parity import build
from safetensors.torch import load_file

torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False


def logits_of(m, idx):
    x = m.wte(idx) + m.wpe(torch.arange(idx.shape[1], device=idx.device))
    for b in m.h:
        x = b(x)
    return m.ln_f(x) @ m.wte.weight.t()


def main():
    w, out, prec = sys.argv[1:4]
    L, H, C, ctx, V, VP = map(int, sys.argv[4:10])
    B, T, P, PL, NEW, seed = (list(map(int, sys.argv[10:16])) + [8, 128, 4, 16, 32, 1234][len(sys.argv[10:16]):])
    os.makedirs(out, exist_ok=True)
    dtype = {"f32": torch.float32, "bf16": torch.bfloat16}[prec]
    m = build(L, H, C, ctx, V, VP)
    m.load_state_dict(load_file(w))
    m = m.cuda().to(dtype).eval()
    rng = np.random.RandomState(seed)
    tokens = rng.randint(0, V, size=(B, T)).astype(np.int32)
    prompts = rng.randint(0, V, size=(P, PL)).astype(np.int32)
    tokens.tofile(os.path.join(out, "score-tokens.i32"))
    with torch.no_grad():
        idx = torch.from_numpy(tokens.astype(np.int64)).cuda()
        last = logits_of(m, idx)[:, -1, :V].float().cpu().numpy()
        last.tofile(os.path.join(out, f"score-{prec}.f32"))
        seqs = torch.from_numpy(prompts.astype(np.int64)).cuda()
        margins = []  # per step, per prompt: top-1 minus top-2 logit (a near tie may flip in bf16)
        for _ in range(NEW):
            lg = logits_of(m, seqs)[:, -1, :V].float()
            top2 = lg.topk(2, dim=-1).values
            margins.append((top2[:, 0] - top2[:, 1]).cpu().tolist())
            nxt = lg.argmax(dim=-1, keepdim=True)
            seqs = torch.cat([seqs, nxt], dim=1)
    gen = seqs[:, PL:].cpu().tolist()
    with open(os.path.join(out, f"greedy-{prec}.json"), "w") as f:
        json.dump({"prompts": prompts.tolist(), "tokens": gen,
                   "margins": [[row[i] for row in margins] for i in range(P)]}, f)
    print(json.dumps({"prec": prec, "batch": B, "seq": T, "prompts": P, "new": NEW, "maxAbsLogit": float(np.abs(last).max())}))


if __name__ == "__main__":
    main()
