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
    data = tmp_path / "train.txt"
    data.write_text("1 2 2\n0 0:1\n")
    with pytest.raises(AssertionError, match="Spark was started"):
        cli.main(["fastxml", "train", "--data", str(data), "--model", str(model),
                  "--overwrite"])


def _no_spark(monkeypatch):
    def no_spark(*a, **kw):
        raise AssertionError("Spark was started before the input checks")

    monkeypatch.setattr(session, "get_session", no_spark)


@pytest.mark.parametrize("argv, missing", [
    (["gbt", "train", "--data", "{gone}", "--model", "{free}"], "--data"),
    (["gbt", "train", "--data", "{file}", "--valid", "{gone}", "--model", "{free}"], "--valid"),
    (["lambdamart", "train", "--data", "{file}", "--query", "{gone}", "--model", "{free}"],
     "--query"),
    (["lambdamart", "train", "--data", "{file}", "--valid", "{file}", "--valid-query", "{gone}",
      "--model", "{free}"], "--valid-query"),
    (["gbt", "predict", "--data", "{file}", "--model", "{gone}", "--output", "{free}"],
     "--model"),
    (["lambdamart", "evaluate", "--data", "{gone}", "--model", "{model}"], "--data"),
    (["fastxml", "train", "--data", "{gone}", "--model", "{free}"], "--data"),
    (["fastxml", "predict", "--data", "{file}", "--model", "{gone}", "--output", "{free}"],
     "--model"),
    (["fastxml", "evaluate", "--data", "{file}", "--format", "smat", "--labels", "{gone}",
      "--model", "{model}"], "--labels"),
    (["fastxml", "evaluate", "--data", "{file}", "--format", "arff", "--xml", "{gone}",
      "--model", "{model}"], "--xml"),
    (["fastxml", "demo", "--data", "{file}", "--test", "{gone}"], "--test"),
])
def test_cli_missing_input_fails_before_spark(tmp_path, monkeypatch, capsys, argv, missing):
    """Before: a mistyped --data failed only after Spark had started, with a Spark/Java
    traceback; now each subcommand checks its input files first (Spark, stubbed to fail,
    is never reached)."""
    _no_spark(monkeypatch)
    (tmp_path / "data.txt").write_text("1 1:0.5\n")
    (tmp_path / "model").mkdir()
    names = {"file": tmp_path / "data.txt", "model": tmp_path / "model",
             "gone": tmp_path / "train.txt", "free": tmp_path / "out"}
    argv = [a.format(**names) for a in argv]
    rc = cli.main(argv)
    err = capsys.readouterr().err
    assert rc == 2
    assert err == f"sparkxml: error: {missing} {tmp_path / 'train.txt'} does not exist\n", err


def test_cli_checks_format_files_before_spark_and_leaves_uris_to_spark(tmp_path, monkeypatch,
                                                                       capsys):
    _no_spark(monkeypatch)
    data = tmp_path / "data.txt"
    data.write_text("1 1:0.5\n")
    for fmt, needs in (("smat", "--labels"), ("arff", "--xml")):
        rc = cli.main(["fastxml", "train", "--data", str(data), "--format", fmt, "--model",
                       str(tmp_path / "m")])
        assert rc == 2 and f"--format {fmt} needs {needs}" in capsys.readouterr().err
    # a URI is not a local path: Spark (or pyarrow) resolves it, so the run reaches Spark
    for uri in ("s3a://bucket/train.txt", "dbfs:/data/train.txt"):
        with pytest.raises(AssertionError, match="Spark was started"):
            cli.main(["gbt", "train", "--data", uri, "--model", str(tmp_path / "m")])


def _help(argv, capsys) -> str:
    with pytest.raises(SystemExit):
        cli.main(argv + ["--help"])
    return " ".join(capsys.readouterr().out.split())  # unwrapped


def test_cli_help_documents_overwrite(capsys):
    assert "--overwrite" in _help(["fastxml", "train"], capsys)


def _actions(parser, path=()):
    """(command path, action) of every option of every (sub)command."""
    import argparse

    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _actions(sub, path + (name,))
        elif not isinstance(action, (argparse._HelpAction, argparse._VersionAction)):
            yield path, action


def test_cli_every_option_has_help_and_shows_its_default():
    """Before: options without a help string showed no default in --help."""
    from sparkxml.cli.main import _HelpFormatter, build_parser

    actions = list(_actions(build_parser()))
    assert len(actions) > 100
    formatter = _HelpFormatter("sparkxml")
    for path, action in actions:
        assert action.help, (path, action.option_strings)
        if action.default is not None:  # None: not given, the help says what applies
            assert "%(default)s" in formatter._get_help_string(action), (path, action.help)


def test_cli_help_shows_defaults_choices_and_lambdamart_its_own_text(capsys):
    """Before: --help had no defaults for the estimator options and no choices, and
    LambdaMART's commands repeated GBT's help (classification, AUC, ...)."""
    gbt = _help(["gbt", "train"], capsys)
    assert "--max-iter MAX_ITER boosting rounds (trees); estimator param maxIter (default: 100)" \
        in gbt
    assert "--grow-policy {depthwise,lossguide}" in gbt and "(default: depthwise)" in gbt
    assert "--task {classification,regression}" in gbt and "(default: classification)" in gbt
    assert "--eval-metric {rmse,logloss,error,auc,mlogloss}" in gbt
    assert "--overwrite replace --model if it exists (checked before training) (default: " \
        "False)" in gbt
    rank = _help(["lambdamart", "train"], capsys)
    assert "--objective {lambdarank,pairwise,xendcg,map}" in rank and "(default: lambdarank)" in rank
    assert "(default: ndcg@10)" in rank and "qid" in rank and "NDCG" in rank
    assert "--task" not in rank and "classification" not in rank.lower()
    group = _help(["lambdamart"], capsys)
    assert "ranker" in group and "NDCG@1/3/5/10" in group and "AUC" not in group
    predict = _help(["gbt", "predict"], capsys)
    assert "--model MODEL saved model directory" in predict
    assert "(default: auto)" in predict
    demo = _help(["fastxml", "demo"], capsys)
    assert "--num-trees NUM_TREES trees in the ensemble (default: 50)" in demo
    assert "--format {xc,smat,arff}" in demo and "(default: xc)" in demo
    assert "temporary directory, removed at the end" in demo


def test_load_model_names_a_missing_path(tmp_path):
    with pytest.raises(persist.ModelFormatError, match="does not exist"):
        sparkxml_kernels.load_model(str(tmp_path / "nothing"))
