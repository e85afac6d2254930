#!/usr/bin/python3
"""Independent reference values for qkv, computed with PyTorch.

Run from anywhere with Debian's Python (it has torch and numpy):

    /usr/bin/python3 tests/reference/generate.py

For every case NAME it writes, next to this script,

    cases/NAME.yaml           a qkv input file (EXAMPLE FILES in man/qkv.1)
    cases/NAME.expected.json  the steps PyTorch computes for it

Where a case can be expressed as a torch.nn.MultiheadAttention (scale sqrt(d_k),
W_O present, d_v == d_k, H * d_k == d_model), the attention weights and the
output come from the module itself. Otherwise they come from plain tensor ops
(torch.softmax), and the case's provenance says so.

Everything is float64 and seeded per case, so the files are reproducible.

Self-checks (a mapping mistake fails loudly, nothing is written for it):
  * every YAML file is read back with PyYAML and recomputed from the YAML alone
    by interpret_yaml(), which follows the EXAMPLE FILES in man/qkv.1 rules with plain
    tensor ops; every step must agree with the expected values to 1e-12;
  * every JSON file is read back and must equal the values in memory.

Conventions used throughout: rows are tokens. A weight "in x out" (qkv's
default layout x_w) multiplies on the right, Q = X @ W. nn.Linear.weight and
in_proj_weight are "out x in", Q = X @ W.T (qkv's layout: pytorch).
"""

import json
import math
import os

import numpy
import torch
import torch.nn.functional as F
import yaml

torch.set_default_dtype(torch.float64)

TOLERANCE = 1e-12
HERE = os.path.dirname(os.path.abspath(__file__))
CASES_DIR = os.path.join(HERE, "cases")
STEP_IDS = ["queries", "keys", "values", "scores", "weights", "head_output"]

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


def emit_yaml(lines, key, value, indent):
    pad = " " * indent
    if isinstance(value, dict):
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


def json_matrix(matrix, indent):
    pad = " " * indent
    rows = [json.dumps(row) for row in matrix]
    return "[\n" + ",\n".join(pad + " " + r for r in rows) + "\n" + pad + "]"


def json_text(case):
    """The expected file: one matrix row per line, floats written with repr."""
    parts = [f' "case": {json.dumps(case["name"])}',
             f' "provenance": {json.dumps(case["provenance"])}',
             f' "heads": {case["heads"]}',
             f' "scale": {json.dumps(float(case["scale"]))}']
    steps = []
    for step in STEP_IDS:
        mats = [json_matrix(m.tolist(), 3) for m in case["steps"][step]]
        steps.append(f'  "{step}": [\n   ' + ",\n   ".join(mats) + "\n  ]")
    steps.append(f'  "output": ' + json_matrix(case["steps"]["output"].tolist(), 2))
    parts.append(' "steps": {\n' + ",\n".join(steps) + "\n }")
    return "{\n" + ",\n".join(parts) + "\n}\n"


# ---------------------------------------------------------------------------
# Plain attention (the STEPS section of man/qkv.1) from per-head weights in x_w form
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


def combine_keep(n, m, mask, padding):
    """mask (n x m, 1 = may attend) and padding (m, 1 = real) -> boolean keep."""
    keep = None
    if mask is not None:
        keep = torch.as_tensor(mask) != 0
    if padding is not None:
        real = (torch.as_tensor(padding) != 0)[None, :].expand(n, m)
        keep = real if keep is None else keep & real
    if keep is not None:
        assert keep.shape == (n, m), keep.shape
        for i in range(n):
            assert bool(keep[i].any()), f"query {i + 1} may attend to no key"
    return keep


def causal(n):
    """1 where query i may attend key j <= i."""
    return torch.tril(torch.ones(n, n, dtype=torch.int64))


