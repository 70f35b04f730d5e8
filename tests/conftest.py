"""Hypothesis profiles.  `make test` (and CI) is reproducible: the default
profile derandomizes every property test, so a fresh clone explores exactly
the examples the last run did.  To look for new counterexamples, run

    HYPOTHESIS_PROFILE=explore .venv/bin/python -m pytest tests -k "propert or robust or round"

which draws fresh examples (and more of them); a failure it finds is then
pinned as a regression test (tests/sim/test_regressions.py)."""

import os

from hypothesis import settings

settings.register_profile("ci", derandomize=True, database=None, print_blob=True)
settings.register_profile("explore", max_examples=2000, derandomize=False, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
