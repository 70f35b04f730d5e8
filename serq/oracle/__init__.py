"""The vLLM oracle, serQ's side: a scenario as the inputs and explicit
sessions of `examples/oracle/vllm_request.sq`, and the comparison of a run's
observations with vLLM's outputs.  This package's modules read the IR only;
the programs are linked in ``serq.api.harness``.

From Python (from ``programs``, imported when first used):
``serq.oracle.run(scenario)``, ``compare(scenario, vllm=None)``,
``diff(scenario)`` (runs vLLM), ``program(scenario)``, ``Comparison``; and
``campaign(harness, n=, seed=, out=)`` (random inputs through both, from
``campaigns``), ``Campaign``, ``Disagreement``."""

_API = ("program", "run", "compare", "diff", "Comparison")
_CAMPAIGN = ("campaign", "Campaign", "Disagreement", "HARNESSES")


def __getattr__(name: str):
    if name in _API:
        from . import programs
        return getattr(programs, name)
    if name in _CAMPAIGN:
        from . import campaigns
        return getattr(campaigns, name)
    raise AttributeError(f"module 'serq.oracle' has no attribute {name!r}")