# ---------------------------------------------------------------------------
# Reading a qkv YAML file back (EXAMPLE FILES in man/qkv.1), independently of the writers
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
    """Compute every step from a parsed qkv file, following EXAMPLE FILES in man/qkv.1."""
    X = tensor(doc["inputs"])
    C = tensor(doc["context"]) if "context" in doc else X
    W_O = b_O = None
    heads = []
    if "pytorch" in doc:
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
    else:
        transpose = doc.get("layout", "x_w") == "pytorch"

        def weight(value):
            W = tensor(value)
            return W.T if transpose else W                 # -> in x out

        weights = doc.get("weights", {})
        bias = doc.get("bias", {})
        if isinstance(doc.get("heads"), list):
            for item in doc["heads"]:
                head_bias = item.get("bias", {})
                heads.append({name: weight(item[name]) for name in ("query", "key", "value")}
                             | {"bias_" + name: tensor(head_bias[name])
                                for name in ("query", "key", "value") if name in head_bias})
        else:
            n_heads = doc.get("heads", 1)
            proj = {}
            for name in ("query", "key", "value"):
                b = tensor(bias[name]) if name in bias else None
                proj[name] = split_columns(weight(weights[name]), b, n_heads, name)
            for h in range(n_heads):
                heads.append({name: proj[name][0][h] for name in proj}
                             | {"bias_" + name: proj[name][1][h] for name in proj})
        if "output" in weights:
            W_O = weight(weights["output"])
        if "output" in bias:
            b_O = tensor(bias["output"])

    scale = doc.get("scale", "sqrt_dk")
    if scale == "none":
        divisor = 1.0
    elif scale == "sqrt_dk":
        divisor = math.sqrt(heads[0]["query"].shape[1])
    else:
        divisor = float(scale)

    n, m = X.shape[0], C.shape[0]
    mask = doc.get("mask")
    if mask == "causal":
        mask = causal(n)
    keep = combine_keep(n, m, mask, doc.get("padding"))
    return plain_attention(X, C, heads, W_O, b_O, divisor, keep), divisor, len(heads)


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
# Comparing
# ---------------------------------------------------------------------------

def close(a, b):
    """Absolute-or-relative tolerance: |a - b| <= 1e-12 * max(1, |a|, |b|)."""
    a, b = torch.as_tensor(a), torch.as_tensor(b)
    if a.shape != b.shape:
        return False
    limit = TOLERANCE * torch.maximum(torch.ones_like(a), torch.maximum(a.abs(), b.abs()))
    return bool(((a - b).abs() <= limit).all())


def compare(expected, actual, what):
    for step in STEP_IDS:
        assert len(expected[step]) == len(actual[step]), (what, step, "head count")
        for h, (e, a) in enumerate(zip(expected[step], actual[step])):
            assert close(e, a), f"{what}: {step} head {h + 1} differs\n{e}\n{a}"
    assert close(expected["output"], actual["output"]), f"{what}: output differs"


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
            "heads": mha.num_heads, "provenance": PROVENANCE_MHA + note + VERSIONS}


def plain_case(name, title, doc, X, C, heads, W_O, b_O, divisor, keep, why):
    steps = plain_attention(X, X if C is None else C, heads, W_O, b_O, divisor, keep)
    return {"name": name, "doc": {"title": title} | doc, "steps": steps,
            "scale": divisor, "heads": len(heads),
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

def order_doc(doc):
    """Keys in the order a reader expects them."""
    order = ["title", "tokens", "inputs", "context_tokens", "context", "layout",
             "weights", "heads", "bias", "pytorch", "scale", "mask", "padding"]
    assert set(doc) <= set(order), set(doc) - set(order)
    return {key: doc[key] for key in order if key in doc}


def write_case(case):
    name = case["name"]
    yaml_path = os.path.join(CASES_DIR, name + ".yaml")
    json_path = os.path.join(CASES_DIR, name + ".expected.json")
    text = yaml_text(order_doc(case["doc"]))

    # read the YAML back and recompute from it alone: checks the layout mapping
    steps, divisor, n_heads = interpret_yaml(yaml.safe_load(text))
    compare(case["steps"], steps, f"{name}: expected vs YAML recomputed")
    assert divisor == case["scale"] and n_heads == case["heads"], name

    expected = json_text(case)
    parsed = json.loads(expected)
    for step in STEP_IDS:
        for h, matrix in enumerate(case["steps"][step]):
            assert parsed["steps"][step][h] == matrix.tolist(), (name, step)
    assert parsed["steps"]["output"] == case["steps"]["output"].tolist(), name

    with open(yaml_path, "w", encoding="utf-8") as f:
        f.write(text)
    with open(json_path, "w", encoding="utf-8") as f:
        f.write(expected)


def main():
    os.makedirs(CASES_DIR, exist_ok=True)
    cases = (cases_illustrated() + cases_x_w() + cases_layout_pytorch() + cases_heads_list()
             + cases_pytorch_block() + cases_cross_attention() + cases_plain())
    names = [c["name"] for c in cases]
    assert len(names) == len(set(names)), "duplicate case names"
    for case in cases:
        write_case(case)
        print(f"{case['name']}: {case['heads']} head(s), scale {case['scale']:.6g}")
    print(f"{len(cases)} cases written to {CASES_DIR}")


if __name__ == "__main__":
    main()
