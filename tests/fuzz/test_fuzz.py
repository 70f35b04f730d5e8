"""The fuzzers, bounded for CI (seeded by the Hypothesis profile, about three
minutes in all): every source, numeric and IR mutant Hypothesis draws, every
surface's (tests/fuzz/surfaces.py: the IR retyped, traces, oracle inputs,
tables, the Python API, the command line, the parser held to lark), and
arbitrary text and token soup, ends in a clean run or a located SerqError
and breaks no surface's property (``check.outcome``).  A failure prints
the mutant's record; ``python -m tests.fuzz replay`` reruns one written to a
file, and ``make fuzz N=…`` runs many more."""

from __future__ import annotations

import json
import os

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from . import check, mutate

# mutants per kind in CI (each a link, and a short run when it links; a
# surface's file read, a call, a command in a sandbox); signals: a few cases
# below (and tests/sweeps/test_signals.py), `make fuzz`'s beyond
EXAMPLES = {"source": 3000, "numeric": 600, "ir": 1500, "retype": 150, "trace": 60, "oracle": 100, "table": 40,
            "api": 100, "cli": 40, "parser": 300}


def _assert_no_finding(m: mutate.Mutant) -> None:
    o = check.outcome(m, hard_seconds=60.0)
    if o.finding:
        record = dict(m.record(), status=o.status, where=o.where)
        pytest.fail(f"{o.status} ({o.where}) for {m.kind} mutant of {m.example}: {m.what}\n"
                    f"{o.trace or o.detail}\n{json.dumps(record)[:4000]}")


@pytest.mark.parametrize("kind", list(EXAMPLES))
def test_mutants_end_in_a_clean_run_or_a_located_error(kind):
    @settings(max_examples=EXAMPLES[kind], deadline=None, suppress_health_check=list(HealthCheck))
    @given(st.data())
    def run(data):
        _assert_no_finding(mutate.make(kind, mutate.DataChooser(data)))
    run()


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.text(max_size=300))
def test_arbitrary_text_is_a_located_error(text):
    _assert_no_finding(mutate.Mutant("source", "t.sq", "arbitrary text", text=text))


SOUP = list("{}();,.:=+-*/<>!?~[]\"") + ["fn main() {", "hold", "run", "pool", "stage", "let", "turn;",
                                          "workload", "server", "engine", "inf", "x", "1"]


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(st.sampled_from(SOUP), max_size=60))
def test_token_soup_is_a_located_error(parts):
    _assert_no_finding(mutate.Mutant("source", "t.sq", "token soup", text=" ".join(parts)))


def test_every_number_of_every_example_is_a_numeric_mutant():
    """``make fuzz`` starts each numeric run with every single replacement,
    in order: every number of every example, by every value."""
    singles = mutate.numeric_singles()
    from . import corpus
    assert len(singles) == sum(len(corpus.numbers(p)) for p in corpus.examples()) * len(mutate.VALUES)
    first = mutate.numeric_mutant(mutate.seeded("numeric", 1, 0), index=0)
    path, k, v = singles[0]
    assert (first.example, first.what.split(" -> ")[1]) == (path, mutate.VALUES[v])


def test_the_property_tells_a_located_error_from_an_unlocated_one():
    from serq.diag import Diagnostic, Span
    assert check.located(Diagnostic("E1", "x", Span.point("a.sq", 1, 2)))
    assert check.located(Diagnostic("E1", "x", field="$.pools[0].cap"))
    assert check.located(Diagnostic("E903", "x.json: malformed IR at $.blocks[0].stmts[1]: missing field"))
    assert not check.located(Diagnostic("E1", "something is wrong somewhere"))


def test_a_crash_is_a_finding_with_its_class(monkeypatch):
    m = mutate.Mutant("ir", "examples/single-turn/mg1.sq", "files that are no list",
                      data={"version": 1, "files": 7})
    o = check.outcome(m)
    assert (o.status, o.finding) == ("error", False)
    import serq.link

    def bug(*a, **kw):
        return 1 / 0
    monkeypatch.setattr(serq.link, "compile_source", bug)
    o = check.outcome(mutate.Mutant("source", "x.sq", "any", text="fn main() {}"))
    assert o.status == "crash" and o.finding and o.where.startswith("ZeroDivisionError at ")
    assert "ZeroDivisionError: division by zero" in o.trace


