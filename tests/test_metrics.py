"""tools/metrics.py: the language's size, current in tools/metrics.json."""

import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tools"))
import metrics as Mx  # noqa: E402


def test_the_committed_metrics_are_current():
    with open(Mx.OUT, encoding="utf-8") as f:
        assert f.read() == Mx.dumps(Mx.metrics()), "run `make metrics`"


def test_it_counts_what_a_reader_learns():
    m = Mx.metrics()
    assert "Hold" not in m["ir_variants"]["Stmt"] and "SHold" in m["ir_variants"]["Stmt"]
    assert {"requeue", "tail", "preempt", "reserve"} <= set(m["keywords"])
    assert {"cachedin", "budget_left", "~exp", "max j in n"} <= set(m["functions"])
    assert {"running.preempted", "waiting.count", "batch.tokens", "admission"} <= set(m["context_variables"])
    assert m["counts"]["ir_variants"] == sum(len(v) for v in m["ir_variants"].values())


def test_a_repeated_line_is_code_over_30_characters_not_a_let_in_three_programs(tmp_path, monkeypatch):
    monkeypatch.setattr(Mx, "ROOT", str(tmp_path))
    body = ("  let B = args.number(\"B\", 2048);   // a constant of its own\n"
            "  advance running each at most (threshold);  // the same step\n"
            "  // a comment that is long enough to count if it were code\n"
            "  short line;\n")
    for i in range(3):
        (tmp_path / f"p{i}.sq").write_text(body + ("  pool kv on gpu { block bs; evict lru; }\n" if i < 2 else ""))
    rows = Mx.repeated_lines([f"p{i}.sq" for i in range(3)])
    assert rows == [{"line": "advance running each at most (threshold);", "programs": 3}]
