"""The fuzz harness: no input produces a traceback (issue 10).

Three kinds of input, each made from the example programs (``corpus``) by a
mutator (``mutate``) whose choices come from a ``Chooser``: a seeded
``random.Random`` for ``make fuzz``, Hypothesis' data for the CI tests
(``test_fuzz.py``), so that one mutator serves both:

* ``source``: a program's text with tokens deleted, duplicated, swapped,
  replaced or inserted, or with lines and fragments of another program
  pasted in, through ``compile_source`` (and, when it links, a short run);
* ``numeric``: every number of every example replaced by a value a user
  types or one at the edges (0, -1, 0.5, 1e-308, 1e308, inf, NaN, 2^31,
  10^9), linked and simulated for a short horizon under a limit;
* ``ir``: one field of an example's IR replaced by a value of another type,
  removed, or made an index out of range, through ``serq.ir`` (read and
  validate) and the simulator.

and the surfaces a user reaches beyond a program's text (``surfaces``):
``retype`` (the IR with a value of another type where a number stands, or a
key removed), ``trace`` (CSV and Mooncake traces), ``oracle`` (scenarios,
replay traces, Mooncake and P/D specs, vLLM outputs), ``table`` (sweep
tables, CSV and Parquet, and dump files, plotted), ``api`` (the Python
API's functions called with odd arguments), ``cli`` (odd command lines in a
sandbox of a user's files) and ``signals`` (SIGINT, SIGTERM, SIGHUP sent to
sweeps and runs at a drawn moment of their life, ``interrupts.py``), each
with its own property besides (nothing past the validator, no wrong answer,
no file lost, no process left, no signal lost).

The property (``check.outcome``): every input ends in a clean run or a
``SerqError`` every diagnostic of which names a location (``path:line:col``)
or an IR field path (``$.blocks[3].stmts[0]``).  Anything else is a finding.

    .venv/bin/python -m tests.fuzz run --kind source --n 100000 --seed 1
    .venv/bin/python -m tests.fuzz replay tests/fuzz/found/<file>.json

``make fuzz N=…`` runs all three kinds; a finding is written to
``tests/fuzz/found/`` with the command that reproduces it.
"""
