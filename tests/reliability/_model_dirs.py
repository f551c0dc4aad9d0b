"""Helpers the model-directory tests share."""
import json
import os


def edit_meta(path, change):
    """Apply ``change`` to the metadata dict of the model directory at ``path``, in place."""
    f = os.path.join(path, "metadata", "part-00000")
    with open(f) as fh:
        meta = json.loads(fh.readline())
    change(meta)
    with open(f, "w") as fh:
        fh.write(json.dumps(meta) + "\n")
