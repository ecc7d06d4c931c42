#!/usr/bin/env python3
"""Times sdspeed's op instances with PyTorch on CUDA, the way sdspeed times them.

The peer of sdspeed-bench (bench/sdspeed_bench.cpp) for scripts/bench-vs-pytorch:
the same op instances, timed with CUDA events after a warm-up, median and minimum
over repeats enqueued in batches, with the inputs rotated among enough distinct
copies that their total exceeds 2x an L2 size (--llc-mib, default 60 MiB: an H200's
L2), capped at 64 copies as sdspeed does (runtime/opencl/timing.cpp rotationsFor):
copies = min(64, 2 * L2 // bytes_per_run + 1), bytes_per_run = every input and the
output once (sdspeed's Family::minBytes).

fp32 throughout (f16 instances run in float16), TF32 disabled for matmuls and cuDNN.
By default each run is captured in a CUDA graph and replayed between the two
events, so launch overhead on the host does not count (sdspeed's time is from the
first kernel's start to the last kernel's end); --no-graphs times eager calls.

Instances (op instance text, tuning/op_instance.h; the storage format only picks the
dtype: PyTorch uses its own contiguous layouts, tokens as [B, S, C]):
  groupnorm NxCxHxW eps=E g=G residual=0|1 silu=0|1 f32.buffer.nchw
      F.group_norm (+ F.silu) (+ residual) on NCHW
  layernorm Bx Cx1xS eps=E ...      F.layer_norm over C of [B, S, C]
  softmax   BxCx1xS scale=A ...     torch.softmax(A * x, -1) over C of [B, S, C]
  activation NxCxHxW fn=F ...       gelu (erf), gelu_tanh, quick_gelu, silu on
      [N, H*W, C]; geglu: hidden, gate = x.chunk(2, -1); hidden * gelu(gate)
  attention BxHxSxL d=D ...         q [B, H, S, D], k and v [B, H, L, D]:
      F.scaled_dot_product_attention (op "attention") and, for the same instance,
      the explicit softmax(q k^T / sqrt(D)) v with matmuls (op "attention_naive").
      Attributes b=, heads=, s=, l= override the shape's dimensions.
  gemm NxKxHxW n=R epilogue=E bias=0|1 residual=0|1 ...
      F.linear of x [N, H*W, K] with weight [R, K] (+ bias [R]), then the epilogue
      (gelu, gelu_tanh, quick_gelu, silu; geglu: hidden, gate = y.chunk(2, -1),
      hidden * gelu(gate)), then + residual [N, H*W, R or R/2]; fp32 without TF32.
  conv NxCxHxW bias=0|1 cout=O k=K pad=P residual=0|1 stride=S temb=0|1 ...
      F.conv2d of x [N, C, H, W] with weight [O, C, K, K] (+ bias [O]), stride S,
      padding P (default K // 2), + temb [N, O, 1, 1] + residual [N, O, Ho, Wo];
      cuDNN without TF32, cudnn.benchmark on (cuDNN times its algorithms once per
      shape and keeps the fastest, as a tuned inference setup would).
  binary NxCxHxW broadcast=0|1 fn=add|mul ...
      a + b or a * b on NCHW; broadcast=1: b is [N, C, 1, 1] (the ResNet time-
      embedding add, diffusers' hidden + temb[:, :, None, None]), else a's shape.
  upsample NxCxHxW scale=F ...      F.interpolate(x, scale_factor=F, mode="nearest")
      (diffusers Upsample2D), x [N, C, H, W] -> [N, C, F*H, F*W].
  concat NxCxHxW c2=C2 ...          torch.cat([a, b], dim=1), a [N, C, H, W],
      b [N, C2, H, W] (the UNet's skip connections; c2 defaults to C).
  reshape NxCxHxW h=H2 ...          sdspeed's copy of the logical NCHW array into
      [N, C, H2, H*W/H2] (image <-> tokens; free in buffer storage, a copy kernel in
      image2d): x.reshape(N, C, H2, H*W // H2).clone(), the same bytes copied.
  embedding BxCx1xS positions=P vocab=V ...
      CLIP's input embeddings: F.embedding(ids, tok) + pos[:S], ids [B, S] (int64,
      uniform in [0, V)), tok [V, C], pos [P, C] -> [B, S, C]. Bytes as sdspeed counts
      them: the ids, the token rows they select (at most B*S), S position rows and the
      output, not the whole token table; ids and tables as f32 parameters.
  timestep Bxdimx1x1 flip_sin_to_cos=0|1 freq_shift=S ...
      diffusers' get_timestep_embedding(t, dim, flip_sin_to_cos, S) (scale 1,
      max_period 10000) on t [B] (f32, in [0.5, 999.5]), -> [B, dim] (cast to the
      instance's dtype, as diffusers' UNet does); t an f32 parameter.
Given as arguments, one per line in --instances FILE, or from a shape-set YAML
(--shapes; PyYAML if installed, else a reader for the one-line flow mappings that
configs/shapes/*.yaml use), whose attributes are completed with sdspeed's defaults
and printed canonically, so the texts match sdspeed-bench's names.

Output: one JSON object per line (stdout or --out):
  {"op", "instance", "median_ms", "min_ms", "repeats", "rotations", "graphs",
   "torch", "device"}
--dry-run prints the parsed instances, their tensors and rotation counts without
importing torch.
"""

