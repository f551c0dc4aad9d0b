"""What every sparkxml Estimator and Model shares: validation, param copying, persistence.

Persistence writes ``path/metadata`` in Spark ML's ``DefaultParamsWriter`` format (plus
``formatVersion``, ``modelKind`` and a ``saveId``) and, for models, ``path/data/`` (the arrays
as parquet chunk rows); see ``sparkxml_kernels.persist`` for the format and
``sparkxml._core.storage`` for how it travels, so that:

- a model lands where Spark writes (through Spark over Connect and for URIs, through pyarrow
  for local paths in classic sessions), and ``write().overwrite()`` never needs the JVM;
- a failed save leaves nothing that loads (data first, metadata with the save id last);
- ``sparkxml_kernels.load_model(path)`` reads the same directory without Spark;
- a saved Pipeline holding sparkxml stages loads with ``PipelineModel.load``, also over
  Spark Connect (pyspark loads a Python stage by importing the class named in its metadata
  and calling its ``load(path)``, which reads through the active session).

A model subclass implements ``_save_arrays() -> dict`` (plain numpy arrays),
``_from_arrays(arrays, path)`` (classmethod; raise ``ModelFormatError`` naming ``path`` for
inconsistent arrays), and sets ``_required_arrays`` and ``_model_kind``; it then saves and
loads through every transport without further code.

Transform without the model in the closure (opt in): in ``_transform_validated`` call
``handle = self._task_model(dataset)`` and let the task function capture ``handle`` (never
``self``); in the task, ``handle.build(key, factory)`` returns ``factory(arrays)`` built once
per Python worker (``key``: a hashable of the other values the factory uses, e.g. params), or
``handle.arrays()`` the arrays themselves. Small models still travel inline; large ones are
read by the executors from the saved directory, memory-mapped; see ``sparkxml._core.serving``::

    handle = self._task_model(dataset)
    extra = (int(self.getTopK()),)

    def predict(batches):
        predictor = handle.build(("MyPredictor", extra), lambda a: MyPredictor(a, *extra))
        for b in batches:
            yield ...

    return dataset.mapInArrow(predict, schema)
"""
from __future__ import annotations

import functools
import inspect
from typing import Any

import pyspark
from pyspark.ml import Estimator, Model
from pyspark.ml.param import Params
from pyspark.ml.util import MLReadable, MLReader, MLWritable, MLWriter

from sparkxml._core import storage as _storage
from sparkxml._core.constraints import SHARED_PARAM_CONSTRAINTS, validate_params
from sparkxml_kernels import persist


def class_name(obj_or_cls) -> str:
    """The import path a save writes into the metadata: ``sparkxml.<Name>`` for the public
    classes (stable whatever module defines them), else the defining module's path."""
    cls = obj_or_cls if isinstance(obj_or_cls, type) else type(obj_or_cls)
    import sparkxml

    if getattr(sparkxml, cls.__name__, None) is cls:
        return f"sparkxml.{cls.__name__}"
    return f"{cls.__module__}.{cls.__name__}"


def names_class(name: str, cls: type) -> bool:
    """Whether the metadata class path ``name`` imports as ``cls``: directories saved under
    another import path of the same class (``sparkxml.<Name>``, the defining module's path,
    or a path of ``sparkxml._core.moved``) name the same class."""
    import importlib

    mod, _, attr = name.rpartition(".")
    if attr != cls.__name__ or not mod.startswith("sparkxml"):
        return False
    try:
        return getattr(importlib.import_module(mod), attr, None) is cls
    except ImportError:
        return False


class _ClassCheck:
    """The ``expected_class`` of a load: accepts the class paths that name ``cls``; its
    ``str`` (in errors) is the path a save writes."""

    def __init__(self, cls: type):
        self.cls = cls

    def __call__(self, name: str) -> bool:
        return names_class(name, self.cls)

    def __str__(self) -> str:
        return class_name(self.cls)


