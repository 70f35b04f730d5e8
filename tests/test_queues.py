"""Queues, roles and relations (§Queues, §A KV transfer): what they lower to,
what the programs built with them compute, worked by hand, and the closed
forms they must meet."""

from __future__ import annotations

import json
import math
import os

import pytest

from serq.ir import codec
from serq.link import compile_file, compile_source
from serq.sim import simulate

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def ex(path: str, **kw):
    return compile_file(os.path.join(ROOT, "examples", path), **kw)


def run_src(src: str, horizon: float = 100.0, **kw):
    return simulate(compile_source(src, "t.sq", horizon=horizon, **kw))


def values(rep, name: str) -> list:
    return [v for _, _, _, v in rep.samples(name)]


def by_session(rep, name: str) -> dict:
    return {s: v for _, s, _, v in rep.samples(name)}


# ---------------------------------------------------------------- lowering
def _shape(p) -> dict:
    """The IR without its source locations: what a program computes."""
    d = json.loads(codec.dumps(p))
    d.pop("files")
    for b in d["blocks"]:
        b.pop("locs")
    for k in ("pools", "stages", "gauges", "claims"):
        for x in d[k]:
            x.pop("loc", None)
    return d


TANDEM_KERNEL = """use "std/args";
fn main() {
  let lambda = args.number("lambda", 0.5);
  let mu_p = args.number("mu_p", 1.0);
  let mu_d = args.number("mu_d", 0.8);
  stage P : fifo;
  stage D : fifo;
  workload {
    arrive poisson(lambda);
    hidden o;
    turn { set n = ~exp(1); set o = ~exp(1); }
  }
  server {
    run P (cost(P, n / mu_p));
    run D (cost(D, o / mu_d));
  }
}
"""


def test_a_queue_is_its_kernel_program():
    """`queue P { serve fifo; prefill (prompt) { run (…); } }` and the call
    `P.prefill (n);` are the stage P and the run in place: the same IR as the
    program written with stages."""
    queued = ex("pd-disaggregation/pd_tandem.sq", horizon=10.0)
    kernel = compile_source(TANDEM_KERNEL, "k.sq", horizon=10.0)
    assert _shape(queued) == _shape(kernel)


def test_names_of_a_queue_family_in_the_ir():
    p = ex("pd-disaggregation/llmd_nixl_pull.sq", horizon=10.0)
    assert [(x.name, x.index) for x in p.pools] == [
        ("P.reqs", 0), ("P.reqs", 1), ("P.kv", 0), ("P.kv", 1),
        ("D.reqs", 0), ("D.reqs", 1), ("D.kv", 0), ("D.kv", 1)]
    assert [(x.name, x.index) for x in p.stages] == [
        ("P", 0), ("P", 1), ("P.nic", 0), ("P.nic", 1), ("D", 0), ("D", 1),
        ("D.nic", 0), ("D.nic", 1), ("D.nic.latency", 0), ("D.nic.latency", 1), ("tool", None)]
    # what the entries set is the queue's; a mark is a set of now
    for name in ("P.c", "D.kept", "D.c", "D.loaded", "D.read_done", "D.first_token"):
        assert name in p.attrs
    assert "c" not in p.attrs and "kept" not in p.attrs
    assert p.share == "MaxMin"
    # the decoder admits its loaded requests' queue (reqs, declared first) before its new ones
    d0 = next(i for i, s in enumerate(p.stages) if s.name == "D" and s.index == 0)
    admitted = [p.pools[i].name for i in range(len(p.pools)) if p.pools[i].admit_via == d0]
    assert admitted == ["D.reqs", "D.kv"]


def test_a_family_of_one_is_still_a_family():
    """`queue D[ND]` with ND = 1: its pools are a family (`D.kv[0]`), its entry is
    called `D[j].decode (…)`, and `D.decode (…)` is refused."""
    src = pull_program().replace("D[0].decode (prompt) from P[0];", "D.decode (prompt) from P[0];")
    with pytest.raises(Exception) as info:
        compile_source(src, "t.sq")
    assert "queue `D` is a family of 1: name one member, `D[j].decode (…)`" in str(info.value)
    p = compile_source(pull_program(), "t.sq")
    assert [(x.name, x.index) for x in p.pools] == [("P.reqs", 0), ("P.kv", 0), ("D.reqs", 0), ("D.kv", 0)]


