"""Command line: ``sparkxml fastxml train|predict|evaluate|demo``,
``sparkxml gbt train|predict|evaluate``, ``sparkxml lambdamart train|predict|evaluate`` and
``sparkxml precompile`` (fills the numba cache; no Spark).

Runs on local Spark by default (``--master``, default ``local[*]``); under ``spark-submit``
it uses the cluster's master and configuration as given. The FastXML commands read
Extreme Classification Repository, FastXML C++ or Mulan ARFF files (``sparkxml.cli.fastxml``);
the boosting commands read svmlight or TSV files (``sparkxml.cli.boost``).
"""
from __future__ import annotations

import argparse
import sys
from typing import Optional, Sequence


class _HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Shows each option's default after its help, except a default of None ("not given"):
    such an option's help says itself what applies without it (the estimator's default, or
    what is derived from the data)."""

    def _get_help_string(self, action):
        if action.default is None:
            return action.help
        return super()._get_help_string(action)


class _Parser(argparse.ArgumentParser):
    """Every (sub)command's help shows its defaults (subparsers are made of this class)."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("formatter_class", _HelpFormatter)
        super().__init__(*args, **kwargs)


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="sparkxml", description="Train, apply and evaluate sparkxml models on data files, on local Spark, a cluster (spark-submit) or Spark Connect.")
    from sparkxml import __version__

    p.add_argument("--version", action="version", version=f"sparkxml {__version__}")
    p.add_argument("--master", default=None, help="Spark master (default local[*]; ignored "
                   "under spark-submit unless given)")
    p.add_argument("--remote", default=None, help="Spark Connect URL (sc://host:port; default: "
                   "a classic session)")
    algos = p.add_subparsers(dest="algo", required=True)
    from sparkxml.cli import boost, fastxml

    fastxml.add_parsers(algos)
    boost.add_parsers(algos)
    pc = algos.add_parser("precompile", help="compile the numba kernels the estimators use "
                          "into the cache (no Spark; run once per environment, e.g. in a "
                          "cluster image or init script, on the workers' CPU type)")
    pc.add_argument("--groups", nargs="*", default=None,
                    help="fastxml gbt gbt_threads linear fm forest (default: all)")
    pc.add_argument("--jobs", type=int, default=None, help="processes (default: the CPUs)")
    pc.add_argument("--targets", nargs="*", default=None,
                    help="CPU targets: host generic x86-64-v2 x86-64-v3 x86-64-v4 (default: "
                    "this machine's CPU, loading what the cache has for it)")
    pc.set_defaults(cmd="precompile")
    return p


def cmd_precompile(args) -> int:
    """``sparkxml precompile``: no Spark session; the cache goes where the kernels look for
    it (``sparkxml_kernels._jit.cache_dir()``)."""
    import os

    from sparkxml_kernels.precompile import precompile

    jobs = args.jobs if args.jobs is not None else (os.cpu_count() or 1)
    r = precompile(args.groups, jobs=jobs, verbose=True, targets=args.targets)
    print(f"precompiled {r['compiled']} of {r['entries']} signatures into {r['cache_dir']} in "
          f"{r['seconds']:.1f} s")
    for m in r["failed"]:
        print(f"sparkxml: precompile failed: {m}", file=sys.stderr)
    return 1 if r["failed"] else 0


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = build_parser().parse_args(argv)
    if args.algo == "precompile":
        try:
            return cmd_precompile(args)
        except ValueError as e:
            print(f"sparkxml: error: {e}", file=sys.stderr)
            return 2
    try:
        if getattr(args, "check", None) is not None:
            args.check(args)  # before Spark starts: a wrong argument fails in a second
        from sparkxml.session import get_session

        spark = get_session(master=args.master, remote=args.remote,
                            app_name=f"sparkxml-{args.algo}-{args.cmd}")
        args.fn(spark, args)
    except (ValueError, TypeError, FileNotFoundError, FileExistsError, MemoryError) as e:
        print(f"sparkxml: error: {e}", file=sys.stderr)
        return 2
    except RuntimeError as e:
        # the one RuntimeError a user fixes (SparkXMLEstimator's workers-cannot-import line)
        if not str(e).startswith("Spark's Python workers cannot import"):
            raise
        print(f"sparkxml: error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
