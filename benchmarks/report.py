"""Write docs/benchmark_results.rst from the harness's results (benchmarks/results/*.json).

    python benchmarks/report.py [--results benchmarks/results] [--out docs/benchmark_results.rst]

One table per benchmark: case, metric, value, unit, machine state (quiet, or under load, with
the 1-minute load average before and after), date, commit and command of every entry, then
the machines the entries were taken on. ``docs/benchmarks.rst`` includes the page in its
section "Results recorded by the harness". Without any results file the page says so; it
never makes entries up.
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import textwrap

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
HEADER = (".. This page is written by benchmarks/report.py from benchmarks/results/*.json\n"
          "   (benchmarks/_harness.py); do not edit it by hand.\n\n")


def _para(s: str) -> str:
    return textwrap.fill(s, 99, break_long_words=False, break_on_hyphens=False) + "\n\n"


def _text(s) -> str:
    """``s`` as plain reStructuredText (markup characters escaped, one line)."""
    s = " ".join(str(s).split())
    for ch in "\\*`|_":
        s = s.replace(ch, "\\" + ch)
    return s


def _literal(s) -> str:
    s = " ".join(str(s).split()).replace("``", "` `")
    return f"``{s}``" if s else ""


def _value(v) -> str:
    if v is None:
        return "not measured"
    if isinstance(v, float):
        return f"{v:.0f}" if v.is_integer() and abs(v) < 1e15 else f"{v:.4g}"
    return _text(v)


def _state(e) -> str:
    nan = float("nan")
    load = f"load {e.get('load_before', nan):.2f} -> {e.get('load_after', nan):.2f}"
    return f"quiet ({load})" if e.get("quiet") else f"**under load** ({load})"


def _machine(m) -> str:
    if not m:
        return "unknown"
    mem = f", {m['memory_gib']} GiB" if m.get("memory_gib") is not None else ""
    return f"{m.get('nproc', '?')} cores, {m.get('cpu', 'unknown CPU')}{mem}"


def _cell(text: str, first: bool) -> str:
    return (f"   {'*' if first else ' '} -" + (f" {text}" if text else "")) + "\n"


def load_results(results_dir: str) -> dict[str, list[dict]]:
    """{benchmark: entries} of every results file, benchmarks sorted by name."""
    out = {}
    for path in sorted(glob.glob(os.path.join(results_dir, "*.json"))):
        with open(path) as f:
            data = json.load(f)
        entries = data.get("entries", [])
        if entries:
            out[data.get("benchmark") or os.path.splitext(os.path.basename(path))[0]] = entries
    return out


def render(results: dict[str, list[dict]]) -> str:
    if not results:
        return HEADER + _para(
            "No results have been recorded by the harness yet: no ``benchmarks/results/*.json`` "
            "file exists in this checkout. The figures in the sections below were written down "
            "by hand before the harness existed.")
    parts = [HEADER]
    for name, entries in results.items():
        title = _literal(f"benchmarks/{name}.py" if os.path.exists(
            os.path.join(HERE, f"{name}.py")) else name)
        parts.append(f"{title}\n{'~' * len(title)}\n\n")
        under = sum(not e.get("quiet") for e in entries)
        parts.append(_para(f"{len(entries)} entries"
                           + (f", {under} of them taken under load (1-minute load average at "
                              f"or above 1.5 before the timed section): read their seconds as "
                              f"such" if under else ", all on a quiet machine") + "."))
        parts.append(".. list-table::\n   :header-rows: 1\n\n")
        for h in ("case", "metric", "value", "unit", "machine state", "date", "commit",
                  "command"):
            parts.append(_cell(h, h == "case"))
        for e in entries:
            metric = _text(e.get("metric", ""))
            if e.get("note"):
                metric += f" ({_text(e['note'])})"
            cells = [_text(e.get("case", "")), metric, _value(e.get("value")),
                     _text(e.get("unit", "")), _state(e), _text(e.get("date", "")),
                     _literal(e.get("commit", "")), _literal(e.get("command", ""))]
            for i, c in enumerate(cells):
                parts.append(_cell(c, i == 0))
        machines = sorted({_machine(e.get("machine")) for e in entries})
        parts.append("\n" + _para("Machine: " + "; ".join(_text(m) for m in machines) + "."))
    return "".join(parts).rstrip("\n") + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--results", default=os.path.join(HERE, "results"),
                    help="directory of the harness's <benchmark>.json files")
    ap.add_argument("--out", default=os.path.join(ROOT, "docs", "benchmark_results.rst"))
    args = ap.parse_args(argv)
    results = load_results(args.results)
    with open(args.out, "w") as f:
        f.write(render(results))
    n = sum(len(v) for v in results.values())
    print(f"wrote {args.out}: {len(results)} benchmarks, {n} entries")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
