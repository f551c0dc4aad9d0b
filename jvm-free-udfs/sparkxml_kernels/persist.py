"""Model directories: Spark ML metadata plus the model's arrays as parquet rows.

Layout of a saved sparkxml model (any estimator), ``formatVersion`` 2::

    path/
      metadata/part-00000*   one JSON line in Spark ML's DefaultParamsWriter format (class,
                             timestamp, sparkVersion, uid, paramMap, defaultParamMap) plus
                             "formatVersion": 2, "modelKind", "saveId" (32 hex digits, new for
                             every save), "arrays" (the manifest: [[name, dtype, shape], ...])
                             and "chunkBytes", and "chunkCrc32" (the CRC-32 of every chunk's
                             bytes, in seq order)
      data/*.parquet         one row per chunk of at most chunkBytes (16 MiB) of an array:
                             save_id string, seq int64 (0, 1, ... over the manifest's arrays
                             and their parts), name, dtype (numpy's dtype.str), shape
                             array<int64>, part int32, data binary; zstd-compressed
      metadata/_SUCCESS, data/_SUCCESS, and whatever else Spark writes (.crc files)

This is what Spark's own DataFrame writers produce (``write.text`` for the metadata, exactly
what ``DefaultParamsWriter`` writes, and ``write.parquet`` for the data), so the same
directory is written and read either through Spark, wherever Spark's Hadoop filesystems reach
(``sparkxml._core.storage``: Spark Connect, ``s3a://``, ``wasbs://``, ``dbfs:/``, HDFS), or here
through ``pyarrow`` (local paths in classic sessions, and ``sparkxml_kernels.load_model``
without Spark). One format, two transports.

Atomicity. A directory loads only when its metadata names a save id, the data rows all carry
that id, and every chunk the manifest lists is there exactly once with the right length:
the writers write the data first and the metadata last, so a save that fails part-way, or an
overwrite that stopped after replacing the data, leaves no directory that loads. Here
(``save_directory``) everything is also written into a hidden sibling that is renamed into
place, so a failed overwrite keeps the previous model; through Spark (no rename on object
stores) an overwrite first deletes what is at the path, as Spark ML's own writers do.

Integrity. Every chunk is checked against its CRC-32 from the metadata when it is read, so a
data file whose bytes were overwritten (in parts that parquet and zstd do not check
themselves) fails to load instead of serving other numbers. Directories saved before the
checksums existed (no "chunkCrc32") load as before, unchecked.

``formatVersion`` 1 directories (``data/arrays.npz``) still load. Every load failure is a
``ModelFormatError`` naming the path.

Paths: local paths, ``file://`` and any URI ``pyarrow.fs`` understands (``hdfs://``,
``s3://``, ``gs://``, ``abfs://``); ``s3a://``/``s3n://`` are read as ``s3://`` and
``dbfs:/x`` as the Databricks FUSE path ``/dbfs/x`` (also ``/Volumes/...``).
"""
from __future__ import annotations

import io
import json
import os
import socket
import time
import uuid
import warnings
import zlib
from typing import Any, Callable, Iterator, Union

import numpy as np
import pyarrow as pa
import pyarrow.fs as pafs

from .array_chunks import CHUNK_FIELDS, Assembler, binary_array, iter_chunks, manifest_of

FORMAT_VERSION = 2
CHUNK_BYTES = 16 << 20
# rows written together (one Arrow batch, one parquet row group, one Spark write job)
GROUP_BYTES = 64 << 20
COMPRESSION = "zstd"
DBFS_FUSE = "/dbfs"

DATA_SCHEMA = pa.schema([pa.field("save_id", pa.string(), False),
                         pa.field("seq", pa.int64(), False)] + CHUNK_FIELDS)


# a class path, or a predicate on class paths (its ``str`` names it in errors)
ExpectedClass = Union[str, Callable[[str], bool], None]


class ModelFormatError(ValueError):
    """The directory is missing, corrupt, or not a sparkxml model."""


