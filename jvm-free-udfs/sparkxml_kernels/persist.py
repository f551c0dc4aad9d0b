"""Model directories: Spark ML metadata plus plain arrays, read and written without Spark.

Layout of a saved sparkxml model (any estimator)::

    path/
      metadata/part-00000   one JSON line in Spark ML's DefaultParamsWriter format
                            (class, timestamp, sparkVersion, uid, paramMap, defaultParamMap)
                            plus "formatVersion" and "modelKind"
      metadata/_SUCCESS
      data/arrays.npz       the model's arrays (numpy .npz, loaded with allow_pickle=False)
      data/_SUCCESS

Saving writes everything into a hidden sibling directory first and renames it into place, so
a save that fails part-way leaves no directory that loads. Paths may be local paths or any URI
``pyarrow.fs`` understands (file://, hdfs://, s3://, gs://, abfs://).
"""
from __future__ import annotations

import io
import json
import os
import time
import uuid
import warnings

import numpy as np
import pyarrow.fs as pafs

FORMAT_VERSION = 1


class ModelFormatError(ValueError):
    """The directory is missing, corrupt, or not a sparkxml model."""


def resolve(path: str):
    """Return (filesystem, path inside it) for a local path or URI."""
    if not isinstance(path, str) or not path:
        raise ValueError(f"model path must be a non-empty string, got {path!r}")
    if "://" not in path:
        return pafs.LocalFileSystem(), os.path.abspath(path)
    return pafs.FileSystem.from_uri(path)


def exists(path: str) -> bool:
    fs, p = resolve(path)
    return fs.get_file_info(p).type != pafs.FileType.NotFound


def _write_bytes(fs, path: str, payload: bytes) -> None:
    with fs.open_output_stream(path) as out:
        out.write(payload)


def _read_bytes(fs, path: str) -> bytes:
    with fs.open_input_stream(path) as f:
        return f.read()


def metadata_json(class_name: str, uid: str, param_map: dict, default_param_map: dict,
                  model_kind: str, spark_version: str = "", extra: dict | None = None) -> str:
    """Build the metadata line in Spark ML's DefaultParamsWriter format."""
    meta = {
        "class": class_name,
        "timestamp": int(time.time() * 1000),
        "sparkVersion": spark_version,
        "uid": uid,
        "paramMap": param_map,
        "defaultParamMap": default_param_map,
        "formatVersion": FORMAT_VERSION,
        "modelKind": model_kind,
    }
    if extra:
        meta.update(extra)
    return json.dumps(meta, separators=(",", ":"))


def save_directory(path: str, metadata: str, arrays: dict | None, overwrite: bool) -> None:
    """Write ``metadata`` (one JSON line) and ``arrays`` to ``path`` atomically.

    Raises ``FileExistsError`` when ``path`` exists (a directory or a plain file) and
    ``overwrite`` is false. With ``overwrite``, whatever is at ``path`` is replaced only once
    the new model is complete: it is moved aside under a hidden name, the new directory is
    renamed into place, then the old one is deleted; if the rename fails, the old one is
    moved back. Nothing hidden is left behind either way.
    """
    fs, target = resolve(path)
    existing = fs.get_file_info(target).type
    if existing != pafs.FileType.NotFound and not overwrite:
        raise FileExistsError(f"path {path} already exists; use write().overwrite().save(path)")
    parent, name = os.path.split(target.rstrip("/"))
    tmp = f"{parent}/.{name}.tmp-{uuid.uuid4().hex}"
    aside = None  # (hidden path, FileType) of what was at ``path`` while it is moved aside
    try:
        fs.create_dir(f"{tmp}/metadata", recursive=True)
        _write_bytes(fs, f"{tmp}/metadata/part-00000", (metadata + "\n").encode())
        _write_bytes(fs, f"{tmp}/metadata/_SUCCESS", b"")
        if arrays is not None:
            fs.create_dir(f"{tmp}/data", recursive=True)
            buf = io.BytesIO()
            np.savez(buf, **{k: np.asarray(v) for k, v in arrays.items()})
            _write_bytes(fs, f"{tmp}/data/arrays.npz", buf.getvalue())
            _write_bytes(fs, f"{tmp}/data/_SUCCESS", b"")
        existing = fs.get_file_info(target).type
        if existing != pafs.FileType.NotFound:
            trash = f"{parent}/.{name}.old-{uuid.uuid4().hex}"
            fs.move(target, trash)
            aside = (trash, existing)
        else:
            fs.create_dir(parent, recursive=True)
        fs.move(tmp, target)
    except BaseException:
        _delete(fs, tmp, pafs.FileType.Directory)
        if aside is not None and fs.get_file_info(target).type == pafs.FileType.NotFound:
            fs.move(aside[0], target)  # put the old model back
        raise
    if aside is not None:
        try:
            _delete(fs, *aside, quiet=False)
        except OSError as e:
            warnings.warn(f"the model was saved to {path}, but the previous content, moved "
                          f"to {aside[0]}, could not be deleted: {e}", stacklevel=2)


