#!/usr/bin/python3
"""Writes the class's answer files (answers/*.yaml) and the marker's key (key.yml).

Each learner is described below by what they did: the steps they wrote, the
decimals they wrote them with, whether they went on from their own rounded
numbers, and the mistake they made, if any. Their numbers are worked out here
from model.yaml with NumPy in float64, by an implementation of attention of
its own (nothing of qkv is used), so that the files grade qkv rather than
repeat it. The key states, for each file, what a marker decides: the exit
status qkv check must give, the first step holding a mistake, and the mistake
each wrong step shows.

Run it from anywhere; it rewrites the same files every time:

    /usr/bin/python3 examples/homework/class/make_answers.py

It needs NumPy and PyYAML (Debian: python3-numpy, python3-yaml).
"""

import math
import pathlib

import numpy as np
import yaml

HERE = pathlib.Path(__file__).resolve().parent
ANSWERS = HERE / "answers"

# ── the model ────────────────────────────────────────────────────────────────

MODEL = yaml.safe_load((HERE / "model.yaml").read_text(encoding="utf-8"))
X = np.array(MODEL["inputs"], dtype=np.float64)
W_Q = np.array(MODEL["weights"]["query"], dtype=np.float64)
W_K = np.array(MODEL["weights"]["key"], dtype=np.float64)
W_V = np.array(MODEL["weights"]["value"], dtype=np.float64)
W_O = np.array(MODEL["weights"]["output"], dtype=np.float64)
B_Q = np.array(MODEL["bias"]["query"], dtype=np.float64)
HEADS = MODEL["heads"]
N, D_MODEL = X.shape
D_K = W_Q.shape[1] // HEADS
assert MODEL["mask"] == "causal" and "scale" not in MODEL
ALLOWED = np.tril(np.ones((N, N)))  # causal: query i sees keys 1 … i

HEAD_STEPS = ["queries", "keys", "values", "scores", "scaled_scores", "masked_scores", "weights", "head_output"]
STEPS = HEAD_STEPS + ["concat", "output"]  # the order of qkv's step table


def columns(M, h):
    """Head h's columns (h from 1) of a matrix split column-wise into the heads."""
    return M[:, (h - 1) * D_K:h * D_K]


def softmax_rows(M):
    """Softmax of each row; −∞ gives a weight of exactly 0."""
    out = np.zeros_like(M)
    for i, row in enumerate(M):
        e = np.exp(row - np.max(row))
        out[i] = e / np.sum(e)
    return out


def softmax_columns(M):
    return softmax_rows(M.T).T


def masked(S, fill=-np.inf):
    return np.where(ALLOWED == 1, S, fill)


def ratios_without_exp(M):
    """Each row divided by its sum, the blocked cells taken as 0."""
    finite = np.where(np.isfinite(M), M, 0.0)
    return finite / finite.sum(axis=1, keepdims=True)


def rounded(M, decimals):
    """M rounded half away from zero, as by hand (−∞ stays −∞)."""
    if decimals is None:
        return M
    scale = 10.0 ** decimals
    with np.errstate(invalid="ignore"):
        out = np.sign(M) * np.floor(np.abs(M) * scale + 0.5 + 1e-9) / scale
    return np.where(np.isinf(M), M, out)


def truncated(M, decimals):
    scale = 10.0 ** decimals
    with np.errstate(invalid="ignore"):
        out = np.trunc(M * scale + np.sign(M) * 1e-9) / scale
    return np.where(np.isinf(M), M, out)


# ── a learner's work ─────────────────────────────────────────────────────────

