"""The generated Lean files: what they say, computed here; how they look, in
the Jinja templates (`templates/*.lean.j2`, no logic: they only place the
strings and iterate the lists this module prepares).

* `lean/Serq/Gen/Oracle.lean`: for each `tools/oracle/<dir>/NAME.ir.json`
  with its vLLM output `NAME.out.json`, the program as a `Serq.Program` and
  the theorem that `Exec.runW` gives, request for request, what vLLM's real
  scheduler did (and `Exec.steps` its step count), proved by
  `decide +kernel`.  A statement the Python transcription of `Exec`
  (`exec_ref`) does not reproduce is written as a definition of the
  proposition, not as a theorem, and listed in `Oracle.unproved.txt`.
* `lean/Serq/Gen/Claims.lean`: each claim of a program inside the fragment,
  as a proposition about `Exec`: for a program with explicit sessions, on
  its one run (`Serq.Claims.check`); for one whose sessions arrive by a law,
  over the program's family of workloads and every prefix of each run
  (`Serq.Claims.inFamily`, `Serq.Claims.holdsAt`).  A claim without a proof
  in `lean/Serq/Thm/ClaimProofs.lean` is listed in `Claims.unproved.txt`.

A program outside the fragment stops both (`FAIL: outside the Lean
fragment: …`, nothing written), and neither writes over a file that it did
not write from the same inputs (its banner names the command).  Every
output is a function of the files read, byte for byte.
"""

from __future__ import annotations

import dataclasses
import glob
import hashlib
import os
import re
from dataclasses import dataclass

import jinja2

from serq.ir import model as M
from serq.ir import read

from . import GENERATOR, exec_ref, outputs
from .fragment import MAX_SESSIONS, Outside, law_term, translate, translate_claims, translate_with, workload
from .lterms import Session, lean, lean_program

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TEMPLATES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "templates")


class GenError(Exception):
    """A generation that cannot go on: the line to print (exit 1)."""


@dataclass
class Output:
    path: str       # relative to the lean/ directory
    text: str


def env() -> jinja2.Environment:
    return jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), undefined=jinja2.StrictUndefined,
                              keep_trailing_newline=True, trim_blocks=True, lstrip_blocks=True,
                              autoescape=False)


def rel(path: str) -> str:
    """A path as the banner names it: relative to the repository, with /."""
    p = os.path.relpath(os.path.abspath(path), ROOT)
    return p.replace(os.sep, "/")


def sha256(path: str) -> str:
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def comment(text: str) -> str:
    """Text safe inside a Lean comment (which `/-` would nest and `-/` end)."""
    return text.replace("/-", "/ -").replace("-/", "- /")


def ident(name: str) -> str:
    s = re.sub(r"[^A-Za-z0-9_]", "_", name)
    return s if s and not s[0].isdigit() else "_" + s


def fuel(ir: M.Program) -> int:
    """Events and inner steps enough for the run: the IR's horizon (a step
    count the scenario cannot reach) and a margin per session and turn."""
    n = 0
    turns = 0
    if type(ir.arrival) is M.ASessions:
        n = len(ir.arrival.sessions)
        turns = sum(len(s.turns or ()) for s in ir.arrival.sessions)
    return int(ir.horizon) + 4 * (n + turns) + 16


def source_name(ir: M.Program) -> str:
    return ir.files[0] if ir.files else "?"


# ---------------------------------------------------------------- the oracle

def oracle_files(oracle_dir: str) -> list[str]:
    """Every `<dir>/NAME.ir.json` under tools/oracle, sorted."""
    return sorted(glob.glob(os.path.join(oracle_dir, "*", "*.ir.json")))


