"""What a gauge, a claim and a given may read (§Gauges, §Claims): each
forbidden read is a link error at the offending expression."""

import pytest

from serq.diag import SerqError

from workloads import link

DEPLOYMENT = """
  device gpu { kv cap 100; }
  engine llm on gpu { tokens cap 10; schedule { advance running; } execute (1); }
  pool kv on gpu { }
  pool kvs[2] { cap 10; }
  stage svc : fifo;
  workload { arrive poisson(1); init { set s = 1; } }
  server { set j = 0; hold kv (cost(kv, 1)) { run svc (cost(svc, s)); run llm decode (cost(llm, 3)); }
           observe lat = now; }
"""


@pytest.mark.parametrize("item,code,message", [
    ("gauge g = s;", "E502", "`s`: a session attribute cannot be read in a gauge, which has no session"),
    ("gauge g = ~exp(1);", "E505", "a draw is not allowed in a gauge"),
    ("gauge g = cachedin(kv);", "E507", "`cachedin(…)` cannot be read in a gauge"),
    ("gauge g = now;", "E501", "`now` is not available in a gauge"),
    ("gauge g = work(svc);", "E507", "`work(…)` cannot be read in a gauge"),
    ("gauge g = budget_left(llm);", "E507", "`budget_left(…)` cannot be read in a gauge"),
    ("gauge g = used(kvs[j]);", "E502", "`j`: a session attribute cannot be read in a gauge, which has no session"),
    ("gauge lat = used(kv);", "E210", "`lat` is already a gauge; an observe cannot take its name"),
    ("claim c: every iteration of llm (s > 0);", "E502",
     "`s`: a session attribute cannot be read in a claim over iterations, which has no session"),
    ("claim c: every iteration of llm (~exp(1) > 0);", "E505", "a draw is not allowed in a claim over iterations"),
    ("claim c: every iteration of llm (work(llm) > 0);", "E507",
     "`work(…)` cannot be read in a claim over iterations"),
    ("claim c: some iteration of llm (budget_left(llm) > 0);", "E507",
     "`budget_left(…)` cannot be read in a claim over iterations"),
    ("claim c: every iteration of llm (cachedin(kv) > 0);", "E507",
     "`cachedin(…)` cannot be read in a claim over iterations"),
    ("claim c: every iteration of llm (total(lat) > 0);", "E509", "`total(lat)` is read only by a claim at end"),
    ("claim c: every iteration of llm (batch.tokens > 0);", "E212", "a claim names `batch.tokens` as `tokens`"),
    ("claim c: every iteration of svc (tokens > 0);", "E302",
     "`svc` is not an engine: a claim over iterations names an engine"),
    ("claim c: at end (tokens > 0);", "E501", "`tokens` is read only by a claim over iterations, not here"),
    ("claim c: at end (used(kv) > 0);", "E507", "`used(…)` cannot be read in a claim at end"),
    ("claim c: at end (count(nope) > 0);", "E201", "unknown observation `nope`"),
    ("claim c given (now > 0): at end (count(lat) > 0);", "E501",
     "`now` is not available in a claim's given, read for each session after its init"),
    ("claim c given (used(kv) > 0): at end (count(lat) > 0);", "E507",
     "`used(…)` cannot be read in a claim's given, read for each session after its init"),
    ("claim c given (~exp(1) > 0): at end (count(lat) > 0);", "E505",
     "a draw is not allowed in a claim's given, read for each session after its init"),
    ("claim c: at end (count(lat) > 0); claim c: at end (count(lat) > 0);", "E210", "claim `c` is declared twice"),
])
def test_a_forbidden_read_does_not_link(item, code, message):
    with pytest.raises(SerqError) as e:
        link(DEPLOYMENT + item)
    assert any(d.code == code and d.message == message for d in e.value.diagnostics), e.value.render()


def test_what_they_may_read_links():
    p = link(DEPLOYMENT + """
      gauge g = used(kv) + queue(svc) + busy(llm) + max k in 2 (used(kvs[k])) + free(kv) + holders(kv) + queued(kv);
      claim every_var given (s > 0): every iteration of llm (demand >= tokens && served >= 0 && arrived >= 1
          && used(kv) >= 0 && holders(kv) >= 0 && queue(llm) >= 0 && busy(llm) >= 0 && free(kv) >= 0
          && queued(kv) >= 0 && residents >= decoders && prefilled >= 0 && kv_decode >= 0
          && kv_prefill >= 0 && attention >= 0 && now >= 0);
      claim aggregates: at end (total(lat) >= count(lat) && now > 0
                                && prefix_total(lat) >= largest(lat) + smallest(lat));
    """)
    assert [c.name for c in p.claims] == ["every_var", "aggregates"]
    assert [g.name for g in p.gauges] == ["g"]
