#!/usr/bin/env python3
"""Developer-side study (not run by CI or the build; needs numpy: `pip install numpy`):
a Gaussian-process surrogate with expected improvement (alone, and taking turns with the
anneal walk), replayed on the exhaustive recordings against random search and anneal,
at a 25% budget, success = a point within 5% of the recorded best, over SEEDS seeds
(default 20). The surrogate is tuning/surrogate.h's and the turns are tuning/strategy.cpp's
`model` strategy (every=2, ell=0.5); this port chose those settings. Python's random
numbers differ from the C++ ones, so the rates are close to, not equal to, the C++
test's (tests/test_tuner_offline.cpp, Replay.*). About 10 minutes.

    python3 scripts/dev/surrogate-study.py [SEEDS]      (from the repository root)
"""
import csv
import math
import random
import sys

import numpy as np

erf = np.frompyfunc(math.erf, 1, 1)

RECORDINGS = ["tests/data/sweeps/opencl-nvidia-h200-580/attention.csv", "tests/data/sweeps/opencl-nvidia-h200-580/gemm.csv",
              "tests/data/sweeps/opencl-nvidia-h200-580/groupnorm.csv", "tests/data/sweeps/opencl-pocl-cpu-3/attention.csv",
              "tests/data/sweeps/opencl-pocl-cpu-3/gemm.csv", "tests/data/sweeps/opencl-pocl-cpu-3/groupnorm.csv",
              "results/sweeps/opencl-pocl-cpu-5/attention.csv"]


def load(f):
    pts = []
    for r in csv.DictReader(open(f)):
        p = dict(kv.split('=') for kv in r['params'].split(',')) if r['params'] else {}
        pts.append((r['variant'], {k: int(v) for k, v in p.items()},
                    float(r['median_us']) if r['status'] == 'ok' else math.inf))
    return pts


_ENCODED = {}


def encode(pts):
    """Variant ids and, per point, each parameter's position in its sorted value list
    scaled to [0, 1] (a one-value parameter sits at 0)."""
    if id(pts) in _ENCODED:
        return _ENCODED[id(pts)]
    variants = sorted({v for v, _, _ in pts})
    vals = {}
    for v, p, _ in pts:
        for k, x in p.items():
            vals.setdefault((v, k), set()).add(x)
    vals = {k: sorted(s) for k, s in vals.items()}
    names = sorted({k for _, p, _ in pts for k in p})
    X = np.zeros((len(pts), len(names)))
    vid = np.zeros(len(pts), dtype=int)
    for i, (v, p, _) in enumerate(pts):
        vid[i] = variants.index(v)
        for k, x in p.items():
            vs = vals[(v, k)]
            X[i, names.index(k)] = vs.index(x) / max(1, len(vs) - 1)
    _ENCODED[id(pts)] = (vid, X)
    return vid, X


def kernel(vid_a, Xa, vid_b, Xb, ell, cross):
    d2 = ((Xa[:, None, :] - Xb[None, :, :]) ** 2).sum(-1)
    same = vid_a[:, None] == vid_b[None, :]
    return np.where(same, cross + (1 - cross) * np.exp(-d2 / (2 * ell * ell)), cross)


class Anneal:
    """tuning/strategy.cpp's Anneal, ported (the variants' first points stand in for defaults)."""

    def __init__(self, pts, budget, rng):
        self.pts, self.budget, self.rng = pts, budget, rng
        self.n = len(pts)
        self.cost = [-1.0] * self.n
        self.key = {(v, tuple(sorted(p.items()))): i for i, (v, p, _) in enumerate(pts)}
        vals = {}
        for v, p, _ in pts:
            for k, x in p.items():
                vals.setdefault((v, k), set()).add(x)
        self.vals = {k: sorted(s) for k, s in vals.items()}
        self.seeds, seen = [], set()
        for i, (v, _, _) in enumerate(pts):
            if v not in seen:
                seen.add(v)
                self.seeds.append(i)
        self.cur = self.best = None
        self.measured = 0

    def temp(self):
        return 0.3 * (0.01 / 0.3) ** min(1.0, self.measured / self.budget)

    def accept(self, c):
        cc, cu = self.cost[c], self.cost[self.cur]
        if not math.isfinite(cc):
            return
        if not math.isfinite(cu) or cc <= cu:
            self.cur = c
            return
        if self.rng.random() < math.exp(-(cc - cu) / (cu * self.temp())):
            self.cur = c
        if self.best is not None and self.rng.random() < 0.05:
            self.cur = self.best

    def neighbour(self, i):
        rng = self.rng
        if rng.random() < 0.05:
            return rng.randrange(self.n)
        v, p, _ = self.pts[i]
        if not p:
            return rng.randrange(self.n)
        ks = sorted(p)
        for _ in range(32):
            k = ks[rng.randrange(len(ks))]
            vs = self.vals[(v, k)]
            pos = vs.index(p[k])
            up = rng.randrange(2) == 1
            if (up and pos + 1 >= len(vs)) or (not up and pos == 0):
                continue
            q = dict(p)
            q[k] = vs[pos + 1 if up else pos - 1]
            j = self.key.get((v, tuple(sorted(q.items()))))
            if j is not None:
                return j
        return rng.randrange(self.n)

    def next(self):
        while self.seeds:
            s = self.seeds.pop(0)
            if self.cost[s] < 0:
                return s
        if self.cur is None:
            self.cur = self.best if self.best is not None else self.rng.randrange(self.n)
        for _ in range(10000):
            c = self.neighbour(self.cur)
            if self.cost[c] < 0:
                return c
            self.accept(c)
        return next(i for i in range(self.n) if self.cost[i] < 0)

    def report(self, i, c):
        if self.cost[i] < 0:
            self.measured += 1
        self.cost[i] = c
        if self.best is None or c < self.cost[self.best]:
            self.best = i
        if self.cur is None:
            self.cur = i
        else:
            self.accept(i)


