"""The readers of other tools' files refuse a bad bundle with a located
error that names the file and the line, never a traceback; a missing bundle
is said plainly; a refused input writes nothing."""

import json
import os
import subprocess
import sys

import pytest

from serq.calib import profile as PF, runs
from serq.diag import SerqError
from serq.link import compile_file

from .synthetic import write_bundle

TRUTH = {"dflat": 3.5e-4, "dlo": 4e-7, "dfix": 2e-4, "dtok": 1.1e-6, "kd": 2.8e-9, "km": 3.8e-9,
         "kmn": 2e-11, "kp": 1.6e-8, "at": 5e-11, "head": 3e-6}


def serq(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "serq.cli", *args], capture_output=True, text=True, cwd=cwd)


@pytest.fixture()
def profile(tmp_path):
    return write_bundle(str(tmp_path), compile_file("examples/replay/vllm_measured.sq", horizon=1.0), TRUTH)


def one(e) -> str:
    assert len(e.value.diagnostics) == 1
    return e.value.diagnostics[0].render()


def rewrite_line(path, n, text):
    lines = open(path).read().split("\n")
    lines[n - 1] = text
    open(path, "w").write("\n".join(lines))


def test_a_cell_that_is_not_a_number_is_named_by_file_and_line(profile):
    path = os.path.join(profile, "attention.csv")
    rewrite_line(path, 3, "0,0,1,32,fast")
    with pytest.raises(SerqError) as e:
        PF.read(profile)
    assert one(e).split("\n")[0] == f"{path}:3:1: error[E981]: `time_us` is 'fast', not a number"


def test_a_row_with_a_missing_cell_and_a_wrong_header(profile):
    path = os.path.join(profile, "dense.csv")
    rewrite_line(path, 4, "qkv_proj,1")
    with pytest.raises(SerqError) as e:
        PF.read(profile)
    assert one(e).split("\n")[0] == f"{path}:4:1: error[E981]: 2 cells where the header has 3"
    rewrite_line(path, 1, "layer,tokens,microseconds")
    with pytest.raises(SerqError) as e:
        PF.read(profile)
    assert one(e).split("\n")[0] == (f"{path}:1:1: error[E981]: the header has no column `time_us` and an "
                                     "unknown column `microseconds`")


def test_malformed_yaml_is_located(profile):
    path = os.path.join(os.path.dirname(profile), "meta.yaml")
    rewrite_line(path, 4, "hardware: [SYNTH")
    with pytest.raises(SerqError) as e:
        PF.read(profile)
    first = one(e).split("\n")[0]
    assert first.startswith(f"{path}:5:") and "error[E981]: not YAML: " in first, first


LAUGHS = "".join(f"{c}: &{c} [{', '.join([f'*{p}' if p else 'lol'] * 9)}]\n"
                 for p, c in zip(["", *"abcdefgh"], "abcdefghi"))


def test_a_value_that_nests_without_end_is_shown_short(profile):
    """A meta.yaml whose `model` is an alias nested nine deep (9^9 strings, a few
    lines of YAML) made `serq calibrate` print its whole repr, which never
    ended; a cell of a long line was shown whole.  A value is shown cut short."""
    path = os.path.join(os.path.dirname(profile), "meta.yaml")
    with open(path, encoding="utf-8") as f:
        meta = f.read()
    with open(path, "w", encoding="utf-8") as f:
        f.write(LAUGHS + meta.replace("model: meta-llama/Llama-3.1-8B", "model: *i"))
    with pytest.raises(SerqError) as e:
        PF.read(profile)
    assert one(e) == (f"{path}:15:1: error[E981]: meta.yaml's `model` is [[[...], [...], [...], [...], ...], "
                      "[[...], [...], [...], [...], ...], [[...], [...], [...], [...], ...], [[...], [...], [...], "
                      "[...], ...], ...], not a name\n   |\n15 | model: *i\n   | ^")
    with open(path, "w", encoding="utf-8") as f:
        f.write(meta)
    csv_path = os.path.join(profile, "attention.csv")
    rewrite_line(csv_path, 3, "0,0,1,32," + "9" * 100 + "x")
    with pytest.raises(SerqError) as e:
        PF.read(profile)
    assert one(e).split("\n")[0] == (f"{csv_path}:3:1: error[E981]: `time_us` is '{'9' * 27}...{'9' * 27}x', "
                                     "not a number")


