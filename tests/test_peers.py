#!/usr/bin/env python3
"""The PyTorch comparison's host side, without a GPU or PyTorch (CTest, label cpu):
bench/peers/compare.py on hand-made JSON (tests/data/compare/) must produce the
expected table rows; bench/peers/pytorch_ops.py must compile, and read a shape set
into the same op instance texts sdspeed-bench names (tests/test_bench.cpp lists
them) with sdspeed's byte counts and rotation rule.

usage: test_peers.py SOURCE_DIR
"""
import json
import os
import py_compile
import subprocess
import sys
import tempfile

src = sys.argv[1]
peers = os.path.join(src, "bench", "peers")
data = os.path.join(src, "tests", "data")
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)


def run(*args):
    r = subprocess.run([sys.executable, *args], capture_output=True, text=True)
    check(r.returncode == 0, "%s exited %d: %s" % (" ".join(args), r.returncode, r.stderr))
    return r.stdout


# compare.py: rows, ratio, % of ceiling, PyTorch-only rows and skipped benchmarks.
table = run(os.path.join(peers, "compare.py"), "--sdspeed", os.path.join(data, "compare", "sdspeed.json"),
            "--pytorch", os.path.join(data, "compare", "pytorch.jsonl"))
lines = table.splitlines()
want_rows = [
    # best of two_pass (20 us, tuned) and one_pass (30 us); split was skipped. 20972032 B
    # in 20 us = 1048.6 GB/s of a 1000 GB/s copy ceiling; PyTorch 40 us -> ratio 2.00.
    "| groupnorm | 2x320x64x64 eps=1e-05 g=32 residual=0 silu=1 f32.buffer.nchw | "
    "two_pass (tuned NWG=128,SPLIT=2,VEC=4,WG=256) | 20.00 | 40.00 | 2.00 | 104.9% copy |",
    # per_item 10 us beats cooperative 12.5 us; PyTorch 8 us -> 0.80; 5046272 B / 10 us.
    "| softmax | 2x77x1x4096 scale=0.125 f32.buffer.nchw | per_item (default WG=64) | 10.00 | 8.00 | 0.80 | "
    "50.5% copy |",
    "| attention | 2x320x1x4096 causal=0 heads=8 kv=77 mask=0 f32.buffer.nchw | - | - | 50.00 | - | - |",
    "| attention_naive | 2x320x1x4096 causal=0 heads=8 kv=77 mask=0 f32.buffer.nchw | - | - | 120.00 | - | - |",
]
for row in want_rows:
    check(row in lines, "missing row:\n  %s\nin:\n%s" % (row, table))
check(sum(1 for l in lines if l.startswith("| ") and not l.startswith("| op ")) == 4, "want 4 rows:\n" + table)
check(any("groupnorm/split/" in l and "inaccurate: max abs error" in l for l in lines), "skipped split not listed")
check("Fixture GPU (fixture-gpu-1, driver 1.0), commit 0123456789ab" in table, "no device line")
check("2.5.1+cu124 on NVIDIA H200" in table, "no PyTorch line")

# pytorch_ops.py: compiles; --dry-run reads the shape set canonically, no torch needed.
with tempfile.TemporaryDirectory() as tmp:  # not into the source tree's __pycache__
    py_compile.compile(os.path.join(peers, "pytorch_ops.py"), cfile=os.path.join(tmp, "p.pyc"), doraise=True)
out = run(os.path.join(peers, "pytorch_ops.py"), "--dry-run", "--shapes", os.path.join(data, "bench-shapes.yaml"),
          "--llc-mib", "1", "attention 2x320x1x4096 causal=0 heads=8 kv=77 mask=0")
