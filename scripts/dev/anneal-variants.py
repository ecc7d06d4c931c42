#!/usr/bin/env python3
"""Developer-side study (not run by CI or the build): variants of the tuner's `anneal`
strategy replayed on the exhaustive recordings, 200 seeds each, a 25% budget, success =
a point within 5% of the recorded best. The walk is a Python port of
tuning/strategy.cpp's Anneal (seeds: the first point of each variant in the file stand in
for the variants' defaults), so its rates are close to, not equal to, the C++ test's.
Variants: two-parameter moves with probability PAIR, a restart at a random point after
budget/R measurements without a new best, and a final systematic search of the best
point's one- and two-step neighbourhood for a fraction of the budget.
The rates quoted in results/sweeps/README.md come from
    python3 scripts/dev/anneal-variants.py
run from the repository root (stdlib only, a few minutes).
"""
import csv
import math
import random
from collections import defaultdict

PAIR = 0.0
RECORDINGS = ["tests/data/sweeps/opencl-nvidia-h200-580/attention.csv", "tests/data/sweeps/opencl-nvidia-h200-580/groupnorm.csv",
              "tests/data/sweeps/opencl-pocl-cpu-3/attention.csv", "tests/data/sweeps/opencl-pocl-cpu-3/gemm.csv",
              "tests/data/sweeps/opencl-pocl-cpu-3/groupnorm.csv", "results/sweeps/opencl-pocl-cpu-5/attention.csv"]


def load(f):
    rows=list(csv.DictReader(open(f)))
    pts=[]
    for r in rows:
        p=dict(kv.split('=') for kv in r['params'].split(',')) if r['params'] else {}
        p={k:int(v) for k,v in p.items()}
        c=float(r['median_us']) if r['status']=='ok' else math.inf
        pts.append((r['variant'],p,c))
    return pts


def rand_strat(pts,budget,rng):
    idx=list(range(len(pts))); rng.shuffle(idx); return idx[:budget]


