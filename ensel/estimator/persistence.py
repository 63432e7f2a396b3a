"""Saving and loading fitted estimators: one pickle (zlib-compressed by default), written
to a temporary name and renamed, and a loader that turns a corrupt file into one clear line.
A pickle runs code when loaded: load only files you trust (the mimic net exports to ONNX)."""

from __future__ import annotations

import os
import pickle
import zlib
from pathlib import Path

from ..errors import ModelFileError

__all__ = ["COMPRESSED_MAGIC", "check_version", "read_model", "version", "write_model"]

COMPRESSED_MAGIC = b"ENSEL-ZLIB-PICKLE\n"
"""First bytes of a model saved with ``compress`` > 0 (a zlib stream of the pickle follows)."""


class _Sink:
    """A file-like target that compresses what pickle writes into ``fh``."""

    def __init__(self, fh, packer) -> None:
        self.fh, self.packer = fh, packer

    def write(self, data) -> int:
        view = memoryview(data)  # pickle hands large arrays over as PickleBuffers
        self.fh.write(self.packer.compress(view))
        return view.nbytes


def write_model(model, path: str | os.PathLike, compress: int = 3) -> None:
    """Pickle ``model`` to ``path`` atomically (a temporary name, then a rename), through zlib
    at level ``compress`` (0: a plain pickle)."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "wb") as fh:
            if compress:
                fh.write(COMPRESSED_MAGIC)
                packer = zlib.compressobj(int(compress))
                pickle.dump(model, _Sink(fh, packer), protocol=pickle.HIGHEST_PROTOCOL)
                fh.write(packer.flush())
            else:
                pickle.dump(model, fh, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def read_model(path: str | os.PathLike, cls: type, family: type):
    """The ``cls`` instance pickled in ``path`` (this unpickles: load only files you trust).
    ``family``: the base class of every ensel estimator, to tell a model of another ensel
    class from a file that holds no ensel model. A truncated or corrupt file, or a model
    saved by another ensel version, raises :class:`ensel.errors.ModelFileError` with one
    line."""
    with open(path, "rb") as fh:
        try:
            if fh.read(len(COMPRESSED_MAGIC)) == COMPRESSED_MAGIC:
                model = pickle.loads(zlib.decompress(fh.read()))
            else:
                fh.seek(0)
                model = pickle.load(fh)
        except ImportError as exc:
            raise ModelFileError(
                f"{path}: the model needs a module this Python lacks ({exc}); install it "
                "(e.g. the same ensel extras as where the model was saved)"
            ) from None
        except Exception as exc:  # truncated, corrupt, or not a pickle at all
            reason = " ".join(str(exc).split())[:120]
            raise ModelFileError(
                f"{path} is not a readable ensel model: the file is truncated or corrupt "
                f"({type(exc).__name__}: {reason}); save the model again or use the "
                "original file"
            ) from None
    if not isinstance(model, cls):
        held = type(model).__name__
        if isinstance(model, family):
            raise TypeError(
                f"{path} holds an ensel {held}, not a {cls.__name__}; load it with "
                f"{held}.load or ensel.estimator.load_model"
            )
        raise TypeError(f"{path} holds a {held} object, not an ensel model")
    check_version(model, path)
    return model


def version() -> str:
    """The installed ensel version (stamped on fitted models)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("ensel")
    except PackageNotFoundError:
        return "unknown"


def check_version(model, path) -> None:
    """Refuse ``model`` when another ensel version saved it: a saved model is a pickle of
    this version's classes, and only the version that saved it is known to load and predict
    with it the same."""
    if model.ensel_version_ != version():
        raise ModelFileError(
            f"{path} was saved by ensel {model.ensel_version_} and this is ensel {version()}; "
            "refit the model with this version or load it with the one that saved it"
        )