def oracle_outputs(oracle_dir: str, command: str = "python -m leangen oracle") -> list[Output]:
    import json
    sources = []
    theorems = []
    unproved = []
    names: set[str] = set()
    files = oracle_files(oracle_dir)
    if not files:
        raise GenError(f"FAIL: no oracle IR file under {rel(oracle_dir)} (run `make oracle-ir`)")
    for path in files:
        base = path[: -len(".ir.json")]
        out_path = base + ".out.json"
        if not os.path.exists(out_path):
            raise GenError(f"FAIL: {rel(path)} has no vLLM output {rel(out_path)}")
        ir = read(path)
        try:
            prog = translate(ir, rel(path))
            w = workload(ir, rel(path))
        except Outside as e:
            raise GenError(e.line())
        if w[0] != "explicit":
            raise GenError(f"FAIL: {rel(path)}: its sessions arrive by a law ({law_text(w[1])}): an oracle "
                           "scenario runs explicit sessions")
        with open(out_path, encoding="utf-8") as f:
            out = json.load(f)
        kind = outputs.form(ir.observes)
        if kind == "generic":
            raise GenError(f"FAIL: {rel(path)} observes {', '.join(ir.observes)}: neither a request "
                           "scenario's (first, done) nor a trace's (sent, first, done)")
        stem = os.path.basename(base)
        name = ident(stem)
        if name in names:
            name = ident(os.path.basename(os.path.dirname(path)) + "_" + stem)
        names.add(name)
        sources.append({"sha": sha256(path), "path": comment(rel(path))})
        sources.append({"sha": sha256(out_path), "path": comment(rel(out_path))})
        f_ = fuel(ir)
        want_obs = outputs.expected(ir.observes, out)
        want_steps = out["steps"]
        m = exec_ref.run(prog, f_)
        if not exec_ref.complete(prog, m):
            raise GenError(f"FAIL: {rel(path)}: the run does not end within fuel {f_}")
        got_obs = exec_ref.observations(prog, m)
        got_steps = exec_ref.steps(prog, f_)
        prog_name = f"prog_{name}"
        thm = f"vllm_{name}"
        scen = os.path.relpath(base + ".json", ROOT).replace(os.sep, "/")
        obs_names = ", ".join(ir.observes)
        if kind == "scenario":
            lhs = f"Serq.Exec.runW {prog_name} {f_}"
            rhs = lean((want_obs, out["preemptions"]))
            agrees = got_obs == want_obs and m.preempts == out["preemptions"]
            what = f"per request its {obs_names} (a token sampled in step k exists at time k + 1), " \
                   "and the number of preemptions"
        else:
            lhs = f"(Serq.Exec.runW {prog_name} {f_}).1"
            rhs = lean(want_obs)
            agrees = got_obs == want_obs
            what = f"per session and turn its {obs_names}"
        steps_ok = got_steps == want_steps
        vllm = out.get("vllm", "?")
        doc = (f"vLLM {vllm}'s scheduler on {scen} ({rel(out_path)}): {what}.")
        steps_doc = f"vLLM {vllm}'s step count on {scen}: the last token's time, plus the call that flushes it."
        t = {
            "prog": prog_name,
            "prog_doc": comment(f"The program of {rel(path)} (compiled from {source_name(ir)})."),
            "term": lean_program(prog),
            "doc": comment(doc),
            "keyword": f"theorem {thm} :" if agrees else f"def {thm}_stated : Prop :=",
            "statement": f"{lhs} =\n      {rhs}",
            "proof": " := by\n  decide +kernel" if agrees else "",
            "steps_doc": comment(steps_doc),
            "steps_keyword": f"theorem {thm}_steps :" if steps_ok else f"def {thm}_steps_stated : Prop :=",
            "steps_statement": f"Serq.Exec.steps {prog_name} {f_} = {want_steps}",
            "steps_proof": " := by\n  decide +kernel" if steps_ok else "",
        }
        if not agrees:
            unproved.append(f"{thm}_stated  {rel(path)}: exec_ref gives {lean((got_obs, m.preempts))}")
        if not steps_ok:
            unproved.append(f"{thm}_steps_stated  {rel(path)}: exec_ref gives {got_steps} steps")
        theorems.append(t)
    e = env()
    banner = banner_text(e, command, "Files read", sources)
    lean_text = e.get_template("oracle.lean.j2").render(banner=banner, theorems=theorems)
    txt = e.get_template("unproved.txt.j2").render(
        what="oracle statements of Serq/Gen/Oracle.lean that Exec (by exec_ref) does not reproduce, "
             "stated and not proved", command=command, items=unproved)
    return [Output("Serq/Gen/Oracle.lean", lean_text), Output("Serq/Gen/Oracle.unproved.txt", txt)]


def banner_text(e: jinja2.Environment, command: str, label: str, sources: list) -> str:
    return e.get_template("banner.lean.j2").render(generator=GENERATOR, ir_version=M.IR_VERSION,
                                                   command=command, label=label,
                                                   sources=sources).rstrip("\n")


# ---------------------------------------------------------------- claims

def claim_files() -> list[str]:
    """The programs whose claims are stated: every example's IR, as
    `make golden` writes it (tests/golden/ir/)."""
    return sorted(glob.glob(os.path.join(ROOT, "tests", "golden", "ir", "*.ir.json")))


def proved_claims(lean_dir: str) -> set[str]:
    """The claims `Serq/Thm/ClaimProofs.lean` proves: its theorems, named
    after the claims' propositions."""
    path = os.path.join(lean_dir, "Serq", "Thm", "ClaimProofs.lean")
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError:
        return set()
    from .audit import strip_comments
    return set(re.findall(r"^\s*theorem\s+([A-Za-z_][A-Za-z0-9_']*)", strip_comments(text), re.M))