def test_a_retyped_ir_is_past_the_validator_unless_it_is_the_ir_read_as_written(monkeypatch):
    """The retype surface's property (item 4(b) of issue 24's second pass):
    a mutant that removes a number's input name is the IR with that default,
    the one-field form written out, and runs; one whose retyped value the
    reader turned back into the original's number is past the validator —
    though the program it read equals the original's (the property asked
    that once, and the model's equality cannot tell a coerced value)."""
    import copy
    from serq import ir
    from . import corpus, jsonmut
    path = "examples/oracle/vllm_request_priority.sq"
    data = corpus.ir_data(path)
    named = [n for n in jsonmut.nodes(data) if n[0].endswith(".input")]
    assert named
    gone = copy.deepcopy(data)
    where = named[0][0]
    parent = [n for n in jsonmut.nodes(gone) if n[0] == where][0][1]
    del parent["input"]
    assert check.outcome(mutate.Mutant("retype", path, f"remove {where}", data=gone, horizon=10.0)).status == "ok"

    retyped = copy.deepcopy(data)
    where, parent, key = [n for n in jsonmut.nodes(retyped) if jsonmut.is_number(n[1][n[2]])
                          and isinstance(n[1][n[2]], float) and ".loc" not in n[0]][0]
    value, parent[key] = parent[key], "coerced"
    real = ir.loads
    monkeypatch.setattr(ir, "loads", lambda text, source: real(text.replace('"coerced"', repr(value)), source))
    o = check.outcome(mutate.Mutant("retype", path, f"{where}: {value} -> \"coerced\"", data=retyped, horizon=10.0))
    assert o.status == "past" and o.detail.startswith("the validator let through a mutant that is not the canonical IR")
    assert ir.loads(json.dumps(retyped), "x") == real(json.dumps(data), "o")     # what the old property asked


SIGNAL_CASES = [          # (how, fmt, signal, to, at, second, start, nohup): tests/fuzz/interrupts.py
    ("pool", "csv", "SIGTERM", "group", 0.6, None, "fork", False),
    ("one", "parquet", "SIGINT", "process", 0.5, ["SIGINT", 0.05], "fork", False),
    ("run", "csv", "SIGHUP", "group", 0.5, None, "fork", True),
    ("pool", "csv", "SIGINT", "group", 0.4, None, "exec", False),
]


def test_signal_cases_end_cleanly():
    """A few of the signal fuzzer's cases, each checked whole (its exit and
    last line, its output against the undisturbed run's or the earlier one,
    a signal lost, no process left, nothing left beside).  In a process of
    their own: the harness adopts every orphan and kills what outlives a
    case, which pytest's own children must not meet."""
    import subprocess
    import sys
    code = ("import json, sys\n"
            "from tests.fuzz import check, mutate\n"
            "out = []\n"
            "for args in json.loads(sys.argv[1]):\n"
            "    o = check.outcome(mutate.Mutant('signals', args[0], 'a CI case', args=args))\n"
            "    out.append([o.status, o.detail[-2000:]])\n"
            "print(json.dumps(out))\n")
    r = subprocess.run([sys.executable, "-c", code, json.dumps(SIGNAL_CASES)], capture_output=True, text=True,
                       timeout=600, cwd=os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)
    assert all(status in ("ok", "error") for status, _ in got), got      # done or stopped, and nothing worse
    assert got[2][0] == "ok", got                                          # (nohup: its SIGHUP is nothing)


def test_a_ctrl_c_in_the_interpreters_site_module_is_an_early_end(tmp_path):
    """The interpreter's own fatal error on a SIGINT while its site module
    runs a ``.pth`` line (seed 28 #2345: the line of serq's editable
    install) is an early end, made here for real in a bare venv; the same
    words beside a fatal signal, a second fatal error or a frame of serq's
    are a crash."""
    import signal
    import subprocess
    import sys
    import venv
    from . import interrupts as I
    venv.create(tmp_path / "v", with_pip=False)
    site = next((tmp_path / "v" / "lib").glob("python3*/site-packages"))
    (site / "ctrl_c.pth").write_text("import os, signal; os.kill(os.getpid(), signal.SIGINT)\n")
    # (SIGINT at its default in the child: a shell's `cmd &` starts pytest ignoring it, and an
    # interpreter started so does not raise on it)
    r = subprocess.run([str(tmp_path / "v" / "bin" / "python"), "-c", "print(1)"], capture_output=True, text=True,
                       timeout=60, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    err, sent = r.stderr, [signal.SIGINT]
    assert r.returncode == 1 and r.stdout == "" and "Fatal Python error: init_import_site" in err, r
    assert I._early(err, r.returncode, sent) and I._fatal("", err, True) == ""
    assert not I._early(err, r.returncode, [signal.SIGTERM]) and I._fatal("", err, False) == err
    assert not I._early(err, -signal.SIGSEGV, sent)
    assert I._fatal("Fatal Python error: Segmentation fault", err, True) == "Fatal Python error: Segmentation fault"
    twice = err + "Fatal Python error: Segmentation fault\n"
    assert I._fatal("", twice, True) == twice
    serqs = err.replace('  File "<string>"', f'  File "{os.path.join(I.C.ROOT, "serq", "cli.py")}"')
    assert not I._early(serqs, r.returncode, sent)