class SparkXMLWriter(MLWriter):
    """Saves a sparkxml Params instance (and its arrays, for models) without the JVM."""

    def __init__(self, instance: "SparkXMLParams"):
        super().__init__()
        self.instance = instance

    def save(self, path: str) -> None:
        if not isinstance(path, str) or not path:
            raise TypeError(f"path must be a non-empty string, got {path!r}")
        inst = self.instance
        validate_params(inst)
        params = {p.name: v for p, v in inst._paramMap.items()}
        defaults = {p.name: v for p, v in inst._defaultParamMap.items()}
        arrays = inst._save_arrays() if isinstance(inst, SparkXMLModel) else None
        for name, value in params.items():
            if not isinstance(value, (str, int, float, bool, list, dict, type(None))):
                raise TypeError(f"{type(inst).__name__}: param {name} holds a "
                                f"{type(value).__name__}, which cannot be saved; save that "
                                f"object and set the param to its path")
        meta = persist.metadata_json(class_name(inst), inst.uid, params, defaults,
                                     model_kind=inst._model_kind,
                                     spark_version=pyspark.__version__)
        spark = getattr(self, "_sparkSession", None) or _storage.active_session()
        stored = _storage.save(spark, path, meta, arrays, overwrite=self.shouldOverwrite)
        if isinstance(inst, SparkXMLModel):
            inst._stored = stored

    def saveImpl(self, path: str) -> None:  # pragma: no cover - save() does it all
        self.save(path)


class SparkXMLReader(MLReader):
    """Loads what ``SparkXMLWriter`` saved, checking class and format first."""

    def __init__(self, cls):
        super().__init__()
        self.cls = cls

    def load(self, path: str):
        """Load, raising ``ModelFormatError`` naming ``path`` for whatever is wrong with it."""
        try:
            return self._load(path)
        except persist.LOAD_ERRORS as e:
            raise persist.as_format_error(path, e) from (e if isinstance(e, OSError) else None)

    def _load(self, path: str):
        if not isinstance(path, str) or not path:
            raise TypeError(f"path must be a non-empty string, got {path!r}")
        spark = getattr(self, "_sparkSession", None) or _storage.active_session()
        is_model = issubclass(self.cls, SparkXMLModel)
        meta, arrays, stored = _storage.load(
            spark, path, _ClassCheck(self.cls),
            self.cls._required_arrays if is_model else (),
            model_kind=self.cls._model_kind if is_model else None)
        if is_model:
            inst = self.cls._from_arrays(arrays, path)
            inst._stored = stored
        else:
            inst = self.cls()
        inst._resetUid(meta["uid"])
        for name, value in meta.get("defaultParamMap", {}).items():
            if inst.hasParam(name):
                inst._setDefault(**{name: value})
        for name, value in meta.get("paramMap", {}).items():
            if not inst.hasParam(name):
                raise persist.ModelFormatError(f"{path}: unknown param {name!r} for "
                                               f"{self.cls.__name__}")
            try:
                inst.set(inst.getParam(name), value)
            except (TypeError, ValueError) as e:  # the param's typeConverter refused it
                raise persist.ModelFormatError(f"{path}: param {name}={value!r} is invalid: "
                                               f"{e}") from None
        try:
            validate_params(inst)
        except ValueError as e:
            raise persist.ModelFormatError(f"{path}: {e}") from None
        return inst


def keywords_of(template, *, drop=(), add=None, **defaults):
    """Decorator giving a ``**kwargs`` ``__init__`` / ``setParams`` the keyword-only
    signature of ``template`` (another class's method), less the names in ``drop``, with
    ``defaults`` replacing some defaults and ``add`` (name -> default, in order) appended.

    For a class whose params are another's but for a few: one keyword list for both, so
    they cannot drift apart. ``inspect.signature``, ``help()``, the unknown-keyword check
    and pyspark's ``keyword_only`` (apply it outside this decorator) see the full list.
    """
    sig = inspect.signature(template)
    unknown = (set(drop) | set(defaults)) - set(sig.parameters)
    taken = set(add or {}) & (set(sig.parameters) - set(drop))
    if unknown or taken:
        raise TypeError(f"keywords_of: {sorted(unknown)} are not keywords of "
                        f"{template.__qualname__}, {sorted(taken)} already are")
    params = [p.replace(default=defaults.get(name, p.default))
              for name, p in sig.parameters.items() if name not in drop]
    params += [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=value)
               for name, value in (add or {}).items()]

    def decorate(fn):
        fn.__signature__ = sig.replace(parameters=params)
        return fn

    return decorate


