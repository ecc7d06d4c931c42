#!/usr/bin/env python3
# Host emulation of the f16-arithmetic kernels' rounding (issue #21 item 3), the numbers
# behind their tolerances (the families' tolerance(variant, dtype)) and behind GEMM's
# f32 accumulation: no device that CI or the H200 offers has cl_khr_fp16, so these
# kernels are compiled in CI (tests/test_cl_half_compile.cpp) but not run.
# numpy's float16 rounds every operation's result to half (round to nearest): the
# kernels' order of operations is mirrored, what they keep in f32 is kept in float32.
# Built-ins (exp, erf) are correctly rounded here; a device's half built-ins may be a
# few ulp worse, which the tolerances leave room for. Inputs as the families' check
# problems draw them; f32 storage (inputs rounded to half inside the kernel: the worse case).
# Prints, per op, the largest absolute error, the relative L2 error, and the atol an
# element test |err| <= atol + rtol |ref| would need at rtol 4e-3.
# Usage: scripts/half-arithmetic-sim.py   (numpy only; about a minute)
import numpy as np, math
rng = np.random.default_rng(2)  # fixed: the printed numbers are reproducible
h = np.float16
def H(a): return np.asarray(a, np.float32).astype(h)
def rep(name, out, ref):
    out = out.astype(np.float64); err = np.abs(out - ref)
    print(f"{name:34s} maxabs={err.max():.2e} relL2={np.linalg.norm(out-ref)/np.linalg.norm(ref):.2e} "
          f"atol_at_rtol4e-3={np.max(err - 4e-3*np.abs(ref)):.2e} atol_at_rtol1e-2={np.max(err - 1e-2*np.abs(ref)):.2e}")
verf = np.vectorize(math.erf)
# activation, inputs N(0, 2.5), f32 storage
x = (rng.standard_normal(200000) * 2.5).astype(np.float32)
xd = x.astype(np.float64)
xh = H(x)
gelu_ref = 0.5 * xd * (1 + verf(xd / math.sqrt(2)))
erf_h = H(verf(H(xh * H(0.70710678)).astype(np.float64)))  # correctly rounded half erf
rep("gelu (erf)", H(H(H(0.5) * xh) * H(H(1) + erf_h)), gelu_ref)
with np.errstate(over='ignore'):
    silu_ref = xd / (1 + np.exp(-xd))
    rep("silu", H(xh / H(H(1) + H(np.exp(-xh.astype(np.float32))))), silu_ref)
