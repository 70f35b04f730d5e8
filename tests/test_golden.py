"""Golden IR for every example (tests/golden/ir/, rewritten only by `make golden`)."""

import os

import pytest

from tools.check import examples, golden_ir, golden_ir_path


@pytest.mark.parametrize("example", examples())
def test_golden_ir_is_current(example):
    path = golden_ir_path(example)
    assert os.path.exists(path), f"no golden IR for {example}: run `make golden`"
    with open(path, encoding="utf-8") as f:
        assert f.read() == golden_ir(example), f"{path} is stale: run `make golden` and review the diff"