def work(mistakes=None, keep=None, slips=None):
    """Every step as one learner has it.

    mistakes: {"STEP@H" or "STEP" or "projections": name}, the way a step was done wrong;
    keep: {"STEP": f}, what the learner goes on with after a step (f(M) is, e.g.,
          M rounded to 2 decimals; the default is the full value);
    slips: {"STEP@H": {(row, col): value}}, numbers miscalculated (1-based cells).
    """
    mistakes = mistakes or {}
    keep = keep or {}
    slips = slips or {}
    v = {}

    def done(name, M):
        M = np.array(M, dtype=np.float64)
        for (i, j), value in slips.get(name, {}).items():
            M[i - 1, j - 1] = value
        v[name] = keep.get(name.split("@")[0], lambda A: A)(M)
        return v[name]

    how = mistakes.get("projections")
    if how == "w_x":  # q = W·x for each token: X·Wᵀ, with the 6 × 6 matrices before the split
        Q, K, V = X @ W_Q.T + B_Q, X @ W_K.T, X @ W_V.T
    elif how == "swapped":  # W_Q and W_K swapped; b_Q still added to the queries
        Q, K, V = X @ W_K + B_Q, X @ W_Q, X @ W_V
    elif how == "no_bias":
        Q, K, V = X @ W_Q, X @ W_K, X @ W_V
    else:
        assert how is None, how
        Q, K, V = X @ W_Q + B_Q, X @ W_K, X @ W_V

    for h in range(1, HEADS + 1):
        m = {step: mistakes.get(f"{step}@{h}") for step in HEAD_STEPS}
        q = done(f"queries@{h}", columns(Q, h))
        k = done(f"keys@{h}", columns(K, h))
        val = done(f"values@{h}", columns(V, h))
        S = done(f"scores@{h}", k @ q.T if m["scores"] == "scores_k_qt" else q @ k.T)
        divisor = {None: math.sqrt(D_K), "scaling_forgotten": 1.0, "scaled_by_dk": D_K,
                   "scaled_by_sqrt_d_model": math.sqrt(D_MODEL)}[m["scaled_scores"]]
        Ss = done(f"scaled_scores@{h}", S / divisor)
        M = done(f"masked_scores@{h}", masked(Ss, 0.0 if m["masked_scores"] == "mask_zero" else -np.inf))
        A = done(f"weights@{h}", {
            None: lambda: softmax_rows(M),
            "softmax_columns": lambda: softmax_columns(M),
            "softmax_no_exp": lambda: ratios_without_exp(M),
            "mask_after_softmax": lambda: softmax_rows(Ss) * ALLOWED,
        }[m["weights"]]())
        done(f"head_output@{h}", A.T @ val if m["head_output"] == "output_at_v" else A @ val)
    Z = [v[f"head_output@{h}"] for h in range(1, HEADS + 1)]
    if mistakes.get("concat") == "heads_averaged":
        done("concat", sum(Z) / HEADS)
    else:
        done("concat", np.hstack(Z))
        done("output", v["concat"] @ W_O)
    return v


TRUE = work()


def step_key(name):
    """"scores@2" → ("scores", 2); "output" → ("output", None)."""
    step, _, head = name.partition("@")
    return step, int(head) if head else None


def order(name):
    step, head = step_key(name)
    return STEPS.index(step), head or 0


# ── writing numbers as a learner does ────────────────────────────────────────

def number(x, decimals, style, minus_infinity):
    """style "fixed": always `decimals` digits; "short": as few as the value needs
    (2.5, 4, 0.75) when it is exact to `decimals` digits, which a hand
    calculation shows; "whole": rounded to a whole number."""
    if np.isneginf(x):
        return minus_infinity
    if style == "whole":
        return str(int(rounded(np.array([x]), 0)[0]) + 0)
    r = rounded(np.array([x]), decimals)[0]
    text = f"{r:.{decimals}f}"
    if style == "short" and abs(r - x) < 1e-9:
        text = text.rstrip("0").rstrip(".") if "." in text else text
    if text in ("-0", "-0.0", "-0.00", "-0.000", "-0.0000"):
        text = text[1:]
    return text


class Written:
    """How one step is written: decimals, style, and the cells left blank (1-based)."""

    def __init__(self, decimals=2, style="fixed", blank_rows=(), blank_cells=(), blank_blocked=False,
                 transposed=False, cut=None):
        self.decimals = decimals
        self.style = style
        self.blank_rows = set(blank_rows)
        self.blank_cells = set(blank_cells)
        self.blank_blocked = blank_blocked
        self.transposed = transposed
        self.cut = cut  # a function of the matrix: how the learner cut it to decimals (rounded by default)


def matrix_rows(M, w, minus_infinity):
    if w.cut is not None:
        M = w.cut(M)
    if w.transposed:
        M = M.T
    rows = []
    for i, row in enumerate(M, start=1):
        if i in w.blank_rows:
            rows.append(None)
            continue
        cells = []
        for j, x in enumerate(row, start=1):
            blocked = not w.transposed and M.shape == (N, N) and ALLOWED[i - 1, j - 1] == 0
            if (i, j) in w.blank_cells or (w.blank_blocked and blocked):
                cells.append("~")
            else:
                cells.append(number(x, w.decimals, w.style, minus_infinity))
        rows.append(cells)
    return rows


