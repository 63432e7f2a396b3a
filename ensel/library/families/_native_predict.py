"""xgboost's and LightGBM's own C prediction calls, made directly for a few rows. On one row the
Python wrappers' own work (argument JSON, array-interface objects built per call, a predictor
object per call, parameter strings) costs many times the trees' walk; the C call is the one the
wrapper makes, with the arguments it would pass (those that do not depend on the rows made once
per model and stage), so the numbers are the wrapper's bit for bit (tested). Where a library
lacks what the call needs (another version), the wrapper is called instead."""

from __future__ import annotations

import ctypes
import functools
import math
import threading
import weakref

import numpy as np

__all__ = ["lightgbm_raw", "lightgbm_row", "xgboost_value"]

_XGBOOST_NEEDS = ("_LIB", "_check_call", "c_bst_ulong", "make_jcargs")
_LIGHTGBM_NEEDS = (
    "_LIB",
    "_safe_call",
    "_c_str",
    "_param_dict_to_str",
    "_C_API_DTYPE_FLOAT64",
    "_C_API_IS_COL_MAJOR",
    "_C_API_IS_ROW_MAJOR",
    "_C_API_PREDICT_NORMAL",
)


def xgboost_value(booster, X: np.ndarray, rounds: int, missing: float) -> np.ndarray:
    """``booster.inplace_predict(X, iteration_range=(0, rounds), predict_type="value",
    missing=missing)``: float32 ``(n,)`` for binary models, ``(n, C)`` otherwise, through
    xgboost's ``XGBoosterPredictFromDense`` as ``inplace_predict`` calls it (thread-safe as
    that is: the library's output buffer is per thread and copied at once)."""
    core = _library("xgboost.core", _XGBOOST_NEEDS)
    if core is None:  # pragma: no cover - another xgboost version
        return booster.inplace_predict(
            X, iteration_range=(0, rounds), predict_type="value", missing=missing
        )
    X = np.ascontiguousarray(X, dtype=np.float64)
    shape = ctypes.POINTER(core.c_bst_ulong)()
    dims = core.c_bst_ulong()
    preds = ctypes.POINTER(ctypes.c_float)()
    core._check_call(
        core._LIB.XGBoosterPredictFromDense(
            booster.handle,
            _array_interface(X),
            _xgboost_arguments(core, int(rounds), None if math.isnan(missing) else missing),
            None,
            ctypes.byref(shape),
            ctypes.byref(dims),
            ctypes.byref(preds),
        )
    )
    out = np.empty([shape[i] for i in range(dims.value)], dtype=np.float32)
    ctypes.memmove(out.ctypes.data, preds, out.nbytes)  # a copy: the buffer is the library's
    return out


def _array_interface(X: np.ndarray) -> bytes:
    """The JSON array interface of a C-ordered float64 matrix, as the library parses it."""
    data, readonly = X.__array_interface__["data"]
    n, p = X.shape
    flag = "true" if readonly else "false"
    text = f'{{"data": [{data}, {flag}], "shape": [{n}, {p}], "strides": null, '
    return bytes(text + '"typestr": "<f8", "version": 3}', "utf-8")


@functools.lru_cache(maxsize=256)
def _xgboost_arguments(core, rounds: int, missing: float | None) -> bytes:
    """``inplace_predict``'s JSON arguments for values (not margins) of the first ``rounds``
    rounds, made once per stage and missing value (None: NaN, which as a key would never
    equal itself)."""
    return core.make_jcargs(
        type=0,
        training=False,
        iteration_begin=0,
        iteration_end=rounds,
        missing=math.nan if missing is None else missing,
        strict_shape=False,
        cache_id=0,
    )


def lightgbm_raw(booster, X: np.ndarray, rounds: int) -> np.ndarray:
    """``booster.predict(X, num_iteration=rounds, num_threads=1)`` (float64 ``(n,)`` for
    binary models, ``(n, C)`` otherwise) through LightGBM's ``LGBM_BoosterPredictForMat`` as
    ``Booster.predict`` calls it for a float64 matrix."""
    basic = _library("lightgbm.basic", _LIGHTGBM_NEEDS)
    handle = getattr(booster, "_handle", None)
    if basic is None or handle is None:  # pragma: no cover - another LightGBM version
        return booster.predict(X, num_iteration=rounds, num_threads=1)
    X = np.ascontiguousarray(X, dtype=np.float64)
    # as the wrapper's _np2d_to_np1d: a matrix both C- and F-ordered (one row) goes column-major
    layout = basic._C_API_IS_COL_MAJOR if X.flags.f_contiguous else basic._C_API_IS_ROW_MAJOR
    outputs = ctypes.c_int(0)
    basic._safe_call(basic._LIB.LGBM_BoosterGetNumClasses(handle, ctypes.byref(outputs)))
    preds = np.empty(X.shape[0] * outputs.value, dtype=np.float64)
    count = ctypes.c_int64(0)
    basic._safe_call(
        basic._LIB.LGBM_BoosterPredictForMat(
            handle,
            ctypes.c_void_p(X.ctypes.data),
            ctypes.c_int(basic._C_API_DTYPE_FLOAT64),
            ctypes.c_int32(X.shape[0]),
            ctypes.c_int32(X.shape[1]),
            ctypes.c_int(layout),
            ctypes.c_int(basic._C_API_PREDICT_NORMAL),
            ctypes.c_int(0),
            ctypes.c_int(int(rounds)),
            _lightgbm_parameters(basic),
            ctypes.byref(count),
            ctypes.c_void_p(preds.ctypes.data),
        )
    )
    if count.value != preds.size:  # pragma: no cover - the library's own check
        raise ValueError("Wrong length for predict results")
    return preds if outputs.value == 1 else preds.reshape(X.shape[0], outputs.value)


