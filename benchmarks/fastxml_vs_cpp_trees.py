"""Do our FastXML / PfastreXML trees equal the authors'? Node-by-node comparison with their C++.

    .venv/bin/python benchmarks/fastxml_vs_cpp_trees.py --cpp-bin DIR [--data XC_DIR] [--trees 50]
    .venv/bin/python benchmarks/fastxml_vs_cpp_trees.py --cpp-model MODEL_DIR [--trees 50]
    .venv/bin/python benchmarks/fastxml_vs_cpp_trees.py --algo pfastrexml --cpp-bin DIR

DIR holds the authors' ``fastXML_train`` (and, for ``--algo pfastrexml``,
``PfastreXML_train``; build them from their public source yourself; nothing of it ships here).
With ``--cpp-bin`` the training file is converted to their sparse text format and
``fastXML_train -s 0 -t T`` is run (PfastreXML: the inverse propensities, A=0.55, B=1.5, are
written for it as float32 values and ``PfastreXML_train -s 0 -t T`` is run); with
``--cpp-model`` an existing model directory trained with ``-s 0`` is read. Our trees 0..T-1 at
seed 0 are then trained in this process (``sparkxml_kernels.fastxml.train_forest``, with the
same inverse propensities as label weights and DCG for PfastreXML) and compared node by node:
children, the separator's feature ids and weights (to their 6 printed digits), and the labels of
every leaf. For PfastreXML the tail classifiers' centroids are compared with their ``w`` file
too (to its 6 printed decimals).

``--write-fixture PATH --fixture-trees 0,1`` also stores a fingerprint of the authors' trees as
JSON (:func:`digest`): ``tests/kernels/data/fastxml_cpp_bibtex_trees.json`` and
``pfastrexml_cpp_bibtex_trees.json.gz`` (a path ending in .gz is written compressed) were
written that way from Bibtex, so CI checks the kernel against the authors' trees without their
binary.
"""
from __future__ import annotations

import argparse
import gzip
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "..", "shared", "data", "bibtex", "xc_split")


def read_cpp_tree(path):
    """One tree file of theirs -> our flat layout (children, w, sorted leaf labels)."""
    with open(path) as fh:
        lines = fh.read().split("\n")
    n_nodes = int(lines[0])
    children, w_idx, w_val, w_ptr, leaf_lab, leaf_val, leaf_ptr = [], [], [], [0], [], [], [0]
    p = 1
    for _ in range(n_nodes):
        leaf = lines[p] == "1"
        pos, neg = (int(x) for x in lines[p + 1].split())
        entries = [tok.split(":") for tok in lines[p + 4].split()[1:]]
        if leaf:
            children.append([-1, -1])
            pairs = sorted((int(a), float(b)) for a, b in entries)
            leaf_lab += [a for a, _ in pairs]
            leaf_val += [b for _, b in pairs]
        else:
            children.append([pos, neg])
            w_idx += [int(a) for a, _ in entries]
            w_val += [float(b) for _, b in entries]
        w_ptr.append(len(w_idx))
        leaf_ptr.append(len(leaf_lab))
        p += 5
    return {"children": children, "w_indptr": w_ptr, "w_index": w_idx, "w_value": w_val,
            "leaf_indptr": leaf_ptr, "leaf_label": leaf_lab, "leaf_score": leaf_val}


def ours_as_layout(forest, t):
    """Tree ``t`` (position in the forest) in the same layout, leaf labels sorted."""
    a, b = int(forest["tree_offsets"][t]), int(forest["tree_offsets"][t + 1])
    wp, lp = forest["w_indptr"], forest["leaf_indptr"]
    leaf = [sorted(zip(forest["leaf_label"][lp[g]:lp[g + 1]].tolist(),
                       forest["leaf_score"][lp[g]:lp[g + 1]].astype(float).tolist()))
            for g in range(a, b)]
    return {"children": forest["children"][a:b].tolist(),
            "w_indptr": (wp[a:b + 1] - wp[a]).tolist(),
            "w_index": forest["w_index"][wp[a]:wp[b]].tolist(),
            "w_value": forest["w_value"][wp[a]:wp[b]].astype(float).tolist(),
            "leaf_indptr": np.cumsum([0] + [len(x) for x in leaf]).tolist(),
            "leaf_label": [lab for x in leaf for lab, _ in x],
            "leaf_score": [v for x in leaf for _, v in x]}


