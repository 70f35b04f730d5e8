"""Put this clone on the venv's path ahead of a folder named `serq` (`make install`).

An editable install finds the package through an import hook that Python asks
only after its own search of `sys.path`.  A script run beside a clone whose
folder is named `serq` has that folder on its path first; the folder has no
`__init__.py`, so Python's search makes it a namespace package, and the hook is
never asked: `import serq` gives an empty module (`serq.load` missing).  A
`.pth` file naming the clone's root puts the real package (`serq/__init__.py`)
on `sys.path` itself, where Python's search finds it before it settles for a
namespace package.  Run by `make install`; idempotent."""

import os
import sysconfig

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main() -> None:
    path = os.path.join(sysconfig.get_paths()["purelib"], "serq-clone.pth")
    with open(path, "w", encoding="utf-8") as f:
        f.write(ROOT + "\n")


if __name__ == "__main__":
    main()