def _known_kwargs_only(fn, method: str):
    """Wrap ``__init__`` / ``setParams`` so that an unknown keyword fails the same way in
    every sparkxml class: a TypeError naming it and listing the class's params (whether the
    method spells its keywords out or takes ``**kwargs``)."""
    sig = inspect.signature(fn)  # follows keyword_only's __wrapped__ to the real signature
    named = {n for n, p in sig.parameters.items() if p.kind in (p.KEYWORD_ONLY,
                                                                 p.POSITIONAL_OR_KEYWORD)}
    var_kw = any(p.kind == p.VAR_KEYWORD for p in sig.parameters.values())

    @functools.wraps(fn)
    def wrapper(self, *args, **kwargs):
        unknown = [k for k in kwargs if k not in named and not (var_kw and self.hasParam(k))]
        if unknown:
            known = sorted(named - {"self"}) if not var_kw else sorted(p.name for p in
                                                                      self.params)
            raise TypeError(f"{type(self).__name__}.{method}() got unknown param(s) "
                            f"{', '.join(repr(k) for k in unknown)}; its params are: "
                            f"{', '.join(known)}")
        return fn(self, *args, **kwargs)

    wrapper._sparkxml_kwargs_checked = True
    return wrapper


class SparkXMLParams(Params, MLWritable, MLReadable):
    """Base of every public sparkxml class: validation and persistence.

    Every subclass's ``__init__`` and ``setParams`` reject unknown keywords with the same
    TypeError (``_known_kwargs_only``), whatever their signature.
    """

    _model_kind = "params"
    # the keywords of the last ``@keyword_only`` call (pyspark sets it)
    _input_kwargs: dict[str, Any]
    # the pyspark.ml.param.shared params' rules; mixins and subclasses add their own
    _constraints = SHARED_PARAM_CONSTRAINTS

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        for method in ("__init__", "setParams"):
            fn = cls.__dict__.get(method)
            if fn is not None and not getattr(fn, "_sparkxml_kwargs_checked", False):
                setattr(cls, method, _known_kwargs_only(fn, method))

    def _validate_params(self) -> None:
        validate_params(self)

    def write(self) -> SparkXMLWriter:
        """Return a writer: ``write().save(path)`` or ``write().overwrite().save(path)``."""
        return SparkXMLWriter(self)

    @classmethod
    def read(cls) -> SparkXMLReader:
        return SparkXMLReader(cls)

    @classmethod
    def load(cls, path: str):
        """Load an instance saved with ``write().save(path)``."""
        return cls.read().load(path)

    def _opt(self, param):
        """The param's value, or None where it has neither a value nor a default."""
        return self.getOrDefault(param) if self.isDefined(param) else None

    def _set_params(self, **kwargs: Any):
        return self._set(**{k: v for k, v in kwargs.items() if v is not None})


def _workers_missing_sparkxml(e: BaseException) -> str | None:
    """One clear line for the commonest set-up error, instead of pages of JVM trace: Spark's
    Python workers run another interpreter (PYSPARK_PYTHON unset or pointing elsewhere) that
    cannot import sparkxml or its kernels."""
    text = str(e)
    for mod in ("sparkxml_kernels", "sparkxml"):
        if f"No module named '{mod}" in text:
            import os

            return (f"Spark's Python workers cannot import {mod}: they run "
                    f"PYSPARK_PYTHON={os.environ.get('PYSPARK_PYTHON', '(unset: python3)')}; "
                    f"set PYSPARK_PYTHON to the Python that has sparkxml installed before "
                    f"the session starts (sparkxml.session.get_session() does it for local "
                    f"sessions)")
    return None


class SparkXMLEstimator(Estimator, SparkXMLParams):
    """Shared Estimator logic: validate params first, then ``_fit_validated``."""

    def _fit(self, dataset):
        self._validate_params()
        try:
            model = self._fit_validated(dataset)
        except Exception as e:
            missing = _workers_missing_sparkxml(e)
            if missing is None:
                raise
            raise RuntimeError(missing) from None
        self._copyValues(model)
        model._validate_params()
        return model

    def _init_model_predictor(self, predictor_class: type, saved: str, fitted: str):
        """The kernel predictor of the model ``initModel`` names (a fitted model or a saved
        path), None when unset; a model of another kind is refused with ``saved`` (the path's
        error, ``{path}`` filled in) or ``fitted`` (``{kind}``: the model's class)."""
        init = self._opt(self.getParam("initModel"))
        if init is None:
            return None
        if isinstance(init, str):
            import sparkxml_kernels

            # the served model's kernel predictor (a FieldVocabulary has none)
            pred = getattr(sparkxml_kernels.load_model(init), "predictor", None)
            message = saved.format(path=init)
        else:
            pred = getattr(init, "predictor", None)
            message = fitted.format(kind=type(init).__name__)
        if not isinstance(pred, predictor_class):
            raise ValueError(f"initModel: {message}")
        return pred

    def _fit_validated(self, dataset):  # pragma: no cover - abstract
        raise NotImplementedError


