"""Every sentence of §Queues and §A KV transfer that says a program does not
link, is refused or is an error: each a located link error, pinned by its
whole rendered message.  Each case is one edit of BASE, a 2P1D pull."""

import pytest

from serq.diag import SerqError
from serq.link import compile_source

BASE = (
    'use "std/args";\n'
    'fn main() {\n'
    '  queue P[2] : prefill {\n'
    '    pool kv { cap 100; }\n'
    '    serve fifo;\n'
    '    nic ps(10);\n'
    '    prefill (prompt) {\n'
    '      hold kv (cost(kv, prompt)) { run (cost(P, prompt)); } cache (cost(kv, prompt)) lease kv (inf);\n'
    '    }\n'
    '  }\n'
    '  queue D : decode {\n'
    '    pool kv { cap 100; }\n'
    '    serve fifo;\n'
    '    nic ps(10);\n'
    '    decode (prompt) from P {\n'
    '      hold kv (cost(kv, prompt)) { transfer (prompt) from P to kv (prompt); run (cost(D, o)); } cache (cost(kv, prompt));\n'
    '    }\n'
    '  }\n'
    '  D pull P latency 1 share maxmin;\n'
    '  workload { arrive poisson(1); hidden o; turn { set n = 4; set o = 2; } }\n'
    '  server { set i = 0; P[i].prefill (n); D.decode (n) from P[i]; }\n'
    '}\n'
)

