"""Saving over what is already at a path, and the CLI's --model check: the outcome is the
new model or a clear error, the old content intact on error, and no hidden debris ever."""
import os

import numpy as np
import pyarrow.fs as pafs
import pytest

import sparkxml_kernels
from sparkxml import cli, session
from sparkxml_kernels import persist

META = persist.metadata_json("x.Model", "uid1", {}, {}, model_kind="gbt")


def _listing(d):
    return sorted(os.listdir(d))


def _arrays(path):
    return persist.load_arrays(str(path))


def test_overwrite_replaces_a_plain_file_and_leaves_no_debris(tmp_path):
    """Before: the save succeeded, then raised 'Cannot delete directory' and left a hidden
    '.p.old-*' file next to the model."""
    p = tmp_path / "model"
    p.write_text("not a model")
    persist.save_directory(str(p), META, {"a": np.arange(3)}, overwrite=True)
    assert _listing(tmp_path) == ["model"]
    np.testing.assert_array_equal(_arrays(p)["a"], np.arange(3))


def test_save_onto_a_plain_file_without_overwrite_is_refused(tmp_path):
    p = tmp_path / "model"
    p.write_text("keep me")
    with pytest.raises(FileExistsError, match="already exists"):
        persist.save_directory(str(p), META, {"a": np.arange(3)}, overwrite=False)
    assert p.read_text() == "keep me" and _listing(tmp_path) == ["model"]


def test_overwrite_replaces_a_directory(tmp_path):
    p = tmp_path / "model"
    persist.save_directory(str(p), META, {"a": np.arange(3)}, overwrite=False)
    persist.save_directory(str(p), META, {"a": np.arange(5)}, overwrite=True)
    assert _listing(tmp_path) == ["model"]
    np.testing.assert_array_equal(_arrays(p)["a"], np.arange(5))


class _FailingFS:
    """A LocalFileSystem whose ``fail`` operation raises on the matching path."""

    def __init__(self, fail):
        self._fs, self._fail = pafs.LocalFileSystem(), fail

    def __getattr__(self, name):
        op = getattr(self._fs, name)

        def call(*args, **kw):
            if self._fail(name, args):
                raise OSError(f"injected failure of {name}{args}")
            return op(*args, **kw)
        return call


@pytest.mark.parametrize("where", ["writing the arrays", "moving the new model in"])
def test_failed_overwrite_keeps_the_old_model_and_leaves_no_debris(tmp_path, monkeypatch,
                                                                   where):
    p = tmp_path / "model"
    persist.save_directory(str(p), META, {"a": np.arange(3)}, overwrite=False)
    if where == "writing the arrays":
        def fail(name, args):
            return name == "open_output_stream" and args[0].endswith(".parquet")
    else:
        def fail(name, args):
            return name == "move" and ".tmp-" in args[0]
    fs = _FailingFS(fail)
    monkeypatch.setattr(persist, "resolve", lambda path: (fs, os.path.abspath(path)))
    with pytest.raises(OSError, match="injected failure"):
        persist.save_directory(str(p), META, {"a": np.arange(9)}, overwrite=True)
    monkeypatch.undo()
    assert _listing(tmp_path) == ["model"]
    np.testing.assert_array_equal(_arrays(p)["a"], np.arange(3))


def test_cli_train_refuses_an_existing_model_before_any_work(tmp_path, monkeypatch, capsys):
    """Before: the whole model was trained, then a raw FileExistsError traceback suggested
    the Python API's write().overwrite()."""
    model = tmp_path / "fx"
    persist.save_directory(str(model), META, {"a": np.arange(3)}, overwrite=False)

    def no_spark(*a, **kw):
        raise AssertionError("Spark was started before the --model check")

    monkeypatch.setattr(session, "get_session", no_spark)
    rc = cli.main(["fastxml", "train", "--data", str(tmp_path / "train.txt"),
                   "--model", str(model)])
    err = capsys.readouterr().err
    assert rc == 2
    assert f"--model {model} already exists; pass --overwrite" in err, err
    assert "Traceback" not in err
    np.testing.assert_array_equal(_arrays(model)["a"], np.arange(3))
    # with --overwrite the check passes (and the run goes on to start Spark)
    with pytest.raises(AssertionError, match="Spark was started"):
        cli.main(["fastxml", "train", "--data", "x", "--model", str(model), "--overwrite"])


def test_cli_help_documents_overwrite(capsys):
    with pytest.raises(SystemExit):
        cli.main(["fastxml", "train", "--help"])
    assert "--overwrite" in capsys.readouterr().out


def test_load_model_names_a_missing_path(tmp_path):
    with pytest.raises(persist.ModelFormatError, match="does not exist"):
        sparkxml_kernels.load_model(str(tmp_path / "nothing"))
