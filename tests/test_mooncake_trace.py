"""`serq mooncake-trace` (serq/mooncake.py): a trace in Mooncake's format from
a seed — read back as serq reads Mooncake's own, the same bytes from the same
seed, its draws where the model puts them, its prompts sharing blocks only
as conversations and the system prompt do."""

import json
import math
import os

from click.testing import CliRunner

from serq import mooncake as MT
from serq.cli import main
from serq.ir.trace import MOONCAKE_BLOCK, iter_mooncake, read_mooncake

EXAMPLE = os.path.join("examples", "replay", "data", "mooncake_generated.jsonl")


def _blocks(n: int) -> int:
    return -(-n // MOONCAKE_BLOCK)


def test_it_is_read_as_a_mooncake_trace_is(tmp_path):
    rows = MT.generate(requests=500, seed=3)
    path = tmp_path / "t.jsonl"
    path.write_text(MT.text(rows), encoding="utf-8")
    back = read_mooncake(str(path))
    assert [(r.timestamp, r.input_length, r.output_length, list(r.hash_ids)) for r in back] == \
        [(r["timestamp"], r["input_length"], r["output_length"], r["hash_ids"]) for r in rows]
    # the keys in Mooncake's order, written as its files write them
    assert MT.text(rows[:1]) == json.dumps(rows[0]) + "\n"
    assert list(rows[0]) == ["timestamp", "input_length", "output_length", "hash_ids"]
    # ids numbered from 0 in the order blocks first appear
    seen = -1
    for r in rows:
        for h in r["hash_ids"]:
            assert h <= seen + 1
            seen = max(seen, h)


def test_the_same_seed_gives_the_same_bytes_and_another_seed_others():
    assert MT.text(MT.generate(requests=300, seed=5)) == MT.text(MT.generate(requests=300, seed=5))
    assert MT.text(MT.generate(requests=300, seed=5)) != MT.text(MT.generate(requests=300, seed=6))
    # a longer trace starts with the shorter one
    short, long = MT.generate(requests=50, seed=5), MT.generate(requests=80, seed=5)
    assert long[:50] == short


def test_without_follow_every_prompt_is_the_system_prompt_and_a_message():
    n, mean, system = 4000, 1500.0, 1024
    rows = MT.generate(requests=n, seed=2, follow=0.0, system=system, input=mean, context=10 ** 6)
    seen = set()
    for r in rows:
        ids = r["hash_ids"]
        assert ids[:2] == [0, 1]                               # the system prompt's two whole blocks
        assert not seen & set(ids[2:])                         # the rest the request's own
        seen.update(ids[2:])
    # a message is 1 + ⌊Exp(mean)⌋: mean + 1/2 − O(1/mean), sd mean
    m = sum(r["input_length"] - system for r in rows) / n
    assert abs(m - (mean + 0.5)) < 4 * mean / math.sqrt(n)
    # an answer 1 + ⌊Exp(299)⌋, at most 4 096 (a cut of e^-13.7: none here)
    out = [r["output_length"] for r in rows]
    assert abs(sum(out) / n - 300.0) < 4 * 299 / math.sqrt(n) and 1 <= min(out) and max(out) <= MT.MAX_OUTPUT


def test_arrivals_are_poisson_at_the_rate():
    n, rate = 5000, 7.0
    ts = [r["timestamp"] for r in MT.generate(requests=n, seed=4, rate=rate)]
    gaps = [b - a for a, b in zip(ts, ts[1:])]
    assert ts[0] == 0 and min(gaps) >= 0 and all(isinstance(t, int) for t in ts)
    mean = 1000.0 / rate                                       # ms; a gap's sd is its mean
    assert abs(ts[-1] / (n - 1) - mean) < 4 * mean / math.sqrt(n - 1)
    # exponential gaps: P(gap > mean) = 1/e (the whole-ms cut moves it by < 1 ms in 143)
    share = sum(g > mean for g in gaps) / len(gaps)
    assert abs(share - math.exp(-1)) < 4 * math.sqrt(math.exp(-1) * (1 - math.exp(-1)) / len(gaps))


def test_with_follow_one_conversation_grows_until_the_context():
    rows = MT.generate(requests=400, seed=1, follow=1.0, context=20000)
    opened = 0
    for i, (prev, r) in enumerate(zip(rows, rows[1:])):
        top = max(x for p in rows[:i + 1] for x in p["hash_ids"])
        keep = prev["input_length"] // MOONCAKE_BLOCK
        grown = prev["input_length"] + prev["output_length"]
        if r["input_length"] > grown:                          # the last prompt, its answer and a message
            assert r["hash_ids"][:keep] == prev["hash_ids"][:keep] and min(r["hash_ids"][keep:]) > top
        else:                                                   # it would pass the context: a new one
            assert r["hash_ids"][:2] == [0, 1] and min(r["hash_ids"][2:]) > top
            opened += 1
        assert len(r["hash_ids"]) == _blocks(r["input_length"]) and r["input_length"] <= 20000
    # a conversation grows by a prompt's answer and a message, about 2 300
    # tokens a turn: from 1 024 to 20 000 in some 8 turns, so some 45 of them
    assert 25 <= opened <= 80


def test_a_continuation_shares_the_whole_blocks_of_an_earlier_prompt():
    rows = MT.generate(requests=2000, seed=9, follow=0.5)
    follows = 0
    for i, r in enumerate(rows):
        ids = r["hash_ids"]
        earlier = [p for p in rows[max(0, i - 200):i]
                   if p["input_length"] // MOONCAKE_BLOCK > 2
                   and ids[:p["input_length"] // MOONCAKE_BLOCK] == p["hash_ids"][:p["input_length"] // MOONCAKE_BLOCK]]
        if earlier:
            p = earlier[-1]
            assert r["input_length"] >= p["input_length"] + p["output_length"] + 1
            follows += 1
        else:
            assert ids[:2] == [0, 1]
    # continuations of a prompt of more than the system's blocks and one more:
    # most of the half that follow
    assert 0.25 * len(rows) < follows < 0.5 * len(rows)


def test_the_command_writes_what_generate_makes(tmp_path):
    runner = CliRunner()
    r = runner.invoke(main, ["mooncake-trace", "--requests", "40", "--seed", "8", "--rate", "2"])
    assert r.exit_code == 0 and r.output == MT.text(MT.generate(requests=40, seed=8, rate=2.0))
    out = tmp_path / "t.jsonl"
    assert runner.invoke(main, ["mooncake-trace", "--requests", "5", "--out", str(out)]).exit_code == 0
    assert out.read_text(encoding="utf-8") == MT.text(MT.generate(requests=5))
    # nothing written over unless told
    r = runner.invoke(main, ["mooncake-trace", "--requests", "6", "--out", str(out)])
    assert r.exit_code == 1 and out.read_text(encoding="utf-8") == MT.text(MT.generate(requests=5))
    assert r.stderr == (f"error[E005]: --out {out} exists and is not a file serq mooncake-trace made: it is not "
                        "written over\n  = help: give --force (force=True) to replace it, or write elsewhere (serq "
                        "mooncake-trace recognises its own files: none: its files have no room to say so)\n")
    r = runner.invoke(main, ["mooncake-trace", "--requests", "6", "--out", str(out), "--force"])
    assert r.exit_code == 0 and out.read_text(encoding="utf-8") == MT.text(MT.generate(requests=6))


def test_a_bad_option_is_a_usage_error():
    runner = CliRunner()
    for args, what in ((["--rate", "nan"], "'--rate': nan is not a finite number"),
                       (["--rate", "0"], "'--rate'"), (["--follow", "1.5"], "'--follow'"),
                       (["--requests", "0"], "'--requests'"), (["--output", "0.5"], "'--output'"),
                       (["--context", "1000"], "'--context': a prompt of at most 1000 tokens leaves no room")):
        r = runner.invoke(main, ["mooncake-trace"] + args)
        assert r.exit_code == 2 and what in r.output and r.exception is None or \
            isinstance(r.exception, SystemExit), (args, r.output)


def test_the_example_trace_is_what_the_command_makes():
    # examples/replay/mooncake.sq replays it on a clone without Mooncake's own
    # (tools/check.py holds it to the same, `make golden` rewrites it)
    with open(EXAMPLE, encoding="utf-8") as f:
        assert f.read() == MT.text(MT.generate(requests=600))


def test_arrivals_too_sparse_for_a_timestamp_are_refused(tmp_path):
    """`--rate 1e-320` was an internal error (exit 3: a gap of inf ms made an
    int); `--rate 1e-300` wrote timestamps of 300 digits that serq's own
    reader refuses (a row's timestamp is below 2^53).  Both are refused at
    --rate, nothing written; a sparse rate whose timestamps fit is kept."""
    out = tmp_path / "t.jsonl"
    for rate, at in (("1e-320", "inf"), ("1e-300", "1.44297e+303")):
        r = CliRunner().invoke(main, ["mooncake-trace", "--requests", "3", "--rate", rate, "--out", str(out)])
        assert (r.exit_code, r.output.splitlines()[-1]) == (2, (
            f"Error: Invalid value for '--rate': request 2 would arrive at {at} ms, past 2^53 ms, the latest a "
            "Mooncake row's timestamp can say: give a larger rate or fewer requests"))
    assert not out.exists()
    # a rate whose timestamps pass 10^15 ms still makes a trace serq reads back
    r = CliRunner().invoke(main, ["mooncake-trace", "--requests", "3", "--rate", "1e-12", "--out", str(out)])
    read = [row.timestamp for _, row in iter_mooncake(str(out))]
    assert (r.exit_code, read) == (0, [row["timestamp"] for row in MT.generate(requests=3, rate=1e-12)])
    assert 10 ** 15 < read[-1] < 2 ** 53


def test_a_seed_past_2_64_is_refused():
    """The seed range is serq's one, 0 to 2^64 - 1; 2^64 made a trace of its own."""
    r = CliRunner().invoke(main, ["mooncake-trace", "--requests", "1", "--seed", str(2 ** 64)])
    assert (r.exit_code, r.output.splitlines()[-1]) == (2, (
        "Error: Invalid value for '--seed': a seed is a whole number from 0 to 2^64 − 1, not 18446744073709551616"))
    assert CliRunner().invoke(main, ["mooncake-trace", "--requests", "1", "--seed", str(2 ** 64 - 1)]).exit_code == 0
