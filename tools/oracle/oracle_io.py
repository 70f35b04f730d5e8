"""What every scheduler harness shares, whatever the engine (vLLM's, SGLang's):
stdout kept for the JSON alone, a scenario's validation helpers, the JSON
I/O, and batch / serve mode (one input per line in, one output per line out).
No engine is imported here; any Python 3.

Importing this module moves file descriptor 1 onto stderr, so that nothing an
engine, torch or a C extension prints can reach stdout; callers write their
JSON through ``emit`` (``OUT``, a duplicate of the original fd 1).
"""

from __future__ import annotations

import json
import os
import sys
import traceback

# Keep stdout clean: everything written to fd 1 from here on goes to stderr;
# the oracles print their JSON through OUT, a duplicate of the original fd 1.
sys.stdout.flush()
OUT = os.fdopen(os.dup(1), "w", encoding="utf-8")
os.dup2(2, 1)
sys.stdout = sys.stderr


class ScenarioError(ValueError):
    """A malformed or infeasible scenario / trace (reported without traceback)."""


# ---------------------------------------------------------------------------
# Validation helpers


def _int_field(obj: dict, key: str, where: str, *, minimum: int, default=None) -> int:
    if key not in obj:
        if default is None:
            raise ScenarioError(f"{where}: missing required field {key!r}")
        return default
    val = obj[key]
    if isinstance(val, bool) or not isinstance(val, int):
        raise ScenarioError(f"{where}: field {key!r} must be an integer, got {val!r}")
    if val < minimum:
        raise ScenarioError(f"{where}: field {key!r} must be >= {minimum}, got {val}")
    return val


def _bool_field(obj: dict, key: str, where: str, default: bool) -> bool:
    if key not in obj:
        return default
    val = obj[key]
    if not isinstance(val, bool):
        raise ScenarioError(f"{where}: field {key!r} must be true or false, got {val!r}")
    return val


def _check_keys(obj, allowed: set, where: str) -> None:
    if not isinstance(obj, dict):
        raise ScenarioError(f"{where}: expected a JSON object, got {type(obj).__name__}")
    unknown = sorted(set(obj) - allowed)
    if unknown:
        raise ScenarioError(
            f"{where}: unknown field(s) {unknown}; allowed: {sorted(allowed)}"
        )


def request_list(obj: dict, where: str, allowed: set, fields, nonempty: bool = False) -> list:
    """Validate ``obj["requests"]``: a list of objects with keys in
    ``allowed``, each field of ``fields`` ((key, minimum, default or None for
    required)) an integer; returns the parsed requests."""
    reqs = obj.get("requests")
    if not isinstance(reqs, list) or (nonempty and not reqs):
        raise ScenarioError(f"{where}: field 'requests' must be a {'non-empty ' if nonempty else ''}"
                            "list of objects")
    parsed = []
    for i, r in enumerate(reqs):
        w = f"{where}: requests[{i}]"
        _check_keys(r, allowed, w)
        parsed.append({key: _int_field(r, key, w, minimum=lo, default=dflt) for key, lo, dflt in fields})
    return parsed


# A shared prompt (a request's or a session's "prefix": {"id", "tokens"}): the
# same token ids for everything that names the id; each harness maps them.
PREFIX_KEYS = {"id", "tokens"}
MAX_PREFIXES = 20


def prefix_field(obj: dict, where: str, most, most_is: str):
    """``obj["prefix"]`` as (id, tokens), or None when absent: id below
    MAX_PREFIXES, tokens ≥ 1 and at most ``most`` (when it is a whole
    number; ``most_is`` says what it is)."""
    if "prefix" not in obj:
        return None
    w = f"{where}.prefix"
    _check_keys(obj["prefix"], PREFIX_KEYS, w)
    g = _int_field(obj["prefix"], "id", w, minimum=0)
    t = _int_field(obj["prefix"], "tokens", w, minimum=1)
    if g >= MAX_PREFIXES:
        raise ScenarioError(f"{w}: at most {MAX_PREFIXES} shared prompts (id < {MAX_PREFIXES})")
    if isinstance(most, int) and t > most:
        raise ScenarioError(f"{w}: {t} tokens, more than {most_is} ({most})")
    return g, t


