"""The linker, construct by construct: what IR each construct gives."""

import math

import pytest

from serq.diag import SerqError
from serq.ir import model as M
from serq.ir.expr import const_value
from serq.link import compile_file
from tests.helpers import link, stmts

SVC = "  stage svc : fifo;\n  workload { arrive poisson(1); turn { set s = ~exp(1); } }\n"

ENGINE = """
  device gpu { compute (t) = t * 0.001; kv cap 100 * 16; }
  engine llm on gpu {
    reqs cap 8;
    tokens cap 256;
    schedule { %s }
    execute (0.01 + compute(batch.tokens));
  }
  pool kv on gpu { block 16; evict lru; preempt lifo; }
  pool reqs on llm { queue fifo; }
  workload { arrive poisson(1); turn { set n = 100; set o = 10; } }
  server {
    hold reqs (cost(reqs, 1)), kv (cost(kv, min(n, budget_left(llm)))) reserve (cost(kv, n)) {
      run llm prefill (cost(llm, n)) growing kv;
      run llm decode (cost(llm, o - 1)) growing kv;
    }
  }
"""
VLLM_SCHED = "advance running; admit waiting while (running.preempted == 0);"


def step(p, name="llm"):
    st = next(s for s in p.stages if s.name == name)
    assert type(st.kind) is M.KStep
    return st.kind


def test_single_turn_session_is_turn_then_server():
    p = link(SVC + "  server { run svc (cost(svc, s)); }")
    assert stmts(p) == ["STurn", "SRun"]
    b = p.blocks[p.session]
    assert b.sides == ("client", "server")
    run = b.stmts[1]
    assert run.mode == "Plain" and run.stage == M.Ref(0, 1, None)
    assert run.work == M.ECost((M.Target("stage", 0),), M.EAttr(p.slot("s")))


def test_turn_splices_a_fresh_copy_of_the_server_each_time():
    p = link("  stage svc : fifo;\n  workload { arrive poisson(1); session { turn; turn; } }\n"
             "  server { branch (1 == 1) { run svc (cost(svc, 1)); } }")
    b = p.blocks[p.session]
    assert [type(s).__name__ for s in b.stmts] == ["STurn", "SBranch", "STurn", "SBranch"]
    assert b.stmts[1].then != b.stmts[3].then  # the arena stays a tree


def test_constants_fold_and_inputs_take_set():
    p = link('  let a = args.number("a", 2);\n  let b = a * 3 + 1;\n  stage svc : fifo;\n'
             '  workload { arrive poisson(b); }\n  server { run svc (cost(svc, a)); }', sets={"a": "5"})
    assert p.arrival == M.APoisson(16.0)
    assert p.blocks[p.session].stmts[1].work.expr == M.ENum(5.0)


def test_set_value_may_be_an_expression_of_constants():
    p = link('  let k = 4;\n  let a = args.number("a", 1);\n  stage svc : fifo;\n'
             '  workload { arrive poisson(a); }\n  server { run svc (cost(svc, 1)); }', sets={"a": "1 / 2"})
    assert p.arrival == M.APoisson(0.5)


def test_inf_constant_and_pool_default_cap():
    p = link("  pool mem { }\n" + SVC + "  server { hold mem (cost(mem, 1)) { run svc (cost(svc, s)); } }")
    assert math.isinf(p.pools[0].cap)


def test_expression_def_is_inlined_with_its_parameters():
    p = link("  def twice(x) { 2 * x }\n" + SVC + "  server { run svc (cost(svc, twice(s + 1))); }")
    work = p.blocks[p.session].stmts[1].work.expr
    assert work == M.EBinary("Mul", M.ENum(2.0), M.EBinary("Add", M.EAttr(p.slot("s")), M.ENum(1.0)))


def test_statement_def_is_inlined_where_it_is_called():
    p = link("  def serve(w) { run svc (cost(svc, w)); observe done = now; }\n" + SVC +
             "  server { serve(s); }")
    assert stmts(p) == ["STurn", "SRun", "SObserve"]


