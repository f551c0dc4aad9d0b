"""The ``sparkxml`` MLflow flavor: log, register and serve sparkxml models without a JVM.

``save_model`` / ``log_model`` store a sparkxml model (or a ``PipelineModel`` whose stages are
``VectorAssembler``\\ s, ``FieldEncoderModel``\\ s and a sparkxml model last) as an MLflow
model with two flavors: ``sparkxml`` and ``python_function``. The pyfunc scores through
``sparkxml_kernels`` (numpy and numba, no Spark, no JVM), so ``mlflow models serve``,
``mlflow.pyfunc.load_model`` and ``mlflow.pyfunc.spark_udf`` all work on it; ``load_model``
gives back the served model (``sparkxml_kernels.serving``).

Layout of the saved MLflow model::

    MLmodel, requirements.txt, python_env.yaml, conda.yaml, input_example.json, ...
    data/stages.json     the stages, in order: {"type": "vector_assembler", "inputCols",
                         "outputCol", "handleInvalid"} or {"type": "sparkxml", "path"}
    data/stage_<i>/      each sparkxml stage, as ``Model.write().save`` writes it

The pyfunc takes a pandas DataFrame of the training feature columns (``featuresCols``, a
VectorAssembler's ``inputCols``, or the model's vector column holding one array per row) and
returns what the model's ``transform`` puts in its prediction column: a float64 array, or for
FastXML / PfastreXML a DataFrame with ``prediction`` (label lists) and ``scores``. When no
signature is given, one is inferred from the input example (given, or else one row of zeros
in the model's input columns) and its predictions, as Unity Catalog requires.

Needs ``pip install "sparkxml[mlflow]"``.
"""
from __future__ import annotations

import json
import os
import shutil
from typing import Any

import numpy as np

FLAVOR_NAME = "sparkxml"
_DATA = "data"
_STAGES = "stages.json"


# ------------------------------------------------------------------------ serving
class ServedPipeline:
    """Replays a saved pipeline on a pandas DataFrame: feature stages, then the model."""

    def __init__(self, stages: list, models: dict):
        self.stages = stages
        self.models = models  # stage index -> what sparkxml_kernels.load_model returned
        self.model = models[len(stages) - 1]

    @classmethod
    def load(cls, data_dir: str) -> "ServedPipeline":
        import sparkxml_kernels

        with open(os.path.join(data_dir, _STAGES)) as f:
            stages = json.load(f)["stages"]
        models = {i: sparkxml_kernels.load_model(os.path.join(data_dir, s["path"]))
                  for i, s in enumerate(stages) if s["type"] == "sparkxml"}
        return cls(stages, models)

    def input_columns(self) -> list:
        """The columns a DataFrame must hold (those no stage makes)."""
        made, need = set(), []
        for i, s in enumerate(self.stages):
            if s["type"] == "vector_assembler":
                cols = s["inputCols"]
            elif i in self.models and not hasattr(self.models[i], "predict"):
                cols = list(self.models[i].names)  # a FieldEncoderModel's input columns
            else:  # the model: its vector column, unless a stage makes it
                spec = self.models[i].spec
                cols = [] if spec.vector_col in made else spec.names or [spec.vector_col]
            need += [c for c in cols if c not in made and c not in need]
            made.add(s.get("outputCol") or "")
        return need

    def example(self):
        """One row of zeros in the input columns (arrays of zeros for a vector column; a
        FieldEncoderModel's columns hold its first category, so that the inferred
        signature has their type: string or integer)."""
        import pandas as pd

        categories = {}
        for i, m in self.models.items():
            if i != len(self.stages) - 1 and hasattr(m, "vocabs"):
                for name, vocab in zip(m.names, m.vocabs):
                    first = vocab[0] if vocab.size else ("" if vocab.dtype.kind == "U" else 0)
                    categories.setdefault(name, first.item() if hasattr(first, "item")
                                          else first)
        row = {}
        for c in self.input_columns():
            spec = getattr(self.model, "spec", None)
            if c in categories:
                row[c] = [categories[c]]
            else:
                row[c] = [np.zeros(spec.n_features)] if spec is not None and \
                    c == spec.vector_col else [0.0]
        return pd.DataFrame(row)

    def _features(self, df):
        """The DataFrame the last stage reads: the input plus every feature stage's output
        (a vector column as one float64 array per row)."""
        import pandas as pd

        df = df if isinstance(df, pd.DataFrame) else pd.DataFrame(df)
        cols = {c: df[c] for c in df.columns}
        for i, s in enumerate(self.stages[:-1]):
            if s["type"] == "vector_assembler":
                cols[s["outputCol"]] = _assemble(cols, s)
            else:  # a FieldEncoderModel
                voc = self.models[i]
                indptr, indices, data, _ = voc.encode([np.asarray(cols[c]) for c in
                                                       voc.names], s["handleInvalid"])
                d = voc.n_features
                rows = np.zeros((len(indptr) - 1, d))
                rows[np.repeat(np.arange(len(indptr) - 1), np.diff(indptr)), indices] = data
                cols[s["outputCol"]] = pd.Series(list(rows))
        return pd.DataFrame(cols)

    def predict(self, model_input, params=None):
        """The last stage's ``predict`` (a DataFrame of prediction and scores for XML
        models)."""
        import pandas as pd

        X = self._features(model_input)
        if hasattr(self.model, "predict_topk"):
            labels, scores = self.model.predict_topk(X)
            return pd.DataFrame({"prediction": labels, "scores": scores})
        return self.model.predict(X)