class SparkXMLModel(Model, SparkXMLParams):
    """Shared Model logic. Subclasses implement ``_save_arrays`` and ``_from_arrays``; see
    the module docstring for persistence and ``_task_model``."""

    _required_arrays: tuple = ()
    # where the arrays were last saved to / loaded from (a sparkxml._core.storage.StoredModel)
    _stored = None

    def _task_model(self, dataset):
        """A ``sparkxml_kernels.model_cache.ModelHandle`` to this model's arrays for the
        tasks of a transform over ``dataset`` (see ``sparkxml._core.serving``)."""
        from sparkxml._core.serving import task_handle

        return task_handle(self, dataset)

    def _save_arrays(self) -> dict:  # pragma: no cover - abstract
        raise NotImplementedError

    @classmethod
    def _from_arrays(cls, arrays: dict, path: str):  # pragma: no cover - abstract
        raise NotImplementedError

    def _transform(self, dataset):
        self._validate_params()
        return self._transform_validated(dataset)

    def _transform_validated(self, dataset):  # pragma: no cover - abstract
        raise NotImplementedError


class SparkXMLPredictorModel(SparkXMLModel):
    """The base of every sparkxml model: one JVM-free predictor plus an optional training
    summary (a ``sparkxml._core.summary.TrainingSummary``).

    Subclasses set ``_predictor_class`` (``from_arrays(dict)``, ``to_arrays()``,
    ``n_features``) and ``_summary_class`` (``_from_arrays(dict)`` -> summary or None,
    ``_to_arrays()``); the saved arrays are the predictor's plus the summary's. Hooks for
    models whose predictor is not stored as is:

    * ``_predictor_arrays()`` / ``_predictor_from_arrays(arrays)``: the arrays a predictor is
      saved as and read back from (default: its ``to_arrays`` / ``from_arrays``);
    * ``_restore(arrays)``: read what else the model keeps from the loaded arrays;
    * ``_state_attrs``: the further attributes ``copy`` carries over;
    * ``_format_message(path, error)``: the ``ModelFormatError`` text of a bad directory.
    """

    _predictor_class = None
    _summary_class = None
    _state_attrs: tuple = ()
    _format_errors = (ValueError, KeyError, IndexError, TypeError)

    def __init__(self, predictor=None, summary=None):
        super().__init__()
        self._predictor = predictor
        self._summary = summary

    @property
    def predictor(self):
        """The JVM-free predictor (``sparkxml_kernels``; numpy / CSR input)."""
        return self._predictor

    @property
    def numFeatures(self) -> int:
        if self._predictor is None:
            raise RuntimeError(f"this {type(self).__name__} holds no predictor (was it "
                               f"constructed directly?)")
        return int(self._predictor.n_features)

    @property
    def hasSummary(self) -> bool:
        return self._summary is not None

    @property
    def summary(self):
        """The training summary: what the fit measured (``sparkxml._core.summary``); saved
        with the model."""
        if self._summary is None:
            raise RuntimeError("no training summary available for this model")
        return self._summary

    # ------------------------------------------------------------------ persistence
    def _predictor_arrays(self) -> dict:
        return self._predictor.to_arrays()

    @classmethod
    def _predictor_from_arrays(cls, arrays: dict):
        return cls._predictor_class.from_arrays(arrays)

    def _restore(self, arrays: dict) -> None:
        """Read the model's other saved arrays (default: none)."""

    @classmethod
    def _format_message(cls, path: str, error: BaseException) -> str:
        return f"{path}: {error}"

    def _save_arrays(self) -> dict:
        arrays = dict(self._predictor_arrays())
        if self._summary is not None:
            arrays.update(self._summary._to_arrays())
        return arrays

    @classmethod
    def _from_arrays(cls, arrays: dict, path: str):
        try:
            model = cls(cls._predictor_from_arrays(arrays))
            model._restore(arrays)
            if cls._summary_class is not None:
                model._summary = cls._summary_class._from_arrays(arrays)
        except cls._format_errors as e:
            raise persist.ModelFormatError(cls._format_message(path, e)) from None
        return model

    def copy(self, extra=None):
        that = super().copy(extra)
        for name in ("_predictor", "_summary") + self._state_attrs:
            setattr(that, name, getattr(self, name))
        return that
