#!/usr/bin/python3
"""Independent reference values for qkv's backward pass (STEPS in man/qkv.1.in),
computed with torch.autograd in float64.

Run from anywhere with Debian's Python (it has torch and numpy):

    /usr/bin/python3 tests/reference/generate_backward.py

For every case NAME (all named backward_*) it writes, next to this script,

    cases/NAME.yaml           a qkv input file with a `grad_output:` key
    cases/NAME.expected.json  every forward step that exists for it, then
                              every backward step that exists for it

The conventions, the YAML and JSON writers, the number format and the rule
that an expected file already in cases/ keeps its digits when a rerun agrees
to 1e-14 all come from generate.py (imported, not copied); so do the forward
models (generate.modern_case draws the `weights:` cases, generate.make_mha and
the yaml_* spellers the nn.MultiheadAttention cases).

How the gradients are made:
  * X (inputs), C (context) and every weight and bias, exactly as written in
    the YAML (so in the file's layout and shape), are leaf tensors with
    requires_grad=True; the forward is built from them with the batched ops of
    generate.modern_reference (views (tokens, heads, d), rotate_half or the
    polar form for RoPE, repeat_interleave for key/value heads, Press slopes,
    flash-attn's window, the sink column), L = (O * dO).sum(), L.backward().
    Parameter, input and context gradients are the leaves' .grad; the others
    are .grad of intermediate tensors kept with retain_grad(): q, k, v as
    (tokens, heads, d) before RoPE, the raw scores, the scaled scores (before
    ALiBi's bias and before masked_fill, so blocked cells get 0), the weights,
    the head outputs and the concatenation.
  * Where the forward generator uses torch.nn.MultiheadAttention, the module
    itself is run forward and backward: grad_in_proj_weight & co. are
    literally its parameters' .grad, the x_w / layout: pytorch weight
    gradients are slices of them (transposed for x_w), grad_inputs and
    grad_context are .grad of the tensors fed to it. The batched leaves above
    must agree with them to 1e-12.
  * The gpt-oss case also runs backward through generate.gpt_oss_attention
    (gpt-oss's own arrangement) and must agree.

Self-checks, before anything is written (a failing case stops the script):
  * a second implementation in numpy, reading only the YAML text: the forward
    one head at a time, then the backward with the explicit formulas of
    STEPS in man/qkv.1.in (dA = dZ V^T, dS' = A o (dA - rowsum(dA o A)), dS = dS' /
    scale, dQ = dS K, dK = sum dS^T Q, dV = sum A^T dZ, RoPE's backward as the
    inverse rotation (times the attention factor with rope.scaling), the
    key/value heads' sums, qk_norm's RMSNorm backward
    dx = r u - x r^3 mean(x u) and dgamma = sum of dy x r, the weights' gradients
    mapped back to the file's layout); every backward step must agree with autograd
    to 1e-12, and both must list the same steps;
  * central finite differences of L, computed with the numpy forward, for a
    few entries of every backward step (entries of the YAML's own numbers for
    weights, biases, inputs and context; a perturbation added inside the
    forward for the intermediate steps), relative tolerance 1e-6;
  * the forward steps are recomputed from the YAML by generate.interpret_yaml
    and compared at 1e-12 (and, where the model came from
    generate.modern_case unchanged, with its steps too);
  * the JSON text is read back and compared with the values in memory.
"""

import contextlib
import copy
import json
import math
import os
import sys

import numpy as np
import torch
import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import generate as gen  # noqa: E402  (the forward generator: conventions and writers)
from generate import Bare, VERSIONS, lists, tensor  # noqa: E402

CASES_DIR = gen.CASES_DIR
FD_TOLERANCE = 1e-6
FD_STEP = 1e-6

FORWARD_STEPS = ["positional", "encoded"] + gen.ALL_STEP_IDS
BACKWARD_STEPS = [
    "grad_output", "grad_concat", "grad_head_output", "grad_weights", "grad_capped_scores", "grad_scaled_scores",
    "grad_scores", "grad_normed_queries", "grad_queries", "grad_normed_keys", "grad_keys", "grad_values",
    "grad_q_norm", "grad_k_norm", "grad_w_query", "grad_w_key", "grad_w_value", "grad_w_output",
    "grad_b_query", "grad_b_key", "grad_b_value", "grad_b_output",
    "grad_in_proj_weight", "grad_in_proj_bias", "grad_out_proj_weight", "grad_out_proj_bias",
    "grad_inputs", "grad_context"]
ALL_STEPS = FORWARD_STEPS + BACKWARD_STEPS
# steps that are one matrix in every case; grad_w_* and grad_b_* are one
# matrix, or one per head for a `heads:` list
ALWAYS_WHOLE = {"positional", "encoded", "concat", "output", "grad_output", "grad_concat",
                "grad_in_proj_weight", "grad_in_proj_bias", "grad_out_proj_weight",
                "grad_out_proj_bias", "grad_inputs", "grad_context", "grad_q_norm", "grad_k_norm"}
KV_GRADS = ("grad_normed_keys", "grad_keys", "grad_values")
NAMES = ("query", "key", "value")



def backward_provenance(parsed, steps, spelling=None):
    """How this case's backward steps were made, in the order they were made."""
    cross = "context" in parsed
    inputs = "X, C" if cross else "X"
    grads_of_inputs = "grad_inputs and grad_context" if cross else "grad_inputs"
    params = ("grad_in_proj_weight, grad_in_proj_bias, grad_out_proj_weight, grad_out_proj_bias"
              if "pytorch" in parsed else "grad_w_*, grad_b_*")
    text = "backward: L = (O * dO).sum() with dO = grad_output ({}); ".format(
        "all ones" if parsed["grad_output"] == "ones" else "the YAML's matrix")
    if spelling is not None:
        mapping = ("" if spelling == "block" else
                   " (E x E row blocks of in_proj_weight and in_proj_bias, out_proj.weight, "
                   "out_proj.bias; " + ("transposed for layout x_w" if spelling == "x_w"
                                        else "as nn.Linear holds them, for layout: pytorch")
                   + "; biases as 1 x width rows)")
        text += ("the same torch.nn.MultiheadAttention run forward and L.backward(): {p} are "
                 "its parameters' .grad{m}, {g} the .grad of the tensors fed to it; the other "
                 "backward steps as follows, and the leaves' .grad agree with the module's to "
                 "1e-12: ").format(
                     p=params, m=mapping, g=grads_of_inputs)
    text += ("torch.autograd in float64 through the batched forward: {i} and every weight and "
             "bias exactly as written in the YAML (its layout and shape) are leaf tensors with "
             "requires_grad=True, L.backward(){own}; retain_grad() on q, k, v viewed (tokens, "
             "heads, d){rope} (grad_queries, grad_keys, "
             "grad_values{gqa}){norm}, on the raw "
             "scores (grad_scores), on scores / scale before {after} ({scaled}), on "
             "the weights (grad_weights), on the head outputs (grad_head_output){concat}; ").format(
        scaled=("grad_scaled_scores), on the capped scores softcap * tanh(scaled / softcap) "
                "before the rest (grad_capped_scores" if "softcap" in parsed else "grad_scaled_scores"),
        i=inputs, gqa=("; repeat_interleave's backward sums each key/value head's query heads"
                       if parsed.get("kv_heads", 0) not in (0, parsed.get("heads")) else ""),
        rope=(", before qk_norm" if "qk_norm" in parsed
              else ", before RoPE" if "rope" in parsed else ""),
        norm=("" if "qk_norm" not in parsed else
              ", on the normed q and k{} (grad_normed_queries, grad_normed_keys)".format(
                  ", before RoPE" if "rope" in parsed else "")),
        own="" if spelling is not None else f"; {params} and {grads_of_inputs} are the leaves' .grad",
        after=" and ".join(x for x in ("the soft cap" if "softcap" in parsed else "",
                                       "the ALiBi bias" if "alibi" in parsed and "softcap" not in parsed
                                       else "",
                                       "masked_fill (0 where blocked)"
                                       if "mask" in parsed or "padding" in parsed else "",
                                       "the sink column" if "sinks" in parsed else "") if x)
              or "the softmax",
        concat=", on the concatenation (grad_concat)" if "grad_concat" in steps else "")
    if "positional" in parsed:
        text += "P is a constant: grad_inputs is the gradient of X + P; "
    if "qk_norm" in parsed:
        text += ("the norms' weights gamma (query and key) are leaf tensors with requires_grad=True, "
                 "whether the YAML gives them or not: grad_q_norm and grad_k_norm are their .grad as "
                 "1 x width rows{}; ").format(
                     "" if parsed["qk_norm"] is not True and parsed["qk_norm"].get("over") == "all"
                     else " (one weight of d_k shared by the heads: its gradient sums every head and "
                          "token)")
    return text


PROVENANCE_CHECKS = (
    "checked: every backward step against a numpy implementation read from the YAML alone "
    "(explicit formulas, RoPE backward as the inverse rotation, key/value head sums) at "
    "1e-12, and central finite differences of a few entries of each at 1e-6; ")