# ---------------------------------------------------------------------------- paths
def pyarrow_path(path: str) -> str:
    """``path`` as pyarrow can open it: ``dbfs:/x`` and ``dbfs:///x`` -> ``/dbfs/x`` (the
    Databricks FUSE mount) but ``dbfs:/Volumes/x`` -> ``/Volumes/x`` (Unity Catalog volumes
    have their own mount), ``file:/x`` and ``file:///x`` -> ``/x``, ``s3a://``/``s3n://`` ->
    ``s3://``."""
    if path.startswith("dbfs:"):
        rest = path[len("dbfs:"):].lstrip("/")
        return f"/{rest}" if rest.startswith("Volumes/") else f"{DBFS_FUSE}/{rest}"
    if path.startswith("file:/") and not path.startswith("file://") \
            or path.startswith("file:///"):
        return "/" + path[len("file:"):].lstrip("/")
    for scheme in ("s3a://", "s3n://"):
        if path.startswith(scheme):
            return "s3://" + path[len(scheme):]
    return path


def resolve(path: str) -> tuple[Any, str]:
    """Return (filesystem, path inside it) for a local path or URI."""
    if not isinstance(path, str) or not path:
        raise ValueError(f"model path must be a non-empty string, got {path!r}")
    path = pyarrow_path(path)
    if "://" not in path:
        return pafs.LocalFileSystem(), os.path.abspath(path)
    return pafs.FileSystem.from_uri(path)


def exists(path: str) -> bool:
    fs, p = resolve(path)
    return fs.get_file_info(p).type != pafs.FileType.NotFound


def _write_bytes(fs: Any, path: str, payload: bytes) -> None:
    with fs.open_output_stream(path) as out:
        out.write(payload)


def _read_bytes(fs: Any, path: str) -> bytes:
    with fs.open_input_stream(path) as f:
        return f.read()


def _listing(fs: Any, directory: str) -> list:
    """Visible files of ``directory`` (Spark skips names starting with '_' or '.')."""
    return sorted((f for f in fs.get_file_info(pafs.FileSelector(directory))
                   if not os.path.basename(f.path).startswith(("_", "."))),
                  key=lambda f: f.path)


# ---------------------------------------------------------------------------- metadata
def metadata_json(class_name: str, uid: str, param_map: dict, default_param_map: dict,
                  model_kind: str, spark_version: str = "", extra: dict | None = None) -> str:
    """Build the metadata line in Spark ML's DefaultParamsWriter format (without the save id
    and manifest, which ``finish_metadata`` adds when the save happens)."""
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


def new_save_id() -> str:
    return uuid.uuid4().hex


def finish_metadata(metadata: str, arrays: dict | None, save_id: str,
                    chunk_bytes: int = CHUNK_BYTES) -> str:
    """The metadata line of one save: ``metadata`` plus formatVersion 2, ``saveId`` and, for
    a model, the arrays' manifest and ``chunkBytes``."""
    meta = json.loads(metadata)
    meta.update(formatVersion=FORMAT_VERSION, saveId=save_id)
    if arrays is not None:
        meta.update(arrays=manifest_of(arrays), chunkBytes=int(chunk_bytes),
                    chunkCrc32=[zlib.crc32(c[4]) for c in iter_chunks(arrays, chunk_bytes)])
    return json.dumps(meta, separators=(",", ":"))


def parse_metadata(text: str, path: str, expected_class: ExpectedClass = None) -> dict:
    """The metadata dict from the text of a metadata part file; ``ModelFormatError`` naming
    ``path`` for whatever is wrong. ``expected_class``: the class path the metadata must name,
    or a callable that says whether a class path is acceptable (its ``str`` names it in the
    error)."""
    try:
        meta = json.loads(text.strip().splitlines()[0])
    except (ValueError, IndexError) as e:
        raise ModelFormatError(f"{path}/metadata is corrupt: {e}") from None
    if not isinstance(meta, dict) or not isinstance(meta.get("class"), str):
        raise ModelFormatError(f"{path}/metadata is corrupt: no 'class' entry")
    if expected_class is not None and not (expected_class(meta["class"]) if callable(
            expected_class) else meta["class"] == expected_class):
        raise ModelFormatError(f"{path} holds a {meta['class']}, not a {expected_class}")
    return meta


