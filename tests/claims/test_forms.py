"""Each claim form holds, fails (or is witnessed, not witnessed) and goes out
of scope on a small program whose path is computed by hand.

The engine of ENGINE serves 4 tokens per iteration of length 1, decodes
first; each session prefills n = 6 tokens and decodes 2.  Two sessions at
time 0 (batch(2)), s0 then s1:

  it  time  batch (tokens)             tokens  demand  decoders  prefilled  served
  1   0     s0 prefill 4               4       12      0         4          0
  2   1     s0 prefill 2, s1 prefill 2 4       8       0         4          4
  3   2     s0 decode 1, s1 prefill 3  4       5       1         3          8
  4   3     s0 decode 1, s1 prefill 1  2       2       1         1          12
  5   4     s1 decode 1                1       1       1         0          14
  6   5     s1 decode 1                1       1       1         0          15

s0 ends at 4 and s1 at 6 (observe done = now): total 10, count 2, largest 6,
smallest 4, prefix_total 4 + (4 + 6) = 14.
"""

from serq.sim import simulate

from workloads import claims, link, sessions, without_claims

ENGINE = """
  device gpu { }
  engine llm on gpu { tokens cap 4; schedule { advance running decode first; } execute (1); }
  server { run llm prefill (cost(llm, n)); run llm decode (cost(llm, 2)); observe done = now; }
"""


def two(claims_src: str, **kw):
    return link(ENGINE + "workload { arrive batch(2); init { set n = 6; set tag = serial; } }\n"
                + claims_src, **kw)


def test_every_iteration_fails_at_the_first_failing_iteration():
    c = claims(two("claim full: every iteration of llm (tokens == 4);"))["full"]
    assert c == {"name": "full", "form": "every iteration", "stage": "llm", "verdict": "fails",
                 "time": 3.0, "iteration": 4, "iterations": 4, "session": None,
                 "read": {"tokens": 2.0}}


def test_every_iteration_holds_over_every_iteration():
    c = claims(two("""
      claim conserving: every iteration of llm (demand < 4 || tokens == 4);
      claim counts: every iteration of llm (served + tokens <= 16 && arrived == 2 && residents <= 2
                                            && decoders <= 1 && kv_decode == 0 && busy(llm) >= 1
                                            && queue(llm) == residents);
    """))
    for name in ("conserving", "counts"):
        assert c[name]["verdict"] == "holds"
        assert c[name]["iterations"] == 6
        assert c[name]["iteration"] is None and c[name]["read"] is None


def test_what_a_failing_iteration_read():
    """The values of every variable the claim reads, as the source names them."""
    c = claims(two("claim c: every iteration of llm (served < 8 || demand * 2 < prefilled + 8 + decoders);"))["c"]
    # iteration 3: served 8, demand 5, prefilled 3, decoders 1: 10 < 12;
    # iteration 4: served 12, demand 2, prefilled 1, decoders 1: 4 < 10; 5 and 6: 2 < 9
    assert c["verdict"] == "holds"
    # with 6 for 8, iteration 3 reads 10 < 10: it fails there
    c = claims(two("claim c: every iteration of llm (served < 8 || demand * 2 < prefilled + 6 + decoders);"))["c"]
    assert (c["verdict"], c["iteration"], c["time"]) == ("fails", 3, 2.0)
    assert c["read"] == {"served": 8.0, "demand": 5.0, "prefilled": 3.0, "decoders": 1.0}


def test_some_iteration_witnessed_and_not():
    c = claims(two("""
      claim mixed: some iteration of llm (decoders >= 1 && prefilled == 3);
      claim both_decode: some iteration of llm (decoders == 2);
    """))
    assert c["mixed"]["verdict"] == "witnessed"
    assert (c["mixed"]["iteration"], c["mixed"]["time"]) == (3, 2.0)
    assert c["mixed"]["read"] == {"decoders": 1.0, "prefilled": 3.0}
    assert c["both_decode"]["verdict"] == "not_witnessed"
    assert c["both_decode"]["iterations"] == 6 and c["both_decode"]["read"] is None


