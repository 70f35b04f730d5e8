"""The optional packages (pip extras) and the error that names the extra to install."""

from __future__ import annotations

from ..diag import Diagnostic, SerqError
from ..signals import imported

# module -> the extra that installs it (pyproject.toml's optional-dependencies)
EXTRAS = {"pandas": "frames", "pyarrow": "parquet", "dask": "dask", "distributed": "dask",
          "matplotlib": "plot", "tqdm": "progress", "yaml": "calib"}


def extra(module: str, name: str = ""):
    """``import module`` (with the signals held: serq/signals.py,
    :func:`imported`), or a SerqError saying which extra installs it."""
    try:
        return imported(module)
    except ImportError:
        top = module.split(".")[0]
        name = name or EXTRAS.get(top, top)
        raise SerqError(Diagnostic("E974", f"this needs {top}, which is not installed",
                                   help=f"pip install 'serq[{name}]'")) from None