# groupnorm one group: cached path, silu + residual, group of 40960, mean 0 or 1000
for mean in [0.0, 1000.0]:
    n = 40960
    cm = mean + 4 * rng.random(10) - 2; sc = 0.5 + 1.5 * rng.random(10)
    xg = (np.repeat(cm, n // 10) + np.repeat(sc, n // 10) * rng.standard_normal(n)).astype(np.float32)
    gam = (1 + 0.3 * rng.standard_normal(10)).astype(np.float32); bet = (0.5 * rng.standard_normal(10)).astype(np.float32)
    gam, bet = np.repeat(gam, n // 10), np.repeat(bet, n // 10)
    res = rng.standard_normal(n).astype(np.float32)
    X = xg.astype(np.float64); mu = X.mean(); var = X.var()
    z = (X - mu) / np.sqrt(var + 1e-5) * gam + bet; z = z / (1 + np.exp(-z)) + res
    K = xg[0]; d = (xg - K).astype(np.float32); v = H(d)
    m = np.float32(d.astype(np.float32).sum(dtype=np.float32) / n)
    dv = v.astype(np.float32) - m; rstd = np.float32(1 / np.sqrt((dv * dv).sum(dtype=np.float32) / n + 1e-5))
    a = H(H(gam) * H(rstd)); o = H(H(H(v - H(m)) * a) + H(bet))
    o = H(o / H(H(1) + H(np.exp(-o.astype(np.float32))))); o = H(o + H(res))
    rep(f"groupnorm silu+res mean={mean:g}", o, z)
# layernorm C=1280
C, T = 1280, 64
xl = (rng.uniform(-2, 2, (T, 1)) + rng.uniform(0.5, 2, (T, 1)) * rng.standard_normal((T, C))).astype(np.float32)
g = (1 + 0.3 * rng.standard_normal(C)).astype(np.float32); b = (0.5 * rng.standard_normal(C)).astype(np.float32)
X = xl.astype(np.float64); ref = (X - X.mean(1, keepdims=True)) / np.sqrt(X.var(1, keepdims=True) + 1e-5) * g + b
K = xl[:, :1]; d = xl - K; m = d.mean(1, keepdims=True, dtype=np.float32)
rstd = 1 / np.sqrt(np.maximum((d * d).mean(1, keepdims=True, dtype=np.float32) - m * m, 0) + 1e-5)
vv = H(H(H(d) - H(m)) * H(rstd)); o = H(vv.astype(np.float32) * g.astype(h).astype(np.float32) + b.astype(h).astype(np.float32))  # fma: one rounding
rep("layernorm C=1280", o, ref)
# softmax rows C=4096 scale 0.158 and C=40 +100 logits
for C, scale, off in [(4096, 0.158, 0.0), (1024, 0.112, 0.0), (40, 1.0, 100.0), (77, 0.125, 0.0)]:
    xs = (off + 4 * rng.random((64, 1)) - 2 + (0.5 + 1.5 * rng.random((64, 1))) * rng.standard_normal((64, C))).astype(np.float32)
    L = xs.astype(np.float64) * scale; ref = np.exp(L - L.max(1, keepdims=True)); ref /= ref.sum(1, keepdims=True)
    v = xs * np.float32(scale); mx = v.max(1, keepdims=True)
    e = H(np.exp(H(v - mx).astype(np.float32))); ssum = e.astype(np.float32).sum(1, keepdims=True)
    o = H(e * H(1 / ssum))
    rep(f"softmax C={C} scale={scale} +{off:g}", o, ref)

# GEMM (direct_f16): products summed in half over HK K-slices (4 HK products), those
# sums in f32; HK=all is all of K in half (what direct_f16 does not do).
# An FMA is emulated as a multiply and an add, two roundings: pessimistic.
rng = np.random.default_rng(1)
h = np.float16
for K in [37, 100, 768, 3072, 5120]:
    M, N = 64, 64
    x = rng.standard_normal((M, K)).astype(np.float32)
    w = (rng.standard_normal((N, K)) / np.sqrt(K)).astype(np.float32)
    ref = x.astype(np.float64) @ w.T.astype(np.float64)
    xh, wh = x.astype(h), w.astype(h)
    for HK in [1, 4, 8, 16, 10**9]:
        acc = np.zeros((M, N), np.float32)
        chunk = 4 * HK
        for k0 in range(0, K, chunk):
            part = np.zeros((M, N), h)
            for k in range(k0, min(K, k0 + chunk)):
                part = (part + (xh[:, k:k+1] * wh[:, k][None, :]).astype(h)).astype(h)  # fma ~ mul+add (2 roundings: pessimistic)
            acc = acc + part.astype(np.float32)
        out = acc.astype(h).astype(np.float64)
        err = np.abs(out - ref)
        print(f"K={K:5d} HK={'all' if HK>1e6 else HK:>3} maxabs={err.max():.2e} relL2={np.linalg.norm(out-ref)/np.linalg.norm(ref):.2e} atol_at_rtol4e-3={np.max(err - 4e-3*np.abs(ref)):.2e}")
# gemm coopmat_f16 (tensor cores, kernels/gemm/gemm_coopmat.comp): x and w rounded to
# half once, their products exact (11 x 11 bits fit f32), summed in f32 per 16-deep
# coopmat step; the result rounded to half as the epilogue takes it (afp), then GELU in
# half on the same values (a few more roundings of |y| <= 5).
for K in [37, 320, 1280, 5120]:
    M, N = 512, 256
    x = rng.standard_normal((M, K)).astype(np.float32)
    w = (rng.standard_normal((N, K)) / np.sqrt(K)).astype(np.float32)
    ref = x.astype(np.float64) @ w.T.astype(np.float64)
    xh, wh = x.astype(h).astype(np.float64), w.astype(h).astype(np.float64)
    acc = np.zeros((M, N), np.float32)
    for k0 in range(0, K, 16):
        acc = (acc + (xh[:, k0:k0+16] @ wh[:, k0:k0+16].T).astype(np.float32)).astype(np.float32)
    rep(f"gemm coopmat K={K} (sum)", acc.astype(h), ref)
    yh = H(acc)
    g = H(H(H(0.5) * yh) * H(H(1) + H(verf(H(yh * H(0.70710678)).astype(np.float64)))))
    rep(f"gemm coopmat K={K} (+ half gelu)", g, 0.5 * ref * (1 + verf(ref / math.sqrt(2))))
# conv coopmat_f16 (kernels/conv/conv_coopmat.comp): gemm coopmat's scheme on conv's
# K = Cin k k (27 = conv_in's 3x3 over 3 channels ... 23040 = 2560 x 9, w ~ N(0, 1/K)),
# the im2col columns being x values (N(0, 1)); the epilogue adds bias, temb and residual
# in f32 (conv.comp's storeY), the output stored in f32 or rounded to half (f16 storage).
for K in [27, 2880, 23040]:
    M, N = 256, 128
    x = rng.standard_normal((M, K)).astype(np.float32)
    w = (rng.standard_normal((N, K)) / np.sqrt(K)).astype(np.float32)
    e = rng.standard_normal((M, N))  # bias + temb + residual, of order 1
    ref = x.astype(np.float64) @ w.T.astype(np.float64) + e
    xh, wh = x.astype(h).astype(np.float64), w.astype(h).astype(np.float64)
    acc = np.zeros((M, N), np.float32)
    for k0 in range(0, K, 16):
        acc = (acc + (xh[:, k0:k0+16] @ wh[:, k0:k0+16].T).astype(np.float32)).astype(np.float32)
    y = (acc + e.astype(np.float32)).astype(np.float32)
    rep(f"conv coopmat K={K} (f32 out)", y, ref)
    rep(f"conv coopmat K={K} (f16 out)", y.astype(h), ref)

# GEMM tiled_f16 and the conv implicit GEMM twins (im2col_gemm_f16, conv1x1_f16): the
# same scheme with a chunk of one local-memory step (tiled's KWG, conv's KT: 8 to 32
# products) and the tiles rounded to half once; conv's K = Cin k k reaches 23040 (w ~
# N(0, 1/K) as ConvFamily::makeInputs draws them). Then the epilogue: GEMM's in half,
# conv's adds (bias, temb, residual ~ N(0, 1)) in f32 on the f32 sum.
print("conv implicit GEMM / gemm tiled_f16: chunk = KT (or KWG) products")
for K in [27, 2880, 11520, 23040]:
    M, N = 32, 32
    x = rng.standard_normal((M, K)).astype(np.float32)
    w = (rng.standard_normal((N, K)) / np.sqrt(K)).astype(np.float32)
    res = rng.standard_normal((M, N)).astype(np.float32)
    ref = x.astype(np.float64) @ w.T.astype(np.float64) + res
    xh, wh = x.astype(h), w.astype(h)
    for KT in [8, 32]:
        acc = np.zeros((M, N), np.float32)
        for k0 in range(0, K, KT):
            part = np.zeros((M, N), h)
            for k in range(k0, min(K, k0 + KT)):
                part = (part + (xh[:, k:k+1] * wh[:, k][None, :]).astype(h)).astype(h)
            acc = acc + part.astype(np.float32)
        rep(f"conv K={K:5d} KT={KT:2d} (+res in f32)", (acc + res).astype(h), ref)

# attention flash_f16: q pre-scaled by scale log2 e, q, K, V rounded to half; a score's
# per-lane sums of D/4 products in half, its 4 lanes summed in f32; online softmax in
# f32 per chunk of KC keys (max, corr, exp2, sum); the weights rounded to half, each
# chunk's P V summed in half and added to the f32 accumulator after the rescaling.
# Inputs as AttentionFamily::makeInputs: q, k, v ~ N(0, 1), scale 1/sqrt(D).
print("attention flash_f16 (KC = 16)")
for D, L in [(8, 37), (40, 45), (40, 4096), (160, 256), (512, 1024)]:
    S, KC = 16, 16
    q = rng.standard_normal((S, D)).astype(np.float32)
    k = rng.standard_normal((L, D)).astype(np.float32)
    v = rng.standard_normal((L, D)).astype(np.float32)
    sc = 1 / math.sqrt(D)
    lg = q.astype(np.float64) @ k.T.astype(np.float64) * sc
    pr = np.exp(lg - lg.max(1, keepdims=True)); pr /= pr.sum(1, keepdims=True)
    ref = pr @ v.astype(np.float64)
    qh = H(q * np.float32(sc * math.log2(math.e))); kh, vh = H(k), H(v)
    lanes = np.zeros((S, L, 4), h)
    for j in range(D // 4):  # per-lane half FMA chains over the head's slices
        lanes = (lanes + (qh[:, None, 4*j:4*j+4] * kh[None, :, 4*j:4*j+4]).astype(h)).astype(h)
    lf = lanes.astype(np.float32)
    x = (lf[..., 0] + lf[..., 1]) + (lf[..., 2] + lf[..., 3])
    m = np.full((S, 1), -np.inf, np.float32); den = np.zeros((S, 1), np.float32)
    acc = np.zeros((S, D), np.float32)
    for c0 in range(0, L, KC):
        xc = x[:, c0:c0+KC]
        mnew = np.maximum(m, xc.max(1, keepdims=True))
        corr = np.exp2(m - mnew); m = mnew
        den = den * corr; acc = acc * corr
        p = np.exp2(xc - mnew).astype(np.float32); den = den + p.sum(1, keepdims=True, dtype=np.float32)
        part = np.zeros((S, D), h)
        for c in range(xc.shape[1]):
            part = (part + (H(p[:, c:c+1]) * vh[c0 + c][None, :]).astype(h)).astype(h)
        acc = acc + part.astype(np.float32)
    out = (acc / den)
    rep(f"flash_f16 D={D:3d} L={L:4d} (f32 out)", out, ref)
    rep(f"flash_f16 D={D:3d} L={L:4d} (f16 out)", H(out), ref)

# attention flash_coopmat_f16 (tensor cores): q pre-scaled by scale log2 e, q, K, V rounded
# to half once; Q K^T as exact f16 x f16 products summed in f32 (the coopmat accumulator,
# per 16-deep step: float32 sums here); the online softmax per block of BC keys in f32; the
# weights rounded to half, P V products exact, summed in f32 into the f32 O (shared memory),
# rescaled per block in f32; out = O / sum. Inputs as makeInputs: q, k, v ~ N(0, 1).
print("attention flash_coopmat_f16 (BC = 32)")
for D, L in [(8, 37), (40, 45), (40, 4096), (80, 1024), (160, 256), (512, 1024)]:
    S, BC = 16, 32
    q = rng.standard_normal((S, D)).astype(np.float32)
    k = rng.standard_normal((L, D)).astype(np.float32)
    v = rng.standard_normal((L, D)).astype(np.float32)
    sc = 1 / math.sqrt(D)
    lg = q.astype(np.float64) @ k.T.astype(np.float64) * sc
    pr = np.exp(lg - lg.max(1, keepdims=True)); pr /= pr.sum(1, keepdims=True)
    ref = pr @ v.astype(np.float64)
    qh = H(q * np.float32(sc * math.log2(math.e))); kh, vh = H(k), H(v)
    x = np.zeros((S, L), np.float32)
    for d0 in range(0, D, 16):  # f32 accumulation of exact products, 16 at a time
        x = x + (qh[:, d0:d0+16].astype(np.float64) @ kh[:, d0:d0+16].T.astype(np.float64)).astype(np.float32)
    m = np.full((S, 1), -np.inf, np.float32); den = np.zeros((S, 1), np.float32)
    acc = np.zeros((S, D), np.float32)
    for c0 in range(0, L, BC):
        xc = x[:, c0:c0+BC]
        mnew = np.maximum(m, xc.max(1, keepdims=True))
        corr = np.exp2(m - mnew); m = mnew
        den = den * corr; acc = acc * corr
        p = np.exp2(xc - mnew).astype(np.float32); den = den + p.sum(1, keepdims=True, dtype=np.float32)
        ph = H(p)
        for kk in range(0, ph.shape[1], 16):
            acc = acc + (ph[:, kk:kk+16].astype(np.float64) @ vh[c0+kk:c0+kk+16].astype(np.float64)).astype(np.float32)
    out = acc / den
    rep(f"coopmat D={D:3d} L={L:4d} (f32 out)", out, ref)
    rep(f"coopmat D={D:3d} L={L:4d} (f16 out)", H(out), ref)