recs = [json.loads(l) for l in out.splitlines()]
check([r["instance"] for r in recs] == [
    "groupnorm 2x32x8x8 eps=1e-05 g=32 residual=0 silu=1 f32.buffer.nchw",
    "layernorm 2x64x1x16 eps=1e-05 f32.buffer.nchw",
    "softmax 2x77x1x16 scale=0.125 f32.buffer.nchw",
    "activation 2x64x1x16 fn=geglu f32.buffer.nchw",
    "attention 2x320x1x4096 causal=0 heads=8 kv=77 mask=0 f32.buffer.nchw",
], "instances: %s" % [r["instance"] for r in recs])
if len(recs) == 5:
    # sdspeed's minBytes: x, y (f32) + gamma, beta; geglu reads 2F and writes F channels.
    check(recs[0]["bytes"] == 2 * 4096 * 4 + 2 * 32 * 4, "groupnorm bytes %d" % recs[0]["bytes"])
    check(recs[3]["bytes"] == 2048 * 4 + 1024 * 4, "geglu bytes %d" % recs[3]["bytes"])
    check(recs[3]["output"] == [2, 16, 32], "geglu output %s" % recs[3]["output"])
    # rotations: 2 * 1 MiB // bytes + 1, at most 64; attention q, k, v, out.
    check(recs[0]["rotations"] == 64, "groupnorm rotations %d" % recs[0]["rotations"])
    att = 4 * (2 * 8 * 4096 * 40 * 2 + 2 * 8 * 77 * 40 * 2)
    check(recs[4]["bytes"] == att and recs[4]["rotations"] == 2 * (1 << 20) // att + 1,
          "attention bytes %d rotations %d" % (recs[4]["bytes"], recs[4]["rotations"]))
    check(recs[4]["inputs"]["k"] == [2, 8, 77, 40], "attention k %s" % recs[4]["inputs"]["k"])

# gemm: canonical text (attributes completed), tensors and sdspeed's minBytes (f32).
out = run(os.path.join(peers, "pytorch_ops.py"), "--dry-run", "gemm 2x320x1x4096 n=2560 epilogue=geglu")
recs = [json.loads(l) for l in out.splitlines()]
check(len(recs) == 1 and recs[0]["instance"] == "gemm 2x320x1x4096 bias=1 epilogue=geglu n=2560 residual=0 "
      "f32.buffer.nchw", "gemm instance: %s" % recs)
if len(recs) == 1:
    check(recs[0]["output"] == [2, 4096, 1280], "gemm output %s" % recs[0]["output"])
    check(recs[0]["bytes"] == 4 * (2 * 4096 * 320 + 2560 * 320 + 2560 + 2 * 4096 * 1280),
          "gemm bytes %d" % recs[0]["bytes"])

# The f16 race instances (#22's GEMM target): sdspeed's weight and arithmetic suffixes
# read and print back as written; f16 tensors, so half the bytes.
out = run(os.path.join(peers, "pytorch_ops.py"), "--dry-run",
          "gemm 2x320x1x4096 bias=1 epilogue=geglu n=2560 residual=0 f16.buffer.nchw.wf16.af16")
recs = [json.loads(l) for l in out.splitlines()]
check(len(recs) == 1 and recs[0]["instance"] == "gemm 2x320x1x4096 bias=1 epilogue=geglu n=2560 residual=0 "
      "f16.buffer.nchw.wf16.af16", "f16 gemm instance: %s" % recs)
if len(recs) == 1:
    check(recs[0]["bytes"] == 2 * (2 * 4096 * 320 + 2560 * 320 + 2560 + 2 * 4096 * 1280),
          "f16 gemm bytes %d" % recs[0]["bytes"])

# The elementwise families: every line of the instance file parses and prints back as
# written (canonical: attributes sorted, all written); tensors and sdspeed's minBytes.
elementwise = os.path.join(src, "bench", "instances", "sd15-512-elementwise.txt")
with open(elementwise) as f:
    want = [l.strip() for l in f if l.strip() and not l.startswith("#")]
out = run(os.path.join(peers, "pytorch_ops.py"), "--dry-run", "--instances", elementwise)
recs = {r["instance"]: r for r in (json.loads(l) for l in out.splitlines())}
check(list(recs) == want, "elementwise instances: %s\nwant: %s" % (list(recs), want))
check({w.split()[0] for w in want} == {"binary", "upsample", "concat", "reshape", "embedding", "timestep"},
      "elementwise families: %s" % sorted({w.split()[0] for w in want}))