PROVENANCE_CHECKS_QK_NORM = (
    "checked: every backward step against a numpy implementation read from the YAML alone "
    "(explicit formulas, RoPE backward as the inverse rotation, key/value head sums, the "
    "RMSNorm's backward dx = r u - x r^3 mean(x u) with r = 1 / sqrt(mean(x^2) + eps), "
    "u = dy (offset + gamma), and dgamma = the sum over rows of dy x r) at 1e-12, and central "
    "finite differences of a few entries of each at 1e-6; ")


# ---------------------------------------------------------------------------
# Writing: generate.py's writers, told which steps are one matrix in this case
# ---------------------------------------------------------------------------

@contextlib.contextmanager
def whole_steps(case):
    """generate.json_text, from_json_steps, compare and keep_committed_digits
    look up the module-level WHOLE_STEPS to tell one matrix from a list of
    per-head matrices; point it at this case's set for the duration."""
    saved = gen.WHOLE_STEPS
    gen.WHOLE_STEPS = tuple(s for s in case["written"] if not isinstance(case["steps"][s], list))
    try:
        yield
    finally:
        gen.WHOLE_STEPS = saved


DOC_ORDER = ["title", "tokens", "inputs", "positional", "context_tokens", "context", "layout",
             "weights", "heads", "kv_heads", "bias", "pytorch", "scale", "softcap", "qk_norm",
             "norm_eps", "rope", "alibi", "mask", "padding", "sinks", "grad_output"]


def order_doc(doc):
    assert set(doc) <= set(DOC_ORDER), set(doc) - set(DOC_ORDER)
    return {key: doc[key] for key in DOC_ORDER if key in doc}


def round2(t):
    """dO drawn from randn, kept to two decimals so the YAML stays readable."""
    return torch.round(t * 100.0) / 100.0


# ---------------------------------------------------------------------------
# Positional encodings (constants: the gradient of X equals that of X + P)
# ---------------------------------------------------------------------------

