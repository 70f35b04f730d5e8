import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(__file__))


@pytest.fixture(autouse=True)
def _at_root(monkeypatch):
    """Examples are named relative to the repository, as in the golden
    figures' titles."""
    monkeypatch.chdir(ROOT)
