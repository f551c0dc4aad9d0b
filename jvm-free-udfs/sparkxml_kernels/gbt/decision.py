"""The decision array: what rank 0 sends every rank after each round of a tree's growth
(grower.py).

Decision array (float64)
------------------------
``[n_records, root_G, root_H, 0, record_0 ..., record_{n-1}]``, each record
``[node, feature, bin, default_left, threshold, gain, G_L, H_L, G_R, H_R]`` (root sums are
filled in the first round only). Records are applied in order; children get the next two
node ids (left first). With categorical features every record carries ``1 + W`` more values:
``is_cat`` and the ``W`` uint32 words of the left bin set (categorical.py), as exact floats.
"""
from __future__ import annotations

import numpy as np

from .._dtypes import FLOAT
from .splitting import TIE_RTOL

HEADER = 4
REC = 10


def split_record(c, res, cres, i, W):
    """Decision record of candidate node ``c`` (row ``i`` of the numerical result ``res``
    and of the categorical one ``cres``; None where that search did not run), or None when
    neither has a split. A categorical split wins only when better by the near-tie margin
    (splitting.TIE_RTOL)."""
    num_ok = res is not None and res.feature[i] >= 0
    cat_ok = cres is not None and cres.feature[i] >= 0
    if cat_ok and num_ok:
        g = res.gain[i]
        cat_ok = cres.gain[i] > g + TIE_RTOL * 2.0 * abs(g)
    if not (cat_ok or num_ok):
        return None
    # filled in place: a record is built every round, and list-to-array conversions cost
    # several microseconds each
    rec = np.zeros(REC + (1 + W if W else 0), FLOAT)
    rec[0] = c
    if cat_ok:
        rec[1], rec[2], rec[4], rec[5] = cres.feature[i], -1, np.nan, cres.gain[i]
        rec[6:8] = cres.left_sums[i]
        rec[8:10] = cres.right_sums[i]
        rec[REC] = 1
        rec[REC + 1:] = cres.sets[i]
    else:
        rec[1], rec[2], rec[3] = res.feature[i], res.bin[i], res.default_left[i]
        rec[4], rec[5] = res.threshold[i], res.gain[i]
        rec[6:8] = res.left_sums[i]
        rec[8:10] = res.right_sums[i]
    return rec