def yaml_block(rows, indent):
    """One matrix as block rows of flow lists, the columns lined up."""
    width = max((len(c) for r in rows if r for c in r), default=1)
    lines = []
    for r in rows:
        if r is None:
            lines.append(" " * indent + "- ~")
        else:
            lines.append(" " * indent + "- [" + ", ".join(c.rjust(width) for c in r) + "]")
    return lines


# ── the class ────────────────────────────────────────────────────────────────

class Learner:
    def __init__(self, file, did, written, values=None, key=None, minus_infinity="-inf"):
        """file: the answer file's name; did: what the learner did, for the file's
        header and the README; written: {"STEP@H" or "STEP": Written}, the steps
        they wrote; values: their work (work(...)), the true values by default;
        key: the marker's verdict {"first_mistake": "STEP@H", "diagnoses": {...}},
        or None when every answer is right."""
        self.file = file
        self.did = did
        self.written = written
        self.values = values if values is not None else TRUE
        self.key = key
        self.minus_infinity = minus_infinity

    def text(self):
        lines = ["# " + line if line else "#" for line in self.did.split("\n")]
        lines.append("answers:")
        per_head = {h: [name for name in self.written if step_key(name)[1] == h] for h in range(1, HEADS + 1)}
        if any(per_head.values()):
            lines.append("  heads:")
            for h in range(1, HEADS + 1):
                names = sorted(per_head[h], key=order)
                if not names:
                    lines.append("    - ~")
                    continue
                for k, name in enumerate(names):
                    prefix = "    - " if k == 0 else "      "
                    lines.append(f"{prefix}{step_key(name)[0]}:")
                    lines += yaml_block(matrix_rows(self.values[name], self.written[name], self.minus_infinity), 8)
        for name in sorted((n for n in self.written if step_key(n)[1] is None), key=order):
            lines.append(f"  {name}:")
            lines += yaml_block(matrix_rows(self.values[name], self.written[name], self.minus_infinity), 4)
        return "\n".join(lines) + "\n"

    def key_entry(self):
        if self.key is None:
            return {"exit": 0, "first_mistake": None, "first_mistake_head": None, "diagnoses": {}}
        step, head = step_key(self.key["first_mistake"])
        return {"exit": 1, "first_mistake": step, "first_mistake_head": head,
                "diagnoses": dict(sorted(self.key["diagnoses"].items(), key=lambda kv: order(kv[0])))}


def every_step(heads=(1, 2), style=None, decimals=2, **kwargs):
    """Written for every step of the given heads, then concat and output."""
    out = {}
    for h in heads:
        for step in HEAD_STEPS:
            s = style or ("short" if step in ("queries", "keys", "values", "scores") else "fixed")
            out[f"{step}@{h}"] = Written(decimals, s, **kwargs)
    out["concat"] = Written(decimals, style or "fixed")
    out["output"] = Written(decimals, style or "fixed")
    return out


def steps(names, decimals=2, style="fixed", **kwargs):
    return {name: Written(decimals, style, **kwargs) for name in names}


def head_steps(h, names, decimals=2, style="fixed", **kwargs):
    return steps([f"{name}@{h}" for name in names], decimals, style, **kwargs)


def r(decimals):
    """What a learner goes on with who rounds a step to `decimals` digits."""
    return lambda M: rounded(M, decimals)


AFTER_SCORES = ["scaled_scores", "masked_scores", "weights", "head_output"]

