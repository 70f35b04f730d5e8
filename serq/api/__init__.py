"""serQ from Python: programs (``program``), their reports (``report``), the
oracle comparisons (``oracle``), the optional packages (``extras``).  The
user-facing names are re-exported, lazily, by ``serq/__init__.py``."""
