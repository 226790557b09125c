"""``-j N`` gives exactly the serial output, in the same order; the progress bar only on terminals."""
from __future__ import annotations

import importlib
import io
import multiprocessing
import os
import subprocess
import sys
from pathlib import Path

import pytest

from dralint import engine, parallel
from dralint.engine import split
from dralint.cli import main
from dralint.progress import ProgressBar, worth_showing

from conftest import REPO

CLAIM_USING = """\
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata:
  name: uses-{i}
  namespace: default
spec:
  devices:
    requests:
    - name: gpu
      exactly:
        deviceClassName: class-{i}.example.com
        count: {count}
"""
CLASS = "apiVersion: resource.k8s.io/v1\nkind: DeviceClass\nmetadata:\n  name: class-{i}.example.com\nspec: {{}}\n"


def run(*args: str) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(["--no-config", *args], stdout=out, stderr=err)
    return code, out.getvalue()


def cross_file_tree(root: Path, n: int = 12) -> Path:
    """Claims in one folder, the classes they name in another: references cross files and workers."""
    (root / "claims").mkdir(parents=True)
    (root / "classes").mkdir()
    for i in range(n):
        (root / "claims" / f"claim-{i:02}.yaml").write_text(CLAIM_USING.format(i=i, count=-1 if i % 3 == 0 else 1))
        if i % 2:  # every other class is missing: a reference finding that only the whole input can decide
            (root / "classes" / f"class-{i:02}.yaml").write_text(CLASS.format(i=i))
    (root / "broken.yaml").write_text("a: [\n")
    return root


@pytest.mark.parametrize("fmt", ["json", "text", "sarif"])
def test_parallel_equals_serial_on_cross_file_input(tmp_path, fmt):
    tree = str(cross_file_tree(tmp_path))
    serial = run("--format", fmt, tree)
    assert run("--format", fmt, "-j", "3", tree) == serial
    assert run("--format", fmt, "-j", "0", tree) == serial


def test_parallel_equals_serial_on_examples_and_real_world_manifests(shared):
    paths = [str(REPO / "examples"), str(shared / "realworld")]
    serial = run("--format", "json", *paths)
    assert run("--format", "json", "-j", "2", *paths) == serial


def test_parallel_reads_stdin_in_place(tmp_path):
    tree = cross_file_tree(tmp_path)
    text = (tree / "claims" / "claim-00.yaml").read_text()
    args = [sys.executable, "-m", "dralint", "--no-config", "--format", "json", str(tree / "claims"), "-"]
    serial = subprocess.run(args, input=text, capture_output=True, text=True)
    parallel = subprocess.run(args + ["-j", "2"], input=text, capture_output=True, text=True)
    assert parallel.stdout == serial.stdout and '"<stdin>"' in serial.stdout


def test_negative_jobs_is_a_usage_error(tmp_path):
    assert run("-j", "-1", str(tmp_path))[0] == 2


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_bar_only_on_a_terminal_and_for_large_input(tmp_path):
    small = [str(tmp_path / f"{i}.yaml") for i in range(3)]
    many = [str(tmp_path / f"{i}.yaml") for i in range(60)]
    assert not worth_showing(many, io.StringIO())
    assert not worth_showing(small, Terminal())
    assert worth_showing(many, Terminal())
    big = tmp_path / "big.yaml"
    big.write_text("#" * (5 * 1024 * 1024))
    assert worth_showing([str(big)], Terminal())


def test_progress_bar_draws_and_erases():
    stream = Terminal()
    bar = ProgressBar(stream, 4)
    bar.update(1)
    bar.update(4, "checking")
    bar.close()
    text = stream.getvalue()
    assert "1/4 files  reading" in text and "[" + "#" * 30 + "] 4/4 files  checking" in text
    assert text.endswith("\r\033[K")


@pytest.mark.slow
def test_parallel_equals_serial_on_a_generated_corpus(shared, tmp_path):
    subprocess.run([sys.executable, str(shared / "bench" / "gen_corpus.py"), "--docs", "1500", "--files", "30",
                    "--out", str(tmp_path), "--seed", "7"], check=True, capture_output=True)
    # Feasibility runs once in this process whatever -j says, under a time budget, so which claims
    # it reaches depends on the machine's speed; the comparison is about the work -j spreads.
    serial = run("--format", "json", "--ignore", "DRA7", str(tmp_path))
    assert run("--format", "json", "--ignore", "DRA7", "-j", "2", str(tmp_path)) == serial


def test_processes_equal_one_process_on_real_world_files(shared, monkeypatch):
    # Real-world files are small: let every byte be worth a worker, and deal objects one by one.
    monkeypatch.setattr(parallel, "BYTES_PER_WORKER", 1)
    monkeypatch.setattr(split, "_SHARE_RUN", 1)
    paths = [str(REPO / "examples"), str(shared / "realworld")]
    serial = run("--format", "json", "-j", "1", *paths)
    assert run("--format", "json", "-j", "3", *paths) == serial


