"""Writing the command line's output files: never through a symlink, never half-written.

A file is written to a fresh temporary file in the target's folder and renamed over the
target (:func:`os.replace`): a symlink at the target is replaced as a link (the file it
points to is left alone), a reader never sees half a file, and a crash leaves no partial
file behind.  The file gets the mode a plain ``open(path, "w")`` would give a new file
(``0o666`` less the process's umask).  Standard library only.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
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
    temporary, handle = _fresh_file(path)
    try:
        with handle:
            write(handle)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    return path


def _fresh_file(path: Path) -> tuple[Path, BinaryIO]:
    """A new file beside ``path`` (a random hidden name, created exclusively, never through
    a link) opened for writing, with mode ``0o666`` less the umask, as ``open`` gives."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    while True:
        temporary = path.parent / f".{path.name}.{secrets.token_hex(6)}.tmp"
        try:
            return temporary, os.fdopen(os.open(temporary, flags, 0o666), "wb")
        except FileExistsError:
            continue