def test_a_profile_folder_is_named_for_its_tp_degree(tmp_path):
    os.makedirs(tmp_path / "bf16" / "other")
    with pytest.raises(SerqError) as e:
        PF.read(str(tmp_path / "bf16" / "other"))
    assert "is not named tp<N>" in one(e)


def bundle(root, n=2):
    """A measured run of ``n`` requests in LLMServingSim's layout."""
    d = root / "bench" / "examples" / "GPU" / "M" / "vllm"
    d.mkdir(parents=True)
    (root / "workloads").mkdir()
    with open(root / "workloads" / "w.jsonl", "w") as f:
        for i in range(n):
            f.write(json.dumps({"input_toks": 3, "output_toks": 2, "arrival_time_ns": i * 1e8,
                                "input_tok_ids": [1, 2, 3 + i]}) + "\n")
    meta = {"model": "meta-llama/Llama-3.1-8B", "vllm_version": "0.19.0", "dataset_path": "workloads/w.jsonl",
            "engine_kwargs": {"tensor_parallel_size": 1, "max_num_seqs": 4, "max_num_batched_tokens": 64},
            "kv_cache": {"num_gpu_blocks": 100, "block_size": 16}}
    (d / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")
    with open(d / "requests.jsonl", "w") as f:
        for i in range(n):
            t = 10.0 + i * 0.1
            f.write(json.dumps({"request_id": f"bench-{i}", "input_toks": 3, "output_toks": 2, "arrival_time": t,
                                "queued_ts": t, "scheduled_ts": t, "first_token_ts": t + 0.01,
                                "last_token_ts": t + 0.02}) + "\n")
    return str(d.parent)


def test_a_run_reads_whole_and_its_workload_is_found_in_its_repository(tmp_path):
    r = runs.read(bundle(tmp_path))
    assert [q.index for q in r.requests] == [0, 1] and r.workload[1].tokens == [1, 2, 4]
    assert r.workload[1].arrival == pytest.approx(0.1) and r.peer is None


def test_a_workload_that_is_not_a_file_is_said_to_be_what_it_is(tmp_path):
    """A dataset_path naming a directory (or a device) was said not to be in
    the repository at all."""
    b = bundle(tmp_path)
    w = tmp_path / "workloads" / "w.jsonl"
    w.unlink()
    w.mkdir()
    meta = os.path.join(b, "vllm", "meta.json")
    with pytest.raises(SerqError) as e:
        runs.read(b)
    assert one(e) == (f"{meta}:4:1: error[E982]: the run replayed workloads/w.jsonl, and {w} is a directory, "
                      'not a file\n  |\n4 |  "dataset_path": "workloads/w.jsonl",\n  | ^\n'
                      "  = help: give the workload: --workload FILE.jsonl")
    w.rmdir()
    with pytest.raises(SerqError) as e:
        runs.read(b)
    assert "which is not in the repository the run is in" in one(e)


def test_malformed_json_and_json_lines_are_located(tmp_path):
    b = bundle(tmp_path)
    path = os.path.join(b, "vllm", "requests.jsonl")
    rewrite_line(path, 2, '{"request_id": "bench-1", "input_toks": 3,')
    with pytest.raises(SerqError) as e:
        runs.read(b)
    assert one(e).split("\n")[0].startswith(f"{path}:2:") and "error[E981]: not JSON" in one(e)
    meta = os.path.join(b, "vllm", "meta.json")
    rewrite_line(meta, 3, '"vllm_version": 0.19,')
    with pytest.raises(SerqError) as e:
        runs.read(b)
    assert one(e).split("\n")[0] == f'{meta}:3:1: error[E981]: `vllm_version` is 0.19, not a string'


def test_a_run_whose_requests_disagree_with_its_workload(tmp_path):
    b = bundle(tmp_path)
    path = os.path.join(b, "vllm", "requests.jsonl")
    rewrite_line(path, 2, json.dumps({"request_id": "bench-1", "input_toks": 4, "output_toks": 2, "arrival_time": 1,
                                      "queued_ts": 1, "scheduled_ts": 1, "first_token_ts": 2, "last_token_ts": 3}))
    with pytest.raises(SerqError) as e:
        runs.read(b)
    assert one(e).split("\n")[0] == (f"{path}:2:1: error[E982]: bench-1 has 4 + 2 tokens, and line 2 of the "
                                     f"workload 3 + 2")


def test_the_commands_on_a_missing_bundle_say_so_and_write_nothing(tmp_path):
    out = tmp_path / "x.sq"
    r = serq("calibrate", str(tmp_path / "nope" / "tp1"), "--out", str(out))
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert r.stderr.split("\n")[0] == f"error[E980]: the profile folder {tmp_path / 'nope' / 'tp1'} does not exist"
    assert not out.exists()
    r = serq("measured", str(tmp_path / "nope"))
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert r.stderr.split("\n")[0] == f"error[E980]: the measured run {tmp_path / 'nope'} does not exist"


def test_a_file_that_is_a_directory_or_a_device_says_what_it_is(tmp_path):
    """`serq measured B --workload /dev/null` said `workload /dev/null is not what it
    should be`; what is at the path is now named."""
    b = bundle(tmp_path)
    meta = os.path.join(b, "vllm", "meta.json")
    os.rename(meta, meta + ".x")
    os.mkdir(meta)
    with pytest.raises(SerqError) as e:
        runs.read(b)
    assert e.value.diagnostics[0].message == f"the run's meta.json {meta} is a directory, not a file"
    os.rmdir(meta)
    os.rename(meta + ".x", meta)
    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(SerqError) as e:
        runs.read(b, workload=str(tmp_path / "fifo"))
    assert e.value.diagnostics[0].message == f"workload {tmp_path / 'fifo'} is a pipe, not a file"
    with pytest.raises(SerqError) as e:
        PF.read(meta)
    assert e.value.diagnostics[0].message == f"the profile folder {meta} is a file, not a directory"


def test_the_cli_prints_a_bad_file_with_its_line_and_caret(profile, tmp_path):
    path = os.path.join(profile, "per_sequence.csv")
    rewrite_line(path, 2, "lm_head,one,700")
    out = tmp_path / "x.sq"
    r = serq("calibrate", profile, "--out", str(out))
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert r.stderr.split("\n")[:4] == [f"{path}:2:1: error[E981]: `sequences` is 'one', not a number", "  |",
                                        "2 | lm_head,one,700", "  | ^"]
    assert not out.exists()


def test_a_request_is_queued_at_the_first_iteration_that_starts_at_or_after_its_arrival():
    from serq.calib.replay import pickups
    # iterations start at 0, 0.5, 1 and 3; an arrival after the last keeps
    # its time (the engine idle: it is taken at once)
    assert pickups([0.0, 0.2, 0.5, 0.7, 2.0, 3.5], [1.0, 0.0, 3.0, 0.5]) == [0.0, 0.5, 0.5, 1.0, 3.0, 3.5]


def test_a_replay_that_does_not_finish_says_why(tmp_path):
    """`serq measured … --set gap=1e300` (an iteration of 10^300 s) said the requests
    need more KV than the engine has; the help says what the replay found: its
    clock reached its end with the iterations too long, or the KV pool refused
    the requests larger than it."""
    b = bundle(tmp_path)
    r = serq("measured", b, "--set", "gap=1e300", "--summary-only")
    assert (r.returncode, r.stdout, r.stderr) == (1, "", (
        "error[E982]: the replay did not finish 2 of 2 requests (the first: bench-0)\n"
        "  = help: the replay's clock reached its end, 36001 s, before they finished (2 iterations began, the "
        "last at 0 s): the program's iterations are too long for the run, its cost's constants (as given with "
        "--set, --tune or --instance, or the program's own) make them so\n"))
    r = serq("measured", b, "--set", "bs=1", "--set", "blocks=2", "--summary-only")
    assert (r.returncode, r.stdout, r.stderr) == (1, "", (
        "error[E982]: the replay did not finish 2 of 2 requests (the first: bench-0)\n"
        "  = help: the KV pool, of 2 tokens, refused 2 requests larger than it: the engine needs more KV blocks "
        "(blocks, bs)\n"))
