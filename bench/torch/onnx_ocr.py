"""ONNX Runtime (CPU EP) side of bench/onnx-ocr.ts on the H200 (issue 17).

Renders text into images with PIL, runs the PaddleOCR v4 detection model (640x640, batch 1 and 16)
and recognition model on onnxruntime's CPU execution provider, and writes every input and output as a
raw little-endian float32 file plus meta.json (shapes, rendered texts, ORT's decoded texts, ORT's
timings), which the Tandem side reads to run the same inputs.

    python3 bench/torch/onnx_ocr.py <assets dir> <work dir> [threads=16]
"""
import json
import os
import statistics
import sys
import time

import numpy as np
import onnxruntime as ort
from PIL import Image, ImageDraw, ImageFont

ASSETS, WORK = sys.argv[1], sys.argv[2]
THREADS = int(sys.argv[3]) if len(sys.argv) > 3 else 16
os.makedirs(WORK, exist_ok=True)

LINES = ["Tandem 2026", "hello world", "ONNX Runtime", "GPU H200 x16", "OCR test 42", "batch of text"]


def font(size):
    for path in ("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf", "/usr/share/fonts/dejavu/DejaVuSans.ttf"):
        if os.path.exists(path):
            return ImageFont.truetype(path, size)
    try:
        return ImageFont.load_default(size=size)  # Pillow >= 10.1: a scalable font
    except TypeError:
        return ImageFont.load_default()


def det_image(k):
    img = Image.new("RGB", (640, 640), (255, 255, 255))
    d = ImageDraw.Draw(img)
    f = font(40)
    for i, line in enumerate(LINES):
        d.text((30 + 7 * ((i + k) % 5), 40 + 95 * i + 3 * (k % 7)), line, fill=(0, 0, 0), font=f)
    a = np.asarray(img, dtype=np.float32) / 255.0
    a = (a - np.array([0.485, 0.456, 0.406], np.float32)) / np.array([0.229, 0.224, 0.225], np.float32)
    return a.transpose(2, 0, 1)


def rec_image(text, width=320):
    f = font(32)
    box = ImageDraw.Draw(Image.new("RGB", (1, 1))).textbbox((0, 0), text, font=f)
    w = box[2] - box[0] + 16
    img = Image.new("RGB", (w, 48), (255, 255, 255))
    ImageDraw.Draw(img).text((8 - box[0], (48 - (box[3] - box[1])) // 2 - box[1]), text, fill=(0, 0, 0), font=f)
    new_w = min(width, w)  # already 48 px high: PaddleOCR keeps the ratio, capped at the batch width
    img = img.resize((new_w, 48), getattr(Image, "Resampling", Image).BILINEAR)
    a = (np.asarray(img, dtype=np.float32) / 255.0 - 0.5) / 0.5
    out = np.zeros((3, 48, width), np.float32)
    out[:, :, :new_w] = a.transpose(2, 0, 1)
    return out


def characters():
    with open(os.path.join(ASSETS, "ppocr_keys_v1.txt"), encoding="utf-8") as fh:
        lines = fh.read().splitlines()
    return [""] + lines + [" "]


def ctc_decode(probs, chars):
    out = []
    for row in probs:
        idx = row.argmax(-1)
        text, prev = "", -1
        for i in idx:
            if i != 0 and i != prev:
                text += chars[i] if i < len(chars) else "?"
            prev = i
        out.append(text)
    return out


def session(name):
    so = ort.SessionOptions()
    so.intra_op_num_threads = THREADS
    so.inter_op_num_threads = 1
    t0 = time.perf_counter()
    s = ort.InferenceSession(os.path.join(ASSETS, name), so, providers=["CPUExecutionProvider"])
    return s, time.perf_counter() - t0


def timed(sess, x, reps):
    feed = {sess.get_inputs()[0].name: x}
    t0 = time.perf_counter()
    y = sess.run(None, feed)[0]
    first = time.perf_counter() - t0
    sess.run(None, feed)
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        sess.run(None, feed)
        times.append(time.perf_counter() - t0)
    return y, first, statistics.median(times)


meta = {"ort": ort.__version__, "threads": THREADS, "lines": LINES, "files": {}}


def save(name, arr):
    arr = np.ascontiguousarray(arr, dtype=np.float32)
    arr.tofile(os.path.join(WORK, name + ".f32"))
    meta["files"][name] = list(arr.shape)


det, det_load = session("ch_PP-OCRv4_det_infer.onnx")
b16 = np.stack([det_image(k) for k in range(16)])
for batch, reps in ((1, 20), (16, 5)):
    x = b16[:batch]
    y, first, med = timed(det, x, reps)
    save(f"det_in_b{batch}", x)
    save(f"det_out_b{batch}", y)
    meta[f"det_b{batch}"] = {"ms": med * 1e3, "imagesPerSecond": batch / med, "firstMs": first * 1e3}
    print(json.dumps({"side": "ort-cpu", "model": "det", "batch": batch, "ms": med * 1e3, "imagesPerSecond": batch / med}), flush=True)
meta["det_load_ms"] = det_load * 1e3 + meta["det_b1"]["firstMs"]

rec, rec_load = session("ch_PP-OCRv4_rec_infer.onnx")
xr = np.stack([rec_image(t) for t in LINES])
y, first, med = timed(rec, xr, 10)
save("rec_in", xr)
save("rec_out", y)
meta["rec"] = {"ms": med * 1e3, "imagesPerSecond": len(LINES) / med}
meta["rec_load_ms"] = rec_load * 1e3 + first * 1e3
meta["ort_texts"] = ctc_decode(y, characters())
print(json.dumps({"side": "ort-cpu", "model": "rec", "batch": len(LINES), "ms": med * 1e3, "texts": meta["ort_texts"]}, ensure_ascii=False), flush=True)
with open(os.path.join(WORK, "meta.json"), "w", encoding="utf-8") as fh:
    json.dump(meta, fh, ensure_ascii=False, indent=1)