r = recs.get("concat 2x640x64x64 c2=320 f32.buffer.nchw")
# a 2x640x64x64 + b 2x320x64x64 + y 2x960x64x64, f32: 4 * 4096 * 2 * (640 + 320 + 960) = 62914560.
check(r and r["bytes"] == 62914560 and r["output"] == [2, 960, 64, 64], "concat record %s" % r)
r = recs.get("embedding 2x768x1x77 positions=77 vocab=49408 f32.buffer.nchw")
# EmbeddingFamily::minBytes, all f32: ids 2*77 = 154, the token rows read min(154, 49408) = 154
# and 77 position rows of 768, the output 2*768*77 = 118272:
# 4 * (154 + (154 + 77) * 768 + 118272) = 4 * (154 + 177408 + 118272) = 1183336 (not the 152 MB table).
check(r and r["bytes"] == 1183336 and r["output"] == [2, 77, 768] and r["inputs"]["tok"] == [49408, 768],
      "embedding record %s" % r)
r = recs.get("binary 2x320x64x64 broadcast=1 fn=add f32.buffer.nchw")
# a and y 2x320x64x64 (2621440 each), b 2x320x1x1 (640): 4 * (2 * 2621440 + 640) = 20974080.
check(r and r["bytes"] == 20974080 and r["inputs"]["b"] == [2, 320, 1, 1], "binary record %s" % r)
r = recs.get("timestep 2x320x1x1 flip_sin_to_cos=1 freq_shift=0 f32.buffer.nchw")
check(r and r["bytes"] == 4 * (2 + 2 * 320) and r["output"] == [2, 320], "timestep record %s" % r)
r = recs.get("reshape 2x320x64x64 h=1 f32.buffer.nchw")
check(r and r["output"] == [2, 320, 1, 4096] and r["bytes"] == 2 * 4 * 2621440, "reshape record %s" % r)

# Defaults completed as sdspeed's makeProblem does; f16 runs keep the parameter buffers
# (t, ids, tables) in f32; sdspeed's attribute rules.
out = run(os.path.join(peers, "pytorch_ops.py"), "--dry-run", "binary 2x3x4x5", "upsample 1x3x4x5",
          "concat 1x3x4x5", "reshape 2x6x3x10 h=5", "embedding 2x6x1x5 vocab=3 positions=7",
          "timestep 3x7x1x1 freq_shift=1.0 flip_sin_to_cos=0", "timestep 2x320x1x1 f16.buffer.nchw")
recs = [json.loads(l) for l in out.splitlines()]
check([r["instance"] for r in recs] == [
    "binary 2x3x4x5 broadcast=0 fn=add f32.buffer.nchw",
    "upsample 1x3x4x5 scale=2 f32.buffer.nchw",
    "concat 1x3x4x5 c2=3 f32.buffer.nchw",
    "reshape 2x6x3x10 h=5 f32.buffer.nchw",
    "embedding 2x6x1x5 positions=7 vocab=3 f32.buffer.nchw",
    "timestep 3x7x1x1 flip_sin_to_cos=0 freq_shift=1 f32.buffer.nchw",
    "timestep 2x320x1x1 flip_sin_to_cos=1 freq_shift=0 f16.buffer.nchw",
], "defaulted instances: %s" % [r["instance"] for r in recs])
if len(recs) == 7:
    check(recs[1]["output"] == [1, 3, 8, 10], "upsample output %s" % recs[1]["output"])
    check(recs[3]["output"] == [2, 6, 5, 6], "reshape output %s" % recs[3]["output"])
    # vocab 3 < B*S = 10: 3 token rows; 4 * (10 + (3 + 5) * 6 + 2 * 6 * 5) = 472.
    check(recs[4]["bytes"] == 472, "small embedding bytes %d" % recs[4]["bytes"])
    check(recs[6]["bytes"] == 4 * 2 + 2 * 2 * 320, "f16 timestep bytes %d" % recs[6]["bytes"])
for bad in ("binary 1x4x2x2 fn=sub", "upsample 1x4x2x2 scale=0", "reshape 1x4x3x5 h=2",
            "embedding 1x8x1x9 positions=7", "timestep 2x8x1x1 freq_shift=4"):
    r = subprocess.run([sys.executable, os.path.join(peers, "pytorch_ops.py"), "--dry-run", bad],
                       capture_output=True, text=True)
    check(r.returncode != 0 and "Error" in r.stderr, "'%s' was accepted: %s" % (bad, r.stdout))

for f in failures:
    print("FAIL:", f)
print("test_peers: %d failure(s)" % len(failures))
sys.exit(1 if failures else 0)