# ---------------------------------------------------------------- programs
def test_tandem_meets_jacksons_closed_form():
    """Two M/M/1 stations in tandem: E[T] = 1/(mu_p - lambda) + 1/(mu_d - lambda)."""
    lam, mu_p, mu_d = 0.5, 1.0, 0.8
    rep = simulate(ex("pd-disaggregation/pd_tandem.sq", horizon=60000.0, warmup=2000.0, seed=3))
    r = rep.data()["client"]["response"]
    want = 1 / (mu_p - lam) + 1 / (mu_d - lam)
    assert r["count"] > 25000
    assert abs(r["mean"] - want) <= r["ci"], (r["mean"], r["ci"], want)
    # and each station alone: the prefill's mean number in system is rho / (1 - rho)
    st = {s["name"]: s for s in rep.data()["stages"]}
    assert st["P"]["utilization"] == pytest.approx(lam / mu_p, abs=0.02)
    assert st["D"]["utilization"] == pytest.approx(lam / mu_d, abs=0.02)


PULL_1P1D = """use "std/args";
use "{lib}";
fn main() {
  let NP = 1;
  let ND = 1;
  let bs = 4;
  queue gw : gateway {
    route {
      set t0 = now;
      P[0].prefill (prompt);
      set t1 = now;
      D[0].decode (prompt) from P[0];
      observe p_done = t1;
      observe read = D.read_done;
      observe first = D.first;
    }
  }
  queue P[NP] : prefill {
    device gpu { kv cap 100 * bs; }
    engine on gpu {
      reqs cap 4;
      tokens cap 64;
      schedule { advance running; admit waiting while (running.preempted == 0); }
      execute (1);
    }
    pool reqs on P { queue fifo; }
    pool kv on gpu { block bs; evict lru; preempt lifo; }
    nic ps(NIC_P);
    prefill (prompt) {
      hold reqs (cost(reqs, 1)), kv (cost(kv, min(prompt, budget_left(P)))) reserve (cost(kv, prompt)) {
        run P prefill (cost(P, prompt)) growing kv;
      } cache (cost(reqs, kv, prompt)) lease kv (inf);
    }
  }
  queue D[ND] : decode {
    device gpu { kv cap 100 * bs; }
    engine on gpu {
      reqs cap 4;
      tokens cap 64;
      schedule { advance running; admit waiting while (running.preempted == 0); }
      execute (1);
    }
    pool reqs on D { queue fifo; }
    pool kv on D.gpu { block bs; evict lru; preempt lifo; }
    nic ps(NIC_D);
    decode (prompt) from P {
      hold kv (cost(kv, prompt)) reserve (cost(kv, prompt)), reqs (cost(reqs, 0)) reserve (cost(reqs, 1)) {
        transfer (prompt) from P to kv (prompt - 1);
        mark read_done;
        hold reqs (cost(reqs, 1)) {
          run D prefill (cost(D, 1)) growing kv;
          mark first;
          run D decode (cost(D, o - 1)) growing kv;
        }
      } cache (cost(kv, reqs, prompt + o - 1));
    }
  }
  RELATION
  workload {
    arrive batch(2);
    hidden o;
    init { set prompt = 20; set o = 4; }
  }
  server { gw.route(); }
}
"""


def pull_program(relation: str = "D pull P latency 1 share maxmin;", nic_p: str = "10",
                 nic_d: str = "10") -> str:
    lib = os.path.join(ROOT, "examples", "lib", "vllm.sq")
    return (PULL_1P1D.replace("{lib}", lib).replace("RELATION", relation)
            .replace("NIC_P", nic_p).replace("NIC_D", nic_d))