def _delete(fs, path: str, kind, quiet: bool = True) -> None:
    try:
        if kind == pafs.FileType.Directory:
            fs.delete_dir(path)
        else:
            fs.delete_file(path)
    except OSError:
        if not quiet:
            raise


def load_metadata(path: str, expected_class: str | None = None) -> dict:
    """Read and check ``path/metadata``; raise ``ModelFormatError`` naming what is wrong."""
    fs, p = resolve(path)
    if fs.get_file_info(p).type == pafs.FileType.NotFound:
        raise ModelFormatError(f"model directory {path} does not exist")
    meta_dir = f"{p}/metadata"
    if fs.get_file_info(meta_dir).type != pafs.FileType.Directory:
        raise ModelFormatError(f"{path} is not a saved model: it has no metadata/ directory")
    parts = sorted(f.path for f in fs.get_file_info(pafs.FileSelector(meta_dir))
                   if os.path.basename(f.path).startswith("part-"))
    if not parts:
        raise ModelFormatError(f"{path}/metadata holds no part-* file")
    text = _read_bytes(fs, parts[0]).decode("utf-8", errors="replace").strip()
    try:
        meta = json.loads(text.splitlines()[0])
    except (ValueError, IndexError) as e:
        raise ModelFormatError(f"{path}/metadata is corrupt: {e}") from None
    if not isinstance(meta, dict) or not isinstance(meta.get("class"), str):
        raise ModelFormatError(f"{path}/metadata is corrupt: no 'class' entry")
    if expected_class is not None and meta["class"] != expected_class:
        raise ModelFormatError(f"{path} holds a {meta['class']}, not a {expected_class}")
    return meta


def check_sparkxml(meta: dict, path: str) -> None:
    """Raise ``ModelFormatError`` unless ``meta`` is sparkxml metadata this version reads."""
    if "formatVersion" not in meta or "modelKind" not in meta:
        raise ModelFormatError(f"{path} was not written by sparkxml (class {meta.get('class')})")
    version = meta["formatVersion"]
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise ModelFormatError(f"{path}/metadata is corrupt: formatVersion {version!r} is not "
                               f"a positive integer")
    if version > FORMAT_VERSION:
        raise ModelFormatError(f"{path} has formatVersion {version}; this sparkxml "
                               f"reads up to {FORMAT_VERSION}: upgrade sparkxml")
    if not isinstance(meta["modelKind"], str):
        raise ModelFormatError(f"{path}/metadata is corrupt: modelKind {meta['modelKind']!r} "
                               f"is not a string")


def as_format_error(path: str, e: BaseException) -> ModelFormatError:
    """``e`` (raised while reading the model at ``path``) as a ModelFormatError naming the
    path; ModelFormatErrors pass through."""
    if isinstance(e, ModelFormatError):
        return e
    if isinstance(e, OSError):
        return ModelFormatError(f"{path}: cannot read the model: {e}")
    return ModelFormatError(f"{path}: the model is corrupt: {type(e).__name__}: {e}")


# what reading a corrupt model directory can raise besides ModelFormatError
LOAD_ERRORS = (ValueError, TypeError, KeyError, IndexError, AttributeError, OverflowError,
               UnicodeError, OSError)


def load_arrays(path: str, required: tuple = ()) -> dict:
    """Read ``path/data/arrays.npz`` into a dict of numpy arrays (no pickle)."""
    fs, p = resolve(path)
    f = f"{p}/data/arrays.npz"
    if fs.get_file_info(f).type != pafs.FileType.File:
        raise ModelFormatError(f"{path} is incomplete: data/arrays.npz is missing")
    try:
        with np.load(io.BytesIO(_read_bytes(fs, f)), allow_pickle=False) as z:
            arrays = {k: z[k] for k in z.files}
    except Exception as e:  # zipfile.BadZipFile, ValueError, OSError...
        raise ModelFormatError(f"{path}/data/arrays.npz is corrupt: {e}") from None
    missing = [k for k in required if k not in arrays]
    if missing:
        raise ModelFormatError(f"{path}/data/arrays.npz lacks arrays {missing}")
    return arrays