FORMS = {"everyIter": "every iteration of the engine", "someIter": "some iteration of the engine",
         "atEnd": "at end"}
VERDICT = {True: "holds", False: "does not hold"}
SAMPLE = 8      # the sessions of the sample workload a family claim's comment reports on


def law_text(law: tuple) -> str:
    if law[0] == "batch":
        return "all at time 0, arrive batch(…)"
    if law[0] == "renewal":
        return f"session i at (i + 1) · {law[1]}, arrive renewal({law[1]})"
    return "at any times, in order, arrive poisson(…)"


def sample_workload(ir: M.Program, prog, law: tuple, slots: list) -> list:
    """A workload of the family: the program's own first sessions (at most
    SAMPLE, the batch's count when smaller), each presetting the values its
    init block gives it, arriving as the law says (under poisson, every
    1 / rate, rounded)."""
    n = SAMPLE
    if type(ir.arrival) is M.ABatch:
        n = min(n, ir.arrival.n)
    gap = {"batch": 0, "renewal": law[1] if law[0] == "renewal" else 0,
           "poisson": max(1, round(1.0 / ir.arrival.rate)) if law[0] == "poisson" else 0}[law[0]]
    out = []
    m0 = exec_ref.start(prog)
    for i in range(n):
        arrive = (i + 1) * gap
        a0 = exec_ref.lmod(exec_ref.zeros(prog.nattrs), 0, lambda _: i)
        a = a0 if prog.init[0] == "none" else \
            exec_ref.initBlock(dataclasses.replace(m0, now=arrive), i, a0, prog.blocks[prog.init[1]])
        out.append(Session(arrive, [(k, a[k]) for k in slots], [], False))
    return out


def complete_run(prog) -> int:
    """Events enough for the run to complete (the run's last event taken)."""
    n = 1024
    while not exec_ref.complete(prog, exec_ref.runN(prog, n)):
        n *= 2
        if n > 1 << 22:
            raise GenError("FAIL: a sample workload's run does not complete")
    return n


def claims_command(paths: list[str]) -> str:
    """The command that writes the claims of ``paths`` (none: the golden IR),
    as the files it writes name it."""
    return "python -m leangen claims" + "".join(f" {rel(p)}" for p in paths)


