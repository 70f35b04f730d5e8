"""Writing what serq makes: nothing lost, nothing half written.  Every
command and function that writes a result goes through here.

* **Whole or not at all.** A file is written under a temporary name unique
  to the process (``tempfile.mkstemp`` beside its place: ``.NAME.XXXXXXXX.serq``)
  and renamed onto its place (``os.replace``, atomic on one file system), so
  a reader sees the old file or the new one, never a part, and two commands
  writing one place at once leave one of their files whole.  The renames run
  with signals held (serq/signals.py ``put``): none is cut in two.
* **Nothing it did not make.** A place that holds a file is written over
  only when the file is one the same command made — its :class:`Mark` says
  how that is recognised (``serq draw``'s figures name it in their title, a
  sweep's table has the columns ``seed`` and ``run.…``, …) — or when
  ``force`` is given (``--force``).  An input of the command (the program,
  its instance file, its trace, the table being plotted) is never written
  over, ``--force`` or not.
* **A tree** (``serq run --dump DIR``) is written whole in a directory beside
  its place, with a manifest (:data:`MANIFEST`, ``.serq-files.json``) naming
  its files, then renamed onto the place.  The place may be missing, an
  empty directory, or an earlier dump (every entry of it in its manifest):
  that dump is replaced whole, none of its files left to mix with the new.
  A directory holding anything else is refused; with ``force`` the dump's
  files are moved in (replacing theirs of the same names), the earlier
  dump's files it does not write again are removed, the rest stays, and the
  manifest names the dump's files.
* **Through a link.** A place that is a symbolic link is written where it
  leads, as a shell's ``>`` writes it (a file's temporary name beside the
  target, a tree's beside the directory), the link kept.
* **A collection** (``serq oracle fuzz --out DIR``, a generator's directory):
  files added to a directory one by one, each whole; the directory's
  manifest names every file the command made there, so a later run replaces
  its own files and refuses anyone else's (unless ``force``).

A place that cannot be written, or that is refused, is a ``SerqError``
naming it (E004 cannot write, E005 refused), never a traceback."""

from __future__ import annotations

import contextlib
import json
import os
from typing import Callable, Iterable, Optional, Union

from .diag import Diagnostic, SerqError
from .signals import deferred, imported, put, whole

MANIFEST = ".serq-files.json"
HEAD = 8192                  # the bytes of a file a mark reads at most


class Mark:
    """How a command recognises a file it made: ``command`` names it in
    messages (``serq draw``), ``test(path)`` says whether the file at
    ``path`` is one (it reads any bytes; what it cannot read is not its
    own), ``how`` says it in words for the refusal's help."""

    def __init__(self, command: str, test: Callable[[str], bool], how: str):
        self.command = command
        self.test = test
        self.how = how

    def made(self, path: str) -> bool:
        try:
            return bool(self.test(path))
        except Exception:     # noqa: BLE001 - a mark reads anything; what it cannot read is not its
            return False


def head(path: str, size: int = HEAD) -> bytes:
    with open(path, "rb") as f:
        return f.read(size)


def head_has(*needles: bytes) -> Callable[[str], bool]:
    """A test: one of ``needles`` is in the file's first bytes."""
    return lambda path: any(n in head(path) for n in needles)


def _csv_table(path: str) -> bool:
    first = head(path).split(b"\n", 1)[0].decode("utf-8").rstrip("\r").split(",")
    return "seed" in first and any(c.startswith("run.") for c in first)


def _parquet_table(path: str) -> bool:
    if head(path, 4) != b"PAR1":
        return False
    pq = imported("pyarrow.parquet")
    meta = pq.read_schema(path).metadata or {}
    return meta.get(PARQUET_KEY) == b"serq sweep"


# The marks of serq's own commands.  A figure of `serq draw` names it in its
# title (SVG `<title>…serq draw: …`, TikZ's first line); a plot carries
# `serq plot` (PNG: its Software text chunk; SVG: a comment after the XML
# declaration); a sweep's table is a CSV whose header has `seed` and a
# `run.…` column (every table a sweep writes has both), or a Parquet file
# whose schema metadata says PARQUET_KEY = "serq sweep".
PARQUET_KEY = b"serq.made_by"
DRAW = Mark("serq draw", head_has(b"serq draw: "), "a figure whose title says `serq draw:`")
PLOT = Mark("serq plot", head_has(b"serq plot"), "a PNG or SVG that names `serq plot` in its metadata")
def unmarked(command: str) -> Mark:
    """The mark of a command whose files have no room to say who made them
    (a Mooncake trace, an oracle scenario): any file at the place is refused
    without ``force``."""
    return Mark(command, lambda p: False, "none: its files have no room to say so")