CASES = {
    'no_serve': ('    serve fifo;\n    nic ps(10);\n    prefill',
        '    nic ps(10);\n    prefill',
        't.sq:7:36: error[E273]: `run (…)` runs queue `P`\'s own stage, and it declares none\n  |\n7 |       hold kv (cost(kv, prompt)) { run (cost(P, prompt)); } cache (cost(kv, prompt)) lease kv (inf);\n  |                                    ^^^^^^^^^^^^^^^^^^^^^^\n  = help: declare it: `serve fifo;` or `engine on DEVICE { … }`'),
    'unknown_role': ('queue D : decode',
        'queue D : decoder',
        't.sq:11:13: error[E270]: `decoder` is not a role: a queue plays `gateway`, `prefill`, `decode` or `link`\n   |\n11 |   queue D : decoder {\n   |             ^^^^^^^\n  = help: did you mean `decode`?'),
    'gateway_family': ('queue D : decode {',
        'queue G[2] : gateway { route { set x = 1; } }\n  queue D : decode {',
        't.sq:11:11: error[E271]: a gateway is a single queue: `queue G : gateway`, not a family\n   |\n11 |   queue G[2] : gateway { route { set x = 1; } }\n   |           ^\n  = help: several gateways are several queues'),
    'latency_not_link': ('    pool kv { cap 100; }\n    serve fifo;\n    nic ps(10);\n    decode',
        '    pool kv { cap 100; }\n    serve fifo latency 2;\n    nic ps(10);\n    decode',
        "t.sq:13:24: error[E272]: `latency` on a serve is a link's wait before each transfer\n   |\n13 |     serve fifo latency 2;\n   |                        ^\n  = help: queue `D` plays no `link` role"),
    'latency_link_entry': ('  D pull P',
        '  queue L : link { serve ps(5) latency 1; transfer (n) { run (cost(L, n)); } }\n  D pull P',
        't.sq:19:43: error[E272]: only a link without an entry takes a `latency`: a link with a `transfer (n)` entry is called, and its body is the time\n   |\n19 |   queue L : link { serve ps(5) latency 1; transfer (n) { run (cost(L, n)); } }\n   |                                           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^'),
    'order_pool_after_stage': ('    pool kv { cap 100; }\n    serve fifo;\n    nic ps(10);\n    decode',
        '    serve fifo;\n    pool kv { cap 100; }\n    nic ps(10);\n    decode',
        't.sq:13:5: error[E274]: queue `D` declares its own pools after its stage\n   |\n13 |     pool kv { cap 100; }\n   |     ^^^^^^^^^^^^^^^^^^^^\n  = help: a queue declares its device and pools, then its stage, then its entries, each reading what is above it (a pool on its device or engine may follow the engine)'),
    'own_name_let': ('fn main() {\n',
        'fn main() {\n  let kv = 3;\n',
        "t.sq:5:10: error[E210]: `kv` is already a let; queue `P`'s pool cannot take its name\n  |\n5 |     pool kv { cap 100; }\n  |          ^^\n  = help: inside the queue its body reads `kv` bare, which would read a let\n\nt.sq:13:10: error[E210]: `kv` is already a let; queue `D`'s pool cannot take its name\n   |\n13 |     pool kv { cap 100; }\n   |          ^^\n  = help: inside the queue its body reads `kv` bare, which would read a let\n\nerror: 2 errors"),
    'verb_not_role': ('    decode (prompt) from P {',
        '    prefill (prompt) { run (cost(D, 1)); }\n    decode (prompt) from P {',
        "t.sq:15:5: error[E275]: `prefill` is not an entry of queue `D`'s roles (decode)\n   |\n15 |     prefill (prompt) { run (cost(D, 1)); }\n   |     ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n  = help: its roles' entries are `decode (prompt) { … }` or `decode (prompt) from Q { … }`"),
    'entry_arity': ('    decode (prompt) from P {',
        '    decode (prompt, x) from P {',
        't.sq:15:5: error[E221]: the entry `decode` takes 1 parameter, not 2\n   |\n15 |     decode (prompt, x) from P {\n   |     ^^^^^^^^^^^^^^^^^^^^^^^^^^^\n  = help: write `decode (prompt) { … }`'),
    'from_not_queue': ('decode (prompt) from P {',
        'decode (prompt) from Q {',
        't.sq:15:5: error[E277]: `decode (…) from Q`: `Q` is not a queue declared above\n   |\n15 |     decode (prompt) from Q {\n   |     ^^^^^^^^^^^^^^^^^^^^^^^^\n  = help: the queue the KV comes from is declared above this one\n\nt.sq:21:41: error[E281]: queue `D` has no entry `decode from P`: a call from another queue is refused\n   |\n21 |   server { set i = 0; P[i].prefill (n); D.decode (n) from P[i]; }\n   |                                         ^^^^^^^^\n  = help: its entries: `D.decode from Q`\n\nerror: 2 errors'),
    'from_no_lease': ('cache (cost(kv, prompt)) lease kv (inf);',
        'cache (cost(kv, prompt));',
        "t.sq:15:5: error[E278]: `decode (…) from P`: queue `P` leases nothing, so there is no KV to read from it\n   |\n15 |     decode (prompt) from P {\n   |     ^^^^^^^^^^^^^^^^^^^^^^^^\n  = help: `P`'s entries keep their KV for the reader with `… lease kv (t)`"),
    'relation_no_nic': ('    pool kv { cap 100; }\n    serve fifo;\n    nic ps(10);\n    decode',
        '    pool kv { cap 100; }\n    serve fifo;\n    decode',
        't.sq:18:3: error[E279]: `D pull P`: queue `D` has no `nic`\n   |\n18 |   D pull P latency 1 share maxmin;\n   |   ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n  = help: the KV crosses both NICs: declare `nic ps(Bw);` in queue `D`'),
    'relation_two_sources': ('  D pull P latency 1 share maxmin;',
        '  D pull P latency 1 share maxmin;\n  D pull P share maxmin;',
        't.sq:20:3: error[E279]: queue `D` already reads its KV from `P`: a reader has one source\n   |\n20 |   D pull P share maxmin;\n   |   ^^^^^^^^^^^^^^^^^^^^^^\n  = note: the relation is at t.sq:19:3'),
    'relation_and_share': ('  D pull P latency 1 share maxmin;',
        '  D pull P latency 1 share maxmin;\n  share maxmin;',
        't.sq:20:3: error[E279]: a program with a relation does not also write `share` on its own: the relation says how the reads share the NICs\n   |\n20 |   share maxmin;\n   |   ^^^^^^^^^^^^^\n  = note: the relation is at t.sq:19:3'),
    'call_in_session': ('turn { set n = 4; set o = 2; } }',
        'turn { set n = 4; set o = 2; } session { turn; D.decode (n) from P[0]; } }',
        "t.sq:20:90: error[E280]: `D.decode`: a queue's entry is called by the deployment (the server), not by the session\n   |\n20 |   workload { arrive poisson(1); hidden o; turn { set n = 4; set o = 2; } session { turn; D.decode (n) from P[0]; } }\n   |                                                                                          ^^^^^^^^^^^^^^^^^^^^^^^\n  = help: call it in the server: `server { gw.route(); }`"),
    'no_such_entry': ('D.decode (n) from P[i];',
        'D.decode (n);',
        "t.sq:21:41: error[E281]: queue `D`'s `decode` reads its KV from a queue: name the member, `D.decode (…) from P[i]`\n   |\n21 |   server { set i = 0; P[i].prefill (n); D.decode (n); }\n   |                                         ^^^^^^^^\n  = help: its entries: `D.decode from P`"),
    'family_no_index': ('P[i].prefill (n);',
        'P.prefill (n);',
        't.sq:21:23: error[E301]: queue `P` is a family of 2: name one member, `P[j].prefill (…)`\n   |\n21 |   server { set i = 0; P.prefill (n); D.decode (n) from P[i]; }\n   |                       ^^^^^^^^^\n  = help: a family of one is still a family'),
    'index_range': ('P[i].prefill (n);',
        'P[2].prefill (n);',
        't.sq:21:25: error[E402]: index 2 out of range for queue `P`, which has 2 members\n   |\n21 |   server { set i = 0; P[2].prefill (n); D.decode (n) from P[i]; }\n   |                         ^\n  = help: an index is a whole number from 0 to 1'),
    'arg_draws': ('P[i].prefill (n);',
        'P[i].prefill (~exp(1));',
        't.sq:21:37: error[E223]: an argument of `P[…].prefill` may not draw: it is substituted, like an `at admission` binding\n   |\n21 |   server { set i = 0; P[i].prefill (~exp(1)); D.decode (n) from P[i]; }\n   |                                     ^^^^^^^\n  = help: sample into an attribute first'),
    'entry_reads_session': ('run (cost(D, o));',
        'run (cost(D, n));',
        "t.sq:16:90: error[E284]: entry `D.decode from P` reads `n`, an attribute of the session: an entry sees its own\n   |\n16 |       hold kv (cost(kv, prompt)) { transfer (prompt) from P to kv (prompt); run (cost(D, n)); } cache (cost(kv, prompt));\n   |                                                                                          ^\n  = note: in entry `D.decode from P`, used at t.sq:21:41\n  = help: pass it as the entry's parameter, or let the gateway read it; queue `D` sees its parameters, its pools and stage, the constants, cached, computed, what it sets and the request's hidden attributes"),
    'header_hidden': ('hold kv (cost(kv, prompt)) { transfer',
        'hold kv (cost(kv, prompt + o)) { transfer',
        "t.sq:16:34: error[E284]: the header of a hold in entry `D.decode from P` reads `o`, a hidden attribute\n   |\n16 |       hold kv (cost(kv, prompt + o)) { transfer (prompt) from P to kv (prompt); run (cost(D, o)); } cache (cost(kv, prompt));\n   |                                  ^\n  = note: in entry `D.decode from P`, used at t.sq:21:41\n  = help: the scheduler may not read it; the entry's body may"),
    'header_local_below': ('hold kv (cost(kv, prompt)) { transfer (prompt) from P to kv (prompt); run (cost(D, o)); }',
        'hold kv (cost(kv, prompt + x)) { set x = 1; transfer (prompt) from P to kv (prompt); run (cost(D, o)); }',
        "t.sq:16:34: error[E283]: the header of a hold in entry `D.decode from P` reads `x`, which the entry sets only in the hold's body or after it\n   |\n16 |       hold kv (cost(kv, prompt + x)) { set x = 1; transfer (prompt) from P to kv (prompt); run (cost(D, o)); } cache (cost(kv, prompt));\n   |                                  ^\n  = note: in entry `D.decode from P`, used at t.sq:21:41\n  = help: set `x` above the hold (on every way to it) to read it in the header"),
    'header_now': ('hold kv (cost(kv, prompt)) { transfer',
        'hold kv (cost(kv, prompt + now)) { transfer',
        "t.sq:16:34: error[E284]: the header of a hold in entry `D.decode from P` reads `now`\n   |\n16 |       hold kv (cost(kv, prompt + now)) { transfer (prompt) from P to kv (prompt); run (cost(D, o)); } cache (cost(kv, prompt));\n   |                                  ^^^\n  = note: in entry `D.decode from P`, used at t.sq:21:41\n  = help: an entry's body reads the clock; its header reads the parameters, the queue's pools and stage, the constants, cached and computed"),
    'other_queue_pool': ('run (cost(D, o));',
        'run (cost(D, o)); grow P.kv[0] (1);',
        "t.sq:16:102: error[E285]: entry `D.decode from P` names `P.kv`, queue `P`'s: an entry sees its own\n   |\n16 |       hold kv (cost(kv, prompt)) { transfer (prompt) from P to kv (prompt); run (cost(D, o)); grow P.kv[0] (1); } cache (cost(kv, prompt));\n   |                                                                                                      ^^^^^\n  = note: in entry `D.decode from P`, used at t.sq:21:41"),
    'own_pool_outside': ('server { set i = 0;',
        'pool m { cap 1; }\n  server { hold P.kv[0] (cost(P.kv, 1)) { set y = 1; } set i = 0;',
        "t.sq:22:17: error[E285]: `hold P.kv`: pool `P.kv` is queue `P`'s own; only its entries hold it\n   |\n22 |   server { hold P.kv[0] (cost(P.kv, 1)) { set y = 1; } set i = 0; P[i].prefill (n); D.decode (n) from P[i]; }\n   |                 ^^^^^^^\n  = help: call one of `P`'s entries"),
    'transfer_no_relation': ('  D pull P latency 1 share maxmin;',
        '',
        't.sq:16:36: error[E286]: `transfer` without `on` in entry `D.decode from P` is the read of a pull or push relation, and queue `D` reads from none\n   |\n16 |       hold kv (cost(kv, prompt)) { transfer (prompt) from P to kv (prompt); run (cost(D, o)); } cache (cost(kv, prompt));\n   |                                    ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n  = note: in entry `D.decode from P`, used at t.sq:21:41\n  = help: declare one (`D pull P latency x share maxmin;`) or name the stages: `transfer on L[k], M[l] (…) from S to P (m);`'),
    'queue_engine_request': ('queue D : decode {',
        'queue E : decode { device gpu { kv cap 10; } engine on gpu { tokens cap 4; schedule { advance running; admit waiting while (running.preempted == 0); } execute (1); request (x) { } } }\n  queue D : decode {',
        "t.sq:11:167: error[E244]: a queue's engine has no request: its entries say what it does with one\n   |\n11 |   queue E : decode { device gpu { kv cap 10; } engine on gpu { tokens cap 4; schedule { advance running; admit waiting while (running.preempted == 0); } execute (1); request (x) { } } }\n   |                                                                                                                                                                       ^^^^^^^^^^^^^^^"),
    'self_outside': ('server { set i = 0;',
        'server { set i = self;',
        "t.sq:21:20: error[E201]: `self` is the member's index, read in an entry of a queue family\n   |\n21 |   server { set i = self; P[i].prefill (n); D.decode (n) from P[i]; }\n   |                    ^^^^"),
    'queue_value_unknown': ('server { set i = 0;',
        'server { set q = D.nothing; set i = 0;',
        "t.sq:21:20: error[E201]: queue `D` sets or marks no `nothing`\n   |\n21 |   server { set q = D.nothing; set i = 0; P[i].prefill (n); D.decode (n) from P[i]; }\n   |                    ^^^^^^^^^\n  = help: `mark nothing;` in one of `D`'s entries is read afterwards as `D.nothing`"),
    'queue_called_bare': ('server { set i = 0;',
        'server { D(n); set i = 0;',
        't.sq:21:12: error[E281]: queue `D` is entered by one of its entries, `D.decode (…);`\n   |\n21 |   server { D(n); set i = 0; P[i].prefill (n); D.decode (n) from P[i]; }\n   |            ^\n  = help: its entries: `decode`'),
    'transfer_on_link_entry2': ('server { set i = 0;',
        'queue L : link { serve ps(5); transfer (n) { run (cost(L, n)); } }\n  pool a { cap 9; }\n  pool b { cap 9; }\n  server { hold a (cost(a, 1)) { hold b (cost(b, 1)) { transfer on L (1) from a to b (1); } } set i = 0;',
        't.sq:24:68: error[E287]: link `L` has a `transfer (n)` entry: it is called, `L.transfer (n) from P to kv (m);`, not named by `transfer on`\n   |\n24 |   server { hold a (cost(a, 1)) { hold b (cost(b, 1)) { transfer on L (1) from a to b (1); } } set i = 0; P[i].prefill (n); D.decode (n) from P[i]; }\n   |                                                                    ^'),
    'run_own_engine2': ('server { set i = 0;',
        'queue E : decode { device gpu { kv cap 10; } engine on gpu { tokens cap 4; schedule { advance running; admit waiting while (running.preempted == 0); } execute (1); } decode (prompt) { run (cost(E, 1)); } }\n  server { E.decode (n); set i = 0;',
        "t.sq:21:187: error[E288]: queue `E`'s stage is an engine: its run names the mode, `run E prefill (cost(E, …))` or `run E decode (…)`\n   |\n21 |   queue E : decode { device gpu { kv cap 10; } engine on gpu { tokens cap 4; schedule { advance running; admit waiting while (running.preempted == 0); } execute (1); } decode (prompt) { run (cost(E, 1)); } }\n   |                                                                                                                                                                                           ^^^^^^^^^^^^^^^^^\n  = note: in entry `E.decode`, used at t.sq:22:12"),
    'link_transfer_call_no_to': ('server { set i = 0;',
        'queue L[2] : link { serve ps(5); transfer (n) { run (cost(L, n)); } }\n  server { L[0].transfer (n); set i = 0;',
        "t.sq:22:12: error[E282]: `L[…].transfer`: a link's transfer names the KV's way, `… from P to kv (m);`\n   |\n22 |   server { L[0].transfer (n); set i = 0; P[i].prefill (n); D.decode (n) from P[i]; }\n   |            ^^^^^^^^^^^^^^^^^^\n  = help: the body runs the link; then the KV of m tokens is loaded and P released"),
}


