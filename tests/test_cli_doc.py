"""docs/cli.md holds every command and option click knows, and no other."""

import os
import re

import click

from serq.cli import main

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OPTION = re.compile(r"(?<![\w-])(--[a-z][a-z-]*)")


def commands() -> dict:
    """`serq …` path -> its options (every spelling, without --help)."""
    out = {}
    ctx = click.Context(main)

    def walk(cmd, path):
        out[path] = {o for p in cmd.params if isinstance(p, click.Option)
                     for o in p.opts + p.secondary_opts if o.startswith("--") and o != "--help"}
        if isinstance(cmd, click.Group):
            for name in cmd.list_commands(ctx):
                walk(cmd.get_command(ctx, name), f"{path} {name}")
    walk(main, "serq")
    return out


def page() -> dict:
    """`serq …` -> the page's text about it: a `## serq X` section, or, for
    a group's commands, the bullet that starts with the command."""
    with open(os.path.join(ROOT, "docs", "cli.md"), encoding="utf-8") as f:
        text = f.read()
    head, *sections = re.split(r"^## ", text, flags=re.M)
    out = {"serq": head}
    for s in sections:
        title, body = s.split("\n", 1)
        if title.startswith("serq "):
            for m in re.finditer(r"^- `(serq [a-z-]+ [a-z-]+)(?: [A-Z]+)?`(.*?)(?=^- |\Z)", body, flags=re.M | re.S):
                out[m.group(1)] = m.group(2)
                body = body.replace(m.group(0), "")
            out[title] = body
        else:
            out["serq"] += s
    return out


def test_every_command_has_its_place_and_every_option_is_there():
    doc = page()
    for path, opts in commands().items():
        assert path in doc, f"docs/cli.md says nothing of `{path}`"
        missing = sorted(opts - set(OPTION.findall(doc[path])))
        assert not missing, f"docs/cli.md, {path}: {missing}"


def test_the_page_names_no_command_or_option_click_does_not_know():
    cmds = commands()
    doc = page()
    assert set(doc) <= set(cmds), sorted(set(doc) - set(cmds))
    known = set().union(*cmds.values()) | {"--help"}
    for path, text in doc.items():
        named = set(OPTION.findall(text))
        # a command's own text names its options only; the page's head, any command's
        allowed = known if path == "serq" else cmds[path]
        assert named <= allowed, (path, sorted(named - allowed))
    with open(os.path.join(ROOT, "docs", "cli.md"), encoding="utf-8") as f:
        for name in re.findall(r"`(serq [a-z][a-z-]*(?: [a-z][a-z-]*)?)", f.read()):
            words = name.split()
            assert " ".join(words[:2]) in cmds, name
            assert len(words) < 3 or name in cmds or words[2] not in [c.split()[-1] for c in cmds], name