def sinusoidal_torch(n, d):
    """As the PyTorch tutorial's PositionalEncoding module computes it."""
    position = torch.arange(n, dtype=torch.float64).unsqueeze(1)
    div_term = torch.exp(torch.arange(0, d, 2, dtype=torch.float64) * (-math.log(10000.0) / d))
    pe = torch.zeros(n, d)
    pe[:, 0::2] = torch.sin(position * div_term)
    pe[:, 1::2] = torch.cos(position * div_term)[:, : d // 2]
    return pe


def positional_torch(doc, n, d):
    value = doc.get("positional")
    if value is None:
        return None
    if value == "sinusoidal":
        return sinusoidal_torch(n, d)
    return tensor(value)


# ---------------------------------------------------------------------------
# The autograd implementation: leaves exactly as written in the YAML
# ---------------------------------------------------------------------------

def leaf(value):
    return tensor(value).requires_grad_(True)


def leaves_from_doc(doc):
    """Every weight and bias of the file as a leaf tensor, in the file's shape."""
    if "pytorch" in doc:
        block = doc["pytorch"]
        return {"form": "block", "num_heads": block["num_heads"],
                "params": {key: leaf(block[key]) for key in
                           ("in_proj_weight", "in_proj_bias", "out_proj_weight", "out_proj_bias")
                           if key in block}}
    weights, bias = doc.get("weights", {}), doc.get("bias", {})
    out = {"form": "heads_list" if isinstance(doc.get("heads"), list) else "weights",
           "layout": doc.get("layout", "x_w"),
           "output": leaf(weights["output"]) if "output" in weights else None,
           "bias_output": leaf(bias["output"]) if "output" in bias else None}
    if out["form"] == "heads_list":
        out["heads"] = [{name: leaf(item[name]) for name in NAMES}
                        | {"bias_" + name: leaf(item["bias"][name])
                           for name in NAMES if name in item.get("bias", {})}
                        for item in doc["heads"]]
        for name in NAMES:
            given = ["bias_" + name in h for h in out["heads"]]
            # a bias on some heads only would need zeros for the others; the
            # cases here give a bias to every head or to none
            assert all(given) or not any(given), "a heads list with a bias on some heads only"
    else:
        out.update({name: leaf(weights[name]) for name in NAMES})
        out.update({"bias_" + name: leaf(bias[name]) for name in NAMES if name in bias})
    return out


def assemble(leaves):
    """Stacked x_w weights (in x out) and biases, as graph ops on the leaves."""
    W, b = {}, {}
    if leaves["form"] == "block":
        p = leaves["params"]
        E = p["in_proj_weight"].shape[1]
        for i, name in enumerate(NAMES):
            W[name] = p["in_proj_weight"][i * E:(i + 1) * E].T
            if "in_proj_bias" in p:
                b[name] = p["in_proj_bias"][i * E:(i + 1) * E]
        return W, b, p["out_proj_weight"].T, p.get("out_proj_bias")
    as_x_w = (lambda t: t.T) if leaves["layout"] == "pytorch" else (lambda t: t)
    if leaves["form"] == "heads_list":
        for name in NAMES:
            W[name] = torch.cat([as_x_w(h[name]) for h in leaves["heads"]], dim=1)
            if "bias_" + name in leaves["heads"][0]:
                b[name] = torch.cat([h["bias_" + name] for h in leaves["heads"]])
    else:
        for name in NAMES:
            W[name] = as_x_w(leaves[name])
            if "bias_" + name in leaves:
                b[name] = leaves["bias_" + name]
    W_O = None if leaves["output"] is None else as_x_w(leaves["output"])
    return W, b, W_O, leaves["bias_output"]


def parameter_grads(leaves):
    """The leaves' .grad as the steps grad_w_*, grad_b_* (1 x width rows) or,
    for a pytorch block, grad_in_proj_weight & co."""
    steps = {}
    if leaves["form"] == "block":
        p = leaves["params"]
        for key, value in p.items():
            g = value.grad.detach().clone()
            steps["grad_" + key] = g[None] if g.dim() == 1 else g
        return steps
    if leaves["form"] == "heads_list":
        for name in NAMES:
            steps["grad_w_" + name] = [h[name].grad.detach().clone() for h in leaves["heads"]]
            if "bias_" + name in leaves["heads"][0]:
                steps["grad_b_" + name] = [h["bias_" + name].grad.detach().clone()[None]
                                           for h in leaves["heads"]]
    else:
        for name in NAMES:
            steps["grad_w_" + name] = leaves[name].grad.detach().clone()
            if "bias_" + name in leaves:
                steps["grad_b_" + name] = leaves["bias_" + name].grad.detach().clone()[None]
    if leaves["output"] is not None:
        steps["grad_w_output"] = leaves["output"].grad.detach().clone()
    if leaves["bias_output"] is not None:
        steps["grad_b_output"] = leaves["bias_output"].grad.detach().clone()[None]
    return steps


def settings_from_doc(doc, H, d_k):
    """divisor, RoPE settings, ALiBi slopes (Press et al.'s code), blocked
    cells (built as the libraries build them), sinks."""
    scale = doc.get("scale", "sqrt_dk")
    divisor = 1.0 if scale == "none" else math.sqrt(d_k) if scale == "sqrt_dk" else float(scale)
    n = len(doc["inputs"])
    rope = doc.get("rope")
    if rope is not None:
        # base, style, partial; with rope.scaling, transformers' inv_freq and attention_scaling
        rope = gen.rope_reference(rope, d_k, n)
    alibi = doc.get("alibi")
    slopes = (gen.press_get_slopes(H) if alibi is True
              else None if alibi is None else [float(s) for s in alibi])
    m = len(doc["context"]) if "context" in doc else n
    sinks = doc.get("sinks")
    blocked = gen.blocked_cells(n, m, doc.get("mask"), doc.get("padding"), sinks)
    return divisor, rope, slopes, blocked, sinks


def qk_norm_leaves(doc, H, G, d_k):
    """qk_norm's settings, its two gamma as leaf tensors (requires_grad=True, given or the
    default 1, or 0 with offset 1), or None."""
    value = doc.get("qk_norm")
    if value is None:
        return None
    spec = {} if value is True else value
    over, offset = spec.get("over", "head"), int(spec.get("offset", 0))
    norm = {"over": over, "offset": offset,
            "eps": float(spec.get("eps", doc.get("norm_eps", 1e-6)))}
    for name, count in (("query", H), ("key", G)):
        width = d_k if over == "head" else count * d_k
        norm[name] = leaf(spec[name]) if name in spec else leaf([1.0 - offset] * width)
        assert norm[name].shape == (width,), (name, norm[name].shape, width)
    return norm


def batched_forward(Xe, C, W, b, H, G, W_O, b_O, divisor, rope, slopes, blocked, sinks, softcap=None,
                    qk_norm=None):
    """generate.modern_reference's ops, keeping the intermediate tensors whose
    gradients are steps (retain_grad)."""
    n, m = Xe.shape[0], C.shape[0]
    kept = {}

    def project(inp, name, count):                 # tokens x count x d, before RoPE
        Y = inp @ W[name]
        if b.get(name) is not None:
            Y = Y + b[name]
        Y = Y.view(inp.shape[0], count, -1)
        Y.retain_grad()
        kept[name] = Y
        return Y

    q, k, v = project(Xe, "query", H), project(C, "key", G), project(C, "value", G)
    Q, K, V = q.transpose(0, 1), k.transpose(0, 1), v.transpose(0, 1)
    steps = {"queries": list(Q), "keys": list(K), "values": list(V)}
    if qk_norm is not None:
        # generate.apply_qk_norm: Qwen3's / Gemma 3's norm per head, OLMo 2's over all
        q, k = gen.apply_qk_norm(q, qk_norm, "query"), gen.apply_qk_norm(k, qk_norm, "key")
        q.retain_grad()
        k.retain_grad()
        kept["normed_query"], kept["normed_key"] = q, k
        Q, K = q.transpose(0, 1), k.transpose(0, 1)
        steps["normed_queries"], steps["normed_keys"] = list(Q), list(K)
    if rope is not None:
        # generate.apply_rope: rotate_half or the polar form, scaled as rope.scaling says
        Q, K = gen.apply_rope(Q, K, q, k, rope)
        steps["rotated_queries"], steps["rotated_keys"] = list(Q), list(K)
    K_rep = K.repeat_interleave(H // G, dim=0)
    V_rep = V.repeat_interleave(H // G, dim=0)
    S = torch.matmul(Q, K_rep.transpose(-2, -1))
    S.retain_grad()
    scaled = S / divisor
    scaled.retain_grad()
    steps["scores"], steps["scaled_scores"] = list(S), list(scaled)
    x = scaled
    if softcap is not None:
        x = gen.gemma2_softcap(scaled, softcap)
        x.retain_grad()
        kept["capped"] = x
        steps["capped_scores"] = list(x)
    A = gen.scaled_scores_to_weights(x, slopes, blocked, sinks, steps)
    A.retain_grad()
    Z = torch.matmul(A, V_rep)
    Z.retain_grad()
    steps["weights"], steps["head_output"] = list(A), list(Z)
    concat = Z.transpose(0, 1).reshape(n, -1)
    if H > 1:
        steps["concat"] = concat
    if W_O is not None:
        concat.retain_grad()
        O = concat @ W_O
        if b_O is not None:
            O = O + b_O
    else:
        O = concat
    steps["output"] = O
    kept.update({"S": S, "scaled": scaled, "A": A, "Z": Z, "concat": concat})
    steps = {key: ([t.detach().clone() for t in value] if isinstance(value, list)
                   else value.detach().clone()) for key, value in steps.items()}
    return O, steps, kept


def grad_output_tensor(doc, n, d_out):
    value = doc["grad_output"]
    if value == "ones":
        return torch.ones(n, d_out)
    dO = tensor(value)
    assert dO.shape == (n, d_out), f"grad_output is {tuple(dO.shape)}, the output {n} x {d_out}"
    return dO


def autograd_case(doc):
    """Forward and backward steps of a YAML doc, with torch.autograd."""
    X = leaf(doc["inputs"])
    n, d_model = X.shape
    P = positional_torch(doc, n, d_model)
    Xe = X if P is None else X + P
    cross = "context" in doc
    C_leaf = leaf(doc["context"]) if cross else None
    C = C_leaf if cross else Xe
    leaves = leaves_from_doc(doc)
    W, b, W_O, b_O = assemble(leaves)
    H = (leaves["num_heads"] if leaves["form"] == "block"
         else len(leaves["heads"]) if leaves["form"] == "heads_list" else doc.get("heads", 1))
    G = doc.get("kv_heads", H)
    d_k = W["query"].shape[1] // H
    divisor, rope, slopes, blocked, sinks = settings_from_doc(doc, H, d_k)
    softcap = None if doc.get("softcap") is None else float(doc["softcap"])
    qk_norm = qk_norm_leaves(doc, H, G, d_k)
    O, steps, kept = batched_forward(Xe, C, W, b, H, G, W_O, b_O, divisor, rope, slopes,
                                     blocked, sinks, softcap, qk_norm)
    if P is not None:
        steps = {"positional": P.clone(), "encoded": Xe.detach().clone()} | steps
    dO = grad_output_tensor(doc, n, O.shape[1])
    L = (O * dO).sum()
    L.backward()

    def heads(t):
        return [g.clone() for g in t.grad.detach()]

    steps["grad_output"] = dO
    if W_O is not None and H > 1:
        steps["grad_concat"] = kept["concat"].grad.detach().clone()
    steps["grad_head_output"] = heads(kept["Z"])
    steps["grad_weights"] = heads(kept["A"])
    if softcap is not None:
        steps["grad_capped_scores"] = heads(kept["capped"])
    steps["grad_scaled_scores"] = heads(kept["scaled"])
    steps["grad_scores"] = heads(kept["S"])
    steps["grad_queries"] = [g.clone() for g in kept["query"].grad.detach().transpose(0, 1)]
    steps["grad_keys"] = [g.clone() for g in kept["key"].grad.detach().transpose(0, 1)]
    steps["grad_values"] = [g.clone() for g in kept["value"].grad.detach().transpose(0, 1)]
    if qk_norm is not None:
        steps["grad_normed_queries"] = [g.clone() for g in kept["normed_query"].grad.detach().transpose(0, 1)]
        steps["grad_normed_keys"] = [g.clone() for g in kept["normed_key"].grad.detach().transpose(0, 1)]
        steps["grad_q_norm"] = qk_norm["query"].grad.detach().clone()[None]
        steps["grad_k_norm"] = qk_norm["key"].grad.detach().clone()[None]
    steps.update(parameter_grads(leaves))
    steps["grad_inputs"] = X.grad.detach().clone()
    if cross:
        steps["grad_context"] = C_leaf.grad.detach().clone()
    if blocked is not None:
        for g in steps["grad_scaled_scores"] + steps["grad_scores"] + steps.get("grad_capped_scores", []):
            assert bool((g[blocked] == 0).all()), "a blocked cell with a nonzero gradient"
    info = {"H": H, "G": G, "divisor": divisor, "X": X, "W": W, "b": b, "W_O": W_O, "b_O": b_O,
            "dO": dO, "blocked": blocked}
    return steps, info


# ---------------------------------------------------------------------------
# nn.MultiheadAttention forward and backward
# ---------------------------------------------------------------------------

def module_backward(mha, doc, mask, padding):
    """Run the module on the YAML's inputs (and context) with dO; returns its
    weights, output, parameter gradients and input gradients."""
    mha.zero_grad(set_to_none=True)
    X = leaf(doc["inputs"])
    C = leaf(doc["context"]) if "context" in doc else None
    n = X.shape[0]
    m = n if C is None else C.shape[0]
    attn_mask = None if mask is None else (torch.as_tensor(mask) == 0)
    key_padding_mask = None if padding is None else (torch.as_tensor(padding) == 0)[None, :]
    kv = X[None] if C is None else C[None]
    out, A = mha(X[None], kv, kv, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
                 need_weights=True, average_attn_weights=False)
    out, A = out[0], A[0]
    dO = grad_output_tensor(doc, n, out.shape[1])
    (out * dO).sum().backward()
    assert A.shape == (mha.num_heads, n, m)
    grads = {"in_proj_weight": mha.in_proj_weight.grad, "out_proj_weight": mha.out_proj.weight.grad}
    if mha.in_proj_bias is not None:
        grads["in_proj_bias"] = mha.in_proj_bias.grad
    if mha.out_proj.bias is not None:
        grads["out_proj_bias"] = mha.out_proj.bias.grad
    grads = {key: g.detach().clone() for key, g in grads.items()}
    result = {"weights": [a.detach().clone() for a in A], "output": out.detach().clone(),
              "grad_inputs": X.grad.detach().clone()}
    if C is not None:
        result["grad_context"] = C.grad.detach().clone()
    return result, grads


def module_parameter_steps(grads, spelling):
    """The module's parameter .grad in the file's spelling: a pytorch block
    as is; `weights:` blocks by E x E slices of in_proj_weight (transposed for
    x_w, whose weights are in x out), biases as 1 x width rows."""
    if spelling == "block":
        return {"grad_" + key: (g[None] if g.dim() == 1 else g) for key, g in grads.items()}
    E = grads["in_proj_weight"].shape[1]
    as_written = (lambda t: t.T) if spelling == "x_w" else (lambda t: t)
    steps = {}
    for i, name in enumerate(NAMES):
        steps["grad_w_" + name] = as_written(grads["in_proj_weight"][i * E:(i + 1) * E]).clone()
        if "in_proj_bias" in grads:
            steps["grad_b_" + name] = grads["in_proj_bias"][i * E:(i + 1) * E][None].clone()
    steps["grad_w_output"] = as_written(grads["out_proj_weight"]).clone()
    if "out_proj_bias" in grads:
        steps["grad_b_output"] = grads["out_proj_bias"][None].clone()
    return steps


# ---------------------------------------------------------------------------
# The numpy implementation, read from the YAML alone: forward one head at a
# time, backward with the explicit formulas of STEPS in man/qkv.1.in
# ---------------------------------------------------------------------------

def arr(value):
    return np.array(value, dtype=np.float64)


def np_sinusoidal(n, d):
    """The man page's sinusoidal encoding: P[p, 2i] = sin(p / 10000^(2i/d_model)), P[p, 2i+1] = cos(...), p from 0."""
    P = np.zeros((n, d))
    for p in range(n):
        for c in range(d):
            i2 = c - c % 2
            angle = p / 10000.0 ** (i2 / d)
            P[p, c] = math.sin(angle) if c % 2 == 0 else math.cos(angle)
    return P


def np_rotate(M, base, style, sign, partial=1.0, inv_freq=None, attention_factor=1.0):
    """RoPE pair by pair, row p at position p; sign -1 turns back (the
    transpose of the rotation, which is its backward). Only the first
    d = d_k * partial_rotary_factor elements turn. With rope.scaling the angle
    is p * inv_freq[k] and the turned pair is multiplied by the attention factor,
    both ways (a times the rotation has the transpose a times the turn back)."""
    rows, d = M.shape
    d = round(d * partial)
    out = M.copy()
    for p in range(rows):
        for k in range(d // 2):
            angle = sign * p * (base ** (-2.0 * k / d) if inv_freq is None else inv_freq[k])
            c, s = math.cos(angle), math.sin(angle)
            a, b = (k, k + d // 2) if style == "half" else (2 * k, 2 * k + 1)
            if inv_freq is None:
                out[p, a] = M[p, a] * c - M[p, b] * s
                out[p, b] = M[p, b] * c + M[p, a] * s
            else:
                out[p, a] = attention_factor * (M[p, a] * c - M[p, b] * s)
                out[p, b] = attention_factor * (M[p, b] * c + M[p, a] * s)
    return out


def np_model(doc):
    """The model a YAML file describes, per head, weights in x out."""
    X = arr(doc["inputs"])
    n, d_model = X.shape
    pos = doc.get("positional")
    P = None if pos is None else np_sinusoidal(n, d_model) if pos == "sinusoidal" else arr(pos)
    Xe = X if P is None else X + P
    cross = "context" in doc
    C = arr(doc["context"]) if cross else Xe
    model = {"X": X, "P": P, "Xe": Xe, "C": C, "cross": cross, "W_O": None, "b_O": None}
    q, k, v = [], [], []            # lists of (W in x out, b or None)
    if "pytorch" in doc:
        block = doc["pytorch"]
        H = block["num_heads"]
        ipw = arr(block["in_proj_weight"])
        E = ipw.shape[1]
        ipb = arr(block["in_proj_bias"]) if "in_proj_bias" in block else None
        for i, target in enumerate((q, k, v)):
            Wt = ipw[i * E:(i + 1) * E].T
            d = E // H
            for h in range(H):
                cols = slice(h * d, (h + 1) * d)
                target.append((Wt[:, cols], None if ipb is None else ipb[i * E:(i + 1) * E][cols]))
        model["W_O"] = arr(block["out_proj_weight"]).T
        if "out_proj_bias" in block:
            model["b_O"] = arr(block["out_proj_bias"])
        model["form"], G = "block", H
    else:
        transpose = doc.get("layout", "x_w") == "pytorch"

        def w(value):
            return arr(value).T if transpose else arr(value)

        weights, bias = doc.get("weights", {}), doc.get("bias", {})
        if isinstance(doc.get("heads"), list):
            for item in doc["heads"]:
                hb = item.get("bias", {})
                for name, target in zip(NAMES, (q, k, v)):
                    target.append((w(item[name]), arr(hb[name]) if name in hb else None))
            H = G = len(doc["heads"])
            model["form"] = "heads_list"
        else:
            H = doc.get("heads", 1)
            G = doc.get("kv_heads", H)
            for name, target, count in zip(NAMES, (q, k, v), (H, G, G)):
                Wn = w(weights[name])
                bn = arr(bias[name]) if name in bias else None
                d = Wn.shape[1] // count
                assert d * count == Wn.shape[1]
                for h in range(count):
                    cols = slice(h * d, (h + 1) * d)
                    target.append((Wn[:, cols], None if bn is None else bn[cols]))
            model["form"] = "weights"
        if "output" in weights:
            model["W_O"] = w(weights["output"])
        if "output" in bias:
            model["b_O"] = arr(bias["output"])
        model["transpose"] = transpose
    model.update({"q": q, "k": k, "v": v, "H": H, "G": G,
                  "kv_of": [math.ceil(h * G / H) - 1 for h in range(1, H + 1)]})
    d_k = q[0][0].shape[1]
    scale = doc.get("scale", "sqrt_dk")
    model["divisor"] = 1.0 if scale == "none" else math.sqrt(d_k) if scale == "sqrt_dk" else float(scale)
    rope = doc.get("rope")
    rope = {} if rope is True else rope
    model["rope"] = None if rope is None else (float(rope.get("base", 10000)), rope.get("style", "half"),
                                               float(rope.get("partial_rotary_factor", 1.0)), None, 1.0)
    if rope is not None and rope.get("scaling") is not None:
        # the scaled frequencies and attention factor from the spec's formulas (math, pair by
        # pair), over the example's n positions
        d_rot = round(d_k * model["rope"][2])
        spec = gen.rope_scaling_spec(rope, d_rot, n)
        model["rope"] = model["rope"][:3] + (spec["inv_freq"], spec["attention_factor"])
    alibi = doc.get("alibi")
    model["slopes"] = (gen.alibi_slopes_spec(H) if alibi is True
                       else None if alibi is None else [float(s) for s in alibi])
    m = C.shape[0]
    keep = np.ones((n, m), dtype=bool)
    mask = doc.get("mask")
    if mask == "causal":
        keep &= np.array([[j <= i for j in range(m)] for i in range(n)])
    elif isinstance(mask, dict):
        keep &= np.array([[0 <= i - j < mask["window"] for j in range(m)] for i in range(n)])
    elif mask is not None:
        keep &= arr(mask) != 0
    if "padding" in doc:
        keep &= (arr(doc["padding"]) != 0)[None, :]
    # a row that keeps no key only with sinks (all its weight goes to the sink)
    assert keep.any(axis=1).all() or "sinks" in doc
    model["keep"] = keep
    model["sinks"] = None if "sinks" not in doc else [float(s) for s in doc["sinks"]]
    model["softcap"] = None if "softcap" not in doc else float(doc["softcap"])
    model["qk_norm"] = None
    if "qk_norm" in doc:
        spec = {} if doc["qk_norm"] is True else doc["qk_norm"]
        over, offset = spec.get("over", "head"), float(spec.get("offset", 0))
        norm = {"over": over, "offset": offset,
                "eps": float(spec["eps"]) if "eps" in spec else float(doc.get("norm_eps", 1e-6))}
        for name, count in (("query", H), ("key", G)):
            width = d_k * (1 if over == "head" else count)
            norm[name] = arr(spec[name]) if name in spec else np.full(width, 1.0 - offset)
            assert norm[name].shape == (width,)
        model["qk_norm"] = norm
    model["grad_output"] = doc["grad_output"]
    return model


def np_rms_norm(mats, gamma, norm):
    """x' = x / sqrt(mean(x^2) + eps) * (offset + gamma), row by row: each head's rows
    (over: head), or a token's rows of every head side by side (over: all)."""
    def rows(M):
        r = 1.0 / np.sqrt((M * M).mean(axis=1, keepdims=True) + norm["eps"])
        return M * r * (norm["offset"] + gamma)
    if norm["over"] == "head":
        return [rows(M) for M in mats]
    d = mats[0].shape[1]
    whole = rows(np.hstack(mats))
    return [whole[:, h * d:(h + 1) * d] for h in range(len(mats))]


def np_rms_norm_backward(mats, dmats, gamma, norm):
    """The RMSNorm's backward, row by row: with r = 1 / sqrt(mean(x^2) + eps),
    g = offset + gamma and u = dy o g, dx = r u - x r^3 mean(x o u); dgamma = the sum over
    rows (and over heads, for over: head) of dy o x r. Returns (dx per head, dgamma)."""
    def rows(M, D):
        r = 1.0 / np.sqrt((M * M).mean(axis=1, keepdims=True) + norm["eps"])
        u = D * (norm["offset"] + gamma)
        dx = r * u - M * r ** 3 * (M * u).mean(axis=1, keepdims=True)
        return dx, (D * M * r).sum(axis=0)
    if norm["over"] == "head":
        pairs = [rows(M, D) for M, D in zip(mats, dmats)]
        return [dx for dx, _ in pairs], sum(dg for _, dg in pairs)
    d = mats[0].shape[1]
    dx, dg = rows(np.hstack(mats), np.hstack(dmats))
    return [dx[:, h * d:(h + 1) * d] for h in range(len(mats))], dg


def np_forward(model, perturb=None):
    """Forward one head at a time; perturb = (grad step id, head, i, j, delta)
    adds delta to that forward value (for the finite differences of the
    intermediate steps). Returns the values and L."""
    def bump(step, h, M):
        if perturb is not None and perturb[0] == step and perturb[1] == h:
            M = M.copy()
            M[perturb[2], perturb[3]] += perturb[4]
        return M

    md = model
    Xe, C, H, G = md["Xe"], md["C"], md["H"], md["G"]
    f = {"Q": [], "K": [], "V": [], "Qr": [], "Kr": [], "A": [], "Z": [], "scaled": []}
    for h, (W, b) in enumerate(md["q"]):
        f["Q"].append(bump("grad_queries", h, Xe @ W + (0 if b is None else b)))
    for g in range(G):
        (Wk, bk), (Wv, bv) = md["k"][g], md["v"][g]
        f["K"].append(bump("grad_keys", g, C @ Wk + (0 if bk is None else bk)))
        f["V"].append(bump("grad_values", g, C @ Wv + (0 if bv is None else bv)))
    f["Qn"], f["Kn"] = f["Q"], f["K"]
    if md["qk_norm"] is not None:
        norm = md["qk_norm"]
        # the gammas as 1 x width rows, so that a finite difference can move one entry
        gq = bump("grad_q_norm", 0, norm["query"][None])[0]
        gk = bump("grad_k_norm", 0, norm["key"][None])[0]
        f["Qn"] = [bump("grad_normed_queries", h, M) for h, M in enumerate(np_rms_norm(f["Q"], gq, norm))]
        f["Kn"] = [bump("grad_normed_keys", g, M) for g, M in enumerate(np_rms_norm(f["K"], gk, norm))]
    if md["rope"] is not None:
        base, style, partial, inv_freq, factor = md["rope"]
        f["Qr"] = [np_rotate(Q, base, style, +1, partial, inv_freq, factor) for Q in f["Qn"]]
        f["Kr"] = [np_rotate(K, base, style, +1, partial, inv_freq, factor) for K in f["Kn"]]
    else:
        f["Qr"], f["Kr"] = f["Qn"], f["Kn"]
    n, m = Xe.shape[0], C.shape[0]
    for h in range(H):
        g = md["kv_of"][h]
        S = bump("grad_scores", h, f["Qr"][h] @ f["Kr"][g].T)
        x = bump("grad_scaled_scores", h, S / md["divisor"])
        f["scaled"].append(x)
        if md["softcap"] is not None:
            c = md["softcap"]
            x = bump("grad_capped_scores", h, c * np.tanh(x / c))
        if md["slopes"] is not None:
            x = x + np.array([[-md["slopes"][h] * abs(i - j) for j in range(m)] for i in range(n)])
        x = np.where(md["keep"], x, -np.inf)
        sink = None if md["sinks"] is None else md["sinks"][h]
        A = np.zeros((n, m))
        for i in range(n):
            M = x[i].max() if sink is None else max(x[i].max(), sink)
            e = np.exp(x[i] - M)
            A[i] = e / (e.sum() + (0.0 if sink is None else math.exp(sink - M)))
        A = bump("grad_weights", h, A)
        f["A"].append(A)
        f["Z"].append(bump("grad_head_output", h, A @ f["V"][g]))
    concat = bump("grad_concat", 0, np.hstack(f["Z"]))
    f["concat"] = concat
    O = concat if md["W_O"] is None else concat @ md["W_O"] + (0 if md["b_O"] is None else md["b_O"])
    f["O"] = O
    dO = np.ones_like(O) if md["grad_output"] == "ones" else arr(md["grad_output"])
    f["dO"] = dO
    return f, float((O * dO).sum())


def np_backward(model, f):
    """STEPS in man/qkv.1.in, written out; weights' gradients mapped back to the
    file's layout and shape."""
    md = model
    H, kv_of, divisor = md["H"], md["kv_of"], md["divisor"]
    Xe, C = md["Xe"], md["C"]
    dO = f["dO"]
    out = {"grad_output": dO}
    if md["W_O"] is not None:
        dcat = dO @ md["W_O"].T
        dW_O, db_O = f["concat"].T @ dO, dO.sum(axis=0)
        if H > 1:
            out["grad_concat"] = dcat
    else:
        dcat = dO
    d_v = f["V"][0].shape[1]
    dZ = [dcat[:, h * d_v:(h + 1) * d_v] for h in range(H)]
    dA, dx, dS, dQr, dcap = [], [], [], [], []
    dKr = [np.zeros_like(K) for K in f["K"]]
    dV = [np.zeros_like(V) for V in f["V"]]
    for h in range(H):
        g, A = kv_of[h], f["A"][h]
        dA.append(dZ[h] @ f["V"][g].T)
        dV[g] += A.T @ dZ[h]
        row = (dA[h] * A).sum(axis=1, keepdims=True)
        dx_h = A * (dA[h] - row)
        dx_h[~md["keep"]] = 0.0
        if md["softcap"] is not None:
            # the softmax's gradient is that of the capped scores; d(c·tanh(x/c))/dx = 1 − tanh²(x/c)
            dcap.append(dx_h)
            dx_h = dx_h * (1.0 - np.tanh(f["scaled"][h] / md["softcap"]) ** 2)
        dx.append(dx_h)
        dS.append(dx_h / divisor)
        dQr.append(dS[h] @ f["Kr"][g])
        dKr[g] += dS[h].T @ f["Qr"][h]
    if md["rope"] is not None:
        base, style, partial, inv_freq, factor = md["rope"]
        dQ = [np_rotate(d, base, style, -1, partial, inv_freq, factor) for d in dQr]
        dK = [np_rotate(d, base, style, -1, partial, inv_freq, factor) for d in dKr]
    else:
        dQ, dK = dQr, dKr
    if md["qk_norm"] is not None:
        # dQ, dK so far are the gradients of the normed rows; through the norm to the projections
        norm = md["qk_norm"]
        out["grad_normed_queries"], out["grad_normed_keys"] = dQ, dK
        dQ, dgq = np_rms_norm_backward(f["Q"], dQ, norm["query"], norm)
        dK, dgk = np_rms_norm_backward(f["K"], dK, norm["key"], norm)
        out["grad_q_norm"], out["grad_k_norm"] = dgq[None], dgk[None]
    out.update({"grad_head_output": dZ, "grad_weights": dA, "grad_scaled_scores": dx,
                "grad_scores": dS, "grad_queries": dQ, "grad_keys": dK, "grad_values": dV})
    if md["softcap"] is not None:
        out["grad_capped_scores"] = dcap
    dXe = np.zeros_like(Xe)
    dC = np.zeros_like(C)
    per = {name: [] for name in NAMES}
    per_b = {name: [] for name in NAMES}
    for name, source, grads, D in (("query", Xe, dQ, None), ("key", C, dK, None),
                                   ("value", C, dV, None)):
        for i, (W, b) in enumerate(md[name[0]]):
            per[name].append(source.T @ grads[i])
            per_b[name].append(None if b is None else grads[i].sum(axis=0))
            if name == "query":
                dXe += grads[i] @ W.T
            else:
                dC += grads[i] @ W.T
    if not md["cross"]:
        dXe += dC
    if md["form"] == "block":
        E = Xe.shape[1]
        out["grad_in_proj_weight"] = np.vstack([np.hstack(per[name]).T for name in NAMES])
        assert out["grad_in_proj_weight"].shape == (3 * E, E)
        if per_b["query"][0] is not None:
            out["grad_in_proj_bias"] = np.concatenate([np.concatenate(per_b[name])
                                                       for name in NAMES])[None]
        out["grad_out_proj_weight"] = dW_O.T
        if md["b_O"] is not None:
            out["grad_out_proj_bias"] = db_O[None]
    else:
        as_written = (lambda t: t.T) if md["transpose"] else (lambda t: t)
        for name in NAMES:
            given = [b is not None for b in per_b[name]]
            if md["form"] == "heads_list":
                out["grad_w_" + name] = [as_written(t) for t in per[name]]
                if all(given):      # a bias on every head (else: the step is left out)
                    out["grad_b_" + name] = [t[None] for t in per_b[name]]
            else:
                out["grad_w_" + name] = as_written(np.hstack(per[name]))
                if all(given):
                    out["grad_b_" + name] = np.concatenate(per_b[name])[None]
        if md["W_O"] is not None:
            out["grad_w_output"] = as_written(dW_O)
        if md["b_O"] is not None:
            out["grad_b_output"] = db_O[None]
    out["grad_inputs"] = dXe
    if md["cross"]:
        out["grad_context"] = dC
    return out


# ---------------------------------------------------------------------------
# Finite differences
# ---------------------------------------------------------------------------

# the YAML numbers whose derivative each parameter step is (per head: heads[h])
DOC_PATHS = {
    "grad_w_query": ("weights", "query"), "grad_w_key": ("weights", "key"),
    "grad_w_value": ("weights", "value"), "grad_w_output": ("weights", "output"),
    "grad_b_query": ("bias", "query"), "grad_b_key": ("bias", "key"),
    "grad_b_value": ("bias", "value"), "grad_b_output": ("bias", "output"),
    "grad_in_proj_weight": ("pytorch", "in_proj_weight"),
    "grad_in_proj_bias": ("pytorch", "in_proj_bias"),
    "grad_out_proj_weight": ("pytorch", "out_proj_weight"),
    "grad_out_proj_bias": ("pytorch", "out_proj_bias"),
    "grad_inputs": ("inputs",), "grad_context": ("context",),
    "grad_q_norm": ("qk_norm", "query"), "grad_k_norm": ("qk_norm", "key")}


def in_doc(doc, path):
    """Whether the YAML spells out the numbers at path (qk_norm: true has no gamma)."""
    node = doc
    for key in path:
        if not isinstance(node, dict) or key not in node:
            return False
        node = node[key]
    return True


def doc_loss(doc):
    return np_forward(np_model(doc))[1]


def fd_entries(G, rng, extra=()):
    """The largest |entry| and a random one (and any extra cells)."""
    idx = np.unravel_index(int(np.argmax(np.abs(G))), G.shape)
    picks = [tuple(int(i) for i in idx),
             (int(rng.integers(G.shape[0])), int(rng.integers(G.shape[1])))]
    return picks + list(extra)


def fd_check(name, doc, steps, written, seed):
    """Central differences of L = sum(O * dO) for a few entries of every
    backward step; returns how many entries were checked."""
    rng = np.random.default_rng(seed)
    model = np_model(doc)
    checked = 0
    for step in written:
        if not step.startswith("grad_") or step == "grad_output":
            continue
        value = steps[step]
        mats = value if isinstance(value, list) else [value]
        for h, G in enumerate(mats):
            G = G.numpy()
            extra = []
            if step in ("grad_capped_scores", "grad_scaled_scores", "grad_scores") and not model["keep"].all():
                blocked = np.argwhere(~model["keep"])[0]
                extra = [(int(blocked[0]), int(blocked[1]))]
            for i, j in fd_entries(G, rng, extra):
                if step in DOC_PATHS and (step not in ("grad_q_norm", "grad_k_norm")
                                          or in_doc(doc, DOC_PATHS[step])):
                    path = DOC_PATHS[step]
                    if isinstance(value, list):         # a heads list: heads[h]...
                        path = ("heads", h) + (path[1:] if path[0] == "weights"
                                               else ("bias",) + path[1:])

                    def loss(delta):
                        d = copy.deepcopy(doc)
                        node = d
                        for key in path[:-1]:
                            node = node[key]
                        target = node[path[-1]]
                        if isinstance(target[0], list):
                            target[i][j] += delta
                        else:
                            assert i == 0
                            target[j] += delta
                        return doc_loss(d)
                else:
                    def loss(delta):
                        return np_forward(model, (step, h, i, j, delta))[1]
                fd = (loss(FD_STEP) - loss(-FD_STEP)) / (2 * FD_STEP)
                g = float(G[i, j])
                assert abs(fd - g) <= FD_TOLERANCE * max(1.0, abs(g)), \
                    f"{name}: finite difference of {step}[{i},{j}] head {h + 1}: {fd} vs {g}"
                checked += 1
    return checked


# ---------------------------------------------------------------------------
# A case from a YAML doc: compute, check, describe
# ---------------------------------------------------------------------------

def to_torch(value):
    if isinstance(value, list):
        return [torch.as_tensor(v, dtype=torch.float64) for v in value]
    return torch.as_tensor(value, dtype=torch.float64)


def build_case(name, doc, forward_provenance, seed, *, module=None, modern_steps=None,
               extra_check=None):
    """doc: the YAML content (title included, grad_output set). module: None
    or (mha, spelling, mask, padding). modern_steps: generate.modern_case's
    forward steps when the doc is its model unchanged."""
    doc = order_doc(doc)
    text = gen.yaml_text(doc)
    parsed = yaml.safe_load(text)              # everything below reads the YAML text
    steps, info = autograd_case(parsed)
    H, G = info["H"], info["G"]
    provenance = forward_provenance

    if module is not None:
        mha, spelling, mask, padding = module
        result, grads = module_backward(mha, parsed, mask, padding)
        module_steps = module_parameter_steps(grads, spelling) | {
            key: result[key] for key in ("weights", "output", "grad_inputs", "grad_context")
            if key in result}
        for key, value in module_steps.items():
            assert key in steps, (name, key)
            with whole_steps({"written": [key], "steps": {key: value}}):
                gen.compare({key: value}, steps, f"{name}: module vs batched leaves", [key])
            steps[key] = value                 # the module's own values are written
        steps["head_output"] = [a @ steps["values"][h] for h, a in enumerate(steps["weights"])]
        if H > 1:
            steps["concat"] = torch.cat(steps["head_output"], dim=1)
    provenance += backward_provenance(parsed, steps, None if module is None else module[1])
    if extra_check is not None:
        provenance += extra_check(info, steps)
    rope = parsed.get("rope")
    if isinstance(rope, dict) and rope.get("scaling") is not None:
        d_k = steps["queries"][0].shape[1]
        factor = gen.rope_reference(rope, d_k, len(parsed["inputs"]))["attention_scaling"]
        provenance += ("rope.scaling on the way back: grad_queries and grad_keys are the gradients of q and k "
                       "before the scaled rotation, the rotated ones' gradients multiplied by the attention "
                       f"factor {factor!r} and turned back; the numpy check takes them back through the "
                       "transpose of the attention factor times the rotation by p * inv_freq[k], inv_freq and "
                       "the factor from the spec's formulas (generate.rope_scaling_spec); ")
    provenance += (PROVENANCE_CHECKS if "qk_norm" not in parsed else PROVENANCE_CHECKS_QK_NORM) + VERSIONS

    written = [s for s in ALL_STEPS if s in steps]
    case = {"name": name, "doc": doc, "steps": steps, "written": written, "scale": info["divisor"],
            "heads": H, "kv_heads": G, "provenance": provenance}

    # the forward steps, recomputed from the YAML by the forward generator's reader
    forward_doc = dict(parsed)
    if "positional" in parsed:
        forward_doc["inputs"] = lists(steps["encoded"])
        P = np_model(parsed)["P"]
        assert gen.close(steps["positional"], torch.as_tensor(P)), f"{name}: positional"
    direct, divisor, n_heads, n_kv = gen.interpret_yaml(forward_doc)
    forward = [s for s in written if s in gen.ALL_STEP_IDS]
    assert set(forward) == set(direct), (name, set(forward) ^ set(direct))
    with whole_steps(case):
        gen.compare(steps, direct, f"{name}: forward vs YAML recomputed", forward)
        if modern_steps is not None:
            gen.compare(steps, modern_steps, f"{name}: forward vs generate.modern_case", forward)
    assert divisor == info["divisor"] and (n_heads, n_kv) == (H, G), name

    # the numpy implementation of the backward, from the YAML alone
    model = np_model(parsed)
    f, _ = np_forward(model)
    assert gen.close(steps["output"], torch.as_tensor(f["O"])), f"{name}: numpy output"
    numeric = {key: to_torch(value) for key, value in np_backward(model, f).items()}
    backward = [s for s in written if s.startswith("grad_")]
    assert set(backward) == set(numeric), (name, set(backward) ^ set(numeric))
    with whole_steps(case):
        for step in backward:
            assert isinstance(steps[step], list) == isinstance(numeric[step], list), (name, step)
            if isinstance(steps[step], list):
                count = G if step in KV_GRADS else H
                assert len(steps[step]) == len(numeric[step]) == count, (name, step)
            else:
                assert step in ALWAYS_WHOLE or step.startswith(("grad_w_", "grad_b_")), step
        gen.compare(steps, numeric, f"{name}: autograd vs numpy formulas", backward)
    checked = fd_check(name, parsed, steps, written, seed)
    case["fd_checked"] = checked
    return case


def write_case(case):
    name = case["name"]
    yaml_path = os.path.join(CASES_DIR, name + ".yaml")
    json_path = os.path.join(CASES_DIR, name + ".expected.json")
    text = gen.yaml_text(case["doc"])
    with whole_steps(case):
        kept = gen.keep_committed_digits(case, json_path)
        expected = gen.json_text(case)
        parsed = json.loads(expected)
        assert list(parsed["steps"]) == case["written"], name
        assert parsed["heads"] == case["heads"] and parsed["kv_heads"] == case["kv_heads"], name
        for step in case["written"]:
            if step.startswith("grad_"):
                # numbers only: no "-inf", and a zero is 0.0, never -0.0
                cells = str(parsed["steps"][step]).replace("[", " ").replace("]", " ")
                for cell in cells.replace(",", " ").split():
                    assert cell != "-0.0" and "inf" not in cell, (name, step, cell)
        gen.compare(case["steps"], gen.from_json_steps(parsed, case["written"]),
                    f"{name}: JSON read back", case["written"], 0.0)
    with open(yaml_path, "w", encoding="utf-8") as f:
        f.write(text)
    with open(json_path, "w", encoding="utf-8") as f:
        f.write(expected)
    return kept


# ---------------------------------------------------------------------------
# The cases
# ---------------------------------------------------------------------------

def grad_output_matrix(seed, n, d_out):
    """dO: randn with its own seed, two decimals."""
    torch.manual_seed(seed)
    return lists(round2(torch.randn(n, d_out)))


def modern(name, title, seed, grad_output="matrix", doc_edit=None, forward_note="", **kw):
    """A `weights:` case drawn by generate.modern_case (its seed, its model),
    plus grad_output."""
    base = gen.modern_case(name, title, seed, **kw)
    doc = dict(base["doc"])
    unchanged = doc_edit is None
    if doc_edit is not None:
        doc_edit(doc)
    n = len(doc["inputs"])
    d_out = base["steps"]["output"].shape[1]
    doc["grad_output"] = (Bare("ones") if grad_output == "ones"
                          else grad_output_matrix(seed + 50000, n, d_out))
    # the forward provenance of generate.modern_case, without its version tail
    forward = base["provenance"][: -len(VERSIONS)]
    return build_case(name, doc, "forward: " + forward_note + forward, seed,
                      modern_steps=base["steps"] if unchanged else None)


def module(name, title, seed, E, H, spelling, n, m=None, bias=True, mask=None, padding=None,
           grad_output="matrix", extra=None):
    """An nn.MultiheadAttention case, spelled as generate.py spells them."""
    gen.seeded(seed)
    mha = gen.make_mha(E, H, bias=bias)
    X = gen.randn(n, E)
    C = None if m is None else gen.randn(m, E)
    speller = {"x_w": gen.yaml_x_w, "layout_pytorch": gen.yaml_layout_pytorch,
               "block": gen.yaml_pytorch_block}[spelling]
    doc = {"title": title} | (extra or {}) | {"inputs": lists(X)}
    if C is not None:
        doc["context"] = lists(C)
    doc |= speller(mha)
    if mask is not None:
        doc["mask"] = Bare(mask) if isinstance(mask, str) else lists(mask)
    if padding is not None:
        doc["padding"] = padding
    mask_matrix = gen.causal(n) if mask == "causal" else mask
    # the forward generator's reading of the module, with its own self-check
    gen.mha_reference(mha, X, C, mask_matrix, padding)
    doc["grad_output"] = (Bare("ones") if grad_output == "ones"
                          else grad_output_matrix(seed + 50000, n, E))
    forward = ("forward: weights and output from torch.nn.MultiheadAttention(batch_first=True, "
               "need_weights=True, average_attn_weights=False, eval mode, dropout 0), the other "
               "forward steps from batched torch ops on the same parameters (as "
               "generate.modern_reference), head_output = weights @ V; ")
    return build_case(name, doc, forward, seed,
                      module=(mha, "x_w" if spelling == "x_w" else
                              "pytorch" if spelling == "layout_pytorch" else "block",
                              mask_matrix, padding))


def cases_module():
    out = []
    out.append(module(
        "backward_one_head_x_w_grad_matrix",
        "Backward: one head, x_w weights with W_O and all four biases, grad_output a matrix",
        2101, E=4, H=1, spelling="x_w", n=3, extra={"tokens": ["the", "cat", "sat"]}))
    out.append(module(
        "backward_three_heads_x_w_all_biases",
        "Backward: three heads split from x_w weights (heads: 3), every bias and W_O",
        2102, E=6, H=3, spelling="x_w", n=4))
    out.append(module(
        "backward_four_heads_layout_pytorch_padding",
        "Backward: four heads, layout: pytorch (gradients out x in as written), all biases, "
        "two padding tokens",
        2103, E=8, H=4, spelling="layout_pytorch", n=5, padding=[1, 1, 1, 0, 0],
        extra={"tokens": ["we", "like", "tea", "<pad>", "<pad>"]}))
    out.append(module(
        "backward_pytorch_block_causal",
        "Backward: a pytorch block with biases, causal mask: the module parameters' .grad",
        2104, E=4, H=2, spelling="block", n=4, mask="causal"))
    out.append(module(
        "backward_pytorch_block_no_bias_mask",
        "Backward: a pytorch block from a bias=False module, explicit mask matrix, grad_output: ones",
        2105, E=6, H=2, spelling="block", n=3, bias=False,
        mask=tensor([[1, 1, 0], [0, 1, 0], [1, 0, 1]]).long(), grad_output="ones"))
    out.append(module(
        "backward_cross_attention_mask",
        "Backward: cross-attention, 3 queries over 5 context rows, x_w, 3 x 5 mask: "
        "grad_inputs through the queries, grad_context through keys and values",
        2106, E=4, H=2, spelling="x_w", n=3, m=5,
        mask=tensor([[1, 1, 0, 0, 1], [0, 1, 1, 0, 0], [1, 1, 1, 1, 0]]).long(),
        extra={"tokens": ["q1", "q2", "q3"], "context_tokens": gen.labels("c", 5)}))
    return out


def cases_plain():
    out = []
    out.append(modern(
        "backward_one_head_no_output_ones",
        "Backward: one head, no W_O, no biases, grad_output: ones (L = the sum of the output)",
        2201, grad_output="ones", n=3, d_model=3, H=1, d_k=2, bias=(), output=False))
    out.append(modern(
        "backward_two_heads_no_output_projection",
        "Backward: two heads, no W_O (grad_head_output is dO's columns), query/key/value biases",
        2202, n=4, d_model=5, H=2, d_k=2, bias=("query", "key", "value"), output=False))
    out.append(modern(
        "backward_two_heads_scale_none_padding",
        "Backward: two heads, scale: none (grad_scores = grad_scaled_scores), W_O, "
        "query and output biases, padding",
        2203, n=4, d_model=4, H=2, d_k=2, bias=("query", "output"), scale="none",
        padding=[1, 0, 1, 1]))
    out.append(modern(
        "backward_one_head_numeric_scale",
        "Backward: one head, scale: 2.5, W_O 3 x 4 and all biases",
        2204, n=3, d_model=4, H=1, d_k=3, scale=2.5))

    def sinusoidal(doc):
        doc["positional"] = Bare("sinusoidal")

    out.append(modern(
        "backward_positional_sinusoidal_causal",
        "Backward: sinusoidal positional encodings (a constant: grad_inputs is the gradient "
        "of X + P), two heads, causal",
        2205, doc_edit=sinusoidal, n=4, d_model=4, H=2, d_k=2, mask="causal",
        forward_note="positional = sinusoidal as the PyTorch tutorial's PositionalEncoding "
                     "(div_term = exp(arange(0, d, 2) * -log(10000) / d), sin on even and cos on "
                     "odd columns), encoded = X + P, then (with X + P for X) "))

    def p_matrix(doc):
        torch.manual_seed(2206 + 60000)
        doc["positional"] = lists(round2(0.5 * torch.randn(len(doc["inputs"]), 3)))

    out.append(modern(
        "backward_positional_matrix",
        "Backward: positional given as a matrix P, one head with W_O, grad_output: ones",
        2206, doc_edit=p_matrix, grad_output="ones", n=3, d_model=3, H=1, d_k=3,
        forward_note="positional = the matrix P in the YAML, encoded = X + P, then (with X + P "
                     "for X) "))

    def saturate(doc):
        doc["inputs"][1] = [12.0 * x for x in doc["inputs"][1]]

    case = modern(
        "backward_saturated_softmax",
        "Backward: token 2 scaled by 12, so its own score dominates: a saturated row of weights "
        "(exactly 1 and 0) passes no gradient to its scores",
        2207, doc_edit=saturate, n=4, d_model=4, H=1, d_k=4,
        forward_note="inputs are randn with row 2 multiplied by 12; ")
    A = case["steps"]["weights"][0]
    saturated = [i for i in range(4) if float(A[i].max()) == 1.0]
    moderate = [i for i in range(4) if float(A[i].max()) < 0.99]
    assert saturated and moderate, (A, saturated, moderate)
    for i in saturated:
        # A = 1 on the diagonal and below 1e-40 elsewhere: the row's gradient vanishes
        assert bool((case["steps"]["grad_scaled_scores"][0][i].abs() < 1e-30).all())
    out.append(case)
    return out


def cases_heads_list():
    """heads: [...] with d_v != d_k and a bias on every head."""
    name = "backward_heads_list_dv_differs"
    seed = 2301
    gen.seeded(seed)
    n, d_model, H, d_k, d_v = 3, 5, 2, 2, 3
    X = gen.randn(n, d_model)
    bound = math.sqrt(3.0 / d_model)
    heads = []
    for _ in range(H):
        item = {"query": lists(gen.uniform(d_model, d_k, bound=bound)),
                "key": lists(gen.uniform(d_model, d_k, bound=bound)),
                "value": lists(gen.uniform(d_model, d_v, bound=bound))}
        item["bias"] = {"query": lists(gen.uniform(d_k, bound=0.5)),
                        "key": lists(gen.uniform(d_k, bound=0.5)),
                        "value": lists(gen.uniform(d_v, bound=0.5))}
        heads.append(item)
    W_O = gen.uniform(H * d_v, 4, bound=math.sqrt(3.0 / (H * d_v)))
    b_O = gen.uniform(4, bound=0.5)
    doc = {"title": "Backward: two heads as a list (d_k 2, d_v 3), query/key/value biases on "
                    "both heads, W_O 6 x 4 and its bias, causal: grad_w_* and grad_b_* per head",
           "inputs": lists(X), "heads": heads,
           "weights": {"output": lists(W_O)}, "bias": {"output": lists(b_O)},
           "mask": Bare("causal"),
           "grad_output": grad_output_matrix(seed + 50000, n, 4)}
    forward = ("forward: every step from batched torch ops (as generate.modern_reference) on the "
               "heads' weights concatenated column-wise (torch.cat) into one x_w matrix per "
               "projection; ")
    return [build_case(name, doc, forward, seed)]


def cases_modern():
    """EXAMPLE FILES in man/qkv.1.in with the backward pass."""
    out = []
    out.append(modern(
        "backward_rope_half_one_head",
        "Backward: RoPE (rope: true: style half), one head of d_k 4, no biases: grad_queries "
        "and grad_keys are taken back through the rotation",
        2401, n=4, d_model=4, H=1, d_k=4, rope=True, bias=(),
        tokens=["the", "cat", "sat", "down"]))
    out.append(modern(
        "backward_rope_interleaved_two_heads",
        "Backward: RoPE style interleaved with base 100, two heads of d_k 4, all biases, W_O",
        2402, n=4, d_model=6, H=2, d_k=4, rope={"base": 100, "style": "interleaved"}))
    out.append(modern(
        "backward_rope_partial_gqa_causal",
        "Backward: RoPE turning the first 2 of d_k 4 (partial_rotary_factor 0.5), style half, four "
        "heads over two key/value heads, causal: the elements that did not turn pass their gradient "
        "back unchanged",
        2413, n=4, d_model=6, H=4, G=2, d_k=4, rope={"partial_rotary_factor": 0.5}, mask="causal"))
    out.append(modern(
        "backward_softcap_gqa_causal",
        "Backward: soft-capping at 1 (Gemma 2), RoPE, ALiBi, four heads over two key/value heads, causal: "
        "grad_capped_scores is the softmax's gradient, and grad_scaled_scores it times 1 - tanh^2(s/c)",
        2414, n=5, d_model=8, H=4, G=2, d_k=4, rope=True, alibi=True, mask="causal", softcap=1.0))
    q_gamma, k_gamma = gen.norm_gammas(2415, (4, 4), 1.0, 0.2)
    out.append(modern(
        "backward_qk_norm_gqa_causal",
        "Backward: QK-norm over each head (gamma given, eps the default 1e-6), RoPE, four heads over two "
        "key/value heads, causal: grad_normed_queries and grad_normed_keys are turned back through RoPE, "
        "grad_queries and grad_keys taken back through the norm, grad_q_norm and grad_k_norm sum every "
        "head and token",
        2415, n=4, d_model=8, H=4, G=2, d_k=4, rope=True, mask="causal",
        qk_norm={"query": q_gamma, "key": k_gamma}))
    q_gamma, k_gamma = gen.norm_gammas(2416, (8, 4), 0.0, 0.3)
    out.append(modern(
        "backward_qk_norm_all_offset",
        "Backward: QK-norm over: all with offset 1 (times 1 + gamma), gamma of H*d_k 8 and G*d_k 4, "
        "eps 1e-5, two heads over one key/value head, no RoPE, causal: the norm's gradient mixes a "
        "token's heads",
        2416, n=4, d_model=6, H=2, G=1, d_k=4, mask="causal",
        qk_norm={"over": "all", "query": q_gamma, "key": k_gamma, "offset": 1, "eps": 1e-5}))
    case = modern(
        "backward_rope_scaling_yarn",
        "Backward: RoPE scaling yarn (factor 4, original_max_position_embeddings 1024, the default attention "
        "factor 0.1 ln 4 + 1), style half, d_k 6 (pair 1 extrapolated, pair 2 half and half, pair 3 "
        "interpolated), four heads over two key/value heads, causal: grad_queries and grad_keys are the "
        "rotated ones' gradients times the attention factor, turned back",
        2417, n=4, d_model=6, H=4, G=2, d_k=6, mask="causal",
        rope={"scaling": {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 1024}})
    spec = gen.rope_scaling_spec(yaml.safe_load(gen.yaml_text(case["doc"]))["rope"], 6, 4)
    assert spec["ramp"] == [0.0, 0.5, 1.0] and spec["attention_factor"] == 0.1 * math.log(4.0) + 1.0, spec
    out.append(case)
    out.append(modern(
        "backward_gqa_four_heads_two_kv_heads",
        "Backward: heads 4, kv_heads 2, all biases, W_O: grad_keys and grad_values sum the "
        "two query heads of each key/value head",
        2403, n=4, d_model=8, H=4, G=2, d_k=2))
    out.append(modern(
        "backward_gqa_multi_query",
        "Backward: multi-query attention (heads 4, kv_heads 1), d_k 2 and d_v 3, all biases, "
        "W_O 12 x 5",
        2404, n=3, d_model=5, H=4, G=1, d_k=2, d_v=3, d_out=5))
    out.append(modern(
        "backward_alibi_causal",
        "Backward: ALiBi (alibi: true) with a causal mask, four heads: the bias has no "
        "parameters, grad_scaled_scores is also the gradient of biased_scores",
        2405, n=5, d_model=8, H=4, d_k=2, alibi=True, mask="causal"))
    out.append(modern(
        "backward_window",
        "Backward: sliding window {window: 2} over 5 tokens, two heads: 0 outside the window",
        2406, n=5, d_model=4, H=2, d_k=2, mask={"window": 2}))
    out.append(modern(
        "backward_sinks_causal",
        "Backward: attention sinks [0.5, -1] with a causal mask, two heads (the sink's column "
        "has no gradient)",
        2407, n=4, d_model=4, H=2, d_k=2, mask="causal", sinks=[0.5, -1.0]))
    out.append(modern(
        "backward_sinks_blocked_rows",
        "Backward: sinks [0.7, -0.2] with rows blocked whole by the mask and by mask and "
        "padding together: those rows pass no gradient to the scores",
        2409, n=4, d_model=4, H=2, d_k=2, sinks=[0.7, -0.2],
        mask=[[0, 0, 0, 0], [1, 1, 0, 1], [0, 0, 1, 0], [1, 1, 1, 1]], padding=[1, 1, 0, 1]))
    out.append(gpt_oss_case())
    return out


def gpt_oss_case():
    """gpt-oss-like: kv_heads, RoPE, window, sinks; the backward also runs
    through generate.gpt_oss_attention (gpt-oss's own arrangement)."""
    sinks = [0.3, -0.4, 1.2, 0.0]

    def through_gpt_oss(info, steps):
        X = tensor(lists(info["X"])).requires_grad_(True)
        W = {k: v.detach().clone().requires_grad_(True) for k, v in info["W"].items()}
        b = {k: v.detach().clone().requires_grad_(True) for k, v in info["b"].items()}
        W_O = info["W_O"].detach().clone().requires_grad_(True)
        b_O = info["b_O"].detach().clone().requires_grad_(True)
        oss = gen.gpt_oss_attention(X, W, b, 4, 2, W_O, b_O, info["divisor"], 150000.0, 3, sinks)
        (oss["output"] * info["dO"]).sum().backward()
        pairs = [(X.grad, steps["grad_inputs"]), (W_O.grad, steps["grad_w_output"]),
                 (b_O.grad[None], steps["grad_b_output"])]
        pairs += [(W[k].grad, steps["grad_w_" + k]) for k in NAMES]
        pairs += [(b[k].grad[None], steps["grad_b_" + k]) for k in NAMES]
        for a, e in pairs:
            assert gen.close(a, e), "gpt-oss arrangement's gradients differ"
        return ("the parameter and input gradients also computed by backward through gpt-oss's "
                "own arrangement (RoPE on torch.chunk halves, queries (tokens, G, H / G, d), "
                "-inf triu/tril masks, einsum, sinks concatenated and dropped), agreeing to "
                "1e-12; ")

    name = "backward_sinks_window_gqa_gpt_oss"
    seed = 2408
    base = gen.modern_case(
        name, "Backward, gpt-oss style: heads 4, kv_heads 2, RoPE base 150000, window 3, "
              "sinks, biases, W_O", seed,
        n=6, d_model=8, H=4, G=2, d_k=4, rope={"base": 150000}, mask={"window": 3}, sinks=sinks)
    doc = dict(base["doc"])
    doc["grad_output"] = grad_output_matrix(seed + 50000, 6, 8)
    return build_case(name, doc, "forward: " + base["provenance"][: -len(VERSIONS)], seed,
                      modern_steps=base["steps"], extra_check=through_gpt_oss)


def main():
    os.makedirs(CASES_DIR, exist_ok=True)
    cases = cases_module() + cases_plain() + cases_heads_list() + cases_modern()
    names = [c["name"] for c in cases]
    assert len(names) == len(set(names)) and all(n.startswith("backward_") for n in names)
    for case in cases:
        kept = write_case(case)
        note = "" if not kept else f" (committed digits kept: this run differs by {kept:.1e})"
        print(f"{case['name']}: {case['heads']} head(s), {case['kv_heads']} key/value head(s), "
              f"{len(case['written'])} steps, {case['fd_checked']} finite differences{note}")
    print(f"{len(cases)} backward cases written to {CASES_DIR}")


if __name__ == "__main__":
    main()
