"""What every fit reports (``model.summary``), whatever the family, and how it is saved.

Every training summary derives from :class:`TrainingSummary`, which holds the fields every
fit measures:

``trainingSeconds``
    Wall time of the training stage (driver view).
``checksSeconds``
    Wall time of the input checks before it (None where none ran or it was not measured).
``numWorkers``
    Training tasks that ran.
``workerInfo``
    One dict per worker (rank order): rows, memory, timings, as that family's tasks measure
    them.

A family's summary adds its own fields (histories, rounds, figures of its solver). Saved with
the model, every field travels under a ``summary.<name>`` array: the common ones and those a
subclass lists in ``_float_fields`` / ``_int_fields`` / ``_json_fields`` (0-d float64, 0-d
int64 and a JSON string), plus whatever the subclass's ``_family_arrays`` writes. A summary
loads back when its arrays are there (``_from_arrays`` returns None otherwise, so a directory
saved without one loads with ``hasSummary`` False); a directory saved before the common
fields were stored loads with their defaults (0.0 seconds, no worker info).
"""
from __future__ import annotations

import json
import math

import numpy as np

__all__ = ["TrainingSummary"]

PREFIX = "summary."


def _plain(value):
    """A JSON-able copy of ``value`` (numpy scalars and arrays become Python values)."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, np.ndarray):
        return _plain(value.tolist())
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return str(value)


class TrainingSummary:
    """The fields every fit reports (see the module docstring).

    Subclasses list what they add in ``_float_fields``, ``_int_fields`` and ``_json_fields``
    (saved and loaded here), may write more arrays in ``_family_arrays`` and read them in
    ``_from_family_arrays``, and set ``_marker_keys``: the arrays whose presence says a
    summary was saved (default: the common fields').
    """

    _float_fields: tuple = ("trainingSeconds", "checksSeconds")
    _int_fields: tuple = ("numWorkers",)
    _json_fields: tuple = ("workerInfo",)
    _marker_keys: tuple = ()

    def __init__(self, training_seconds: float = 0.0, worker_info=None,
                 checks_seconds: float | None = None, num_workers: int | None = None):
        self.trainingSeconds = float(training_seconds or 0.0)
        self.workerInfo = list(worker_info or [])
        self.checksSeconds = None if checks_seconds is None else float(checks_seconds)
        self.numWorkers = int(num_workers) if num_workers is not None else len(self.workerInfo)

    # ------------------------------------------------------------------ persistence
    @classmethod
    def _common_keys(cls) -> tuple:
        return tuple(PREFIX + f for f in cls._float_fields + cls._int_fields
                     + cls._json_fields)

    def _to_arrays(self) -> dict:
        out = {}
        for f in self._float_fields:
            v = getattr(self, f, None)
            out[PREFIX + f] = np.asarray(math.nan if v is None else float(v), np.float64)
        for f in self._int_fields:
            v = getattr(self, f, None)
            out[PREFIX + f] = np.asarray(-1 if v is None else int(v), np.int64)
        for f in self._json_fields:
            out[PREFIX + f] = np.asarray(json.dumps(_plain(getattr(self, f, None))))
        out.update(self._family_arrays())
        return out

    def _family_arrays(self) -> dict:
        return {}

    @classmethod
    def _saved(cls, arrays: dict) -> bool:
        keys = cls._marker_keys or (PREFIX + "trainingSeconds",)
        return all(k in arrays for k in keys)

    @classmethod
    def _from_arrays(cls, arrays: dict):
        """The summary saved in ``arrays``, or None when there is none."""
        if not cls._saved(arrays):
            return None
        summary = cls._from_family_arrays(arrays)
        for f in cls._float_fields:
            if PREFIX + f in arrays:
                v = float(arrays[PREFIX + f])
                setattr(summary, f, None if math.isnan(v) and f != "trainingSeconds" else v)
        for f in cls._int_fields:
            if PREFIX + f in arrays:
                v = int(arrays[PREFIX + f])
                setattr(summary, f, None if v < 0 else v)
        for f in cls._json_fields:
            if PREFIX + f in arrays:
                setattr(summary, f, json.loads(str(arrays[PREFIX + f])))
        return summary

    @classmethod
    def _from_family_arrays(cls, arrays: dict):
        return cls()

    # ------------------------------------------------------------------ progress lines
    def _rows(self) -> list:
        """[(i, {metric: value}), ...], i 1-based: the history as progress lines, for a fit
        whose lines did not come back live (``FitProgress.log_rounds``)."""
        return []

    def __repr__(self):
        return (f"{type(self).__name__}(trainingSeconds={self.trainingSeconds:.3g}, "
                f"numWorkers={self.numWorkers})")