def test_1p1d_pull_on_the_step_clock_worked_by_hand():
    """Two requests of 20 prompt tokens and 4 output tokens arrive at 0; both
    engines cost 1 an iteration, both NICs carry 10 tokens a unit.

    t=0  P's iteration admits both (budget 64: 20 + 20) and prefills them;
    t=1  it ends: P's slots are freed, its blocks leased (5 blocks each).  D's
         attempt at t=1 admits both into D.kv (blocks for the whole prompt, no
         slot, no budget): it schedules no token, so it is no iteration.  Each
         read waits the pull's latency, 1 unit on D.nic.latency;
    t=2  the two reads start, each holding P.nic and D.nic: two flows share each
         NIC, max-min gives each 5 tokens a unit, so 20 tokens take 4 units;
    t=6  both reads end: 19 tokens load into D.kv, P's lease is released (its
         20 tokens stay cached on P).  Both ask D.reqs for a slot; D's
         iteration at 6 admits both and recomputes one prompt token each;
    t=7  the first output tokens exist; three decode iterations follow;
    t=10 the last tokens exist: TTFT 7, TPOT 1, response 10."""
    rep = run_src(pull_program())
    assert sorted(values(rep, "p_done")) == [1.0, 1.0]
    assert sorted(values(rep, "read")) == [6.0, 6.0]
    assert sorted(values(rep, "first")) == [7.0, 7.0]
    c = rep.data()["client"]
    assert (c["ttft"]["mean"], c["tpot"]["mean"], c["response"]["mean"]) == (7.0, 1.0, 10.0)
    st = {s["name"]: s for s in rep.data()["stages"]}
    assert st["P[0]"]["iterations"] == 1            # one prefill iteration
    assert st["D[0]"]["iterations"] == 4            # the recompute and three decodes
    pools = {x["name"]: x for x in rep.data()["pools"]}
    assert pools["D.kv[0]"]["admissions"] == 2 and pools["D.reqs[0]"]["admissions"] == 4


def test_a_push_and_a_pull_of_the_same_constants_run_the_same_numbers():
    """§Queues: the wait is a delay, so who posts the copy does not change a time."""
    pull = run_src(pull_program("D pull P latency 1 share maxmin;"))
    push = run_src(pull_program("P push D latency 1 share maxmin;"))
    for name in ("p_done", "read", "first"):
        assert values(pull, name) == values(push, name)
    assert pull.data()["client"] == push.data()["client"]
    # the wait is the reader's stage under pull, the poster's under push
    assert "D.nic.latency[0]" in [s["name"] for s in pull.data()["stages"]]
    assert "P.nic.latency[0]" in [s["name"] for s in push.data()["stages"]]


TWO_READS = """use "std/args";
fn main() {
  // two prefillers' NICs of different speeds and one decoder's: link queues
  queue E0 : link { serve ps(4) latency 1; }
  queue E1 : link { serve ps(30) latency 1; }
  queue I : link { serve ps(20); }
  share SHARE;
  pool src[2] { cap 1000; }
  pool dst { cap 1000; }
  workload { arrive batch(2); }
  server {
    hold src[serial] (cost(src, 40)) {
      hold dst (cost(dst, 40)) {
        branch (serial == 0) {
          transfer on E0, I (40) from src[serial] to dst (40);
        } else {
          transfer on E1, I (40) from src[serial] to dst (40);
        }
        observe read = now;
      }
    }
  }
}
"""


@pytest.mark.parametrize("share,read0,read1", [
    # Both reads first wait their link's latency, 1 unit.  max-min: both flows
    # rise together; at 4 E0 is full and flow 0 stops there; flow 1 rises
    # until I is full, 20 - 4 = 16.  Flow 1's 40 tokens take 2.5 units (read
    # at 1 + 2.5), flow 0's 10 (at 11).
    ("maxmin", 11.0, 3.5),
    # bottleneck: each flow its equal share at its tightest stage: flow 0
    # min(4/1, 20/2) = 4, flow 1 min(30/1, 20/2) = 10, the rest of I unused.
    # Flow 1 ends at 1 + 4; flow 0 has 24 tokens left, alone at min(4, 20) = 4:
    # 6 more units, at 11.
    ("bottleneck", 11.0, 5.0),
])
def test_two_reads_share_both_nics_by_the_programs_policy(share, read0, read1):
    rep = run_src(TWO_READS.replace("SHARE", share), horizon=50)
    assert by_session(rep, "read") == {0: read0, 1: read1}


def test_round_robin_balances_sessions_exactly():
    p = ex("multi-turn/routing.sq", horizon=4000.0, arrivals=200, sets={"policy": "0", "Lambda": "2"})
    rep = simulate(p)
    first = {}
    for _, s, turn, v in rep.samples("replica"):
        first.setdefault(s, v)
    counts = [list(first.values()).count(float(k)) for k in range(4)]
    assert counts == [50, 50, 50, 50]
    # and every turn of a session stays on its replica
    for _, s, _, v in rep.samples("replica"):
        assert v == s % 4


def test_prefix_affinity_hits_more_often_than_random():
    hits = {}
    for pol in ("1", "4"):
        rep = simulate(ex("multi-turn/routing.sq", horizon=200.0, warmup=20.0, sets={"policy": pol}))
        hits[pol] = rep.data()["observes"]["hit"]["mean"]
    assert hits["4"] > hits["1"] + 0.2