MOONCAKE_TRACE = unmarked("serq mooncake-trace")
# an instance file `serq calibrate` wrote says so on its first line
CALIBRATE = Mark("serq calibrate", head_has(b"calibrated by `serq calibrate`"),
                 "an instance file whose first line says `calibrated by `serq calibrate``")
TABLE = Mark("serq sweep", lambda p: _parquet_table(p) if p.lower().endswith(".parquet") else _csv_table(p),
             "a CSV whose header has `seed` and `run.…` columns, a Parquet file whose metadata says so")


def _cannot(what: str, path: str, e: OSError) -> SerqError:
    return SerqError(Diagnostic("E004", f"cannot write {what}{path}: {e.strerror or e}",
                                help="the directory must exist and be writable"))


def _refuse(message: str, help: str) -> SerqError:
    return SerqError(Diagnostic("E005", message, help=help))


def kind_of(path: str) -> Optional[str]:
    """What is at ``path`` (following links), in words: ``a file``, ``a
    directory``, ``a character device``, ``a pipe``, ``a block device``, ``a
    socket``, ``a link to nothing``; None when nothing is."""
    import stat
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return "a link to nothing" if os.path.lexists(path) else None
    kinds = ((stat.S_ISREG, "a file"), (stat.S_ISDIR, "a directory"), (stat.S_ISCHR, "a character device"),
             (stat.S_ISFIFO, "a pipe"), (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))
    return next((k for test, k in kinds if test(mode)), "not a file")


def _special(path: str) -> Optional[str]:
    """What is at ``path`` when it is not a file (nor a directory):
    ``"stream"`` for a character device or a pipe (``/dev/null``, a FIFO),
    which is written to, not replaced (it holds no file to lose, and
    replacing it would put a file in its place); a block device's or a
    socket's name, which is refused; None for a file, a directory or nothing."""
    kind = kind_of(path)
    if kind in ("a character device", "a pipe"):
        return "stream"
    return kind if kind in ("a block device", "a socket") else None


