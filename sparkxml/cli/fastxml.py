"""``sparkxml fastxml train|predict|evaluate|demo``: FastXML on data files.

Data files may be in the Extreme Classification Repository text format (``--format xc``, the
default), the FastXML C++ sparse matrix files (``--format smat`` with ``--labels``), or Mulan
sparse ARFF (``--format arff`` with ``--xml``).

Precision at k is printed as a fraction in [0, 1] with 4 decimals (``P@1 0.6441``), the value
``XMLEvaluator`` returns.
"""
from __future__ import annotations

import time

from sparkxml.cli.common import (
    check_model_path,
    inputs_exist,
    model_and_inputs_exist,
    model_path_free,
)


def _format_files(args) -> None:
    """The files a ``--format`` needs besides ``--data`` were given (checked before Spark)."""
    if args.format == "smat" and args.labels is None:
        raise ValueError("--format smat needs --labels (the label matrix file)")
    if args.format == "arff" and args.xml is None:
        raise ValueError("--format arff needs --xml (the Mulan label file)")


def _check_train(args) -> None:
    _format_files(args)
    model_path_free(args)


def _check_apply(args) -> None:
    _format_files(args)
    model_and_inputs_exist(args)


def _check_demo(args) -> None:
    if args.data:
        _format_files(args)
    if args.test and args.format == "smat":
        raise ValueError("demo --test takes --format xc or arff files (a smat test file needs "
                         "its own label file: use fastxml train and evaluate)")
    if args.model:
        check_model_path(args.model, args.overwrite)
    inputs_exist(args)


def _read(spark, args, path, labels_path=None):
    from sparkxml import datasets

    fmt = args.format
    if fmt == "xc":
        return datasets.read_xc(spark, path)
    if fmt == "smat":
        return datasets.read_smat(spark, path, labels_path)
    return datasets.read_arff_multilabel(spark, path, args.xml)


def _print_precisions(precisions: dict) -> None:
    for k, v in precisions.items():
        print(f"P@{k} {v:.4f}")


def _precisions(model, df, ks=(1, 3, 5)):
    from sparkxml.evaluation import XMLEvaluator

    pred = model.copy({model.topK: max(ks)}).transform(df).cache()
    out = {k: XMLEvaluator(metricName="precisionAtK", k=k).evaluate(pred) for k in ks}
    pred.unpersist()
    return out


def _fastxml_params(args) -> dict:
    return dict(numTrees=args.num_trees, maxLeaf=args.max_leaf, labelsPerLeaf=args.labels_per_leaf,
                logLossCoeff=args.log_loss_coeff, bias=args.bias, seed=args.seed,
                numWorkers=args.num_workers)


def cmd_train(spark, args):
    from sparkxml.fastxml.fastxml import FastXML

    df = _read(spark, args, args.data, args.labels)
    t = time.perf_counter()
    model = FastXML(**_fastxml_params(args)).fit(df)
    print(f"trained {model.trees} trees on {df.count()} rows in {time.perf_counter() - t:.1f} s")
    w = model.write()
    try:
        (w.overwrite() if args.overwrite else w).save(args.model)
    except FileExistsError:  # created by someone else while we trained
        raise FileExistsError(f"--model {args.model} appeared while training; pass "
                              f"--overwrite to replace it") from None
    print(f"model saved to {args.model}")


def cmd_predict(spark, args):
    from sparkxml.fastxml.fastxml import FastXMLModel

    model = FastXMLModel.load(args.model).setTopK(args.k)
    df = _read(spark, args, args.data, args.labels)
    rows = model.transform(df).select(model.getPredictionCol(), model.getScoresCol()).collect()
    with open(args.output, "w") as out:
        out.write(f"{len(rows)} {model.numLabels}\n")
        for r in rows:
            out.write(" ".join(f"{lab}:{s:.6f}" for lab, s in zip(r[0], r[1])) + "\n")
    print(f"wrote top-{args.k} scores of {len(rows)} rows to {args.output}")


def cmd_evaluate(spark, args):
    from sparkxml.fastxml.fastxml import FastXMLModel

    model = FastXMLModel.load(args.model)
    df = _read(spark, args, args.data, args.labels)
    _print_precisions(_precisions(model, df))