def test_separate_phases_steps():
    """examples/single-turn/separate_phases.sq: A's prefill at step 0, B's alone
    at step 1 (A's decode displaced), A's two decodes at steps 2 and 3."""
    rep = simulate(ex("single-turn/separate_phases.sq", horizon=20.0))
    assert by_session(rep, "first") == {0: 1.0, 1: 2.0}
    assert by_session(rep, "done") == {0: 4.0, 1: 2.0}
    with open(os.path.join(ROOT, "examples", "single-turn", "separate_phases.sq")) as f:
        mixed = f.read().replace("exclusive prefill each at most (4);", "advance running each at most (4);")
    rep = simulate(compile_source(mixed, "mixed.sq", horizon=20.0))
    # step 1 serves A's decode and three of B's prompt tokens together
    assert by_session(rep, "first") == {0: 1.0, 1: 3.0}
    assert by_session(rep, "done") == {0: 3.0, 1: 3.0}


def test_the_replica_serves_decodes_first_and_drops_the_kv_of_an_ended_session():
    rep = simulate(ex("multi-turn/replica.sq", horizon=300.0, warmup=30.0))
    d = rep.data()
    assert d["client"]["ttft"]["count"] > 300
    kv = next(x for x in d["pools"] if x["name"] == "R.kv")
    assert kv["rejected"] == 0 and kv["preemptions"] == 0


@pytest.mark.parametrize("prog", ["pd-disaggregation/llmd_nixl_pull.sq", "pd-disaggregation/vllm_nixl_push.sq"])
def test_pd_programs_run_with_every_read_ending_its_lease(prog):
    rep = simulate(ex(prog, horizon=120.0, warmup=10.0))
    d = rep.data()
    assert d["client"]["ttft"]["count"] > 50
    # every request that read its KV released the prefiller's lease: P's pools
    # hold nothing leased at the end beyond the requests still in flight
    assert d["run"]["waiting_to_grow"] == 0 and not d["run"]["idle_with_work"]


def test_push_with_both_legs_at_once_is_never_later_than_one_after_the_other():
    conc = simulate(ex("pd-disaggregation/vllm_nixl_push.sq", horizon=120.0, warmup=10.0))
    serial = simulate(ex("pd-disaggregation/vllm_nixl_push.sq", horizon=120.0, warmup=10.0,
                         sets={"concurrent": "0"}))
    a, b = conc.data()["client"]["ttft"], serial.data()["client"]["ttft"]
    # never later: by the horizon it has answered at least as many, sooner
    assert a["count"] >= b["count"]
    assert a["mean"] < b["mean"]


def test_a_link_with_a_transfer_entry_is_called_in_the_reads_place():
    """`L[self].transfer (n) from P to kv (m);`: the link's body runs on its own
    stage (ps(10), both reads at once: 5 tokens a unit each, 20 tokens in 4
    units from t=1), then the KV loads and P's lease is released: the read
    ends at 5, the first token at 6 (no latency: the link has none)."""
    src = pull_program("queue L[ND] : link { serve ps(10); transfer (n) { run (cost(L, n)); } }")
    src = src.replace("transfer (prompt) from P to kv (prompt - 1);",
                      "L[self].transfer (prompt) from P to kv (prompt - 1);")
    rep = run_src(src)
    assert sorted(values(rep, "read")) == [5.0, 5.0]
    assert sorted(values(rep, "first")) == [6.0, 6.0]
    pools = {x["name"]: x for x in rep.data()["pools"]}
    assert pools["P.kv[0]"]["used"] == pytest.approx((2 * 20 * 5) / 100)  # leased 1 → 5, of 100