def test_at_end_reads_the_aggregates_of_every_observation():
    c = claims(two("""
      claim ends: at end (total(done) == 10 && count(done) == 2 && largest(done) == 6
                          && smallest(done) == 4 && prefix_total(done) == 14 && now == 100);
      claim short: at end (total(done) < 10);
    """))
    assert c["ends"]["verdict"] == "holds" and c["ends"]["time"] == 100.0
    assert c["ends"]["read"] == {"total(done)": 10.0, "count(done)": 2.0, "largest(done)": 6.0,
                                 "smallest(done)": 4.0, "prefix_total(done)": 14.0, "now": 100.0}
    assert c["short"]["verdict"] == "fails" and c["short"]["read"] == {"total(done)": 10.0}
    assert c["short"]["iteration"] is None and c["short"]["iterations"] is None


def test_at_end_counts_the_warm_up():
    """The warm-up does not apply: both observations count, though s0's is
    before the warm-up and the report's observe section has one."""
    p = two("claim ends: at end (count(done) == 2 && total(done) == 10);", warmup=5)
    d = simulate(p).data()
    assert d["observes"]["done"]["count"] == 1
    assert d["claims"][0]["verdict"] == "holds"


def test_aggregates_of_an_observation_never_made_are_0():
    """An observation on a branch never taken: every aggregate of it is 0."""
    p = link(ENGINE.replace("observe done = now;", "observe done = now; branch (n > 6) { observe never = 1; }")
             + "workload { arrive batch(2); init { set n = 6; } }\n"
             + "claim zero: at end (total(never) == 0 && count(never) == 0 && largest(never) == 0 "
               "&& smallest(never) == 0 && prefix_total(never) == 0);")
    assert claims(p)["zero"]["verdict"] == "holds"


def test_prefix_total_sorts_ascending():
    """Σ_k (v_1 + … + v_k) over the values sorted ascending: [3, 1, 2] gives
    1 + 3 + 6 = 10 (the largest first would give 3 + 5 + 6 = 14)."""
    p = link("""
      stage s : delay;
      workload { arrive batch(3); init { set w = serial == 0 ? 3 : serial; } }
      server { run s (cost(s, 1)); observe v = w; }
      claim pt: at end (prefix_total(v) == 10 && largest(v) == 3 && smallest(v) == 1);
    """)
    c = claims(p)["pt"]
    assert c["verdict"] == "holds" and c["read"]["prefix_total(v)"] == 10.0


def test_given_puts_the_claim_out_of_scope_with_its_session():
    c = claims(two("""
      claim first_only given (tag < 1): every iteration of llm (tokens == 4);
      claim end_first given (tag < 1): at end (count(done) == 2);
      claim all given (tag < 2): every iteration of llm (tokens == 4);
    """))
    for name in ("first_only", "end_first"):
        assert c[name]["verdict"] == "out_of_scope"
        assert (c[name]["session"], c[name]["time"], c[name]["iteration"]) == (1, 0.0, None)
        assert c[name]["read"] == {"tag": 1.0}
    assert c["all"]["verdict"] == "fails" and c["all"]["session"] is None


RENEWAL = ENGINE + "workload { arrive renewal(10); init { set n = 6; } }\n"