def cmd_demo(spark, args):
    """The main job: train on generated (or given) data, print P@1/3/5, save, load, predict.

    The model goes to ``--model`` when given (and the last line says where), else into a
    temporary directory removed at the end."""
    import os
    import tempfile

    from sparkxml.fastxml.fastxml import FastXML

    if args.data:
        train = _read(spark, args, args.data, args.labels)
        test = _read(spark, args, args.test or args.data, args.labels)
        source = args.data
    else:
        from sparkxml.synthetic import make_multilabel, rows_frame

        X, Y = make_multilabel(n_rows=5000, n_features=2000, seed=args.seed)
        train = rows_frame(spark, X, Y, 0, 4000, 2000)
        test = rows_frame(spark, X, Y, 4000, 5000, 2000)
        source = "generated data (5000 rows, 2000 features, 200 labels)"
    train, test = train.cache(), test.cache()
    print(f"FastXML on {source}: {train.count()} train rows, {test.count()} test rows")
    t = time.perf_counter()
    model = FastXML(**_fastxml_params(args)).fit(train)
    print(f"fit: {model.trees} trees in {time.perf_counter() - t:.1f} s")
    _print_precisions(_precisions(model, test))
    if args.model:
        first = _save_and_reload(model, test, args.model, args.overwrite)
        print(f"model saved to {args.model} and loaded back; first test row -> labels {first}")
    else:
        with tempfile.TemporaryDirectory(prefix="sparkxml-demo-") as tmp:
            first = _save_and_reload(model, test, os.path.join(tmp, "fastxml-model"), False)
        print(f"model saved to a temporary directory (removed; pass --model to keep it) and "
              f"loaded back; first test row -> labels {first}")


def _save_and_reload(model, test, path, overwrite) -> list:
    """Save ``model`` to ``path``, load it back and return its labels for the first test row."""
    from sparkxml.fastxml.fastxml import FastXMLModel

    w = model.write()
    (w.overwrite() if overwrite else w).save(path)
    loaded = FastXMLModel.load(path)
    return list(loaded.transform(test).select("prediction").first()[0])


def add_parsers(algos) -> None:
    """Add ``sparkxml fastxml train|predict|evaluate|demo``."""
    what = "FastXML extreme multi-label trees"
    fx = algos.add_parser("fastxml", help=what, description=what)
    cmds = fx.add_subparsers(dest="cmd", required=True)

    def command(name, help_):
        return cmds.add_parser(name, help=help_, description=help_)

    def data_args(sp, required=True):
        sp.add_argument("--data", required=required,
                        help="data file" if required else "training data file (default: "
                        "generated data, 5000 rows, 2000 features, 200 labels)")
        sp.add_argument("--format", default="xc", choices=["xc", "smat", "arff"],
                        help="data file format: xc (Extreme Classification Repository text), "
                        "smat (FastXML C++ feature matrix, with --labels), arff (Mulan "
                        "sparse ARFF, with --xml)")
        sp.add_argument("--labels", default=None,
                        help="label matrix file (needed by --format smat)")
        sp.add_argument("--xml", default=None,
                        help="Mulan label XML file (needed by --format arff)")

    def train_args(sp):
        sp.add_argument("--num-trees", type=int, default=50, help="trees in the ensemble")
        sp.add_argument("--max-leaf", type=int, default=10,
                        help="a node with at most this many points becomes a leaf")
        sp.add_argument("--labels-per-leaf", type=int, default=100,
                        help="labels kept in each leaf's distribution")
        sp.add_argument("--log-loss-coeff", type=float, default=1.0,
                        help="C of the per-node L1-regularised logistic regression")
        sp.add_argument("--bias", type=float, default=1.0,
                        help="value of the bias feature appended to every point")
        sp.add_argument("--seed", type=int, default=0, help="random seed")
        sp.add_argument("--num-workers", type=int, default=None,
                        help="training tasks (default: from the data and the session)")

    t = command("train", "train a FastXML model and save it")
    data_args(t)
    train_args(t)
    t.add_argument("--model", required=True, help="directory to save the model to")
    t.add_argument("--overwrite", action="store_true",
                   help="replace --model if it exists (checked before training)")
    t.set_defaults(fn=cmd_train, check=_check_train)
    pr = command("predict", "write the top-k labels of each row, label:score pairs a line")
    data_args(pr)
    pr.add_argument("--model", required=True, help="saved model directory")
    pr.add_argument("--output", required=True, help="file to write")
    pr.add_argument("--k", type=int, default=5, help="labels per row")
    pr.set_defaults(fn=cmd_predict, check=_check_apply)
    ev = command("evaluate", "print a saved model's P@1/3/5 on --data (fractions in [0, 1])")
    data_args(ev)
    ev.add_argument("--model", required=True, help="saved model directory")
    ev.set_defaults(fn=cmd_evaluate, check=_check_apply)
    d = command("demo", "train on generated data (or --data/--test), print P@1/3/5, save, "
                "load and predict")
    data_args(d, required=False)
    d.add_argument("--test", default=None,
                   help="test file, same format as --data (default: --data itself)")
    d.add_argument("--model", default=None, help="directory to save the model to and keep "
                   "(default: a temporary directory, removed at the end)")
    d.add_argument("--overwrite", action="store_true", help="replace --model if it exists")
    train_args(d)
    d.set_defaults(fn=cmd_demo, check=_check_demo)