def test_def_reference_argument_names_a_pool():
    p = link("  pool mem[2] { cap 4; }\n  def u(p) { used(p) }\n" + SVC +
             "  server { set x = u(mem[1]); run svc (cost(svc, s)); }")
    q = p.blocks[p.session].stmts[1].expr
    assert q == M.EQuery("Used", M.Ref(0, 2, M.ENum(1.0)))


def test_aggregate_is_written_out():
    p = link("  pool kv[3] { cap 4; }\n" + SVC +
             "  server { set x = max j in 3 (used(kv[j])); run svc (cost(svc, s)); }")
    e = p.blocks[p.session].stmts[1].expr
    u = lambda k: M.EQuery("Used", M.Ref(0, 3, M.ENum(float(k))))
    assert e == M.EFn("Max", (M.EFn("Max", (u(0), u(1))), u(2)))


def test_sum_aggregate_of_constants_folds():
    p = link(SVC + "  server { set x = sum j in 4 (j * j); run svc (cost(svc, s)); }")
    assert p.blocks[p.session].stmts[1].expr == M.ENum(14.0)


def test_branch_with_is_a_bernoulli_draw():
    p = link(SVC + "  server { branch with (0.25) { run svc (cost(svc, s)); } }")
    br = p.blocks[p.session].stmts[1]
    assert br.guard == M.ESample("Bernoulli", (M.ENum(0.25),))


def test_at_admission_bindings_are_substituted_into_the_header():
    p = link("  pool mem { cap 10; }\n" + SVC +
             "  server { hold mem (cost(mem, h + 1)) at admission (h = free(mem), g = h * 2) "
             "{ run svc (cost(svc, s)); } cache (cost(mem, g)); }")
    hold = p.blocks[p.session].stmts[1]
    free = M.EQuery("Free", M.Ref(0, 1, None))
    assert hold.pools[0].units.expr == M.EBinary("Add", free, M.ENum(1.0))
    assert hold.cache.expr == M.EBinary("Mul", free, M.ENum(2.0))
    assert "h" not in p.attrs  # the body does not read it: no attribute


def test_binding_the_body_reads_is_set_at_its_top():
    p = link("  pool mem { cap 10; }\n" + SVC +
             "  server { hold mem (cost(mem, k)) at admission (k = s + 1) { run svc (cost(svc, k)); } }")
    hold = p.blocks[p.session].stmts[1]
    body = p.blocks[hold.body].stmts
    assert body[0] == M.SSet(p.slot("k"), M.EBinary("Add", M.EAttr(p.slot("s")), M.ENum(1.0)))


def test_engine_lowers_to_a_step_stage_with_its_pools():
    p = link(ENGINE % VLLM_SCHED)
    k = step(p)
    assert k.budget == M.ENum(256.0)
    assert k.serve == M.ServeBy(()) and k.iteration is None
    assert k.chunk == M.ENum(0.0)  # no each at most: no cap
    kv = next(i for i, q in enumerate(p.pools) if q.name == "kv")
    reqs = next(i for i, q in enumerate(p.pools) if q.name == "reqs")
    assert k.memory == kv
    assert p.pools[reqs].admit_via == 0 and p.pools[kv].admit_via is None
    assert p.pools[kv].cap == 1600 and p.pools[reqs].cap == 8
    assert p.pools[kv].preempt == M.PreemptBy((M.EUnary("Neg", M.ECtx("Admission")),), False)
    # the device's time resource is written out where execute reads it
    assert k.cost == M.EBinary("Add", M.ENum(0.01), M.EBinary("Mul", M.ECtx("Ntok"), M.ENum(0.001)))


def test_each_at_most_with_inf_branch_becomes_chunk_with_zero():
    p = link(ENGINE % ("let t = running.count + waiting.count > 1 ? 64 : inf;"
                       "advance running each at most (t);"
                       "admit waiting while (running.preempted == 0) each at most (t);"))
    k = step(p)
    reqs = next(i for i, q in enumerate(p.pools) if q.name == "reqs")
    cond = M.EBinary("Gt", M.EBinary("Add", M.ECtx("Nres"), M.EQuery("Queued", M.Ref(reqs, 1, None))),
                     M.ENum(1.0))
    assert k.chunk == M.ECond(cond, M.ENum(64.0), M.ENum(0.0))


