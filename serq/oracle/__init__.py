"""The vLLM oracle, serQ's side: a scenario as the inputs and explicit
sessions of `examples/oracle/vllm_request.sq`, and the comparison of a run's
observations with vLLM's outputs.  This package reads the IR only; the CLI
compiles the program."""
