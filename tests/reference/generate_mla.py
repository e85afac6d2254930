#!/usr/bin/python3
"""Independent reference values for qkv's multi-head latent attention (`mla:`,
DeepSeek-V2/V3), computed with PyTorch in float64.

Run from anywhere with Debian's Python (it has torch and numpy):

    /usr/bin/python3 tests/reference/generate_mla.py

For every case NAME (all named mla_*) it writes, next to this script,

    cases/NAME.yaml           a qkv input file with an `mla:` key and `grad_output:`
    cases/NAME.expected.json  every forward step that exists for it, then every
                              backward step that exists for it (README.md)
    cases/NAME.decode.json    for a case that decodes (causal or a window, no padding):
                              DeepSeek's absorbed decoding, token by token (deepseek_decode)

The YAML and JSON number writers, the keep-the-digits-within-1e-14 rule
(KEEP_TOLERANCE), the versions line, the comparison rule and transformers'
RoPE frequency functions (_compute_default_rope_parameters,
_compute_yarn_parameters, through rope_settings / rope_config) come from
generate.py (imported, not copied).

How the values are made: a transcription of transformers' DeepseekV3Attention
(models/deepseek_v3/modeling_deepseek_v3.py: DeepseekV3RMSNorm,
DeepseekV3RotaryEmbedding.forward, apply_rotary_pos_emb /
apply_rotary_pos_emb_interleave, yarn_get_mscale, eager_attention_forward),
tensor op for tensor op, on batched (batch = 1, heads, tokens, d) tensors, in
float64 where upstream casts to float32. The weights are the state dict's
(out x in) tensors, used through torch.nn.functional.linear as nn.Linear does.

How the gradients are made: X and every state-dict tensor (the two RMSNorm weights
too) are leaf tensors with requires_grad=True; the same transcription runs with
retain_grad() on every intermediate whose gradient is a step (hf_attention's `kept`),
k_rot expanded to every head before RoPE so that each head's key (and its share of the
rope key's gradient) is a tensor of its own; L = (output * dO).sum(), L.backward().

Self-checks, before anything is written (a failing check stops the script):
  * DeepSeek's own inference code (deepseek-ai/DeepSeek-V3 inference/model.py:
    precompute_freqs_cis, apply_rotary_emb, RMSNorm, MLA.forward) transcribed
    with attn_impl "naive" and "absorb" (without the distributed and fp8 parts)
    must give the same raw scores, weights, head outputs and output;
  * Hugging Face's interleaved RoPE, re-interleaved, must equal DeepSeek's
    view_as_complex rotation;
  * a third implementation reads the YAML text back with PyYAML and computes
    every step one head at a time with the plain formulas: RMSNorm row by row
    with math.sqrt, RoPE pair by pair on the last d_r elements (generate.py's
    rotate_pairs, frequencies from generate.py's rope_scaling_spec, math), the
    softmax written out with math.exp; it must agree with every written step and
    list the same steps;
  * backward: DeepSeek's code (naive and absorb) run with autograd from the same leaves
    (its style-half row permutation done by indexing inside the graph) must give the same
    X.grad and parameter .grad; a second implementation with the explicit formulas from
    the YAML text alone (direct_backward_from_yaml) must give every backward step and list
    the same steps; central finite differences of L (generate_backward.py's step and
    tolerance) for a few entries of every backward step (check_finite_differences);
  * the JSON text read back must equal the values in memory exactly;
  * each case must show what it is for (see check_purpose);
  * each decode entry must equal row t of the case's own steps (write_decode).
"""

import copy
import json
import math
import os
import re
import sys
import types

import numpy as np
import torch
import torch.nn.functional as F
import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import generate as gen  # noqa: E402  (conventions, writers, RoPE frequency functions)
import generate_backward as gb  # noqa: E402  (dO, the inverse rotation, finite differences)
from generate import (Bare, Flow, KEEP_TOLERANCE, NEG_INF, TOLERANCE, VERSIONS,  # noqa: E402
                      fmt_number, json_matrix, lists, tensor, yaml_text)

torch.set_default_dtype(torch.float64)

CASES_DIR = gen.CASES_DIR
# Every step an MLA expected file may list, in this order: the forward steps, then the
# backward ones. SINGLE_STEPS are one matrix each; the others one matrix per head.
FORWARD_STEP_IDS = ["q_latent", "normed_q_latent", "kv_latent", "normed_kv_latent", "rope_keys",
                    "queries", "rotated_queries", "keys", "rotated_keys", "values",
                    "scores", "scaled_scores", "masked_scores", "weights", "head_output",
                    "concat", "output"]
BACKWARD_STEP_IDS = ["grad_output", "grad_concat", "grad_head_output", "grad_weights", "grad_scaled_scores",
                     "grad_scores", "grad_queries", "grad_keys", "grad_values",
                     "grad_normed_q_latent", "grad_q_latent", "grad_rope_keys", "grad_normed_kv_latent",
                     "grad_kv_latent", "grad_q_a_layernorm", "grad_kv_a_layernorm",
                     "grad_w_query", "grad_w_key", "grad_w_value", "grad_w_q_a", "grad_w_kv_a",
                     "grad_w_output", "grad_inputs"]
MLA_STEP_IDS = FORWARD_STEP_IDS + BACKWARD_STEP_IDS
SINGLE_STEPS = ("q_latent", "normed_q_latent", "kv_latent", "normed_kv_latent", "rope_keys",
                "concat", "output",
                "grad_output", "grad_concat", "grad_normed_q_latent", "grad_q_latent", "grad_rope_keys",
                "grad_normed_kv_latent", "grad_kv_latent", "grad_q_a_layernorm", "grad_kv_a_layernorm",
                "grad_w_query", "grad_w_key", "grad_w_value", "grad_w_q_a", "grad_w_kv_a",
                "grad_w_output", "grad_inputs")
YAML_ORDER = ["title", "inputs", "heads", "mla", "rope", "norm_eps", "layout", "weights",
              "mask", "padding", "grad_output"]
WEIGHT_ORDER = ["q_proj", "q_a_proj", "q_a_layernorm", "q_b_proj", "kv_a_proj_with_mqa",
                "kv_a_layernorm", "kv_b_proj", "o_proj"]
# DeepSeek's ModelArgs defaults for the yarn branch (configs/config_671B.json agrees)
DEEPSEEK_ORIGINAL_SEQ_LEN = 4096


# ---------------------------------------------------------------------------
# transformers' DeepseekV3Attention, transcribed (float64, no cache, eager path)
# ---------------------------------------------------------------------------

def hf_deepseek_v3_rmsnorm(hidden_states, weight, variance_epsilon):
    """DeepseekV3RMSNorm.forward (float64 throughout: upstream's .to(torch.float32) and
    .to(input_dtype) left out)."""
    variance = hidden_states.pow(2).mean(-1, keepdim=True)
    hidden_states = hidden_states * torch.rsqrt(variance + variance_epsilon)
    return weight * hidden_states


def hf_rotary_embedding(inv_freq, attention_scaling, position_ids):
    """DeepseekV3RotaryEmbedding.forward: (cos, sin), each (batch, tokens, d_r)."""
    inv_freq_expanded = inv_freq[None, :, None].to(torch.float64).expand(position_ids.shape[0], -1, 1)
    position_ids_expanded = position_ids[:, None, :].to(torch.float64)
    freqs = (inv_freq_expanded @ position_ids_expanded).transpose(1, 2)
    emb = torch.cat((freqs, freqs), dim=-1)
    cos = emb.cos() * attention_scaling
    sin = emb.sin() * attention_scaling
    return cos, sin


def hf_rotate_half(x):
    """rotate_half of modeling_deepseek_v3.py."""
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def hf_apply_rotary_pos_emb(q, k, cos, sin, unsqueeze_dim=1):
    cos = cos.unsqueeze(unsqueeze_dim)
    sin = sin.unsqueeze(unsqueeze_dim)
    q_embed = (q * cos) + (hf_rotate_half(q) * sin)
    k_embed = (k * cos) + (hf_rotate_half(k) * sin)
    return q_embed, k_embed


