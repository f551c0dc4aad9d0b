"""What the tree-ensemble exporters share: objective names per format, the checks every
export makes, node orders and category sets of one tree, atomic single-file writes."""
from __future__ import annotations

import math
import os
import uuid

import numpy as np

# sparkxml objective -> (XGBoost objective, link) and LightGBM objective; the link says how
# a format's output-space base score relates to the margin ("identity", "logit", "log")
XGBOOST_OBJECTIVES = {
    "squared_error": ("reg:squarederror", "identity"),
    "absolute_error": ("reg:absoluteerror", "identity"),
    "quantile": ("reg:quantileerror", "identity"),
    "logistic": ("binary:logistic", "logit"),
    "softmax": ("multi:softprob", "identity"),
    "lambdarank": ("rank:ndcg", "identity"),
    "pairwise": ("rank:pairwise", "identity"),
    "map": ("rank:map", "identity"),
    "poisson": ("count:poisson", "log"),
    "gamma": ("reg:gamma", "log"),
    "tweedie": ("reg:tweedie", "log"),
    "cox": ("survival:cox", "log"),
}
LIGHTGBM_OBJECTIVES = {
    "squared_error": "regression",
    "absolute_error": "regression_l1",
    "quantile": "quantile",
    "huber": "huber",
    "logistic": "binary sigmoid:1",
    "softmax": "multiclass num_class:{k}",
    "lambdarank": "lambdarank",
    "pairwise": "lambdarank",
    "map": "lambdarank",
    "poisson": "poisson",
    "gamma": "gamma",
    "tweedie": "tweedie",
}


def base_objective(pred) -> str:
    """The model's objective without parameters (``"quantile[alpha=0.9]"`` -> quantile)."""
    return pred.objective.partition("[")[0]


def objective_for(pred, table: dict, fmt: str):
    """``table``'s entry for the model's objective, or a ValueError naming both."""
    obj = base_objective(pred)
    if obj not in table:
        raise ValueError(f"format {fmt!r} cannot hold objective {pred.objective!r}; "
                         f"exportable objectives: {sorted(table)}")
    return table[obj]


def check_round_layout(pred, fmt: str) -> None:
    """The formats lay trees out round by round, tree t adding to output t % n_outputs."""
    k = pred.n_outputs
    if pred.n_trees % k or not np.array_equal(pred.tree_outputs,
                                              np.arange(pred.n_trees) % k):
        raise ValueError(f"format {fmt!r} needs trees in rounds (tree t adds to output "
                         f"t % {k}); this model's trees are not laid out so")


def tree_slice(pred, t: int):
    """``(a, b)``: tree ``t``'s global node range."""
    return int(pred.tree_offsets[t]), int(pred.tree_offsets[t + 1])


def is_categorical(pred, j: int) -> bool:
    """Whether global node ``j`` splits on a category set."""
    return pred.has_categorical and int(pred.cat_ptr[j + 1]) > int(pred.cat_ptr[j])


def category_list(pred, j: int) -> list:
    """The categories (ints, ascending) global node ``j`` sends left."""
    words = pred.cat_words[int(pred.cat_ptr[j]):int(pred.cat_ptr[j + 1])]
    bits = np.unpackbits(words.astype("<u4").view(np.uint8), bitorder="little")
    return [int(c) for c in np.flatnonzero(bits)]


def check_missing(pred, missing: float, fmt: str, allowed: tuple) -> None:
    """Refuse a ``missing`` value the format cannot express."""
    if math.isnan(missing) or missing in allowed:
        return
    raise ValueError(f"format {fmt!r} cannot hold missing={missing!r} (only NaN"
                     + "".join(f" or {a!r}" for a in allowed) + "); replace that value by "
                     "NaN in the data and set the model's missing to NaN before exporting")


def check_target(path: str, overwrite: bool):
    """``(filesystem, path inside it)`` of the file an export may write: refuses a directory,
    an existing file unless ``overwrite``, and a local path whose directory is missing."""
    import pyarrow.fs as pafs

    from ..persist import pyarrow_path, resolve

    if not isinstance(path, str) or not path:
        raise ValueError(f"path must be a non-empty string, got {path!r}")
    fs, p = resolve(path)
    info = fs.get_file_info(p)
    if info.type == pafs.FileType.Directory:
        raise ValueError(f"path {path!r} is a directory; the export is one file")
    if info.type != pafs.FileType.NotFound and not overwrite:
        raise FileExistsError(f"path {path!r} already exists; pass overwrite=True to "
                              f"replace it")
    if isinstance(fs, pafs.LocalFileSystem):
        p = os.path.abspath(pyarrow_path(path))
        if not os.path.isdir(os.path.dirname(p)):
            raise FileNotFoundError(f"the directory of {path!r} does not exist")
    return fs, p


def write_file(path: str, payload: bytes, overwrite: bool) -> None:
    """Write ``payload`` to the file ``path`` (checked by :func:`check_target`): locally
    through a hidden sibling renamed into place (a failed export leaves the previous file),
    elsewhere through pyarrow's filesystems."""
    import pyarrow.fs as pafs

    fs, p = check_target(path, overwrite)
    if isinstance(fs, pafs.LocalFileSystem):
        parent = os.path.dirname(p)
        tmp = os.path.join(parent, f".{os.path.basename(p)}.{uuid.uuid4().hex}.tmp")
        try:
            with open(tmp, "wb") as f:
                f.write(payload)
            os.replace(tmp, p)
        finally:
            if os.path.exists(tmp):
                os.remove(tmp)
        return
    with fs.open_output_stream(p) as out:
        out.write(payload)