def test_the_base_program_links():
    compile_source(BASE, "t.sq")


@pytest.mark.parametrize("name", sorted(CASES))
def test_queue_error_message(name):
    old, new, expected = CASES[name]
    assert old in BASE
    with pytest.raises(SerqError) as info:
        compile_source(BASE.replace(old, new, 1), "t.sq")
    assert info.value.render() == expected


def test_a_nic_that_fails_to_declare_is_reported_once_and_its_reads_say_nothing_more():
    """A NIC whose capacity does not link (an unknown name) is the one error:
    the relation's read over it adds none (it raised KeyError before)."""
    src = BASE.replace("  queue D : decode {\n    pool kv { cap 100; }\n    serve fifo;\n    nic ps(10);",
                       "  queue D : decode {\n    pool kv { cap 100; }\n    serve fifo;\n    nic ps(Bw);")
    assert src != BASE
    with pytest.raises(SerqError) as info:
        compile_source(src, "t.sq")
    assert info.value.render() == (
        "t.sq:14:12: error[E201]: unknown name `Bw`\n   |\n14 |     nic ps(Bw);\n   |            ^^")


@pytest.mark.parametrize("serve, message", [
    ("serve fifo(0);", "t.sq:13:16: error[E403]: a fifo's servers are a whole number ≥ 1, not 0\n   |\n"
                       "13 |     serve fifo(0);\n   |                ^"),
    ("serve ps(0 - 1);", "t.sq:13:14: error[E403]: a ps stage's capacity is a number ≥ 0, not -1\n   |\n"
                         "13 |     serve ps(0 - 1);\n   |              ^^^^^\n"
                         "  = help: `ps(c)` shares a throughput of c among the jobs present; a capacity that falls "
                         "with them may read `present`"),
])
def test_a_serve_that_fails_to_declare_is_the_one_error(serve, message):
    """Its entry's `run (…)` said besides, and first, that the queue
    `declares no stage`."""
    src = BASE.replace("  queue D : decode {\n    pool kv { cap 100; }\n    serve fifo;",
                       "  queue D : decode {\n    pool kv { cap 100; }\n    " + serve)
    assert src != BASE
    with pytest.raises(SerqError) as info:
        compile_source(src, "t.sq")
    assert info.value.render() == message

