"""The vLLM oracle, serQ's side: a scenario as the inputs and explicit
sessions of `examples/oracle/vllm_request.sq`, and the comparison of a run's
observations with vLLM's outputs.  This package's modules read the IR only;
the programs are linked in ``serq.api.oracle``.

From Python (re-exported from ``serq.api.oracle``, imported when first used):
``serq.oracle.run(scenario)``, ``compare(scenario, vllm=None)``,
``diff(scenario)`` (runs vLLM), ``program(scenario)``, ``Comparison``; and
``campaign(harness, n=, seed=, out=)`` (random inputs through both, from
``serq.api.campaign``), ``Campaign``, ``Disagreement``."""

_API = ("program", "run", "compare", "diff", "Comparison")
_CAMPAIGN = ("campaign", "Campaign", "Disagreement", "HARNESSES")


def __getattr__(name: str):
    if name in _API:
        from ..api import oracle as _api
        return getattr(_api, name)
    if name in _CAMPAIGN:
        from ..api import campaign as _campaign
        return getattr(_campaign, name)
    raise AttributeError(f"module 'serq.oracle' has no attribute {name!r}")