import argparse
import json
import math
import re
import statistics
import sys

DEFAULTS = {
    "groupnorm": {"eps": "1e-05", "g": "32", "residual": "0", "silu": "0"},
    "layernorm": {"eps": "1e-05"},
    "softmax": {"scale": "1"},
    "activation": {"fn": "gelu"},
    "attention": {"causal": "0", "heads": "1", "mask": "0"},  # kv defaults to S
    "gemm": {"bias": "1", "epilogue": "none", "residual": "0"},  # n is required
    "conv": {"bias": "1", "k": "3", "residual": "0", "stride": "1", "temb": "0"},  # cout: C, pad: k // 2
    # The elementwise helper families (kernels/<family>/<family>_family.cpp makeProblem).
    "binary": {"broadcast": "0", "fn": "add"},
    "upsample": {"scale": "2"},
    "concat": {},  # c2: C
    "reshape": {"h": "1"},
    "embedding": {"positions": "77", "vocab": "49408"},  # CLIP ViT-L/14
    "timestep": {"flip_sin_to_cos": "1", "freq_shift": "0"},  # SD 1.5's Timesteps(320, True, 0)
}
TEXT_ATTRS = {"fn", "epilogue"}  # not numbers
# Integer attributes sdspeed reads with AttrReader::getInt and prints with
# std::to_string, as (low, high); per family (softmax's scale is a float, upsample's not).
INT_ATTRS = {
    "binary": {"broadcast": (0, 1)},
    "upsample": {"scale": (1, 8)},
    "concat": {"c2": (1, 1 << 20)},
    "reshape": {"h": (1, None)},  # high: H*W
    "embedding": {"vocab": (1, 1 << 24), "positions": (1, 1 << 20)},
    "timestep": {"flip_sin_to_cos": (0, 1)},
}
# Float attributes sdspeed prints with attrText (the shortest %.Ng that reads back).
EXACT_ATTRS = {"timestep": {"freq_shift"}}
CHOICES = {"binary": {"fn": ("add", "mul")}}
# Tensors sdspeed keeps as f32 parameter buffers whatever the run's dtype (slots with
# activation=false), for the byte count; PyTorch gets ids as int64 and t as f32.
PARAM_TENSORS = {"embedding": {"ids", "tok", "pos"}, "timestep": {"t"}}
# The storage format, then sdspeed's optional weight-format and arithmetic suffixes
# (".wf16", ".af16": tuning/op_instance.h). PyTorch runs an f16 instance in float16
# whatever the suffixes say: its weights are float16 and cuBLAS multiplies f16 on tensor
# cores, accumulating in f32 (reduced-precision reductions are switched off below).
FORMATS = re.compile(r"^(f32|f16)\.(buffer|image2d)\.(nchw|nc4hw4)(\.w(f32|f16|int8|int4))?(\.a(f32|f16))?$")
MAX_ROTATIONS = 64


