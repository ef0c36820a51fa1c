"""PyTorch side of B.11 (bench/fashion.ts is Tandem's side, run in the same device call).

The same networks as src/nn/models/classifiers.ts (MLP 784-512-512-10 with ReLU; CNN conv 1->32 3x3 pad 1,
ReLU, max-pool 2, conv 32->64, ReLU, max-pool 2, fc 3136->128, ReLU, fc 128->10), eager mode with bf16
autocast (fp32 parameters: PyTorch's AMP; --precision f32 for none), started from the initial weights
Tandem wrote (`node dist/bench/fashion.js prepare --out DIR`: DIR/{mlp,cnn}-init.safetensors, bf16, loaded
as fp32, so both sides start from the same numbers), trained on the same batches (DIR/order.u32: epochs x
steps x batch image indices, u32 LE, Tandem's seeded shuffle), with the same hyperparameters: AdamW
(lr 5e-3 MLP, 2e-3 CNN: LR below, bench/fashion.ts's defaults), betas 0.9/0.999, eps 1e-8, weight decay
0.01 on every parameter (fused; --no-fused for the per-parameter loop), cosine decay from lr to lr/10 over
the whole run, no clipping.

The whole training set sits on the device and each batch is gathered there (the strongest eager
baseline: no host copies in the loop); losses stay on the device and are read outside the clock.

Timing rule, the same as bench/fashion.ts: the clock starts at the first real step, after loading the
data, initialising CUDA, moving the data set to the device and one warm-up (2 steps on a throw-away copy
of the model and optimizer, one evaluation batch), reported as startupSeconds. --evals-per-epoch times an
epoch (after floor(k * steps / evals) steps) the device is synchronised and the clock stops while the
10,000 test images are evaluated (batches of 1000): `seconds` is training only, `secondsWithEval` counts
evaluation too. secondsToTarget: the training time at the first evaluation whose test accuracy reaches
the target (0.88 MLP, 0.90 CNN).

usage: fashion.py --init-dir DIR [--models mlp,cnn] [--epochs 5] [--batch 512] [--lr-mlp L] [--lr-cnn L]
                  [--evals-per-epoch 4] [--data /usr/share/datasets/fashion-mnist] [--device cuda]
                  [--precision bf16|f32] [--train-limit N] [--test-limit N]
Output: JSON lines (startup, first-steps, eval, epoch, final), as bench/fashion.ts prints them.
"""
import argparse
import copy
import gzip
import json
import math
import os
import struct
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

FIRST_STEPS = 10
LR = {"mlp": 5e-3, "cnn": 3e-3}  # as bench/fashion.ts (CNN 3e-3: 2e-3 missed 90 % on both sides)


def read_idx(directory, base):
    """An IDX file (plain or .gz): big-endian magic 0x000008RR, RR big-endian u32 sizes, unsigned bytes."""
    path = os.path.join(directory, base)
    if os.path.exists(path):
        with open(path, "rb") as f:
            data = f.read()
    else:
        with gzip.open(path + ".gz", "rb") as f:
            data = f.read()
    magic = struct.unpack(">I", data[:4])[0]
    assert magic >> 8 == 0x08, f"{path}: magic {magic:#x} is not unsigned bytes"
    rank = magic & 0xFF
    dims = struct.unpack(f">{rank}I", data[4 : 4 + 4 * rank])
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * rank).reshape(dims)


def read_safetensors(path):
    """{name: float32 tensor} from a safetensors file (its spec: u64 LE header length, JSON, raw LE data)."""
    with open(path, "rb") as f:
        raw = f.read()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8 : 8 + n])
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        a, b = t["data_offsets"]
        buf = raw[8 + n + a : 8 + n + b]
        if t["dtype"] == "BF16":
            bits = np.frombuffer(buf, dtype="<u2").astype(np.uint32) << 16
            arr = bits.view(np.float32)
        elif t["dtype"] == "F32":
            arr = np.frombuffer(buf, dtype="<f4")
        else:
            raise ValueError(f"{path}: {name} has dtype {t['dtype']}")
        out[name] = torch.from_numpy(arr.copy().reshape(t["shape"]))
    return out


