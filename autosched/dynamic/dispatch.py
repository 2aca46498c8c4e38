"""Decision-tree dispatch: M -> the micro-kernel that serves it.

A scikit-learn DecisionTreeClassifier learns, over the range of M, which of the selected micro-
kernels the cost model (and, at the tuning instances, the verified assignment) prefers.  It is
exported twice, from the same split thresholds, so the two always agree:

  * `Dispatcher`: the Python object ops and the engine call.  The tree's splits on the one feature M
    flatten to sorted upper bounds; a call is one bisect over them (no sklearn at run time).
  * `c_dispatch_source`: the tree as C if-else on M, for the standalone .cu file (export.py).

A threshold t of the tree (a float such as 48.5) reads "M <= t"; for integer M that is M <= floor(t),
which both exports use.
"""

from __future__ import annotations

import bisect
import math

import numpy as np

# sklearn is imported inside functions: slow to import, and only a few functions need it


def fit_tree(ms, labels, weights=None, max_leaf_nodes: int = 32, seed: int = 0):
    from sklearn.tree import DecisionTreeClassifier
    X = np.asarray(ms, dtype=np.float64).reshape(-1, 1)
    tree = DecisionTreeClassifier(max_leaf_nodes=max_leaf_nodes, random_state=seed)
    return tree.fit(X, np.asarray(labels), sample_weight=weights)


def tree_nodes(tree) -> list[dict]:
    """The fitted tree as plain nodes: {"le": int, "left": i, "right": j} or {"kernel": k} (a class
    label, an index into the selected micro-kernels)."""
    t = tree.tree_
    out = []
    for i in range(t.node_count):
        if t.children_left[i] == -1:
            out.append({"kernel": int(tree.classes_[int(np.argmax(t.value[i][0]))])})
        else:
            out.append({"le": int(math.floor(t.threshold[i])), "left": int(t.children_left[i]),
                        "right": int(t.children_right[i])})
    return out


def walk(nodes: list[dict], M: int) -> int:
    i = 0
    while "kernel" not in nodes[i]:
        i = nodes[i]["left"] if M <= nodes[i]["le"] else nodes[i]["right"]
    return nodes[i]["kernel"]


class Dispatcher:
    """M -> index of a micro-kernel (and its config): a sorted table of upper bounds over M."""

    def __init__(self, nodes: list[dict], kernels: list[dict], lo: int, hi: int, families=None):
        self.nodes, self.kernels, self.lo, self.hi = nodes, [dict(k) for k in kernels], lo, hi
        # the template of each kernel (hgemm_dyn or hgemm_wgmma): a wgmma one takes TMA maps
        self.families = list(families) if families is not None else ["hgemm_dyn"] * len(self.kernels)
        cuts = sorted({n["le"] for n in nodes if "le" in n})
        bounds, labels = [], []
        for c in cuts + [None]:
            k = walk(nodes, c if c is not None else (cuts[-1] + 1 if cuts else lo))
            if labels and labels[-1] == k:
                bounds[-1] = c
            else:
                bounds.append(c)
                labels.append(k)
        self.bounds = [b for b in bounds[:-1]]      # M <= bounds[i] -> labels[i]; past the last: labels[-1]
        self.labels = labels

    def __call__(self, M: int) -> int:
        return self.labels[bisect.bisect_left(self.bounds, M)]

    def config(self, M: int) -> dict:
        return self.kernels[self(M)]

    def family(self, M: int) -> str:
        return self.families[self(M)]

    def spec(self, workload_at_m, template, device):
        """The KernelSpec to launch for a concrete workload of the range: `template` one Template, or
        family -> Template where the kernels mix templates."""
        if isinstance(template, dict):
            template = template[self.family(workload_at_m.M)]
        return template.render(workload_at_m, self.config(workload_at_m.M), device)

    def to_json(self) -> dict:
        return {"nodes": self.nodes, "kernels": self.kernels, "range": [self.lo, self.hi], "families": self.families}

    @classmethod
    def from_json(cls, d: dict) -> "Dispatcher":
        return cls(d["nodes"], d["kernels"], *d["range"], d.get("families"))


def c_dispatch_source(nodes: list[dict], name: str) -> str:
    """`int name(int M)`: the tree as nested if-else, plain C (compiles without CUDA)."""
    lines = [f"int {name}(int M) {{"]

    def emit(i: int, depth: int) -> None:
        pad = "  " * depth
        n = nodes[i]
        if "kernel" in n:
            lines.append(f"{pad}return {n['kernel']};")
            return
        lines.append(f"{pad}if (M <= {n['le']}) {{")
        emit(n["left"], depth + 1)
        lines.append(f"{pad}}} else {{")
        emit(n["right"], depth + 1)
        lines.append(f"{pad}}}")

    emit(0, 1)
    lines.append("}")
    return "\n".join(lines) + "\n"
