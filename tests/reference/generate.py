#!/usr/bin/python3
"""Independent reference values for qkv, computed with PyTorch.

Run from anywhere with Debian's Python (it has torch and numpy):

    /usr/bin/python3 tests/reference/generate.py

For every case NAME it writes, next to this script,

    cases/NAME.yaml           a qkv input file (EXAMPLE FILES in man/qkv.1.in)
    cases/NAME.expected.json  the steps PyTorch computes for it

Where a case can be expressed as a torch.nn.MultiheadAttention (scale sqrt(d_k),
W_O present, d_v == d_k, H * d_k == d_model), the attention weights and the
output come from the module itself. Otherwise they come from plain tensor ops
(torch.softmax), and the case's provenance says so.

The cases of EXAMPLE FILES in man/qkv.1.in (RoPE, grouped-query attention, ALiBi, sliding
windows, attention sinks) are computed the way language-model code computes
them, on batched (heads, tokens, d) tensors: RoPE style half with Hugging
Face's rotate_half, style interleaved with Meta's torch.polar complex form,
key/value heads with repeat_interleave, ALiBi slopes with Press et al.'s
get_slopes, windows as flash-attn's window_size = (W - 1, 0), sinks as a
column concatenated to the scores and dropped after the softmax (gpt-oss),
qk_norm with transformers' Qwen3RMSNorm, Olmo2RMSNorm and Gemma3RMSNorm,
rope.scaling with the inv_freq and attention factor of transformers'
modeling_rope_utils (cross-checked against Meta's apply_scaling and gpt-oss's
RotaryEmbedding).
Their expected files list every step that exists, with "-inf" for blocked
cells (see README.md).

Everything is float64 and seeded per case, so the files are reproducible. An
expected file already in cases/ that agrees with this run to 1e-14 keeps its
digits, so that a rerun on a CPU whose kernels round the last bit differently
leaves the files unchanged.

Self-checks (a mapping mistake fails loudly, nothing is written for it):
  * every YAML file is read back with PyYAML and recomputed from the YAML alone
    by interpret_yaml(), which follows the EXAMPLE FILES in man/qkv.1.in rules and
    EXAMPLE FILES in man/qkv.1.in with direct formulas, one head at a time (RoPE pair by pair,
    key/value head ceil(h * G / H), slopes 2^(-8h/H), the window's
    0 <= i - j < W, the sink's softmax written out, qk_norm's RMSNorm row by row
    with math.sqrt); every step must agree
    with the expected values to 1e-12, and a section 9 file must list exactly
    the steps that exist;
  * every JSON file is read back and must equal the values in memory.

Conventions used throughout: rows are tokens. A weight "in x out" (qkv's
default layout x_w) multiplies on the right, Q = X @ W. nn.Linear.weight and
in_proj_weight are "out x in", Q = X @ W.T (qkv's layout: pytorch).
"""

import json
import math
import os
import types

import numpy
import torch
import torch.nn.functional as F
import yaml

torch.set_default_dtype(torch.float64)

TOLERANCE = 1e-12
HERE = os.path.dirname(os.path.abspath(__file__))
CASES_DIR = os.path.join(HERE, "cases")
# The per-head steps of the cases made before the attention variants of
# today's models; their expected files list only these (and `output`).
STEP_IDS = ["queries", "keys", "values", "scores", "weights", "head_output"]
# Every step an expected file may list, in qkv's order (STEPS and EXAMPLE FILES in man/qkv.1.in).
# `concat` and `output` are one matrix; the others one matrix per head, and
# KV_STEPS one per key/value head.
ALL_STEP_IDS = ["queries", "normed_queries", "rotated_queries", "keys", "normed_keys",
                "rotated_keys", "values",
                "scores", "scaled_scores", "capped_scores", "position_bias", "biased_scores",
                "masked_scores", "weights", "head_output", "concat", "output"]
WHOLE_STEPS = ("concat", "output")
KV_STEPS = ("keys", "normed_keys", "rotated_keys", "values")
# An existing expected file whose values agree with a fresh run this closely
# keeps its digits: PyTorch's kernels may round the last bit differently on
# another CPU, and such a difference is not a change.
KEEP_TOLERANCE = 1e-14
NEG_INF = float("-inf")

VERSIONS = (f"torch {torch.__version__} (Debian 12 python3-torch 1.13.1), "
            f"numpy {numpy.__version__}, float64")
PROVENANCE_MHA = (
    "weights and output from torch.nn.MultiheadAttention(batch_first=True, "
    "need_weights=True, average_attn_weights=False, eval mode, dropout 0); "
    "queries/keys/values from torch.nn.functional.linear on row slices of "
    "in_proj_weight/in_proj_bias (head h uses rows h*d_k..(h+1)*d_k-1 of each "
    "E x E block); scores = Q @ K.T (raw); head_output = weights @ V; "
    "cross-checked against plain tensor ops to 1e-12; ")
PROVENANCE_PLAIN = (
    "not expressible as torch.nn.MultiheadAttention ({why}); every step from "
    "plain torch tensor ops: Q = X @ W_Q + b_Q per head, scores = Q @ K.T, "
    "weights = torch.softmax(masked scores / scale, dim=-1), head_output = "
    "weights @ V, output = concat @ W_O + b_O; ")


# ---------------------------------------------------------------------------
# Writing YAML and JSON
# ---------------------------------------------------------------------------

class Bare(str):
    """A plain (unquoted) YAML scalar such as `none` or `causal`."""


class Flow(dict):
    """A small mapping written on one line, `{window: 3}`, as EXAMPLE FILES in man/qkv.1.in spells it."""


def fmt_number(x):
    """A number as YAML text that reads back as exactly the same double."""
    if isinstance(x, bool):
        raise TypeError("booleans are not numbers here")
    if isinstance(x, int):
        return str(x)
    x = float(x)
    if not math.isfinite(x):
        raise ValueError(f"non-finite number {x}")
    if x.is_integer() and abs(x) < 2**53 and math.copysign(1.0, x) > 0:
        return str(int(x))          # 3.0 -> 3, as a hand-written file would
    text = repr(x)                  # shortest round-trip form
    if "e" in text and "." not in text:
        # '1e-05' -> '1.0e-05': same double, and a float for YAML 1.1 readers
        text = text.replace("e", ".0e")
    return text


def yaml_scalar(value):
    if isinstance(value, Bare):
        return str(value)
    if isinstance(value, str):
        return json.dumps(value)    # a double-quoted YAML scalar
    return fmt_number(value)


def flow_list(values):
    return "[" + ", ".join(yaml_scalar(v) for v in values) + "]"


def flow_map(value):
    """{k: v, ...} on one line; a value may be a list or a Flow of its own
    (rope: {style: half, scaling: {rope_type: linear, factor: 4.0}})."""
    items = ", ".join(f"{k}: {flow_map(v) if isinstance(v, Flow) else flow_list(v) if isinstance(v, list) else yaml_scalar(v)}"
                      for k, v in value.items())
    return f"{{{items}}}"


def emit_yaml(lines, key, value, indent):
    pad = " " * indent
    if isinstance(value, Flow):
        lines.append(f"{pad}{key}: {flow_map(value)}")
    elif isinstance(value, dict):
        lines.append(f"{pad}{key}:")
        for sub_key, sub_value in value.items():
            emit_yaml(lines, sub_key, sub_value, indent + 2)
    elif isinstance(value, list) and value and all(isinstance(v, list) for v in value):
        # a matrix: one flow-style row per line
        lines.append(f"{pad}{key}:")
        for row in value:
            lines.append(f"{pad}  - {flow_list(row)}")
    elif isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        # a list of mappings (the per-head weight sets)
        lines.append(f"{pad}{key}:")
        for item in value:
            item_lines = []
            for sub_key, sub_value in item.items():
                emit_yaml(item_lines, sub_key, sub_value, indent + 4)
            item_lines[0] = f"{pad}  - " + item_lines[0][indent + 4:]
            lines.extend(item_lines)
    elif isinstance(value, list):
        lines.append(f"{pad}{key}: {flow_list(value)}")
    else:
        lines.append(f"{pad}{key}: {yaml_scalar(value)}")


def yaml_text(doc):
    lines = []
    for key, value in doc.items():
        emit_yaml(lines, key, value, 0)
    return "\n".join(lines) + "\n"


def json_cell(x):
    """A JSON number in repr form; -inf (a blocked cell) as the string "-inf"."""
    if x == NEG_INF:
        return '"-inf"'
    if not math.isfinite(x):
        raise ValueError(f"non-finite value {x} in an expected step")
    return json.dumps(x + 0.0)      # + 0.0 writes -0.0 (e.g. -m * |i - i|) as 0.0


def json_matrix(matrix, indent):
    pad = " " * indent
    rows = ["[" + ", ".join(json_cell(x) for x in row) + "]" for row in matrix]
    return "[\n" + ",\n".join(pad + " " + r for r in rows) + "\n" + pad + "]"


def json_text(case, whole=WHOLE_STEPS):
    """The expected file: one matrix row per line, floats written with repr; the
    steps in `whole` are one matrix each, the others one per head."""
    parts = [f' "case": {json.dumps(case["name"])}',
             f' "provenance": {json.dumps(case["provenance"])}',
             f' "heads": {case["heads"]}',
             f' "kv_heads": {case["kv_heads"]}',
             f' "scale": {json.dumps(float(case["scale"]))}']
    steps = []
    for step in case["written"]:
        if step in whole:
            steps.append(f'  "{step}": ' + json_matrix(case["steps"][step].tolist(), 2))
        else:
            mats = [json_matrix(m.tolist(), 3) for m in case["steps"][step]]
            steps.append(f'  "{step}": [\n   ' + ",\n   ".join(mats) + "\n  ]")
    parts.append(' "steps": {\n' + ",\n".join(steps) + "\n }")
    return "{\n" + ",\n".join(parts) + "\n}\n"


def from_json_matrix(rows):
    """A matrix read back from an expected file ("-inf" -> -inf)."""
    return tensor([[NEG_INF if x == "-inf" else x for x in row] for row in rows])


def from_json_steps(parsed, step_ids):
    steps = {}
    for step in step_ids:
        value = parsed["steps"][step]
        steps[step] = (from_json_matrix(value) if step in WHOLE_STEPS
                       else [from_json_matrix(m) for m in value])
    return steps


# ---------------------------------------------------------------------------
# Plain attention (the STEPS section of man/qkv.1.in) from per-head weights in x_w form
# ---------------------------------------------------------------------------

def affine(X, W, b):
    """X (rows x in) @ W (in x out) + b (out), b may be None."""
    Y = X @ W
    return Y if b is None else Y + b


def plain_attention(X, C, heads, W_O, b_O, divisor, keep):
    """Every step with plain tensor ops.

    heads: list of dicts with query/key/value (in x out) and optional biases.
    keep:  n x m boolean, True = may attend (or None: no mask, no padding).
    """
    steps = {step: [] for step in STEP_IDS}
    for head in heads:
        Q = affine(X, head["query"], head.get("bias_query"))    # n x d_k
        K = affine(C, head["key"], head.get("bias_key"))        # m x d_k
        V = affine(C, head["value"], head.get("bias_value"))    # m x d_v
        S = Q @ K.T                                             # n x m
        scaled = S / divisor
        if keep is not None:
            scaled = scaled.masked_fill(~keep, float("-inf"))
        A = torch.softmax(scaled, dim=-1)   # subtracts the row maximum itself
        for step, value in zip(STEP_IDS, (Q, K, V, S, A, A @ V)):
            steps[step].append(value)
    concat = torch.cat(steps["head_output"], dim=1)            # n x (H*d_v)
    steps["output"] = concat if W_O is None else affine(concat, W_O, b_O)
    return steps


def combine_keep(n, m, mask, padding, sinks=None):
    """mask (n x m, 1 = may attend) and padding (m, 1 = real) -> boolean keep; a row that
    keeps no key only with sinks."""
    keep = None
    if mask is not None:
        keep = torch.as_tensor(mask) != 0
    if padding is not None:
        real = (torch.as_tensor(padding) != 0)[None, :].expand(n, m)
        keep = real if keep is None else keep & real
    if keep is not None:
        assert keep.shape == (n, m), keep.shape
        for i in range(n if sinks is None else 0):
            assert bool(keep[i].any()), f"query {i + 1} may attend to no key"
    return keep


def causal(n):
    """1 where query i may attend key j <= i."""
    return torch.tril(torch.ones(n, n, dtype=torch.int64))


# ---------------------------------------------------------------------------
# Reading a qkv YAML file back (EXAMPLE FILES in man/qkv.1.in), independently of the writers
# ---------------------------------------------------------------------------

def tensor(value):
    return torch.tensor(value, dtype=torch.float64)


def split_columns(W, b, n_heads, name):
    """Head h gets columns h*d .. (h+1)*d - 1 of W (in x out) and of b."""
    width = W.shape[1]
    assert width % n_heads == 0, f"{name} width {width} not divisible by {n_heads}"
    d = width // n_heads
    cols = [slice(h * d, (h + 1) * d) for h in range(n_heads)]
    return [W[:, c] for c in cols], [None if b is None else b[c] for c in cols]


def interpret_yaml(doc):
    """Compute every step from a parsed qkv file, following EXAMPLE FILES in man/qkv.1.in
    and EXAMPLE FILES in man/qkv.1.in. Returns (steps, divisor, heads, kv_heads); steps holds
    exactly the steps that exist for this file."""
    X = tensor(doc["inputs"])
    C = tensor(doc["context"]) if "context" in doc else X
    W_O = b_O = None
    heads = []          # per query head: query, bias_query (and key/value without kv_heads)
    if "pytorch" in doc:
        assert "kv_heads" not in doc, "kv_heads with a pytorch block"
        block = doc["pytorch"]
        n_heads = block["num_heads"]
        W_in = tensor(block["in_proj_weight"])          # 3E x E, out x in
        E = W_in.shape[1]
        b_in = tensor(block["in_proj_bias"]) if "in_proj_bias" in block else None
        proj = {}
        for i, name in enumerate(["query", "key", "value"]):
            W = W_in[i * E:(i + 1) * E].T                 # -> in x out
            b = None if b_in is None else b_in[i * E:(i + 1) * E]
            proj[name] = split_columns(W, b, n_heads, name)
        W_O = tensor(block["out_proj_weight"]).T          # -> in x out
        if "out_proj_bias" in block:
            b_O = tensor(block["out_proj_bias"])
        for h in range(n_heads):
            heads.append({name: proj[name][0][h] for name in proj}
                         | {"bias_" + name: proj[name][1][h] for name in proj})
        kv_sets = heads
    else:
        transpose = doc.get("layout", "x_w") == "pytorch"

        def weight(value):
            W = tensor(value)
            return W.T if transpose else W                 # -> in x out

        weights = doc.get("weights", {})
        bias = doc.get("bias", {})
        if isinstance(doc.get("heads"), list):
            assert "kv_heads" not in doc, "kv_heads with a heads list"
            for item in doc["heads"]:
                head_bias = item.get("bias", {})
                heads.append({name: weight(item[name]) for name in ("query", "key", "value")}
                             | {"bias_" + name: tensor(head_bias[name])
                                for name in ("query", "key", "value") if name in head_bias})
            kv_sets = heads
        else:
            n_heads = doc.get("heads", 1)
            # with kv_heads: G, W_K and W_V (and their biases) split into G heads
            n_kv = doc.get("kv_heads", n_heads)
            proj = {}
            for name, count in (("query", n_heads), ("key", n_kv), ("value", n_kv)):
                b = tensor(bias[name]) if name in bias else None
                proj[name] = split_columns(weight(weights[name]), b, count, name)
            heads = [{"query": proj["query"][0][h], "bias_query": proj["query"][1][h]}
                     for h in range(n_heads)]
            kv_sets = [{name: proj[name][0][g] for name in ("key", "value")}
                       | {"bias_" + name: proj[name][1][g] for name in ("key", "value")}
                       for g in range(n_kv)]
        if "output" in weights:
            W_O = weight(weights["output"])
        if "output" in bias:
            b_O = tensor(bias["output"])

    # query head h (1-based) reads key/value head ceil(h * G / H)
    H, G = len(heads), len(kv_sets)
    assert H % G == 0, f"kv_heads {G} does not divide heads {H}"
    kv_of = [math.ceil(h * G / H) - 1 for h in range(1, H + 1)]   # 0-based

    scale = doc.get("scale", "sqrt_dk")
    if scale == "none":
        divisor = 1.0
    elif scale == "sqrt_dk":
        divisor = math.sqrt(heads[0]["query"].shape[1])
    else:
        divisor = float(scale)

    rope = doc.get("rope", False)
    if rope is True:
        rope = {}
    if rope is not False:
        assert set(rope) <= {"base", "style", "partial_rotary_factor", "max_position_embeddings",
                             "scaling"}, rope
        spec = rope
        rope = {"base": float(rope.get("base", 10000)), "style": rope.get("style", "half"),
                "partial": float(rope.get("partial_rotary_factor", 1.0))}
        assert rope["style"] in ("half", "interleaved"), rope
        if spec.get("scaling") is not None:
            # the scaled frequencies and attention factor, from the spec's formulas; the
            # length dynamic sees is the example's number of positions
            assert "context" not in doc, "rope.scaling in cross-attention"
            d_rot = round(heads[0]["query"].shape[1] * rope["partial"])
            scaled = rope_scaling_spec(spec, d_rot, X.shape[0])
            rope["inv_freq"], rope["attention_factor"] = scaled["inv_freq"], scaled["attention_factor"]

    alibi = doc.get("alibi", False)
    slopes = None
    if alibi is True:
        slopes = alibi_slopes_spec(H)
    elif alibi is not False:
        slopes = [float(m) for m in alibi]
        assert len(slopes) == H, "one ALiBi slope per query head"

    sinks = doc.get("sinks")
    if sinks is not None:
        sinks = [float(s) for s in sinks]
        assert len(sinks) == H, "one sink logit per query head"

    n, m = X.shape[0], C.shape[0]
    mask = doc.get("mask")
    if mask == "causal":
        mask = causal(n)
    elif isinstance(mask, dict):
        mask = window_mask(n, m, mask["window"])
    keep = combine_keep(n, m, mask, doc.get("padding"), sinks)
    softcap = doc.get("softcap")
    steps = direct_attention(X, C, heads, kv_sets, kv_of, W_O, b_O, divisor, keep,
                             rope, slopes, sinks, None if softcap is None else float(softcap),
                             qk_norm_spec(doc, H, G, heads[0]["query"].shape[1]))
    return steps, divisor, H, G


