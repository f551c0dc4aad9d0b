"""The array dtypes every kernel agrees on, in one place.

CSR matrices travel as (indptr, indices, data). Indices are int32 (feature and label ids fit;
Spark ML vectors use int32 too); indptr is int64 so a partition may hold more than 2**31
non-zeros; values are float32 for the FastXML kernels (the authors' C++ uses float) and
float64 where boosting accumulates gradients.
"""
import numpy as np

INDPTR = np.int64
INDEX = np.int32
VALUE = np.float32
LABEL = np.int32
SCORE = np.float32
FLOAT = np.float64
BIN = np.uint8
NODE = np.int32
# a row's quantised gradient and hessian levels packed in one word (gbt/quantize.py)
LEVELS = np.int32
