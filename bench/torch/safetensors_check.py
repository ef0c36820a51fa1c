"""Cross-checks Tandem's safetensors files with Python (the other half is bench/safetensors-check.ts).

--read PATH   a file Tandem wrote: read it with the `safetensors` package (torch tensors; numpy when
              torch is absent, BF16 then checked by the plain reader only) and with a plain-Python
              reader of the format, compare every tensor bit for bit with the expected values, and
              compare the whole file byte for byte with what safetensors' own writer makes of them.
--write PATH  a file for Tandem to read back (`node dist/bench/safetensors-check.js verify PATH`),
              written by safetensors.torch.save_file (a plain-Python writer when torch is absent).

Prints JSON lines; exits 1 on any mismatch.

  node dist/bench/safetensors-check.js write /tmp/tandem.safetensors
  python3 bench/torch/safetensors_check.py --read /tmp/tandem.safetensors --write /tmp/python.safetensors
  node dist/bench/safetensors-check.js verify /tmp/python.safetensors
"""
import argparse
import json
import os
import struct
import sys
import tempfile

try:
    from safetensors import safe_open
except ImportError:
    safe_open = None
try:
    import torch
    from safetensors.torch import save_file as st_save
except ImportError:  # no torch here: numpy through the same package, or nothing
    torch = None
    try:
        import numpy as np
        from safetensors.numpy import save_file as st_save
    except ImportError:
        np = None
        st_save = None

METADATA = {"format": "pt"}  # one key: the Rust writer keeps metadata in a HashMap (order varies)
SIZES = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "I64": 8, "I32": 4, "U8": 1}
CODES = {"F64": "d", "F32": "f", "F16": "e", "I64": "q", "I32": "i", "U8": "B"}


def expected():
    """name -> (dtype, shape, values): the formulas of expectedTensors() in bench/safetensors-check.ts."""
    return {
        "f32": ("F32", [3, 5], [i * 0.25 - 1.75 for i in range(15)]),
        "f64": ("F64", [7], [(i - 3) / 3 for i in range(7)]),
        "f16": ("F16", [2, 3], [(i - 2.5) * 0.5 for i in range(6)]),
        "bf16": ("BF16", [5], [1.0, -2.0, 0.5, 3.0, -0.125]),
        "i64": ("I64", [2, 2], [-(2**62), -1, 0, 2**40 + 3]),
        "i32": ("I32", [3], [-5, 0, 2147483647]),
        "u8": ("U8", [9], [(i * 29) % 256 for i in range(9)]),
        "scalar": ("F32", [], [1.5]),
        "empty": ("F32", [0, 4], []),
        "layers.10.w": ("F32", [2], [10.0, 10.5]),
        "layers.9.w": ("F32", [2], [9.0, 9.5]),
    }


def encode(dtype, values):
    if dtype == "BF16":  # all expected bf16 values are exact: the top half of their f32 pattern
        return b"".join(struct.pack("<I", struct.unpack("<I", struct.pack("<f", v))[0])[2:] for v in values)
    return struct.pack("<%d%s" % (len(values), CODES[dtype]), *values)


def decode(dtype, raw):
    n = len(raw) // SIZES[dtype]
    if dtype == "BF16":
        words = struct.unpack("<%dH" % n, raw)
        return [struct.unpack("<f", struct.pack("<I", w << 16))[0] for w in words]
    return list(struct.unpack("<%d%s" % (n, CODES[dtype]), raw))


def plain_read(path):
    """The format from its spec, nothing else: u64 LE header length, JSON, raw little-endian data."""
    with open(path, "rb") as f:
        blob = f.read()
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8 : 8 + n].decode("utf-8"))
    meta = header.pop("__metadata__", {})
    data = blob[8 + n :]
    out = {}
    for name, info in header.items():
        begin, end = info["data_offsets"]
        out[name] = (info["dtype"], info["shape"], decode(info["dtype"], data[begin:end]))
    return out, meta, blob


