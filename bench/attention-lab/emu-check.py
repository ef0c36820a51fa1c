"""Checks lab variants on the host, without a GPU: the variant's text (with common.cuh and lab.cuh inlined)
is compiled by g++ against the repository's CUDA emulator (test/kernels/cuda-emu/emu.h: one std::thread
per CUDA thread, mma.sync / ldmatrix in the PTX ISA's fragment layouts) plus emu-lab.h (the lab's own
inline-PTX helpers), run on small shapes, and compared with float64 references in numpy. It checks
indexing, masking, tiling, the online softmax and the launch geometry of variants.json, not speed.
Needs numpy and g++ (C++20). Usage, from the repository root after gen-base.mjs:
    python3 bench/attention-lab/emu-check.py [--only a,b] [--t 256,200] [--h 2]"""
import argparse, json, os, re, subprocess, sys, tempfile, hashlib
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
EMU_H = os.path.join(HERE, "..", "..", "test", "kernels", "cuda-emu", "emu.h")
ap = argparse.ArgumentParser()
ap.add_argument("--only", default="")
ap.add_argument("--t", default="256,200")
ap.add_argument("--h", type=int, default=2)
ap.add_argument("--b", type=int, default=1)
a = ap.parse_args()
D = 64
VARIANTS = json.load(open(os.path.join(HERE, "variants.json")))
only = set(x for x in a.only.split(",") if x)
work = tempfile.mkdtemp(prefix="attn-emu-")


def inline(path, seen):
    out = []
    for line in open(path).read().splitlines():
        m = re.match(r'#include "(.+)"', line.strip())
        if m:
            p = os.path.join(HERE, m.group(1))
            if p not in seen:
                seen.add(p)
                out.append(inline(p, seen))
            continue
        if line.strip() == "#pragma once":
            continue
        out.append(line)
    return "\n".join(out)


def emulated_names():
    """The helpers emu.h and emu-lab.h define host versions of (`static inline T name(`)."""
    names = set()
    for path in (EMU_H, os.path.join(HERE, "emu-lab.h")):
        names.update(re.findall(r"static inline [\w:<>]+\*? ?(\w+)\(", open(path).read()))
    return names


def strip_asm_helpers(src):
    """Drops every `static __device__ __forceinline__` function whose body holds inline PTX or that the
    emulator defines itself (emu.h and emu-lab.h have host versions of them)."""
    key = "static __device__ __forceinline__"
    emulated = emulated_names()
    out, i = [], 0
    while True:
        j = src.find(key, i)
        if j < 0:
            out.append(src[i:])
            break
        # The function's body: from its first '{' to the matching '}'.
        b = src.index("{", j)
        depth, k = 0, b
        while True:
            if src[k] == "{":
                depth += 1
            elif src[k] == "}":
                depth -= 1
                if depth == 0:
                    break
            k += 1
        body = src[j:k + 1]
        out.append(src[i:j])
        name = re.match(r"[^(]*?(\w+)\(", body[len(key):])
        if "asm" not in body and not (name and name.group(1) in emulated):
            out.append(body)
        i = k + 1
    return "".join(out)


def host_source(v, main):
    src = strip_asm_helpers(inline(os.path.join(HERE, v["file"]), set()))
    src = re.sub(r"extern __shared__ (?:__align__\(\d+\) )?(\w+) (\w+)\[\];", r"alignas(16) static \1 \2[1 << 17];", src)
    flags = "\n".join("#define %s %s" % tuple((f[2:] + "=1").split("=")[:2]) for f in v.get("flags", []) if f.startswith("-D"))
    return (f'#define IS_BF16_EMU 1\n#include "{os.path.abspath(EMU_H)}"\n'
            f'#include "{os.path.join(HERE, "emu-lab.h")}"\n'
            f"#define HD {D}\n#define IS_BF16 1\n{flags}\n{src}\n{main}")


def bf16(x):
    u = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def f32(h):
    return (h.astype(np.uint32) << 16).view(np.float32)


def compile_run(v, entries, bufs, T, H, B):
    """entries: [(entry, rows, threads, args)], args a C++ argument list over buf0.. and T, H, scale."""
    names = list(bufs)
    calls = "\n".join(
        f"  emu_launch({{{B * H}, {(T + rows - 1) // rows}, 1}}, {threads}, [&] {{ {entry}({args}); }});"
        for entry, rows, threads, args in entries)
    decl = "\n".join(f'  auto {n}_v = emu_read<unsigned char>("{work}/{n}.bin", {bufs[n].nbytes});\n'
                     f"  AnyPtr {n}{{{n}_v.data()}};" for n in names)
    wr = "\n".join(f'  emu_write("{work}/{n}.bin", {n}_v);' for n in names)
    main = f"""
struct AnyPtr {{ void* p; template <class X> operator X*() const {{ return (X*)p; }} }};
int main() {{
  const int T = {T}, H = {H};
  const float scale = {float(1 / np.sqrt(D))!r}f, scale_log2 = {float(1 / np.sqrt(D) * np.log2(np.e))!r}f;
{decl}
{calls}
{wr}
  return 0;
}}"""
    code = host_source(v, main)
    exe = os.path.join(work, "k_" + hashlib.sha256(code.encode()).hexdigest()[:16])
    if not os.path.exists(exe):
        open(exe + ".cpp", "w").write(code)
        r = subprocess.run(["g++", "-std=c++20", "-O1", "-fno-strict-aliasing", "-pthread", "-w", "-o", exe, exe + ".cpp"],
                           capture_output=True, text=True)
        if r.returncode:
            raise RuntimeError(r.stderr[:4000])
    for n in names:
        bufs[n].tofile(f"{work}/{n}.bin")
    r = subprocess.run([exe], capture_output=True, text=True)
    if r.returncode:
        raise RuntimeError(f"run failed: {r.stderr[:2000]}")
    return {n: np.fromfile(f"{work}/{n}.bin", dtype=bufs[n].dtype).reshape(bufs[n].shape) for n in names}


