"""A sweep's columns are the JSON report's numbers, one to one, under the
paths docs/report.md (A sweep's columns) gives."""

import math

import pytest

import serq
from serq.api.report import row

EXAMPLES = [("examples/multi-turn/routing.sq", 60.0, "gauge"), ("examples/papers/kong_svf.sq", 60.0, "claim"),
            ("examples/multi-turn/vllm.sq", 60.0, "pool")]


def _json_path(column: str, d: dict):
    """The JSON value a column names, by the table of docs/report.md."""
    if column == "seed":
        return d["made"]["seed"]
    head, rest = column.split(".", 1)
    if head in ("made", "run"):
        return d[head][rest]
    if head in ("stage", "pool"):
        name, key = rest.rsplit(".", 1)
        return next(r for r in d[head + "s"] if r["name"] == name)[key]
    if head == "client":
        name, key = rest.rsplit(".", 1)
        return d["client"][name][key]
    if head == "gauge":
        name, key = rest.rsplit(".", 1)
        return d["gauges"][name][key]
    if head == "claim":
        return next(c for c in d["claims"] if c["name"] == rest)["verdict"]
    return d["observes"][head][rest]


def _numbers(d: dict) -> set:
    """The JSON's numbers (and the claims' verdicts), as their columns should
    name them: what a sweep's row must hold."""
    def nums(rec: dict):
        return [k for k, v in rec.items() if k != "name" and isinstance(v, (int, float, type(None)))
                and not isinstance(v, bool) and v is not None]
    out = {"seed"} | {f"made.{k}" for k in nums(d["made"]) if k != "seed"} | {f"run.{k}" for k in nums(d["run"])}
    out |= {f"run.{k}" for k, v in d["run"].items() if isinstance(v, list)}    # names, one text
    out |= {f"{n}.{k}" for n, s in d["observes"].items() for k in nums(s)}
    out |= {f"client.{n}.{k}" for n, s in d["client"].items() for k in nums(s)}
    out |= {f"stage.{s['name']}.{k}" for s in d["stages"] for k in nums(s)}
    out |= {f"pool.{p['name']}.{k}" for p in d["pools"] for k in nums(p)}
    out |= {f"gauge.{n}.{k}" for n, g in d["gauges"].items() for k in nums(g)}
    out |= {f"claim.{c['name']}" for c in d["claims"]}
    return out


@pytest.mark.parametrize("path,horizon,kind", EXAMPLES)
def test_every_column_is_a_json_number_and_every_number_a_column(path, horizon, kind):
    rep = serq.load(path).run(horizon=horizon, warmup=horizon / 10)
    d, r = rep.data(), row(rep)
    nulls = set()
    for column, value in r.items():
        want = _json_path(column, d)
        if want is None:                 # NaN is null in the JSON
            assert math.isnan(value), column
            nulls.add(column)
        elif isinstance(want, list):     # a list of names: spaced, `-` for none
            assert value == (" ".join(want) or "-"), column
        else:
            assert value == ({"inf": math.inf, "-inf": -math.inf}.get(want, want)), column
    assert set(r) == _numbers(d) | nulls
    kinds = {c.split(".")[0] for c in r}
    assert {"seed", "made", "run", "client", "stage", kind} <= kinds