def _assemble(cols: dict, stage: dict):
    """A VectorAssembler's output: its numeric input columns side by side (NaN as Spark's
    VectorAssembler keeps it with handleInvalid "keep", refuses it with "error")."""
    import pandas as pd

    parts = []
    for c in stage["inputCols"]:
        if c not in cols:
            raise ValueError(f"VectorAssembler input column '{c}' is not in the input")
        s = cols[c]
        if getattr(s.dtype, "kind", "O") in "biuf":
            parts.append(s.to_numpy(dtype=np.float64, na_value=np.nan)[:, None])
        else:
            parts.append(np.vstack([np.asarray(v, np.float64).reshape(-1) for v in s]))
    X = np.hstack(parts) if parts else np.zeros((0, 0))
    if stage["handleInvalid"] == "error" and np.isnan(X).any():
        row = int(np.flatnonzero(np.isnan(X).any(axis=1))[0])
        raise ValueError(f"VectorAssembler (handleInvalid 'error'): row {row} holds a null "
                         f"or NaN input")
    return pd.Series(list(X))


# ------------------------------------------------------------------------ saving
def _stages_of(model) -> list:
    """[(stage dict, model to write or None)] of a sparkxml model or a PipelineModel."""
    stages = list(getattr(model, "stages", None) or [model])
    out = []
    for i, st in enumerate(stages):
        name = type(st).__name__
        last = i == len(stages) - 1
        if name == "VectorAssembler" and not last:
            hi = st.getHandleInvalid()
            if hi == "skip":
                raise ValueError("VectorAssembler with handleInvalid='skip' drops rows; the "
                                 "sparkxml flavor serves one prediction per input row")
            out.append(({"type": "vector_assembler", "inputCols": list(st.getInputCols()),
                         "outputCol": st.getOutputCol(), "handleInvalid": hi}, None))
        elif getattr(st, "_model_kind", None) == "fields" and not last:
            if st.getHandleInvalid() == "skip":
                raise ValueError("FieldEncoderModel with handleInvalid='skip' drops rows; the "
                                 "sparkxml flavor serves one prediction per input row")
            out.append(({"type": "sparkxml", "outputCol": st.getOutputCol(),
                         "handleInvalid": st.getHandleInvalid()}, st))
        elif getattr(st, "_model_kind", None) and last and st._model_kind != "fields":
            out.append(({"type": "sparkxml"}, st))
        else:
            raise ValueError(f"the sparkxml flavor cannot serve stage {i} ({name}): a model "
                             f"must be a sparkxml model, or a PipelineModel of VectorAssembler "
                             f"and FieldEncoderModel stages followed by a sparkxml model")
    return out


