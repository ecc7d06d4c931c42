#!/usr/bin/env python3
"""The op instances of a profiled run that ran a point not tuned for them, as a tune list.

    python3 scripts/dev/untuned-instances.py REPORT.json [--min-ms 0.25] [--max 24]

REPORT.json is `sdspeed run ... --profile --report REPORT.json`. Its `unet_profile` and
`vae_profile` rows carry `params`: "exact" where the database holds an entry for that very
instance, else where the point came from ("nearest", "device default", ...). This prints,
costliest first by what one run spends on them (the UNet's time per step times the run's
steps, plus the VAE decoder's), the instances whose rows are not "exact" and that cost at
least --min-ms a run, as scripts/device-vulkan.sh's
TUNE_INSTANCES string ("OP:SHAPE:ATTRS;..."), on one line, and to stderr one line per
instance with its time, so a device visit tunes exactly what a run ran untuned:

    TUNE_INSTANCES="$(python3 scripts/dev/untuned-instances.py profile.json)" \\
        bash scripts/device-vulkan.sh tune

Only rows in the storage the tune stage tunes (f16 NC4HW4 with f16 arithmetic: the race's
format) are listed; others are counted on stderr.
"""
import argparse
import json
import sys

TUNED_FORMAT = "f16.buffer.nc4hw4"  # scripts/device-vulkan.sh tune: --storage f16.buffer.nc4hw4 --arithmetic f16


def rows(report):
    """(profile, row, ms a run spends on it)."""
    steps = float(report.get("run", {}).get("steps", 1))
    for key, ms_key, times in (("unet_profile", "ms_per_step", steps), ("vae_profile", "ms", 1.0)):
        for r in report.get(key, []):
            if "params" not in r:
                sys.exit(f"untuned-instances.py: {key} rows have no 'params' (a report from before it was added)")
            yield key, r, float(r[ms_key]) * times


def tune_entry(instance):
    """'gemm 2x1280x1x256 bias=0 n=1280 f16.buffer.nc4hw4.wf16.af16' -> ('gemm:2x1280x1x256:bias=0,n=1280', fmt)."""
    words = instance.split()
    if len(words) < 3:
        raise ValueError(f"instance '{instance}': expected 'OP SHAPE [ATTR=V..] FORMAT'")
    op, shape, fmt = words[0], words[1], words[-1]
    attrs = [w for w in words[2:-1] if "=" in w]
    return f"{op}:{shape}:{','.join(attrs)}", fmt


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("report")
    ap.add_argument("--min-ms", type=float, default=0.25, help="skip instances cheaper than this (ms a run)")
    ap.add_argument("--max", type=int, default=24, help="at most this many instances")
    a = ap.parse_args()
    try:
        with open(a.report) as f:
            report = json.load(f)
    except (OSError, json.JSONDecodeError) as e:
        sys.exit(f"untuned-instances.py: {a.report}: {e}")
    picked, other_format = {}, 0
    try:
        listed = list(rows(report))
        entries = [tune_entry(r["instance"]) for _, r, _ in listed]
    except (AttributeError, KeyError, TypeError, ValueError) as e:  # not a run report's profile rows
        sys.exit(f"untuned-instances.py: {a.report}: not a profile row: {e}")
    for (key, r, ms), (entry, fmt) in zip(listed, entries):
        if r["params"] == "exact":
            continue
        if not (fmt.startswith(TUNED_FORMAT + ".") and fmt.endswith("af16")):
            other_format += 1
            continue
        p = picked.setdefault(entry, {"ms": 0.0, "params": set(), "where": set()})
        p["ms"] += ms
        p["params"].add(r["params"])
        p["where"].add(key.split("_")[0])
    cheap = sum(1 for p in picked.values() if p["ms"] < a.min_ms)
    order = sorted((kv for kv in picked.items() if kv[1]["ms"] >= a.min_ms), key=lambda kv: -kv[1]["ms"])[: a.max]
    for entry, p in order:
        print(f"{p['ms']:8.3f} ms a run  {'/'.join(sorted(p['params'])):16}  {'+'.join(sorted(p['where'])):10}  {entry}",
              file=sys.stderr)
    print(f"{len(order)} instances listed; left out: {cheap} under {a.min_ms} ms, {other_format} in a format the tune "
          f"stage does not tune (it tunes {TUNED_FORMAT} with f16 arithmetic)",
          file=sys.stderr)
    print(";".join(entry for entry, _ in order))


if __name__ == "__main__":
    main()
