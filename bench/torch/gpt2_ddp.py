"""PyTorch DDP side of bench/nn-data-parallel.ts: GPT-2 124M of gpt2_train.py (the §B.0 baseline: bf16
autocast, fp32 params, SDPA flash, fused AdamW) wrapped in DistributedDataParallel (NCCL), batch B per
GPU. Standalone: world size 1 on cuda:0; `python3 -m torch.distributed.run --nproc_per_node=N` for N.
    python3 bench/torch/gpt2_ddp.py [B]      one JSON line from rank 0: global tokens/s
"""
import importlib.util
import json
import os
import sys
import time

os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
os.environ.setdefault("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1")
os.environ.setdefault("NVSHMEM_DISABLE_NVLS", "1")
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
from torch.nn.parallel import DistributedDataParallel as DDP  # noqa: E402

# The model classes of gpt2_train.py (its module-level loop runs over argv, so load it with none).
spec = importlib.util.spec_from_file_location("gpt2_train", os.path.join(os.path.dirname(__file__), "gpt2_train.py"))
base = importlib.util.module_from_spec(spec)
argv, sys.argv = sys.argv, sys.argv[:1]
spec.loader.exec_module(base)
sys.argv = argv
B = int(sys.argv[1]) if len(sys.argv) > 1 else 64
os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
os.environ.setdefault("MASTER_PORT", "29534")
rank, world = int(os.environ.get("RANK", "0")), int(os.environ.get("WORLD_SIZE", "1"))
local = int(os.environ.get("LOCAL_RANK", "0"))
torch.cuda.set_device(local)
dist.init_process_group("nccl", rank=rank, world_size=world)
torch.manual_seed(1)
m = DDP(base.G().cuda(), device_ids=[local])
o = torch.optim.AdamW(m.parameters(), lr=3e-4, fused=True)
x = torch.randint(0, 50257, (B, base.T), device="cuda")
y = torch.randint(0, 50257, (B, base.T), device="cuda")
for i in range(30):
    if i == 10:
        torch.cuda.synchronize()
        t0 = time.time()
    with torch.autocast("cuda", torch.bfloat16):
        loss = m(x, y)
    loss.backward()
    o.step()
    o.zero_grad(set_to_none=True)
torch.cuda.synchronize()
dt = (time.time() - t0) / 20
if rank == 0:
    print(json.dumps({"impl": "torch DDP", "gpus": world, "perGpu": B, "stepMs": dt * 1e3,
                      "tokensPerSecond": round(world * B * base.T / dt)}), flush=True)
dist.destroy_process_group()