def anneal_search(pts, budget, rng):
    a = Anneal(pts, budget, rng)
    order = []
    while len(order) < budget:
        i = a.next()
        order.append(i)
        a.report(i, pts[i][2])
    return order


def hybrid_search(pts, budget, rng, every=2, **kw):
    """Anneal's walk, with every `every`-th point chosen by the model's expected improvement."""
    a = Anneal(pts, budget, rng)
    order = []
    while len(order) < budget:
        if a.seeds or len(order) % every != every - 1:
            i = a.next()
        else:
            i = model_search(pts, len(order) + 1, rng, start=order, **kw)[-1]
        order.append(i)
        a.report(i, pts[i][2])
    return order


def model_search(pts, budget, rng, ell=0.3, cross=0.2, noise=0.05, init_frac=0.1, xi=0.0, fit_ell=False, start=None):
    n = len(pts)
    vid, X = encode(pts)
    cost = np.array([c for _, _, c in pts])
    measured = list(start) if start is not None else []
    if start is not None:
        budget = len(measured) + 1
    # initial design: the first point of each variant (stand-in for the defaults), then random
    if start is None:
        seen = set()
        for i, (v, _, _) in enumerate(pts):
            if v not in seen:
                seen.add(v)
                measured.append(i)
        n0 = max(len(measured) + 2, int(budget * init_frac))
        rest = [i for i in range(n) if i not in measured]
        rng.shuffle(rest)
        measured += rest[:max(0, n0 - len(measured))]
        measured = measured[:budget]
    while len(measured) < budget:
        m = np.array(measured)
        c = cost[m]
        ok = np.isfinite(c)
        y = np.log(np.where(ok, c, 1.0))
        worst = y[ok].max() if ok.any() else 0.0
        y = np.where(ok, y, worst + math.log(2))
        mu0, sd0 = y.mean(), y.std() or 1.0
        yn = (y - mu0) / sd0
        ells = [ell] if not fit_ell else [0.15, 0.3, 0.6]
        best_ll, best = -math.inf, None
        for e in ells:
            K = kernel(vid[m], X[m], vid[m], X[m], e, cross) + noise * np.eye(len(m))
            L = np.linalg.cholesky(K)
            alpha = np.linalg.solve(L.T, np.linalg.solve(L, yn))
            ll = -0.5 * yn @ alpha - np.log(np.diag(L)).sum()
            if ll > best_ll:
                best_ll, best = ll, (e, L, alpha)
        e, L, alpha = best
        mset = set(measured)
        un = np.array([i for i in range(n) if i not in mset])
        Ks = kernel(vid[un], X[un], vid[m], X[m], e, cross)
        mu = Ks @ alpha
        v = np.linalg.solve(L, Ks.T)
        var = np.maximum(1e-12, 1.0 - (v * v).sum(0))
        s = np.sqrt(var)
        fbest = yn[ok].min() if ok.any() else yn.min()
        z = (fbest - mu - xi) / s
        ei = s * (z * 0.5 * (1 + erf(z / math.sqrt(2)).astype(float)) + np.exp(-0.5 * z * z) / math.sqrt(2 * math.pi))
        measured.append(int(un[int(np.argmax(ei))]))
    return measured


def rand_strat(pts, budget, rng):
    idx = list(range(len(pts)))
    rng.shuffle(idx)
    return idx[:budget]


def success_rate(pts, strategy, seeds, **kw):
    best = min(c for _, _, c in pts)
    budget = len(pts) // 4
    ok = 0
    for seed in range(1, seeds + 1):
        order = strategy(pts, budget, random.Random(seed), **kw)
        ok += min(pts[i][2] for i in order) <= 1.05 * best
    return ok / seeds


def main():
    seeds = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    recs = [load(f) for f in RECORDINGS]
    print("columns: " + ", ".join(f.split("sweeps/")[1] for f in RECORDINGS))
    print("%-28s" % "random", [round(success_rate(p, rand_strat, seeds), 2) for p in recs], flush=True)
    print("%-28s" % "anneal", [round(success_rate(p, anneal_search, seeds), 2) for p in recs], flush=True)
    for kw in (dict(), dict(ell=0.5), dict(ell=0.5, cross=0.0)):
        print("%-28s" % ("model alone " + ",".join("%s=%s" % kv for kv in kw.items())),
              [round(success_rate(p, model_search, seeds, **kw), 2) for p in recs], flush=True)
    # every=2, ell=0.5 is what tuning/strategy.cpp's `model` does
    for kw in (dict(every=2, ell=0.5), dict(every=3, ell=0.5), dict(every=2, ell=0.3)):
        print("%-28s" % ("turns " + ",".join("%s=%s" % kv for kv in kw.items())),
              [round(success_rate(p, hybrid_search, seeds, **kw), 2) for p in recs], flush=True)

if __name__ == "__main__":
    main()