def qk_norm_spec(doc, H, G, d_k):
    """qk_norm as the spec reads it: `true` or {over, query, key, eps, offset}; eps defaults
    to norm_eps (itself 1e-6), gamma to 1 (offset 0) or 0 (offset 1), d_k numbers with
    over: head, H * d_k (queries) and G * d_k (keys) with over: all. None without qk_norm."""
    value = doc.get("qk_norm")
    if value is None:
        return None
    assert value is True or isinstance(value, dict), value
    spec = {} if value is True else value
    assert set(spec) <= {"over", "query", "key", "eps", "offset"}, spec
    over, offset = spec.get("over", "head"), spec.get("offset", 0)
    assert over in ("head", "all") and offset in (0, 1), (over, offset)
    eps = float(spec.get("eps", doc.get("norm_eps", 1e-6)))
    widths = {"query": d_k if over == "head" else H * d_k, "key": d_k if over == "head" else G * d_k}
    norm = {"over": over, "offset": float(offset), "eps": eps}
    for name, width in widths.items():
        norm[name] = ([float(g) for g in spec[name]] if name in spec
                      else [0.0 if offset else 1.0] * width)
        assert len(norm[name]) == width, (name, len(norm[name]), width)
    return norm


def rms_norm_direct(mats, norm, name):
    """qk_norm row by row with math.sqrt (EXAMPLE FILES in man/qkv.1.in):
    x' = x / sqrt(mean(x^2) + eps) * (offset + gamma). over: head normalises each head's
    row of d_k values; over: all a token's rows of every head side by side, split again
    after."""
    eps, offset, gamma = norm["eps"], norm["offset"], norm[name]

    def row_normed(row):
        rms = math.sqrt(sum(v * v for v in row) / len(row) + eps)
        return [v / rms * (offset + g) for v, g in zip(row, gamma)]

    if norm["over"] == "head":
        return [tensor([row_normed(row) for row in M.tolist()]) for M in mats]
    d = mats[0].shape[1]
    whole = tensor([row_normed(row) for row in torch.cat(mats, dim=1).tolist()])
    return [whole[:, h * d:(h + 1) * d] for h in range(len(mats))]


def window_mask(n, m, W):
    """1 where 0 <= i - j < W: the key itself and the W - 1 keys before it."""
    return [[1 if 0 <= i - j < W else 0 for j in range(m)] for i in range(n)]


def alibi_slopes_spec(H):
    """EXAMPLE FILES in man/qkv.1.in: m_h = 2^(-8h/H) for H a power of two; otherwise the
    slopes for P (the largest power of two below H), then those for 2P at
    h = 1, 3, 5, ... until there are H."""
    if H & (H - 1) == 0:
        return [2.0 ** (-8.0 * h / H) for h in range(1, H + 1)]
    P = 1 << (H.bit_length() - 1)
    return ([2.0 ** (-8.0 * h / P) for h in range(1, P + 1)]
            + [2.0 ** (-8.0 * h / (2 * P)) for h in range(1, 2 * P + 1, 2)][:H - P])


