"""Exceptions that callers may want to catch by type."""

from __future__ import annotations

__all__ = ["EmptyLibraryError", "ModelFileError", "SpecError", "StoreError"]


class SpecError(ValueError):
    """A library spec is malformed; the message names the file, the key and what is allowed."""


class StoreError(ValueError):
    """A prediction store is corrupt or belongs to other data; the message says what to do."""


class ModelFileError(ValueError):
    """A saved model file is truncated, corrupt or needs a missing module; one line says so."""


class EmptyLibraryError(ValueError):
    """No run of a library's spec finished (in time, or at all); the message says why."""