def load_metadata(path: str, expected_class: ExpectedClass = None) -> dict:
    """Read and check ``path/metadata``; raise ``ModelFormatError`` naming what is wrong."""
    fs, p = resolve(path)
    if fs.get_file_info(p).type == pafs.FileType.NotFound:
        parent, name = os.path.split(p.rstrip("/"))
        _recover(fs, parent, name, p, tidy=False)  # a save killed between its two moves
    if fs.get_file_info(p).type == pafs.FileType.NotFound:
        raise ModelFormatError(f"model directory {path} does not exist")
    meta_dir = f"{p}/metadata"
    if fs.get_file_info(meta_dir).type != pafs.FileType.Directory:
        raise ModelFormatError(f"{path} is not a saved model: it has no metadata/ directory")
    parts = [f.path for f in _listing(fs, meta_dir)
             if os.path.basename(f.path).startswith("part-")]
    if not parts:
        raise ModelFormatError(f"{path}/metadata holds no part-* file")
    text = _read_bytes(fs, parts[0]).decode("utf-8", errors="replace")
    return parse_metadata(text, path, expected_class)


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
    if version >= 2:
        sid = meta.get("saveId")
        if not isinstance(sid, str) or not sid:
            raise ModelFormatError(f"{path}/metadata is corrupt: saveId {sid!r}")
        if "arrays" in meta and (not isinstance(meta["arrays"], list)
                                 or not isinstance(meta.get("chunkBytes"), int)):
            raise ModelFormatError(f"{path}/metadata is corrupt: bad arrays manifest")


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
               UnicodeError, OSError, MemoryError, pa.ArrowException)


# ---------------------------------------------------------------------------- data rows
def data_batches(arrays: dict, save_id: str, chunk_bytes: int = CHUNK_BYTES,
                 group_bytes: int = GROUP_BYTES) -> Iterator[Any]:
    """Yield the data rows of ``arrays`` as Arrow record batches of about ``group_bytes``
    (``DATA_SCHEMA``); only one batch is in memory at a time."""
    rows: list[tuple] = []
    held = 0

    def flush() -> Any:
        cols = list(zip(*rows))
        return pa.RecordBatch.from_arrays(
            [pa.array([save_id] * len(rows), pa.string()),
             pa.array(cols[0], pa.int64()), pa.array(cols[1], pa.string()),
             pa.array(cols[2], pa.string()),
             pa.array([list(s) for s in cols[3]], DATA_SCHEMA.field("shape").type),
             pa.array(cols[4], pa.int32()), binary_array(list(cols[5]))],
            schema=DATA_SCHEMA)

    for seq, (name, dtype, shape, part, data) in enumerate(iter_chunks(arrays, chunk_bytes)):
        if rows and held + data.size > group_bytes:
            yield flush()
            rows, held = [], 0
        rows.append((seq, name, dtype, shape, part, data))
        held += data.size
    if rows:
        yield flush()


def assembler(meta: dict, path: str, rows: int | None = None) -> Assembler:
    """An ``Assembler`` for the arrays ``meta`` (formatVersion 2) lists."""
    try:
        return Assembler(meta["arrays"], meta["chunkBytes"], path, rows,
                         checksums=meta.get("chunkCrc32"))
    except (TypeError, ValueError, KeyError) as e:
        raise ModelFormatError(f"{path}/metadata is corrupt: {e}") from None


def check_save_ids(batch: Any, save_id: str, path: str) -> None:
    """Raise unless every row of ``batch`` carries ``save_id``."""
    ids = batch.column("save_id")
    import pyarrow.compute as pc

    if len(ids) and not pc.all(pc.equal(ids, save_id)).as_py():
        other = next(v for v in ids.to_pylist() if v != save_id)
        raise ModelFormatError(f"{path} is incomplete: its data was written by another save "
                               f"({other}) than its metadata ({save_id}); the save that "
                               f"wrote it was interrupted or overlapped another")


def check_required(arrays: dict, required: tuple, path: str) -> dict:
    missing = [k for k in required if k not in arrays]
    if missing:
        raise ModelFormatError(f"{path}: the model's data lacks arrays {missing}")
    return arrays


def arrays_from_npz(payload: bytes, path: str) -> dict:
    """The arrays of a formatVersion 1 ``data/arrays.npz`` (no pickle)."""
    try:
        with np.load(io.BytesIO(payload), allow_pickle=False) as z:
            return {k: z[k] for k in z.files}
    except Exception as e:  # zipfile.BadZipFile, ValueError, OSError...
        raise ModelFormatError(f"{path}/data/arrays.npz is corrupt: {e}") from None


