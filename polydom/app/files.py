"""Writing the command line's output files: never through a symlink, never half-written.

A file is written to a fresh temporary file in the target's folder and renamed over the
target (:func:`os.replace`): a symlink at the target is replaced as a link (the file it
points to is left alone), a reader never sees half a file, and a crash leaves no partial
file behind.  Standard library only.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

from polydom.errors import InvalidArgumentError

__all__ = ["replace_file"]


def replace_file(path: str | os.PathLike, write: Callable[[BinaryIO], None]) -> Path:
    """Write a file at ``path`` by calling ``write(handle)`` on a temporary file in the same
    folder, then renaming it over ``path``.

    Runtime complexity: that of ``write``, plus O(1) file system calls.

    Raises
    ------
    ValueError
        Naming ``path`` when it is a folder or a special file (a FIFO, a device).
    OSError
        When the folder cannot be written.
    """
    path = Path(path)
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        mode = None
    if mode is not None and not (stat.S_ISREG(mode) or stat.S_ISLNK(mode)):
        raise InvalidArgumentError(f"{path} exists and is not a regular file: not overwriting it")
    handle = tempfile.NamedTemporaryFile(dir=path.parent, prefix=f".{path.name}.",  # noqa: SIM115
                                         suffix=".tmp", delete=False)
    try:
        with handle:
            write(handle)
        os.replace(handle.name, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(handle.name)
        raise
    return path