CLASS = [
    # ── everything right ────────────────────────────────────────────────────
    Learner("right.yaml",
            "Every step of both heads worked out correctly. Numbers that are not whole\n"
            "are rounded to two decimals; exact ones (2.5, 4) are written as they are.",
            every_step()),
    Learner("right-4-decimals.yaml",
            "Every step worked out correctly with a calculator and written to four\n"
            "decimals throughout, blocked scores as −∞.",
            every_step(style="fixed", decimals=4), minus_infinity="−∞"),
    Learner("right-mixed-precision.yaml",
            "Right throughout, at the precision the learner felt like: scaled scores to\n"
            "two decimals, weights to three, the weighted sums to four, concat to three\n"
            "and the output to two. Each step is worked from the full values.",
            {**head_steps(1, ["queries", "keys", "values", "scores"], style="short"),
             **head_steps(1, ["scaled_scores", "masked_scores"], 2),
             **head_steps(2, ["scaled_scores", "masked_scores"], 2),
             **head_steps(1, ["weights"], 3), **head_steps(2, ["weights"], 3),
             **head_steps(1, ["head_output"], 4), **head_steps(2, ["head_output"], 4),
             **steps(["concat"], 3), **steps(["output"], 2)}),
    Learner("rounded-carried.yaml",
            "Pencil and paper: every step rounded to two decimals and the next step\n"
            "worked from the rounded numbers. A few cells end up 0.01 away from the\n"
            "exact value rounded; they follow from the learner's own numbers, so they\n"
            "are not mistakes.",
            every_step(),
            values=work(keep={s: r(2) for s in STEPS})),
    Learner("rounded-weights-carried.yaml",
            "The weights rounded to two decimals, and the weighted sums, concat and\n"
            "output worked from those rounded weights, written to three decimals. The\n"
            "third decimal then differs from the exact value's, but follows from the\n"
            "learner's weights: not a mistake.",
            {**head_steps(1, ["weights"], 2), **head_steps(2, ["weights"], 2),
             **head_steps(1, ["head_output"], 3), **head_steps(2, ["head_output"], 3),
             **steps(["concat", "output"], 3)},
            values=work(keep={"weights": r(2), "head_output": r(3), "concat": r(3)})),
    Learner("exact-short.yaml",
            "Only numbers that are exact, each written as short as it goes: 2.5 for\n"
            "2.50, 4 for 4.00, a weight of 1 and the blocked weights 0, and the first\n"
            "rows of concat and output, which are whole. All right: a number with\n"
            "fewer decimals than asked is right when it is the exact value.",
            {**head_steps(1, ["queries", "keys", "values", "scores"], style="short"),
             **head_steps(2, ["queries", "scores"], style="short"),
             "weights@1": Written(2, "short", blank_rows=(2, 3, 4)),
             "weights@2": Written(2, "short", blank_rows=(2, 3, 4)),
             "concat": Written(2, "short", blank_rows=(2, 3, 4)),
             "output": Written(2, "short", blank_rows=(2, 3, 4))}),
    Learner("partial-head-1.yaml",
            "Only head 1's scores, scaled scores and weights, all right; the rest is\n"
            "not answered, which is not a mistake.",
            {**head_steps(1, ["scores"], style="short"), **head_steps(1, ["scaled_scores", "weights"])}),
    Learner("partial-blanks.yaml",
            "Weights and weighted sums of both heads with gaps: the blocked cells left\n"
            "out (~), and some rows and cells not done. What is there is right.",
            {"weights@1": Written(2, blank_blocked=True, blank_rows=(4,)),
             "weights@2": Written(2, blank_blocked=True, blank_cells=((3, 2), (4, 4))),
             "head_output@1": Written(2, blank_rows=(4,)),
             "head_output@2": Written(3, blank_rows=(1, 2))}),
    Learner("partial-output.yaml",
            "Only concat and the output, two rows of each, right to two decimals.",
            {"concat": Written(2, blank_rows=(1, 2)), "output": Written(2, blank_rows=(2, 4))}),

    # ── wrong, without a named mistake ──────────────────────────────────────
    Learner("whole-numbers.yaml",
            "Head 2 with every number rounded to a whole one: scaled scores, weights\n"
            "(0 and 1) and weighted sums. Those are not exact, and the model asks for\n"
            "two decimals (decimals: 2), so they are wrong; the projections and the\n"
            "scores are exact and right.",
            {**head_steps(2, ["queries", "keys", "values", "scores"], style="short"),
             **head_steps(2, ["scaled_scores", "weights", "head_output"], 0, style="whole")},
            key={"first_mistake": "scaled_scores@2",
                 "diagnoses": {"scaled_scores@2": None, "weights@2": None, "head_output@2": None}}),
    Learner("one-decimal.yaml",
            "The weights of both heads rounded to one decimal (the model asks for\n"
            "two), the weighted sums to two decimals from the full weights. The\n"
            "weights are wrong for want of a decimal; the weighted sums are right.",
            {**head_steps(1, ["weights"], 1), **head_steps(2, ["weights"], 1),
             **head_steps(1, ["head_output"]), **head_steps(2, ["head_output"])},
            key={"first_mistake": "weights@1", "diagnoses": {"weights@1": None, "weights@2": None}}),
    Learner("truncated.yaml",
            "Head 1 cut to two decimals instead of rounded (2.3094 written 2.30), and\n"
            "each step worked from the cut numbers. The cells where cutting and\n"
            "rounding differ are wrong, in the scaled scores and in the weights; the\n"
            "weighted sums of two-decimal weights and whole values need no cutting.",
            {**head_steps(1, ["scores"], style="short"),
             **head_steps(1, AFTER_SCORES, cut=lambda M: truncated(M, 2))},
            values=work(keep={"scaled_scores": lambda M: truncated(M, 2), "weights": lambda M: truncated(M, 2)}),
            key={"first_mistake": "scaled_scores@1", "diagnoses": {"scaled_scores@1": None, "weights@1": None}}),
    Learner("slip.yaml",
            "A slip in head 2's scores: sat·cat (row 3, column 2) worked out as 1.5\n"
            "instead of 2.5. One wrong number is no classic mistake. The rest of head\n"
            "2 is worked from those scores: it follows from them.",
            {**head_steps(2, ["scores"], style="short"), **head_steps(2, AFTER_SCORES)},
            values=work(slips={"scores@2": {(3, 2): 1.5}}),
            key={"first_mistake": "scores@2", "diagnoses": {"scores@2": None}}),
    Learner("transposed-keys.yaml",
            "Head 1's keys written as Kᵀ (3 × 4), the way they are multiplied, instead\n"
            "of one row per token (4 × 3). The scores are right.",
            {"keys@1": Written(0, "short", transposed=True), **head_steps(1, ["scores"], style="short")},
            key={"first_mistake": "keys@1", "diagnoses": {"keys@1": "transposed"}}),
    Learner("transposed-output.yaml",
            "Concat right; the output written with a row per dimension and a column\n"
            "per token (6 × 4): the transpose of concat·W_O.",
            {"concat": Written(2), "output": Written(2, transposed=True)},
            key={"first_mistake": "output", "diagnoses": {"output": "transposed"}}),

    # ── the classic mistakes ────────────────────────────────────────────────
    Learner("mistake-k-qt.yaml",
            "Head 1's scores computed as K·Qᵀ (row i holds key i against every query)\n"
            "instead of Q·Kᵀ; the rest of head 1 worked correctly from those scores.\n"
            "Head 2 is right; concat and output follow from the learner's head 1.",
            every_step(), values=work({"scores@1": "scores_k_qt"}),
            key={"first_mistake": "scores@1", "diagnoses": {"scores@1": "scores_k_qt"}}),
    Learner("mistake-k-qt-head-2.yaml",
            "Head 2's scores computed as K·Qᵀ, then scaled, masked and softmaxed to\n"
            "three decimals, each step from the previous one as written.",
            {**head_steps(2, ["scores"], style="short"), **head_steps(2, AFTER_SCORES, 3)},
            values=work({"scores@2": "scores_k_qt"}, keep={s: r(3) for s in STEPS}),
            key={"first_mistake": "scores@2", "diagnoses": {"scores@2": "scores_k_qt"}}),
    Learner("mistake-no-scaling.yaml",
            "Head 2's scores not divided by √d_k: the scaled scores are the scores. The\n"
            "mask, softmax and weighted sum then follow from them.",
            {**head_steps(2, ["scores"], style="short"), **head_steps(2, AFTER_SCORES)},
            values=work({"scaled_scores@2": "scaling_forgotten"}),
            key={"first_mistake": "scaled_scores@2", "diagnoses": {"scaled_scores@2": "scaling_forgotten"}}),
    Learner("mistake-no-scaling-weights-only.yaml",
            "Only head 1's weights and weighted sum written down, worked from scores\n"
            "that were never divided by √d_k. The mistake is made in a step that is\n"
            "not written; it shows in the weights.",
            head_steps(1, ["weights", "head_output"]),
            values=work({"scaled_scores@1": "scaling_forgotten"}),
            key={"first_mistake": "weights@1", "diagnoses": {"weights@1": "scaling_forgotten"}}),
    Learner("mistake-divided-by-dk.yaml",
            "Head 1's scores divided by d_k = 3 instead of √d_k = √3; the rest of\n"
            "head 1 follows, with the rounded numbers carried on.",
            {**head_steps(1, ["scores"], style="short"), **head_steps(1, AFTER_SCORES)},
            values=work({"scaled_scores@1": "scaled_by_dk"}, keep={s: r(2) for s in STEPS}),
            key={"first_mistake": "scaled_scores@1", "diagnoses": {"scaled_scores@1": "scaled_by_dk"}}),
    Learner("mistake-divided-by-sqrt-d-model.yaml",
            "Head 2's scores divided by √d_model = √6 instead of √d_k = √3: the width\n"
            "of the inputs instead of the width of a key. The rest follows.",
            {**head_steps(2, ["scores"], style="short"), **head_steps(2, AFTER_SCORES)},
            values=work({"scaled_scores@2": "scaled_by_sqrt_d_model"}),
            key={"first_mistake": "scaled_scores@2",
                 "diagnoses": {"scaled_scores@2": "scaled_by_sqrt_d_model"}}),
    Learner("mistake-mask-zero.yaml",
            "Head 1's blocked cells set to 0 instead of −∞, so that exp(0) = 1 gives\n"
            "the later words weight; the softmax and weighted sum follow.",
            head_steps(1, ["scaled_scores", "masked_scores", "weights", "head_output"]),
            values=work({"masked_scores@1": "mask_zero"}),
            key={"first_mistake": "masked_scores@1", "diagnoses": {"masked_scores@1": "mask_zero"}}),
    Learner("mistake-mask-after-softmax.yaml",
            "Head 2's softmax taken over whole rows, and the blocked weights then set\n"
            "to 0: the rows no longer sum to 1. The weighted sum follows.",
            head_steps(2, ["scaled_scores", "weights", "head_output"]),
            values=work({"weights@2": "mask_after_softmax"}),
            key={"first_mistake": "weights@2", "diagnoses": {"weights@2": "mask_after_softmax"}}),
    Learner("mistake-softmax-columns.yaml",
            "Head 1's softmax taken down each column instead of along each row. The\n"
            "weighted sum follows from those weights.",
            head_steps(1, ["masked_scores", "weights", "head_output"]),
            values=work({"weights@1": "softmax_columns"}), minus_infinity="−∞",
            key={"first_mistake": "weights@1", "diagnoses": {"weights@1": "softmax_columns"}}),
    Learner("mistake-no-exp.yaml",
            "Head 2's rows of masked scores divided by their sums without\n"
            "exponentiating first (blocked cells counted as 0). The weighted sum\n"
            "follows.",
            head_steps(2, ["masked_scores", "weights", "head_output"]),
            values=work({"weights@2": "softmax_no_exp"}),
            key={"first_mistake": "weights@2", "diagnoses": {"weights@2": "softmax_no_exp"}}),
    Learner("mistake-at-v.yaml",
            "Head 1's weighted sum computed as Aᵀ·V (the weights transposed); concat\n"
            "and output follow from it. Head 2 is right.",
            {**head_steps(1, ["weights", "head_output"]), **head_steps(2, ["weights", "head_output"]),
             **steps(["concat", "output"])},
            values=work({"head_output@1": "output_at_v"}),
            key={"first_mistake": "head_output@1", "diagnoses": {"head_output@1": "output_at_v"}}),
    Learner("mistake-w-x.yaml",
            "The projections computed as W·x for each token (the column-vector\n"
            "convention) with the 6 × 6 matrices, which is X·Wᵀ (+ b_Q), and then cut\n"
            "into the two heads. Head 1's scores and weights follow from those.",
            {**head_steps(1, ["queries", "keys", "values", "scores"], style="short"),
             **head_steps(2, ["queries", "keys", "values"], style="short"),
             **head_steps(1, ["scaled_scores", "weights"])},
            values=work({"projections": "w_x"}),
            key={"first_mistake": "queries@1",
                 "diagnoses": {f"{s}@{h}": "projection_w_x" for s in ("queries", "keys", "values") for h in (1, 2)}}),
    Learner("mistake-swapped.yaml",
            "W_Q and W_K swapped: the queries computed with W_K (and b_Q added, as\n"
            "the query bias), the keys with W_Q. The scores follow from them.",
            {**head_steps(1, ["queries", "keys", "scores"], style="short"),
             **head_steps(2, ["queries", "keys", "scores"], style="short")},
            values=work({"projections": "swapped"}),
            key={"first_mistake": "queries@1",
                 "diagnoses": {f"{s}@{h}": "weights_swapped" for s in ("queries", "keys") for h in (1, 2)}}),
    Learner("mistake-bias-forgotten.yaml",
            "The query bias b_Q not added: Q = X·W_Q. Head 1's scores, weights and\n"
            "weighted sum follow from those queries.",
            {**head_steps(1, ["queries"], style="short"), **head_steps(2, ["queries"], style="short"),
             **head_steps(1, ["scores"], style="short"), **head_steps(1, ["weights", "head_output"])},
            values=work({"projections": "no_bias"}),
            key={"first_mistake": "queries@1",
                 "diagnoses": {"queries@1": "bias_forgotten", "queries@2": "bias_forgotten"}}),
    Learner("mistake-heads-averaged.yaml",
            "Both heads right, then averaged instead of put side by side: a 4 × 3\n"
            "concat where it is 4 × 6. The output is left out, as it cannot be\n"
            "multiplied by the 6 × 6 W_O.",
            {**head_steps(1, ["head_output"]), **head_steps(2, ["head_output"]), **steps(["concat"])},
            values=work({"concat": "heads_averaged"}),
            key={"first_mistake": "concat", "diagnoses": {"concat": "heads_averaged"}}),
    Learner("two-mistakes.yaml",
            "Two mistakes: head 1's scores divided by d_k = 3, and head 2's weighted\n"
            "sum computed as Aᵀ·V. Everything after each mistake follows from it,\n"
            "worked to three decimals.",
            {**head_steps(1, ["scores"], style="short"), **head_steps(1, AFTER_SCORES, 3),
             **head_steps(2, ["weights", "head_output"], 3), **steps(["concat", "output"], 3)},
            values=work({"scaled_scores@1": "scaled_by_dk", "head_output@2": "output_at_v"}),
            key={"first_mistake": "scaled_scores@1",
                 "diagnoses": {"scaled_scores@1": "scaled_by_dk", "head_output@2": "output_at_v"}}),
]