def _write_stages(model, data_dir: str) -> None:
    os.makedirs(data_dir)
    stages = []
    if isinstance(model, str):  # a directory Model.write().save() wrote
        shutil.copytree(model, os.path.join(data_dir, "stage_0"),
                        ignore=shutil.ignore_patterns(".*"))
        stages.append({"type": "sparkxml", "path": "stage_0"})
    else:
        for i, (spec, st) in enumerate(_stages_of(model)):
            if st is not None:
                spec["path"] = f"stage_{i}"
                st.write().save(os.path.join(data_dir, spec["path"]))
            stages.append(spec)
    with open(os.path.join(data_dir, _STAGES), "w") as f:
        json.dump({"stages": stages}, f, indent=1)


def get_default_pip_requirements() -> list:
    """sparkxml and the packages its serving imports, pinned to the installed versions."""
    from importlib.metadata import PackageNotFoundError, version

    out = []
    for pkg in ("sparkxml", "numpy", "scipy", "pandas", "pyarrow", "numba"):
        try:
            out.append(f"{pkg}=={version(pkg)}")
        except PackageNotFoundError:  # sparkxml run from a checkout
            out.append(pkg)
    return out


def save_model(sparkxml_model, path: str, mlflow_model=None, signature=None,
               input_example=None, pip_requirements=None, extra_pip_requirements=None,
               metadata: dict | None = None, conda_env=None) -> None:
    """Save a sparkxml model as an MLflow model in the local directory ``path``.

    Parameters
    ----------
    sparkxml_model : sparkxml model, PipelineModel, or str
        A fitted sparkxml model; a ``PipelineModel`` of ``VectorAssembler`` /
        ``FieldEncoderModel`` stages followed by a sparkxml model; or the path of a
        directory a sparkxml model was saved to.
    path : str
        A directory that does not exist yet.
    mlflow_model : mlflow.models.Model, optional
        The model this flavor is added to (``log_model`` passes it).
    signature : mlflow.models.ModelSignature, optional
        Inferred when not given: from ``input_example`` and the model's predictions on it.
        ``False`` saves none.
    input_example : pandas.DataFrame, optional
        Rows of the input columns; one row of zeros in them when not given.
    pip_requirements, extra_pip_requirements, conda_env
        As in every MLflow flavor; by default :func:`get_default_pip_requirements`.
    metadata : dict, optional
        Stored in the MLmodel file.

    Examples
    --------
    >>> import sparkxml.mlflow                                  # doctest: +SKIP
    >>> info = sparkxml.mlflow.log_model(model, name="model")  # doctest: +SKIP
    >>> import mlflow.pyfunc                                    # doctest: +SKIP
    >>> mlflow.pyfunc.load_model(info.model_uri).predict(pandas_df)  # doctest: +SKIP
    """
    import yaml
    from mlflow import pyfunc
    from mlflow.models import Model
    from mlflow.models.model import MLMODEL_FILE_NAME
    from mlflow.models.signature import infer_signature
    from mlflow.models.utils import _save_example
    from mlflow.utils.environment import (
        _CONDA_ENV_FILE_NAME,
        _PYTHON_ENV_FILE_NAME,
        _REQUIREMENTS_FILE_NAME,
        _process_conda_env,
        _process_pip_requirements,
        _PythonEnv,
        _validate_env_arguments,
    )
    from mlflow.utils.model_utils import _validate_and_prepare_target_save_path

    _validate_env_arguments(conda_env, pip_requirements, extra_pip_requirements)
    path = os.path.abspath(path)
    _validate_and_prepare_target_save_path(path)
    data_dir = os.path.join(path, _DATA)
    try:
        _write_stages(sparkxml_model, data_dir)
    except Exception:
        shutil.rmtree(path, ignore_errors=True)
        raise
    served = ServedPipeline.load(data_dir)
    if mlflow_model is None:
        mlflow_model = Model()
    if input_example is None:
        input_example = served.example()
    _save_example(mlflow_model, input_example, path)
    if signature is None:
        signature = infer_signature(input_example, served.predict(input_example))
    if signature is not False:
        mlflow_model.signature = signature
    if metadata is not None:
        mlflow_model.metadata = metadata
    pyfunc.add_to_model(mlflow_model, loader_module="sparkxml.mlflow", data=_DATA,
                        conda_env=_CONDA_ENV_FILE_NAME, python_env=_PYTHON_ENV_FILE_NAME)
    model = served.model
    mlflow_model.add_flavor(FLAVOR_NAME, data=_DATA, sparkxml_version=_version(),
                            model_class=getattr(model, "model_class", type(model).__name__),
                            stages=len(served.stages))
    mlflow_model.save(os.path.join(path, MLMODEL_FILE_NAME))
    if conda_env is None:
        default = get_default_pip_requirements() if pip_requirements is None else None
        conda_env, reqs, _ = _process_pip_requirements(default, pip_requirements,
                                                       extra_pip_requirements)
    else:
        conda_env, reqs, _ = _process_conda_env(conda_env)
    with open(os.path.join(path, _CONDA_ENV_FILE_NAME), "w") as f:
        yaml.safe_dump(conda_env, stream=f, default_flow_style=False)
    with open(os.path.join(path, _REQUIREMENTS_FILE_NAME), "w") as f:
        f.write("\n".join(reqs))
    _PythonEnv.current().to_yaml(os.path.join(path, _PYTHON_ENV_FILE_NAME))