def test_decode_first_is_by_decoding_key():
    p = link(ENGINE % "advance running decode first; admit waiting while (running.preempted == 0);")
    assert step(p).serve == M.ServeBy((M.ECond(M.ECtx("Decoding"), M.ENum(0.0), M.ENum(1.0)),))


def test_only_on_both_statements_gives_the_two_statement_body():
    p = link("  def in_phase() { running.decoding > 0 ? decoding : !decoding }\n" +
             ENGINE % ("advance running only (in_phase()); "
                       "admit waiting only (in_phase()) while (running.preempted == 0);"))
    k = step(p)
    only = M.ECond(M.EBinary("Gt", M.ECtx("Ndec"), M.ENum(0.0)), M.ECtx("Decoding"),
                   M.EUnary("Not", M.ECtx("Decoding")))
    assert k.iteration == (M.IServe(only=only), M.IAdmit(only=only, gate=M.EUnary("Not", M.ECtx("Preempted"))))


def test_exclusive_prefill_form():
    p = link(ENGINE % "exclusive prefill; admit waiting while (running.preempted == 0);")
    assert step(p).serve == M.ServeExclusivePrefill()


def test_other_schedule_is_an_iteration_body_with_registers():
    p = link(ENGINE.replace("reqs cap 8;", "reqs cap 8; state just = 0;") %
             ("advance running; branch (just == 0 || running.count == 0) { admit waiting; } "
              "set just = waiting.admitted > 0;"))
    k = step(p)
    assert p.registers == (M.Register("just", 0, 0.0),)
    assert type(k.iteration[0]) is M.IServe and type(k.iteration[1]) is M.IBranch
    assert k.iteration[2] == M.ISet(0, M.EBinary("Gt", M.ECtx("Admitted"), M.ENum(0.0)))


def test_engine_request_lowers_to_the_hold_at_the_call():
    src = """
  device gpu { kv cap 64 * 16; }
  engine llm on gpu {
    reqs cap 4;
    tokens cap 128;
    schedule {
      advance running;
      admit waiting while (running.preempted == 0)
        taking reqs (1), kv (min(known, budget_left(llm))) reserve (known);
    }
    execute (1);
    request (prompt, output) {
      set kept = prompt;
      at admission { known = max(kept, computed + 1); }
      prefill (known) growing kv;
      mark first_token;
      decode (output - 1) growing kv;
      cache (prompt + output);
    }
  }
  pool kv on gpu { block 16; preempt lifo; }
  pool reqs on llm { }
  workload { arrive batch(2); turn { set p = 30; set o = 5; } }
  server { llm (p, o); observe ttft_mark = llm.first_token; }
"""
    p = link(src)
    b = p.blocks[p.session]
    assert [type(s).__name__ for s in b.stmts] == ["STurn", "SSet", "SHold", "SObserve"]
    hold = b.stmts[2]
    kept, known, computed = p.slot("kept"), p.slot("known"), M.SLOT["computed"]
    known_e = M.EFn("Max", (M.EAttr(kept), M.EBinary("Add", M.EAttr(computed), M.ENum(1.0))))
    assert [hp.pool.base for hp in hold.pools] == [p.pools.index(next(q for q in p.pools if q.name == "reqs")),
                                                   p.pools.index(next(q for q in p.pools if q.name == "kv"))]
    assert hold.pools[1].reserve.expr == known_e
    body = p.blocks[hold.body].stmts
    assert body[0] == M.SSet(known, known_e)
    assert [type(s).__name__ for s in body] == ["SSet", "SRun", "SSet", "SRun"]
    assert body[1].mode == "Prefill" and body[3].mode == "Decode"
    assert body[2] == M.SSet(p.slot("llm.first_token"), M.ECtx("Now"))
    kvb = next(i for i, q in enumerate(p.pools) if q.name == "kv")
    reqb = next(i for i, q in enumerate(p.pools) if q.name == "reqs")
    assert hold.cache.targets == (M.Target("pool", reqb), M.Target("pool", kvb))


