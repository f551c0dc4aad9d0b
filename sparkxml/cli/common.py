"""What every ``sparkxml`` subcommand shares: the checks ``main`` runs before Spark starts (the
input files exist, the output is free) and loading a saved model of an expected kind."""
from __future__ import annotations

import os
import re

# the options that name files a subcommand reads (``--valid-query`` is ``args.valid_query``)
INPUT_OPTIONS = ("data", "test", "valid", "labels", "xml", "query", "valid_query")
_URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]+:")  # s3a://, dbfs:/, hdfs://; not C:\ (1 letter)


def is_local_path(path: str) -> bool:
    """True for a path on this machine's file system, False for a URI (``s3a://...``,
    ``dbfs:/...``, ``file:...``), which is left to Spark and pyarrow to resolve."""
    return not _URI.match(path)


def inputs_exist(args, names=INPUT_OPTIONS) -> None:
    """Fail when a local input file named by one of the options ``names`` does not exist.

    ``main`` runs it before Spark starts, so a mistyped ``--data`` fails in a second with
    ``--data train.txt does not exist`` instead of a Spark traceback a minute later."""
    for name in names:
        path = getattr(args, name, None)
        if path and is_local_path(path) and not os.path.exists(path):
            raise FileNotFoundError(f"--{name.replace('_', '-')} {path} does not exist")


def check_model_path(path: str, overwrite: bool) -> None:
    """Fail before any training when ``path`` exists and ``--overwrite`` was not given.

    A save would refuse the path anyway, but only after the fit: checking first saves the
    training time. ``path`` may be a local path or a URI pyarrow's filesystems understand.
    """
    from sparkxml_kernels.persist import exists

    if not overwrite and exists(path):
        raise FileExistsError(f"--model {path} already exists; pass --overwrite to replace it "
                              f"(nothing was trained)")


def model_path_free(args) -> None:
    """The ``check`` hook of every ``train`` subcommand: ``--model`` is free (or
    ``--overwrite`` given) and the input files exist."""
    check_model_path(args.model, args.overwrite)
    inputs_exist(args)


def model_and_inputs_exist(args) -> None:
    """The ``check`` hook of every ``predict`` and ``evaluate`` subcommand: the saved
    ``--model`` and the input files exist."""
    inputs_exist(args, ("model",) + INPUT_OPTIONS)


def load_saved_model(path: str, allowed: tuple):
    """Load the sparkxml model saved at ``path``, which must hold one of the ``allowed``
    classes; any other class is an error naming what was found."""
    from sparkxml._core.base import class_name, names_class
    from sparkxml_kernels.persist import check_sparkxml, load_metadata

    meta = load_metadata(path)
    check_sparkxml(meta, path)
    for cls in allowed:
        if names_class(str(meta.get("class")), cls):
            return cls.load(path)
    raise ValueError(f"--model {path} holds a {meta.get('class')}, expected one of "
                     f"{sorted(class_name(c) for c in allowed)}")