def test_a_worker_that_dies_has_its_objects_judged_here(tmp_path, monkeypatch):
    tree = str(cross_file_tree(tmp_path))
    serial = run("--format", "json", "-j", "1", tree)
    monkeypatch.setattr(parallel, "BYTES_PER_WORKER", 1)
    monkeypatch.setattr(split, "_SHARE_RUN", 1)
    monkeypatch.setattr(parallel, "_worker", lambda *args: os._exit(3))
    assert run("--format", "json", "-j", "3", tree) == serial


def _worker_takes_every_run(monkeypatch, then):
    """The worker takes every run of objects, then returns ``then(runs)``; the main process takes
    runs only after it (an event, not a race), so it is left none."""
    taken = multiprocessing.get_context("fork").Event()

    def share(files, options, counter, **kwargs):
        with counter.get_lock():
            first, counter.value = counter.value, 1_000
        taken.set()
        return then(list(range(first, 1_000)))

    main_takes = split._judge_taken

    def after_the_worker(*args):
        taken.wait(60)
        return main_takes(*args)

    monkeypatch.setattr(parallel, "BYTES_PER_WORKER", 1)
    monkeypatch.setattr(split, "_SHARE_RUN", 1)
    monkeypatch.setattr(engine, "judge_share", share)
    monkeypatch.setattr(split, "_judge_taken", after_the_worker)


def test_workers_judge_the_runs_they_take(tmp_path, monkeypatch):
    # A worker that answers "nothing found" for every run of objects: the findings of those
    # objects disappear, so they really were judged there, not here again.
    tree = str(cross_file_tree(tmp_path))
    serial = run("--format", "json", "-j", "1", tree)
    _worker_takes_every_run(monkeypatch, lambda runs: ([], runs))
    assert run("--format", "json", "-j", "2", tree) != serial


def test_runs_a_worker_took_but_never_delivered_are_judged_here(tmp_path, monkeypatch):
    tree = str(cross_file_tree(tmp_path))
    serial = run("--format", "json", "-j", "1", tree)
    _worker_takes_every_run(monkeypatch, lambda runs: os._exit(3))
    assert run("--format", "json", "-j", "2", tree) == serial


def test_read_shares_balance_bytes_and_keep_stdin_here():
    sizes = [10, 500, 20, 480, 0, 30]
    shares = parallel._balanced_shares(sizes, 2, stay=[4])
    assert 4 in shares[0] and sorted(i for share in shares for i in share) == list(range(6))
    loads = [sum(sizes[i] for i in share) for share in shares]
    assert max(loads) - min(loads) <= 30


def test_small_inputs_stay_in_one_process(tmp_path, monkeypatch):
    tree = str(cross_file_tree(tmp_path))
    monkeypatch.setattr(parallel, "_start", lambda *args: pytest.fail("forked for a small input"))
    assert run("--format", "json", "-j", "8", tree)[0] == 1


def _feasibility_docs() -> list[str]:
    """Forty claims against six nodes of four GPUs: some fit, some ask for more than a node has, some
    for a model no GPU is."""
    docs = ['apiVersion: resource.k8s.io/v1\nkind: DeviceClass\nmetadata: {name: gpu.example.com}\nspec:\n'
            '  selectors: [{cel: {expression: device.driver == "gpu.example.com"}}]\n']
    for n in range(6):
        devices = "".join(f'  - name: gpu-{d}\n    attributes: {{model: {{string: {"a100" if (n + d) % 3 else "h100"}}}}}\n'
                          for d in range(4))
        docs.append(f"apiVersion: resource.k8s.io/v1\nkind: ResourceSlice\nmetadata: {{name: node-{n}-gpus}}\nspec:\n"
                    f"  driver: gpu.example.com\n  nodeName: node-{n}\n"
                    f"  pool: {{name: node-{n}, generation: 1, resourceSliceCount: 1}}\n  devices:\n{devices}")
    for c in range(40):
        model = ("a100", "h100", "v100")[c % 3]
        docs.append(f"apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata: {{name: claim-{c:02}, "
                    f"namespace: default}}\nspec:\n  devices:\n    requests:\n    - name: gpu\n      exactly:\n"
                    f"        deviceClassName: gpu.example.com\n        count: {1 + c % 5}\n        selectors:\n"
                    f"        - cel: {{expression: 'device.attributes[\"gpu.example.com\"].model == \"{model}\"'}}\n")
    return docs