def test_workload_tool_supplies_a_delay_stage_after_the_declared_ones():
    p = link("  stage svc : fifo;\n  workload { arrive poisson(1); session { turn; tool (3); } }\n"
             "  server { run svc (cost(svc, 1)); }")
    assert [s.name for s in p.stages] == ["svc", "tool"]
    assert type(p.stages[1].kind) is M.KDelay
    run = p.blocks[p.session].stmts[2]
    assert run.stage == M.Ref(1, 1, None) and run.work == M.ECost((M.Target("stage", 1),), M.ENum(3.0))


def test_transfer_lowers_to_run_load_release():
    p = link("  stage link : ps(10);\n  pool src { cap 100; }\n  pool dst { cap 100; }\n"
             "  workload { arrive poisson(1); }\n"
             "  server { hold src (cost(src, 10)) { } lease src (inf); "
             "hold dst (cost(dst, 10)) { transfer (5) from src to dst (10); } }")
    hold = p.blocks[p.session].stmts[2]
    body = [type(s).__name__ for s in p.blocks[hold.body].stmts]
    assert body == ["SRun", "SLoad", "SRelease"]


def test_multi_stage_run_and_share():
    p = link("  stage a[2] : ps(4);\n  stage b[2] : ps(8);\n  share maxmin;\n"
             "  workload { arrive poisson(1); }\n  server { run a[0], b[1] (cost(a, b, 3)); }")
    run = p.blocks[p.session].stmts[1]
    assert run.also == (M.Ref(2, 2, M.ENum(1.0)),) and p.share == "MaxMin"


def test_hidden_and_types():
    p = link("  stage svc : fifo;\n  workload { arrive poisson(1); hidden o; turn { set o = 3; } }\n"
             "  server { set w = o * 2; run svc (cost(svc, w)); }")
    assert p.hidden == (p.slot("o"),)
    assert p.attr_types[p.slot("o")] == "Size"
    assert p.attr_types[p.slot("w")] == "Value"


def test_cost_attribute_type_and_record():
    p = link("  pool mem { cap 10; }\n" + SVC +
             "  server { Cost proc = { mem: 2, svc: s }; hold mem (proc.mem) { run svc (proc.svc); } }")
    assert p.attr_types[p.slot("proc.mem")] == (M.Target("pool", 0),)
    assert p.attr_types[p.slot("proc.svc")] == (M.Target("stage", 0),)


def test_gauge_and_claims():
    p = link(ENGINE % VLLM_SCHED + "  gauge u = used(kv);\n"
             "  claim busy_ok given (n > 0): every iteration of llm (demand < 256 || tokens == 256);\n"
             "  claim fin: at end (now >= 0);")
    assert p.gauges[0].name == "u"
    assert p.claims[0].kind == M.CEvery(0) and p.claims[0].given is not None
    assert p.claims[1].kind == M.CAtEnd()


def test_fork_join_choose_while():
    p = link("  stage svc[2] : fifo;\n  workload { arrive poisson(1); turn { set s = 1; } }\n"
             "  server { choose j in 2 by (queue(svc[j])); fork { run svc[j] (cost(svc, s)); } join; "
             "set r = s; while (r > 5) { run svc[0] (cost(svc, 1)); set r = r - 1; } }")
    assert stmts(p) == ["STurn", "SChoose", "SFork", "SJoin", "SSet", "SWhile"]


def test_ordered_trace_is_resolved_against_the_program(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "t.csv").write_text("session,turn,new,out,think\n0,0,5,3,1\n")
    from serq.link import compile_source
    src = ('fn main() { stage svc : fifo; workload { arrive batch(1); trace "t.csv" ordered; } '
           'server { run svc (cost(svc, new)); } }')
    p = compile_source(src, str(tmp_path / "p.sq"))
    assert p.trace == "t.csv" and p.trace_ordered
    assert p.attr_types[M.SLOT["new"]] == "Size"


