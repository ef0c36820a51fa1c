"""torch.distributed.all_reduce bandwidth (NCCL backend), reported like bench/allreduce.ts.

Standalone it runs with world size 1 on cuda:0; under `torchrun --nproc_per_node=N` with N ranks.
    python3 bench/torch/allreduce.py [--mib 256] [--iters 20] [--dtype f32]
"""
import argparse
import json
import os
import time

os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
os.environ.setdefault("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1")
os.environ.setdefault("NVSHMEM_DISABLE_NVLS", "1")
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

p = argparse.ArgumentParser()
p.add_argument("--mib", type=int, default=256)
p.add_argument("--iters", type=int, default=20)
p.add_argument("--dtype", default="f32")
a = p.parse_args()
os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
os.environ.setdefault("MASTER_PORT", "29533")
rank = int(os.environ.get("RANK", "0"))
world = int(os.environ.get("WORLD_SIZE", "1"))
torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
dist.init_process_group("nccl", rank=rank, world_size=world)
dt = {"f32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16}[a.dtype]
nbytes = a.mib * 2**20
x = torch.ones(nbytes // torch.tensor([], dtype=dt).element_size(), dtype=dt, device="cuda")
for _ in range(5):
    dist.all_reduce(x)
torch.cuda.synchronize()
t0 = time.perf_counter()
for _ in range(a.iters):
    dist.all_reduce(x)
torch.cuda.synchronize()
s = (time.perf_counter() - t0) / a.iters
algbw = nbytes / s / 1e9
if rank == 0:
    print(json.dumps({"impl": "torch.distributed", "nccl": ".".join(map(str, torch.cuda.nccl.version())),
                      "ranks": world, "dtype": a.dtype, "mib": a.mib, "ms": round(s * 1000, 3),
                      "algbwGBs": round(algbw, 2), "busbwGBs": round(algbw * 2 * (world - 1) / world, 2)}))
dist.destroy_process_group()