def test_a_queues_engine_reads_its_members_own_pools_bare():
    """Inside queue D, `queued(kv)` in its engine's schedule is the member's
    own pool, as in its entries: member 1's cap reads D.kv[1]."""
    src = pull_program().replace("let ND = 1;", "let ND = 2;").replace(
        "D[0].decode (prompt) from P[0];", "D[serial - 2 * floor(serial / 2)].decode (prompt) from P[0];")
    src = src.replace("""    engine on gpu {
      reqs cap 4;
      tokens cap 64;
      schedule { advance running; admit waiting while (running.preempted == 0); }
      execute (1);
    }
    pool reqs on D { queue fifo; }""", """    engine on gpu {
      reqs cap 4;
      tokens cap 64;
      schedule {
        let cap = holders(kv) + queued(kv) > 1 ? 8 : inf;
        advance running each at most (cap);
        admit waiting while (running.preempted == 0) each at most (cap);
      }
      execute (1);
    }
    pool reqs on D { queue fifo; }""")
    assert "holders(kv)" in src
    p = compile_source(src, "t.sq")
    kv = [i for i, x in enumerate(p.pools) if x.name == "D.kv"]
    for member in (0, 1):
        st = next(s for s in p.stages if s.name == "D" and s.index == member)
        refs = [(q.query, q.ref.base + int(q.ref.index.value)) for q in _queries(st.kind.chunk)]
        assert refs == [("Holders", kv[member]), ("Queued", kv[member])]
    # outside the queue a bare `kv` names nothing
    bad = src.replace("observe first = D.first;", "observe first = queued(kv);")
    with pytest.raises(Exception) as info:
        compile_source(bad, "t.sq")
    assert "unknown pool `kv`" in str(info.value)


def _queries(e):
    from serq.ir.expr import walk
    from serq.ir import model as M
    return [x for x in walk(e) if type(x) is M.EQuery]


# ---------------------------------------------------------------- a library's queues
LIB_QUEUE = """queue S : prefill {
  serve fifo;
  prefill (n) { run (cost(S, n / mu)); }
}
"""
USER = """use "std/args";
fn main() {
  let mu = 2;
  USE
  workload { arrive poisson(0.5); turn { set n = ~exp(1); } }
  server { S.prefill (n); }
}
"""


def test_a_librarys_queue_is_declared_where_main_uses_it(tmp_path):
    """`use "lib.sq";` inside main declares the library's queue there, reading
    the program's constants: the IR of the program that writes it in place."""
    (tmp_path / "lib.sq").write_text(LIB_QUEUE)
    used = USER.replace("USE", 'use "lib.sq";')
    inline = USER.replace("USE", LIB_QUEUE)
    (tmp_path / "a.sq").write_text(used)
    (tmp_path / "b.sq").write_text(inline)
    from serq.link import compile_file
    a, b = compile_file(str(tmp_path / "a.sq"), horizon=10.0), compile_file(str(tmp_path / "b.sq"), horizon=10.0)
    assert _shape(a) == _shape(b)
    assert [s.name for s in a.stages] == ["S"]


def test_a_librarys_queue_used_above_main_is_refused(tmp_path):
    (tmp_path / "lib.sq").write_text(LIB_QUEUE)
    src = 'use "lib.sq";\n' + USER.replace("USE", "stage s : fifo;").replace("S.prefill (n);", "run s (cost(s, n));")
    from serq.diag import SerqError
    with pytest.raises(SerqError) as info:
        compile_source(src, str(tmp_path / "t.sq"))
    assert info.value.render() == (
        f"{tmp_path}/t.sq:1:1: error[E289]: a library's queues and relations are declared where the program "
        "uses it: `use` it inside main\n  |\n1 | use \"lib.sq\";\n  | ^^^^^^^^^^^^^\n"
        f"  = note: the library declares one at {tmp_path}/lib.sq:1:1\n"
        "  = help: a `use` above main brings only definitions")
def test_a_member_of_an_engine_family_counts_the_queues_it_admits():
    """`waiting.count` in P[i]'s schedule is P.reqs[i]'s queue, and
    `holders(kv) + queued(kv)` in D[j]'s reads D.kv[j], not the whole
    family's (the chunk cap of one instance is its own)."""
    from serq.ir.expr import walk
    p = ex("pd-disaggregation/llmd_nixl_pull.sq", horizon=10.0)
    seen = {"P": 0, "D": 0}
    for j, st in enumerate(p.stages):
        if st.name not in seen:
            continue
        seen[st.name] += 1
        read = sorted((q.query, p.pools[q.ref.base + int(q.ref.index.value)].name,
                       p.pools[q.ref.base + int(q.ref.index.value)].index)
                      for q in walk(st.kind.chunk) if type(q).__name__ == "EQuery")
        want = [("Queued", "P.reqs", st.index)] if st.name == "P" else \
            [("Holders", "D.kv", st.index), ("Queued", "D.kv", st.index)]
        assert read == want, (st.name, st.index, read)
    assert seen == {"P": 2, "D": 2}
