"""Writing what serq makes, so that nothing is ever half written: a file is
written beside its place and renamed onto it, a tree of files (``--dump``)
is written whole in a directory beside its place before any of it lands.
A place that cannot be written is a SerqError naming it, not a traceback."""

from __future__ import annotations

import os
import shutil
import tempfile

from .diag import Diagnostic, SerqError


def _error(what: str, path: str, e: OSError) -> SerqError:
    return SerqError(Diagnostic("E004", f"cannot write {what}{path}: {e.strerror or e}",
                                help="the directory must exist and be writable"))


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _as_made(path: str, dir: bool = False) -> None:
    """The mode ``open`` would have given: a temporary file is made 0600 (a
    directory 0700), which would stay the result's after the rename."""
    os.chmod(path, (0o777 if dir else 0o666) & ~_umask())


def write_file(path: str, text, what: str = "") -> None:
    """``text`` (or bytes) at ``path``, all of it or (on an error) none of it."""
    folder = os.path.dirname(os.path.abspath(path))
    try:
        fd, tmp = tempfile.mkstemp(prefix=".serq-", suffix=".tmp", dir=folder)
    except OSError as e:
        raise _error(what, path, e) from None
    try:
        with (os.fdopen(fd, "wb") if isinstance(text, bytes) else
              os.fdopen(fd, "w", encoding="utf-8", newline="")) as f:
            f.write(text)
        _as_made(tmp)
        os.replace(tmp, path)
    except OSError as e:
        raise _error(what, path, e) from None
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def write_tree(directory: str, files: list, what: str = "") -> None:
    """Each ``(relative path, text)`` of ``files`` under ``directory``: the
    files are written in a directory beside it first, then moved in (the
    whole directory at once when it is new)."""
    parent = os.path.dirname(os.path.abspath(directory))
    if os.path.exists(directory) and not os.path.isdir(directory):
        raise SerqError(Diagnostic("E004", f"cannot write {what}{directory}: it is a file, not a directory"))
    try:
        tmp = tempfile.mkdtemp(prefix=".serq-", dir=parent)
    except OSError as e:
        raise _error(what, directory, e) from None
    try:
        for rel, text in files:
            dest = os.path.join(tmp, rel)
            os.makedirs(os.path.dirname(dest), exist_ok=True)
            with open(dest, "w", encoding="utf-8", newline="") as f:
                f.write(text)
        if not os.path.exists(directory):
            _as_made(tmp, dir=True)
            os.rename(tmp, directory)
            return
        for rel, _ in files:
            dest = os.path.join(directory, rel)
            os.makedirs(os.path.dirname(dest), exist_ok=True)
            os.replace(os.path.join(tmp, rel), dest)
    except OSError as e:
        raise _error(what, directory, e) from None
    finally:
        if os.path.isdir(tmp):
            shutil.rmtree(tmp, ignore_errors=True)