def anneal(pts,budget,rng,restart_div=None,defaults=None):
    n=len(pts); cost=[-1.0]*n
    key={(v,tuple(sorted(p.items()))):i for i,(v,p,_) in enumerate(pts)}
    vals=defaultdict(set)
    for v,p,_ in pts:
        for k,x in p.items(): vals[(v,k)].add(x)
    vals={k:sorted(s) for k,s in vals.items()}
    # seeds: one point per variant (stand-in for defaults: the first of each variant in file order)
    seeds=[]; seen=set()
    for i,(v,p,_) in enumerate(pts):
        if v not in seen: seen.add(v); seeds.append(i)
    st=dict(cur=None,best=None,measured=0,since=0,restarted=False)
    order=[]
    def temp():
        prog=min(1.0,st['measured']/budget); return 0.3*(0.01/0.3)**prog
    def accept(c):
        cc=cost[c]; cu=cost[st['cur']]
        if not math.isfinite(cc): return
        if not math.isfinite(cu) or cc<=cu: st['cur']=c; return
        if rng.random()<math.exp(-(cc-cu)/(cu*temp())): st['cur']=c
        if st['best'] is not None and rng.random()<0.05: st['cur']=st['best']
    def neigh(i):
        if rng.random()<0.05: return rng.randrange(n)
        v,p,_=pts[i]
        if not p: return rng.randrange(n)
        ks=sorted(p)
        for _ in range(32):
            q=dict(p); moved=0
            for k in rng.sample(ks, 2 if (len(ks)>1 and rng.random()<PAIR) else 1):
                vs=vals[(v,k)]; pos=vs.index(p[k]); up=rng.randrange(2)==1
                if (up and pos+1>=len(vs)) or (not up and pos==0): continue
                q[k]=vs[pos+1 if up else pos-1]; moved+=1
            if not moved: continue
            j=key.get((v,tuple(sorted(q.items()))))
            if j is not None: return j
        return rng.randrange(n)
    def nxt():
        while seeds:
            s=seeds.pop(0)
            if cost[s]<0: return s
        if st['cur'] is None: st['cur']=st['best'] if st['best'] is not None else rng.randrange(n)
        if restart_div and st['since']>=max(3,budget//restart_div):
            st['since']=0; op=[i for i in range(n) if cost[i]<0]
            if op: st['restarted']=True; return rng.choice(op)
        for _ in range(10000):
            c=neigh(st['cur'])
            if cost[c]<0: return c
            accept(c)
        op=[i for i in range(n) if cost[i]<0]; return op[0]
    def report(i,c):
        if cost[i]<0: st['measured']+=1
        cost[i]=c; st['since']+=1
        if st['best'] is None or c<cost[st['best']]: st['best']=i; st['since']=0
        if st['cur'] is None or st['restarted']: st['cur']=i
        else: accept(i)
        st['restarted']=False
    while len(order)<budget:
        i=nxt(); order.append(i); report(i,pts[i][2])
    return order


def polish_neigh(pts, i, vals, key, maxsteps=2):
    v,p,_=pts[i]; ks=sorted(p); out=[]
    def moves(q,k):
        vs=vals[(v,k)]; pos=vs.index(q[k]); r=[]
        for d in (-1,1):
            if 0<=pos+d<len(vs): r.append(vs[pos+d])
        return r
    for k in ks:
        for x in moves(p,k):
            q=dict(p); q[k]=x; j=key.get((v,tuple(sorted(q.items()))))
            if j is not None: out.append((1,j))
    if maxsteps>=2:
        for a in range(len(ks)):
            for b in range(a+1,len(ks)):
                for x in moves(p,ks[a]):
                    for y in moves(p,ks[b]):
                        q=dict(p); q[ks[a]]=x; q[ks[b]]=y; j=key.get((v,tuple(sorted(q.items()))))
                        if j is not None: out.append((2,j))
    return out


def anneal_polish(pts,budget,rng,frac=0.25,restart_div=None):
    a_budget=budget-int(budget*frac)
    order=anneal(pts,budget,rng,restart_div=restart_div)[:a_budget]
    # (anneal's own budget is 'budget' for its temperature; truncated here)
    measured=set(order)
    key={(v,tuple(sorted(p.items()))):i for i,(v,p,_) in enumerate(pts)}
    vals=defaultdict(set)
    for v,p,_ in pts:
        for k,x in p.items(): vals[(v,k)].add(x)
    vals={k:sorted(s) for k,s in vals.items()}
    while len(order)<budget:
        b=min(order,key=lambda i:pts[i][2])
        cand=[(d,rng.random(),j) for d,j in polish_neigh(pts,b,vals,key) if j not in measured]
        if not cand:
            # next best measured point's neighbourhood
            done=False
            for b in sorted(order,key=lambda i:pts[i][2])[1:]:
                cand=[(d,rng.random(),j) for d,j in polish_neigh(pts,b,vals,key) if j not in measured]
                if cand: break
            if not cand:
                rest=[i for i in range(len(pts)) if i not in measured]
                if not rest: break
                cand=[(0,0,rng.choice(rest))]
        cand.sort(); j=cand[0][2]; order.append(j); measured.add(j)
    return order


def success_rate(pts, strategy, seeds=200, **kw):
    best = min(c for _, _, c in pts)
    budget = len(pts) // 4
    ok = 0
    for seed in range(1000, 1000 + seeds):
        order = strategy(pts, budget, random.Random(seed), **kw)
        ok += min(pts[i][2] for i in order) <= 1.05 * best
    return ok / seeds


def main():
    global PAIR
    recs = [load(f) for f in RECORDINGS]
    print("columns: " + ", ".join(f.split("sweeps/")[1] for f in RECORDINGS))
    print("%-19s" % "random", [round(success_rate(p, rand_strat), 2) for p in recs])
    for name, pair, restart in (("anneal", 0.0, None), ("pair 0.2", 0.2, None), ("pair 0.3", 0.3, None),
                                ("restart /5", 0.0, 5), ("restart /5 pair .2", 0.2, 5)):
        PAIR = pair
        print("%-19s" % name, [round(success_rate(p, anneal, restart_div=restart), 2) for p in recs], flush=True)
    PAIR = 0.0
    for frac in (0.15, 0.25, 0.35):
        print("%-19s" % ("polish %g" % frac), [round(success_rate(p, anneal_polish, frac=frac), 2) for p in recs],
              flush=True)


if __name__ == "__main__":
    main()