def _same(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.abspath(a) == os.path.abspath(b)


def read_by(program) -> list:
    """The files a linked program (its IR) reads: its sources (the program,
    its libraries) and the trace it names.  A command that links it writes
    over none of them, --force or not."""
    return list(program.files) + ([program.trace] if program.trace is not None else [])


def _inputs(inputs: Iterable) -> list:
    """The command's inputs, and every source file read in this process."""
    from .diag import Sources
    return [os.fspath(p) for p in inputs if p is not None] + [p for p in Sources.paths() if os.path.exists(p)]


def check_file(path: str, *, what: str, mark: Mark, force: bool = False, inputs: Iterable = ()) -> None:
    """Refuse (E005) to write ``path`` when it is an input of the command, or
    holds a file the command did not make and ``force`` is not given; E004
    when it is a directory.  Called before a command's work starts (a sweep
    refuses before its first run) and again just before the file lands."""
    path = os.fspath(path)
    for src in _inputs(inputs):
        if os.path.exists(path) and _same(path, src):
            raise _refuse(f"{what}{path} is an input of {mark.command}: it is not written over",
                          help="write the output elsewhere")
    if os.path.isdir(path):
        raise SerqError(Diagnostic("E004", f"cannot write {what}{path}: it is a directory"))
    kind = _special(path)
    if kind == "stream":
        return
    if kind is not None:
        raise SerqError(Diagnostic("E004", f"cannot write {what}{path}: it is {kind}, not a file",
                                   help="write to a file, a character device (/dev/null) or a pipe"))
    if os.path.lexists(path) and not force and not mark.made(path):
        raise _refuse(f"{what}{path} exists and is not a file {mark.command} made: it is not written over",
                      help=f"give --force (force=True) to replace it, or write elsewhere "
                           f"({mark.command} recognises its own files: {mark.how})")


@contextlib.contextmanager
def writing(path: str, *, what: str, mark: Mark, force: bool = False, inputs: Iterable = ()):
    """A temporary path beside ``path`` for a writer that needs a path (pyarrow,
    matplotlib); on a clean exit it is renamed onto ``path``, on an error
    removed.  ``check_file`` first, and again before the rename."""
    path = os.fspath(path)
    check_file(path, what=what, mark=mark, force=force, inputs=inputs)
    import tempfile     # here: a command that writes nothing does not pay for it (nor shutil's)
    stream = _special(path) == "stream"      # written to at the end, from a temporary file of its own
    place = path if stream else _through(path, what)
    folder = tempfile.gettempdir() if stream else os.path.dirname(os.path.abspath(place))
    tmp = None
    try:
        # (a signal as it is made: raised once its name is ours to remove,
        # also as the section ends and its handlers are put back: seed 32 #1465)
        with deferred() as made:
            try:
                fd, tmp = tempfile.mkstemp(prefix=_prefix(place), suffix=".serq", dir=folder)
                os.close(fd)
            except OSError as e:
                raise _cannot(what, path, e) from None
        made.release()
        yield tmp
        check_file(path, what=what, mark=mark, force=force, inputs=inputs)
        try:
            if stream:
                import shutil
                with open(tmp, "rb") as src, open(path, "wb") as dest:
                    shutil.copyfileobj(src, dest)
                return
            os.chmod(tmp, _mode())
            put(lambda: os.replace(tmp, place))
        except OSError as e:
            raise _cannot(what, path, e) from None
    finally:
        _discard(tmp, os.unlink, os.path.exists)


NAME_BYTES = 200       # of the place's name in a temporary one (a name is 255 bytes at most)


def _prefix(path: str) -> str:
    """A temporary name's head, ``.NAME.``: the place's name, its first
    NAME_BYTES bytes (with the 8 random characters and ``.serq`` after them, a
    place's name of 241 bytes or more made one past 255 bytes, and a name the
    file system takes was refused, `File name too long`)."""
    name = os.fsencode(os.path.basename(os.path.abspath(path)))[:NAME_BYTES]
    return "." + os.fsdecode(name) + "."


def _through(path: str, what: str) -> str:
    """Where a file written at ``path`` lands: ``path``, or, when it is a
    symbolic link, the file the link leads to (its target, made when it is
    not there and its directory is), the link kept, as a shell's ``>`` writes
    through it; renamed onto the link itself, the file replaced the link."""
    if not os.path.islink(path):
        return path
    try:
        os.stat(path)
    except OSError as e:
        import errno
        if e.errno == errno.ELOOP:
            raise SerqError(Diagnostic("E004", f"cannot write {what}{path}: it is a link in a loop "
                                               f"({e.strerror})")) from None
    target = os.path.realpath(path)
    if not os.path.isdir(os.path.dirname(target)):
        raise SerqError(Diagnostic("E004", f"cannot write {what}{path}: it is a link to {target}, whose "
                                           "directory does not exist",
                                   help="make the directory, or remove the link to write a file in its place"))
    return target


def _discard(tmp: Optional[str], remove, there) -> None:
    """``remove(tmp)`` where ``there(tmp)``, whole (serq/signals.py ``whole``:
    also when a signal's exception is raised as the cleanup starts)."""
    if tmp is not None:
        whole(lambda: there(tmp) and remove(tmp))


def write_file(path: str, data: Union[str, bytes], *, what: str, mark: Mark, force: bool = False,
               inputs: Iterable = ()) -> None:
    """``data`` (text, written as UTF-8, or bytes) at ``path``, all of it or
    (on an error, or refused) none of it."""
    with writing(path, what=what, mark=mark, force=force, inputs=inputs) as tmp:
        try:
            if isinstance(data, bytes):
                with open(tmp, "wb") as f:
                    f.write(data)
            else:
                with open(tmp, "w", encoding="utf-8", newline="") as f:
                    f.write(data)
        except OSError as e:
            raise _cannot(what, path, e) from None


def _mode() -> int:
    """The permissions a new file gets under the umask (mkstemp makes 0600)."""
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


# ---------------------------------------------------------------- manifests

MANIFEST_BYTES = 1 << 24    # a manifest's most (a million files' names)


def read_manifest(directory: str) -> Optional[dict]:
    """The directory's manifest ``{"command", "files"}``, or None (none, or
    not one serq wrote: a manifest is a file of at most MANIFEST_BYTES; one
    linked to /dev/zero was read until memory was gone)."""
    path = os.path.join(directory, MANIFEST)
    if not os.path.isfile(path):
        return None
    try:
        with open(path, "rb") as f:
            data = f.read(MANIFEST_BYTES + 1)
        if len(data) > MANIFEST_BYTES:
            return None
        m = json.loads(data.decode("utf-8"))
    except (OSError, ValueError, RecursionError):
        return None
    if not (isinstance(m, dict) and isinstance(m.get("command"), str) and isinstance(m.get("files"), list)
            and all(isinstance(x, str) for x in m["files"])):
        return None
    return m


def _manifest_text(command: str, files: list) -> str:
    return json.dumps({"command": command, "files": sorted(set(files)),
                       "note": "the files this command made here (serq/files.py); it replaces these and "
                               "no others"}, indent=1) + "\n"


def _entries(directory: str) -> list:
    """Every file under ``directory`` (relative, with /), and each directory
    that holds no file."""
    out = []
    for root, dirs, files in os.walk(directory):
        rel = os.path.relpath(root, directory)
        for f in files:
            out.append(f if rel == "." else f"{rel}/{f}".replace(os.sep, "/"))
        if not files and not dirs and rel != ".":
            out.append(rel.replace(os.sep, "/") + "/")
    return out


def _foreign(directory: str, command: str) -> list:
    """What in ``directory`` the command did not make (its manifest's files,
    and the manifest, are its own)."""
    m = read_manifest(directory)
    mine = set(m["files"]) if m is not None and m["command"] == command else set()
    # (a .serq-files.json that is no manifest serq wrote is a file like any other)
    return [e for e in _entries(directory) if (e != MANIFEST or m is None) and e not in mine]


def check_tree(directory: str, *, what: str, command: str, force: bool = False, inputs: Iterable = ()) -> None:
    """Refuse (E005) a tree's place that holds what the command did not make
    (unless ``force``) or an input of the command; E004 when it is a file."""
    directory = os.fspath(directory)
    if os.path.lexists(directory) and not os.path.isdir(directory):
        raise SerqError(Diagnostic("E004", f"cannot write {what}{directory}: it is {kind_of(directory)}, "
                                           "not a directory"))
    if not os.path.isdir(directory):
        return
    for src in _inputs(inputs):
        a, b = os.path.realpath(src), os.path.realpath(directory)
        if a == b or a.startswith(b + os.sep):
            raise _refuse(f"{what}{directory} holds {src}, an input of {command}: it is not written over",
                          help="write the output elsewhere")
    if force:
        return
    foreign = _foreign(directory, command)
    if foreign:
        raise _refuse(f"{what}{directory} holds files {command} did not make ({_some(foreign)}): "
                      "it is not written into",
                      help=f"give an empty or new directory, or --force (force=True) to write the files "
                           f"into it (theirs of the same names replaced, the rest left)")


def _some(names: list) -> str:
    names = sorted(names)
    return ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")


def write_tree(directory: str, files: list, *, what: str, command: str, force: bool = False,
               inputs: Iterable = ()) -> None:
    """Each ``(relative path, text)`` of ``files`` under ``directory``, whole
    (see the module's doc for an existing directory)."""
    shown = directory = os.fspath(directory)
    check_tree(shown, what=what, command=command, force=force, inputs=inputs)
    # (a link to a directory: the dump goes where it leads, the link kept)
    directory = os.path.realpath(shown) if os.path.islink(shown) else shown
    parent = os.path.dirname(os.path.abspath(directory))
    import shutil
    import tempfile
    tmp = old = None
    try:
        with deferred() as made:      # (a signal as it is made: raised once its name is ours to remove)
            try:
                tmp = tempfile.mkdtemp(prefix=_prefix(directory), suffix=".serq",
                                       dir=parent)
            except OSError as e:
                raise _cannot(what, shown, e) from None
        made.release()
        names = []
        for rel, text in files:
            dest = os.path.join(tmp, rel)
            os.makedirs(os.path.dirname(dest), exist_ok=True)
            with open(dest, "w", encoding="utf-8", newline="") as f:
                f.write(text)
            names.append(rel.replace(os.sep, "/"))
        with open(os.path.join(tmp, MANIFEST), "w", encoding="utf-8") as f:
            f.write(_manifest_text(command, names))
        os.chmod(tmp, 0o777 & ~_umask())
        check_tree(shown, what=what, command=command, force=force, inputs=inputs)
        if not os.path.isdir(directory):
            put(lambda: os.rename(tmp, directory))
            return
        before = read_manifest(directory)
        if not _foreign(directory, command):
            # an empty directory or an earlier dump: replaced whole (moved
            # aside, then removed), or, where it cannot move (the current
            # directory, a mount point), emptied of its own files below
            with deferred() as aside:
                old = tempfile.mkdtemp(prefix=_prefix(directory), suffix=".old",
                                       dir=parent)
            aside.release()
            moved = []

            def swap():       # (both renames, or none: a signal waits for them)
                try:
                    os.rename(directory, os.path.join(old, "d"))
                except OSError:
                    return
                os.rename(tmp, directory)
                moved.append(True)
            put(swap)
            if moved:
                return
        # into a directory with other files (force), or one that cannot move:
        # the files moved in one by one
        # (each checked before any moves: a file where the dump needs a folder,
        # `client`, or a folder where it writes a file, the manifest, failed
        # half way, the files before it moved in)
        for rel in [*names, MANIFEST]:
            if os.path.isdir(os.path.join(directory, rel)):
                raise SerqError(Diagnostic("E004", f"cannot write {what}{shown}: {rel} is a directory there"))
            parts = rel.split("/")[:-1]
            for k in range(1, len(parts) + 1):
                folder = "/".join(parts[:k])
                at = os.path.join(directory, folder)
                if os.path.lexists(at) and not os.path.isdir(at):
                    raise SerqError(Diagnostic("E004", f"cannot write {what}{shown}: {folder} is {kind_of(at)} "
                                                       f"there, where the dump writes {rel}"))

        def move_in():
            for rel in names:
                dest = os.path.join(directory, rel)
                os.makedirs(os.path.dirname(dest), exist_ok=True)
                os.replace(os.path.join(tmp, rel), dest)
            if before is not None and before["command"] == command:
                for rel in set(before["files"]) - set(names):
                    with contextlib.suppress(OSError):
                        os.unlink(os.path.join(directory, rel))
            os.replace(os.path.join(tmp, MANIFEST), os.path.join(directory, MANIFEST))
        put(move_in)
    except OSError as e:
        raise _cannot(what, shown, e) from None
    finally:
        def rmtree(d):
            shutil.rmtree(d, ignore_errors=True)
        try:
            _discard(tmp, rmtree, os.path.isdir)
        finally:
            _discard(old, rmtree, os.path.isdir)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


_ANY = Mark("serq", lambda path: True, "")
# A writer that decided itself, by what the files say, that the place is its
# own (the repository's generators: tools/generated.py, leangen)
CHECKED = Mark("a generator", lambda path: True, "it says so itself")


class Collection:
    """A directory a command adds files to (``oracle fuzz --out DIR``):
    ``add(name, text)`` writes one whole and records it in the manifest; a
    file of that name the command did not make is refused unless ``force``."""

    def __init__(self, directory: str, *, what: str, command: str, force: bool = False):
        self.directory = os.fspath(directory)
        self.what = what
        self.command = command
        self.force = force

    def check(self) -> None:
        d = self.directory
        if os.path.lexists(d) and not os.path.isdir(d):
            raise SerqError(Diagnostic("E004", f"cannot write {self.what}{d}: it is {kind_of(d)}, not a directory"))

    def add(self, name: str, text: str) -> str:
        self.check()
        d = self.directory
        try:
            os.makedirs(d, exist_ok=True)
        except OSError as e:
            raise _cannot(self.what, d, e) from None
        path = os.path.join(d, name)
        m = read_manifest(d)
        mine = set(m["files"]) if m is not None and m["command"] == self.command else set()
        there = os.path.join(d, MANIFEST)
        if m is None and os.path.lexists(there) and not self.force:
            raise _refuse(f"{self.what}{there} exists and is not a manifest serq wrote: it is not written over",
                          help="give --force (force=True) to replace it, or another directory")
        if os.path.lexists(path) and name not in mine and not self.force:
            raise _refuse(f"{self.what}{path} exists and is not a file {self.command} made: it is not "
                          "written over", help="give --force (force=True) to replace it, or another directory")
        write_file(path, text, what=self.what, mark=_ANY, force=True)
        write_file(os.path.join(d, MANIFEST), _manifest_text(self.command, list(mine | {name})),
                   what=self.what, mark=_ANY, force=True)
        return path