# ---------------------------------------------------------------------------- pyarrow
def save_directory(path: str, metadata: str, arrays: dict | None, overwrite: bool) -> str:
    """Write ``metadata`` (one JSON line) and ``arrays`` to ``path`` atomically; return the
    save id.

    Raises ``FileExistsError`` when ``path`` exists (a directory or a plain file) and
    ``overwrite`` is false. With ``overwrite``, whatever is at ``path`` is replaced only once
    the new model is complete: it is moved aside under a hidden name, the new directory is
    renamed into place, then the old one is deleted; if the rename fails, the old one is
    moved back. Nothing hidden is left behind either way.
    """
    import pyarrow.parquet as pq

    fs, target = resolve(path)
    parent, name = os.path.split(target.rstrip("/"))
    _recover(fs, parent, name, target, tidy=True)
    existing = fs.get_file_info(target).type
    if existing != pafs.FileType.NotFound and not overwrite:
        raise FileExistsError(f"path {path} already exists; use write().overwrite().save(path)")
    save_id = new_save_id()
    metadata = finish_metadata(metadata, arrays, save_id, CHUNK_BYTES)
    tmp = f"{parent}/.{name}.tmp-{_owned()}"
    aside = None  # (hidden path, FileType) of what was at ``path`` while it is moved aside
    try:
        if arrays is not None:
            fs.create_dir(f"{tmp}/data", recursive=True)
            with fs.open_output_stream(f"{tmp}/data/part-00000.parquet") as out, \
                    pq.ParquetWriter(out, DATA_SCHEMA, compression=COMPRESSION) as w:
                for batch in data_batches(arrays, save_id, CHUNK_BYTES, GROUP_BYTES):
                    w.write_batch(batch)
            _write_bytes(fs, f"{tmp}/data/_SUCCESS", b"")
        fs.create_dir(f"{tmp}/metadata", recursive=True)
        _write_bytes(fs, f"{tmp}/metadata/part-00000", (metadata + "\n").encode())
        _write_bytes(fs, f"{tmp}/metadata/_SUCCESS", b"")
        existing = fs.get_file_info(target).type
        if existing != pafs.FileType.NotFound:
            trash = f"{parent}/.{name}.old-{_owned()}"
            fs.move(target, trash)
            aside = (trash, existing)
        else:
            fs.create_dir(parent, recursive=True)
        fs.move(tmp, target)
    except BaseException:
        _delete(fs, tmp, pafs.FileType.Directory)
        if aside is not None:
            if fs.get_file_info(target).type == pafs.FileType.NotFound:
                fs.move(aside[0], target)  # put the old model back
            else:  # a concurrent save's model took the path: the old one is superseded
                _delete(fs, *aside)
        raise
    if aside is not None:
        try:
            _delete(fs, *aside, quiet=False)
        except OSError as e:
            warnings.warn(f"the model was saved to {path}, but the previous content, moved "
                          f"to {aside[0]}, could not be deleted: {e}", stacklevel=2)
    return save_id


def _owned() -> str:
    """A unique suffix that names the saving process: ``<uuid>~<host>~<pid>``, so that a later
    save can tell the debris of a killed save (its process gone) from a live one's files."""
    return f"{uuid.uuid4().hex}~{socket.gethostname()}~{os.getpid()}"


def _owner_gone(base: str) -> bool:
    """True when ``base`` (a hidden sibling's name) was made by a process of this host that no
    longer runs; False when unknown (another host, an older name, a live or foreign pid)."""
    parts = base.rsplit("~", 2)
    if len(parts) != 3 or parts[1] != socket.gethostname() or not parts[2].isdigit():
        return False
    pid = int(parts[2])
    if pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except (PermissionError, OSError):
        return False
    return False


