"""serQ from Python: programs (``program``), their reports (``report``), an
oracle harness's program linked (``harness``), the optional packages
(``extras``).  The user-facing names are re-exported, lazily, by
``serq/__init__.py``; sweeps (``serq.sweeps``), plots (``serq.plot``) and the
oracle's comparisons (``serq.oracle``) are above this package and use it."""
