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

for f in failures:
    print("FAIL:", f)
print("test_peers: %d failure(s)" % len(failures))
sys.exit(1 if failures else 0)