def test_feasibility_in_processes_equals_one_process(tmp_path, monkeypatch):
    # With a group per process enough, the feasibility stage forks.
    judging = importlib.import_module("dralint.feasibility.judgement")
    monkeypatch.setattr(judging, "MIN_GROUPS_PER_PROCESS", 1)
    (tmp_path / "all.yaml").write_text("---\n".join(_feasibility_docs()))
    for fmt in ("json", "text"):
        serial = run("--format", fmt, "--max-seconds", "120", "--show-allocation", "-j", "1", str(tmp_path))
        assert "DRA701" in serial[1] and "node-0" in serial[1]    # both verdicts are in what is compared
        assert run("--format", fmt, "--max-seconds", "120", "--show-allocation", "-j", "2", str(tmp_path)) == serial


def _files_worth_processes(folder: Path, monkeypatch, docs: list[str]) -> None:
    """``docs`` one per file in ``folder``, each worth a worker, and a feasibility stage that forks for
    a group per process: the main process builds the fleet view while the worker judges objects."""
    judging = importlib.import_module("dralint.feasibility.judgement")
    monkeypatch.setattr(judging, "MIN_GROUPS_PER_PROCESS", 1)
    monkeypatch.setattr(parallel, "BYTES_PER_WORKER", 1)
    for i, doc in enumerate(docs):
        (folder / f"doc-{i:02}.yaml").write_text(doc)


@pytest.mark.parametrize("refused", [False, True])
def test_the_fleet_view_built_beside_the_workers_is_used_for_its_own_index_alone(tmp_path, monkeypatch, refused):
    # Many files: the main process builds the feasibility stage's fleet view while the worker judges
    # objects, from the index as it stands then. When the API server would refuse a slice (a device
    # name it does not take), the stage's index leaves the slice out, and the view built before does
    # not serve: the stage builds its own.
    world = importlib.import_module("dralint.feasibility.world")
    _files_worth_processes(tmp_path, monkeypatch, [doc.replace("name: gpu-3", "name: GPU_3") if refused and i == 1
                                                   else doc for i, doc in enumerate(_feasibility_docs())])
    serial = run("--format", "json", "--show-allocation", "-j", "1", str(tmp_path))
    assert "DRA701" in serial[1] and "node-0" in serial[1]
    builds: list[int] = []
    from_index = world.World.from_index.__func__
    monkeypatch.setattr(world.World, "from_index",
                        classmethod(lambda cls, *args, **kwargs: builds.append(1) or from_index(cls, *args, **kwargs)))
    assert run("--format", "json", "--show-allocation", "-j", "2", str(tmp_path)) == serial
    assert len(builds) == (2 if refused else 1)


POD = """apiVersion: v1
kind: Pod
metadata: {{name: trainer, namespace: default}}
spec:
  resourceClaims:
  - {{name: gpus, resourceClaimName: claim-01}}
  containers:
  - name: main
    image: registry.example.com/train:1
    resources:
      claims:
      - {{name: gpus{request}}}
"""


@pytest.mark.parametrize("wrong", [False, True])
def test_claims_judged_ahead_agree_with_one_process(tmp_path, monkeypatch, wrong):
    # The feasibility stage starts on the fleet view while the worker still checks objects, as if
    # none had an error. When the pod turns out wrong (its container asks for a request its claim
    # lacks: DRA604), it is not judged, and its claim is judged on its own, not as ahead.
    ahead = importlib.import_module("dralint.feasibility.ahead")
    _files_worth_processes(tmp_path, monkeypatch,
                           _feasibility_docs() + [POD.format(request=", request: nope" if wrong else "")])
    serial = run("--format", "json", "--show-allocation", "-j", "1", str(tmp_path))
    assert ("DRA604" in serial[1]) == wrong and "Pod default/trainer" in serial[1]
    stood: list[int] = []
    take = ahead.Ahead.take
    monkeypatch.setattr(ahead.Ahead, "take", lambda self, *a: stood.append(len(r := take(self, *a))) or r)
    assert run("--format", "json", "--show-allocation", "-j", "2", str(tmp_path)) == serial
    assert stood == [39 if wrong else 40]   # 40 groups: the pod's, and the claims it does not use


def test_a_failure_to_judge_ahead_leaves_the_stage_to_judge_everything(tmp_path, monkeypatch):
    feasibility = importlib.import_module("dralint.feasibility")
    _files_worth_processes(tmp_path, monkeypatch, _feasibility_docs())
    serial = run("--format", "json", "--show-allocation", "-j", "1", str(tmp_path))

    def fails(*args, **kwargs):
        raise RuntimeError("no processes to spare")

    monkeypatch.setattr(feasibility, "judge_ahead", fails)
    assert run("--format", "json", "--show-allocation", "-j", "2", str(tmp_path)) == serial
