"""The example programs, linked by the front end, run on the simulator; the
queueing examples land on their closed forms."""

import glob
import json
import os

import pytest

link = pytest.importorskip("serq.link")

from serq.sim import RunError, simulate  # noqa: E402

from queueing import mva, pk  # noqa: E402

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
# examples/papers/ run on their papers' clocks (10 µs, µs, steps), on their own
# horizons, in tests/claims/test_papers.py
EXAMPLES = sorted(p for p in glob.glob(os.path.join(ROOT, "examples", "*", "*.sq"))
                  if os.path.basename(os.path.dirname(p)) not in ("lib", "papers"))


@pytest.fixture(scope="module")
def report_schema():
    """A validator of serq/report.schema.json (the jsonschema package, a test extra)."""
    jsonschema = pytest.importorskip("jsonschema")
    with open(os.path.join(ROOT, "serq", "report.schema.json"), encoding="utf-8") as f:
        schema = json.load(f)
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: os.path.relpath(p, ROOT))
def test_example_runs(path, report_schema):
    """Every example runs, and its report (`serq run --json`) is what the
    report's JSON Schema says it is."""
    prog = link.compile_file(path, horizon=60.0, warmup=6.0, seed=1)
    try:
        d = simulate(prog).data()
    except RunError as e:  # pragma: no cover - an example must run
        pytest.fail(e.render())
    report_schema.validate(json.loads(json.dumps(d, sort_keys=True, allow_nan=False)))
    assert d["run"]["events"] > 0


@pytest.mark.parametrize("name,formula", [
    ("single-turn/mg1.sq", pk(0.8, 1.0, 1.0)),
    ("single-turn/ps.sq", 1.0 / (1 - 0.8)),
    ("multi-turn/closed.sq", mva(5, 4.0, 1.0)[0]),
])
def test_example_closed_form(name, formula):
    prog = link.compile_file(os.path.join(ROOT, "examples", name), horizon=100_000.0, warmup=5_000.0, seed=2)
    o = simulate(prog).data()["observes"]["sojourn"]
    assert abs(o["mean"] - formula) <= o["ci"], (o, formula)