def reference(q, k, v, dy):
    """float64 causal attention per (b, h): y, lse, and dq, dk, dv for the upstream dy. q, k, v, dy: [BH, T, D]."""
    T = q.shape[1]
    s = np.einsum("btd,bsd->bts", q, k) / np.sqrt(D)
    s = np.where(np.tril(np.ones((T, T), bool)), s, -np.inf)
    mx = s.max(-1, keepdims=True)
    p = np.exp(s - mx)
    l = p.sum(-1, keepdims=True)
    p /= l
    y = p @ v
    lse = (mx + np.log(l))[..., 0]
    dp = dy @ v.transpose(0, 2, 1)
    dlt = (dy * y).sum(-1, keepdims=True)
    ds = p * (dp - dlt) / np.sqrt(D)
    return y, lse, ds @ k, ds.transpose(0, 2, 1) @ q, p.transpose(0, 2, 1) @ dy


def rel(got, want):
    g = got.astype(np.float64)
    if not np.isfinite(g).all():
        return float("inf")
    return float(np.abs(g - want).max() / np.abs(want).max())


rng = np.random.default_rng(0)
ok = True
for T in [int(x) for x in a.t.split(",")]:
    B, H = a.b, a.h
    C = H * D
    qkv = bf16(rng.uniform(-1, 1, (B, T, 3 * C)).astype(np.float32))
    dy = bf16(rng.uniform(-1, 1, (B, T, C)).astype(np.float32))
    hd = lambda x: x.reshape(B, T, H, D).transpose(0, 2, 1, 3).reshape(B * H, T, D).astype(np.float64)
    un = lambda x: x.reshape(B, H, T, D).transpose(0, 2, 1, 3).reshape(B, T, C)
    q, k, vv = (hd(f32(qkv[:, :, i * C:(i + 1) * C])) for i in range(3))
    y, lse, dq, dk, dv = reference(q, k, vv, hd(f32(dy)))
    # The backward kernels get the reference lse and the delta of the bf16-rounded reference y (as the
    # lab gives them the forward's own).
    yb = f32(bf16(un(y).astype(np.float32)))
    delta = (hd(yb) * hd(f32(dy))).sum(-1).astype(np.float32)
    refs = {"y": un(y), "dq": un(dq), "dk": un(dk), "dv": un(dv)}
    for v in VARIANTS:
        if (only and v["name"] not in only) or v["kind"] == "aux":
            continue
        rows, threads = v["rows"], v.get("threads", 128)
        line = {"variant": v["name"], "T": T}
        try:
            if v["kind"] == "fwd":
                bufs = {"qkv": qkv, "y": np.full((B, T, C), 0x7FC0, np.uint16), "lse": np.full((B * H, T), np.nan, np.float32)}
                out = compile_run(v, [(v["entry"], rows, threads, "qkv, y, lse, T, H, scale_log2")], bufs, T, H, B)
                line["y"] = rel(f32(out["y"]), refs["y"])
                line["lse"] = float(np.abs(out["lse"].astype(np.float64) - lse).max()) if np.isfinite(out["lse"]).all() else float("inf")
                good = line["y"] < 0.02 and line["lse"] < 1e-3
            else:
                bufs = {"dy": dy, "qkv": qkv, "lse": lse.astype(np.float32), "delta": delta,
                        "dqkv": np.full((B, T, 3 * C), 0x7FC0, np.uint16), "acc": np.full((B, T, C), np.nan, np.float32)}
                args = "dy, qkv, lse, delta, dqkv, T, H, scale, scale_log2"
                steps = []
                if v["kind"] == "bwd_acc":
                    args += ", acc"
                    if v.get("prep"):
                        pv = next(x for x in VARIANTS if x["name"] == v["prep"])
                        bufs["y"] = bf16(un(y).astype(np.float32))
                        bufs["delta"] = np.full_like(delta, np.nan)
                        steps.append((pv["entry"], pv["rows"], pv.get("threads", 128), "dy, y, delta, acc, T, H"))
                    else:
                        bufs["acc"][:] = 0
                steps.append((v["entry"], rows, threads, args))
                if v.get("pair"):
                    pv = next(x for x in VARIANTS if x["name"] == v["pair"])
                    steps.append((pv["entry"], pv["rows"], pv.get("threads", 128), args))
                out = compile_run(v, steps, bufs, T, H, B)
                parts = {"dq": out["dqkv"][:, :, :C], "dk": out["dqkv"][:, :, C:2 * C], "dv": out["dqkv"][:, :, 2 * C:]}
                good = True
                for kname in v.get("checks", ["dk", "dv"]):
                    line[kname] = rel(f32(parts[kname]), refs[kname])
                    good = good and line[kname] < 0.02
                if v.get("prep"):
                    line["delta"] = float(np.abs(out["delta"].astype(np.float64) - delta).max())
                    good = good and line["delta"] < 1e-3
        except RuntimeError as e:
            line["error"] = str(e)
            good = False
        line["ok"] = bool(good)
        ok = ok and good
        print(json.dumps(line), flush=True)
sys.exit(0 if ok else 1)
