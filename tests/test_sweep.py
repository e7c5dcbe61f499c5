"""gcsim.sweep and the sweeps built on it: serial == Dask bit for bit, lost workers, checkpoints.

The Dask tests share one local cluster of 2 worker processes (module fixture, closed at the
end); the functions sent to it live at module level so that workers import them by name.
"""

from __future__ import annotations

import os
import pickle
from pathlib import Path

import numpy as np
import pytest

from gcsim.errors import InvalidArgumentError, MissingDependencyError
from gcsim.sweep import SweepWorkerError, int_seed, run_sweep, sweep_client, task_seed

distributed = pytest.importorskip("distributed")

TIMEOUT = 120  # seconds per Dask test: a hang fails instead of blocking the suite


# ---------------------------------------------------------------------------
# task functions (module level: picklable by reference)


def draw(task: int, seq: np.random.SeedSequence) -> np.ndarray:
    """A seeded toy task: a few normal draws shifted by the task."""
    return np.random.default_rng(seq).standard_normal(4) + task


def draw_or_die(task: tuple[int, str], seq: np.random.SeedSequence) -> np.ndarray:
    """Like :func:`draw`, but the first time task 5 runs it kills its own worker process."""
    value, flag = task
    if value == 5 and not os.path.exists(flag):
        Path(flag).write_text("killed once")
        os._exit(1)  # the worker process dies mid-sweep, with results of other tasks finished
    return draw(value, seq)


def logged_square(task: tuple[int, str]) -> int:
    """Squares the task and leaves a file behind, so a test can see which tasks ran."""
    value, folder = task
    Path(folder, f"ran_{value}").write_text("")
    return value * value


def fail_on_three(task: int) -> int:
    if task == 3:
        raise ArithmeticError("task 3 fails")
    return task


@pytest.fixture(scope="module")
def client():
    with sweep_client("local", workers=2) as c:
        yield c


def same(a, b) -> bool:
    """Bit-for-bit equality of two result lists of arrays."""
    return len(a) == len(b) and all(np.array_equal(x, y) and x.dtype == y.dtype for x, y in zip(a, b, strict=True))


# ---------------------------------------------------------------------------
# seeding rule


def test_task_seed_is_the_spawned_child_whatever_the_count():
    for index in (0, 3, 17):
        child = np.random.SeedSequence(42).spawn(index + 5)[index]
        assert task_seed(42, index).generate_state(8).tolist() == child.generate_state(8).tolist()
    assert int_seed(task_seed(1, 0)) != int_seed(task_seed(2, 0))
    assert 0 <= int_seed(task_seed(1, 0)) < 2**63


def test_serial_sweep_calls_fn_with_each_task_seed():
    got = run_sweep(draw, range(6), seed=9, progress=False)
    assert same(got, [draw(t, np.random.SeedSequence(9).spawn(6)[t]) for t in range(6)])
    assert run_sweep(abs, [-2, 3], progress=False) == [2, 3]
    assert run_sweep(abs, [], progress=False) == []


@pytest.mark.parametrize(
    ("kw", "argument"),
    [
        ({"seed": -1}, "seed"),
        ({"scheduler": "dask"}, "scheduler"),
        ({"scheduler": "serial", "workers": 2}, "workers"),
        ({"scheduler": "tcp://127.0.0.1:1", "workers": 2}, "workers"),
        ({"retries": -1}, "retries"),
        ({"progress": "yes"}, "progress"),
    ],
)
def test_bad_arguments_name_themselves(kw, argument):
    with pytest.raises(InvalidArgumentError) as exc:
        run_sweep(abs, [1], **kw)
    assert exc.value.argument == argument


def test_bad_fn_and_tasks():
    with pytest.raises(InvalidArgumentError, match="fn"):
        run_sweep(3, [1])
    with pytest.raises(InvalidArgumentError, match="tasks"):
        run_sweep(abs, "abc")


def test_missing_dask_names_the_extra(monkeypatch):
    import gcsim._optional as optional

    real = optional.importlib.import_module

    def blocked(name, *args):
        if name.partition(".")[0] in ("distributed", "dask"):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return real(name, *args)

    monkeypatch.setattr(optional.importlib, "import_module", blocked)
    with pytest.raises(MissingDependencyError) as exc:
        run_sweep(abs, [1, 2], scheduler="local", workers=1, progress=False)
    assert "pip install 'gcsim[dask]'" in str(exc.value)
    assert run_sweep(abs, [-1], progress=False) == [1]  # serial needs no Dask