def _recover(fs: Any, parent: str, name: str, target: str, tidy: bool) -> None:
    """Undo what a save killed mid-way (SIGKILL, power loss: no ``except`` ran) left at
    ``parent/name``. A save moves the old model aside (``.name.old-*``) just before it moves
    the new one (``.name.tmp-*``) in; killed between the two, ``name`` is missing: the old
    model is moved back. ``tidy``: also delete the hidden siblings of processes that are gone
    (never those of a live save, which may be writing them now)."""
    try:
        missing = fs.get_file_info(target).type == pafs.FileType.NotFound
        if not missing and not tidy:
            return
        siblings = [f for f in fs.get_file_info(pafs.FileSelector(parent, allow_not_found=True))
                    if os.path.basename(f.path).startswith((f".{name}.old-", f".{name}.tmp-"))]
    except (OSError, ValueError):  # a store that cannot list (or a root path): nothing to do
        return
    gone = [f for f in siblings if _owner_gone(os.path.basename(f.path))]
    old = [f for f in gone if os.path.basename(f.path).startswith(f".{name}.old-")]
    if missing and len(old) == 1:
        try:
            fs.move(old[0].path, target)
            gone.remove(old[0])
        except OSError:
            pass
    if tidy:
        for f in gone:
            _delete(fs, f.path, f.type)


def recover(path: str) -> None:
    """Restore and tidy ``path`` after a save that was killed mid-way: the old model is put
    back if the kill left no model at ``path``, and the hidden ``.name.tmp-*`` /
    ``.name.old-*`` siblings of saves whose process is gone are deleted. Every save to
    ``path`` does this first; a load does the restoring part when ``path`` is missing."""
    fs, target = resolve(path)
    parent, name = os.path.split(target.rstrip("/"))
    _recover(fs, parent, name, target, tidy=True)


def _delete(fs: Any, path: str, kind: Any, quiet: bool = True) -> None:
    try:
        if kind == pafs.FileType.Directory:
            fs.delete_dir(path)
        else:
            fs.delete_file(path)
    except OSError:
        if not quiet:
            raise


def load_arrays(path: str, required: tuple = (), meta: dict | None = None) -> dict:
    """Read the arrays of the model at ``path`` (formatVersion 1 or 2) through pyarrow.

    ``meta`` (the directory's metadata, read here when not given) tells the format. Raises
    ``ModelFormatError`` naming the path for a missing, partial or corrupt data directory.
    """
    if meta is None:
        meta = load_metadata(path)
        check_sparkxml(meta, path)
    fs, p = resolve(path)
    if meta.get("formatVersion") == 1:
        f = f"{p}/data/arrays.npz"
        if fs.get_file_info(f).type != pafs.FileType.File:
            raise ModelFormatError(f"{path} is incomplete: data/arrays.npz is missing")
        return check_required(arrays_from_npz(_read_bytes(fs, f), path), required, path)
    return check_required(_read_parquet_arrays(fs, p, meta, path), required, path)


def _read_parquet_arrays(fs: Any, p: str, meta: dict, path: str) -> dict:
    import pyarrow.parquet as pq

    if "arrays" not in meta:
        raise ModelFormatError(f"{path} holds no model arrays (it was saved without data)")
    data_dir = f"{p}/data"
    if fs.get_file_info(data_dir).type != pafs.FileType.Directory:
        raise ModelFormatError(f"{path} is incomplete: data/ is missing")
    files = [f.path for f in _listing(fs, data_dir) if f.path.endswith(".parquet")]
    if not files:
        raise ModelFormatError(f"{path} is incomplete: data/ holds no parquet file")
    handles = []
    try:
        for f in files:
            try:
                pf = pq.ParquetFile(fs.open_input_file(f))
            except (pa.ArrowException, OSError) as e:
                raise ModelFormatError(f"{path}/data/{os.path.basename(f)} is corrupt: "
                                       f"{e}") from None
            handles.append(pf)
        asm = assembler(meta, path, rows=sum(h.metadata.num_rows for h in handles))
        for h in handles:
            for batch in h.iter_batches(batch_size=max(1, GROUP_BYTES // asm.chunk_bytes)):
                check_save_ids(batch, meta["saveId"], path)
                asm.add_batch(batch)
        return asm.result()
    except (pa.ArrowException, KeyError) as e:
        raise ModelFormatError(f"{path}/data is corrupt: {e}") from None
    except ValueError as e:
        if isinstance(e, ModelFormatError):
            raise
        raise ModelFormatError(str(e) if path in str(e) else f"{path}: {e}") from None
    finally:
        for h in handles:
            h.close()