# ── checks of the exercise and of the files ──────────────────────────────────

def check_exercise():
    """The model is one in which every mistake shows: no true weight rounds to 0
    or 1 at two decimals, no true value is a tie at two decimals, d_k ≠ √d_model,
    and each classic mistake changes two cells or more at two decimals in the
    first step it changes."""
    assert abs(math.sqrt(D_MODEL) - D_K) > 0.1 and abs(math.sqrt(D_MODEL) - math.sqrt(D_K)) > 0.1
    for h in range(1, HEADS + 1):
        A = TRUE[f"weights@{h}"]
        for i in range(1, N):
            for j in range(i + 1):
                assert 0.005 <= A[i, j] < 0.995, (h, i, j, A[i, j])
        for name in ("scaled_scores", "weights", "head_output"):
            M = TRUE[f"{name}@{h}"]
            finite = M[np.isfinite(M)]
            assert np.all(np.abs(finite * 100 - np.floor(finite * 100) - 0.5) > 0.02), (name, h)
    mistakes = [{"projections": m} for m in ("w_x", "swapped", "no_bias")] + [{"concat": "heads_averaged"}]
    for h in range(1, HEADS + 1):
        mistakes.append({f"scores@{h}": "scores_k_qt"})
        for m in ("scaling_forgotten", "scaled_by_dk", "scaled_by_sqrt_d_model"):
            mistakes.append({f"scaled_scores@{h}": m})
        mistakes.append({f"masked_scores@{h}": "mask_zero"})
        for m in ("softmax_columns", "softmax_no_exp", "mask_after_softmax"):
            mistakes.append({f"weights@{h}": m})
        mistakes.append({f"head_output@{h}": "output_at_v"})
    for mistake in mistakes:
        v = work(mistake)
        changed = []
        for name in sorted(TRUE, key=order):
            if name not in v or v[name].shape != TRUE[name].shape:
                changed.append(99)
                break
            changed.append(int(np.sum(wrong_cells(rounded(v[name], 2), TRUE[name], 2))))
            if changed[-1]:
                break
        assert changed[-1] >= 2, (mistake, changed)