# ---------------------------------------------------------------------------
# checkpoints


def test_checkpoint_rerun_skips_finished_tasks(tmp_path):
    ck, log = tmp_path / "ck", tmp_path / "log"
    log.mkdir()
    tasks = [(v, str(log)) for v in range(6)]
    first = run_sweep(logged_square, tasks, checkpoint=ck, progress=False)
    assert first == [v * v for v in range(6)] and len(list(log.iterdir())) == 6
    # forget two results, as if the run had been killed before they finished
    for v in (1, 4):
        (ck / f"task_{v:08d}.pkl").unlink()
    for f in log.iterdir():
        f.unlink()
    again = run_sweep(logged_square, tasks, checkpoint=ck, progress=False)
    assert again == first
    assert sorted(f.name for f in log.iterdir()) == ["ran_1", "ran_4"]  # only the missing ones ran
    # a damaged result file is recomputed, not trusted
    (ck / f"task_{2:08d}.pkl").write_bytes(b"not a pickle")
    assert run_sweep(logged_square, tasks, checkpoint=ck, progress=False) == first
    assert pickle.loads((ck / f"task_{2:08d}.pkl").read_bytes()) == 4


def test_checkpoint_of_another_sweep_is_refused(tmp_path):
    run_sweep(draw, range(3), seed=1, checkpoint=tmp_path, progress=False)
    with pytest.raises(InvalidArgumentError, match="another sweep.*seed") as exc:
        run_sweep(draw, range(3), seed=2, checkpoint=tmp_path, progress=False)
    assert exc.value.argument == "checkpoint"
    with pytest.raises(InvalidArgumentError, match="tasks"):
        run_sweep(draw, range(4), seed=1, checkpoint=tmp_path, progress=False)


# ---------------------------------------------------------------------------
# Dask: a local cluster of 2 workers


@pytest.mark.timeout(TIMEOUT)
def test_local_cluster_equals_serial_bit_for_bit(client):
    serial = run_sweep(draw, range(40), seed=2026, progress=False)
    on_dask = run_sweep(draw, range(40), seed=2026, scheduler=client, progress=False)
    assert same(serial, on_dask)
    # the cluster really spread the tasks (each worker ran some): 2 workers are registered
    assert len(client.scheduler_info()["workers"]) == 2


@pytest.mark.timeout(TIMEOUT)
def test_scheduler_local_creates_and_closes_its_cluster():
    got = run_sweep(draw, range(5), seed=4, scheduler="local", workers=2, progress=False)
    assert same(got, run_sweep(draw, range(5), seed=4, progress=False))


@pytest.mark.timeout(TIMEOUT)
def test_a_killed_worker_loses_no_results(client, tmp_path):
    flag = str(tmp_path / "killed")
    tasks = [(v, flag) for v in range(24)]
    serial = run_sweep(draw, range(24), seed=7, progress=False)  # what draw_or_die returns when it lives
    on_dask = run_sweep(draw_or_die, tasks, seed=7, scheduler=client, checkpoint=tmp_path / "ck", progress=False)
    assert os.path.exists(flag), "the worker was not killed"
    assert same(serial, on_dask)
    assert len(list((tmp_path / "ck").glob("task_*.pkl"))) == 24


@pytest.mark.timeout(TIMEOUT)
def test_a_failing_task_stops_the_sweep_with_its_error(client):
    with pytest.raises(ArithmeticError, match="task 3 fails"):
        run_sweep(fail_on_three, range(8), scheduler=client, progress=False)


def test_unpicklable_function_is_refused_before_anything_runs(client):
    import threading

    lock = threading.Lock()
    with pytest.raises(InvalidArgumentError, match="picklable") as exc:
        run_sweep(abs, [lock], scheduler=client, progress=False)
    assert exc.value.argument == "tasks"


def test_sweep_worker_error_names_the_task():
    err = SweepWorkerError(3, "task 3 of the sweep killed every worker it ran on")
    assert err.index == 3 and isinstance(err, RuntimeError)