def hf_apply_rotary_pos_emb_interleave(q, k, cos, sin, unsqueeze_dim=1):
    """apply_rotary_pos_emb_interleave: q and k de-interleaved ([evens, odds]) first, so its
    output is in that order."""
    cos = cos.unsqueeze(unsqueeze_dim)
    sin = sin.unsqueeze(unsqueeze_dim)

    b, h, s, d = q.shape
    q = q.view(b, h, s, d // 2, 2).transpose(4, 3).reshape(b, h, s, d)

    b, h, s, d = k.shape
    k = k.view(b, h, s, d // 2, 2).transpose(4, 3).reshape(b, h, s, d)

    q_embed = (q * cos) + (hf_rotate_half(q) * sin)
    k_embed = (k * cos) + (hf_rotate_half(k) * sin)
    return q_embed, k_embed


def reinterleave(x):
    """The inverse of apply_rotary_pos_emb_interleave's permutation: [evens, odds] back
    to (x0, x1, x2, ...) so that a rotated step keeps the unrotated element order."""
    b, h, s, d = x.shape
    return x.view(b, h, s, 2, d // 2).transpose(4, 3).reshape(b, h, s, d)


def yarn_get_mscale(scale=1, mscale=1):
    if scale <= 1:
        return 1.0
    return 0.1 * mscale * math.log(scale) + 1.0


def hf_scaling(rope_scaling, qk_head_dim):
    """DeepseekV3Attention.__init__'s self.scaling (a multiplier)."""
    scaling = qk_head_dim ** (-0.5)
    if rope_scaling is not None:
        mscale_all_dim = rope_scaling.get("mscale_all_dim", 0)
        scaling_factor = rope_scaling["factor"]
        if mscale_all_dim:
            mscale = yarn_get_mscale(scaling_factor, mscale_all_dim)
            scaling = scaling * mscale * mscale
    return scaling


def hf_inv_freq(model):
    """inv_freq and attention_scaling as DeepseekV3RotaryEmbedding.__init__ gets them:
    ROPE_INIT_FUNCTIONS[rope_type](config) with config.head_dim = qk_rope_head_dim
    (DeepseekV3Config sets head_dim to it): _compute_default_rope_parameters, or
    _compute_yarn_parameters through generate.rope_reference."""
    rope, d_r = model["rope"], model["d_r"]
    if rope.get("scaling") is None:
        config = types.SimpleNamespace(rope_theta=float(rope.get("base", 10000)), partial_rotary_factor=1.0,
                                       head_dim=d_r, hidden_size=d_r, num_attention_heads=1)
        inv_freq, attention_scaling = gen.hf_compute_default_rope_parameters(config)
        return inv_freq, float(attention_scaling)
    ref = gen.rope_reference(dict(rope), d_r, model["n"])
    return ref["inv_freq"], ref["attention_scaling"]


def hf_attention(model, kept=None):
    """DeepseekV3Attention.forward with the eager attention interface, batch 1, every
    intermediate kept: returns the steps (per head lists, latent matrices) and the
    rotated queries/keys as HF holds them (de-interleaved for style interleaved).

    kept: None, or a dict for the backward (model["X"] and model["sd"] leaves with
    requires_grad): every tensor whose gradient is a step gets retain_grad() and is put
    in kept under its step's name; and k_rot, viewed (batch, 1, n, d_r), is expanded to
    every head BEFORE RoPE, the key [k_pass, k_rot] formed per head (kept["keys"], in the
    unrotated element order), split again and turned per head, so that each head's share
    of the rope key's gradient is a tensor of its own. Upstream turns k_rot once and
    expands it after; the same elementwise ops on the same numbers, so the same values
    (mla_case checks them equal)."""
    sd, m = model["sd"], model
    H, r, d_r, d_n, d_v = m["H"], m["r"], m["d_r"], m["d_n"], m["d_v"]
    qk_head_dim = d_n + d_r
    eps = m["eps"]
    hidden_states = m["X"][None]                                     # (1, n, d_model)
    batch_size, seq_length = hidden_states.shape[:-1]
    query_shape = (batch_size, seq_length, -1, qk_head_dim)
    key_shape = (batch_size, seq_length, -1, d_n + d_v)
    steps = {}

    def keep(name, t):
        if kept is not None:
            t.retain_grad()
            kept[name] = t
        return t

    if m["q_rank"] is None:
        q_states = F.linear(hidden_states, sd["q_proj"])
    else:
        q_latent = keep("q_latent", F.linear(hidden_states, sd["q_a_proj"]))          # q_a_proj
        normed_q_latent = keep("normed_q_latent", hf_deepseek_v3_rmsnorm(q_latent, sd["q_a_layernorm"], eps))
        q_states = F.linear(normed_q_latent, sd["q_b_proj"])
        steps["q_latent"], steps["normed_q_latent"] = q_latent[0], normed_q_latent[0]
    q_states = keep("queries", q_states.view(query_shape).transpose(1, 2))   # (1, H, n, d_n + d_r)
    q_pass, q_rot = torch.split(q_states, [d_n, d_r], dim=-1)

    compressed_kv = F.linear(hidden_states, sd["kv_a_proj_with_mqa"])
    k_pass, k_rot = torch.split(compressed_kv, [r, d_r], dim=-1)
    keep("kv_latent", k_pass)
    keep("rope_keys", k_rot)
    steps["kv_latent"], steps["rope_keys"] = k_pass[0], k_rot[0]
    normed_kv_latent = keep("normed_kv_latent", hf_deepseek_v3_rmsnorm(k_pass, sd["kv_a_layernorm"], eps))
    steps["normed_kv_latent"] = normed_kv_latent[0]

    k_pass = F.linear(normed_kv_latent, sd["kv_b_proj"]).view(key_shape).transpose(1, 2)
    k_pass, value_states = torch.split(k_pass, [d_n, d_v], dim=-1)
    keep("values", value_states)

    k_rot = k_rot.view(batch_size, 1, seq_length, d_r)
    # the keys before RoPE, for the `keys` step (upstream never forms them)
    keys = torch.cat((k_pass, k_rot.expand(*k_pass.shape[:-1], -1)), dim=-1)
    if kept is not None:
        # the backward's per-head keys: the expansion before RoPE, the rotation per head
        keep("keys", keys)
        k_pass, k_rot = torch.split(keys, [d_n, d_r], dim=-1)

    position_ids = torch.arange(seq_length)[None]
    inv_freq, attention_scaling = hf_inv_freq(m)
    cos, sin = hf_rotary_embedding(inv_freq, attention_scaling, position_ids)
    interleave = m["style"] == "interleaved"
    if interleave:  # config.rope_interleave
        q_rot, k_rot = hf_apply_rotary_pos_emb_interleave(q_rot, k_rot, cos, sin)
    else:
        q_rot, k_rot = hf_apply_rotary_pos_emb(q_rot, k_rot, cos, sin)
    k_rot = k_rot.expand(*k_pass.shape[:-1], -1)

    query_states = torch.cat((q_pass, q_rot), dim=-1)
    key_states = torch.cat((k_pass, k_rot), dim=-1)

    # eager_attention_forward (num_key_value_groups 1: repeat_kv returns the states as they are);
    # the matmul and "* scaling" of one upstream line are two steps here
    scaling = hf_scaling(m["rope"].get("scaling"), qk_head_dim)
    scores = keep("scores", torch.matmul(query_states, key_states.transpose(2, 3)))
    attn_weights = keep("scaled_scores", scores * scaling)
    scaled = attn_weights
    if m["attention_mask"] is not None:
        causal_mask = m["attention_mask"][:, :, :, : key_states.shape[-2]]
        attn_weights = attn_weights + causal_mask
    masked = attn_weights
    attn_weights = torch.nn.functional.softmax(attn_weights, dim=-1, dtype=torch.float64).to(query_states.dtype)
    keep("weights", attn_weights)
    attn_output = keep("head_output", torch.matmul(attn_weights, value_states))
    head_output = attn_output
    attn_output = attn_output.transpose(1, 2).contiguous()

    attn_output = attn_output.reshape(batch_size, seq_length, -1).contiguous()
    concat = attn_output[0]
    if "o_proj" in sd:
        keep("concat", attn_output)
        attn_output = F.linear(attn_output, sd["o_proj"])

    re = reinterleave if interleave else (lambda t: t)
    rotated_queries = torch.cat((q_pass, re(q_rot)), dim=-1)
    rotated_keys = torch.cat((k_pass, re(k_rot)), dim=-1)
    steps.update({
        "queries": list(q_states[0]), "rotated_queries": list(rotated_queries[0]),
        "keys": list(keys[0]), "rotated_keys": list(rotated_keys[0]),
        "values": list(value_states[0]),
        "scores": list(scores[0]), "scaled_scores": list(scaled[0]),
        "weights": list(attn_weights[0]), "head_output": list(head_output[0])})
    if m["attention_mask"] is not None:
        steps["masked_scores"] = list(masked[0])
    if H > 1:
        steps["concat"] = concat
    steps["output"] = attn_output[0]
    return steps, {"scaling": scaling, "inv_freq": inv_freq, "attention_scaling": attention_scaling,
                   "q_rot": q_rot[0], "k_rot": k_rot[0, 0]}


def as_layout(t, layout):
    """A state dict tensor's gradient (out x in) in the file's layout: x_w in x out."""
    return (t if layout == "pytorch" else t.T).contiguous().clone()


def hf_backward(model, dO, layout):
    """The backward steps: X and every state dict tensor as leaves with requires_grad=True,
    hf_attention with kept (retain_grad), L = (output * dO).sum(), L.backward(). Returns the
    backward steps, the forward steps of this run (detached) and the leaves' .grad
    ({"X": ..., state dict name: ...})."""
    m = model
    H, d_n, d_v = m["H"], m["d_n"], m["d_v"]
    X = m["X"].detach().clone().requires_grad_(True)
    sd = {key: value.detach().clone().requires_grad_(True) for key, value in m["sd"].items()}
    kept = {}
    steps, _ = hf_attention(dict(m, X=X, sd=sd), kept)
    L = (steps["output"] * dO).sum()
    L.backward()

    def grad(name):                                 # (1, ...) -> without the batch
        return kept[name].grad.detach()[0].clone()

    out = {"grad_output": dO.clone()}
    if "o_proj" in sd and H > 1:
        out["grad_concat"] = grad("concat")
    for step, name in (("grad_head_output", "head_output"), ("grad_weights", "weights"),
                       ("grad_scaled_scores", "scaled_scores"), ("grad_scores", "scores"),
                       ("grad_queries", "queries"), ("grad_keys", "keys"), ("grad_values", "values")):
        out[step] = [g.clone() for g in grad(name)]
    if m["q_rank"] is not None:
        out["grad_normed_q_latent"] = grad("normed_q_latent")
        out["grad_q_latent"] = grad("q_latent")
    out["grad_rope_keys"] = grad("rope_keys")
    out["grad_normed_kv_latent"] = grad("normed_kv_latent")
    out["grad_kv_latent"] = grad("kv_latent")
    if m["q_rank"] is not None:
        out["grad_q_a_layernorm"] = sd["q_a_layernorm"].grad.detach()[None].clone()
    out["grad_kv_a_layernorm"] = sd["kv_a_layernorm"].grad.detach()[None].clone()
    out["grad_w_query"] = as_layout(sd["q_proj" if m["q_rank"] is None else "q_b_proj"].grad.detach(), layout)
    block = d_n + d_v
    kv_b = sd["kv_b_proj"].grad.detach()
    out["grad_w_key"] = as_layout(torch.cat([kv_b[h * block:h * block + d_n] for h in range(H)]), layout)
    out["grad_w_value"] = as_layout(torch.cat([kv_b[h * block + d_n:(h + 1) * block] for h in range(H)]), layout)
    if m["q_rank"] is not None:
        out["grad_w_q_a"] = as_layout(sd["q_a_proj"].grad.detach(), layout)
    out["grad_w_kv_a"] = as_layout(sd["kv_a_proj_with_mqa"].grad.detach(), layout)
    if "o_proj" in sd:
        out["grad_w_output"] = as_layout(sd["o_proj"].grad.detach(), layout)
    out["grad_inputs"] = X.grad.detach().clone()

    forward = {key: ([t.detach().clone() for t in value] if isinstance(value, list) else value.detach().clone())
               for key, value in steps.items()}
    leaves = {"X": X.grad.detach().clone()} | {key: value.grad.detach().clone() for key, value in sd.items()}
    return out, forward, leaves


def deepseek_backward(model, dO, impl):
    """DeepSeek's MLA.forward (deepseek_mla) run with autograd from fresh leaves X and state
    dict: deepseek_state_dict's row permutation (style half) is indexing inside the graph, so
    the gradients come back to the unpermuted tensors. Returns {"X": X.grad, name: .grad}."""
    X = model["X"].detach().clone().requires_grad_(True)
    sd = {key: value.detach().clone().requires_grad_(True) for key, value in model["sd"].items()}
    ds = deepseek_mla(dict(model, X=X, sd=sd), impl)
    (ds["output"] * dO).sum().backward()
    return {"X": X.grad.detach().clone()} | {key: value.grad.detach().clone() for key, value in sd.items()}


# ---------------------------------------------------------------------------
# DeepSeek's inference/model.py, transcribed (float64; world_size 1, no fp8)
# ---------------------------------------------------------------------------

def deepseek_rms_norm(x, weight, eps):
    """RMSNorm.forward = F.rms_norm(x, (dim,), weight, eps); torch 1.13 has no F.rms_norm,
    so its definition: x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight."""
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight


def deepseek_precompute_freqs_cis(args):
    """precompute_freqs_cis(args), float64 for torch.float32."""
    dim = args.qk_rope_head_dim
    seqlen = args.max_seq_len
    beta_fast = args.beta_fast
    beta_slow = args.beta_slow
    base = args.rope_theta
    factor = args.rope_factor

    def find_correction_dim(num_rotations, dim, base, max_seq_len):
        return dim * math.log(max_seq_len / (num_rotations * 2 * math.pi)) / (2 * math.log(base))

    def find_correction_range(low_rot, high_rot, dim, base, max_seq_len):
        low = math.floor(find_correction_dim(low_rot, dim, base, max_seq_len))
        high = math.ceil(find_correction_dim(high_rot, dim, base, max_seq_len))
        return max(low, 0), min(high, dim-1)

    def linear_ramp_factor(min, max, dim):
        if min == max:
            max += 0.001
        linear_func = (torch.arange(dim, dtype=torch.float64) - min) / (max - min)
        ramp_func = torch.clamp(linear_func, 0, 1)
        return ramp_func

    freqs = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.float64) / dim))
    if seqlen > args.original_seq_len:
        low, high = find_correction_range(beta_fast, beta_slow, dim, base, args.original_seq_len)
        smooth = 1 - linear_ramp_factor(low, high, dim // 2)
        freqs = freqs / factor * (1 - smooth) + freqs * smooth

    t = torch.arange(seqlen)
    freqs = torch.outer(t, freqs)
    freqs_cis = torch.polar(torch.ones_like(freqs), freqs)
    return freqs_cis


def deepseek_apply_rotary_emb(x, freqs_cis):
    """apply_rotary_emb in float64: upstream's x.float() is a fresh (contiguous) float32 copy
    of the bf16 tensor, here a contiguous float64 copy, so complex128."""
    dtype = x.dtype
    x = torch.view_as_complex(x.clone(memory_format=torch.contiguous_format).view(*x.shape[:-1], -1, 2))
    freqs_cis = freqs_cis.view(1, x.size(1), 1, x.size(-1))
    y = torch.view_as_real(x * freqs_cis).flatten(3)
    return y.to(dtype)


def deepseek_args(model):
    """ModelArgs for a case: the yarn branch (max_seq_len > original_seq_len) exactly when
    rope.scaling is DeepSeek's yarn, whose numbers it takes; otherwise max_seq_len 16."""
    m = model
    scaling = m["rope"].get("scaling")
    args = types.SimpleNamespace(
        dim=m["d_model"], n_heads=m["H"], q_lora_rank=0 if m["q_rank"] is None else m["q_rank"],
        kv_lora_rank=m["r"], qk_nope_head_dim=m["d_n"], qk_rope_head_dim=m["d_r"], v_head_dim=m["d_v"],
        original_seq_len=DEEPSEEK_ORIGINAL_SEQ_LEN, rope_theta=float(m["rope"].get("base", 10000)),
        rope_factor=40, beta_fast=32, beta_slow=1, mscale=1., max_seq_len=16)
    if scaling is not None:
        assert scaling.get("type", scaling.get("rope_type")) == "yarn"
        args.original_seq_len = scaling["original_max_position_embeddings"]
        args.rope_factor = scaling["factor"]
        args.beta_fast, args.beta_slow = scaling["beta_fast"], scaling["beta_slow"]
        # DeepSeek's softmax_scale reads args.mscale where transformers reads mscale_all_dim;
        # its freqs_cis has modulus 1, transformers' attention factor is
        # mscale / mscale_all_dim: the same numbers only when both are equal
        assert scaling["mscale"] == scaling["mscale_all_dim"]
        args.mscale = scaling["mscale_all_dim"]
        args.max_seq_len = 4096 * 4
        assert args.max_seq_len > args.original_seq_len
    assert m["n"] <= args.max_seq_len
    return args


def deepseek_softmax_scale(args):
    """MLA.__init__'s softmax_scale: qk_head_dim ** -0.5, times mscale ** 2 in the yarn branch."""
    softmax_scale = (args.qk_nope_head_dim + args.qk_rope_head_dim) ** -0.5
    if args.max_seq_len > args.original_seq_len:
        mscale = 0.1 * args.mscale * math.log(args.rope_factor) + 1.0
        softmax_scale = softmax_scale * mscale * mscale
    return softmax_scale


def deepseek_state_dict(model):
    """The case's state dict as DeepSeek's code reads it, with the permutation of the rope
    elements and its inverse. DeepSeek's apply_rotary_emb turns pairs (2k, 2k + 1) only. For
    style half (pairs (k, k + d_r/2)) the rope rows of the weights are put in the order
    [0, d_r/2, 1, d_r/2 + 1, ...] first (the row permutation that converts such checkpoints
    between the two styles), and the rotated q_pe and k_pe are put back after (back); the
    scores do not depend on the order."""
    m, sd = model, model["sd"]
    d_n, d_r = m["d_n"], m["d_r"]
    perm = list(range(d_r))
    if m["style"] == "half":
        perm = [k // 2 + (k % 2) * (d_r // 2) for k in range(d_r)]
        sd = dict(sd)
        qk = d_n + d_r
        q_name = "q_proj" if m["q_rank"] is None else "q_b_proj"
        rows = [h * qk + (j if j < d_n else d_n + perm[j - d_n]) for h in range(m["H"]) for j in range(qk)]
        sd[q_name] = sd[q_name][rows]
        sd["kv_a_proj_with_mqa"] = sd["kv_a_proj_with_mqa"][list(range(m["r"])) + [m["r"] + p for p in perm]]
    back = sorted(range(d_r), key=lambda j: perm[j])        # back[perm[j]] = j
    return sd, perm, back


def deepseek_mla(model, attn_impl):
    """MLA.forward(x, start_pos=0, freqs_cis, mask) for attn_impl "naive" or "absorb".
    Returns raw scores (bsht without * softmax_scale), weights, head outputs (before wo),
    the output, softmax_scale and the rotated q_pe, k_pe."""
    m = model
    args = deepseek_args(m)
    sd, perm, back = deepseek_state_dict(m)
    freqs_cis_all = deepseek_precompute_freqs_cis(args)
    x = m["X"][None]
    bsz, seqlen, _ = x.size()
    start_pos = 0
    end_pos = start_pos + seqlen
    freqs_cis = freqs_cis_all[start_pos:start_pos + seqlen]      # Transformer.forward
    n_local_heads = args.n_heads
    qk_nope_head_dim, qk_rope_head_dim = args.qk_nope_head_dim, args.qk_rope_head_dim
    qk_head_dim = qk_nope_head_dim + qk_rope_head_dim
    v_head_dim, kv_lora_rank = args.v_head_dim, args.kv_lora_rank
    softmax_scale = deepseek_softmax_scale(args)

    # the caches of MLA.__init__ (max_batch_size 1)
    if attn_impl == "naive":
        k_cache = torch.zeros(1, args.max_seq_len, n_local_heads, qk_head_dim)
        v_cache = torch.zeros(1, args.max_seq_len, n_local_heads, v_head_dim)
    else:
        kv_cache = torch.zeros(1, args.max_seq_len, kv_lora_rank)
        pe_cache = torch.zeros(1, args.max_seq_len, qk_rope_head_dim)

    if args.q_lora_rank == 0:
        q = F.linear(x, sd["q_proj"])                                       # wq
    else:
        q = F.linear(deepseek_rms_norm(F.linear(x, sd["q_a_proj"]), sd["q_a_layernorm"], m["eps"]),
                     sd["q_b_proj"])                                        # wq_b(q_norm(wq_a(x)))
    q = q.view(bsz, seqlen, n_local_heads, qk_head_dim)
    q_nope, q_pe = torch.split(q, [qk_nope_head_dim, qk_rope_head_dim], dim=-1)
    q_pe = deepseek_apply_rotary_emb(q_pe, freqs_cis)
    kv = F.linear(x, sd["kv_a_proj_with_mqa"])                              # wkv_a
    kv, k_pe = torch.split(kv, [kv_lora_rank, qk_rope_head_dim], dim=-1)
    k_pe = deepseek_apply_rotary_emb(k_pe.unsqueeze(2), freqs_cis)
    if attn_impl == "naive":
        q = torch.cat([q_nope, q_pe], dim=-1)
        kv = F.linear(deepseek_rms_norm(kv, sd["kv_a_layernorm"], m["eps"]), sd["kv_b_proj"])   # wkv_b(kv_norm(kv))
        kv = kv.view(bsz, seqlen, n_local_heads, qk_nope_head_dim + v_head_dim)
        k_nope, v = torch.split(kv, [qk_nope_head_dim, v_head_dim], dim=-1)
        k = torch.cat([k_nope, k_pe.expand(-1, -1, n_local_heads, -1)], dim=-1)
        k_cache[:bsz, start_pos:end_pos] = k
        v_cache[:bsz, start_pos:end_pos] = v
        raw = torch.einsum("bshd,bthd->bsht", q, k_cache[:bsz, :end_pos])
        scores = raw * softmax_scale
    else:
        wkv_b = sd["kv_b_proj"]                                              # wkv_b.weight (scale None)
        wkv_b = wkv_b.view(n_local_heads, -1, kv_lora_rank)
        q_nope = torch.einsum("bshd,hdc->bshc", q_nope, wkv_b[:, :qk_nope_head_dim])
        kv_cache[:bsz, start_pos:end_pos] = deepseek_rms_norm(kv, sd["kv_a_layernorm"], m["eps"])
        pe_cache[:bsz, start_pos:end_pos] = k_pe.squeeze(2)
        raw = (torch.einsum("bshc,btc->bsht", q_nope, kv_cache[:bsz, :end_pos]) +
               torch.einsum("bshr,btr->bsht", q_pe, pe_cache[:bsz, :end_pos]))
        scores = raw * softmax_scale
    mask = m["deepseek_mask"]
    if mask is not None:
        scores += mask.unsqueeze(1)
    scores = scores.softmax(dim=-1, dtype=torch.float64).type_as(x)
    if attn_impl == "naive":
        x = torch.einsum("bsht,bthd->bshd", scores, v_cache[:bsz, :end_pos])
    else:
        x = torch.einsum("bsht,btc->bshc", scores, kv_cache[:bsz, :end_pos])
        x = torch.einsum("bshc,hdc->bshd", x, wkv_b[:, -v_head_dim:])
    head_output = x
    flat = x.flatten(2)
    out = F.linear(flat, sd["o_proj"]) if "o_proj" in sd else flat   # wo(x.flatten(2))
    return {"scores": list(raw[0].permute(1, 0, 2)), "weights": list(scores[0].permute(1, 0, 2)),
            "head_output": list(head_output[0].permute(1, 0, 2)), "output": out[0],
            "softmax_scale": softmax_scale, "q_pe": q_pe[0].permute(1, 0, 2)[..., back],
            "k_pe": k_pe[0, :, 0][..., back], "perm": perm}


def deepseek_decode(model):
    """Transformer.forward's decoding loop for one layer: MLA.forward(x[:, t - 1:t],
    start_pos = t - 1, freqs_cis[t - 1:t], mask = None) for t = 1 … n with attn_impl "absorb",
    its kv_cache and pe_cache kept from call to call. Returns one entry per (t, head) as qkv's
    `run --decode -f json` writes it: the positions read, the cache rows, the absorbed query
    [q_nope·W_UK^T, q_pe], the scores the softmax reads (raw · softmax_scale), the weights,
    the weighted latents and the head output. A window (mask: {window: W}) is not in DeepSeek's
    code: the keys more than W - 1 back get -inf before the softmax, as flash-attn's
    window_size = (W - 1, 0)."""
    m = model
    args = deepseek_args(m)
    sd, _, back = deepseek_state_dict(m)
    freqs_cis_all = deepseek_precompute_freqs_cis(args)
    n_local_heads = args.n_heads
    qk_nope_head_dim, qk_rope_head_dim = args.qk_nope_head_dim, args.qk_rope_head_dim
    qk_head_dim = qk_nope_head_dim + qk_rope_head_dim
    v_head_dim, kv_lora_rank = args.v_head_dim, args.kv_lora_rank
    softmax_scale = deepseek_softmax_scale(args)
    kv_cache = torch.zeros(1, args.max_seq_len, kv_lora_rank)
    pe_cache = torch.zeros(1, args.max_seq_len, qk_rope_head_dim)
    window = m["window"]
    entries = []
    for t in range(1, m["n"] + 1):
        start_pos, end_pos = t - 1, t
        x = m["X"][None, t - 1:t]
        bsz, seqlen, _ = x.size()
        freqs_cis = freqs_cis_all[start_pos:end_pos]
        if args.q_lora_rank == 0:
            q = F.linear(x, sd["q_proj"])
        else:
            q = F.linear(deepseek_rms_norm(F.linear(x, sd["q_a_proj"]), sd["q_a_layernorm"], m["eps"]),
                         sd["q_b_proj"])
        q = q.view(bsz, seqlen, n_local_heads, qk_head_dim)
        q_nope, q_pe = torch.split(q, [qk_nope_head_dim, qk_rope_head_dim], dim=-1)
        q_pe = deepseek_apply_rotary_emb(q_pe, freqs_cis)
        kv = F.linear(x, sd["kv_a_proj_with_mqa"])
        kv, k_pe = torch.split(kv, [kv_lora_rank, qk_rope_head_dim], dim=-1)
        k_pe = deepseek_apply_rotary_emb(k_pe.unsqueeze(2), freqs_cis)
        wkv_b = sd["kv_b_proj"].view(n_local_heads, -1, kv_lora_rank)
        q_nope = torch.einsum("bshd,hdc->bshc", q_nope, wkv_b[:, :qk_nope_head_dim])
        kv_cache[:bsz, start_pos:end_pos] = deepseek_rms_norm(kv, sd["kv_a_layernorm"], m["eps"])
        pe_cache[:bsz, start_pos:end_pos] = k_pe.squeeze(2)
        raw = (torch.einsum("bshc,btc->bsht", q_nope, kv_cache[:bsz, :end_pos]) +
               torch.einsum("bshr,btr->bsht", q_pe, pe_cache[:bsz, :end_pos])) * softmax_scale
        scores = raw.clone()
        first = 1 if window is None else max(1, t - window + 1)
        if first > 1:
            scores[..., :first - 1] = float("-inf")
        scores = scores.softmax(dim=-1, dtype=torch.float64).type_as(x)
        latent_output = torch.einsum("bsht,btc->bshc", scores, kv_cache[:bsz, :end_pos])
        head_output = torch.einsum("bshc,hdc->bshd", latent_output, wkv_b[:, -v_head_dim:])
        kept = slice(first - 1, t)
        for h in range(n_local_heads):
            entries.append({
                "t": t, "head": h + 1, "positions": list(range(first, t + 1)),
                "cache_latent": kv_cache[0, kept], "cache_rope_keys": pe_cache[0, kept][:, back],
                "query": torch.cat((q_nope[0, 0, h], q_pe[0, 0, h][back])),
                "scores": raw[0, 0, h, kept], "weights": scores[0, 0, h, kept],
                "latent_output": latent_output[0, 0, h], "head_output": head_output[0, 0, h]})
    return entries, softmax_scale


DECODE_KEYS = ["cache_latent", "cache_rope_keys", "query", "scores", "weights", "latent_output", "head_output"]


def decode_text(case, entries):
    """NAME.decode.json: DeepSeek's absorbed decoding of the case, every number written as
    generate.py writes them (json_matrix), one entry a line per key."""
    m = case["model"]
    lines = ["{", f' "case": {json.dumps(case["name"])},',
             f' "provenance": {json.dumps(case["decode_provenance"])},',
             f' "cache": {{"bytes_per_token": {(m["r"] + m["d_r"]) * 8}, '
             f'"bytes_per_token_unabsorbed": {m["H"] * (m["d_n"] + m["d_r"] + m["d_v"]) * 8}}},',
             ' "decode": [']
    for k, entry in enumerate(entries):
        parts = [f'"t": {entry["t"]}', f'"head": {entry["head"]}', f'"positions": {json.dumps(entry["positions"])}']
        for key in DECODE_KEYS:
            value = entry[key].tolist()
            rows = value if entry[key].dim() == 2 else [value]
            text = ", ".join("[" + ", ".join(gen.json_cell(x) for x in row) + "]" for row in rows)
            parts.append(f'"{key}": ' + (f"[{text}]" if entry[key].dim() == 2 else text))
        lines.append("  {" + ",\n   ".join(parts) + "}" + ("," if k + 1 < len(entries) else ""))
    lines += [" ]", "}"]
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------
# A third implementation: from the YAML text alone, one head at a time
# ---------------------------------------------------------------------------

def rms_norm_rows(M, gamma, eps, no_norm=False):
    """x' = x / sqrt(mean(x^2) + eps) * gamma, row by row with math.sqrt."""
    if no_norm:
        return M
    out = []
    for row in M.tolist():
        rms = math.sqrt(sum(v * v for v in row) / len(row) + eps)
        out.append([v / rms * g for v, g in zip(row, gamma)])
    return tensor(out)


def softmax_written_out(row):
    """exp(x_j - max) / sum_k exp(x_k - max) with math.exp; -inf cells give 0."""
    top = max(v for v in row if v != NEG_INF)
    e = [0.0 if v == NEG_INF else math.exp(v - top) for v in row]
    total = sum(e)
    return [v / total for v in e]


def direct_from_yaml(doc, no_norm=False, perturb=None, inside=None):
    """Every step of an mla file (README.md), from the parsed YAML only. no_norm: the latent
    RMSNorms left out (only to show that they matter). perturb = (backward step id, head,
    i, j, delta) adds delta to that forward value (the tensor whose gradient the step is),
    for the finite differences of the intermediate steps. inside: None, or a dict that
    receives what the backward formulas read (X, the weights in x out, the gammas, eps, the
    rope settings, the divisor, the kept cells)."""
    def bump(step, h, M):
        if perturb is not None and perturb[0] == step and perturb[1] == h:
            M = M.clone()
            M[perturb[2], perturb[3]] += perturb[4]
        return M

    X = tensor(doc["inputs"])
    n, d_model = X.shape
    H = doc.get("heads", 1)
    mla = doc["mla"]
    r, d_r, d_n, d_v = mla["kv_rank"], mla["rope_dim"], mla["nope_dim"], mla["v_dim"]
    r_q = mla.get("q_rank")
    rope = doc["rope"]
    eps = float(doc.get("norm_eps", 1e-6))
    pytorch = doc.get("layout", "x_w") == "pytorch"
    w = doc["weights"]
    W = {}

    def weight(name, rows, cols):                        # -> in x out
        M = tensor(w[name])
        M = M.T if pytorch else M
        assert M.shape == (rows, cols), (name, tuple(M.shape), (rows, cols))
        W[name] = M
        return M

    def gamma(name, width):
        g = [float(v) for v in w.get(name, [1.0] * width)]
        assert len(g) == width, name
        return g

    steps = {}
    qk = d_n + d_r
    if r_q is None:
        assert "q_a_proj" not in w and "q_b_proj" not in w
        Q_all = X @ weight("q_proj", d_model, H * qk)
    else:
        assert "q_proj" not in w
        steps["q_latent"] = bump("grad_q_latent", 0, X @ weight("q_a_proj", d_model, r_q))
        steps["normed_q_latent"] = bump("grad_normed_q_latent", 0, rms_norm_rows(
            steps["q_latent"], gamma("q_a_layernorm", r_q), eps, no_norm))
        Q_all = steps["normed_q_latent"] @ weight("q_b_proj", r_q, H * qk)
    A = X @ weight("kv_a_proj_with_mqa", d_model, r + d_r)
    steps["kv_latent"] = bump("grad_kv_latent", 0, A[:, :r])
    steps["rope_keys"] = bump("grad_rope_keys", 0, A[:, r:])
    steps["normed_kv_latent"] = bump("grad_normed_kv_latent", 0, rms_norm_rows(
        steps["kv_latent"], gamma("kv_a_layernorm", r), eps, no_norm))
    B = steps["normed_kv_latent"] @ weight("kv_b_proj", r, H * (d_n + d_v))

    # RoPE over d_r, with rope.scaling's frequencies and attention factor (math, pair by pair)
    spec = gen.rope_scaling_spec(rope, d_r, n)
    base, style = float(rope.get("base", 10000)), rope.get("style", "half")

    def turn(M):                                        # only the last d_r columns turn
        turned = gen.rotate_pairs(M[:, d_n:], base, style, 1.0, spec["inv_freq"], spec["attention_factor"])
        return torch.cat((M[:, :d_n], turned), dim=1)

    scaling = rope.get("scaling") or {}
    mscale = 1.0
    if scaling.get("mscale_all_dim") and float(scaling["factor"]) > 1:
        mscale = 0.1 * float(scaling["mscale_all_dim"]) * math.log(float(scaling["factor"])) + 1.0
    divisor = math.sqrt(qk) / (mscale * mscale)

    keep = [[True] * n for _ in range(n)]
    mask = doc.get("mask")
    if mask == "causal":
        keep = [[j <= i for j in range(n)] for i in range(n)]
    elif isinstance(mask, dict):
        keep = [[0 <= i - j < mask["window"] for j in range(n)] for i in range(n)]
    elif mask is not None:
        keep = [[v != 0 for v in row] for row in mask]
    if "padding" in doc:
        keep = [[k and doc["padding"][j] != 0 for j, k in enumerate(row)] for row in keep]
    masked = mask is not None or "padding" in doc

    for name in ("queries", "rotated_queries", "keys", "rotated_keys", "values", "scores",
                 "scaled_scores", "masked_scores", "weights", "head_output"):
        steps[name] = []
    for h in range(H):
        q = bump("grad_queries", h, Q_all[:, h * qk:(h + 1) * qk])
        block = B[:, h * (d_n + d_v):(h + 1) * (d_n + d_v)]
        k = bump("grad_keys", h, torch.cat((block[:, :d_n], steps["rope_keys"]), dim=1))
        v = bump("grad_values", h, block[:, d_n:])
        q_turned, k_turned = turn(q), turn(k)
        S = tensor([[sum(a * b for a, b in zip(qi, kj)) for kj in k_turned.tolist()] for qi in q_turned.tolist()])
        S = bump("grad_scores", h, S)
        scaled = bump("grad_scaled_scores", h, S / divisor)
        x = [[s if keep[i][j] else NEG_INF for j, s in enumerate(row)] for i, row in enumerate(scaled.tolist())]
        Wt = bump("grad_weights", h, tensor([softmax_written_out(row) for row in x]))
        Z = tensor([[sum(Wt[i, j].item() * v[j, c].item() for j in range(n)) for c in range(d_v)]
                    for i in range(n)])
        Z = bump("grad_head_output", h, Z)
        for name, value in (("queries", q), ("rotated_queries", q_turned), ("keys", k),
                            ("rotated_keys", k_turned), ("values", v), ("scores", S),
                            ("scaled_scores", scaled), ("masked_scores", tensor(x)),
                            ("weights", Wt), ("head_output", Z)):
            steps[name].append(value)
    if not masked:
        del steps["masked_scores"]
    concat = bump("grad_concat", 0, torch.cat(steps["head_output"], dim=1))
    if H > 1:
        steps["concat"] = concat
    steps["output"] = concat @ weight("o_proj", H * d_v, w_cols(w, pytorch)) if "o_proj" in w else concat
    if inside is not None:
        inside.update({
            "X": X, "W": W, "concat": concat, "eps": eps, "pytorch": pytorch, "keep": torch.tensor(keep),
            "gamma": {name: tensor(gamma(name, width)) for name, width in
                      (("q_a_layernorm", r_q), ("kv_a_layernorm", r)) if width is not None},
            "rope": (base, style, spec["inv_freq"], spec["attention_factor"]), "divisor": divisor,
            "sizes": (n, d_model, H, r, d_r, d_n, d_v, r_q)})
    return steps, divisor, H


def grad_output_from_yaml(doc, n, d_out):
    """dO as the YAML gives it: a matrix, or `ones`."""
    if doc["grad_output"] == "ones":
        return torch.ones(n, d_out)
    dO = tensor(doc["grad_output"])
    assert dO.shape == (n, d_out), ("grad_output", tuple(dO.shape), (n, d_out))
    return dO


def rms_norm_backward(x, dy, gamma, eps):
    """The RMSNorm's backward, row by row: r = 1/sqrt(mean(x^2) + eps), u = gamma o dy,
    dx = r u - x r^3 mean(x o u); dgamma = the sum over rows of dy o x r."""
    r = 1.0 / torch.sqrt((x * x).mean(dim=1, keepdim=True) + eps)
    u = dy * gamma
    dx = r * u - x * r ** 3 * (x * u).mean(dim=1, keepdim=True)
    return dx, (dy * x * r).sum(dim=0)


def direct_backward_from_yaml(doc):
    """Every backward step of an mla file with the explicit formulas, from the parsed YAML
    only (the forward from direct_from_yaml): dZ = dO W_O^T's head columns; dA = dZ V^T;
    dS' = A o (dA - rowsum(dA o A)); dS = dS' / scale; dQ_rot = dS K_rot, dK_rot = dS^T Q_rot;
    RoPE back on the last d_r elements (generate_backward.np_rotate with sign -1: the inverse
    rotation, times the attention factor); dV = A^T dZ; dK_R = sum_h dK_h[:, d_n:];
    dC = sum_h (dK_h[:, :d_n] W_UK,h^T + dV_h W_UV,h^T); the RMSNorms' backward; the weights'
    gradients source^T dY in x_w, transposed for layout pytorch; dX through the projections.
    Returns the backward steps and the forward ones."""
    inside = {}
    f, divisor, _ = direct_from_yaml(doc, inside=inside)
    n, d_model, H, r, d_r, d_n, d_v, r_q = inside["sizes"]
    W, X, keep = inside["W"], inside["X"], inside["keep"]
    base, style, inv_freq, factor = inside["rope"]
    qk = d_n + d_r
    d_out = f["output"].shape[1]
    dO = grad_output_from_yaml(doc, n, d_out)

    def turn_back(M):                                   # the last d_r columns turned back
        back = gb.np_rotate(M[:, d_n:].numpy(), base, style, -1, 1.0, inv_freq, factor)
        return torch.cat((M[:, :d_n], torch.from_numpy(back)), dim=1)

    out = {"grad_output": dO}
    if "o_proj" in W:
        dcat = dO @ W["o_proj"].T
        if H > 1:
            out["grad_concat"] = dcat
    else:
        dcat = dO
    names = ("grad_head_output", "grad_weights", "grad_scaled_scores", "grad_scores",
             "grad_queries", "grad_keys", "grad_values")
    for name in names:
        out[name] = []
    W_kvb = W["kv_b_proj"]                               # r x H (d_n + d_v)
    dC = torch.zeros(n, r)
    dK_R = torch.zeros(n, d_r)
    for h in range(H):
        A, V = f["weights"][h], f["values"][h]
        dZ = dcat[:, h * d_v:(h + 1) * d_v]
        dA = dZ @ V.T
        dx = A * (dA - (dA * A).sum(dim=1, keepdim=True))
        dx = dx.masked_fill(~keep, 0.0)
        dS = dx / divisor
        dQ = turn_back(dS @ f["rotated_keys"][h])
        dK = turn_back(dS.T @ f["rotated_queries"][h])
        dV = A.T @ dZ
        for name, value in zip(names, (dZ, dA, dx, dS, dQ, dK, dV)):
            out[name].append(value)
        block = W_kvb[:, h * (d_n + d_v):(h + 1) * (d_n + d_v)]
        dK_R = dK_R + dK[:, d_n:]
        dC = dC + dK[:, :d_n] @ block[:, :d_n].T + dV @ block[:, d_n:].T
    dQ_all = torch.cat(out["grad_queries"], dim=1)       # n x H (d_n + d_r)
    as_written = (lambda t: t.T) if inside["pytorch"] else (lambda t: t)
    if r_q is None:
        dX = dQ_all @ W["q_proj"].T
        dW_query = X.T @ dQ_all
    else:
        dCq = dQ_all @ W["q_b_proj"].T
        dW_query = f["normed_q_latent"].T @ dQ_all
        dq_latent, dgamma_q = rms_norm_backward(f["q_latent"], dCq, inside["gamma"]["q_a_layernorm"], inside["eps"])
        out["grad_normed_q_latent"], out["grad_q_latent"] = dCq, dq_latent
        dX = dq_latent @ W["q_a_proj"].T
    out["grad_rope_keys"] = dK_R
    dkv_latent, dgamma_kv = rms_norm_backward(f["kv_latent"], dC, inside["gamma"]["kv_a_layernorm"], inside["eps"])
    out["grad_normed_kv_latent"], out["grad_kv_latent"] = dC, dkv_latent
    if r_q is not None:
        out["grad_q_a_layernorm"] = dgamma_q[None]
    out["grad_kv_a_layernorm"] = dgamma_kv[None]
    out["grad_w_query"] = as_written(dW_query)
    out["grad_w_key"] = as_written(f["normed_kv_latent"].T @ torch.cat([d[:, :d_n] for d in out["grad_keys"]], dim=1))
    out["grad_w_value"] = as_written(f["normed_kv_latent"].T @ torch.cat(out["grad_values"], dim=1))
    dA_kv = torch.cat((dkv_latent, dK_R), dim=1)        # the gradient of X W_kva
    if r_q is not None:
        out["grad_w_q_a"] = as_written(X.T @ dq_latent)
    out["grad_w_kv_a"] = as_written(X.T @ dA_kv)
    if "o_proj" in W:
        out["grad_w_output"] = as_written(inside["concat"].T @ dO)
    out["grad_inputs"] = dX + dA_kv @ W["kv_a_proj_with_mqa"].T
    assert dQ_all.shape == (n, H * qk)
    return out, f


def yaml_loss(doc, perturb=None):
    """L = (output * dO).sum() from the YAML alone (direct_from_yaml), perturbed or not."""
    steps, _, _ = direct_from_yaml(doc, perturb=perturb)
    dO = grad_output_from_yaml(doc, *steps["output"].shape)
    return float((steps["output"] * dO).sum())


def yaml_entry(doc, step, i, j):
    """The YAML numbers whose derivative a parameter or input step's entry (i, j) is:
    (path, row or None, column), in the file's own layout. grad_w_key and grad_w_value are
    head blocks of kv_b_proj's rows (pytorch) or columns (x_w)."""
    mla, pytorch = doc["mla"], doc.get("layout", "x_w") == "pytorch"
    d_n, d_v = mla["nope_dim"], mla["v_dim"]
    block = d_n + d_v
    direct = {"grad_inputs": ("inputs",), "grad_w_query": ("weights", "q_proj" if "q_rank" not in mla else "q_b_proj"),
              "grad_w_q_a": ("weights", "q_a_proj"), "grad_w_kv_a": ("weights", "kv_a_proj_with_mqa"),
              "grad_w_output": ("weights", "o_proj")}
    if step in direct:
        return direct[step], i, j
    if step in ("grad_q_a_layernorm", "grad_kv_a_layernorm"):
        assert i == 0
        return ("weights", step[len("grad_"):]), None, j
    if step in ("grad_w_key", "grad_w_value"):
        width, offset = (d_n, 0) if step == "grad_w_key" else (d_v, d_n)
        if pytorch:
            return ("weights", "kv_b_proj"), (i // width) * block + offset + i % width, j
        return ("weights", "kv_b_proj"), i, (j // width) * block + offset + j % width
    return None


def check_finite_differences(name, doc, steps, written, seed):
    """Central differences of L (generate_backward's FD_STEP and FD_TOLERANCE) for a few
    entries of every backward step (generate_backward.fd_entries: the largest and a random
    one; a blocked cell of grad_scaled_scores and grad_scores; for grad_keys the largest of
    its rope part too): the YAML's own numbers for weights, gammas and inputs, a perturbation
    inside the forward for the intermediate steps. Returns (entries checked, the largest
    |difference|, the largest relative difference)."""
    rng = np.random.default_rng(seed)
    checked, largest, relative = 0, 0.0, 0.0
    d_n = doc["mla"]["nope_dim"]
    blocked = None
    for step in written:
        if not step.startswith("grad_") or step == "grad_output":
            continue
        value = steps[step]
        mats = [value] if step in SINGLE_STEPS else value
        for h, G in enumerate(mats):
            G = G.numpy()
            extra = []
            if step in ("grad_scaled_scores", "grad_scores"):
                if blocked is None:
                    inside = {}
                    direct_from_yaml(doc, inside=inside)
                    blocked = np.argwhere(~inside["keep"].numpy())
                if len(blocked):
                    extra = [(int(blocked[0][0]), int(blocked[0][1]))]
            if step == "grad_keys":
                rope_part = np.abs(G[:, d_n:])
                idx = np.unravel_index(int(np.argmax(rope_part)), rope_part.shape)
                extra = [(int(idx[0]), int(idx[1]) + d_n)]
            for i, j in gb.fd_entries(G, rng, extra):
                entry = yaml_entry(doc, step, i, j)
                if entry is not None:
                    path, row, col = entry

                    def loss(delta):
                        d = copy.deepcopy(doc)
                        node = d
                        for key in path:
                            node = node[key]
                        if row is None:
                            node[col] += delta
                        else:
                            node[row][col] += delta
                        return yaml_loss(d)
                else:
                    def loss(delta):
                        return yaml_loss(doc, (step, h, i, j, delta))
                fd = (loss(gb.FD_STEP) - loss(-gb.FD_STEP)) / (2 * gb.FD_STEP)
                g = float(G[i, j])
                assert abs(fd - g) <= gb.FD_TOLERANCE * max(1.0, abs(g)), \
                    f"{name}: finite difference of {step}[{i},{j}] matrix {h + 1}: {fd} vs {g}"
                largest = max(largest, abs(fd - g))
                relative = max(relative, abs(fd - g) / max(1.0, abs(g)))
                checked += 1
    return checked, largest, relative


def w_cols(w, pytorch):
    """d_out: the o_proj's output width as written."""
    M = tensor(w["o_proj"])
    return M.shape[0] if pytorch else M.shape[1]


# ---------------------------------------------------------------------------
# Comparing and writing
# ---------------------------------------------------------------------------

def pairs_of(a, b, step):
    return [(a[step], b[step])] if step in SINGLE_STEPS else list(zip(a[step], b[step]))


def compare_steps(expected, actual, what, step_ids, tolerance=TOLERANCE):
    """generate.close (|a - b| <= tol * max(1, |a|, |b|), -inf only with -inf) on every
    matrix; returns the largest absolute difference over the finite cells."""
    worst = 0.0
    for step in step_ids:
        if step not in SINGLE_STEPS:
            assert len(expected[step]) == len(actual[step]), (what, step, "head count")
        for h, (e, a) in enumerate(pairs_of(expected, actual, step)):
            e, a = torch.as_tensor(e), torch.as_tensor(a)
            assert gen.close(e, a, tolerance), f"{what}: {step} (matrix {h + 1}) differs\n{e}\n{a}"
            finite = e != NEG_INF
            worst = max(worst, float((e[finite] - a[finite]).abs().max()))
    return worst


def json_text_mla(case):
    """The expected file, as generate.json_text writes the other cases, with the
    latent steps one matrix each."""
    return gen.json_text(case, SINGLE_STEPS)


def steps_from_json(parsed, step_ids):
    out = {}
    for step in step_ids:
        value = parsed["steps"][step]
        out[step] = (gen.from_json_matrix(value) if step in SINGLE_STEPS
                     else [gen.from_json_matrix(m) for m in value])
    return out


def keep_committed_digits(case, json_path):
    """generate.py's rule, for a step list that may have grown: an expected file already
    there whose steps are this run's steps, or some of them in the same order (the forward
    steps of a file written before the backward ones), and whose values agree with this
    run's to KEEP_TOLERANCE keeps its digits for those steps; steps it does not hold are
    written as computed. Returns the largest difference kept, or None."""
    if not os.path.exists(json_path):
        return None
    with open(json_path, encoding="utf-8") as f:
        old = json.load(f)
    old_steps = list(old["steps"])
    written = case["written"]
    if (old.get("case") != case["name"] or not set(old_steps) <= set(written)
            or old_steps != [s for s in written if s in old_steps]):
        return None
    committed = steps_from_json(old, old_steps)
    try:
        largest = compare_steps(committed, case["steps"], "committed", old_steps, KEEP_TOLERANCE)
    except AssertionError:
        return None
    for step in old_steps:
        case["steps"][step] = committed[step]
    return largest


def write_case(case):
    name = case["name"]
    yaml_path = os.path.join(CASES_DIR, name + ".yaml")
    json_path = os.path.join(CASES_DIR, name + ".expected.json")
    doc = case["doc"]
    assert set(doc) <= set(YAML_ORDER), set(doc) - set(YAML_ORDER)
    text = yaml_text({key: doc[key] for key in YAML_ORDER if key in doc})
    written = case["written"]
    assert written == [s for s in MLA_STEP_IDS if s in written], (name, "step order")
    forward = [s for s in written if s in FORWARD_STEP_IDS]
    backward = [s for s in written if s in BACKWARD_STEP_IDS]
    assert written == forward + backward, (name, "forward steps first")
    for step in written:
        if step not in SINGLE_STEPS:
            assert len(case["steps"][step]) == case["heads"], (name, step, "one matrix per head")

    # the third implementation, from the YAML text alone: the forward one head at a time,
    # the backward with the explicit formulas
    parsed_doc = yaml.safe_load(text)
    steps, divisor, H = direct_from_yaml(parsed_doc)
    formulas, _ = direct_backward_from_yaml(parsed_doc)
    assert not set(formulas) & set(steps), name
    steps.update(formulas)
    assert set(steps) == set(written), (name, set(steps) ^ set(written))
    case["direct_difference"] = compare_steps(case["steps"], steps, f"{name}: YAML recomputed", forward)
    case["formulas_difference"] = compare_steps(case["steps"], steps, f"{name}: autograd vs explicit formulas",
                                                backward)
    assert abs(divisor - case["scale"]) <= 1e-15 * divisor and H == case["heads"], name
    case["fd"] = check_finite_differences(name, parsed_doc, case["steps"], written, case["seed"])

    kept = keep_committed_digits(case, json_path)
    expected = json_text_mla(case)
    parsed = json.loads(expected)
    assert parsed["heads"] == case["heads"] and parsed["kv_heads"] == case["kv_heads"], name
    assert parsed["scale"] == case["scale"] and list(parsed["steps"]) == written, name
    compare_steps(case["steps"], steps_from_json(parsed, written), f"{name}: JSON read back", written, 0.0)
    for step in written:
        for a, b in pairs_of(case["steps"], steps_from_json(parsed, written), step):
            assert torch.equal(a, b), (name, step, "JSON read back")
    for step in backward:
        # numbers only: no "-inf" in a gradient
        assert "inf" not in json.dumps(parsed["steps"][step]), (name, step)
    assert not re.search(r"-0\.0(?![0-9e])", expected), (name, "-0.0 written")

    with open(yaml_path, "w", encoding="utf-8") as f:
        f.write(text)
    with open(json_path, "w", encoding="utf-8") as f:
        f.write(expected)
    return kept


# ---------------------------------------------------------------------------
# The cases
# ---------------------------------------------------------------------------

def blocked_cells(n, mask, padding):
    """n x n boolean, True = blocked (generate.blocked_cells: triu for causal, flash-attn's
    window_size = (W - 1, 0), matrix == 0, padding == 0 over the keys), or None."""
    return gen.blocked_cells(n, n, mask, padding)


def mla_case(name, title, seed, *, n, d_model, H, r, d_r, d_n, d_v, rope, q_rank=None,
             norm_eps=None, layout="x_w", mask=None, padding=None, o_proj=True, grad_output="matrix"):
    """Draw a model (seeded), write it as qkv YAML, compute every step with the
    transformers transcription (the backward with autograd) and check it against
    DeepSeek's two forms. grad_output: "matrix" (randn with seed + 50000, two decimals,
    generate_backward.grad_output_matrix) or "ones"."""
    torch.manual_seed(seed)
    X = torch.randn(n, d_model)
    qk = d_n + d_r

    def linear_weight(out_features, in_features):       # a state dict's (out x in)
        return gen.uniform(out_features, in_features, bound=math.sqrt(3.0 / in_features))

    def norm_weight(width):                              # gamma near 1, not 1
        return 1.0 + gen.uniform(width, bound=0.5)

    sd = {}
    if q_rank is None:
        sd["q_proj"] = linear_weight(H * qk, d_model)
    else:
        sd["q_a_proj"] = linear_weight(q_rank, d_model)
        sd["q_a_layernorm"] = norm_weight(q_rank)
        sd["q_b_proj"] = linear_weight(H * qk, q_rank)
    sd["kv_a_proj_with_mqa"] = linear_weight(r + d_r, d_model)
    sd["kv_a_layernorm"] = norm_weight(r)
    sd["kv_b_proj"] = linear_weight(H * (d_n + d_v), r)
    if o_proj:
        sd["o_proj"] = linear_weight(d_model, H * d_v)
    # dO, drawn after the model (its own seed)
    d_out = d_model if o_proj else H * d_v
    grad_output_value = (Bare("ones") if grad_output == "ones"
                         else gb.grad_output_matrix(seed + 50000, n, d_out))
    dO = torch.ones(n, d_out) if grad_output == "ones" else tensor(grad_output_value)

    blocked = blocked_cells(n, mask, padding)
    attention_mask = deepseek_mask = None
    if blocked is not None:
        additive = torch.zeros(n, n).masked_fill(blocked, NEG_INF)
        attention_mask = additive[None, None]             # (batch, 1, n, n), added to the scores
        deepseek_mask = additive
        if mask == "causal" and padding is None:
            # Transformer.forward's own mask
            deepseek_mask = torch.full((n, n), float("-inf")).triu_(1)
            assert torch.equal(deepseek_mask, additive)
    eps = 1e-6 if norm_eps is None else norm_eps
    model = {"X": X, "sd": sd, "n": n, "d_model": d_model, "H": H, "r": r, "d_r": d_r, "d_n": d_n,
             "d_v": d_v, "q_rank": q_rank, "eps": eps, "rope": dict(rope),
             "style": rope.get("style", "half"), "attention_mask": attention_mask,
             "deepseek_mask": deepseek_mask, "blocked": blocked,
             "window": mask["window"] if isinstance(mask, dict) else None}

    steps, hf = hf_attention(model)
    # the backward: leaves, retain_grad, L.backward(); its forward (k_rot expanded before
    # RoPE) gives the same numbers as upstream's order, exactly
    grads, forward_again, leaf_grads = hf_backward(model, dO, layout)
    assert set(forward_again) == set(steps), name
    for key, value in steps.items():
        for a, b in ([(value, forward_again[key])] if key in SINGLE_STEPS else zip(value, forward_again[key])):
            assert torch.equal(a, b), (name, key, "the backward's forward")
    # grad_rope_keys sums the heads' shares; blocked cells pass no gradient
    share_sum = sum(g[:, d_n:] for g in grads["grad_keys"])
    assert gen.close(share_sum, grads["grad_rope_keys"]), name
    if H > 1:
        assert not gen.close(grads["grad_keys"][0][:, d_n:], grads["grad_rope_keys"], 1e-6), name
    if blocked is not None:
        for g in grads["grad_scaled_scores"] + grads["grad_scores"]:
            assert bool((g[blocked] == 0).all()), (name, "a blocked cell with a gradient")
    steps = steps | grads
    scaling = hf["scaling"]
    scaling_info = rope.get("scaling") or {}
    mscale = (yarn_get_mscale(scaling_info["factor"], scaling_info["mscale_all_dim"])
              if scaling_info.get("mscale_all_dim") else 1.0)
    divisor = math.sqrt(qk) / (mscale * mscale)
    assert abs(divisor * scaling - 1.0) < 1e-15, (divisor, scaling)

    # the YAML
    doc = {"title": title, "inputs": lists(X), "heads": H}
    mla = {"kv_rank": r, "rope_dim": d_r, "nope_dim": d_n, "v_dim": d_v}
    if q_rank is not None:
        mla["q_rank"] = q_rank
    doc["mla"] = Flow(mla)
    doc["rope"], _ = gen.rope_settings(rope, d_r, n)
    if norm_eps is not None:
        doc["norm_eps"] = norm_eps
    if layout == "pytorch":
        doc["layout"] = Bare("pytorch")
    as_written = (lambda t: t) if layout == "pytorch" else (lambda t: t.T)
    doc["weights"] = {key: lists(sd[key] if sd[key].dim() == 1 else as_written(sd[key]))
                      for key in WEIGHT_ORDER if key in sd}
    if mask is not None:
        doc["mask"] = Bare(mask) if isinstance(mask, str) else Flow(mask) if isinstance(mask, dict) else mask
    if padding is not None:
        doc["padding"] = padding
    doc["grad_output"] = grad_output_value

    written = [s for s in MLA_STEP_IDS if s in steps]
    case = {"name": name, "doc": doc, "steps": steps, "scale": divisor, "heads": H, "kv_heads": H,
            "written": written, "model": model, "hf": hf, "seed": seed}

    # DeepSeek's own code, both forms, against the transformers transcription
    check = ["scores", "weights", "head_output", "output"]
    case["deepseek"] = {}
    for impl in ("naive", "absorb"):
        ds = deepseek_mla(model, impl)
        assert abs(ds["softmax_scale"] - scaling) <= 1e-16 * scaling, (impl, ds["softmax_scale"], scaling)
        case["deepseek"][impl] = compare_steps(steps, ds, f"{name}: DeepSeek {impl}", check)
        # its rotated q_pe and k_pe (view_as_complex: pairs (2k, 2k + 1)) are the written rope parts
        rot_q = torch.stack(steps["rotated_queries"])[:, :, d_n:]
        case["deepseek"]["rope_" + impl] = max(
            compare_steps({"q": rot_q}, {"q": ds["q_pe"]}, f"{name}: DeepSeek q_pe", ["q"]),
            compare_steps({"k": steps["rotated_keys"][0][:, d_n:]}, {"k": ds["k_pe"]},
                          f"{name}: DeepSeek k_pe", ["k"]))
        if impl == "naive" and model["style"] == "interleaved":
            # HF's de-interleaved rotation, put back in order, equals DeepSeek's complex product
            hf_back = torch.cat((reinterleave(hf["q_rot"][None])[0], reinterleave(hf["k_rot"][None, None])[0]), 0)
            ds_rot = torch.cat((ds["q_pe"], ds["k_pe"][None]), 0)
            assert gen.close(hf_back, ds_rot), name
            case["deepseek"]["interleave"] = float((hf_back - ds_rot).abs().max())
        # its backward from the same leaves: X.grad and every parameter's .grad
        ds_grads = deepseek_backward(model, dO, impl)
        assert set(ds_grads) == set(leaf_grads), (name, impl)
        worst = 0.0
        for key, g in leaf_grads.items():
            assert gen.close(g, ds_grads[key]), f"{name}: DeepSeek {impl} backward: {key}.grad differs"
            worst = max(worst, float((g - ds_grads[key]).abs().max()))
        case["deepseek"]["backward_" + impl] = worst

    ops = [
        "every step as transformers' DeepseekV3Attention.forward (models/deepseek_v3/modeling_deepseek_v3.py) "
        "computes it, transcribed op for op on (batch 1, heads, tokens, d) tensors, weights the state dict's "
        "(out x in) through torch.nn.functional.linear as nn.Linear, no biases (attention_bias false): ",
        ("q_states = q_proj(hidden_states); " if q_rank is None else
         "q_latent = q_a_proj(hidden_states), normed_q_latent = q_a_layernorm(q_latent), q_states = "
         "q_b_proj(normed_q_latent); "),
        "queries = q_states.view(batch, n, -1, qk_head_dim).transpose(1, 2); q_pass, q_rot = torch.split(q_states, "
        "[qk_nope_head_dim, qk_rope_head_dim], dim=-1); compressed_kv = kv_a_proj_with_mqa(hidden_states); "
        "kv_latent, rope_keys = torch.split(compressed_kv, [kv_lora_rank, qk_rope_head_dim], dim=-1); "
        "normed_kv_latent = kv_a_layernorm(kv_latent); k_pass, values = torch.split(kv_b_proj(normed_kv_latent)"
        ".view(batch, n, -1, qk_nope_head_dim + v_head_dim).transpose(1, 2), [qk_nope_head_dim, v_head_dim], "
        "dim=-1); keys = torch.cat((k_pass, k_rot.expand(...)), dim=-1) before RoPE (upstream never forms it); ",
        f"both norms DeepseekV3RMSNorm (variance = hidden_states.pow(2).mean(-1, keepdim=True), hidden_states * "
        f"torch.rsqrt(variance + variance_epsilon), self.weight * hidden_states) with eps {fmt_number(eps)}, "
        "float64 throughout (upstream casts to float32 inside); ",
        "cos, sin from DeepseekV3RotaryEmbedding.forward over position_ids arange(n) (freqs = (inv_freq_expanded @ "
        "position_ids_expanded).transpose(1, 2), emb = torch.cat((freqs, freqs), dim=-1), cos = emb.cos() * "
        "attention_scaling, sin likewise) with inv_freq over dim = qk_rope_head_dim (DeepseekV3Config's head_dim)"
        + (" from _compute_default_rope_parameters" if not scaling_info else "") + "; ",
        ("rotated_queries and rotated_keys: apply_rotary_pos_emb (q_rot * cos + rotate_half(q_rot) * sin) on the "
         "rope parts, k_rot viewed (batch, 1, n, d_r), then k_rot.expand to every head, query_states = "
         "torch.cat((q_pass, q_rot), dim=-1), key_states likewise; "
         if model["style"] == "half" else
         "rotated_queries and rotated_keys: apply_rotary_pos_emb_interleave (config.rope_interleave: q_rot.view(b, h, "
         "s, d // 2, 2).transpose(4, 3).reshape(b, h, s, d), then q * cos + rotate_half(q) * sin), k_rot viewed "
         "(batch, 1, n, d_r) and expanded to every head; its output is de-interleaved ([evens, odds]), so the "
         "written rope parts are put back in the unrotated element order (view(b, h, s, 2, d // 2).transpose(4, "
         "3)): the pairs are (2k, 2k + 1); the scores are the matmul of upstream's own de-interleaved "
         "query_states and key_states; "),
    ]
    if scaling_info:
        ref = gen.rope_reference(dict(rope), d_r, n)
        ops.append(gen.rope_scaling_provenance(dict(rope), ref, d_r, n))
    ops.append(
        "eager_attention_forward: scores = torch.matmul(query_states, key_states.transpose(2, 3)) (raw), "
        "scaled_scores = scores * scaling with scaling = qk_head_dim ** (-0.5)"
        + (" * mscale * mscale" if scaling_info else "") + f" = {scaling!r}"
        + (f" (mscale = yarn_get_mscale(factor, mscale_all_dim) = {mscale!r})" if scaling_info else "")
        + " (written as the divisor scale = math.sqrt(qk_head_dim)"
        + (" / mscale ** 2" if scaling_info else "") + "); ")
    if blocked is not None:
        what = ("causal (torch.triu(ones, diagonal=1))" if mask == "causal" else
                "a window as flash-attn's window_size = (W - 1, 0) (key j blocked when j > i or j < i - (W - 1))"
                if isinstance(mask, dict) else "the mask matrix == 0" if mask is not None else "")
        if padding is not None:
            what += (" or " if what else "") + "padding == 0 over the keys"
        ops.append(f"masked_scores = scaled_scores + attention_mask, an additive (batch, 1, n, n) mask of 0.0 and "
                   f"-inf where blocked: {what} (transformers' eager masks hold torch.finfo(dtype).min "
                   "instead of -inf, which gives the same weights); ")
    ops.append("weights = nn.functional.softmax(dim=-1, dtype=torch.float64); head_output = torch.matmul(weights, "
               "value_states); concat = head_output.transpose(1, 2).reshape(batch, n, -1); output = "
               + ("o_proj(concat); " if o_proj else "concat (no o_proj); "))
    ops.append(
        "cross-checked against DeepSeek-V3's inference/model.py MLA.forward (attn_impl \"naive\": "
        "k = torch.cat([k_nope, k_pe.expand(-1, -1, n_local_heads, -1)], dim=-1), scores = "
        "torch.einsum(\"bshd,bthd->bsht\", q, k_cache) * softmax_scale; attn_impl \"absorb\": wkv_b.view("
        "n_local_heads, -1, kv_lora_rank), q_nope = torch.einsum(\"bshd,hdc->bshc\", q_nope, wkv_b[:, "
        ":qk_nope_head_dim]), kv_cache = kv_norm(kv), pe_cache = k_pe, scores = (torch.einsum(\"bshc,btc->"
        "bsht\", q_nope, kv_cache) + torch.einsum(\"bshr,btr->bsht\", q_pe, pe_cache)) * softmax_scale, x = "
        "torch.einsum(\"bsht,btc->bshc\", scores, kv_cache), torch.einsum(\"bshc,hdc->bshd\", x, wkv_b[:, "
        "-v_head_dim:]); the same additive -inf mask, scores.softmax(dim=-1); RoPE from its precompute_freqs_cis "
        + ("with original_seq_len 4096, rope_factor 40, beta_fast 32, beta_slow 1, mscale 1.0, max_seq_len 16384 "
           "(its yarn branch and softmax_scale * mscale ** 2) " if scaling_info else
           "with max_seq_len 16 (not above original_seq_len: no yarn, no mscale) ")
        + "and apply_rotary_emb (view_as_complex on pairs (2k, 2k + 1)"
        + ("; for this style half case the rope rows of q_proj / q_b_proj and kv_a_proj_with_mqa are first put "
           "in the order [0, d_r/2, 1, d_r/2 + 1, ...], the row permutation between the two styles, and its "
           "rotated q_pe and k_pe put back after" if model["style"] == "half" else "")
        + "); RMSNorm as F.rms_norm's definition, "
        "x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight (torch 1.13 has no F.rms_norm)): "
        "raw scores, weights, head outputs and output agree to 1e-12 (naive and absorb), its rotated q_pe and k_pe "
        "with the rope parts of rotated_queries and rotated_keys" + (
            " (so Hugging Face's interleaved rotation, put back in order, with DeepSeek's)"
            if model["style"] == "interleaved" else "")
        + "; every step recomputed from the YAML alone one head at a time (RMSNorm with math.sqrt, "
        "RoPE pair by pair on the last d_r elements, the softmax written out) agrees to 1e-12; ")
    ops.append(backward_provenance(model, doc, steps, layout, ref["attention_scaling"] if scaling_info else None))
    case["provenance"] = "".join(ops) + VERSIONS
    return case


def backward_provenance(model, doc, steps, layout, attention_factor):
    """How the backward steps were made and checked."""
    m = model
    q_rank = m["q_rank"] is not None
    leaves = ", ".join(key for key in WEIGHT_ORDER if key in m["sd"])
    kept = []
    if q_rank:
        kept.append("q_latent (grad_q_latent) and normed_q_latent (grad_normed_q_latent)")
    kept += [
        "the latent and k_rot as torch.split gives them from kv_a_proj_with_mqa's output, before the norm and "
        "RoPE (grad_kv_latent, grad_rope_keys)",
        "normed_kv_latent (grad_normed_kv_latent)",
        "q_states viewed (batch, heads, n, qk_head_dim) before RoPE (grad_queries, in q_states' own element order"
        + (": the gradient comes back through apply_rotary_pos_emb_interleave's de-interleaving"
           if m["style"] == "interleaved" else "") + ")",
        "value_states (grad_values)",
        "the raw scores (grad_scores)",
        "scores * scaling (grad_scaled_scores" + (", before the mask: 0.0 where blocked"
                                                  if m["blocked"] is not None else "") + ")",
        "the softmax output (grad_weights)",
        "attn_output before transpose(1, 2) (grad_head_output)"]
    if "grad_concat" in steps:
        kept.append("the concatenation fed to o_proj (grad_concat)")
    params = ["grad_w_query = " + ("q_proj" if not q_rank else "q_b_proj") + ".grad",
              "grad_w_key and grad_w_value = each head's first d_n and last d_v rows of kv_b_proj.grad (head h's "
              "block of d_n + d_v rows) stacked, (H*d_n) x r and (H*d_v) x r"]
    if q_rank:
        params.append("grad_w_q_a = q_a_proj.grad")
    params.append("grad_w_kv_a = kv_a_proj_with_mqa.grad")
    if "o_proj" in m["sd"]:
        params.append("grad_w_output = o_proj.grad")
    norms = "grad_q_a_layernorm and grad_kv_a_layernorm" if q_rank else "grad_kv_a_layernorm"
    factor = ("" if attention_factor is None else
              f", times the attention factor {attention_factor!r}")
    return (
        "backward: L = (output * dO).sum() with dO = grad_output ("
        + ("all ones" if doc["grad_output"] == "ones" else "the YAML's matrix") + "); torch.autograd in float64 "
        f"through the same transcription: X and every state dict tensor ({leaves}) are leaf tensors with "
        "requires_grad=True, L.backward(); retain_grad() on " + ", on ".join(kept) + "; "
        "the keys: upstream turns k_rot, viewed (batch, 1, n, d_r), once and expands it to every head after RoPE; "
        "here it is expanded before: key = torch.cat((k_pass, k_rot.expand(batch, heads, n, d_r)), dim=-1), kept "
        "with retain_grad() (grad_keys: each head's own gradient of [k_nope, k_rope] in the unrotated element "
        "order, its rope part that head's share only, not summed over heads), then split and turned per head: "
        "the same numbers (every forward step exactly equal to those of upstream's order); grad_rope_keys, the .grad of "
        "k_rot, is the sum over heads of grad_keys' rope parts; the parameter and input steps are the leaves' "
        ".grad: " + ", ".join(params)
        + (", as the state dict holds them (out x in) for layout pytorch" if layout == "pytorch"
           else ", transposed for layout x_w (in x out)")
        + f"; {norms} the norm weights' .grad as 1 x width rows; grad_inputs = X.grad; "
        "checked: DeepSeek's MLA.forward (naive and absorb, as above) run backward from the same leaves and dO"
        + (" (the style-half row permutation done by indexing inside the graph, so the gradients come back to "
           "the unpermuted tensors)" if m["style"] == "half" else "")
        + ": X.grad and every parameter's .grad agree to 1e-12; every backward step recomputed from the YAML "
        "alone with the explicit formulas (dZ = the head's columns of "
        + ("dO W_O^T" if "o_proj" in m["sd"] else "dO") + ", dA = dZ V^T, dS' = A o (dA - "
        "rowsum(dA o A)), dS = dS' / scale, dQ_rot = dS K_rot, dK_rot = dS^T Q_rot, RoPE's backward on the last "
        f"d_r elements as the inverse rotation{factor}, dV = A^T dZ, dK_R = sum_h dK_h[:, d_n:], dC = sum_h "
        "(dK_h[:, :d_n] W_UK,h^T + dV_h W_UV,h^T), the RMSNorm's backward dx = r gamma o dy - x r^3 mean(x o "
        "gamma o dy) with r = 1 / sqrt(mean(x^2) + eps) and dgamma = the sum over rows of dy o x r, the weights' "
        "gradients source^T dY mapped to the file's layout, dX through every projection) agrees to 1e-12 and "
        "lists the same steps; central finite differences of L (step 1e-6) for a few entries of every backward "
        "step (the YAML's own numbers for weights, gammas and inputs, a perturbation inside the forward for the "
        "others) agree to 1e-6 relative; ")


def check_purpose(case, purposes):
    """Assert that what the case is for changes its values; returns a short report."""
    m, steps, name = case["model"], case["steps"], case["name"]
    d_n, d_r, H = m["d_n"], m["d_r"], m["H"]
    text = yaml_text({key: case["doc"][key] for key in YAML_ORDER if key in case["doc"]})
    doc = yaml.safe_load(text)
    report = []

    def moved(other_doc, what, no_norm=False):
        other, _, _ = direct_from_yaml(other_doc, no_norm)
        change = max(float((a - b).abs().max()) for a, b in zip(steps["weights"], other["weights"]))
        change = max(change, float((steps["output"] - other["output"]).abs().max()))
        assert change > 1e-6, (name, what, change)
        report.append(f"{what} {change:.2g}")

    # the shared rope key: every head's rotated key ends in the same d_r numbers
    for h in range(H):
        assert torch.equal(steps["rotated_keys"][h][:, d_n:], steps["rotated_keys"][0][:, d_n:]), name
        assert torch.equal(steps["keys"][h][:, d_n:], steps["rope_keys"]), name
        assert torch.equal(steps["rotated_queries"][h][:, :d_n], steps["queries"][h][:, :d_n]), name
    # RoPE on the whole query and key (frequencies over d_n + d_r; with d_n + d_r odd, over its
    # first d_n + d_r - 1 elements) would change the values
    width = (d_n + d_r) // 2 * 2
    spec = gen.rope_scaling_spec(doc["rope"], width, m["n"])
    base, style = float(doc["rope"].get("base", 10000)), doc["rope"].get("style", "half")
    whole = (base, style, width / (d_n + d_r), spec["inv_freq"], spec["attention_factor"])
    whole_change = 0.0
    for h in range(H):
        q = gen.rotate_pairs(steps["queries"][h], *whole)
        k = gen.rotate_pairs(steps["keys"][h], *whole)
        whole_change = max(whole_change, float((q @ k.T - steps["scores"][h]).abs().max()))
    assert whole_change > 1e-6, (name, whole_change)
    report.append(f"RoPE on the whole head {whole_change:.2g} (scores)")
    # the latent norms and their gamma
    for norm in ("kv_a_layernorm", "q_a_layernorm"):
        if norm in doc["weights"]:
            ones = yaml.safe_load(text)
            ones["weights"][norm] = [1.0] * len(ones["weights"][norm])
            moved(ones, f"{norm} gamma = 1")
    moved(yaml.safe_load(text), "latent norms left out", no_norm=True)
    if "mask" in purposes:
        assert m["blocked"] is not None and bool(m["blocked"].any()), name
    for purpose in purposes:
        if purpose == "mscale":
            plain = math.sqrt(d_n + d_r)
            assert case["scale"] < plain / 1.5, (name, case["scale"], plain)
            # the written scores over sqrt(d_n + d_r), masked, through the softmax
            change = 0.0
            for h in range(H):
                x = (steps["scores"][h] / plain).masked_fill(m["blocked"], NEG_INF)
                change = max(change, float((torch.softmax(x, dim=-1) - steps["weights"][h]).abs().max()))
            assert change > 1e-6, (name, change)
            report.append(f"scale sqrt(d_n + d_r) = {plain:.4g} in place of {case['scale']:.4g} {change:.2g} (weights)")
        elif purpose == "yarn":
            other = yaml.safe_load(text)
            del other["rope"]["scaling"]
            other["rope"].pop("max_position_embeddings", None)
            moved(other, "no rope.scaling at all")
            plain_turn = max(float((gen.rotate_pairs(q[:, d_n:], base, style) - t[:, d_n:]).abs().max())
                             for q, t in zip(steps["queries"], steps["rotated_queries"]))
            assert plain_turn > 1e-6, (name, plain_turn)
            report.append(f"unscaled frequencies (same scale) {plain_turn:.2g} (rotated queries)")
            ramp = gen.rope_scaling_spec(doc["rope"], d_r, m["n"])["ramp"]
            assert any(0 < x < 1 for x in ramp), (name, ramp)
            report.append(f"yarn ramp over the d_r/2 pairs {ramp}")
        elif purpose == "style":
            other = yaml.safe_load(text)
            other["rope"]["style"] = "half" if doc["rope"].get("style", "half") == "interleaved" else "interleaved"
            moved(other, f"style {other['rope']['style']} in place of {doc['rope'].get('style', 'half')}")
        elif purpose == "eps":
            other = yaml.safe_load(text)
            del other["norm_eps"]
            moved(other, f"the default norm_eps 1e-6 in place of {fmt_number(doc['norm_eps'])}")
        elif purpose == "window":
            causal_only = torch.triu(torch.ones(m["n"], m["n"], dtype=torch.bool), diagonal=1)
            assert bool((m["blocked"] & ~causal_only).any()), name
            other = yaml.safe_load(text)
            other["mask"] = "causal"
            moved(other, "a causal mask in place of the window")
        elif purpose == "layout":
            other = yaml.safe_load(text)
            del other["layout"]
            try:
                direct_from_yaml(other)
            except AssertionError:
                report.append("read as x_w: a shape error")
            else:
                raise AssertionError(f"{name}: layout x_w reads the pytorch weights")
        elif purpose == "matrix_padding":
            mask = torch.tensor(doc["mask"]) != 0
            assert bool(torch.triu(mask, diagonal=1).any()), (name, "the matrix lets a query see a later key")
            padded = torch.tensor(doc["padding"]) == 0
            assert bool((mask & padded[None, :]).any()), (name, "padding blocks a cell the matrix keeps")
            other = yaml.safe_load(text)
            del other["padding"]
            moved(other, "padding left out")
        elif purpose == "mask":
            pass
        else:
            raise AssertionError(purpose)
    return report


def cases_mla():
    out = []
    out.append((mla_case(
        "mla_no_q_rank_causal",
        "MLA without q_rank (q_proj), kv_rank 3, rope_dim 4, nope_dim 2, v_dim 3 (d_v != d_n + d_r), "
        "RoPE style half base 10000, two heads, causal, o_proj",
        1501, n=4, d_model=5, H=2, r=3, d_r=4, d_n=2, d_v=3,
        rope={"base": 10000, "style": "half"}, mask="causal"), ["mask", "style"]))
    out.append((mla_case(
        "mla_q_rank_interleaved_yarn",
        "MLA with q_rank 4 (q_a_proj, q_a_layernorm, q_b_proj), kv_rank 3, rope_dim 4, nope_dim 2, v_dim 2, "
        "RoPE style interleaved with DeepSeek-V3's yarn rope_scaling (factor 40, mscale and mscale_all_dim 1.0, "
        "original_max_position_embeddings 4096, max_position_embeddings 163840): pair 1 extrapolated, pair 2 "
        "half and half, and the scale sqrt(6) / mscale^2; three heads, causal, norm_eps 1e-6, o_proj",
        1502, n=5, d_model=6, H=3, r=3, d_r=4, d_n=2, d_v=2, q_rank=4, norm_eps=1e-6,
        rope={"style": "interleaved", "max_position_embeddings": 163840,
              "scaling": {"beta_fast": 32, "beta_slow": 1, "factor": 40, "mscale": 1.0, "mscale_all_dim": 1.0,
                          "original_max_position_embeddings": 4096, "type": "yarn"}},
        mask="causal"), ["mask", "mscale", "yarn", "style"]))
    out.append((mla_case(
        "mla_mask_padding_pytorch",
        "MLA without q_rank in layout pytorch (every weight the state dict's out x in), kv_rank 2, rope_dim 2, "
        "nope_dim 3, v_dim 3, RoPE style half, two heads, an explicit mask matrix and padding, no o_proj",
        1503, n=4, d_model=4, H=2, r=2, d_r=2, d_n=3, d_v=3, layout="pytorch",
        rope={"base": 10000, "style": "half"},
        mask=[[1, 0, 1, 0], [1, 1, 0, 1], [0, 1, 1, 1], [1, 1, 1, 0]], padding=[1, 1, 0, 1], o_proj=False),
        ["mask", "layout", "matrix_padding"]))
    out.append((mla_case(
        "mla_window_q_rank",
        "MLA with q_rank 3, kv_rank 4, rope_dim 4, nope_dim 1, v_dim 2, RoPE style half base 500, one head, "
        "a sliding window of 2, norm_eps 1e-5, o_proj",
        1504, n=5, d_model=4, H=1, r=4, d_r=4, d_n=1, d_v=2, q_rank=3, norm_eps=1e-5,
        rope={"base": 500, "style": "half"}, mask={"window": 2}, grad_output="ones"),
        ["mask", "window", "eps", "style"]))
    cases = []
    for case, purposes in out:
        case["purpose_report"] = check_purpose(case, purposes)
        cases.append(case)
    assert any(c["model"]["d_v"] != c["model"]["d_n"] + c["model"]["d_r"] for c in cases)
    return cases


def write_decode(case):
    """For a case that decodes (a causal mask or a window, no padding): DeepSeek's absorbed
    decoding, checked against the full computation's rows and written as NAME.decode.json.
    Returns the largest difference from the full computation, or None for a case that does
    not decode."""
    m, name, steps = case["model"], case["name"], case["steps"]
    path = os.path.join(CASES_DIR, name + ".decode.json")
    mask = case["doc"].get("mask")
    if case["doc"].get("padding") is not None or not (mask == "causal" or isinstance(mask, dict)):
        assert not os.path.exists(path), (name, "a decode file for a case that does not decode")
        return None
    entries, softmax_scale = deepseek_decode(m)
    assert abs(softmax_scale * case["scale"] - 1.0) < 1e-15, name
    d_n, r = m["d_n"], m["r"]
    largest = 0.0
    for entry in entries:
        t, h = entry["t"], entry["head"] - 1
        kept = slice(entry["positions"][0] - 1, t)
        full = {
            "cache_latent": steps["normed_kv_latent"][kept],
            "cache_rope_keys": steps["rotated_keys"][h][kept, d_n:],
            "query": torch.cat((steps["rotated_queries"][h][t - 1, :d_n] @ w_uk(m, h),
                                steps["rotated_queries"][h][t - 1, d_n:])),
            "scores": steps["masked_scores"][h][t - 1, kept],
            "weights": steps["weights"][h][t - 1, kept],
            "latent_output": steps["weights"][h][t - 1, kept] @ steps["normed_kv_latent"][kept],
            "head_output": steps["head_output"][h][t - 1]}
        # outside the window the full computation's weights are exactly 0
        assert float(steps["weights"][h][t - 1].sum() - full["weights"].sum()) == 0.0, (name, t, h)
        for key in DECODE_KEYS:
            difference = float((entry[key] - full[key]).abs().max())
            assert difference <= TOLERANCE, (name, t, h, key, difference)
            largest = max(largest, difference)
    case["decode_provenance"] = (
        "DeepSeek-V3's inference/model.py decoding one token at a time as Transformer.forward does after the "
        "prompt: MLA.forward(x[:, t - 1:t], start_pos = t - 1, freqs_cis[t - 1:t], mask = None) for t = 1 … n "
        "with attn_impl \"absorb\", its kv_cache (kv_norm(kv), kv_lora_rank numbers) and pe_cache (k_pe after "
        "apply_rotary_emb, qk_rope_head_dim numbers) kept from call to call; query = torch.cat((torch.einsum("
        "\"bshd,hdc->bshc\", q_nope, wkv_b[:, :qk_nope_head_dim]), q_pe)), the absorbed query; scores = "
        "(torch.einsum(\"bshc,btc->bsht\", q_nope, kv_cache) + torch.einsum(\"bshr,btr->bsht\", q_pe, "
        "pe_cache)) * softmax_scale; weights = scores.softmax(dim=-1); latent_output = torch.einsum(\"bsht,btc->"
        "bshc\", weights, kv_cache); head_output = torch.einsum(\"bshc,hdc->bshd\", latent_output, wkv_b[:, "
        "-v_head_dim:])"
        + ("; the window (not in DeepSeek's code) as -inf on the keys more than W - 1 back, and only the "
           "positions it keeps written" if m["window"] is not None else "")
        + ("; the rope rows of the weights in DeepSeek's pair order and q_pe, k_pe put back (as the .expected.json "
           "provenance says)" if m["style"] == "half" else "")
        + "; float64; every entry agrees with row t of the full computation (.expected.json's normed_kv_latent, "
        "rotated_keys' rope part, rotated_queries through W_UK, masked_scores, weights, head_output) to 1e-12; "
        + VERSIONS)
    text = decode_text(case, entries)
    parsed = json.loads(text)
    for entry, read in zip(entries, parsed["decode"]):
        for key in DECODE_KEYS:
            assert torch.equal(torch.tensor(read[key]), entry[key]), (name, key, "JSON read back")
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    return largest


def w_uk(m, h):
    """Head h's W_UK as the state dict holds it, (d_n x r): rows h·(d_n + d_v) … of kv_b_proj."""
    block = m["d_n"] + m["d_v"]
    return m["sd"]["kv_b_proj"][h * block:h * block + m["d_n"]]


def main():
    os.makedirs(CASES_DIR, exist_ok=True)
    cases = cases_mla()
    names = [c["name"] for c in cases]
    assert len(names) == len(set(names)) and all(n.startswith("mla_") for n in names)
    worst = {"naive": 0.0, "absorb": 0.0, "rope_naive": 0.0, "direct": 0.0, "backward_naive": 0.0,
             "backward_absorb": 0.0, "formulas": 0.0, "fd": 0.0, "fd_relative": 0.0}
    fd_count = 0
    for case in cases:
        kept = write_case(case)
        for impl in ("naive", "absorb", "rope_naive", "backward_naive", "backward_absorb"):
            worst[impl] = max(worst[impl], case["deepseek"][impl])
        worst["direct"] = max(worst["direct"], case["direct_difference"])
        worst["formulas"] = max(worst["formulas"], case["formulas_difference"])
        checked, fd_largest, fd_relative = case["fd"]
        fd_count += checked
        worst["fd"] = max(worst["fd"], fd_largest)
        worst["fd_relative"] = max(worst["fd_relative"], fd_relative)
        note = "" if not kept else f" (committed digits kept: this run differs by {kept:.1e})"
        interleave = ("" if "interleave" not in case["deepseek"] else
                      f"; HF's apply_rotary_pos_emb_interleave re-interleaved vs DeepSeek's apply_rotary_emb "
                      f"{case['deepseek']['interleave']:.1e}")
        print(f"{case['name']}: {case['heads']} head(s), scale {case['scale']!r}, {len(case['written'])} steps; "
              f"DeepSeek naive {case['deepseek']['naive']:.1e}, absorb {case['deepseek']['absorb']:.1e}, "
              f"q_pe/k_pe {case['deepseek']['rope_naive']:.1e}; YAML recomputed {case['direct_difference']:.1e}"
              f"{interleave}{note}")
        print(f"   backward ({len([s for s in case['written'] if s.startswith('grad_')])} steps, grad_output "
              f"{'ones' if case['doc']['grad_output'] == 'ones' else 'a matrix'}): DeepSeek naive "
              f"{case['deepseek']['backward_naive']:.1e}, absorb {case['deepseek']['backward_absorb']:.1e} "
              f"(X.grad and every parameter's .grad); explicit formulas {case['formulas_difference']:.1e}; "
              f"{checked} finite differences, largest |difference| {fd_largest:.1e} (relative {fd_relative:.1e})")
        print("   changes: " + "; ".join(case["purpose_report"]))
        decoded = write_decode(case)
        if decoded is not None:
            print(f"   decoded as DeepSeek's absorb, token by token: {decoded:.1e} from the full computation")
    print(f"largest differences: DeepSeek naive {worst['naive']:.1e}, absorb {worst['absorb']:.1e}, "
          f"DeepSeek's rotated q_pe/k_pe {worst['rope_naive']:.1e}, YAML recomputed {worst['direct']:.1e}")
    print(f"largest backward differences: DeepSeek naive {worst['backward_naive']:.1e}, absorb "
          f"{worst['backward_absorb']:.1e}, explicit formulas {worst['formulas']:.1e}, {fd_count} finite "
          f"differences {worst['fd']:.1e} (relative {worst['fd_relative']:.1e})")
    print(f"{len(cases)} MLA cases written to {CASES_DIR}")


if __name__ == "__main__":
    main()
