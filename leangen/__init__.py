"""leangen: serQ's Lean back end.

From IR files (and nothing else: never `serq.syntax` or `serq.link`) it
decides whether a program is in the Lean fragment (`fragment`), writes the
generated Lean files of `lean/Serq/Gen/` (`generate`, Jinja templates in
`templates/`), and runs `exec_ref`, the Lean semantics transcribed into
Python.  `python -m leangen --help` lists the commands; docs/lean.md says
how they fit together.
"""

__version__ = "0.2.0"
GENERATOR = f"leangen {__version__}"