def plain_write(path, tensors, metadata):
    """The reference writer's layout: dtype (largest first) then name, "__metadata__" first, padded."""
    rank = {"U8": 1, "F16": 7, "BF16": 8, "I32": 9, "F32": 11, "F64": 12, "I64": 13}
    order = sorted(tensors, key=lambda k: (-rank[tensors[k][0]], k.encode("utf-8")))
    parts, blobs, at = ['"__metadata__":' + json.dumps(metadata, separators=(",", ":"))], [], 0
    for name in order:
        dtype, shape, values = tensors[name]
        raw = encode(dtype, values)
        info = {"dtype": dtype, "shape": shape, "data_offsets": [at, at + len(raw)]}
        parts.append(json.dumps(name) + ":" + json.dumps(info, separators=(",", ":")))
        blobs.append(raw)
        at += len(raw)
    head = ("{" + ",".join(parts) + "}").encode("utf-8")
    head += b" " * ((8 - len(head) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(head)) + head + b"".join(blobs))


def library_tensors(tensors):
    """The expected tensors as the library's framework objects (None for what it cannot hold)."""
    if torch is not None:
        tdt = {"F64": torch.float64, "F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16,
               "I64": torch.int64, "I32": torch.int32, "U8": torch.uint8}
        return {k: torch.tensor(v, dtype=tdt[d]).reshape(s) for k, (d, s, v) in tensors.items()}
    if np is not None:
        ndt = {"F64": np.float64, "F32": np.float32, "F16": np.float16, "I64": np.int64, "I32": np.int32,
               "U8": np.uint8}
        return {k: np.array(v, dtype=ndt[d]).reshape(s) for k, (d, s, v) in tensors.items() if d in ndt}
    return None


def same(a, b):
    if torch is not None:
        return a.dtype == b.dtype and a.shape == b.shape and torch.equal(a, b)
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def check_read(path, report):
    want = expected()
    got, meta, blob = plain_read(path)
    problems = []
    if meta != METADATA:
        problems.append("metadata %r" % (meta,))
    if sorted(got) != sorted(want):
        problems.append("names %r" % sorted(got))
    for name, (dtype, shape, values) in want.items():
        if name in got and got[name] != (dtype, shape, [float(v) if dtype[0] == "F" else v for v in values]):
            problems.append("plain reader: %s = %r" % (name, got[name]))
    report["plain_reader"] = "ok" if not problems else "mismatch"
    lib_want = library_tensors(want)
    if lib_want is None or safe_open is None:
        report["library"] = "skipped: neither torch nor numpy with safetensors is installed"
    else:
        with safe_open(path, framework="pt" if torch is not None else "np") as f:
            if f.metadata() != METADATA:
                problems.append("safetensors library: metadata %r" % (f.metadata(),))
            names = set(f.keys())
            for name, t in lib_want.items():
                if name not in names or not same(f.get_tensor(name), t):
                    problems.append("safetensors library: %s differs" % name)
        report["library"] = ("torch " + torch.__version__) if torch is not None else "numpy (BF16 by the plain reader only)"
        # Byte for byte: the library writing the same tensors must produce Tandem's exact file.
        if len(lib_want) == len(want):
            with tempfile.TemporaryDirectory() as d:
                ref = os.path.join(d, "ref.safetensors")
                st_save(lib_want, ref, metadata=METADATA)
                with open(ref, "rb") as f:
                    ref_blob = f.read()
            if ref_blob != blob:
                first = next((i for i, (x, y) in enumerate(zip(ref_blob, blob)) if x != y), min(len(ref_blob), len(blob)))
                problems.append("file differs from safetensors' own writer at byte %d (sizes %d, %d)" % (first, len(ref_blob), len(blob)))
            report["byte_identical_to_library_writer"] = ref_blob == blob
    report["problems"] = problems
    return not problems


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--read", help="a Tandem-written file to check")
    ap.add_argument("--write", help="where to write a file for Tandem to read back")
    args = ap.parse_args()
    ok = True
    if args.read:
        report = {"bench": "safetensors_check", "mode": "read", "path": args.read}
        ok = check_read(args.read, report)
        report["ok"] = ok
        print(json.dumps(report))
    if args.write:
        lib = library_tensors(expected())
        if torch is not None:
            st_save(lib, args.write, metadata=METADATA)
            writer = "safetensors.torch.save_file"
        else:
            plain_write(args.write, expected(), METADATA)
            writer = "plain-Python writer (torch absent)"
        print(json.dumps({"bench": "safetensors_check", "mode": "write", "path": args.write, "writer": writer}))
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