def test_a_late_session_puts_a_failed_claim_out_of_scope():
    """Sessions arrive at 10, 20, 30; each alone runs iterations of 4, 2, 1, 1
    tokens.  `full` fails at iteration 2 (time 11), but session 2, arriving
    at 30, puts it out of scope: the path is not one the claim is about."""
    src = """
      claim full given (serial < 2): every iteration of llm (tokens == 4);
      claim full2 given (serial < 3): every iteration of llm (tokens == 4);
      claim ended: at end (count(done) == 3 && now == 34);
    """
    c = claims(link(RENEWAL + src, arrivals=3))
    assert c["full"]["verdict"] == "out_of_scope"
    assert (c["full"]["session"], c["full"]["time"]) == (2, 30.0)
    assert c["full"]["read"] == {"serial": 2.0}
    assert c["full2"]["verdict"] == "fails"
    assert (c["full2"]["iteration"], c["full2"]["time"]) == (2, 11.0)
    assert c["ended"]["verdict"] == "holds" and c["ended"]["time"] == 34.0
    # the same claim before session 2 arrives: the failure stands
    c = claims(link(RENEWAL + src, horizon=25))
    assert c["full"]["verdict"] == "fails" and c["full"]["iteration"] == 2


def test_at_end_is_not_evaluated_while_sessions_live():
    c = claims(link(RENEWAL + "claim ended: at end (count(done) >= 0);", horizon=32))["ended"]
    assert c["verdict"] == "not_evaluated" and c["read"] is None and c["time"] == 32.0
    text = simulate(link(RENEWAL + "claim ended: at end (count(done) >= 0);", horizon=32)).text()
    assert "not_evaluated  1 session live at the end 32" in text


def test_given_is_read_after_the_preset_attributes():
    """An explicit session's attributes are written after its init has run:
    the given reads them, not init's."""
    p = two("claim small given (n <= 6): at end (count(done) == 2);")
    c = claims(sessions(p, [{"n": 6}, {"n": 7}]))["small"]
    assert (c["verdict"], c["session"], c["read"]) == ("out_of_scope", 1, {"n": 7.0})
    c = claims(sessions(p, [{"n": 6}, {"n": 5}]))["small"]
    assert c["verdict"] == "holds"


def test_a_claim_of_an_engine_member():
    p = link("""
      device gpu { }
      engine llm[2] on gpu { tokens cap 4; schedule { advance running; } execute (1); }
      workload { arrive batch(1); }
      server { run llm[1] prefill (cost(llm, 6)); }
      claim zero: every iteration of llm[0] (tokens == 0);
      claim one: some iteration of llm[1] (tokens == 2);
    """)
    c = claims(p)
    assert (c["zero"]["verdict"], c["zero"]["iterations"], c["zero"]["stage"]) == ("holds", 0, "llm[0]")
    assert (c["one"]["verdict"], c["one"]["iteration"], c["one"]["time"]) == ("witnessed", 2, 1.0)


def test_claims_in_the_text_report():
    text = simulate(two("""
      claim full: every iteration of llm (tokens == 4);
      claim mixed: some iteration of llm (decoders >= 1 && prefilled == 3);
      claim first_only given (tag < 1): at end (count(done) == 2);
    """)).text()
    tail = text[text.index("claim "):].splitlines()
    assert tail[0].split() == ["claim", "form", "verdict", "where", "read"]
    assert tail[2].split() == ["full", "every", "iteration", "of", "llm", "fails", "iteration", "4,",
                               "time", "3", "tokens", "=", "2"]
    assert tail[3].split() == ["mixed", "some", "iteration", "of", "llm", "witnessed", "iteration", "3,",
                               "time", "2", "decoders", "=", "1,", "prefilled", "=", "3"]
    assert tail[4].split() == ["first_only", "at", "end", "out_of_scope", "session", "1,", "time", "0",
                               "tag", "=", "1"]


def test_the_program_without_claims_reports_none():
    p = without_claims(two("claim full: every iteration of llm (tokens == 4);"))
    d = simulate(p).data()
    assert d["claims"] == []       # the JSON has every section; the text leaves an empty one out
    assert "claim" not in simulate(p).text()


def test_verdicts_are_the_documented_ones():
    from serq.sim.claims import VERDICTS
    assert VERDICTS == ("holds", "fails", "witnessed", "not_witnessed", "out_of_scope", "not_evaluated")