def digest(tree):
    """A compact fingerprint of a tree (for the CI fixture): children, and per node the number
    of weights, the sum of their feature ids and the sum of the weights, plus the leaf labels
    and the sum of each leaf's scores."""
    wp, lp = tree["w_indptr"], tree["leaf_indptr"]
    return {"children": tree["children"],
            "w_count": [wp[i + 1] - wp[i] for i in range(len(wp) - 1)],
            "w_index_sum": [sum(tree["w_index"][wp[i]:wp[i + 1]]) for i in range(len(wp) - 1)],
            "w_value_sum": [float("%.6g" % sum(tree["w_value"][wp[i]:wp[i + 1]]))
                            for i in range(len(wp) - 1)],
            "leaf_indptr": tree["leaf_indptr"], "leaf_label": tree["leaf_label"],
            "leaf_score_sum": [float("%.6g" % sum(tree["leaf_score"][lp[i]:lp[i + 1]]))
                               for i in range(len(lp) - 1)]}


def first_difference(ours, theirs, rtol=1e-5):
    """Index of the first node (breadth-first) where the trees differ, or None."""
    n = max(len(ours["children"]), len(theirs["children"]))
    for i in range(n):
        if i >= len(ours["children"]) or i >= len(theirs["children"]):
            return i
        if list(ours["children"][i]) != list(theirs["children"][i]):
            return i
        for key, ptr in (("w_index", "w_indptr"), ("leaf_label", "leaf_indptr")):
            a = ours[key][ours[ptr][i]:ours[ptr][i + 1]]
            b = theirs[key][theirs[ptr][i]:theirs[ptr][i + 1]]
            if list(a) != list(b):
                return i
        a = np.array(ours["w_value"][ours["w_indptr"][i]:ours["w_indptr"][i + 1]])
        b = np.array(theirs["w_value"][theirs["w_indptr"][i]:theirs["w_indptr"][i + 1]])
        # theirs are printed with 6 significant digits
        if not np.allclose(a, b, rtol=rtol, atol=1e-30):
            return i
        a = np.array(ours["leaf_score"][ours["leaf_indptr"][i]:ours["leaf_indptr"][i + 1]])
        b = np.array(theirs["leaf_score"][theirs["leaf_indptr"][i]:theirs["leaf_indptr"][i + 1]])
        if not np.allclose(a, b, rtol=rtol, atol=1e-30):
            return i
    return None


