"""What a build's seal proves, said at every door: a build whose info is not sealed is unproven.

A build's seal covers its index rows and, since builds seal it, its info (cost unit, the
in-situ quantile, the evaluation, calibration notes).  A build published before that (or
with no seal at all) opens, but anyone who could write the database may have edited what
the seal does not cover: ``serve`` (its start-up line and ``/metrics``), ``lookup --json``
and every HTTP answer name it, and ``recalibrate`` refuses to sign such info into a new,
sealed build unless told to trust it (:func:`polydom.pipeline.recalibrate.recalibrate`).

Standard library only.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["info_proven", "unproven", "unproven_field"]


def info_proven(info: Mapping[str, Any]) -> bool:
    """Whether a build's seal covers its info (``info["sealed"]`` and ``info["info_sealed"]``
    as the reader set them).  O(1).

    >>> info_proven({"sealed": True, "info_sealed": True}), info_proven({"sealed": True})
    (True, False)
    """
    return info.get("sealed") is True and info.get("info_sealed") is True


def unproven(info: Mapping[str, Any]) -> str | None:
    """One line saying what the seal of the build ``info`` describes does not prove, or
    None when its info is sealed.  O(1).

    >>> unproven({"build_id": 3, "sealed": True, "info_sealed": False})[:40]
    'build 3: its info (cost unit, in-situ qu'
    >>> unproven({"build_id": 3, "sealed": True, "info_sealed": True}) is None
    True
    """
    if info_proven(info):
        return None
    build = info.get("build_id")
    if info.get("sealed") is not True:
        return f"build {build}: no seal covers its rows or its info: unproven"
    return (f"build {build}: its info (cost unit, in-situ quantile, evaluation) is not covered "
            "by its seal (published before info was sealed): unproven")


def unproven_field(info: Mapping[str, Any]) -> dict[str, str]:
    """``{"unproven": line}`` for an answer from a build whose info is not sealed, else
    ``{}`` (answers from sealed builds keep their shape).  O(1)."""
    line = unproven(info)
    return {} if line is None else {"unproven": line}