def test_a_queue_without_a_stage_is_said_once_where_a_definition_runs_it():
    """The `run (…)` the queue's check cannot see (it is in a definition) is
    said where the definition is linked, once (E273 was said twice for a
    `run (…)` written in the entry: at the entry and at the run)."""
    src = (BASE.replace("{ run (cost(P, prompt)); }", "{ step(prompt); }")
           .replace("    serve fifo;\n    nic ps(10);\n    prefill", "    nic ps(10);\n    prefill")
           .replace("fn main() {\n", "fn main() {\n  def step(x) { run (cost(P, x)); }\n"))
    with pytest.raises(SerqError) as info:
        compile_source(src, "t.sq")
    assert info.value.render() == (
        "t.sq:3:17: error[E273]: `run (…)` runs queue `P`'s own stage, and it declares none\n  |\n"
        "3 |   def step(x) { run (cost(P, x)); }\n  |                 ^^^^^^^^^^^^^^^^^\n"
        "  = note: in `step`, used at t.sq:8:36\n  = note: in entry `P.prefill`, used at t.sq:21:23\n"
        "  = help: declare it: `serve fifo;` or `engine on DEVICE { … }`")


def test_an_entry_reading_another_queues_attribute_does_not_link():
    """§Queues: an entry's body reads "nothing else the session has set, nor
    another queue's Q.x" (issue 24, finding 13: `set c = P.c;` in D's entry
    linked)."""
    src = BASE.replace("      hold kv (cost(kv, prompt)) { run (cost(P, prompt)); }",
                       "      set c = prompt;\n      hold kv (cost(kv, prompt)) { run (cost(P, prompt)); }")
    src = src.replace("(prompt); run (cost(D, o)); }", "(prompt); set c = P.c; run (cost(D, o)); }")
    with pytest.raises(SerqError) as e:
        compile_source(src, "t.sq", horizon=10)
    assert e.value.render() == (
        "t.sq:17:85: error[E264]: entry `D.decode from P` of queue `D` reads `P.c`, queue `P`'s: an entry's body "
        "reads nothing another queue has set\n"
        "   |\n"
        "17 |       hold kv (cost(kv, prompt)) { transfer (prompt) from P to kv (prompt); set c = P.c; run (cost(D, o)); "
        "} cache (cost(kv, prompt));\n"
        "   |                                                                                     ^^^\n"
        "  = note: in entry `D.decode from P`, used at t.sq:22:41\n"
        "  = help: pass it as a parameter of `D.decode from P`, or let the gateway read `P.c` and pass it on")
    # the gateway reads it (the route is the session's side), and D reads its own
    compile_source(src.replace("set c = P.c; ", "set c = D.c; "), "t.sq", horizon=10)
