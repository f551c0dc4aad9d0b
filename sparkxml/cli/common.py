"""What every ``sparkxml`` subcommand shares: the output check before training and loading a
saved model of an expected kind."""
from __future__ import annotations


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
    """The ``check`` hook of every ``train`` subcommand: ``main`` runs it before Spark starts,
    so a wrong ``--model`` fails in a second."""
    check_model_path(args.model, args.overwrite)


def load_saved_model(path: str, allowed: tuple):
    """Load the sparkxml model saved at ``path``, which must hold one of the ``allowed``
    classes; any other class is an error naming what was found."""
    from sparkxml._core.base import _class_name, names_class
    from sparkxml_kernels.persist import check_sparkxml, load_metadata

    meta = load_metadata(path)
    check_sparkxml(meta, path)
    for cls in allowed:
        if names_class(str(meta.get("class")), cls):
            return cls.load(path)
    raise ValueError(f"--model {path} holds a {meta.get('class')}, expected one of "
                     f"{sorted(_class_name(c) for c in allowed)}")