def claims_outputs(paths: list[str], lean_dir: str, command: str = "python -m leangen claims") -> list[Output]:
    sources = []
    programs = []
    unproved = []
    proved = proved_claims(lean_dir)
    names: set[str] = set()
    for path in paths:
        ir = read(path)
        if not ir.claims:
            continue
        sources.append({"sha": sha256(path), "path": comment(rel(path))})
        try:
            prog = translate(ir, rel(path))
            claims = translate_claims(ir, rel(path))
            w = workload(ir, rel(path))
        except Outside as e:     # nothing is stated, and nothing written
            raise GenError(e.line())
        stem = ident(os.path.basename(path)[: -len(".ir.json")])
        while stem in names:
            stem += "_"
        names.add(stem)
        prog_name = f"prog_{stem}"
        items = []
        families = []
        if w[0] == "explicit":
            f_ = fuel(ir)
            params = ""
            term = lean_program(prog)
        else:
            law, slots = w[1], w[2]
            fam = f"family_{stem}"
            params = " (ws : List Session)"
            term = lean_program(prog, "ws")
            attrs = ", ".join(ir.attrs[k] for k in slots)
            families.append({
                "name": fam,
                "doc": comment(f"The workloads of the claims of {rel(path)}: at most {MAX_SESSIONS} sessions, "
                               + (f"each presetting {attrs} (the attributes its init block sets) to any natural, "
                                  if slots else "")
                               + f"arriving {law_text(law)}."),
                "term": f"Serq.Claims.inFamily {law_term(law)} {lean(slots)} {MAX_SESSIONS} ws",
            })
            sample = sample_workload(ir, prog, law, slots)
            sprog = translate_with(ir, sample, rel(path))
            n_all = complete_run(sprog)
        for (cname, claim), decl in zip(claims, ir.claims):
            name = f"{stem}_{ident(cname)}"
            has_proof = name in proved
            given = "" if claim.given[0] == "none" else ", given its `given`"
            proof = "Serq/Thm/ClaimProofs.lean." if has_proof else "none (Claims.unproved.txt)."
            if w[0] == "explicit":
                verdict = VERDICT[exec_ref.check(prog, f_, claim)]
                doc = f"claim `{cname}` ({ir.loc_str(decl.loc)}): {FORMS[claim.kind]}{given}.  " \
                      f"exec_ref: {verdict}.  Proof: {proof}"
                statement = f"Serq.Claims.check {prog_name} {f_} {lean(claim)} = true"
                note = f"exec_ref: {verdict}"
            else:
                ok = exec_ref.givenOk(sprog, claim.given) and exec_ref.holdsAt(sprog, claim, n_all)
                words = ("witnessed", "not witnessed") if claim.kind == "someIter" else ("holds", "does not hold")
                verdict = words[0 if ok else 1] if exec_ref.givenOk(sprog, claim.given) else "out of scope"
                sample_doc = f"exec_ref on {len(sample)} sessions of the program's own workload " \
                             f"({family_sample_text(law)})"
                doc = f"claim `{cname}` ({ir.loc_str(decl.loc)}): {FORMS[claim.kind]}{given}, " + \
                      ("for some workload of the family, after some number of events of its run"
                       if claim.kind == "someIter" else
                       "for every workload of the family, after every number of events of its run") + \
                      f".  {sample_doc}: {verdict}.  Proof: {proof}"
                p_ws = f"({prog_name} ws)"
                g = f"Serq.Claims.givenOk {p_ws} {lean(claim.given)} = true"
                h = f"Serq.Claims.holdsAt {p_ws} {lean(claim)} n = true"
                if claim.kind == "someIter":
                    statement = f"∃ ws, {fam} ws = true ∧\n    {g} ∧\n    ∃ n, {h}"
                else:
                    statement = f"∀ ws, {fam} ws = true →\n    {g} →\n    ∀ n, {h}"
                note = f"{sample_doc}: {verdict}"
            items.append({"name": name, "doc": comment(doc), "statement": statement})
            if not has_proof:
                unproved.append(f"{name}  claim `{cname}` of {rel(path)} ({ir.loc_str(decl.loc)}); {note}")
        programs.append({"name": prog_name, "params": params,
                         "doc": comment(f"The program of {rel(path)} (compiled from {source_name(ir)})"
                                        + ("." if w[0] == "explicit" else ", over a workload `ws`.")),
                         "term": term, "families": families, "claims": items})
    e = env()
    banner = banner_text(e, command, "The IR files read that have claims", sources)
    lean_text = e.get_template("claims.lean.j2").render(banner=banner, programs=programs)
    txt = e.get_template("unproved.txt.j2").render(
        what="claims of Serq/Gen/Claims.lean without a proof in Serq/Thm/ClaimProofs.lean",
        command=command, items=unproved)
    return [Output("Serq/Gen/Claims.lean", lean_text), Output("Serq/Gen/Claims.unproved.txt", txt)]


def family_sample_text(law: tuple) -> str:
    if law[0] == "poisson":
        return "the init's values, one arrival every 1 / rate"
    return "the init's values, arriving as the law says"


# ---------------------------------------------------------------- write or compare

_WRITTEN_BY = re.compile(r"^\s*(?:Written by|# GENERATED by) `([^`]*)`", re.M)


def writer_of(text: str):
    """The command a generated file says wrote it, or None."""
    m = _WRITTEN_BY.search(text[:2000])
    return m.group(1) if m else None


def write(outs: list[Output], lean_dir: str, command: str) -> None:
    """Write every output, or (a file there that ``command`` did not write:
    another command's, from other inputs, or no generated file) none."""
    from serq.files import CHECKED, write_file
    for o in outs:
        path = os.path.join(lean_dir, o.path)
        try:
            with open(path, encoding="utf-8", errors="replace") as f:
                old = f.read()
        except OSError:
            continue
        by = writer_of(old)
        if by is None:
            raise GenError(f"FAIL: {rel(path)} is not a generated file: nothing written (--lean-dir DIR "
                           "writes elsewhere)")
        if by != command:
            raise GenError(f"FAIL: {rel(path)} was written by `{by}`, not by `{command}`: nothing written "
                           "(--lean-dir DIR writes elsewhere)")
    for o in outs:
        path = os.path.join(lean_dir, o.path)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        write_file(path, o.text, what="", mark=CHECKED)


def stale(outs: list[Output], lean_dir: str) -> list[str]:
    """The files whose text is not what the generator writes now."""
    bad = []
    for o in outs:
        path = os.path.join(lean_dir, o.path)
        try:
            with open(path, encoding="utf-8", newline="") as f:
                old = f.read()
        except OSError:
            old = None
        if old != o.text:
            bad.append(rel(path))
    return bad