POLICY = MODEL.get("decimals", 1)  # the fewest decimals an answer may carry


def wrong_cells(given, truth, decimals):
    """The cells qkv must mark wrong against the true values: beyond half a unit of
    the last decimal written, or, with fewer decimals than the policy's, not exact."""
    both_inf = np.isinf(given) & np.isinf(truth)
    with np.errstate(invalid="ignore"):
        gap = np.where(both_inf, 0.0, np.abs(given - truth))
    gap = np.nan_to_num(gap, nan=np.inf)
    allowed = 0.5 * 10.0 ** -decimals if decimals >= POLICY else 1e-9
    return gap > allowed + 1e-12


def check_learner(learner):
    """What the key says against the learner's numbers: every step before the
    first mistake is right, the first mistake's step is not, and a named
    mistake shows in two cells or more."""
    first = learner.key["first_mistake"] if learner.key else None
    for name, w in learner.written.items():
        mine = learner.values[name]
        truth = TRUE[name]
        if w.transposed or mine.shape != truth.shape:
            assert first is not None and order(first) <= order(name), (learner.file, name)
            continue
        if w.cut is not None:
            given = w.cut(mine)
        else:
            given = rounded(mine, 0 if w.style == "whole" else w.decimals)
        wrong = wrong_cells(given, truth, 0 if w.style == "whole" else w.decimals)
        if first is None or order(name) < order(first):
            # right, or (a learner going on from rounded numbers) off by their rounding
            assert not wrong.any() or learner.file.startswith("rounded"), (learner.file, name)
        elif name == first:
            named = learner.key["diagnoses"].get(name) is not None
            assert wrong.sum() >= (2 if named else 1), (learner.file, name)
    if learner.file.startswith("rounded"):
        assert any(wrong_cells(rounded(learner.values[n], w.decimals), TRUE[n], w.decimals).any()
                   for n, w in learner.written.items()), learner.file