def compare_centroids(path, centroids):
    """Max |ours - theirs| over their ``w`` file (labels x features, 6 printed decimals), and
    whether every label has the same feature ids."""
    with open(path) as fh:
        lines = fh.read().split("\n")
    n_labels = int(lines[0].split()[0])
    ptr, idx, val = (centroids[k] for k in ("tail_indptr", "tail_index", "tail_value"))
    worst, same_ids = 0.0, True
    for lab in range(n_labels):
        ent = [tok.split(":") for tok in lines[1 + lab].split()]
        a, b = ptr[lab], ptr[lab + 1]
        if [int(i) for i, _ in ent] != idx[a:b].tolist():
            same_ids = False
            continue
        if ent:
            worst = max(worst, float(np.abs(np.array([float(v) for _, v in ent])
                                            - val[a:b]).max()))
    return worst, same_ids


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--algo", choices=("fastxml", "pfastrexml"), default="fastxml")
    ap.add_argument("--data", default=DATA, help="XC split directory (*_train.txt)")
    ap.add_argument("--cpp-bin", help="directory with the authors' fastXML_train")
    ap.add_argument("--cpp-model", help="their model directory, trained with -s 0")
    ap.add_argument("--trees", type=int, default=50)
    ap.add_argument("--write-fixture")
    ap.add_argument("--fixture-trees", default="0,1")
    args = ap.parse_args(argv)
    if not (args.cpp_bin or args.cpp_model):
        ap.error("give --cpp-bin or --cpp-model")

    from _harness import Results

    from sparkxml_kernels.fastxml import train_forest
    from sparkxml_kernels.fastxml.pfastre import propensity_weights, tail_centroids
    from sparkxml_kernels.formats import read_xc, write_smat

    res = Results("fastxml_vs_cpp_trees")
    pf = args.algo == "pfastrexml"
    train = [f for f in sorted(os.listdir(args.data)) if f.endswith("_train.txt")][0]
    Xi, Xf, Xv, Yi, Yl, d, n_labels = read_xc(os.path.join(args.data, train))[:7]
    weights = propensity_weights(Yi, Yl, n_labels) if pf else None
    model_dir = args.cpp_model
    if args.cpp_bin:
        tmp = tempfile.mkdtemp(prefix=f"{args.algo}-cpp-")
        write_smat(os.path.join(tmp, "X.txt"), Xi, Xf, Xv, d, value_format="%.9g")
        write_smat(os.path.join(tmp, "Y.txt"), Yi, Yl, np.ones(len(Yl)), n_labels, "%g")
        model_dir = os.path.join(tmp, "model")
        os.makedirs(model_dir)
        files = [os.path.join(tmp, "X.txt"), os.path.join(tmp, "Y.txt")]
        exe = "fastXML_train"
        if pf:
            # float32 values written exactly, so their reader gets our weights bit for bit
            with open(os.path.join(tmp, "inv_prop.txt"), "w") as out:
                out.write("\n".join("%.9g" % v for v in weights) + "\n")
            files.append(os.path.join(tmp, "inv_prop.txt"))
            exe = "PfastreXML_train"
        t0 = time.perf_counter()
        subprocess.run([os.path.join(args.cpp_bin, exe), *files, model_dir, "-T", "2", "-s",
                        "0", "-t", str(args.trees), "-q", "1"], check=True,
                       stdout=subprocess.DEVNULL)
        cpp_s = time.perf_counter() - t0
        print(f"their C++ trained {args.trees} trees in {cpp_s:.1f} s")
        res.add(f"{args.algo} C++ (authors), -T 2", "train", cpp_s, "s")
    t0 = time.perf_counter()
    forest = train_forest(Xi, Xf, Xv, Yi, Yl, d, n_labels, np.arange(args.trees), seed=0,
                          label_weight=weights, normalise_dcg=not pf)
    ours_s = time.perf_counter() - t0
    print(f"ours trained {args.trees} trees in {ours_s:.1f} s (one process)")
    res.add(f"{args.algo} sparkxml kernel, one process", "train", ours_s, "s")
    if pf and os.path.exists(os.path.join(model_dir, "w")):
        worst, same_ids = compare_centroids(os.path.join(model_dir, "w"),
                                            tail_centroids(Xi, Xf, Xv, Yi, Yl, d, n_labels, 1.0))
        print(f"tail centroids: same feature ids {same_ids}, largest difference {worst:.2g} "
              f"(theirs printed to 6 decimals)")

    same = 0
    for t in range(args.trees):
        theirs = read_cpp_tree(os.path.join(model_dir, f"{t}.tree"))
        ours = ours_as_layout(forest, t)
        diff = first_difference(ours, theirs)
        same += diff is None
        print(f"tree {t}: {len(ours['children'])} nodes ours, {len(theirs['children'])} theirs; "
              + ("identical" if diff is None else f"first difference at node {diff}"))
    print(f"{same} of {args.trees} trees identical")
    res.add(f"{args.algo}, {args.trees} trees", "trees identical", same, "trees")
    res.write()

    if args.write_fixture:
        ids = [int(x) for x in args.fixture_trees.split(",")]
        exe = "PfastreXML_train" if pf else "fastXML_train"
        fixture = {"source": f"{exe} -s 0 (authors' C++), training file " + train,
                   "trees": {str(t): digest(read_cpp_tree(os.path.join(model_dir, f"{t}.tree")))
                             for t in ids}}
        opener = gzip.open if args.write_fixture.endswith(".gz") else open
        with opener(args.write_fixture, "wt") as out:
            json.dump(fixture, out, separators=(",", ":"))
        print(f"wrote {args.write_fixture}")
    return 0 if same == args.trees else 1


if __name__ == "__main__":
    sys.exit(main())