# ---------------------------------------------------------------------------
# JSON I/O


def load_json_file(path: str, what: str):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except OSError as e:
        raise ScenarioError(f"cannot read this {what} file: {e.strerror}") from None
    except json.JSONDecodeError as e:
        raise ScenarioError(f"not valid JSON: {e}") from None


def emit(text: str) -> None:
    OUT.write(text + "\n")
    OUT.flush()


def fail(msg: str, code: int = 2) -> None:
    sys.stderr.write(f"error: {msg}\n")
    sys.stderr.flush()
    raise SystemExit(code)


def serve_lines(lines, source: str, handle) -> int:
    """One JSON input per line in, one compact JSON output per line out, in
    order (batch and serve modes).  A malformed or infeasible line gives
    {"error": ...} in its place and the rest go on; returns the exit status
    (1 if any line failed).  Blank lines produce no output line."""
    bad = 0
    for lineno, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as e:
                raise ScenarioError(f"not valid JSON: {e}") from None
            out = handle(obj)
        except ScenarioError as e:
            bad += 1
            sys.stderr.write(f"error: {source}:{lineno}: {e}\n")
            emit(json.dumps({"error": f"line {lineno}: {e}"}))
            continue
        except Exception as e:  # keep the batch going; report the crash
            bad += 1
            traceback.print_exc()
            emit(json.dumps({"error": f"line {lineno}: internal error: {e!r}"}))
            continue
        emit(json.dumps(out))
    return 1 if bad else 0


def input_lines(batch, serve: bool):
    """(lines, source) for --batch FILE or --serve (stdin, one line at a time)."""
    if serve:
        return (line.rstrip("\n") for line in iter(sys.stdin.readline, "")), "stdin"
    try:
        with open(batch, encoding="utf-8") as f:
            return f.read().splitlines(), batch
    except OSError as e:
        fail(f"cannot read {batch}: {e.strerror}")


def command_line(argv, description: str, noun: str, run, *, steps="add the per-step log", serve_note: str = "",
                 options=(), first=None) -> int:
    """A harness's command line: ``NOUN.json``, ``--batch IN.jsonl`` or
    ``--serve`` (one input per line in, one output per line out:
    ``serve_lines``), and ``--steps`` (its help ``steps``; none when None).
    ``run(obj, args, where)`` is the output for one input's JSON object, a
    bad one raising ScenarioError; ``where`` is the directory its relative
    paths are read from (the file's; for --batch and --serve the current
    one).  ``options``: more ``(flags, keywords)`` for argparse;
    ``first(args)``: run before the rest, an exit status to stop there (or
    None)."""
    import argparse
    from oracle_format import dumps_output
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument(noun, nargs="?", help=f"{noun} JSON file")
    ap.add_argument("--batch", metavar="IN.jsonl", help=f"one {noun} per line; prints one output per line")
    ap.add_argument("--serve", action="store_true",
                    help=f"read {noun}s from stdin one line at a time and answer each at once{serve_note}")
    if steps is not None:
        ap.add_argument("--steps", action="store_true", help=steps)
    for flags, keywords in options:
        ap.add_argument(*flags, **keywords)
    args = ap.parse_args(argv)
    if first is not None:
        code = first(args)
        if code is not None:
            return code
    path = getattr(args, noun)
    if (path is not None) + (args.batch is not None) + args.serve != 1:
        ap.error(f"give exactly one of {noun.upper()}.json, --batch IN.jsonl or --serve")
    if path is not None:
        try:
            out = run(load_json_file(path, noun), args, os.path.dirname(os.path.abspath(path)))
        except ScenarioError as e:
            fail(f"{path}: {e}")
        emit(dumps_output(out, one_line=False))
        return 0
    lines, source = input_lines(args.batch, args.serve)
    return serve_lines(lines, source, lambda obj: run(obj, args, os.getcwd()))