def test_json_ir_of_every_example_passes_the_validator_again():
    from serq.ir import dumps, loads, validate
    from serq.link import compile_file
    from tools.examples import programs
    for path in programs():
        p = compile_file(path, horizon=50)
        q = loads(dumps(p))
        validate(q)
        assert q == p


def test_linking_leaves_the_syntax_trees_as_parsed():
    """compile_source's ``parsed`` keeps the trees between links: linking must
    not change them (every example, linked twice from the kept trees)."""
    from serq.diag import read_text
    from serq.ir import dumps
    from serq.link import compile_source
    from tools.examples import programs
    examples = programs()
    for ex in examples:
        parsed = {}
        first = dumps(compile_source(read_text(ex), ex, horizon=10.0, parsed=parsed))
        assert dumps(compile_source(read_text(ex), ex, horizon=10.0, parsed=parsed)) == first, ex
        for (how, path, text), tree in parsed.items():
            assert tree == how(text, path), (ex, path)
    assert len(examples) > 25


def test_the_linker_notes_a_given_input_folded_by_more_than_products():
    """``input_folds`` (serq.link.shapes): `cv2 == 0` folds the given cv2 by a
    comparison; a default is no given input, and the oracle programs fold
    their inputs by products alone."""
    from serq.diag import Span
    from serq.link import compile_file
    mg1 = "examples/single-turn/mg1.sq"
    for sets, want in (({"cv2": "2", "S": "3"}, [Span(mg1, 17, 20, 17, 28)]), ({"S": "3"}, []), ({}, [])):
        folds = []
        compile_file(mg1, sets=sets, horizon=10.0, input_folds=folds)
        assert folds == want, sets
    folds = []
    compile_file("examples/oracle/vllm_request.sq", sets={"bs": "4", "B": "64", "blocks": "20", "max_seqs": "4",
                                                         "chunk": "8", "prefix": "1"}, horizon=10.0,
                 input_folds=folds)
    assert folds == []


@pytest.mark.parametrize("target, why", [
    ("p.sq", "it is this program"),
    ("lib", "it is a directory ({d}/lib)"),
])
def test_a_library_that_is_the_program_or_a_directory_is_said_as_such(tmp_path, target, why):
    """They were read as a library, and said as a syntax error in the
    program's `fn main` (the program itself), or as `no such file` (a directory)."""
    (tmp_path / "lib").mkdir()
    prog = tmp_path / "p.sq"
    prog.write_text(f'use "{target}";\nfn main() {{\n  stage svc : fifo;\n  workload {{ arrive poisson(1); }}\n'
                    '  server { run svc (cost(svc, 1)); }\n}\n')
    with pytest.raises(SerqError) as info:
        compile_file(str(prog))
    caret = "^" * len(f'use "{target}";')
    assert info.value.render() == (
        f"{prog}:1:1: error[E230]: cannot read library `{target}`: {why.format(d=tmp_path)}\n"
        f"  |\n1 | use \"{target}\";\n  | {caret}\n"
        '  = help: a library is a file of definitions next to the program that uses it; the standard one is '
        '`use "std/args";`')


@pytest.mark.parametrize("decl, read", [
    ("Cost c = cost(svc, ~exp(1));", "c"),
    ("Cost c = { svc: ~exp(1) };", "c.svc"),
])
def test_a_cost_is_declared_in_the_workloads_turn_block_as_a_set_is(decl, read):
    """`Cost` is a workload quantity (docs/language.md, the workload), yet the
    turn and init blocks refused it (E712) while taking `set` and `Size`."""
    body = "  stage svc : fifo;\n  workload { arrive poisson(1); turn { %s } }\n  server { run svc (%s); }"
    declared = link(body % (decl, read))
    assert declared.attr_types[declared.slot(read)] == (M.Target("stage", 0),)
    set_ = link(body % (f"set {read.replace('.', '_')} = cost(svc, ~exp(1));", read.replace(".", "_")))
    assert [b.stmts for b in declared.blocks] == [b.stmts for b in set_.blocks]
