"""A verifier spec's fields and outcomes, shared by the verifier kinds (SPEC V1–V7).

A check returns an :data:`Outcome` ``(status, detail, diagnostics)``; a spec
field that is missing or of the wrong type raises :class:`SpecInvalid`, which
the verifier reports as ``error`` naming the field.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from lab.errors import LabError

VerifierStatus = Literal["pass", "fail", "error"]

Outcome = tuple[VerifierStatus, str, dict[str, Any]]


class SpecInvalid(LabError):
    """A verifier spec field is missing or has the wrong type (→ error)."""


def spec_field(spec: Mapping[str, Any], key: str, kind: type | tuple[type, ...],
               default: Any = ...) -> Any:
    """``spec[key]``, which must be of ``kind`` (a JSON ``true`` is never an int); ``default`` when absent.

    Raises:
        SpecInvalid: the field is required and missing, or has another type.
    """
    if key not in spec:
        if default is ...:
            raise SpecInvalid(f"field {key!r} is required")
        return default
    value = spec[key]
    kinds = kind if isinstance(kind, tuple) else (kind,)
    # bool is an int subclass; JSON true is never a valid count or exit code.
    if (isinstance(value, bool) and bool not in kinds) or not isinstance(value, kinds):
        names = " or ".join(k.__name__ for k in kinds)
        raise SpecInvalid(f"field {key!r}: expected {names}, got {value!r}")
    return value