def log_model(sparkxml_model, name: str | None = None, signature=None, input_example=None,
              registered_model_name: str | None = None, pip_requirements=None,
              extra_pip_requirements=None, metadata: dict | None = None, **kwargs):
    """Log a sparkxml model to the active MLflow run (see :func:`save_model`); returns the
    ``ModelInfo`` (``model_uri`` loads it). ``kwargs`` go to ``mlflow.models.Model.log``
    (``params``, ``tags``, ``await_registration_for``, ...)."""
    import sys

    from mlflow.models import Model

    return Model.log(artifact_path=None, name=name, flavor=sys.modules[__name__],
                     sparkxml_model=sparkxml_model,
                     signature=signature, input_example=input_example,
                     registered_model_name=registered_model_name,
                     pip_requirements=pip_requirements,
                     extra_pip_requirements=extra_pip_requirements, metadata=metadata,
                     **kwargs)


def _local_data_dir(model_uri: str, dst_path: str | None = None) -> str:
    from mlflow.tracking.artifact_utils import _download_artifact_from_uri
    from mlflow.utils.model_utils import _get_flavor_configuration

    local = _download_artifact_from_uri(artifact_uri=model_uri, output_path=dst_path)
    conf = _get_flavor_configuration(model_path=local, flavor_name=FLAVOR_NAME)
    return os.path.join(local, conf.get("data", _DATA))


def load_model(model_uri: str, dst_path: str | None = None) -> Any:
    """The served model (``sparkxml_kernels.load_model``'s, or a :class:`ServedPipeline`
    for a pipeline) of an MLflow model logged with this flavor; no Spark needed."""
    served = ServedPipeline.load(_local_data_dir(model_uri, dst_path))
    return served.model if len(served.stages) == 1 else served


def _load_pyfunc(path: str) -> ServedPipeline:
    """``mlflow.pyfunc.load_model``'s entry point: ``path`` is the model's data directory."""
    return ServedPipeline.load(path)


def _version() -> str:
    from sparkxml_kernels import __version__

    return __version__


__all__ = ["FLAVOR_NAME", "ServedPipeline", "get_default_pip_requirements", "load_model",
           "log_model", "save_model"]