class Mlp(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2, self.fc3 = nn.Linear(784, 512), nn.Linear(512, 512), nn.Linear(512, 10)

    def forward(self, x):
        x = x.flatten(1)
        return self.fc3(F.relu(self.fc2(F.relu(self.fc1(x)))))


class Cnn(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 32, 3, padding=1)
        self.conv2 = nn.Conv2d(32, 64, 3, padding=1)
        self.fc1 = nn.Linear(64 * 7 * 7, 128)
        self.fc2 = nn.Linear(128, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return self.fc2(F.relu(self.fc1(x.flatten(1))))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--init-dir", required=True)
    ap.add_argument("--models", default="mlp,cnn")
    ap.add_argument("--epochs", type=int, default=5)
    ap.add_argument("--batch", type=int, default=512)
    ap.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--train-limit", type=int)
    ap.add_argument("--test-limit", type=int)
    ap.add_argument("--no-fused", action="store_true")
    ap.add_argument("--evals-per-epoch", type=int, default=4)
    # The defaults of bench/fashion.ts --lr (tuned so both nets pass their targets within 5 epochs).
    ap.add_argument("--lr-mlp", type=float, default=LR["mlp"])
    ap.add_argument("--lr-cnn", type=float, default=LR["cnn"])
    ap.add_argument("--precision", default="bf16", choices=["bf16", "f32"], help="f32: no autocast (TF32 off)")
    args = ap.parse_args()
    dev = torch.device(args.device)
    cuda = dev.type == "cuda"

    def sync():
        if cuda:
            torch.cuda.synchronize()

    def emit(line):
        print(json.dumps({"side": "torch", **line}), flush=True)

    t0 = time.perf_counter()
    xs, ys = read_idx(args.data, "train-images-idx3-ubyte"), read_idx(args.data, "train-labels-idx1-ubyte")
    xt, yt = read_idx(args.data, "t10k-images-idx3-ubyte"), read_idx(args.data, "t10k-labels-idx1-ubyte")
    if args.train_limit:
        xs, ys = xs[: args.train_limit], ys[: args.train_limit]
    if args.test_limit:
        xt, yt = xt[: args.test_limit], yt[: args.test_limit]
    data_seconds = time.perf_counter() - t0
    s0 = time.perf_counter()
    # Values in [0, 1] as Tandem's loader makes them (i / 255 in f32), [N, 1, 28, 28].
    unit = torch.arange(256, dtype=torch.float64).div(255).float()
    X = unit[torch.from_numpy(xs.astype(np.int64))].unsqueeze(1).to(dev)
    Y = torch.from_numpy(ys.astype(np.int64)).to(dev)
    Xt = unit[torch.from_numpy(xt.astype(np.int64))].unsqueeze(1).to(dev)
    Yt = torch.from_numpy(yt.astype(np.int64)).to(dev)
    steps_per_epoch = X.shape[0] // args.batch
    order = np.fromfile(os.path.join(args.init_dir, "order.u32"), dtype="<u4").astype(np.int64)
    need = args.epochs * steps_per_epoch * args.batch
    assert order.size == need, f"order.u32 has {order.size} indices, this run needs {need} (same --epochs/--batch/--train-limit as prepare?)"
    order = torch.from_numpy(order).view(args.epochs, steps_per_epoch, args.batch).to(dev)
    total = args.epochs * steps_per_epoch
    # The steps after which the test set is evaluated (bench/fashion.ts's evalPoints).
    eval_points = []
    for e in range(args.epochs):
        for k in range(1, args.evals_per_epoch + 1):
            p = e * steps_per_epoch + (k * steps_per_epoch) // args.evals_per_epoch
            if p > (eval_points[-1] if eval_points else 0):
                eval_points.append(p)
    lrs = {"mlp": args.lr_mlp, "cnn": args.lr_cnn}

    def lr_at(it, lr):  # src/nn/optim/schedule.ts cosineWithWarmup without warm-up, down to lr / 10
        return lr * 0.1 + 0.5 * (1 + math.cos(math.pi * it / max(1, total))) * (lr - lr * 0.1)

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False

    def autocast():
        return torch.autocast(dev.type, dtype=torch.bfloat16, enabled=args.precision == "bf16")

    def make_opt(model, lr):
        extra = {"fused": True} if cuda and not args.no_fused else {}
        return torch.optim.AdamW(model.parameters(), lr=lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01, **extra)

    def step(model, opt, idx, it, lr):
        for g in opt.param_groups:
            g["lr"] = lr_at(it, lr)
        with autocast():
            loss = F.cross_entropy(model(X[idx]).float(), Y[idx])
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss.detach()

    @torch.no_grad()
    def evaluate(model, limit=None):
        n = Xt.shape[0] if limit is None else min(limit, Xt.shape[0])
        correct = torch.zeros((), dtype=torch.int64, device=dev)
        loss_sum = torch.zeros((), dtype=torch.float32, device=dev)
        for first in range(0, n, 1000):
            x, y = Xt[first : min(n, first + 1000)], Yt[first : min(n, first + 1000)]
            with autocast():
                logits = model(x)
            loss_sum += F.cross_entropy(logits.float(), y, reduction="sum")
            correct += (logits.argmax(1) == y).sum()
        return correct.item() / n, loss_sum.item() / n

    first_model = True
    for name in args.models.split(","):
        target = 0.88 if name == "mlp" else 0.90
        model = {"mlp": Mlp, "cnn": Cnn}[name]().to(dev)
        init = read_safetensors(os.path.join(args.init_dir, f"{name}-init.safetensors"))
        model.load_state_dict({k: v.to(dev) for k, v in init.items()})
        # Warm-up on throw-away copies (kernels, cuBLAS/cuDNN handles, the allocator): not timed.
        if not first_model:
            s0 = time.perf_counter()
        first_model = False
        warm = copy.deepcopy(model)
        lr = lrs[name]
        wopt = make_opt(warm, lr)
        for it in range(2):
            step(warm, wopt, order[0, it], it, lr)
        evaluate(warm, 1000)
        del warm, wopt
        sync()
        startup = time.perf_counter() - s0
        emit({"event": "startup", "model": name, "device": str(dev), "precision": args.precision, "dataSeconds": round(data_seconds, 3), "startupSeconds": round(startup, 3), "torch": torch.__version__})
        opt = make_opt(model, lr)
        train_s = eval_s = 0.0
        reached = None
        acc = float("nan")
        losses = []  # device scalars, read outside the clock
        done = 0
        shown_first = False
        for end in eval_points:
            sync()
            seg = time.perf_counter()
            while done < end:
                e, s = divmod(done, steps_per_epoch)
                losses.append(step(model, opt, order[e, s], done, lr))
                done += 1
            sync()
            train_s += time.perf_counter() - seg
            e0 = time.perf_counter()
            acc, test_loss = evaluate(model)
            eval_s += time.perf_counter() - e0
            if not shown_first and (done >= FIRST_STEPS or done == total):
                shown_first = True
                emit({"event": "first-steps", "model": name, "losses": [x.item() for x in losses[:FIRST_STEPS]]})
            epoch = end / steps_per_epoch
            if reached is None and acc >= target:
                reached = (train_s, train_s + eval_s, round(epoch, 3))
            at = {"model": name, "step": end, "testAccuracy": round(acc, 4), "testLoss": round(test_loss, 4), "seconds": round(train_s, 3), "secondsWithEval": round(train_s + eval_s, 3)}
            if end % steps_per_epoch:
                emit({"event": "eval", "epoch": round(epoch, 3), **at})
            else:
                mean = torch.stack(losses[end - steps_per_epoch : end]).float().mean().item()
                emit({"event": "epoch", "epoch": end // steps_per_epoch, "trainLoss": round(mean, 4), **at})
        emit({
            "event": "final", "model": name, "device": str(dev), "precision": args.precision, "epochs": args.epochs,
            "batch": args.batch, "steps": total, "lr": lr, "evalsPerEpoch": args.evals_per_epoch, "trainImages": X.shape[0], "testImages": Xt.shape[0],
            "testAccuracy": round(acc, 4), "target": target,
            "epochToTarget": reached[2] if reached else None,
            "secondsToTarget": round(reached[0], 3) if reached else None,
            "secondsToTargetWithEval": round(reached[1], 3) if reached else None,
            "seconds": round(train_s, 3), "secondsWithEval": round(train_s + eval_s, 3),
            "msPerStep": round(train_s * 1000 / total, 3), "startupSeconds": round(startup, 3),
            "fusedAdamW": cuda and not args.no_fused,
        })


if __name__ == "__main__":
    main()
