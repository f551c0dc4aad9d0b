"""Saves under faults: the saving process SIGKILLed during ``overwrite`` (no ``except`` runs),
and two processes saving to one path at once. Afterwards the path holds the old or the new
model, complete (its checksums verified), and, once a save or ``persist.recover`` has run,
nothing hidden beside it."""
import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

from sparkxml_kernels import persist

META = persist.metadata_json("x.Model", "uid1", {}, {}, model_kind="gbt")

# The child saves over ``path`` and dies by SIGKILL at a chosen step of the save: while the
# data file is written, after the old model was moved aside (before the new one is moved in),
# or after the new one is in (before the old one is deleted); "loop" saves until the parent
# kills it.
CHILD = textwrap.dedent("""
    import os, signal, sys
    import numpy as np
    from sparkxml_kernels import persist

    path, meta, where, first = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    real = persist.resolve

    class Killing:
        def __init__(self, fs):
            self.fs = fs

        def __getattr__(self, name):
            op = getattr(self.fs, name)

            def call(*args, **kw):
                a = str(args[0]) if args else ""
                if ((where == "write" and name == "open_output_stream")
                        or (where == "between" and name == "move" and ".tmp-" in a)
                        or (where == "after" and name == "delete_dir" and ".old-" in a)):
                    os.kill(os.getpid(), signal.SIGKILL)
                return op(*args, **kw)
            return call

    if where != "loop":
        persist.resolve = lambda p: (lambda fs, t: (Killing(fs), t))(*real(p))
    base = np.arange(200_000, dtype=np.float64)
    print("ready", flush=True)
    i = first
    while True:
        persist.save_directory(path, meta, {"a": base + i, "i": np.array(i)}, overwrite=True)
        print(i, flush=True)
        i += 1
""")


def _child(path, where, first):
    return subprocess.Popen([sys.executable, "-c", CHILD, str(path), META, where, str(first)],
                            stdout=subprocess.PIPE, text=True)


def _model(path):
    """The i of the complete model at ``path`` (load_arrays verifies every chunk's CRC)."""
    arrays = persist.load_arrays(str(path))
    i = int(arrays["i"])
    np.testing.assert_array_equal(arrays["a"], np.arange(200_000, dtype=np.float64) + i)
    return i


def _save(path, i):
    persist.save_directory(str(path), META, {"a": np.arange(200_000, dtype=np.float64) + i,
                                             "i": np.array(i)}, overwrite=True)


@pytest.mark.parametrize("where, expect", [("write", "old"), ("between", "old"),
                                           ("after", "new")])
def test_save_killed_at_each_step_leaves_old_or_new(tmp_path, where, expect):
    """Killed between its two moves, the save left no model at the path (the old one under a
    hidden name): the next load moves it back."""
    path = tmp_path / "model"
    _save(path, 0)
    proc = _child(path, where, 1)
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == -signal.SIGKILL and out.split() == ["ready"]
    hidden = [n for n in os.listdir(tmp_path) if n != "model"]
    assert hidden, "the kill left nothing to recover: the step was not reached"
    assert _model(path) == (0 if expect == "old" else 1)
    persist.recover(str(path))
    assert os.listdir(tmp_path) == ["model"]
    _save(path, 2)  # and the path takes new saves
    assert _model(path) == 2 and os.listdir(tmp_path) == ["model"]


def test_save_killed_at_random_times(tmp_path):
    """A process overwriting the model in a loop, SIGKILLed after random delays (6 kills):
    each time the model is the last one saved or the one being saved."""
    path = tmp_path / "model"
    _save(path, 0)
    rng = np.random.default_rng(0)
    first = 1
    for _ in range(6):
        proc = _child(path, "loop", first)
        assert proc.stdout.readline().strip() == "ready"
        time.sleep(float(rng.uniform(0.0, 0.3)))
        proc.send_signal(signal.SIGKILL)
        out, _ = proc.communicate(timeout=60)
        done = [int(x) for x in out.split()]
        last = done[-1] if done else first - 1
        assert _model(path) in (last, last + 1)
        first = last + 2
        _save(path, first - 1)  # a save first tidies what the kill left
        assert os.listdir(tmp_path) == ["model"]


CONCURRENT = textwrap.dedent("""
    import sys
    import numpy as np
    from sparkxml_kernels import persist

    path, meta, tag = sys.argv[1], sys.argv[2], int(sys.argv[3])
    for i in range(15):
        j = tag * 100 + i
        try:
            persist.save_directory(path, meta, {"a": np.arange(200_000, dtype=np.float64) + j,
                                                "i": np.array(j)}, overwrite=True)
            print("ok", j, flush=True)
        except OSError as e:
            print("lost", j, type(e).__name__, flush=True)
""")


def test_two_concurrent_saves_one_wins_complete(tmp_path):
    """Two processes each overwrite the same path 15 times at once: every save either wins
    or fails with an OSError (never another exception), the path ends with one complete
    model from a winning save, and nothing hidden is left."""
    path = tmp_path / "model"
    _save(path, 0)
    procs = [subprocess.Popen([sys.executable, "-c", CONCURRENT, str(path), META, str(t)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for t in (1, 2)]
    results = [p.communicate(timeout=300) for p in procs]
    assert all(p.returncode == 0 for p in procs), [r[1][-2000:] for r in results]
    lines = [line.split() for out, _ in results for line in out.splitlines()]
    assert len(lines) == 30
    won = {int(w[1]) for w in lines if w[0] == "ok"}
    assert won and _model(path) in won
    assert os.listdir(tmp_path) == ["model"]
