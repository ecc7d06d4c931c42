#!/usr/bin/env python3
"""Developer scripts that turn a run's report into the next device visit's work (CTest,
label cpu): scripts/dev/untuned-instances.py on hand-made `--profile --report` JSON must
list, costliest first, exactly the instances that ran a point not tuned for them, in the
tune stage's format, and refuse a report whose rows carry no `params`.

usage: test_dev_scripts.py SOURCE_DIR
"""
import json
import os
import subprocess
import sys
import tempfile

src = sys.argv[1]
script = os.path.join(src, "scripts", "dev", "untuned-instances.py")
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)


def run(report, *args):
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(report, f)
    try:
        return subprocess.run([sys.executable, script, f.name, *args], capture_output=True, text=True)
    finally:
        os.unlink(f.name)


F16 = "f16.buffer.nc4hw4.wf16.af16"
report = {
    "run": {"steps": 10},
    "unet_profile": [
        {"instance": "conv 2x320x64x64 bias=1 cout=320 k=3 " + F16, "variant": "coopmat_f16", "params": "exact",
         "ms_per_step": 0.9},
        {"instance": "gemm 2x320x1x4096 bias=0 n=320 " + F16, "variant": "coopmat_f16", "params": "nearest",
         "ms_per_step": 0.5},
        {"instance": "attention 2x320x1x4096 heads=8 kv=4096 f16.buffer.nc4hw4.af16", "variant": "flash_coopmat_f16",
         "params": "device default", "ms_per_step": 4.1},
        {"instance": "groupnorm 2x320x64x64 g=32 " + F16, "variant": "two_pass_f16", "params": "nearest",
         "ms_per_step": 0.02},  # 0.2 ms a run: under --min-ms (0.25)
        {"instance": "concat 2x320x64x64 c2=320 f16.buffer.nc4hw4", "variant": "slices", "params": "nearest",
         "ms_per_step": 0.2},  # f32 arithmetic: not what the tune stage tunes
    ],
    "vae_profile": [
        # A run spends steps x the UNet's time per step: the GEMM's 10 x 0.5 + 38 = 43 ms
        # a run (the VAE's time adds to the same instance's) ranks first, the attention's
        # 10 x 4.1 = 41 ms second, the VAE's conv (30 ms) third.
        {"instance": "gemm 2x320x1x4096 bias=0 n=320 " + F16, "variant": "coopmat_f16", "params": "nearest",
         "ms": 38.0},
        {"instance": "conv 1x128x512x512 bias=1 cout=128 k=3 " + F16, "variant": "coopmat_f16", "params": "nearest",
         "ms": 30.0},
    ],
}
r = run(report)
check(r.returncode == 0, "exit %d: %s" % (r.returncode, r.stderr))
check(r.stdout == "gemm:2x320x1x4096:bias=0,n=320;attention:2x320x1x4096:heads=8,kv=4096;"
      "conv:1x128x512x512:bias=1,cout=128,k=3\n", "tune list: %r" % r.stdout)
check("left out: 1 under 0.25 ms, 1 in a format" in r.stderr, "stderr: %r" % r.stderr)
r = run(report, "--max", "1")
check(r.stdout == "gemm:2x320x1x4096:bias=0,n=320\n", "--max 1: %r" % r.stdout)

del report["unet_profile"][0]["params"]
r = run(report)
check(r.returncode != 0 and "rows have no 'params'" in r.stderr and r.stdout == "",
      "a report without params: exit %d, %r" % (r.returncode, r.stderr))
r = run({"unet_profile": [{"instance": "gemm", "params": "nearest", "ms_per_step": 1.0}]})
check(r.returncode != 0 and "not a profile row" in r.stderr and "Traceback" not in r.stderr,
      "a row without shape and format: exit %d, %r" % (r.returncode, r.stderr))
r = subprocess.run([sys.executable, script, os.path.join(src, "no-such-report.json")], capture_output=True, text=True)
check(r.returncode != 0 and "no-such-report.json" in r.stderr, "a missing report: %r" % r.stderr)

for f in failures:
    print("FAIL:", f)
print("%d failures" % len(failures))
sys.exit(1 if failures else 0)
