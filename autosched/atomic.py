"""Writes that land whole or not at all: the output is written beside its destination under a
temporary name and renamed into place at the end, so a run cut short (an error, Ctrl-C, SIGTERM
turned into SystemExit) leaves the destination as it was."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from pathlib import Path


@contextlib.contextmanager
def replacing(dest: str | Path, *, folder: bool = False):
    """Yield a temporary path beside `dest` (a file, or with folder=True an empty folder) to write
    the whole output to; when the block ends normally it replaces `dest` (a folder of the same name
    is moved aside first, then removed), and when it raises the temporary is removed and `dest`
    is untouched.  Beside, not in /tmp: a rename within one file system is atomic."""
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=dest.parent, prefix=f".{dest.name}.partial-"))
    out = tmp if folder else tmp / dest.name
    try:
        yield out
        if dest.is_dir() and not dest.is_symlink():
            old = Path(tempfile.mkdtemp(dir=dest.parent, prefix=f".{dest.name}.old-"))
            os.replace(dest, old / dest.name)
            os.replace(out, dest)
            shutil.rmtree(old)
        elif folder and dest.exists():
            dest.unlink()
            os.replace(out, dest)
        else:
            os.replace(out, dest)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