_ROW_SETUPS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
"""Per LightGBM booster: its single-row prediction setup (:class:`_RowSetup`)."""


def lightgbm_row(booster, X: np.ndarray, rounds: int) -> np.ndarray:
    """:func:`lightgbm_raw` of a one-row ``X``, through LightGBM's single-row call
    (``LGBM_BoosterPredictForMatSingleRowFast``) whose setup (the configuration parsed, the
    predictor made) is kept while the booster lives and made again only when the rounds or
    the width change: the same predictor's numbers without rebuilding it per call. A booster
    holds one single-row predictor, so its setups are one at a time and its calls are
    serialised."""
    basic = _library("lightgbm.basic", _LIGHTGBM_NEEDS)
    handle = getattr(booster, "_handle", None)
    if basic is None or handle is None or X.shape[0] != 1:  # pragma: no cover - other versions
        return lightgbm_raw(booster, X, rounds)
    row = np.ascontiguousarray(X, dtype=np.float64)
    setup = _ROW_SETUPS.get(booster)
    if setup is None:
        setup = _ROW_SETUPS.setdefault(booster, _RowSetup(basic, booster))
    with setup.lock:
        config = setup.config(int(rounds), row.shape[1])
        preds = np.empty(setup.outputs, dtype=np.float64)
        count = ctypes.c_int64(0)
        basic._safe_call(
            basic._LIB.LGBM_BoosterPredictForMatSingleRowFast(
                config,
                ctypes.c_void_p(row.ctypes.data),
                ctypes.byref(count),
                ctypes.c_void_p(preds.ctypes.data),
            )
        )
    if count.value != preds.size:  # pragma: no cover - the library's own check
        raise ValueError("Wrong length for predict results")
    return preds if preds.size == 1 else preds.reshape(1, preds.size)


class _RowSetup:
    """The single-row setup of one booster: made for given rounds and width, freed when
    replaced or when the booster is collected."""

    def __init__(self, basic, booster):
        self.basic, self.booster = basic, weakref.ref(booster)
        self.lock = threading.Lock()
        outputs = ctypes.c_int(0)
        basic._safe_call(
            basic._LIB.LGBM_BoosterGetNumClasses(booster._handle, ctypes.byref(outputs))
        )
        self.outputs = outputs.value
        self.key = None
        self.handle = ctypes.c_void_p()
        self._free = None

    def config(self, rounds: int, width: int) -> ctypes.c_void_p:
        """The setup handle for ``rounds`` and ``width`` (made again where they changed)."""
        if self.key == (rounds, width):
            return self.handle
        if self._free is not None:
            self._free()  # the old setup, before the booster's predictor is made again
        basic, handle = self.basic, ctypes.c_void_p()
        basic._safe_call(
            basic._LIB.LGBM_BoosterPredictForMatSingleRowFastInit(
                self.booster()._handle,
                ctypes.c_int(basic._C_API_PREDICT_NORMAL),
                ctypes.c_int(0),
                ctypes.c_int(rounds),
                ctypes.c_int(basic._C_API_DTYPE_FLOAT64),
                ctypes.c_int32(width),
                _lightgbm_parameters(basic),
                ctypes.byref(handle),
            )
        )
        self._free = weakref.finalize(self.booster(), basic._LIB.LGBM_FastConfigFree, handle)
        self.key, self.handle = (rounds, width), handle
        return handle


@functools.cache
def _lightgbm_parameters(basic) -> bytes:
    """The prediction parameters ``Booster.predict`` passes for ``num_threads=1``."""
    return basic._c_str(basic._param_dict_to_str({"num_threads": 1}))


@functools.cache
def _library(name: str, needs: tuple[str, ...]):
    """The module ``name`` of a library where it has every attribute of ``needs`` (what the
    direct calls read of it), else None; looked up once."""
    import importlib

    module = importlib.import_module(name)
    return module if all(hasattr(module, attr) for attr in needs) else None