def rotate_pairs(M, base, style, partial=1.0, inv_freq=None, attention_factor=1.0):
    """RoPE written out pair by pair (EXAMPLE FILES in man/qkv.1.in): row p (position p,
    0-based) turns each pair (a, b) of elements by the angle p * base^(-2k/d_rot);
    `half` pairs element k with k + d_rot/2, `interleaved` 2k with 2k + 1. d_rot is
    d_k * partial_rotary_factor; the elements from d_rot on stay as they are. With
    rope.scaling the angle is p * inv_freq[k] and the turned pair is multiplied by the
    attention factor (rope_scaling_spec)."""
    rows, d_k = M.shape
    d_rot = round(d_k * partial)
    assert d_rot % 2 == 0, f"RoPE needs an even d_rot, not {d_rot}"
    assert inv_freq is None or len(inv_freq) == d_rot // 2
    out = M.clone()
    for p in range(rows):
        for k in range(d_rot // 2):
            angle = p * (base ** (-2.0 * k / d_rot) if inv_freq is None else inv_freq[k])
            c, s = math.cos(angle), math.sin(angle)
            a, b = (k, k + d_rot // 2) if style == "half" else (2 * k, 2 * k + 1)
            x, y = float(M[p, a]), float(M[p, b])
            if inv_freq is None:
                out[p, a] = x * c - y * s
                out[p, b] = y * c + x * s
            else:
                out[p, a] = attention_factor * (x * c - y * s)
                out[p, b] = attention_factor * (y * c + x * s)
    return out


def rope_scaling_spec(rope, d_rot, positions):
    """rope.scaling as the spec reads it (EXAMPLE FILES in man/qkv.1.in), pair by pair with
    math, from the YAML's rope map alone: the inverse frequencies theta_k of the d_rot / 2
    pairs and the attention factor a that multiplies cos and sin, with what decided them.
    theta_k = base^(-2k/d_rot) before scaling; M = rope.max_position_embeddings, by default
    factor * original_max_position_embeddings (for dynamic: original_max_position_embeddings).
      linear:  theta_k / factor.
      dynamic: the base becomes base * (factor * L / M - (factor - 1))^(d_rot / (d_rot - 2)),
               L = max(positions, M).
      yarn:    L0 = original_max_position_embeddings, else M; the pair index at which r
               rotations fit in L0 is d(r) = d_rot * ln(L0 / (2 pi r)) / (2 ln base);
               lo = d(beta_fast), hi = d(beta_slow) (32 and 1 by default), floored and
               ceiled unless truncate is false, then max(lo, 0), min(hi, d_rot - 1)
               (hi + 0.001 if they meet); ramp_k = clamp((k - lo) / (hi - lo), 0, 1);
               theta_k * (1 - ramp_k) + theta_k / factor * ramp_k. a = attention_factor if
               given, else g(factor, mscale) / g(factor, mscale_all_dim) when both are
               given and not 0, else g(factor, 1); g(s, m) = 0.1 m ln s + 1 (1 for s <= 1).
      llama3:  wavelength w_k = 2 pi / theta_k against L0 / low_freq_factor and
               L0 / high_freq_factor (L0 = original_max_position_embeddings): shorter than
               the second, kept; longer than the first, / factor; otherwise with
               t = (L0 / w_k - low) / (high - low), (1 - t) theta_k / factor + t theta_k."""
    base = float(rope.get("base", 10000))
    theta = [base ** (-2.0 * k / d_rot) for k in range(d_rot // 2)]
    scaling = rope.get("scaling")
    if scaling is None:
        return {"inv_freq": theta, "attention_factor": 1.0}
    kind = scaling.get("rope_type", scaling.get("type"))
    factor = float(scaling["factor"])
    original = scaling.get("original_max_position_embeddings")
    longest = rope.get("max_position_embeddings")
    if longest is None and original is not None:
        longest = original if kind == "dynamic" else factor * original
    if kind == "linear":
        return {"inv_freq": [t / factor for t in theta], "attention_factor": 1.0}
    if kind == "dynamic":
        longest = float(longest)
        length = max(float(positions), longest)
        new_base = base * (factor * length / longest - (factor - 1.0)) ** (d_rot / (d_rot - 2.0))
        return {"inv_freq": [new_base ** (-2.0 * k / d_rot) for k in range(d_rot // 2)],
                "attention_factor": 1.0, "base": new_base, "length": length, "M": longest}
    if kind == "yarn":
        trained = float(original if original is not None else longest)

        def pair_index(rotations):
            return d_rot * math.log(trained / (2.0 * math.pi * rotations)) / (2.0 * math.log(base))

        lo = pair_index(float(scaling.get("beta_fast") or 32))
        hi = pair_index(float(scaling.get("beta_slow") or 1))
        if scaling.get("truncate", True):
            lo, hi = math.floor(lo), math.ceil(hi)
        lo, hi = max(lo, 0), min(hi, d_rot - 1)
        if lo == hi:
            hi += 0.001
        ramp = [min(1.0, max(0.0, (k - lo) / (hi - lo))) for k in range(d_rot // 2)]

        def g(s, m=1.0):
            return 1.0 if s <= 1 else 0.1 * m * math.log(s) + 1.0

        mscale, mscale_all_dim = scaling.get("mscale"), scaling.get("mscale_all_dim")
        if scaling.get("attention_factor") is not None:
            a = float(scaling["attention_factor"])
        elif mscale and mscale_all_dim:
            a = g(factor, float(mscale)) / g(factor, float(mscale_all_dim))
        else:
            a = g(factor)
        return {"inv_freq": [t * (1.0 - r) + t / factor * r for t, r in zip(theta, ramp)],
                "attention_factor": a, "ramp": ramp, "low": lo, "high": hi, "L0": trained}
    if kind == "llama3":
        low, high = float(scaling["low_freq_factor"]), float(scaling["high_freq_factor"])
        trained = float(original)
        out, bands = [], []
        for t in theta:
            w = 2.0 * math.pi / t
            if w < trained / high:
                out.append(t)
                bands.append("high (kept)")
            elif w > trained / low:
                out.append(t / factor)
                bands.append("low (/ factor)")
            else:
                smooth = (trained / w - low) / (high - low)
                out.append((1.0 - smooth) * t / factor + smooth * t)
                bands.append(f"middle (smooth {smooth:.4f})")
        return {"inv_freq": out, "attention_factor": 1.0, "bands": bands,
                "wavelengths": [2.0 * math.pi / t for t in theta]}
    raise AssertionError(f"rope_type {kind}")


def softmax_row_with_sink(x, sink):
    """EXAMPLE FILES / STEPS in man/qkv.1.in: A_j = exp(x_j - M) / (sum_j exp(x_j - M) (+ exp(s - M))),
    M = max(max_j x_j, s); without a sink this is the stable softmax."""
    M = float(x.max()) if sink is None else max(float(x.max()), sink)
    e = torch.exp(x - M)                         # blocked cells: exp(-inf) = 0
    total = float(e.sum()) + (0.0 if sink is None else math.exp(sink - M))
    return e / total


def direct_attention(X, C, heads, kv_sets, kv_of, W_O, b_O, divisor, keep, rope, slopes, sinks,
                     softcap=None, qk_norm=None):
    """Every step, one head at a time, straight from the formulas (independent of
    the batched reference implementations that make the expected values)."""
    n, m = X.shape[0], C.shape[0]
    steps = {}
    steps["queries"] = [affine(X, h["query"], h.get("bias_query")) for h in heads]
    steps["keys"] = [affine(C, s["key"], s.get("bias_key")) for s in kv_sets]
    steps["values"] = [affine(C, s["value"], s.get("bias_value")) for s in kv_sets]
    Q, K = steps["queries"], steps["keys"]
    if qk_norm is not None:
        # RMSNorm after the projections and biases, before RoPE
        Q = steps["normed_queries"] = rms_norm_direct(Q, qk_norm, "query")
        K = steps["normed_keys"] = rms_norm_direct(K, qk_norm, "key")
    if rope:
        # positions 0, 1, ... for the queries and (separately) for the keys' rows
        turn = (rope["base"], rope["style"], rope["partial"], rope.get("inv_freq"),
                rope.get("attention_factor", 1.0))
        Q = steps["rotated_queries"] = [rotate_pairs(q, *turn) for q in Q]
        K = steps["rotated_keys"] = [rotate_pairs(k, *turn) for k in K]
    steps["scores"] = [Q[h] @ K[kv_of[h]].T for h in range(len(heads))]
    x = steps["scaled_scores"] = [S / divisor for S in steps["scores"]]
    if softcap is not None:
        # c·tanh(s/c), number by number with math.tanh
        x = steps["capped_scores"] = [tensor([[softcap * math.tanh(v / softcap) for v in row]
                                              for row in t.tolist()]) for t in x]
    if slopes is not None:
        steps["position_bias"] = [
            tensor([[-slope * abs(i - j) for j in range(m)] for i in range(n)]) for slope in slopes]
        x = steps["biased_scores"] = [a + b for a, b in zip(x, steps["position_bias"])]
    if keep is not None:
        x = steps["masked_scores"] = [t.masked_fill(~keep, NEG_INF) for t in x]
    steps["weights"] = [torch.stack([softmax_row_with_sink(row, None if sinks is None else sinks[h])
                                     for row in x[h]])
                        for h in range(len(heads))]
    steps["head_output"] = [steps["weights"][h] @ steps["values"][kv_of[h]]
                            for h in range(len(heads))]
    concat = torch.cat(steps["head_output"], dim=1)
    if len(heads) > 1:
        steps["concat"] = concat
    steps["output"] = concat if W_O is None else affine(concat, W_O, b_O)
    return steps


# ---------------------------------------------------------------------------
# nn.MultiheadAttention and its four spellings in qkv YAML
# ---------------------------------------------------------------------------

def make_mha(E, H, bias=True):
    """A float64 MultiheadAttention with every parameter drawn from U(-1, 1)
    (the default init leaves the biases at zero, which would test nothing)."""
    mha = torch.nn.MultiheadAttention(E, H, bias=bias, batch_first=True)
    with torch.no_grad():
        for p in mha.parameters():
            p.uniform_(-1.0, 1.0)
    mha.eval()
    return mha


def mha_parts(mha):
    """The module's state split into E x E blocks, all out x in (nn.Linear)."""
    E = mha.embed_dim
    W, b = mha.in_proj_weight.detach(), mha.in_proj_bias
    b = None if b is None else b.detach()
    out_b = mha.out_proj.bias
    return {
        "E": E, "H": mha.num_heads, "d": E // mha.num_heads,
        "query": W[0:E], "key": W[E:2 * E], "value": W[2 * E:3 * E],
        "bias_query": None if b is None else b[0:E],
        "bias_key": None if b is None else b[E:2 * E],
        "bias_value": None if b is None else b[2 * E:3 * E],
        "output": mha.out_proj.weight.detach(),
        "bias_output": None if out_b is None else out_b.detach(),
    }


def lists(t):
    return t.tolist()


def bias_block(parts, names):
    """bias: {query, key, value, output}, only the names present and listed."""
    return {name: lists(parts["bias_" + name]) for name in names
            if parts["bias_" + name] is not None}


def assert_zero_outside(parts, names):
    """The biases left out of the YAML must be zero in the module."""
    for name in ("query", "key", "value", "output"):
        b = parts["bias_" + name]
        if name not in names and b is not None:
            assert bool((b == 0).all()), f"bias {name} is left out but not zero"


def yaml_x_w(mha, bias_names=("query", "key", "value", "output")):
    """Default layout: W is in x out, so each out x in block is transposed.
    weights.query = W_q.T (E x E), heads split its columns."""
    parts = mha_parts(mha)
    assert_zero_outside(parts, bias_names)
    doc = {"weights": {name: lists(parts[name].T)
                       for name in ("query", "key", "value", "output")}}
    if parts["H"] > 1:
        doc["heads"] = parts["H"]
    bias = bias_block(parts, bias_names)
    if bias:
        doc["bias"] = bias
    return doc


def yaml_layout_pytorch(mha):
    """layout: pytorch: weights exactly as nn.Linear holds them (out x in),
    W_O included; heads split the rows of W_q (= columns of Q)."""
    parts = mha_parts(mha)
    doc = {"layout": Bare("pytorch"),
           "weights": {name: lists(parts[name])
                       for name in ("query", "key", "value", "output")}}
    if parts["H"] > 1:
        doc["heads"] = parts["H"]
    bias = bias_block(parts, ("query", "key", "value", "output"))
    if bias:
        doc["bias"] = bias
    return doc


def yaml_heads_list(mha):
    """heads: [...]: head h gets columns h*d .. (h+1)*d - 1 of W_q.T etc. and
    the same slice of each bias; W_O and its bias stay at the top level."""
    parts = mha_parts(mha)
    d = parts["d"]
    heads = []
    for h in range(parts["H"]):
        cols = slice(h * d, (h + 1) * d)
        head = {name: lists(parts[name].T[:, cols]) for name in ("query", "key", "value")}
        bias = {name: lists(parts["bias_" + name][cols])
                for name in ("query", "key", "value") if parts["bias_" + name] is not None}
        if bias:
            head["bias"] = bias
        heads.append(head)
    doc = {"heads": heads, "weights": {"output": lists(parts["output"].T)}}
    if parts["bias_output"] is not None:
        doc["bias"] = {"output": lists(parts["bias_output"])}
    return doc


def yaml_pytorch_block(mha):
    """pytorch: the module's state pasted as is (no biases if bias=False)."""
    block = {"num_heads": mha.num_heads, "in_proj_weight": lists(mha.in_proj_weight)}
    if mha.in_proj_bias is not None:
        block["in_proj_bias"] = lists(mha.in_proj_bias)
    block["out_proj_weight"] = lists(mha.out_proj.weight)
    if mha.out_proj.bias is not None:
        block["out_proj_bias"] = lists(mha.out_proj.bias)
    return {"pytorch": block}


def mha_reference(mha, X, C=None, mask=None, padding=None):
    """Every step, with weights and output from the module itself."""
    C = X if C is None else C
    n, m = X.shape[0], C.shape[0]
    # PyTorch's boolean masks mean True = blocked: the opposite of qkv's 1 = may attend.
    attn_mask = None if mask is None else (torch.as_tensor(mask) == 0)
    key_padding_mask = None if padding is None else (torch.as_tensor(padding) == 0)[None, :]
    with torch.no_grad():
        out, A = mha(X[None], C[None], C[None], attn_mask=attn_mask,
                     key_padding_mask=key_padding_mask, need_weights=True,
                     average_attn_weights=False)
    out, A = out[0], A[0]                            # n x E, H x n x m

    parts = mha_parts(mha)
    d = parts["d"]
    steps = {step: [] for step in STEP_IDS}
    for h in range(parts["H"]):
        rows = slice(h * d, (h + 1) * d)           # rows of W = columns of Q

        def project(inp, name):
            b = parts["bias_" + name]
            return F.linear(inp, parts[name][rows], None if b is None else b[rows])

        Q, K, V = project(X, "query"), project(C, "key"), project(C, "value")
        for step, value in zip(STEP_IDS, (Q, K, V, Q @ K.T, A[h], A[h] @ V)):
            steps[step].append(value)
    steps["output"] = out

    # Plain recomputation from the module's tensors: catches a wrong reading
    # of the module (head slicing, mask sense) before any file is written.
    heads = [{name: parts[name][h * d:(h + 1) * d].T for name in ("query", "key", "value")}
             | {"bias_" + name: (None if parts["bias_" + name] is None
                                 else parts["bias_" + name][h * d:(h + 1) * d])
                for name in ("query", "key", "value")}
             for h in range(parts["H"])]
    plain = plain_attention(X, C, heads, parts["output"].T, parts["bias_output"],
                            math.sqrt(d), combine_keep(n, m, mask, padding))
    compare(steps, plain, "module vs plain ops")
    return steps, math.sqrt(d)


# ---------------------------------------------------------------------------
# Attention as today's language models compute it (EXAMPLE FILES in man/qkv.1.in), written the
# way the public implementations write it: batched (heads, tokens, d) tensors.
# ---------------------------------------------------------------------------

def rotate_half(x):
    """Hugging Face transformers: (x1, x2) -> (-x2, x1) on the two halves of the last dim."""
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def rope_half_hf(x, base, partial=1.0, inv_freq=None, attention_scaling=1.0):
    """RoPE as transformers' LlamaRotaryEmbedding + apply_rotary_pos_emb, on x
    (heads, tokens, d): positions 0, 1, ... of the tokens. With partial_rotary_factor
    < 1, as GPT-NeoX's and Phi's: dim = int(head_dim * partial_rotary_factor) for
    inv_freq (_compute_default_rope_parameters), and apply_rotary_pos_emb turns
    q[..., :rotary_dim] and concatenates q[..., rotary_dim:] unchanged. With
    rope.scaling, inv_freq and attention_scaling come from the rope_type's
    _compute_*_parameters (rope_scaling_reference), and as the rotary embedding's
    forward writes it, cos = emb.cos() * self.attention_scaling (sin likewise): the
    turned elements carry the factor, the passed ones do not."""
    d = int(x.shape[-1] * partial)
    x, x_pass = x[..., :d], x[..., d:]
    if inv_freq is None:
        inv_freq = 1.0 / (base ** (torch.arange(0, d, 2, dtype=torch.int64).to(torch.float64) / d))
    assert inv_freq.shape == (d // 2,), (inv_freq.shape, d)
    positions = torch.arange(x.shape[-2], dtype=torch.float64)
    freqs = torch.outer(positions, inv_freq)                   # tokens x d/2
    emb = torch.cat((freqs, freqs), dim=-1)                    # tokens x d
    cos = emb.cos() * attention_scaling                        # (x * 1.0 is x: plain RoPE as before)
    sin = emb.sin() * attention_scaling
    cos, sin = cos[None], sin[None]                            # unsqueeze the head dim
    return torch.cat((x * cos + rotate_half(x) * sin, x_pass), dim=-1)


def rope_interleaved_meta(x, base, partial=1.0, inv_freq=None, attention_scaling=1.0):
    """RoPE as Meta's original Llama code (precompute_freqs_cis + apply_rotary_emb),
    on x (tokens, heads, d): consecutive pairs are complex numbers, multiplied by
    freqs_cis = polar(1, p * theta_k). With partial_rotary_factor < 1, as GLM's
    code: the first d = head_dim * factor elements turn (freqs over d), the rest
    are concatenated unchanged. With rope.scaling, the frequencies are the scaled
    inv_freq (rope_scaling_reference) and the attention factor is the modulus of
    freqs_cis, torch.polar(attention_scaling * ones, angles): cos and sin times it."""
    d = int(x.shape[-1] * partial)
    x, x_pass = x[..., :d], x[..., d:]
    if inv_freq is None:
        freqs = 1.0 / (base ** (torch.arange(0, d, 2)[: d // 2].to(torch.float64) / d))
    else:
        freqs = inv_freq
    assert freqs.shape == (d // 2,), (freqs.shape, d)
    t = torch.arange(x.shape[0], dtype=torch.float64)
    freqs = torch.outer(t, freqs)                              # tokens x d/2
    freqs_cis = torch.polar(torch.full_like(freqs, attention_scaling), freqs)   # complex128
    x_complex = torch.view_as_complex(x.reshape(*x.shape[:-1], -1, 2))
    return torch.cat((torch.view_as_real(x_complex * freqs_cis[:, None, :]).flatten(2), x_pass), dim=-1)


def press_get_slopes(n):
    """ALiBi slopes as in Press et al.'s code (get_slopes): a geometric sequence
    starting at 2^(-8/n) for n a power of two; otherwise the slopes of the
    closest lower power of two P, then every other slope of 2P."""
    def power_of_2(n):
        start = 2 ** (-2 ** -(math.log2(n) - 3))
        ratio = start
        return [start * ratio ** i for i in range(n)]
    if math.log2(n).is_integer():
        return power_of_2(n)
    closest = 2 ** math.floor(math.log2(n))
    return power_of_2(closest) + press_get_slopes(2 * closest)[0::2][: n - closest]


def local_mask_flash(n, m, window):
    """flash-attn's sliding window with window_size = (W - 1, 0) (as its tests'
    construct_local_mask writes it): key j is blocked (True) when j > i + 0 or
    j < i - (W - 1)."""
    left, right = window - 1, 0
    row = torch.arange(n)[:, None]
    col = torch.arange(m)[None, :]
    return (col > row + right) | (col < row - left)


def modern_reference(X, C, W, b, H, G, W_O, b_O, divisor, rope=None, slopes=None,
                     blocked=None, sinks=None, softcap=None, qk_norm=None):
    """Every step with batched torch ops.

    W, b: stacked x_w weights (in x out) and biases by name (query H*d_k wide,
    key and value G*d wide). rope: None or {"base", "style"}. slopes: ALiBi
    slopes (H) or None. blocked: n x m boolean, True = blocked (or None).
    sinks: H logits or None. softcap: Gemma 2's attn_logit_softcapping, or None.
    qk_norm: None or {"over", "offset", "eps", "query", "key"} (gamma tensors)."""
    n, m = X.shape[0], C.shape[0]

    def project(inp, name, count):                 # tokens x count x d
        Y = inp @ W[name]
        if b.get(name) is not None:
            Y = Y + b[name]
        return Y.view(inp.shape[0], count, -1)

    q, k, v = project(X, "query", H), project(C, "key", G), project(C, "value", G)
    Q, K, V = q.transpose(0, 1), k.transpose(0, 1), v.transpose(0, 1)   # heads x tokens x d
    steps = {"queries": list(Q), "keys": list(K), "values": list(V)}
    if qk_norm is not None:
        q, k = apply_qk_norm(q, qk_norm, "query"), apply_qk_norm(k, qk_norm, "key")
        Q, K = q.transpose(0, 1), k.transpose(0, 1)
        steps["normed_queries"], steps["normed_keys"] = list(Q), list(K)
    if rope is not None:
        Q, K = apply_rope(Q, K, q, k, rope)
        steps["rotated_queries"], steps["rotated_keys"] = list(Q), list(K)
    # grouped-query attention: each key/value head serves H / G query heads in a row
    K_rep = K.repeat_interleave(H // G, dim=0)
    V_rep = V.repeat_interleave(H // G, dim=0)
    S = torch.matmul(Q, K_rep.transpose(-2, -1))                  # H x n x m
    steps["scores"] = list(S)
    x = S / divisor
    steps["scaled_scores"] = list(x)
    if softcap is not None:
        x = gemma2_softcap(x, softcap)
        steps["capped_scores"] = list(x)
    A = scaled_scores_to_weights(x, slopes, blocked, sinks, steps)
    Z = torch.matmul(A, V_rep)                                     # H x n x d_v
    steps["weights"], steps["head_output"] = list(A), list(Z)
    concat = Z.transpose(0, 1).reshape(n, -1)                      # n x H*d_v
    if H > 1:
        steps["concat"] = concat
    steps["output"] = concat if W_O is None else affine(concat, W_O, b_O)
    return steps


def apply_rope(Q, K, q, k, rope):
    """RoPE on Q, K (heads, tokens, d) with style half (transformers), or on q, k (tokens,
    heads, d) with style interleaved (Meta's polar form); returns (heads, tokens, d).
    rope: {"base", "style", "partial"} and, with rope.scaling, "inv_freq" and
    "attention_scaling" (rope_scaling_reference)."""
    f = rope["partial"]
    scaled = (rope.get("inv_freq"), rope.get("attention_scaling", 1.0))
    if rope["style"] == "half":
        return rope_half_hf(Q, rope["base"], f, *scaled), rope_half_hf(K, rope["base"], f, *scaled)
    return (rope_interleaved_meta(q, rope["base"], f, *scaled).transpose(0, 1),
            rope_interleaved_meta(k, rope["base"], f, *scaled).transpose(0, 1))


def gemma2_softcap(x, softcap):
    """Logit soft-capping as transformers' Gemma 2 eager_attention_forward writes
    it: attn_weights / softcap, torch.tanh, * softcap, on the scaled scores
    before the mask is added."""
    x = x / softcap
    x = torch.tanh(x)
    return x * softcap


def qwen3_rmsnorm(hidden_states, weight, variance_epsilon):
    """Qwen3RMSNorm.forward as transformers writes it, in float64 throughout (upstream casts
    to float32 inside the norm and back to the input dtype after)."""
    variance = hidden_states.pow(2).mean(-1, keepdim=True)
    hidden_states = hidden_states * torch.rsqrt(variance + variance_epsilon)
    return weight * hidden_states


def olmo2_rmsnorm(hidden_states, weight, variance_epsilon):
    """Olmo2RMSNorm.forward as transformers writes it (the weight multiplied before the cast
    back), in float64 throughout."""
    variance = hidden_states.pow(2).mean(-1, keepdim=True)
    hidden_states = hidden_states * torch.rsqrt(variance + variance_epsilon)
    return weight * hidden_states


def gemma3_rmsnorm(x, weight, eps):
    """Gemma3RMSNorm.forward as transformers writes it: _norm(x) = x * torch.rsqrt(
    x.pow(2).mean(-1, keepdim=True) + eps), then output * (1.0 + weight); float64
    throughout (upstream's x.float() and type_as left out)."""
    def _norm(x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)
    output = _norm(x)
    output = output * (1.0 + weight)
    return output


def apply_qk_norm(y, qk_norm, name):
    """qk_norm on y (tokens, heads, d) right after the projection's view: over head as
    Qwen3Attention (q_norm(q_proj(x).view(hidden_shape))) and Gemma3Attention (the norm
    over each head's head_dim); over all as Olmo2Attention, q_norm(q_proj(x)) over the
    whole H * d_k projection, then the view into heads. The norm is Gemma 3's with
    offset 1 ((1 + weight)), otherwise Qwen3's (over head) or OLMo 2's (over all)."""
    gamma, eps = qk_norm[name], qk_norm["eps"]
    norm = (gemma3_rmsnorm if qk_norm["offset"] == 1
            else qwen3_rmsnorm if qk_norm["over"] == "head" else olmo2_rmsnorm)
    if qk_norm["over"] == "head":
        return norm(y, gamma, eps)
    tokens, count = y.shape[0], y.shape[1]
    return norm(y.reshape(tokens, -1), gamma, eps).view(tokens, count, -1)


def scaled_scores_to_weights(x, slopes, blocked, sinks, steps):
    """From the scaled scores x (H x n x m) to the weights: ALiBi's bias, the
    mask's -inf, then the softmax with the sinks; records position_bias,
    biased_scores and masked_scores in `steps` when they exist."""
    H, n, m = x.shape
    if slopes is not None:
        distance = (torch.arange(m)[None, :] - torch.arange(n)[:, None]).abs()
        bias = -tensor(slopes)[:, None, None] * distance           # H x n x m
        x = x + bias
        steps["position_bias"], steps["biased_scores"] = list(bias), list(x)
    if blocked is not None:
        x = x.masked_fill(blocked, NEG_INF)
        steps["masked_scores"] = list(x)
    if sinks is None:
        return torch.softmax(x, dim=-1)
    # gpt-oss: the sink logit joins each row as one more column, then is dropped
    sink_column = tensor(sinks).reshape(H, 1, 1).expand(H, n, 1)
    return torch.softmax(torch.cat([x, sink_column], dim=-1), dim=-1)[..., :-1]


def gpt_oss_attention(X, W, b, H, G, W_O, b_O, divisor, base, window, sinks, yarn=None):
    """Self-attention as gpt-oss's reference torch code arranges it: RoPE on the
    two halves (torch.chunk), queries as (tokens, G, H/G, d), the causal and
    sliding-window masks as -inf triangles (triu, tril), sinks concatenated to
    the scores and dropped after the softmax, einsum for the products. yarn: None,
    or the keyword arguments of gpt-oss's RotaryEmbedding (initial_context_length,
    scaling_factor, ntk_alpha, ntk_beta): its _compute_concentration_and_inv_freq
    gives the frequencies, and cos and sin are multiplied by the concentration."""
    n = X.shape[0]
    q_mult = H // G
    q = (X @ W["query"] + b["query"]).view(n, H, -1)
    k = (X @ W["key"] + b["key"]).view(n, G, -1)
    v = (X @ W["value"] + b["value"]).view(n, G, -1)
    d = q.shape[-1]

    if yarn is None:
        inv_freq = 1.0 / (base ** (torch.arange(0, d, 2, dtype=torch.float64) / d))
        freqs = torch.einsum("i,j->ij", torch.arange(n, dtype=torch.float64), inv_freq)
        cos, sin = freqs.cos()[:, None, :], freqs.sin()[:, None, :]   # tokens x 1 x d/2
    else:
        concentration, inv_freq = gpt_oss_concentration_and_inv_freq(d, base, **yarn)
        freqs = torch.einsum("i,j->ij", torch.arange(n, dtype=torch.float64), inv_freq)
        cos = (freqs.cos() * concentration)[:, None, :]
        sin = (freqs.sin() * concentration)[:, None, :]

    def rotary(x):
        x1, x2 = torch.chunk(x, 2, dim=-1)
        return torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1)

    q, k = rotary(q), rotary(k)
    Q = q.view(n, G, q_mult, d)
    K = k[:, :, None, :].expand(-1, -1, q_mult, -1)
    V = v[:, :, None, :].expand(-1, -1, q_mult, -1)
    S = tensor(sinks).reshape(G, q_mult, 1, 1).expand(-1, -1, n, -1)
    mask = torch.triu(torch.full((n, n), NEG_INF), diagonal=1)
    mask = mask + torch.tril(torch.full((n, n), NEG_INF), diagonal=-window)
    QK = torch.einsum("qhmd,khmd->hmqk", Q, K)
    QK *= 1.0 / divisor                                       # sm_scale
    QK += mask[None, None]
    A = torch.softmax(torch.cat([QK, S], dim=-1), dim=-1)[..., :-1]
    attn = torch.einsum("hmqk,khmd->qhmd", A, V).reshape(n, -1)   # the concatenation
    return {"rotated_queries": list(q.transpose(0, 1)), "rotated_keys": list(k.transpose(0, 1)),
            "weights": list(A.reshape(H, n, n)),
            "head_output": list(attn.view(n, H, -1).transpose(0, 1)),
            "concat": attn, "output": affine(attn, W_O, b_O)}


# ---------------------------------------------------------------------------
# RoPE scaling (rope.scaling) as the upstream code computes it: transformers'
# modeling_rope_utils (the version whose _compute_yarn_parameters reads mscale,
# mscale_all_dim and truncate), Meta's apply_scaling (llama-models) and gpt-oss's
# RotaryEmbedding. Written as upstream writes them, in float64 where upstream
# uses float32 (torch.arange(..., dtype=torch.float32), .float()).
# ---------------------------------------------------------------------------

def rope_config(rope, d_k):
    """The transformers config a qkv rope map with `scaling` stands for: rope_theta = base,
    partial_rotary_factor, head_dim = d_k (hidden_size / num_attention_heads too: upstream's
    getattr reads them for its default), max_position_embeddings = rope's (by default
    factor * original_max_position_embeddings; for dynamic, original_max_position_embeddings),
    rope_scaling = the scaling map as written (a config.json's rope_scaling)."""
    scaling = dict(rope["scaling"])
    kind = scaling.get("rope_type", scaling.get("type"))
    original = scaling.get("original_max_position_embeddings")
    longest = rope.get("max_position_embeddings")
    if longest is None and original is not None:
        longest = original if kind == "dynamic" else scaling["factor"] * original
    return types.SimpleNamespace(rope_theta=float(rope.get("base", 10000)),
                                 partial_rotary_factor=float(rope.get("partial_rotary_factor", 1.0)),
                                 head_dim=d_k, hidden_size=d_k, num_attention_heads=1,
                                 max_position_embeddings=longest, rope_scaling=scaling)


def hf_compute_default_rope_parameters(config, device=None, seq_len=None):
    """transformers' _compute_default_rope_parameters (float64 for .float())."""
    base = config.rope_theta
    partial_rotary_factor = getattr(config, "partial_rotary_factor", 1.0)
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
    dim = int(head_dim * partial_rotary_factor)

    attention_factor = 1.0  # Unused in this type of RoPE

    # Compute the inverse frequencies
    inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.int64).to(device=device, dtype=torch.float64) / dim))
    return inv_freq, attention_factor


def hf_compute_linear_scaling_rope_parameters(config, device=None, seq_len=None):
    """transformers' _compute_linear_scaling_rope_parameters."""
    factor = config.rope_scaling["factor"]

    # Gets the default RoPE parameters
    inv_freq, attention_factor = hf_compute_default_rope_parameters(config, device, seq_len)

    # Then applies linear scaling to the frequencies.
    # NOTE: originally, scaling was applied to the position_ids. However, we get `embs = inv_freq @ position_ids`, so
    # applying scaling to the inverse frequencies is equivalent.
    inv_freq /= factor
    return inv_freq, attention_factor


def hf_compute_dynamic_ntk_parameters(config, device=None, seq_len=None):
    """transformers' _compute_dynamic_ntk_parameters (float64 for torch.float)."""
    base = config.rope_theta
    partial_rotary_factor = getattr(config, "partial_rotary_factor", 1.0)
    head_dim = getattr(config, "head_dim", config.hidden_size // config.num_attention_heads)
    dim = int(head_dim * partial_rotary_factor)
    max_position_embeddings = config.max_position_embeddings
    factor = config.rope_scaling["factor"]

    attention_factor = 1.0  # Unused in this type of RoPE

    # seq_len: default to max_position_embeddings, e.g. at init time
    if seq_len is None:
        seq_len = max_position_embeddings
    elif isinstance(seq_len, torch.Tensor):
        seq_len = torch.maximum(
            seq_len,
            torch.tensor(max_position_embeddings, dtype=seq_len.dtype, device=seq_len.device),
        )
    else:
        seq_len = max(seq_len, max_position_embeddings)

    # Compute the inverse frequencies
    base = base * ((factor * seq_len / max_position_embeddings) - (factor - 1)) ** (dim / (dim - 2))
    inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.int64).to(device=device, dtype=torch.float64) / dim))
    return inv_freq, attention_factor


def hf_compute_yarn_parameters(config, device=None, seq_len=None):
    """transformers' _compute_yarn_parameters, the version with mscale, mscale_all_dim and
    truncate (float64 for torch.float and torch.float32)."""
    base = config.rope_theta
    partial_rotary_factor = getattr(config, "partial_rotary_factor", 1.0)
    head_dim = getattr(config, "head_dim", config.hidden_size // config.num_attention_heads)
    dim = int(head_dim * partial_rotary_factor)
    factor = config.rope_scaling["factor"]
    attention_factor = config.rope_scaling.get("attention_factor")
    mscale = config.rope_scaling.get("mscale")
    mscale_all_dim = config.rope_scaling.get("mscale_all_dim")
    original_max_position_embeddings = (
        config.rope_scaling.get("original_max_position_embeddings") or config.max_position_embeddings
    )

    def get_mscale(scale, mscale=1):
        if scale <= 1:
            return 1.0
        return 0.1 * mscale * math.log(scale) + 1.0

    # Sets the attention factor as suggested in the paper
    if attention_factor is None:
        if mscale and mscale_all_dim:
            attention_factor = float(get_mscale(factor, mscale) / get_mscale(factor, mscale_all_dim))
        else:
            attention_factor = get_mscale(factor)

    # Optional config options
    # beta_fast/beta_slow: as suggested in the paper, default to 32/1 (correspondingly)
    beta_fast = config.rope_scaling.get("beta_fast") or 32
    beta_slow = config.rope_scaling.get("beta_slow") or 1

    # Compute the inverse frequencies
    def find_correction_dim(num_rotations, dim, base, max_position_embeddings):
        """Inverse dimension formula to find the dimension based on the number of rotations"""
        return (dim * math.log(max_position_embeddings / (num_rotations * 2 * math.pi))) / (2 * math.log(base))

    def find_correction_range(low_rot, high_rot, dim, base, max_position_embeddings, truncate):
        """Find dimension range bounds based on rotations"""
        low = find_correction_dim(low_rot, dim, base, max_position_embeddings)
        high = find_correction_dim(high_rot, dim, base, max_position_embeddings)
        if truncate:
            low = math.floor(low)
            high = math.ceil(high)
        return max(low, 0), min(high, dim - 1)

    def linear_ramp_factor(min, max, dim):
        if min == max:
            max += 0.001  # Prevent singularity

        linear_func = (torch.arange(dim, dtype=torch.float64) - min) / (max - min)
        ramp_func = torch.clamp(linear_func, 0, 1)
        return ramp_func

    # Note on variable naming: "interpolation" comes from the original technique, where we interpolate the position IDs
    # to expand the possible context length. In other words, interpolation = apply scaling factor.
    pos_freqs = base ** (torch.arange(0, dim, 2).to(device=device, dtype=torch.float64) / dim)
    inv_freq_extrapolation = 1.0 / pos_freqs
    inv_freq_interpolation = 1.0 / (factor * pos_freqs)

    truncate = config.rope_scaling.get("truncate", True)
    low, high = find_correction_range(beta_fast, beta_slow, dim, base, original_max_position_embeddings, truncate)

    # Get n-dimensional rotational scaling corrected for extrapolation
    inv_freq_extrapolation_factor = 1 - linear_ramp_factor(low, high, dim // 2).to(device=device, dtype=torch.float64)
    inv_freq = (
        inv_freq_interpolation * (1 - inv_freq_extrapolation_factor)
        + inv_freq_extrapolation * inv_freq_extrapolation_factor
    )
    return inv_freq, attention_factor


def hf_compute_llama3_parameters(config, device=None, seq_len=None):
    """transformers' _compute_llama3_parameters."""
    # Gets the default RoPE parameters
    inv_freq, attention_factor = hf_compute_default_rope_parameters(config, device, seq_len)

    factor = config.rope_scaling["factor"]  # `8` in the original implementation
    low_freq_factor = config.rope_scaling["low_freq_factor"]  # `1` in the original implementation
    high_freq_factor = config.rope_scaling["high_freq_factor"]  # `4` in the original implementation
    old_context_len = config.rope_scaling["original_max_position_embeddings"]  # `8192` in the original implementation

    low_freq_wavelen = old_context_len / low_freq_factor
    high_freq_wavelen = old_context_len / high_freq_factor

    wavelen = 2 * math.pi / inv_freq
    # wavelen < high_freq_wavelen: do nothing
    # wavelen > low_freq_wavelen: divide by factor
    inv_freq_llama = torch.where(wavelen > low_freq_wavelen, inv_freq / factor, inv_freq)
    # otherwise: interpolate between the two, using a smooth factor
    smooth_factor = (old_context_len / wavelen - low_freq_factor) / (high_freq_factor - low_freq_factor)
    smoothed_inv_freq = (1 - smooth_factor) * inv_freq_llama / factor + smooth_factor * inv_freq_llama
    is_medium_freq = ~(wavelen < high_freq_wavelen) * ~(wavelen > low_freq_wavelen)
    inv_freq_llama = torch.where(is_medium_freq, smoothed_inv_freq, inv_freq_llama)

    return inv_freq_llama, attention_factor


HF_ROPE_INIT_FUNCTIONS = {
    "linear": hf_compute_linear_scaling_rope_parameters,
    "dynamic": hf_compute_dynamic_ntk_parameters,
    "yarn": hf_compute_yarn_parameters,
    "llama3": hf_compute_llama3_parameters,
}


def rope_scaling_reference(rope, d_k, position_ids):
    """inv_freq and attention_scaling as transformers' rotary embedding holds them for a
    forward over position_ids: rope_init_fn(config, device) at __init__; for dynamic,
    dynamic_rope_update's dynamic_frequency_update, seq_len = torch.max(position_ids) + 1,
    recomputed with seq_len when it exceeds max_seq_len_cached (= max_position_embeddings)."""
    config = rope_config(rope, d_k)
    rope_type = config.rope_scaling.get("rope_type", config.rope_scaling.get("type"))
    rope_init_fn = HF_ROPE_INIT_FUNCTIONS[rope_type]
    inv_freq, attention_scaling = rope_init_fn(config, None)
    if "dynamic" in rope_type:
        max_seq_len_cached = config.max_position_embeddings
        seq_len = int(torch.max(position_ids)) + 1
        if seq_len > max_seq_len_cached:
            inv_freq, attention_scaling = rope_init_fn(config, None, seq_len=seq_len)
    return inv_freq, float(attention_scaling)


def meta_apply_scaling(freqs: torch.Tensor):
    """Meta's apply_scaling (llama-models, models/llama3/reference_impl/model.py) as it is,
    its constants those of Llama 3.1's rope_scaling: one frequency at a time."""
    # Values obtained from grid search
    scale_factor = 8
    low_freq_factor = 1
    high_freq_factor = 4
    old_context_len = 8192  # original llama3 length

    low_freq_wavelen = old_context_len / low_freq_factor
    high_freq_wavelen = old_context_len / high_freq_factor
    new_freqs = []
    for freq in freqs:
        wavelen = 2 * math.pi / freq
        if wavelen < high_freq_wavelen:
            new_freqs.append(freq)
        elif wavelen > low_freq_wavelen:
            new_freqs.append(freq / scale_factor)
        else:
            assert low_freq_wavelen != high_freq_wavelen
            smooth = (old_context_len / wavelen - low_freq_factor) / (
                high_freq_factor - low_freq_factor
            )
            new_freqs.append((1 - smooth) * freq / scale_factor + smooth * freq)
    return torch.tensor(new_freqs, dtype=freqs.dtype, device=freqs.device)


def meta_precompute_freqs_cis(dim: int, end: int, theta: float = 10000.0, use_scaled: bool = False):
    """Meta's precompute_freqs_cis (llama-models), float64 for .float() and torch.float32."""
    freqs = 1.0 / (theta ** (torch.arange(0, dim, 2)[: (dim // 2)].double() / dim))
    t = torch.arange(end, device=freqs.device, dtype=torch.float64)
    if use_scaled:
        freqs = meta_apply_scaling(freqs)
    freqs = torch.outer(t, freqs)
    freqs_cis = torch.polar(torch.ones_like(freqs), freqs)  # complex128
    return freqs_cis



def gpt_oss_concentration_and_inv_freq(head_dim, base, initial_context_length=4096, scaling_factor=1.0,
                                       ntk_alpha=1.0, ntk_beta=32.0):
    """gpt-oss's RotaryEmbedding._compute_concentration_and_inv_freq (gpt_oss/torch/model.py),
    float64 for torch.float and torch.float32; YaRN without rounding the ramp's ends."""
    freq = base ** (
        torch.arange(0, head_dim, 2, dtype=torch.float64)
        / head_dim
    )
    if scaling_factor > 1.0:
        concentration = (
            0.1 * math.log(scaling_factor) + 1.0
        )  # YaRN concentration

        d_half = head_dim / 2
        # NTK by parts
        low = (
            d_half
            * math.log(initial_context_length / (ntk_beta * 2 * math.pi))
            / math.log(base)
        )
        high = (
            d_half
            * math.log(initial_context_length / (ntk_alpha * 2 * math.pi))
            / math.log(base)
        )
        assert 0 < low < high < d_half - 1

        interpolation = 1.0 / (scaling_factor * freq)
        extrapolation = 1.0 / freq

        ramp = (
            torch.arange(d_half, dtype=torch.float64) - low
        ) / (high - low)
        mask = 1 - ramp.clamp(0, 1)

        inv_freq = interpolation * (1 - mask) + extrapolation * mask
    else:
        concentration = 1.0
        inv_freq = 1.0 / freq

    return concentration, inv_freq


# ---------------------------------------------------------------------------
# Comparing
# ---------------------------------------------------------------------------

def close(a, b, tolerance=TOLERANCE):
    """Absolute-or-relative tolerance: |a - b| <= 1e-12 * max(1, |a|, |b|);
    a blocked cell (-inf) only matches -inf."""
    a, b = torch.as_tensor(a), torch.as_tensor(b)
    if a.shape != b.shape:
        return False
    a_blocked, b_blocked = a == NEG_INF, b == NEG_INF
    if not torch.equal(a_blocked, b_blocked):
        return False
    a, b = a.masked_fill(a_blocked, 0.0), b.masked_fill(b_blocked, 0.0)
    if not bool(torch.isfinite(a).all() and torch.isfinite(b).all()):
        return False
    limit = tolerance * torch.maximum(torch.ones_like(a), torch.maximum(a.abs(), b.abs()))
    return bool(((a - b).abs() <= limit).all())


def compare(expected, actual, what, step_ids=STEP_IDS + ["output"], tolerance=TOLERANCE):
    for step in step_ids:
        if step in WHOLE_STEPS:
            assert close(expected[step], actual[step], tolerance), \
                f"{what}: {step} differs\n{expected[step]}\n{actual[step]}"
            continue
        assert len(expected[step]) == len(actual[step]), (what, step, "head count")
        for h, (e, a) in enumerate(zip(expected[step], actual[step])):
            assert close(e, a, tolerance), f"{what}: {step} head {h + 1} differs\n{e}\n{a}"


# ---------------------------------------------------------------------------
# The cases, one function per family. Each returns a list of case dicts:
#   name, doc (YAML content after title), steps, scale, heads, provenance.
# ---------------------------------------------------------------------------

def seeded(seed):
    torch.manual_seed(seed)


def randn(*shape):
    return torch.randn(*shape)


def labels(prefix, count):
    return [f"{prefix}{i + 1}" for i in range(count)]


def mha_case(name, title, mha, X, layout_doc, C=None, mask=None, padding=None,
             extra=None, note=""):
    steps, scale = mha_reference(mha, X, C, mask, padding)
    doc = {"title": title}
    doc.update(extra or {})
    doc["inputs"] = lists(X)
    if C is not None:
        doc["context"] = lists(C)
    doc.update(layout_doc)
    return {"name": name, "doc": doc, "steps": steps, "scale": scale,
            "heads": mha.num_heads, "kv_heads": mha.num_heads,
            "written": STEP_IDS + ["output"], "provenance": PROVENANCE_MHA + note + VERSIONS}


def plain_case(name, title, doc, X, C, heads, W_O, b_O, divisor, keep, why):
    steps = plain_attention(X, X if C is None else C, heads, W_O, b_O, divisor, keep)
    return {"name": name, "doc": {"title": title} | doc, "steps": steps,
            "scale": divisor, "heads": len(heads), "kv_heads": len(heads),
            "written": STEP_IDS + ["output"],
            "provenance": PROVENANCE_PLAIN.format(why=why) + VERSIONS}


def cases_illustrated():
    """The worked example of the illustrated walk through self-attention: no scaling."""
    X = tensor([[1, 0, 1, 0], [0, 2, 0, 2], [1, 1, 1, 1]])
    W_Q = tensor([[1, 0, 1], [1, 0, 0], [0, 0, 1], [0, 1, 1]])
    W_K = tensor([[0, 0, 1], [1, 1, 0], [0, 1, 0], [1, 1, 0]])
    W_V = tensor([[0, 2, 0], [0, 3, 0], [1, 0, 3], [1, 1, 0]])
    doc = {"tokens": ["Input 1", "Input 2", "Input 3"], "inputs": lists(X),
           "weights": {"query": lists(W_Q), "key": lists(W_K), "value": lists(W_V)},
           "scale": Bare("none")}
    case = plain_case("illustrated_no_scale",
                      "Illustrated example: 3 inputs of width 4, one head, no scaling, no W_O",
                      doc, X, None, [{"query": W_Q, "key": W_K, "value": W_V}],
                      None, None, 1.0, None, "scale none, no W_O, d_model 4 != d_k 3")
    # the article's own numbers
    assert torch.equal(case["steps"]["keys"][0], tensor([[0, 1, 1], [4, 4, 0], [2, 3, 1]]))
    assert torch.equal(case["steps"]["values"][0], tensor([[1, 2, 3], [2, 8, 0], [2, 6, 3]]))
    assert torch.equal(case["steps"]["scores"][0],
                       tensor([[2, 4, 4], [4, 16, 12], [4, 12, 10]]))
    return [case]


def cases_x_w():
    """Default layout (weights in x out, `heads: H`)."""
    out = []

    seeded(101)
    mha = make_mha(4, 1)
    X = randn(3, 4)
    out.append(mha_case("single_head_x_w_bias",
                        "One head, x_w weights with W_O, all four biases",
                        mha, X, yaml_x_w(mha), extra={"tokens": ["the", "cat", "sat"]}))

    seeded(102)
    mha = make_mha(6, 3)
    X = randn(4, 6)
    out.append(mha_case("three_heads_x_w_causal",
                        "Three heads, x_w weights split by heads: 3, all biases, causal mask",
                        mha, X, yaml_x_w(mha) | {"mask": Bare("causal")},
                        mask=causal(4)))

    seeded(103)
    mha = make_mha(4, 2)
    with torch.no_grad():
        mha.in_proj_bias[4:12] = 0.0        # no key and value biases
    X = randn(3, 4)
    out.append(mha_case("two_heads_x_w_query_output_bias_only",
                        "Two heads, x_w weights, only the query and output biases",
                        mha, X, yaml_x_w(mha, bias_names=("query", "output"))))

    seeded(104)
    mha = make_mha(4, 2)
    X = 30.0 * randn(4, 4)
    case = mha_case("large_scores_stable_softmax",
                    "Two heads, inputs scaled by 30: scores far beyond exp() range",
                    mha, X, yaml_x_w(mha), note="inputs are 30 * randn; ")
    scaled = max(float((s / case["scale"]).abs().max()) for s in case["steps"]["scores"])
    assert scaled > 800.0, f"scaled scores only reach {scaled}: exp() would not overflow"
    out.append(case)

    # Every token = one large shared vector + a small private part: each row of
    # scores sits far beyond exp()'s range, yet the differences within a row
    # stay moderate, so the weights are not all 0 and 1.
    seeded(105)
    mha = make_mha(4, 2)
    X = 30.0 * randn(1, 4) + 0.1 * randn(4, 4)
    case = mha_case("large_scores_shared_offset",
                    "Two heads, tokens share a large vector: scores in the thousands, weights not saturated",
                    mha, X, yaml_x_w(mha), extra={"mask": Bare("causal")}, mask=causal(4),
                    note="inputs are 30 * a shared randn row + 0.1 * randn; ")
    for S, A in zip(case["steps"]["scores"], case["steps"]["weights"]):
        row_max = (S / case["scale"]).masked_fill(causal(4) == 0, float("-inf")).max(dim=1).values
        assert bool((row_max.abs() > 710.0).all()), f"row maxima {row_max}: exp() would not overflow"
    middling = sum(int(((A > 0.01) & (A < 0.99)).sum()) for A in case["steps"]["weights"])
    assert middling >= 4, f"only {middling} weights strictly between 0.01 and 0.99"
    out.append(case)
    return out


def cases_layout_pytorch():
    """layout: pytorch (weights out x in, as nn.Linear.weight)."""
    out = []

    seeded(201)
    mha = make_mha(4, 2, bias=False)
    X = randn(3, 4)
    mask = tensor([[1, 1, 0], [0, 1, 0], [1, 0, 1]]).long()
    out.append(mha_case("two_heads_layout_pytorch_mask_no_bias",
                        "Two heads, layout: pytorch, explicit mask matrix, no biases",
                        mha, X, yaml_layout_pytorch(mha) | {"mask": lists(mask)},
                        mask=mask))

    seeded(202)
    mha = make_mha(8, 4)
    X = randn(5, 8)
    padding = [1, 1, 1, 0, 0]
    out.append(mha_case("four_heads_layout_pytorch_padding",
                        "Four heads, layout: pytorch, all biases, last two tokens are padding",
                        mha, X, yaml_layout_pytorch(mha) | {"padding": padding},
                        padding=padding,
                        extra={"tokens": ["we", "like", "tea", "<pad>", "<pad>"]}))
    return out


def cases_heads_list():
    """heads: [ {query, key, value, bias}, ... ] with W_O at the top level."""
    out = []

    seeded(301)
    mha = make_mha(6, 2)
    X = randn(4, 6)
    mask = tensor([[1, 0, 1, 1], [1, 1, 0, 0], [0, 1, 1, 1], [1, 1, 1, 0]]).long()
    padding = [1, 1, 1, 0]
    out.append(mha_case("heads_list_mask_and_padding",
                        "Two heads as a list with per-head biases, mask matrix plus padding",
                        mha, X, yaml_heads_list(mha) | {"mask": lists(mask), "padding": padding},
                        mask=mask, padding=padding))

    seeded(302)
    mha = make_mha(3, 1)
    X = randn(2, 3)
    out.append(mha_case("heads_list_single_head",
                        "A one-element heads list with biases, W_O and its bias",
                        mha, X, yaml_heads_list(mha)))
    return out


def cases_pytorch_block():
    """pytorch: {num_heads, in_proj_weight, ...} pasted from the module."""
    out = []

    seeded(401)
    mha = make_mha(4, 2)
    X = randn(4, 4)
    out.append(mha_case("pytorch_block_causal",
                        "Two heads pasted as a pytorch block, causal mask",
                        mha, X, yaml_pytorch_block(mha) | {"mask": Bare("causal")},
                        mask=causal(4)))

    seeded(402)
    mha = make_mha(6, 3)
    X = randn(2, 6)
    C = randn(4, 6)
    padding = [1, 0, 1, 1]
    out.append(mha_case("pytorch_block_cross_attention_padding",
                        "Cross-attention (n 2, m 4) from a pytorch block, padding over the context",
                        mha, X, yaml_pytorch_block(mha) | {"padding": padding}, C=C,
                        padding=padding,
                        extra={"tokens": ["le", "chat"],
                               "context_tokens": ["the", "<pad>", "cat", "sleeps"]}))

    seeded(403)
    mha = make_mha(6, 2, bias=False)
    X = randn(3, 6)
    out.append(mha_case("pytorch_block_no_bias",
                        "A pytorch block from a bias=False module: no in_proj_bias, no out_proj_bias",
                        mha, X, yaml_pytorch_block(mha)))
    return out


def cases_cross_attention():
    """Keys and values from `context` (m rows), queries from `inputs`."""
    seeded(501)
    mha = make_mha(4, 2)
    X = randn(3, 4)
    C = randn(5, 4)
    mask = tensor([[1, 1, 0, 0, 1], [0, 1, 1, 0, 0], [1, 1, 1, 1, 0]]).long()
    return [mha_case("cross_attention_x_w_mask",
                     "Cross-attention, n 3 queries over m 5 context rows, x_w, 3 x 5 mask",
                     mha, X, yaml_x_w(mha) | {"mask": lists(mask)}, C=C, mask=mask,
                     extra={"tokens": ["q1", "q2", "q3"],
                            "context_tokens": labels("c", 5)})]


def random_heads(d_model, n_heads, d_k, d_v, with_bias):
    """Per-head weights (in x out) and biases for the plain cases."""
    heads = []
    for _ in range(n_heads):
        head = {"query": randn(d_model, d_k), "key": randn(d_model, d_k),
                "value": randn(d_model, d_v)}
        for name in with_bias:
            head["bias_" + name] = randn(head[name].shape[1])
        heads.append(head)
    return heads


def stacked(heads, name):
    """Concatenate the heads' weights column-wise (the `heads: H` layout)."""
    return torch.cat([h[name] for h in heads], dim=1)


def stacked_bias(heads, name):
    return torch.cat([h["bias_" + name] for h in heads])


def cases_plain():
    """Cases nn.MultiheadAttention cannot express: plain tensor ops."""
    out = []

    # scale: 2.5 with two heads, x_w, W_O, all biases
    seeded(601)
    X = randn(3, 4)
    heads = random_heads(4, 2, 2, 2, ("query", "key", "value"))
    W_O, b_O = randn(4, 4), randn(4)
    doc = {"inputs": lists(X),
           "weights": {name: lists(stacked(heads, name)) for name in ("query", "key", "value")}
           | {"output": lists(W_O)},
           "heads": 2,
           "bias": {name: lists(stacked_bias(heads, name)) for name in ("query", "key", "value")}
           | {"output": lists(b_O)},
           "scale": 2.5}
    out.append(plain_case("two_heads_numeric_scale",
                          "Two heads, x_w, every score divided by scale: 2.5",
                          doc, X, None, heads, W_O, b_O, 2.5, None, "numeric scale 2.5"))

    # no W_O, three heads, layout: pytorch (every weight written out x in)
    seeded(602)
    X = randn(4, 5)
    heads = random_heads(5, 3, 2, 2, ("query", "key", "value"))
    doc = {"inputs": lists(X), "layout": Bare("pytorch"),
           "weights": {name: lists(stacked(heads, name).T) for name in ("query", "key", "value")},
           "heads": 3,
           "bias": {name: lists(stacked_bias(heads, name)) for name in ("query", "key", "value")}}
    out.append(plain_case("three_heads_no_output_projection_layout_pytorch",
                          "Three heads, layout: pytorch, no W_O: the output is the concatenation",
                          doc, X, None, heads, None, None, math.sqrt(2), None,
                          "no W_O; d_model 5 != 3 heads * d_k 2"))

    # heads list with d_v 3 != d_k 2, W_O 6 x 4, biases in head 1 only
    seeded(603)
    X = randn(3, 5)
    heads = random_heads(5, 2, 2, 3, ())
    heads[0]["bias_query"] = randn(2)
    heads[0]["bias_value"] = randn(3)
    W_O, b_O = randn(6, 4), randn(4)
    doc_heads = []
    for head in heads:
        item = {name: lists(head[name]) for name in ("query", "key", "value")}
        bias = {name: lists(head["bias_" + name]) for name in ("query", "key", "value")
                if "bias_" + name in head}
        if bias:
            item["bias"] = bias
        doc_heads.append(item)
    doc = {"inputs": lists(X), "heads": doc_heads,
           "weights": {"output": lists(W_O)}, "bias": {"output": lists(b_O)},
           "mask": Bare("causal")}
    out.append(plain_case("heads_list_dv_differs_from_dk",
                          "Two heads as a list, d_k 2 and d_v 3, query and value bias in head 1 only, causal",
                          doc, X, None, heads, W_O, b_O, math.sqrt(2), combine_keep(3, 3, causal(3), None),
                          "d_v 3 != d_k 2, H * d_k 4 != d_model 5, per-head biases"))

    # x_w with value width 6 != query width 4 over two heads, scale none
    seeded(604)
    X = randn(4, 3)
    heads = random_heads(3, 2, 2, 3, ("value",))
    W_O = randn(6, 5)
    doc = {"inputs": lists(X),
           "weights": {name: lists(stacked(heads, name)) for name in ("query", "key", "value")}
           | {"output": lists(W_O)},
           "heads": 2,
           "bias": {"value": lists(stacked_bias(heads, "value"))},
           "scale": Bare("none"),
           "padding": [1, 1, 0, 1]}
    out.append(plain_case("two_heads_x_w_dv_differs_scale_none",
                          "Two heads, x_w, value width 6 vs query width 4 (d_v 3, d_k 2), scale none, padding",
                          doc, X, None, heads, W_O, None, 1.0,
                          combine_keep(4, 4, None, [1, 1, 0, 1]),
                          "scale none, d_v 3 != d_k 2, W_O 6 x 5 (d_out != d_model)"))
    return out


# ---------------------------------------------------------------------------
# EXAMPLE FILES in man/qkv.1.in: RoPE, grouped-query attention, ALiBi, sliding windows, sinks
# ---------------------------------------------------------------------------

PROVENANCE_MODERN = {
    "base": "every step from batched torch ops on (heads, tokens, d) tensors, as language-model "
            "code writes them: Q = (X @ W_Q + b_Q).view(n, H, d_k).transpose(0, 1), K and V "
            "likewise with {G} key/value head(s); ",
    "half": "RoPE style half as Hugging Face transformers: inv_freq = 1 / base ** "
            "(arange(0, d_k, 2) / d_k), emb = torch.cat((freqs, freqs), dim=-1), "
            "q * emb.cos() + rotate_half(q) * emb.sin() (same for k); ",
    "interleaved": "RoPE style interleaved as Meta's Llama code: freqs_cis = torch.polar(ones, "
                   "outer(t, freqs)), torch.view_as_real(torch.view_as_complex(x.reshape(n, H, "
                   "-1, 2)) * freqs_cis).flatten(2) on the (tokens, heads, d) layout; ",
    "qk_norm": "qk_norm (RMSNorm of the queries and keys after the projections and biases, before "
               "RoPE) as {model}: {norm} {where}, eps {eps}, in float64 throughout (upstream casts to "
               "float32 inside the norm and back after); normed_queries and normed_keys are its "
               "outputs, which {reader} read; ",
    "partial": "partial rotation as GPT-NeoX's, Phi's and GLM's code: the first rotary_dim = "
               "int(head_dim * partial_rotary_factor) elements turned, with the frequencies over "
               "rotary_dim, and torch.cat((turned, x[..., rotary_dim:]), dim=-1); ",
    "gqa": "each key/value head repeated with repeat_interleave(H // G, dim=0), as "
           "scaled_dot_product_attention(enable_gqa=True) does; ",
    "scores": "scores = torch.matmul(Q, K.transpose(-2, -1)) (raw), scaled_scores = scores / scale; ",
    "softcap": "capped_scores as transformers' Gemma 2 eager_attention_forward caps its logits "
               "(attn_logit_softcapping): scaled_scores / softcap, torch.tanh, * softcap, before the "
               "bias and the mask; ",
    "alibi": "ALiBi slopes from Press et al.'s get_slopes (power-of-two handling), position_bias = "
             "-slopes[:, None, None] * (arange(m)[None, :] - arange(n)[:, None]).abs(), "
             "biased_scores = scaled_scores + position_bias; ",
    "window": "sliding window as flash-attn's window_size = (W - 1, 0): key j blocked when "
              "j > i or j < i - (W - 1); ",
    "causal": "causal mask torch.triu(ones, diagonal=1) (True = blocked); ",
    "matrix": "mask matrix == 0 (True = blocked); ",
    "padding": "padding as key_padding_mask (padding == 0) broadcast over the queries; ",
    "masked": "masked_scores = masked_fill(blocked, -inf); ",
    "softmax": "weights = torch.softmax(dim=-1); ",
    "sinks": "sinks as gpt-oss's sdpa: torch.cat([scores, sink column], dim=-1), "
             "torch.softmax(dim=-1), last column dropped; ",
    "tail": "head_output = torch.matmul(weights, V{repeated}), concat = "
            "head_output.transpose(0, 1).reshape(n, H * d_v), output = {output}; ",
}


def rope_scaling_provenance(rope, ref, d_k, n):
    """How a case's rope.scaling was computed, with the numbers that came out."""
    scaling = rope["scaling"]
    kind = ref["scaling"]
    d_rot = int(d_k * ref["partial"])
    spec = rope_scaling_spec(rope, d_rot, n)
    config = rope_config(rope, d_k)
    text = (f"rope.scaling (rope_type {kind}): inv_freq (in place of the plain one) and attention_scaling "
            "as transformers' modeling_rope_utils computes them: ")
    if kind == "linear":
        text += ("_compute_linear_scaling_rope_parameters: the default inv_freq = 1.0 / (base ** "
                 "(torch.arange(0, dim, 2) / dim)) over dim = rotary_dim, then inv_freq /= factor; ")
    elif kind == "dynamic":
        grown = n > config.max_position_embeddings
        text += ("_compute_dynamic_ntk_parameters through dynamic_rope_update: seq_len = "
                 f"torch.max(position_ids) + 1 = {n}, {'above' if grown else 'not above'} "
                 f"max_position_embeddings {fmt_number(config.max_position_embeddings)} (rope.max_position_"
                 "embeddings; by default, for dynamic, original_max_position_embeddings)"
                 + (", so inv_freq is recomputed with it" if grown else "") +
                 ": base = base * ((factor * seq_len / max_position_embeddings) - (factor - 1)) ** "
                 f"(dim / (dim - 2)) = {spec['base']!r}, inv_freq = 1.0 / (base ** (torch.arange(0, dim, "
                 "2) / dim)); ")
    elif kind == "yarn":
        given = scaling.get("attention_factor") is not None
        both = bool(scaling.get("mscale") and scaling.get("mscale_all_dim"))
        how = ("given" if given else
               "get_mscale(factor, mscale) / get_mscale(factor, mscale_all_dim)" if both else
               "get_mscale(factor) = 0.1 * math.log(factor) + 1.0")
        where = ("on the two halves: cos = emb.cos() * self.attention_scaling, sin likewise"
                 if ref["style"] == "half" else
                 "as the modulus of freqs_cis = torch.polar(attention_factor * ones, angles)")
        text += ("_compute_yarn_parameters (the version that reads mscale, mscale_all_dim and "
                 f"truncate): attention_factor {how} = {ref['attention_scaling']!r}; beta_fast and "
                 f"beta_slow {fmt_number(scaling.get('beta_fast') or 32)} and "
                 f"{fmt_number(scaling.get('beta_slow') or 1)}; find_correction_range(beta_fast, beta_slow, "
                 f"dim, base, original_max_position_embeddings = {fmt_number(spec['L0'])}"
                 + ("" if scaling.get("original_max_position_embeddings") is not None else
                    " (rope_scaling has none: config.max_position_embeddings)") +
                 f", truncate = {bool(scaling.get('truncate', True))}) = ({spec['low']!r}, {spec['high']!r}); "
                 f"linear_ramp_factor(low, high, dim // 2) = [{', '.join(repr(r) for r in spec['ramp'])}]; "
                 "inv_freq = inv_freq_interpolation * (1 - inv_freq_extrapolation_factor) + "
                 "inv_freq_extrapolation * inv_freq_extrapolation_factor; the rotated elements are "
                 f"multiplied by attention_factor {where}, so rotated_queries and rotated_keys carry it; ")
    else:
        text += ("_compute_llama3_parameters: wavelen = 2 * math.pi / inv_freq against "
                 "original_max_position_embeddings / low_freq_factor and / high_freq_factor, torch.where "
                 "for the three bands, (1 - smooth_factor) * inv_freq_llama / factor + smooth_factor * "
                 f"inv_freq_llama in the middle one: pairs {', '.join(spec['bands'])}; ")
    return text + ("computed in float64 throughout (upstream's torch.arange(..., dtype=torch.float32) and "
                   f".float() made float64); inv_freq = [{', '.join(repr(float(x)) for x in ref['inv_freq'])}], "
                   f"attention_scaling {ref['attention_scaling']!r}; ")


def uniform(*shape, bound):
    """U(-bound, bound): weights of bound sqrt(3 / fan_in) keep X @ W near unit variance,
    so that the softmax is neither flat nor saturated."""
    return (torch.rand(*shape) * 2.0 - 1.0) * bound


def blocked_cells(n, m, mask, padding, sinks=None):
    """n x m boolean, True = blocked, built as the libraries build it (None: nothing blocked).
    A row blocked whole is refused without sinks; with them it is gpt-oss's: all weight to
    the sink."""
    blocked = None
    if isinstance(mask, str):
        assert mask == "causal" and n == m
        blocked = torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=1)
    elif isinstance(mask, dict):
        blocked = local_mask_flash(n, m, mask["window"])
    elif mask is not None:
        blocked = torch.as_tensor(mask) == 0
    if padding is not None:
        key_padding_mask = (torch.as_tensor(padding) == 0)[None, :].expand(n, m)
        blocked = key_padding_mask if blocked is None else blocked | key_padding_mask
    if blocked is not None and sinks is None:
        for i in range(n):
            assert not bool(blocked[i].all()), f"query {i + 1} may attend to no key"
    return blocked


def rope_reference(rope, d_k, n):
    """The reference settings for a rope value as the YAML reads (True, or a map of base,
    style, partial_rotary_factor, max_position_embeddings, scaling) over n positions: with
    scaling, "scaling" (the rope_type), "inv_freq" and "attention_scaling" as transformers
    computes them (rope_scaling_reference)."""
    rope = {} if rope is True else rope
    ref = {"base": float(rope.get("base", 10000)), "style": rope.get("style", "half"),
           "partial": float(rope.get("partial_rotary_factor", 1.0))}
    if rope.get("scaling") is not None:
        ref["scaling"] = rope["scaling"].get("rope_type", rope["scaling"].get("type"))
        ref["inv_freq"], ref["attention_scaling"] = rope_scaling_reference(
            rope, d_k, torch.arange(n)[None, :])
    return ref


def config_value(value):
    """A rope_scaling value as a config.json writes it: true/false, a string bare, a whole
    float with its point (8.0)."""
    if isinstance(value, bool):
        return Bare("true" if value else "false")
    if isinstance(value, str):
        return Bare(value)
    if isinstance(value, float) and value.is_integer():
        return Bare(repr(value))
    return value


def rope_settings(rope, d_k=None, n=None):
    """(YAML value, reference settings) for rope=True or a dict of base/style (one flow
    line). With scaling (a config.json's rope_scaling): a block map whose scaling is one
    flow line, or, for a Flow, everything on one line."""
    if rope is None:
        return None, None
    if rope is True:
        return Bare("true"), {"base": 10000.0, "style": "half", "partial": 1.0}
    if "scaling" not in rope:
        yaml_value = Flow({key: (Bare(value) if isinstance(value, str) else value)
                           for key, value in rope.items()})
        return yaml_value, {"base": float(rope.get("base", 10000)), "style": rope.get("style", "half"),
                            "partial": float(rope.get("partial_rotary_factor", 1.0))}
    outer = Flow if isinstance(rope, Flow) else dict
    yaml_value = outer({key: (Flow({k: config_value(v) for k, v in value.items()}) if key == "scaling"
                              else Bare(value) if isinstance(value, str) else value)
                        for key, value in rope.items()})
    return yaml_value, rope_reference(dict(rope), d_k, n)


def modern_case(name, title, seed, *, n, d_model, H, d_k, G=None, d_v=None, m=None,
                d_out=None, bias=("query", "key", "value", "output"), output=True,
                layout="x_w", scale=None, rope=None, alibi=None, mask=None, padding=None,
                sinks=None, softcap=None, qk_norm=None, norm_eps=None, tokens=None,
                context_tokens=None, note=""):
    """Draw a model (seeded), write it as qkv YAML and compute every step with
    modern_reference()."""
    seeded(seed)
    kv = H if G is None else G
    d_v = d_k if d_v is None else d_v
    X = randn(n, d_model)
    C = None if m is None else randn(m, d_model)
    bound = math.sqrt(3.0 / d_model)
    W = {"query": uniform(d_model, H * d_k, bound=bound),
         "key": uniform(d_model, kv * d_k, bound=bound),
         "value": uniform(d_model, kv * d_v, bound=bound)}
    b = {key: uniform(W[key].shape[1], bound=0.5) for key in ("query", "key", "value")
         if key in bias}
    W_O = uniform(H * d_v, d_out or d_model, bound=math.sqrt(3.0 / (H * d_v))) if output else None
    b_O = uniform(W_O.shape[1], bound=0.5) if output and "output" in bias else None

    doc = {}
    if tokens:
        doc["tokens"] = tokens
    doc["inputs"] = lists(X)
    if C is not None:
        if context_tokens:
            doc["context_tokens"] = context_tokens
        doc["context"] = lists(C)
    as_written = (lambda t: t.T) if layout == "pytorch" else (lambda t: t)
    if layout == "pytorch":
        doc["layout"] = Bare("pytorch")
    doc["weights"] = {key: lists(as_written(W[key])) for key in ("query", "key", "value")}
    if W_O is not None:
        doc["weights"]["output"] = lists(as_written(W_O))
    if H > 1:
        doc["heads"] = H
    if G is not None:
        doc["kv_heads"] = G
    bias_doc = {key: lists(value) for key, value in b.items()}
    if b_O is not None:
        bias_doc["output"] = lists(b_O)
    if bias_doc:
        doc["bias"] = bias_doc
    if scale is None:
        divisor = math.sqrt(d_k)
    else:
        doc["scale"] = Bare(scale) if isinstance(scale, str) else scale
        divisor = 1.0 if scale == "none" else float(scale)
    doc["rope"], rope_ref = rope_settings(rope, d_k, n)
    if doc["rope"] is None:
        del doc["rope"]
    slopes = None
    if alibi is True:
        doc["alibi"], slopes = Bare("true"), press_get_slopes(H)
    elif alibi is not None:
        doc["alibi"], slopes = list(alibi), [float(x) for x in alibi]
    if mask is not None:
        doc["mask"] = (Bare(mask) if isinstance(mask, str)
                       else Flow(mask) if isinstance(mask, dict) else mask)
    if padding is not None:
        doc["padding"] = padding
    if sinks is not None:
        doc["sinks"] = list(sinks)
    if softcap is not None:
        doc["softcap"] = softcap
    norm_ref = None
    if qk_norm is not None:
        doc["qk_norm"] = (Bare("true") if qk_norm is True
                          else Flow({key: Bare(value) if isinstance(value, str) else value
                                     for key, value in qk_norm.items()}))
        spec = {} if qk_norm is True else qk_norm
        over, offset = spec.get("over", "head"), spec.get("offset", 0)
        widths = {"query": d_k if over == "head" else H * d_k,
                  "key": d_k if over == "head" else kv * d_k}
        norm_ref = {"over": over, "offset": offset,
                    "eps": float(spec.get("eps", 1e-6 if norm_eps is None else norm_eps))}
        for key, width in widths.items():
            # gamma defaults to 1 (offset 0) or 0 (offset 1), as the upstream weights start
            norm_ref[key] = (tensor(spec[key]) if key in spec
                             else torch.full((width,), 1.0 - offset))
            assert norm_ref[key].shape == (width,), (key, norm_ref[key].shape, width)
    if norm_eps is not None:
        doc["norm_eps"] = norm_eps

    rows = n if C is None else C.shape[0]
    blocked = blocked_cells(n, rows, mask, padding, sinks)
    steps = modern_reference(X, X if C is None else C, W, b, H, kv, W_O, b_O, divisor,
                             rope_ref, slopes, blocked, sinks, softcap, norm_ref)
    ops = [PROVENANCE_MODERN["base"].format(G=kv)]
    if norm_ref is not None:
        gemma = norm_ref["offset"] == 1
        norm = ("Gemma3RMSNorm (_norm(x) = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps), "
                "output * (1.0 + weight))" if gemma else
                "{}RMSNorm (variance = hidden_states.pow(2).mean(-1, keepdim=True), hidden_states * "
                "torch.rsqrt(variance + eps), weight * hidden_states)".format(
                    "Qwen3" if norm_ref["over"] == "head" else "Olmo2"))
        where = ("on each head's d_k values of the (tokens, heads, d_k) view, weight of d_k "
                 "shared by the heads" if norm_ref["over"] == "head" else
                 "on the whole projection (q_norm over H * d_k, k_norm over G * d_k, the "
                 "weights as wide) before .view(n, heads, d_k)")
        model = {("head", 0): "Qwen3Attention's q_norm(q_proj(x).view(hidden_shape)), k_norm likewise",
                 ("head", 1): "Gemma3Attention's q_norm(query_states), k_norm(key_states) after "
                              "the view into heads",
                 ("all", 0): "Olmo2Attention's q_norm(q_proj(x)), k_norm(k_proj(x))",
                 ("all", 1): "Olmo2Attention's q_norm(q_proj(x)), k_norm(k_proj(x)), with Gemma 3's "
                             "norm"}[norm_ref["over"], norm_ref["offset"]]
        given = "" if qk_norm is not True and {"query", "key"} <= set(qk_norm) else (
            ", weight the upstream init ({})".format("zeros" if gemma else "ones"))
        ops.append(PROVENANCE_MODERN["qk_norm"].format(
            model=model, norm=norm + given, where=where, eps=fmt_number(norm_ref["eps"]),
            reader="RoPE and the scores" if rope_ref else "the scores"))
    if rope_ref:
        ops.append(PROVENANCE_MODERN[rope_ref["style"]])
        if rope_ref["partial"] != 1.0:
            ops.append(PROVENANCE_MODERN["partial"])
        if "scaling" in rope_ref:
            ops.append(rope_scaling_provenance(dict(rope), rope_ref, d_k, n))
    if kv != H:
        ops.append(PROVENANCE_MODERN["gqa"])
    ops.append(PROVENANCE_MODERN["scores"])
    if softcap is not None:
        ops.append(PROVENANCE_MODERN["softcap"])
    if slopes is not None:
        ops.append(PROVENANCE_MODERN["alibi"])
    if mask is not None:
        ops.append(PROVENANCE_MODERN["window" if isinstance(mask, dict)
                                     else "causal" if mask == "causal" else "matrix"])
    if padding is not None:
        ops.append(PROVENANCE_MODERN["padding"])
    if blocked is not None:
        ops.append(PROVENANCE_MODERN["masked"])
    ops.append(PROVENANCE_MODERN["sinks" if sinks is not None else "softmax"])
    if softcap is not None:
        # the bias is added to the capped scores
        ops = [op.replace("biased_scores = scaled_scores +", "biased_scores = capped_scores +") for op in ops]
    ops.append(PROVENANCE_MODERN["tail"].format(
        repeated=" repeated" if kv != H else "",
        output="concat (no W_O)" if W_O is None
        else "concat @ W_O" + (" + b_O" if b_O is not None else "")))
    return {"name": name, "doc": {"title": title} | doc, "steps": steps, "scale": divisor,
            "heads": H, "kv_heads": kv, "written": [s for s in ALL_STEP_IDS if s in steps],
            "provenance": "".join(ops) + note + VERSIONS,
            "model": {"X": X, "W": W, "b": b, "W_O": W_O, "b_O": b_O, "divisor": divisor}}


def cases_rope():
    """Rotary position embeddings, both styles."""
    out = []
    out.append(modern_case(
        "rope_half_one_head", "RoPE (rope: true: style half, base 10000), one head, d_k 4, no biases",
        701, n=4, d_model=4, H=1, d_k=4, rope=True, bias=(),
        tokens=["the", "cat", "sat", "down"]))
    out.append(modern_case(
        "rope_interleaved_two_heads_base_100",
        "RoPE style interleaved with base 100, two heads of d_k 4, all biases, W_O",
        702, n=4, d_model=6, H=2, d_k=4, rope={"base": 100, "style": "interleaved"}))
    out.append(modern_case(
        "rope_cross_attention",
        "RoPE style half (base 1000) in cross-attention: 3 queries at positions 0-2, 5 context rows at 0-4",
        703, n=3, m=5, d_model=4, H=2, d_k=2, rope={"base": 1000, "style": "half"},
        tokens=["q1", "q2", "q3"], context_tokens=labels("c", 5)))
    out.append(modern_case(
        "rope_causal", "RoPE (rope: true) with a causal mask, two heads of d_k 4, query and key biases",
        704, n=5, d_model=6, H=2, d_k=4, rope=True, mask="causal",
        bias=("query", "key")))
    out.append(modern_case(
        "rope_partial_half_causal",
        "RoPE style half turning the first 4 of d_k 6 (partial_rotary_factor 0.6666666666666666, GPT-NeoX), "
        "two heads, causal",
        705, n=5, d_model=6, H=2, d_k=6, rope={"partial_rotary_factor": 0.6666666666666666}, mask="causal"))
    out.append(modern_case(
        "rope_partial_interleaved_gqa",
        "RoPE style interleaved turning the first 4 of d_k 8 (partial_rotary_factor 0.5, GLM), base 500, "
        "four heads over two key/value heads, a window of 3",
        706, n=5, d_model=8, H=4, G=2, d_k=8,
        rope={"base": 500, "style": "interleaved", "partial_rotary_factor": 0.5}, mask={"window": 3}))
    return out


def cases_gqa():
    """Grouped-query attention: kv_heads G with heads H."""
    out = []
    case = modern_case(
        "gqa_four_heads_two_kv_heads",
        "Grouped-query attention: heads 4, kv_heads 2 (query heads 1-2 share key/value head 1), biases, W_O",
        801, n=4, d_model=8, H=4, G=2, d_k=2)
    assert case["model"]["W"]["key"].shape == (8, 4)
    out.append(case)
    out.append(modern_case(
        "gqa_multi_query",
        "Multi-query attention: heads 4, kv_heads 1, d_k 2 and d_v 3, all biases, W_O 12 x 5",
        802, n=3, d_model=5, H=4, G=1, d_k=2, d_v=3, d_out=5))
    out.append(modern_case(
        "gqa_rope_causal_llama",
        "A Llama-style block: heads 4, kv_heads 2, RoPE (rope: true), causal mask, no biases, W_O",
        803, n=5, d_model=8, H=4, G=2, d_k=4, rope=True, mask="causal", bias=(),
        tokens=["<s>", "the", "sky", "is", "blue"]))
    out.append(modern_case(
        "gqa_layout_pytorch_padding",
        "Grouped-query attention with layout: pytorch: heads 6, kv_heads 2 (3 query heads each), padding",
        804, n=4, d_model=6, H=6, G=2, d_k=2, layout="pytorch", padding=[1, 1, 1, 0]))
    return out


def mha_alibi_case(name, title, seed, E, H, n, mask):
    """ALiBi given to torch.nn.MultiheadAttention as a float attn_mask of shape
    (H, n, n): the module adds it to Q @ K.T / sqrt(d_k) before its softmax
    (-inf where the mask blocks)."""
    seeded(seed)
    mha = make_mha(E, H)
    X = randn(n, E)
    parts = mha_parts(mha)
    W = {key: parts[key].T for key in ("query", "key", "value")}       # -> in x out
    b = {key: parts["bias_" + key] for key in ("query", "key", "value")}
    slopes = press_get_slopes(H)
    blocked = blocked_cells(n, n, mask, None)
    steps = modern_reference(X, X, W, b, H, H, parts["output"].T, parts["bias_output"],
                             math.sqrt(parts["d"]), None, slopes, blocked, None)
    attn_mask = torch.stack(steps["position_bias"]).masked_fill(blocked, NEG_INF)
    with torch.no_grad():
        out, A = mha(X[None], X[None], X[None], attn_mask=attn_mask, need_weights=True,
                     average_attn_weights=False)
    module = {"weights": list(A[0]), "output": out[0]}
    compare(steps, module, f"{name}: module vs batched ops", ["weights", "output"])
    steps["weights"] = module["weights"]
    steps["head_output"] = [a @ v for a, v in zip(module["weights"], steps["values"])]
    steps["concat"] = torch.cat(steps["head_output"], dim=1)
    steps["output"] = module["output"]
    doc = {"title": title, "inputs": lists(X)} | yaml_pytorch_block(mha)
    doc |= {"alibi": Bare("true"), "mask": Bare(mask)}
    provenance = (
        "weights and output from torch.nn.MultiheadAttention(batch_first=True, need_weights=True, "
        "average_attn_weights=False, eval mode, dropout 0) given ALiBi as a float attn_mask of "
        "shape (H, n, n): position_bias = -slope * |i - j| (slopes from Press et al.'s get_slopes, "
        "distances from torch.arange) with -inf in the cells the causal mask blocks, which the "
        "module adds to the scaled scores before its softmax; queries, keys, values, scores, "
        "scaled_scores, biased_scores and masked_scores from batched torch ops on the module's "
        "in_proj_weight and in_proj_bias; head_output = weights @ V; concat = torch.cat of the "
        "head outputs; the module's weights and output cross-checked against the batched ops "
        "to 1e-12; ")
    return {"name": name, "doc": doc, "steps": steps, "scale": math.sqrt(parts["d"]),
            "heads": H, "kv_heads": H, "written": [s for s in ALL_STEP_IDS if s in steps],
            "provenance": provenance + VERSIONS}


def cases_alibi():
    """ALiBi: -m_h * |i - j| added to the scaled scores."""
    out = []
    case = modern_case(
        "alibi_one_head", "ALiBi (alibi: true) with one head: slope 2^-8",
        901, n=5, d_model=4, H=1, d_k=4, alibi=True)
    assert press_get_slopes(1) == [2.0 ** -8]
    out.append(case)
    case = modern_case(
        "alibi_four_heads", "ALiBi (alibi: true) with 4 heads: slopes 2^-2, 2^-4, 2^-6, 2^-8",
        902, n=4, d_model=8, H=4, d_k=2, alibi=True)
    assert press_get_slopes(4) == [2.0 ** -2, 2.0 ** -4, 2.0 ** -6, 2.0 ** -8]
    out.append(case)
    case = modern_case(
        "alibi_six_heads",
        "ALiBi (alibi: true) with 6 heads, not a power of two: slopes 2^-2, 2^-4, 2^-6, 2^-8, 2^-1, 2^-3",
        903, n=4, d_model=4, H=6, d_k=2, alibi=True)
    six = [2.0 ** -2, 2.0 ** -4, 2.0 ** -6, 2.0 ** -8, 2.0 ** -1, 2.0 ** -3]
    assert press_get_slopes(6) == six and alibi_slopes_spec(6) == six
    for h, slope in enumerate(six):
        assert float(case["steps"]["position_bias"][h][0, 1]) == -slope
    out.append(case)
    out.append(modern_case(
        "alibi_explicit_slopes_numeric_scale",
        "ALiBi with explicit slopes [0.5, 1.5], scale: 2 (the bias is added after scaling)",
        904, n=4, d_model=4, H=2, d_k=2, alibi=[0.5, 1.5], scale=2))
    out.append(mha_alibi_case(
        "alibi_causal_pytorch_block",
        "ALiBi (alibi: true, slopes 2^-4 and 2^-8) with a causal mask, two heads pasted as a pytorch block",
        905, E=4, H=2, n=5, mask="causal"))
    return out


def cases_window():
    """Sliding-window causal masks: 0 <= i - j < W."""
    out = []
    for seed, W in ((1001, 2), (1002, 3)):
        case = modern_case(
            f"window_{W}_five_tokens",
            f"Sliding window mask: {{window: {W}}} over 5 tokens (each query sees itself and "
            f"{W - 1} key{'s' if W > 2 else ''} before it), two heads",
            seed, n=5, d_model=4, H=2, d_k=2, mask={"window": W})
        allowed = [(case["steps"]["masked_scores"][0][i] != NEG_INF).nonzero().flatten().tolist()
                   for i in range(5)]
        assert allowed == [[j for j in range(5) if 0 <= i - j < W] for i in range(5)], allowed
        out.append(case)
    out.append(modern_case(
        "window_padding",
        "Sliding window {window: 2} and padding (keys 2 and 5 are padding), one head",
        1003, n=5, d_model=4, H=1, d_k=4, mask={"window": 2}, padding=[1, 0, 1, 1, 0]))
    out.append(modern_case(
        "window_alibi",
        "Sliding window {window: 3} with ALiBi (alibi: true), two heads over 6 tokens",
        1004, n=6, d_model=4, H=2, d_k=2, mask={"window": 3}, alibi=True))
    return out


def cases_sinks():
    """Attention sinks: one logit per head joins each row's softmax."""
    out = []
    case = modern_case(
        "sinks_causal",
        "Attention sinks [0.5, -1] with a causal mask: every row of weights sums to less than 1",
        1101, n=4, d_model=4, H=2, d_k=2, mask="causal", sinks=[0.5, -1.0])
    for A in case["steps"]["weights"]:
        assert bool((A.sum(dim=1) < 1.0 - 1e-3).all()), A.sum(dim=1)
    out.append(case)
    case = modern_case(
        "sinks_large_logit",
        "Sinks far above the scores: 1000 (beyond exp() range: head 1's weights are all 0) and 8",
        1102, n=3, d_model=4, H=2, d_k=2, sinks=[1000.0, 8.0])
    assert bool((case["steps"]["weights"][0] == 0).all())
    assert float(case["steps"]["scaled_scores"][1].max()) < 8.0 - 4.0
    assert bool((case["steps"]["weights"][1].sum(dim=1) < 0.1).all())
    out.append(case)
    case = modern_case(
        "sinks_window_gqa_gpt_oss",
        "gpt-oss style: heads 4, kv_heads 2, RoPE base 150000, window 3, sinks, biases, W_O",
        1103, n=6, d_model=8, H=4, G=2, d_k=4, rope={"base": 150000},
        mask={"window": 3}, sinks=[0.3, -0.4, 1.2, 0.0],
        note="rotated_queries, rotated_keys, weights, head_output, concat and output from "
             "gpt-oss's own arrangement (RoPE on torch.chunk halves; queries viewed as "
             "(tokens, G, H / G, d); -inf triu/tril masks; einsum; sinks concatenated and "
             "dropped), cross-checked against the batched ops above to 1e-12; ")
    model = case["model"]
    oss = gpt_oss_attention(model["X"], model["W"], model["b"], 4, 2, model["W_O"], model["b_O"],
                            model["divisor"], 150000.0, 3, [0.3, -0.4, 1.2, 0.0])
    compare(case["steps"], oss, "gpt-oss arrangement vs batched ops", list(oss))
    case["steps"].update(oss)
    out.append(case)
    case = modern_case(
        "sinks_blocked_rows",
        "Sinks [0.7, -0.2] with rows blocked whole: the mask blocks query 1's every key, the mask "
        "and padding together query 3's; all their weight goes to the sink, their output rows are 0",
        1104, n=4, d_model=4, H=2, d_k=2, output=False, sinks=[0.7, -0.2],
        mask=[[0, 0, 0, 0], [1, 1, 0, 1], [0, 0, 1, 0], [1, 1, 1, 1]], padding=[1, 1, 0, 1])
    for h in range(2):
        for i in (0, 2):
            assert bool((case["steps"]["weights"][h][i] == 0).all())
            assert bool((case["steps"]["head_output"][h][i] == 0).all())
        assert bool((case["steps"]["weights"][h][1].sum() > 0.1))
    out.append(case)
    return out


# ---------------------------------------------------------------------------

def order_doc(doc):
    """Keys in the order a reader expects them."""
    order = ["title", "tokens", "inputs", "context_tokens", "context", "layout",
             "weights", "heads", "kv_heads", "bias", "pytorch", "scale", "softcap", "qk_norm",
             "norm_eps", "rope", "alibi", "mask", "padding", "sinks"]
    assert set(doc) <= set(order), set(doc) - set(order)
    return {key: doc[key] for key in order if key in doc}


def keep_committed_digits(case, json_path):
    """If the expected file already there holds the same steps and its values
    agree with this run's to KEEP_TOLERANCE, write its digits again: a rerun on
    another CPU (whose kernels round the last bit differently) leaves the file
    as it is. A larger difference is a real change, and the new values are
    written. Returns the largest difference kept, or None."""
    if not os.path.exists(json_path):
        return None
    with open(json_path, encoding="utf-8") as f:
        old = json.load(f)
    if old.get("case") != case["name"] or set(old["steps"]) != set(case["written"]):
        return None
    committed = from_json_steps(old, case["written"])
    try:
        compare(committed, case["steps"], "committed", case["written"], KEEP_TOLERANCE)
    except AssertionError:
        return None
    largest = 0.0
    for step in case["written"]:
        pairs = ([(committed[step], case["steps"][step])] if step in WHOLE_STEPS
                 else zip(committed[step], case["steps"][step]))
        for a, b in pairs:
            finite = a != NEG_INF
            largest = max(largest, float((a[finite] - b[finite]).abs().max()))
        case["steps"][step] = committed[step]
    return largest


def write_case(case):
    name = case["name"]
    yaml_path = os.path.join(CASES_DIR, name + ".yaml")
    json_path = os.path.join(CASES_DIR, name + ".expected.json")
    text = yaml_text(order_doc(case["doc"]))
    written = case["written"]
    assert written == [s for s in ALL_STEP_IDS if s in written], (name, "step order")
    for step in written:
        if step not in WHOLE_STEPS:
            count = case["kv_heads"] if step in KV_STEPS else case["heads"]
            assert len(case["steps"][step]) == count, (name, step, "one matrix per head")

    # read the YAML back and recompute from it alone: checks the layout mapping
    steps, divisor, n_heads, n_kv = interpret_yaml(yaml.safe_load(text))
    if written != STEP_IDS + ["output"]:
        # the files of EXAMPLE FILES in man/qkv.1.in list every step that exists, and only those
        assert set(written) == set(steps), (name, set(written) ^ set(steps))
    compare(case["steps"], steps, f"{name}: expected vs YAML recomputed", written)
    assert divisor == case["scale"], name
    assert (n_heads, n_kv) == (case["heads"], case["kv_heads"]), name

    kept = keep_committed_digits(case, json_path)
    expected = json_text(case)
    parsed = json.loads(expected)
    assert parsed["heads"] == case["heads"] and parsed["kv_heads"] == case["kv_heads"], name
    assert list(parsed["steps"]) == written, name
    compare(case["steps"], from_json_steps(parsed, written), f"{name}: JSON read back",
            written, 0.0)

    with open(yaml_path, "w", encoding="utf-8") as f:
        f.write(text)
    with open(json_path, "w", encoding="utf-8") as f:
        f.write(expected)
    return kept


def convention_checks():
    """The conventions README.md and man/qkv.1.in state where qkv and upstream code
    differ, measured on random scores (nothing is written): ALiBi's symmetric
    -m|i - j| against the key-only m*j of Press et al. and BLOOM, cross-attention
    lined up top-left against flash-attn's bottom-right, RoPE in float32."""
    seeded(4242)
    H, n = 4, 6
    slopes = press_get_slopes(H)
    x = randn(H, n, n)                                           # scaled scores
    i, j = torch.arange(n)[:, None], torch.arange(n)[None, :]
    symmetric = torch.stack([-m * (i - j).abs().to(torch.float64) for m in slopes])
    key_only = torch.stack([m * j.expand(n, n).to(torch.float64) for m in slopes])
    causal_blocked = torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=1)

    def weights(bias, blocked=None, sinks=None):
        s = x + bias if blocked is None else (x + bias).masked_fill(blocked, NEG_INF)
        if sinks is None:
            return torch.softmax(s, dim=-1)
        column = tensor(sinks).reshape(H, 1, 1).expand(H, n, 1)
        return torch.softmax(torch.cat([s, column], dim=-1), dim=-1)[..., :-1]

    causal = float((weights(symmetric, causal_blocked) - weights(key_only, causal_blocked)).abs().max())
    unmasked = float((weights(symmetric) - weights(key_only)).abs().max())
    sinks = [0.5, -1.0, 0.0, 2.0]
    with_sinks = float((weights(symmetric, causal_blocked, sinks)
                        - weights(key_only, causal_blocked, sinks)).abs().max())
    assert causal < 1e-14 and unmasked > 0.05 and with_sinks > 0.01, (causal, unmasked, with_sinks)
    # cross-attention, 3 queries over 7 keys: flash-attn puts query i at key i + m - n
    n_q, m = 3, 7
    iq, jk = torch.arange(n_q)[:, None], torch.arange(m)[None, :]
    top_left = -(iq - jk).abs().to(torch.float64)
    bottom_right = -(iq + m - n_q - jk).abs().to(torch.float64)
    aligned = float((top_left - bottom_right).abs().max())
    assert aligned == m - n_q, aligned
    # RoPE computed in float32, as transformers and Meta's code do, against float64
    q = randn(2, 64, 8) * 3
    rotated64 = rope_half_hf(q, 10000.0)
    d = q.shape[-1]
    inv_freq = 1.0 / (10000.0 ** (torch.arange(0, d, 2, dtype=torch.int64).float() / d))
    freqs = torch.outer(torch.arange(q.shape[-2], dtype=torch.float32), inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)
    q32 = q.float()
    rotated32 = (q32 * emb.cos()[None] + rotate_half(q32) * emb.sin()[None]).double()
    rope32 = float((rotated32 - rotated64).abs().max() / q.abs().max())
    assert 1e-9 < rope32 < 1e-5, rope32
    print(f"conventions: ALiBi key-only vs symmetric, causal {causal:.1e}, without a mask {unmasked:.2f}, "
          f"causal with sinks {with_sinks:.3f}; cross-attention top-left vs bottom-right bias "
          f"{aligned:g}·m; RoPE in float32 {rope32:.1e} relative")


def cases_softcap():
    """Logit soft-capping (Gemma 2): the scaled scores become c·tanh(s/c)."""
    out = []
    case = modern_case(
        "softcap_causal",
        "Soft-capping at 0.75 (Gemma 2's attn_logit_softcapping), two heads, a causal mask, biases, W_O",
        1201, n=5, d_model=4, H=2, d_k=2, mask="causal", softcap=0.75)
    out.append(case)
    case = modern_case(
        "softcap_alibi_gqa_window_sinks",
        "Soft-capping at 1.5 with everything after it: heads 4, kv_heads 2, RoPE, ALiBi, a window of 3, "
        "sinks, biases, W_O",
        1202, n=6, d_model=8, H=4, G=2, d_k=4, rope=True, alibi=True, mask={"window": 3},
        sinks=[0.3, -0.4, 1.2, 0.0], softcap=1.5)
    out.append(case)
    for case in out:
        c = case["doc"]["softcap"]
        for scaled, capped in zip(case["steps"]["scaled_scores"], case["steps"]["capped_scores"]):
            # the cap bends: some scaled score lies beyond half the cap, and no capped one reaches it
            assert float(scaled.abs().max()) > c / 2, case["name"]
            assert float(capped.abs().max()) < c
            assert float((scaled - capped).abs().max()) > 0.01 * c
    return out


def norm_gammas(seed, widths, center, spread):
    """qk_norm's gamma, drawn with a seed of its own (seed + 70000) so that the model
    modern_case draws with `seed` stays as it would be: center + spread * randn, kept to
    two decimals so the YAML stays readable."""
    torch.manual_seed(seed + 70000)
    return [lists(torch.round((center + spread * torch.randn(w)) * 100.0) / 100.0 + 0.0)
            for w in widths]


def norm_recompute_difference(case, eps=None):
    """The largest difference between the case's normed_queries / normed_keys (torch,
    as upstream writes the norm) and the norm recomputed from its queries / keys with
    math.sqrt, number by number (rms_norm_direct); eps replaced if given."""
    H, G = case["heads"], case["kv_heads"]
    d_k = case["steps"]["queries"][0].shape[1]
    norm = qk_norm_spec(yaml.safe_load(yaml_text(order_doc(case["doc"]))), H, G, d_k)
    if eps is not None:
        norm["eps"] = eps
    largest = 0.0
    for raw, normed, name in (("queries", "normed_queries", "query"), ("keys", "normed_keys", "key")):
        direct = rms_norm_direct(case["steps"][raw], norm, name)
        for a, b in zip(case["steps"][normed], direct):
            largest = max(largest, float((a - b).abs().max()))
    return largest


def cases_qk_norm():
    """QK-norm (Qwen3, OLMo 2, Gemma 3): RMSNorm of the queries and keys before RoPE."""
    out = []
    q_gamma, k_gamma = norm_gammas(1301, (4, 4), 1.0, 0.2)
    out.append(modern_case(
        "qk_norm_qwen3_gqa_rope_causal",
        "QK-norm as Qwen3: over each head's d_k 4 (the default over: head), gamma given for the queries "
        "and the keys, eps from norm_eps: 1e-5, heads 4 over kv_heads 2, RoPE, causal, no biases",
        1301, n=5, d_model=8, H=4, G=2, d_k=4, rope=True, mask="causal", bias=(),
        qk_norm={"query": q_gamma, "key": k_gamma}, norm_eps=1e-5))
    q_gamma, k_gamma = norm_gammas(1302, (8, 8), 1.0, 0.2)
    out.append(modern_case(
        "qk_norm_olmo2_all",
        "QK-norm as OLMo 2 (over: all): the mean over a token's whole projection, both heads together, "
        "gamma of H*d_k 8 (queries) and G*d_k 8 (keys), after the query and key biases, RoPE, causal",
        1302, n=5, d_model=6, H=2, d_k=4, rope=True, mask="causal",
        qk_norm={"over": "all", "query": q_gamma, "key": k_gamma}))
    q_gamma, k_gamma = norm_gammas(1303, (4, 4), 0.0, 0.3)
    out.append(modern_case(
        "qk_norm_gemma3_offset_window",
        "QK-norm as Gemma 3: offset 1 (times 1 + gamma, gamma near 0), eps 1e-6, over each head, RoPE "
        "style interleaved with base 1000, a window of 3, soft-capping at 1, two heads",
        1303, n=6, d_model=8, H=2, d_k=4, rope={"base": 1000, "style": "interleaved"},
        mask={"window": 3}, softcap=1.0,
        qk_norm={"query": q_gamma, "key": k_gamma, "offset": 1, "eps": 1e-6}))
    out.append(modern_case(
        "qk_norm_true",
        "QK-norm: qk_norm: true (gamma 1, eps the default 1e-6), one head of d_k 3, no RoPE, no mask",
        1304, n=4, d_model=4, H=1, d_k=3, qk_norm=True))

    largest = max(norm_recompute_difference(case) for case in out)
    assert largest < 1e-14, largest
    qwen3, olmo2, gemma3, plain = out
    # norm_eps: 1e-5 is read: the default eps would change the normed values
    assert norm_recompute_difference(qwen3, eps=1e-6) > 1e-9
    # over: all is not over each head: the per-head norm would give other values
    spec = qk_norm_spec(yaml.safe_load(yaml_text(order_doc(olmo2["doc"]))), 2, 2, 4)
    per_head = dict(spec, over="head", query=spec["query"][:4], key=spec["key"][:4])
    for h, normed in enumerate(rms_norm_direct(olmo2["steps"]["queries"], per_head, "query")):
        scaled = normed * (tensor(spec["query"][h * 4:(h + 1) * 4]) / tensor(spec["query"][:4]))
        assert float((scaled - olmo2["steps"]["normed_queries"][h]).abs().max()) > 1e-3
    # offset 1: gamma near 0 and some negative; the cap bends the scaled scores
    assert min(gemma3["doc"]["qk_norm"]["query"]) < 0 < max(gemma3["doc"]["qk_norm"]["query"])
    for scaled, capped in zip(gemma3["steps"]["scaled_scores"], gemma3["steps"]["capped_scores"]):
        assert float(scaled.abs().max()) > 0.5 and float((scaled - capped).abs().max()) > 0.01
    # qk_norm: true: every normed row has a root mean square of 1, less eps's share
    for M in plain["steps"]["normed_queries"] + plain["steps"]["normed_keys"]:
        assert bool(((M.pow(2).mean(-1).sqrt() - 1.0).abs() < 1e-5).all())
    print(f"qk_norm: torch's normed queries and keys vs math.sqrt row by row: largest difference "
          f"{largest:.1e}")
    return out


def rope_scaling_facts(case):
    """(rope map as the YAML reads it, reference settings, spec result, d_rot) of a case."""
    rope = yaml.safe_load(yaml_text(order_doc(case["doc"])))["rope"]
    d_k = case["steps"]["queries"][0].shape[1]
    n = case["steps"]["queries"][0].shape[0]
    ref = rope_reference(rope, d_k, n)
    d_rot = int(d_k * ref["partial"])
    return rope, ref, rope_scaling_spec(rope, d_rot, n), d_rot


def cases_rope_scaling():
    """rope.scaling: RoPE's frequencies (and YaRN's attention factor) as long-context
    checkpoints configure them, a config.json's rope_scaling pasted as it is."""
    out = []
    out.append(modern_case(
        "rope_scaling_linear",
        "RoPE scaling linear (factor 4: every frequency divided by 4), style half, two heads of d_k 4, causal",
        1401, n=5, d_model=6, H=2, d_k=4, mask="causal",
        rope=Flow({"style": "half", "scaling": {"rope_type": "linear", "factor": 4.0}})))
    out.append(modern_case(
        "rope_scaling_dynamic",
        "RoPE scaling dynamic (NTK, factor 2) with original_max_position_embeddings 4 over 6 positions: "
        "max_position_embeddings left out (for dynamic it is the original's 4), so the base grows to "
        "10000 * (2 * 6 / 4 - 1)^(6 / 4); two heads of d_k 6, causal",
        1402, n=6, d_model=6, H=2, d_k=6, mask="causal",
        rope={"scaling": {"rope_type": "dynamic", "factor": 2.0, "original_max_position_embeddings": 4}}))
    out.append(modern_case(
        "rope_scaling_yarn",
        "RoPE scaling yarn (factor 8, original_max_position_embeddings 2048, beta_fast and beta_slow left "
        "at 32 and 1, the default attention factor 0.1 ln 8 + 1), style interleaved, d_k 8: pairs 1-2 "
        "extrapolated, pair 3 half and half, pair 4 interpolated; heads 4 over kv_heads 2, causal",
        1403, n=6, d_model=8, H=4, G=2, d_k=8, mask="causal",
        rope={"style": "interleaved",
              "scaling": {"rope_type": "yarn", "factor": 8.0, "original_max_position_embeddings": 2048}}))
    out.append(modern_case(
        "rope_scaling_yarn_deepseek",
        "RoPE scaling yarn as DeepSeek-V3's config.json writes it (type: yarn, factor 40, mscale 1.0 and "
        "mscale_all_dim 1.0, so the attention factor is 1 exactly; original_max_position_embeddings 4096, "
        "max_position_embeddings 163840), style interleaved, two heads of d_k 8, causal",
        1404, n=5, d_model=6, H=2, d_k=8, mask="causal",
        rope={"style": "interleaved", "max_position_embeddings": 163840,
              "scaling": {"beta_fast": 32, "beta_slow": 1, "factor": 40, "mscale": 1.0, "mscale_all_dim": 1.0,
                          "original_max_position_embeddings": 4096, "type": "yarn"}}))
    case = modern_case(
        "rope_scaling_yarn_gpt_oss",
        "RoPE scaling yarn as gpt-oss's config.json writes it (factor 32, original_max_position_embeddings "
        "4096, truncate false: the ramp's ends are not rounded), base 150000, d_k 8, heads 4 over kv_heads 2, "
        "a window of 3, sinks, biases, W_O",
        1405, n=6, d_model=8, H=4, G=2, d_k=8, mask={"window": 3}, sinks=[0.3, -0.4, 1.2, 0.0],
        rope={"base": 150000,
              "scaling": {"beta_fast": 32.0, "beta_slow": 1.0, "factor": 32.0,
                          "original_max_position_embeddings": 4096, "rope_type": "yarn", "truncate": False}},
        note="cross-checked against gpt-oss's own code: RotaryEmbedding._compute_concentration_and_inv_freq "
             "(YaRN concentration 0.1 * math.log(scaling_factor) + 1.0, low and high from ntk_beta and "
             "ntk_alpha without rounding, mask = 1 - ramp.clamp(0, 1)) gives the same inv_freq and factor, "
             "and gpt-oss's arrangement (cos = freqs.cos() * concentration on torch.chunk halves, queries "
             "(tokens, G, H / G, d), -inf triu/tril masks, einsum, the sink column) the same rotated "
             "queries and keys, weights, head outputs and output, to 1e-12; ")
    out.append(case)
    case = modern_case(
        "rope_scaling_llama3",
        "RoPE scaling llama3 as Llama 3.1's config.json writes it (factor 8, low_freq_factor 1, high_freq_factor "
        "4, original_max_position_embeddings 8192), base 500000, style interleaved, d_k 8: pairs 1-2 kept, "
        "pair 3 blended, pair 4 divided by 8; heads 4 over kv_heads 2, causal, no biases",
        1406, n=6, d_model=8, H=4, G=2, d_k=8, mask="causal", bias=("output",),
        rope={"base": 500000, "style": "interleaved",
              "scaling": {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                          "original_max_position_embeddings": 8192, "rope_type": "llama3"}},
        note="cross-checked against Meta's apply_scaling (llama-models, models/llama3/reference_impl/model.py: "
             "one frequency at a time, wavelen = 2 * math.pi / freq against 8192 / 4 and 8192 / 1, its "
             "constants those of this rope_scaling), which gives the same inv_freq number by number, and "
             "Meta's precompute_freqs_cis(dim, end, theta, use_scaled=True) with apply_rotary_emb's complex "
             "product the same rotated queries and keys, to 1e-12; ")
    out.append(case)
    out.append(modern_case(
        "rope_scaling_yarn_partial",
        "RoPE scaling yarn turning the first 6 of d_k 12 (partial_rotary_factor 0.5: dim is d_rot 6), "
        "no original_max_position_embeddings (yarn reads max_position_embeddings 1024), attention_factor "
        "0.8 given (on the turned elements only), factor 4, style half, two heads, no mask",
        1407, n=5, d_model=8, H=2, d_k=12,
        rope={"partial_rotary_factor": 0.5, "max_position_embeddings": 1024,
              "scaling": {"rope_type": "yarn", "factor": 4.0, "attention_factor": 0.8}}))
    linear, dynamic, yarn, deepseek, gpt_oss, llama3, partial = out

    # transformers' inv_freq and attention factor against the spec's formulas (math, pair by
    # pair), and the scaling changes the rotated queries
    largest = 0.0
    for case in out:
        rope, ref, spec, d_rot = rope_scaling_facts(case)
        assert len(spec["inv_freq"]) == d_rot // 2 == ref["inv_freq"].shape[0]
        for a, b in zip(ref["inv_freq"].tolist(), spec["inv_freq"]):
            largest = max(largest, abs(a - b) / abs(b))
        assert abs(ref["attention_scaling"] - spec["attention_factor"]) < 1e-15, case["name"]
        plain = {key: ref[key] for key in ("base", "style", "partial")}
        Q = torch.stack(case["steps"]["queries"])
        unscaled, _ = apply_rope(Q, Q, Q.transpose(0, 1), Q.transpose(0, 1), plain)
        moved = float((unscaled - torch.stack(case["steps"]["rotated_queries"])).abs().max())
        assert moved > 1e-5, (case["name"], moved)
        # a rotation keeps a row's length: the rotated part's is the attention factor's multiple
        for raw, turned in zip(case["steps"]["queries"], case["steps"]["rotated_queries"]):
            ratio = turned[:, :d_rot].norm(dim=1) / raw[:, :d_rot].norm(dim=1)
            assert bool(((ratio - ref["attention_scaling"]).abs() < 1e-12).all()), case["name"]
            assert torch.equal(turned[:, d_rot:], raw[:, d_rot:]), case["name"]
        yarn_info = ""
        if "ramp" in spec:
            yarn_info = (f", ramp [{', '.join(f'{r:.4g}' for r in spec['ramp'])}] over low {spec['low']:.4g}, "
                         f"high {spec['high']:.4g}")
        print(f"{case['name']}: inv_freq [{', '.join(repr(float(x)) for x in ref['inv_freq'])}], "
              f"attention factor {ref['attention_scaling']!r}{yarn_info}"
              + (f", bands {spec['bands']}" if "bands" in spec else "")
              + (f", base {spec['base']!r}" if "base" in spec else ""))
    assert largest < 1e-15, largest

    # linear: each frequency a quarter of the default
    _, ref, _, d_rot = rope_scaling_facts(linear)
    default = 1.0 / (10000.0 ** (torch.arange(0, d_rot, 2, dtype=torch.float64) / d_rot))
    assert torch.equal(ref["inv_freq"], default / 4.0)
    # dynamic: 6 positions over the original 4 grow the base; with max_position_embeddings
    # factor * original (8, the default of the other types) it would not grow at all
    rope, ref, spec, d_rot = rope_scaling_facts(dynamic)
    assert spec["M"] == 4 and spec["length"] == 6 and abs(spec["base"] / (10000 * 2 ** 1.5) - 1) < 1e-15
    other = rope_scaling_spec(dict(rope, max_position_embeddings=8), d_rot, 6)
    assert other["base"] == 10000.0
    # yarn: the ramp lies inside (0, d_rot / 2): extrapolated, mixed and interpolated pairs
    for case in (yarn, deepseek, gpt_oss, partial):
        _, ref, spec, d_rot = rope_scaling_facts(case)
        ramp = spec["ramp"]
        assert ramp[0] == 0.0 and ramp[-1] == 1.0 and any(0.0 < r < 1.0 for r in ramp), (case["name"], ramp)
        assert 0 <= spec["low"] < spec["high"] < d_rot / 2, (case["name"], spec["low"], spec["high"])
    _, ref, spec, _ = rope_scaling_facts(yarn)
    assert 0 < spec["low"] and ref["attention_scaling"] == 0.1 * math.log(8.0) + 1.0
    # DeepSeek: mscale and mscale_all_dim 1 make the factor 1 exactly (the default would be 1.37)
    rope, ref, spec, d_rot = rope_scaling_facts(deepseek)
    assert ref["attention_scaling"] == 1.0
    without = dict(rope, scaling={k: v for k, v in rope["scaling"].items() if k != "mscale_all_dim"})
    assert rope_scaling_spec(without, d_rot, 5)["attention_factor"] > 1.3
    # gpt-oss: truncate false keeps the ramp's ends where they fall; rounding them would move pair 3
    rope, ref, spec, d_rot = rope_scaling_facts(gpt_oss)
    rounded = rope_scaling_spec(dict(rope, scaling=dict(rope["scaling"], truncate=True)), d_rot, 6)
    assert max(abs(a - b) for a, b in zip(rounded["ramp"], spec["ramp"])) > 0.1
    yarn_kw = {"initial_context_length": 4096, "scaling_factor": 32.0, "ntk_alpha": 1.0, "ntk_beta": 32.0}
    concentration, oss_freq = gpt_oss_concentration_and_inv_freq(8, 150000.0, **yarn_kw)
    oss_difference = float(((oss_freq - ref["inv_freq"]) / ref["inv_freq"]).abs().max())
    assert oss_difference < 1e-15 and concentration == ref["attention_scaling"], oss_difference
    model = gpt_oss["model"]
    oss = gpt_oss_attention(model["X"], model["W"], model["b"], 4, 2, model["W_O"], model["b_O"],
                            model["divisor"], 150000.0, 3, [0.3, -0.4, 1.2, 0.0], yarn=yarn_kw)
    compare(gpt_oss["steps"], oss, "gpt-oss arrangement vs transformers' yarn", list(oss))
    # llama3: Meta's apply_scaling gives the same frequencies, one pair in each band
    rope, ref, spec, d_rot = rope_scaling_facts(llama3)
    assert [b.split()[0] for b in spec["bands"]] == ["high", "high", "middle", "low"], spec["bands"]
    meta_freqs = meta_apply_scaling(1.0 / (500000.0 ** (torch.arange(0, d_rot, 2)[: (d_rot // 2)].double() / d_rot)))
    meta_difference = float((meta_freqs - ref["inv_freq"]).abs().max())
    assert meta_difference == 0.0, meta_difference
    freqs_cis = meta_precompute_freqs_cis(d_rot, 6, 500000.0, use_scaled=True)
    for name, step in (("queries", "rotated_queries"), ("keys", "rotated_keys")):
        x = torch.stack(llama3["steps"][name]).transpose(0, 1)              # tokens x heads x d
        x_ = torch.view_as_complex(x.reshape(*x.shape[:-1], -1, 2))
        meta = torch.view_as_real(x_ * freqs_cis[:, None, :]).flatten(2).transpose(0, 1)
        compare({step: list(meta)}, llama3["steps"], f"llama3: Meta's {step}", [step])
    # partial: yarn reads max_position_embeddings when rope_scaling has no original; the
    # given attention factor is not the default
    rope, ref, spec, d_rot = rope_scaling_facts(partial)
    assert d_rot == 6 and ref["attention_scaling"] == 0.8 and spec["L0"] == 1024
    assert rope_scaling_spec(dict(rope, max_position_embeddings=4096), d_rot, 5)["inv_freq"] != spec["inv_freq"]
    # how far the second implementations land from the values written
    def largest_difference(expected, other, step_ids):
        worst = 0.0
        for step in step_ids:
            pairs = ([(expected[step], other[step])] if step in WHOLE_STEPS
                     else zip(expected[step], other[step]))
            for a, b in pairs:
                finite = a != NEG_INF
                worst = max(worst, float((a[finite] - b[finite]).abs().max()))
        return worst

    recomputed = max(largest_difference(case["steps"], interpret_yaml(yaml.safe_load(
        yaml_text(order_doc(case["doc"]))))[0], case["written"]) for case in out)
    meta_steps = {}
    for name, step in (("queries", "rotated_queries"), ("keys", "rotated_keys")):
        x = torch.stack(llama3["steps"][name]).transpose(0, 1)
        x_ = torch.view_as_complex(x.reshape(*x.shape[:-1], -1, 2))
        meta_steps[step] = list(torch.view_as_real(x_ * freqs_cis[:, None, :]).flatten(2).transpose(0, 1))
    print(f"rope_scaling: transformers' inv_freq vs the spec's formulas (math, pair by pair): largest "
          f"relative difference {largest:.1e}; Meta's apply_scaling vs transformers' llama3 {meta_difference:.1e}; "
          f"gpt-oss's _compute_concentration_and_inv_freq vs transformers' yarn (truncate false) "
          f"{oss_difference:.1e} relative; every step vs the YAML recomputed pair by pair "
          f"{recomputed:.1e}; gpt-oss's arrangement {largest_difference(gpt_oss['steps'], oss, list(oss)):.1e}; "
          f"Meta's precompute_freqs_cis rotation {largest_difference(llama3['steps'], meta_steps, list(meta_steps)):.1e}")
    return out


def main():
    convention_checks()
    os.makedirs(CASES_DIR, exist_ok=True)
    cases = (cases_illustrated() + cases_x_w() + cases_layout_pytorch() + cases_heads_list()
             + cases_pytorch_block() + cases_cross_attention() + cases_plain())
    # EXAMPLE FILES in man/qkv.1.in: every case of a family writes the key it is about
    for family, is_about in ((cases_rope(), lambda doc: "rope" in doc),
                             (cases_gqa(), lambda doc: "kv_heads" in doc),
                             (cases_alibi(), lambda doc: "alibi" in doc),
                             (cases_window(), lambda doc: "window" in doc.get("mask", {})),
                             (cases_sinks(), lambda doc: "sinks" in doc),
                             (cases_softcap(), lambda doc: "softcap" in doc),
                             (cases_qk_norm(), lambda doc: "qk_norm" in doc),
                             (cases_rope_scaling(),
                              lambda doc: isinstance(doc.get("rope"), dict) and "scaling" in doc["rope"])):
        assert all(is_about(case["doc"]) for case in family), [c["name"] for c in family]
        cases += family
    names = [c["name"] for c in cases]
    assert len(names) == len(set(names)), "duplicate case names"
    for case in cases:
        kept = write_case(case)
        note = "" if not kept else f" (committed digits kept: this run differs by {kept:.1e})"
        print(f"{case['name']}: {case['heads']} head(s), {case['kv_heads']} key/value head(s), "
              f"scale {case['scale']:.6g}{note}")
    print(f"{len(cases)} cases written to {CASES_DIR}")


if __name__ == "__main__":
    main()