# ── the files ────────────────────────────────────────────────────────────────

KEY_HEADER = """\
# The marker's key for the answer files in answers/, against model.yaml:
#   exit                qkv check's exit status: 0 every answer right, 1 a mistake
#   first_mistake       the earliest step holding a wrong cell, in the order of the
#                       steps (queries, keys, values, scores, …, concat, output), then by head
#   first_mistake_head  that step's head (from 1), or null for concat and output
#   diagnoses           for each step where the mistake shows ("STEP@HEAD", or STEP for
#                       concat and output): the mistake's id, or null for a wrong step
#                       that is no classic mistake (a slip, too few decimals)
# Written by make_answers.py from what each learner did.
"""


TABLE_START = "<!-- table: written by make_answers.py -->\n"
TABLE_END = "<!-- end of table -->\n"


def verdict_text(entry):
    if entry["exit"] == 0:
        return "0 · right"
    first = entry["first_mistake"] + (f" (head {entry['first_mistake_head']})" if entry["first_mistake_head"] else "")
    shown = ", ".join(f"{step}: {'`' + d + '`' if d else '—'}" for step, d in entry["diagnoses"].items())
    return f"1 · first mistake {first} · {shown}"


def write_table(learners, key):
    """The README's table of the class: file, what the learner did, the verdict."""
    readme = HERE / "README.md"
    text = readme.read_text(encoding="utf-8")
    rows = ["| file | what the learner did | exit · verdict |", "| --- | --- | --- |"]
    for learner in learners:
        did = " ".join(learner.did.split())
        rows.append(f"| `{learner.file}` | {did} | {verdict_text(key[learner.file])} |")
    start = text.index(TABLE_START) + len(TABLE_START)
    end = text.index(TABLE_END)
    readme.write_text(text[:start] + "\n".join(rows) + "\n" + text[end:], encoding="utf-8")


def main():
    check_exercise()
    names = [learner.file for learner in CLASS]
    assert len(names) == len(set(names))
    ANSWERS.mkdir(exist_ok=True)
    for old in ANSWERS.glob("*.yaml"):
        if old.name not in names:
            old.unlink()
    key = {}
    for learner in sorted(CLASS, key=lambda l: l.file):
        check_learner(learner)
        (ANSWERS / learner.file).write_text(learner.text(), encoding="utf-8")
        key[learner.file] = learner.key_entry()
    text = yaml.safe_dump(key, sort_keys=False, allow_unicode=True, default_flow_style=False, width=100)
    (HERE / "key.yml").write_text(KEY_HEADER + text, encoding="utf-8")
    write_table(CLASS, key)


if __name__ == "__main__":
    main()
