"""tools/check_citations.py: a citation of vLLM's source is held to the file,
its lines and an identifier written beside it."""

import os
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tools"))
import check_citations as C  # noqa: E402


@pytest.fixture
def tree(tmp_path):
    v = tmp_path / "vllm"
    (v / "v1" / "core" / "sched").mkdir(parents=True)
    (v / "config").mkdir()
    (v / "v1" / "core" / "sched" / "scheduler.py").write_text(
        "def schedule(self):\n"
        "    token_budget = self.max_num_scheduled_tokens\n"
        "    preempted_req = self.running[-1]\n"
        "    if not preempted_reqs:\n"
        "        pass\n")
    (v / "config" / "scheduler.py").write_text("policy: str = 'fcfs'\nlong_prefill_token_threshold: int = 0\n")
    return C.Tree(str(v))


def problems(tree, tmp_path, text):
    f = tmp_path / "doc.md"
    f.write_text(text)
    return C.check(tree, [str(f)], False)


def test_a_right_citation_passes_and_a_bare_name_means_the_schedulers_file(tree, tmp_path):
    checked, skipped, bad = problems(tree, tmp_path, "the victim `self.running[-1]` (`scheduler.py:3`)\n")
    assert (checked, skipped, bad) == (1, 0, [])
    assert tree.resolve("scheduler.py") == "v1/core/sched/scheduler.py"
    assert tree.resolve("config/scheduler.py") == "config/scheduler.py"


def test_lines_past_the_end_are_wrong(tree, tmp_path):
    _, _, bad = problems(tree, tmp_path, "`token_budget` (scheduler.py:2-9)\n")
    assert bad == [f"{tmp_path.name}/doc.md:1: scheduler.py:2-9: vllm/v1/core/sched/scheduler.py has 6 lines"
                   .replace(f"{tmp_path.name}/", os.path.relpath(str(tmp_path), C.ROOT) + "/")]


def test_an_identifier_that_is_not_in_the_lines_is_wrong(tree, tmp_path):
    _, _, bad = problems(tree, tmp_path, "reads `long_prefill_token_threshold` (scheduler.py:1)\n")
    assert len(bad) == 1 and bad[0].endswith(
        "none of ['long_prefill_token_threshold'] is in vllm/v1/core/sched/scheduler.py:1-1")
    _, _, bad = problems(tree, tmp_path, "the threshold (scheduler.py:1)\n")
    assert bad[0].endswith("names no identifier (say what the lines hold)")


def test_a_bare_range_cites_the_file_before_it_in_the_paragraph(tree, tmp_path):
    text = "`policy` (config/scheduler.py:1), and `preempted_reqs` (`:4`)\n\nalone (`:4`)\n"
    checked, _, bad = problems(tree, tmp_path, text)
    # `:4` of config/scheduler.py is past its end; the one after the blank line cites nothing
    assert checked == 2 and len(bad) == 1 and "config/scheduler.py:4" in bad[0]


def test_another_projects_files_are_not_checked(tree, tmp_path):
    checked, skipped, bad = problems(tree, tmp_path, "`x_y` (managers/schedule_policy.py:12)\n")
    assert (checked, skipped, bad) == (0, 1, [])


VLLM = os.path.join(".venv-vllm", "bin", "python")


@pytest.mark.skipif(not os.path.exists(VLLM), reason="needs .venv-vllm (make vllm-env)")
def test_the_repositorys_citations_hold_against_vllm_0_33_0():
    out = subprocess.run([sys.executable, "tools/check_citations.py"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert ", 0 wrong" in out.stdout