def canonical_number(text):
    """sdspeed prints attribute numbers with %g (std::ostream default)."""
    try:
        value = float(text)
    except ValueError:
        return text
    return "%g" % value


def attr_text(value):
    """sdspeed's attrText: the shortest %.Ng (N = 1..17) that reads back exactly."""
    for prec in range(1, 18):
        text = "%.*g" % (prec, value)
        if float(text) == value:
            break
    return text


def canonical_int(family, name, text, low, high):
    """sdspeed's AttrReader::getInt: an integer in [low, high], printed plainly."""
    try:
        value = int(text)
    except ValueError:
        value = None
    if value is None or not re.match(r"^-?[0-9]+$", text) or value < low or (high is not None and value > high):
        raise ValueError("bad %s attribute %s=%s (want an integer in [%d, %s])"
                         % (family, name, text, low, high if high is not None else "..."))
    return str(value)


class Instance:
    def __init__(self, family, shape, attrs, fmt="f32.buffer.nchw"):
        if family not in DEFAULTS:
            raise ValueError("unknown op '%s' (known: %s)" % (family, ", ".join(DEFAULTS)))
        if not FORMATS.match(fmt):
            raise ValueError("bad storage format '%s'" % fmt)
        self.family = family
        self.shape = shape
        merged = dict(DEFAULTS[family])
        merged.update({k: str(v) for k, v in attrs.items()})
        if family == "attention" and "kv" not in merged:
            merged["kv"] = str(shape[3])
        if family == "gemm" and "n" not in merged:
            raise ValueError("gemm needs attribute n (the Linear's output features)")
        if family == "conv":
            merged.setdefault("cout", str(shape[1]))
            merged.setdefault("pad", str(int(merged["k"]) // 2))
        if family == "concat":
            merged.setdefault("c2", str(shape[1]))
        ints, exact = INT_ATTRS.get(family, {}), EXACT_ATTRS.get(family, set())
        attrs = {}
        for k, v in merged.items():
            if k in TEXT_ATTRS:
                attrs[k] = v
            elif k in ints:
                attrs[k] = canonical_int(family, k, v, *ints[k])
            elif k in exact:
                try:
                    attrs[k] = attr_text(float(v))
                except ValueError:
                    raise ValueError("bad %s attribute %s=%s (want a number)" % (family, k, v)) from None
            else:
                attrs[k] = canonical_number(v)
        for k, choices in CHOICES.get(family, {}).items():
            if attrs[k] not in choices:
                raise ValueError("bad %s attribute %s=%s (known: %s)" % (family, k, attrs[k], ", ".join(choices)))
        self.attrs = attrs
        self.format = fmt
        check_elementwise(self)

    @property
    def dtype_name(self):
        return "float16" if self.format.startswith("f16") else "float32"

    def text(self):
        words = [self.family, "x".join(str(d) for d in self.shape)]
        words += ["%s=%s" % (k, self.attrs[k]) for k in sorted(self.attrs)]
        words.append(self.format)
        return " ".join(words)

    @staticmethod
    def parse(text):
        words = text.split()
        if len(words) < 2:
            raise ValueError("bad op instance '%s' (want FAMILY NxCxHxW NAME=VALUE... FORMAT)" % text)
        family, shape_text, rest = words[0], words[1], words[2:]
        shape = parse_shape(shape_text)
        fmt = "f32.buffer.nchw"
        attrs = {}
        for w in rest:
            if "=" in w:
                k, v = w.split("=", 1)
                attrs[k] = v
            else:
                fmt = w
        return Instance(family, shape, attrs, fmt)


def parse_shape(text):
    try:
        dims = [int(d) for d in text.split("x")]
    except ValueError:
        dims = []
    if len(dims) != 4 or min(dims) <= 0:
        raise ValueError("bad shape '%s' (want NxCxHxW)" % text)
    return dims


def check_elementwise(inst):
    """The shape rules of sdspeed's makeProblem for the elementwise helper families."""
    n, c, h, w = inst.shape
    a = inst.attrs
    if inst.family == "reshape" and (h * w) % int(a["h"]):
        raise ValueError("bad reshape attribute h=%s: does not divide H*W = %d" % (a["h"], h * w))
    if inst.family == "embedding":
        if h != 1:
            raise ValueError("embedding: the output is a token tensor [B, C, 1, S]: " + inst.text())
        if w > int(a["positions"]):
            raise ValueError("embedding: %d tokens but positions=%s" % (w, a["positions"]))
    if inst.family == "timestep":
        if h != 1 or w != 1:
            raise ValueError("timestep: the output is [B, dim, 1, 1]: " + inst.text())
        if not c // 2 - float(a["freq_shift"]) > 0:
            raise ValueError("timestep: dim / 2 - freq_shift must be positive: " + inst.text())


def read_shape_set(path):
    """The instances of a configs/shapes/*.yaml file, in file order, without repeats."""
    with open(path) as f:
        text = f.read()
    try:
        import yaml  # optional

        entries = [(e["op"], str(e["shape"]), e.get("attrs") or {}) for e in yaml.safe_load(text)["instances"]]
    except ImportError:
        entries = []
        item = re.compile(r"^\s*-\s*\{(.*)\}\s*(#.*)?$")
        for line in text.splitlines():
            m = item.match(line)
            if not m:
                continue
            body = m.group(1)
            attrs = {}
            a = re.search(r"attrs:\s*\{([^}]*)\}", body)
            if a:
                for kv in a.group(1).split(","):
                    if kv.strip():
                        k, v = kv.split(":", 1)
                        attrs[k.strip()] = v.strip()
                body = body[: a.start()] + body[a.end():]
            fields = dict(kv.split(":", 1) for kv in body.split(",") if ":" in kv)
            fields = {k.strip(): v.strip() for k, v in fields.items()}
            entries.append((fields["op"], fields["shape"], attrs))
    out, seen = [], set()
    for op, shape, attrs in entries:
        inst = Instance(op, parse_shape(shape), attrs)
        if inst.text() not in seen:
            seen.add(inst.text())
            out.append(inst)
    return out


def attention_dims(inst):
    """sdspeed's attention instance: shape B x (heads*D) x 1 x S, attributes heads, kv
    (key length L, default S), causal, mask (additive mask input), scale."""
    b, c, h, s = inst.shape
    a = inst.attrs
    heads = int(a.get("heads", 1))
    if h != 1 or c % heads:
        raise ValueError("attention wants Bx(HEADS*D)x1xS with heads dividing the channels: " + inst.text())
    if a.get("mask", "0") != "0":
        raise ValueError("attention with an additive mask input is not timed: " + inst.text())
    return b, heads, s, int(a.get("kv", s)), c // heads


def tensors_of(inst):
    """[(name, shape)] of every tensor a run reads, and the output's shape."""
    n, c, h, w = inst.shape
    a = inst.attrs
    if inst.family == "groupnorm":
        ins = [("x", (n, c, h, w)), ("weight", (c,)), ("bias", (c,))]
        if a["residual"] != "0":
            ins.append(("residual", (n, c, h, w)))
        return ins, (n, c, h, w)
    if inst.family == "layernorm":
        return [("x", (n, h * w, c)), ("weight", (c,)), ("bias", (c,))], (n, h * w, c)
    if inst.family == "softmax":
        return [("x", (n, h * w, c))], (n, h * w, c)
    if inst.family == "activation":
        out_c = c // 2 if a["fn"] == "geglu" else c
        return [("x", (n, h * w, c))], (n, h * w, out_c)
    if inst.family == "attention":
        b, heads, s, l, d = attention_dims(inst)
        return [("q", (b, heads, s, d)), ("k", (b, heads, l, d)), ("v", (b, heads, l, d))], (b, heads, s, d)
    if inst.family == "gemm":
        rows = int(a["n"])
        out_c = rows // 2 if a["epilogue"] == "geglu" else rows
        ins = [("x", (n, h * w, c)), ("weight", (rows, c))]
        if a["bias"] != "0":
            ins.append(("bias", (rows,)))
        if a["residual"] != "0":
            ins.append(("residual", (n, h * w, out_c)))
        return ins, (n, h * w, out_c)
    if inst.family == "conv":
        cout, k, stride, pad = (int(a[key]) for key in ("cout", "k", "stride", "pad"))
        ho, wo = (h + 2 * pad - k) // stride + 1, (w + 2 * pad - k) // stride + 1
        ins = [("x", (n, c, h, w)), ("weight", (cout, c, k, k))]
        if a["bias"] != "0":
            ins.append(("bias", (cout,)))
        if a["temb"] != "0":
            ins.append(("temb", (n, cout, 1, 1)))
        if a["residual"] != "0":
            ins.append(("residual", (n, cout, ho, wo)))
        return ins, (n, cout, ho, wo)
    if inst.family == "binary":
        b_shape = (n, c, 1, 1) if a["broadcast"] != "0" else (n, c, h, w)
        return [("a", (n, c, h, w)), ("b", b_shape)], (n, c, h, w)
    if inst.family == "upsample":
        s = int(a["scale"])
        return [("x", (n, c, h, w))], (n, c, h * s, w * s)
    if inst.family == "concat":
        c2 = int(a["c2"])
        return [("a", (n, c, h, w)), ("b", (n, c2, h, w))], (n, c + c2, h, w)
    if inst.family == "reshape":
        h2 = int(a["h"])
        return [("x", (n, c, h, w))], (n, c, h2, h * w // h2)
    if inst.family == "embedding":  # y is B x C x 1 x S: tokens [B, S, C]
        return [("ids", (n, w)), ("tok", (int(a["vocab"]), c)), ("pos", (int(a["positions"]), c))], (n, w, c)
    if inst.family == "timestep":  # y is B x dim x 1 x 1
        return [("t", (n,))], (n, c)
    raise ValueError(inst.family)


def bytes_per_run(inst):
    """sdspeed's Family::minBytes: every input and the output once, activations in the
    run's dtype, parameter buffers of PARAM_TENSORS in f32; the embedding counts only
    the token rows it reads (EmbeddingFamily::minBytes)."""
    ins, out = tensors_of(inst)
    size = 2 if inst.dtype_name == "float16" else 4
    params = PARAM_TENSORS.get(inst.family, set())
    if inst.family == "embedding":
        b, s = ins[0][1]
        rows = min(b * s, int(inst.attrs["vocab"]))
        return 4 * (b * s + (rows + s) * out[2]) + size * math.prod(out)
    return sum((4 if name in params else size) * math.prod(shape) for name, shape in ins) + size * math.prod(out)


def make_inputs(inst, torch, device, dtype):
    """One set of the run's inputs: normal random activations and tables; token ids
    uniform in [0, vocab) (int64); timesteps uniform in [0.5, 999.5) (f32), as sdspeed's
    makeInputs draws them."""
    ins, _ = tensors_of(inst)
    out = []
    for name, shape in ins:
        if inst.family == "embedding" and name == "ids":
            out.append(torch.randint(0, int(inst.attrs["vocab"]), shape, device=device, dtype=torch.long))
        elif inst.family == "timestep" and name == "t":
            out.append(torch.rand(*shape, device=device, dtype=torch.float32) * 999.0 + 0.5)
        else:
            out.append(torch.randn(*shape, device=device, dtype=dtype))
    return out


def rotations_for(bytes_run, llc_bytes):
    """sdspeed's rotationsFor: enough copies to pass 2x the LLC, 1..64."""
    if bytes_run <= 0:
        return 1
    return max(1, min(MAX_ROTATIONS, 2 * llc_bytes // bytes_run + 1))


def op_functions(inst, torch, F):
    """[(op name, fn(*inputs))] to time for an instance."""
    a = inst.attrs
    fam = inst.family
    if fam == "groupnorm":
        g, eps = int(a["g"]), float(a["eps"])
        silu, residual = a["silu"] != "0", a["residual"] != "0"

        def groupnorm(x, weight, bias, res=None):
            y = F.group_norm(x, g, weight, bias, eps)
            if silu:
                y = F.silu(y)
            if residual:
                y = y + res
            return y

        return [("groupnorm", groupnorm)]
    if fam == "layernorm":
        eps = float(a["eps"])
        return [("layernorm", lambda x, weight, bias: F.layer_norm(x, (x.shape[-1],), weight, bias, eps))]
    if fam == "softmax":
        scale = float(a["scale"])
        if scale == 1.0:
            return [("softmax", lambda x: torch.softmax(x, dim=-1))]
        return [("softmax", lambda x: torch.softmax(x * scale, dim=-1))]
    if fam == "activation":
        fn = a["fn"]
        table = {
            "gelu": lambda x: F.gelu(x),
            "gelu_tanh": lambda x: F.gelu(x, approximate="tanh"),
            "quick_gelu": lambda x: x * torch.sigmoid(1.702 * x),
            "silu": lambda x: F.silu(x),
        }

        def geglu(x):
            hidden, gate = x.chunk(2, dim=-1)
            return hidden * F.gelu(gate)

        table["geglu"] = geglu
        if fn not in table:
            raise ValueError("unknown activation fn '%s'" % fn)
        return [("activation", table[fn])]
    if fam == "attention":
        _, _, s_len, l_len, d = attention_dims(inst)
        scale = float(inst.attrs["scale"]) if "scale" in inst.attrs else 1.0 / math.sqrt(d)
        causal = inst.attrs.get("causal", "0") != "0"

        def naive(q, k, v):
            scores = torch.matmul(q, k.transpose(-1, -2)) * scale
            if causal:
                keep = torch.ones(s_len, l_len, dtype=torch.bool, device=q.device).tril()
                scores = scores.masked_fill(~keep, float("-inf"))
            return torch.matmul(torch.softmax(scores, dim=-1), v)

        return [
            ("attention", lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=scale)),
            ("attention_naive", naive),
        ]
    if fam == "gemm":
        has_bias, residual, epi = a["bias"] != "0", a["residual"] != "0", a["epilogue"]
        acts = {
            "none": lambda y: y,
            "gelu": lambda y: F.gelu(y),
            "gelu_tanh": lambda y: F.gelu(y, approximate="tanh"),
            "quick_gelu": lambda y: y * torch.sigmoid(1.702 * y),
            "silu": lambda y: F.silu(y),
        }

        def geglu(y):
            hidden, gate = y.chunk(2, dim=-1)
            return hidden * F.gelu(gate)

        acts["geglu"] = geglu
        if epi not in acts:
            raise ValueError("unknown gemm epilogue '%s'" % epi)
        act = acts[epi]

        def linear(x, weight, *rest):
            rest = list(rest)
            b = rest.pop(0) if has_bias else None
            y = act(F.linear(x, weight, b))
            return y + rest[0] if residual else y

        return [("gemm", linear)]
    if fam == "conv":
        has_bias, temb, residual = a["bias"] != "0", a["temb"] != "0", a["residual"] != "0"
        stride, pad = int(a["stride"]), int(a["pad"])

        def conv(x, weight, *rest):
            rest = list(rest)
            b = rest.pop(0) if has_bias else None
            y = F.conv2d(x, weight, b, stride=stride, padding=pad)
            if temb:
                y = y + rest.pop(0)
            if residual:
                y = y + rest.pop(0)
            return y

        return [("conv", conv)]
    if fam == "binary":
        if a["fn"] == "mul":
            return [("binary", lambda x, b: x * b)]
        return [("binary", lambda x, b: x + b)]
    if fam == "upsample":
        scale = float(a["scale"])
        return [("upsample", lambda x: F.interpolate(x, scale_factor=scale, mode="nearest"))]
    if fam == "concat":
        return [("concat", lambda x, b: torch.cat([x, b], dim=1))]
    if fam == "reshape":
        _, out = tensors_of(inst)
        # reshape of a contiguous tensor is a view; clone() makes the copy sdspeed's kernel does.
        return [("reshape", lambda x: x.reshape(out).clone())]
    if fam == "embedding":
        s_len = inst.shape[3]
        # transformers' CLIPTextEmbeddings: token_embedding(ids) + position_embedding(0..S-1);
        # the positions 0..S-1 are a slice of the table, no gather needed.
        return [("embedding", lambda ids, tok, pos: F.embedding(ids, tok) + pos[:s_len])]
    if fam == "timestep":
        dim = inst.shape[1]
        flip, shift = a["flip_sin_to_cos"] != "0", float(a["freq_shift"])
        dtype = getattr(torch, inst.dtype_name)

        def get_timestep_embedding(timesteps):  # diffusers.models.embeddings, scale 1, max_period 10000
            half_dim = dim // 2
            exponent = -math.log(10000) * torch.arange(start=0, end=half_dim, dtype=torch.float32,
                                                       device=timesteps.device)
            exponent = exponent / (half_dim - shift)
            emb = torch.exp(exponent)
            emb = timesteps[:, None].float() * emb[None, :]
            emb = 1 * emb  # scale * emb: diffusers runs it with scale = 1
            emb = torch.cat([torch.sin(emb), torch.cos(emb)], dim=-1)
            if flip:
                emb = torch.cat([emb[:, half_dim:], emb[:, :half_dim]], dim=-1)
            if dim % 2 == 1:
                emb = F.pad(emb, (0, 1, 0, 0))
            return emb.to(dtype)  # the UNet's t_emb.to(dtype=sample.dtype)

        return [("timestep", get_timestep_embedding)]
    raise ValueError(fam)


def time_runs(torch, runners, warmup, min_ms, min_repeats, max_repeats):
    """runtime/opencl/timing.cpp timeOp: warm-up, then batches of runs (each between two
    events), read back after the batch, until min_repeats and min_ms of device time."""
    rot = len(runners)
    r = 0
    for _ in range(warmup):
        runners[r % rot]()
        r += 1
    torch.cuda.synchronize()
    samples, total, batch = [], 0.0, max(1, min_repeats)
    while len(samples) < max_repeats:
        batch = min(batch, max_repeats - len(samples))
        events = []
        for _ in range(batch):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            runners[r % rot]()
            end.record()
            r += 1
            events.append((start, end))
        torch.cuda.synchronize()
        for start, end in events:
            ms = start.elapsed_time(end)
            samples.append(ms)
            total += ms
        if len(samples) >= min_repeats and total >= min_ms:
            break
        per_run = max(total / len(samples), 1e-4)
        batch = max(1, min(256, int((min_ms - total) / per_run) + 1))
    return statistics.median(samples), min(samples), len(samples)


def make_runners(torch, fn, input_sets, graphs):
    if not graphs:
        return [lambda inputs=inputs: fn(*inputs) for inputs in input_sets], []
    runners, keep = [], []
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm-up before capture (lazy init, kernel choice)
        for inputs in input_sets[:1]:
            for _ in range(3):
                fn(*inputs)
    torch.cuda.current_stream().wait_stream(side)
    for inputs in input_sets:
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            out = fn(*inputs)
        keep.append((graph, out))
        runners.append(graph.replay)
    return runners, keep


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("instances", nargs="*", help="op instance texts")
    ap.add_argument("--instances", dest="instances_file", help="file of op instance texts, one per line")
    ap.add_argument("--shapes", help="a shape-set YAML (configs/shapes/*.yaml)")
    ap.add_argument("--op", help="only these families (comma-separated)")
    ap.add_argument("--llc-mib", type=float, default=60.0, help="L2 size to rotate past, MiB (default 60)")
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--min-ms", type=float, default=50.0, help="device time to measure per op (default 50)")
    ap.add_argument("--min-repeats", type=int, default=10)
    ap.add_argument("--max-repeats", type=int, default=20000)
    ap.add_argument("--no-graphs", action="store_true", help="time eager calls instead of CUDA graph replays")
    ap.add_argument("--device", default="cuda", help="torch device (default cuda)")
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--out", help="write the JSON lines here (default stdout)")
    ap.add_argument("--dry-run", action="store_true", help="print instances and rotations; no torch needed")
    args = ap.parse_args(argv)

    instances = []
    if args.shapes:
        instances += read_shape_set(args.shapes)
    if args.instances_file:
        with open(args.instances_file) as f:
            instances += [Instance.parse(line) for line in f if line.strip() and not line.startswith("#")]
    instances += [Instance.parse(t) for t in args.instances]
    if args.op:
        keep = set(args.op.split(","))
        instances = [i for i in instances if i.family in keep]
    if not instances:
        ap.error("no op instances (give texts, --instances FILE or --shapes FILE)")
    llc_bytes = int(args.llc_mib * (1 << 20))

    if args.dry_run:
        for inst in instances:
            ins, out = tensors_of(inst)
            b = bytes_per_run(inst)
            print(json.dumps({"instance": inst.text(), "inputs": {n: list(s) for n, s in ins}, "output": list(out),
                              "bytes": b, "rotations": rotations_for(b, llc_bytes)}))
        return 0

    import torch
    import torch.nn.functional as F

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = False
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cudnn.benchmark = True
    torch.manual_seed(args.seed)
    device = torch.device(args.device)
    device_name = torch.cuda.get_device_name(device)
    out = open(args.out, "w") if args.out else sys.stdout
    try:
        for inst in instances:
            dtype = getattr(torch, inst.dtype_name)
            rotations = rotations_for(bytes_per_run(inst), llc_bytes)
            with torch.no_grad():
                input_sets = [make_inputs(inst, torch, device, dtype) for _ in range(rotations)]
                for op, fn in op_functions(inst, torch, F):
                    graphs = not args.no_graphs
                    try:
                        runners, keep = make_runners(torch, fn, input_sets, graphs)
                    except RuntimeError as e:  # capture unsupported: time eager calls
                        print("pytorch_ops: %s %s: CUDA graph capture failed (%s); timing eager calls"
                              % (op, inst.text(), e), file=sys.stderr)
                        graphs = False
                        runners, keep = make_runners(torch, fn, input_sets, False)
                    median, minimum, repeats = time_runs(torch, runners, args.warmup, args.min_ms,
                                                         args.min_repeats, args.max_repeats)
                    del keep
                    out.write(json.dumps({"op": op, "instance": inst.text(), "median_ms": median, "min_ms": minimum,
                                          "repeats": repeats, "rotations": rotations, "graphs": graphs,
                                          "torch": torch.__version__, "device": device_name}) + "\n")
                    out.flush()
            del input_sets
            torch.cuda.empty_cache()
    finally:
        if out is not sys.stdout:
            out.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
