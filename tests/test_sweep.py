"""gcsim.sweep and the sweeps built on it: serial == Dask bit for bit, lost workers, checkpoints.

The Dask tests share one local cluster of 2 worker processes (module fixture, closed at the
end); the functions sent to it live at module level so that workers import them by name.
"""

from __future__ import annotations

import base64
import collections
import dataclasses
import functools
import hashlib
import importlib
import inspect
import json
import os
import pickle
import shutil
import struct
import sys
import threading
import types
import warnings
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pytest

import gcsim
from gcsim.coding.stragglers import FixedModel
from gcsim.errors import InvalidArgumentError, MissingDependencyError
from gcsim.sweep import CheckpointWarning, SweepWorkerError, int_seed, run_sweep, sweep_client, task_seed

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
# checkpoints: data only, each result bound to its task's identity and checksummed


def task_file(folder: Path, index: int) -> Path:
    return folder / f"task_{index:08d}.json"


def test_checkpoint_rerun_skips_finished_tasks(tmp_path):
    ck, log = tmp_path / "ck", tmp_path / "log"
    log.mkdir()
    tasks = [(v, str(log)) for v in range(6)]
    first = run_sweep(logged_square, tasks, checkpoint=ck, progress=False)
    assert first == [v * v for v in range(6)] and len(list(log.iterdir())) == 6
    assert sorted(p.name for p in ck.iterdir()) == ["sweep.json"] + [f"task_{v:08d}.json" for v in range(6)]
    # forget two results, as if the run had been killed before they finished
    for v in (1, 4):
        task_file(ck, v).unlink()
    for f in log.iterdir():
        f.unlink()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # matching results are used without a word
        again = run_sweep(logged_square, tasks, checkpoint=ck, progress=False)
    assert again == first
    assert sorted(f.name for f in log.iterdir()) == ["ran_1", "ran_4"]  # only the missing ones ran


def test_checkpoint_of_another_sweep_is_refused(tmp_path):
    run_sweep(draw, range(3), seed=1, checkpoint=tmp_path, progress=False)
    with pytest.raises(InvalidArgumentError, match="another sweep.*seed") as exc:
        run_sweep(draw, range(3), seed=2, checkpoint=tmp_path, progress=False)
    assert exc.value.argument == "checkpoint"
    with pytest.raises(InvalidArgumentError, match="tasks"):
        run_sweep(draw, range(4), seed=1, checkpoint=tmp_path, progress=False)


def test_task_file_is_canonical_json_with_its_identity_and_checksum(tmp_path):
    run_sweep(draw, [5], seed=3, checkpoint=tmp_path, progress=False)
    raw = task_file(tmp_path, 0).read_bytes()
    doc = json.loads(raw)
    stored = doc.pop("sha256")
    # the checksum, recomputed with hashlib and json's own options: SHA-256 of the canonical rest
    body = json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode()
    assert stored == hashlib.sha256(body).hexdigest()
    ident = doc["identity"]
    assert ident["function"] == f"{__name__}.draw" and ident["seed"] == 3 and ident["index"] == 0
    source = inspect.getsource(draw).encode()
    assert ident["function_source"] == hashlib.sha256(source).hexdigest()
    assert ident["gcsim"] == gcsim.__version__
    # the array: dtype, shape and base64 of its bytes, equal to what the task computes
    dtype, shape, data = doc["result"]["ndarray"]
    expect = draw(5, task_seed(3, 0))
    assert (dtype, shape) == (expect.dtype.str, [4]) and base64.b64decode(data) == expect.tobytes()


class Pair(NamedTuple):
    a: int
    b: float


def varied(task: int) -> Any:
    """Every kind of result a checkpoint stores, with values that break naive formats."""
    return {
        0: None,
        "floats": (float("nan"), -0.0, float("inf"), 5e-324, 0.1),
        (1, "k"): [True, False, 2**200, -(2**70), 3, "x\udc80é", 1e308 * 1j + 2],
        "scalars": [np.float32(1.1), np.int8(-3), np.uint64(2**64 - 1), np.bool_(True), np.complex64(1 - 2j)],
        "arrays": [
            np.arange(12, dtype=np.int16).reshape(3, 4),
            np.asfortranarray(np.arange(6.0).reshape(2, 3)) / 7,
            np.array(3.5),
            np.zeros((0, 5), dtype=np.complex128),
            np.array([True, False]),
            np.array([1, 2], dtype=">i4"),
        ],
        "task": task,
        "read-only": types.MappingProxyType({"a": 1, "b": (2.5, None)}),
    }


def same_bits(a: Any, b: Any) -> bool:
    """Equality down to types, dtypes and bits (NaN and -0.0 included)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, np.ndarray):
        return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()
    if isinstance(a, np.generic):
        return a.dtype == b.dtype and a.tobytes() == b.tobytes()
    if isinstance(a, float):
        return struct.pack(">d", a) == struct.pack(">d", b)
    if isinstance(a, complex):
        return same_bits(a.real, b.real) and same_bits(a.imag, b.imag)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(same_bits(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, (dict, types.MappingProxyType)):
        return list(a) == list(b) and all(same_bits(a[k], b[k]) for k in a)
    return a == b


def test_every_storable_type_round_trips_bit_for_bit(tmp_path):
    first = run_sweep(varied, [1, 2], checkpoint=tmp_path, progress=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        again = run_sweep(varied, [1, 2], checkpoint=tmp_path, progress=False)
    # the values the task computes, not the ones written: a fresh call is the reference
    assert all(same_bits(x, varied(t)) for x, t in zip(again, [1, 2], strict=True))
    assert all(same_bits(x, y) for x, y in zip(first, again, strict=True))


def gcsim_record(task: int) -> Any:
    from gcsim.coding.verify import Violation

    mask = np.array([True, False, True])
    return Violation("upper", "pattern", "each", task, (1,), mask, 0.5, 0.5 + task, float(task), (0.1, np.float64(0.2)))


def test_gcsim_records_round_trip(tmp_path):
    first = run_sweep(gcsim_record, [1, 2], checkpoint=tmp_path, progress=False)
    again = run_sweep(gcsim_record, [1, 2], checkpoint=tmp_path, progress=False)
    assert [type(r).__name__ for r in again] == ["Violation"] * 2
    assert all(same_bits(dataclasses.asdict(a), dataclasses.asdict(b)) for a, b in zip(first, again, strict=True))


UNSTORABLE = {
    "set": ({1, 2}, "builtins.set"),
    "foreign record": (Pair(1, 2.0), "Pair record"),
    "str array": (np.array(["a"]), "dtype <U1"),
    "object array": (np.array([None], dtype=object), "dtype object"),
    "path": (Path("x"), "PosixPath"),
    "bytes": (b"raw", "builtins.bytes"),
    "dict subclass": (collections.OrderedDict(a=1), "OrderedDict"),
}


def unstorable(name: str) -> Any:
    return UNSTORABLE[name][0]


@pytest.mark.parametrize("name", list(UNSTORABLE))
def test_unstorable_results_are_refused_when_written(tmp_path, name):
    with pytest.raises(InvalidArgumentError, match="cannot be stored") as exc:
        run_sweep(unstorable, [name], checkpoint=tmp_path, progress=False)
    assert exc.value.argument == "checkpoint" and UNSTORABLE[name][1] in str(exc.value)
    assert not task_file(tmp_path, 0).exists()
    assert run_sweep(unstorable, [name], progress=False)[0] is UNSTORABLE[name][0]  # fine without a checkpoint


def constant(value: Any, task: int) -> Any:
    return value


@pytest.mark.parametrize(
    ("fn", "tasks", "where"),
    [
        (abs, [np.random.default_rng(0)], "tasks[0]"),  # a Generator has no data-only form
        (functools.partial(constant, threading.Lock()), [1], "fn.args[0]"),  # state outside Python
        (eval("lambda x: x"), [1], "fn"),  # no source file to hash
    ],
)
def test_a_sweep_without_a_data_only_identity_cannot_be_checkpointed(tmp_path, fn, tasks, where):
    with pytest.raises(InvalidArgumentError, match="cannot be used with this sweep") as exc:
        run_sweep(fn, tasks, checkpoint=tmp_path / "ck", progress=False)
    assert exc.value.argument == "checkpoint" and where in str(exc.value)
    assert not (tmp_path / "ck").exists()  # refused before anything ran or was written


def test_bound_objects_are_described_by_their_data(tmp_path):
    """A partial over a gcsim object (a straggler model): the same sweep reuses, another model is refused."""
    model = FixedModel(6, 2)
    task = functools.partial(sample_masks, model)
    a = run_sweep(task, [3, 4], seed=1, checkpoint=tmp_path, progress=False)
    assert all(
        np.array_equal(x, y)
        for x, y in zip(a, run_sweep(task, [3, 4], seed=1, checkpoint=tmp_path, progress=False), strict=True)
    )
    with pytest.raises(InvalidArgumentError, match="another sweep.*arguments_sha256"):
        run_sweep(
            functools.partial(sample_masks, FixedModel(6, 3)), [3, 4], seed=1, checkpoint=tmp_path, progress=False
        )


def sample_masks(model: Any, count: int, seq: np.random.SeedSequence) -> np.ndarray:
    return model.sample(count, int_seed(seq))


# the attacks of issue #19 (each returned a wrong or foreign result before): never returned now


def test_another_tasks_file_copied_over_is_recomputed(tmp_path):
    good = run_sweep(draw, range(4), seed=5, checkpoint=tmp_path, progress=False)
    shutil.copyfile(task_file(tmp_path, 3), task_file(tmp_path, 1))
    with pytest.warns(
        CheckpointWarning, match=r"1 stored result.*task 1 \(computed for another task: index, task_sha256"
    ):
        again = run_sweep(draw, range(4), seed=5, checkpoint=tmp_path, progress=False)
    assert same(again, good) and same(again, [draw(t, task_seed(5, t)) for t in range(4)])


@pytest.mark.parametrize("where", [0.3, 0.6, 0.9])
def test_a_flipped_byte_is_recomputed(tmp_path, where):
    good = run_sweep(draw, range(3), seed=5, checkpoint=tmp_path, progress=False)
    path = task_file(tmp_path, 2)
    raw = bytearray(path.read_bytes())
    at = int(where * len(raw))
    raw[at] ^= 0x01
    path.write_bytes(bytes(raw))
    with pytest.warns(CheckpointWarning, match=r"task 2 \((checksum mismatch|not a JSON task file|not a gcsim)"):
        again = run_sweep(draw, range(3), seed=5, checkpoint=tmp_path, progress=False)
    assert same(again, good)
    assert task_file(tmp_path, 2).read_bytes() != bytes(raw)  # and rewritten


@pytest.mark.parametrize(("field", "value"), [("seed", 6), ("index", True), ("index", 1.0), ("gcsim", "0.0.1")])
def test_a_changed_value_with_a_recomputed_checksum_still_needs_its_identity(tmp_path, field, value):
    """An edit that keeps the file consistent cannot move a result to another task, seed or gcsim
    (nor pass ``true`` or ``1.0`` for the index 1: the identity is compared byte for byte)."""
    run_sweep(draw, range(2), seed=5, checkpoint=tmp_path, progress=False)
    doc = json.loads(task_file(tmp_path, 1).read_bytes())
    doc.pop("sha256")
    doc["identity"][field] = value
    body = json.dumps(doc, sort_keys=True, separators=(",", ":")).encode()
    doc["sha256"] = hashlib.sha256(body).hexdigest()
    task_file(tmp_path, 1).write_text(json.dumps(doc))
    with pytest.warns(CheckpointWarning, match=rf"task 1 \(computed for another task: {field} differ"):
        again = run_sweep(draw, range(2), seed=5, checkpoint=tmp_path, progress=False)
    assert same(again, [draw(t, task_seed(5, t)) for t in range(2)])


def test_a_pickled_string_is_never_returned(tmp_path):
    good = run_sweep(draw, range(2), seed=5, checkpoint=tmp_path, progress=False)
    task_file(tmp_path, 0).write_bytes(pickle.dumps("not a result"))
    (tmp_path / "task_00000001.pkl").write_bytes(pickle.dumps("an old-format file"))  # never read
    with pytest.warns(CheckpointWarning, match=r"task 0 \(not a JSON task file"):
        again = run_sweep(draw, range(2), seed=5, checkpoint=tmp_path, progress=False)
    assert same(again, good)


class Exploit:
    """Unpickling this creates a folder: proof of code execution."""

    def __init__(self, marker: str):
        self.marker = marker

    def __reduce__(self):
        return (os.mkdir, (self.marker,))


def test_a_malicious_pickle_is_never_executed(tmp_path):
    ck, marker = tmp_path / "ck", tmp_path / "pwned"
    payload = pickle.dumps(Exploit(str(marker)))
    ck.mkdir()
    for name in ("task_00000000.json", "task_00000000.pkl", "task_00000001.pkl"):
        (ck / name).write_bytes(payload)
    with pytest.warns(CheckpointWarning, match="task 0"):
        got = run_sweep(draw, range(2), seed=5, checkpoint=ck, progress=False)
    assert not marker.exists(), "the pickle ran"
    assert same(got, [draw(t, task_seed(5, t)) for t in range(2)])
    # the payload in a v1 folder (the pickle format) is refused as a whole, unread
    (ck / "sweep.json").write_text(json.dumps({"format": "gcsim-sweep-checkpoint", "version": 1}))
    with pytest.raises(InvalidArgumentError, match="older gcsim .*pickled"):
        run_sweep(draw, range(2), seed=5, checkpoint=ck, progress=False)
    assert not marker.exists()


def test_another_seeds_folder_without_its_sweep_json_is_recomputed(tmp_path):
    run_sweep(draw, range(3), seed=1, checkpoint=tmp_path, progress=False)
    (tmp_path / "sweep.json").unlink()
    with pytest.warns(CheckpointWarning, match=r"3 stored result.*task 0 \(computed for another task: seed differ"):
        got = run_sweep(draw, range(3), seed=2, checkpoint=tmp_path, progress=False)
    assert same(got, [draw(t, task_seed(2, t)) for t in range(3)])


def test_a_changed_function_body_under_the_same_name_is_recomputed(tmp_path, monkeypatch):
    module = tmp_path / "gcsim_sweep_task_mod.py"
    module.write_text("def task(x):\n    return x + 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    mod = importlib.import_module("gcsim_sweep_task_mod")
    try:
        ck = tmp_path / "ck"
        assert run_sweep(mod.task, [1, 2], checkpoint=ck, progress=False) == [2, 3]
        module.write_text("def task(x):\n    return x + 100\n")
        os.utime(module, (1, 1))  # another mtime, whatever the clock's resolution
        mod = importlib.reload(mod)
        with pytest.warns(
            CheckpointWarning, match=r"task 0 \(computed for another task: function_sha256, function_source"
        ):
            assert run_sweep(mod.task, [1, 2], checkpoint=ck, progress=False) == [101, 102]
    finally:
        sys.modules.pop("gcsim_sweep_task_mod", None)


def test_two_lambdas_on_one_line_are_two_functions(tmp_path, monkeypatch):
    """inspect.getsource gives both the same line: the compiled body tells them apart."""
    (tmp_path / "gcsim_sweep_lambdas.py").write_text("f, g = (lambda x: x + 1), (lambda x: x + 2)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    mod = importlib.import_module("gcsim_sweep_lambdas")
    try:
        assert inspect.getsource(mod.f) == inspect.getsource(mod.g)
        assert run_sweep(mod.f, [1, 2], checkpoint=tmp_path / "ck", progress=False) == [2, 3]
        with pytest.warns(CheckpointWarning, match=r"task 0 \(computed for another task: function_sha256 differ"):
            assert run_sweep(mod.g, [1, 2], checkpoint=tmp_path / "ck", progress=False) == [3, 4]
    finally:
        sys.modules.pop("gcsim_sweep_lambdas", None)


@pytest.mark.timeout(30)
@pytest.mark.parametrize("kind", ["directory", "FIFO"])
def test_a_directory_or_fifo_in_place_of_a_task_file_is_an_error(tmp_path, kind):
    if kind == "FIFO" and not hasattr(os, "mkfifo"):
        pytest.skip("no FIFOs on this platform")
    run_sweep(draw, range(2), seed=5, checkpoint=tmp_path, progress=False)
    path = task_file(tmp_path, 1)
    path.unlink()
    path.mkdir() if kind == "directory" else os.mkfifo(path)  # a FIFO without a writer: opening would block
    with pytest.raises(InvalidArgumentError, match=f"task_00000001.json is a {kind}, not a task file") as exc:
        run_sweep(draw, range(2), seed=5, checkpoint=tmp_path, progress=False)
    assert exc.value.argument == "checkpoint"


def test_no_pickle_module_in_the_sweep():
    import gcsim.sweep as sw

    assert "pickle" not in vars(sw) and "cloudpickle" not in vars(sw)


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
    assert len(list((tmp_path / "ck").glob("task_*.json"))) == 24


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


def always_die(task: int) -> int:
    """Kills its worker process every time task 1 runs."""
    if task == 1:
        os._exit(1)
    return task


@pytest.mark.timeout(TIMEOUT)
def test_a_task_that_keeps_killing_workers_stops_the_sweep_naming_it():
    import dask

    # give up after the first lost worker (default: 3 more tries), so the test stays short; one task
    # only, since a task queued on the dying worker beside it would count the death as well
    with dask.config.set({"distributed.scheduler.allowed-failures": 0}):
        with pytest.raises(SweepWorkerError, match="task 0 of the sweep") as exc:
            run_sweep(always_die, [1], scheduler="local", workers=1, progress=False)  # task 0 is the value 1
    assert exc.value.index == 0 and isinstance(exc.value, RuntimeError)


# ---------------------------------------------------------------------------
# the sweeps built on run_sweep


def _petersen_scheme():
    from gcsim.coding.schemes import encode
    from gcsim.combinatorics.srg import srg

    return encode(srg(10, 3, 0, 1), 2, "rd", seed=1)


def test_merge_moments_equals_exact_rationals():
    from fractions import Fraction

    from gcsim.coding.sweeps import merge_moments
    from tolerances import dot_tol

    rng = np.random.default_rng(0)
    chunks = [rng.standard_normal(k) * 3 + 10 for k in (7, 1, 50, 13, 2)]
    parts = [(c.size, float(c.mean()), float(((c - c.mean()) ** 2).sum())) for c in chunks]
    n, mean, m2 = merge_moments(parts)
    exact = [Fraction(float(x)) for c in chunks for x in c]
    mu = sum(exact) / len(exact)
    dev = sum((x - mu) ** 2 for x in exact)
    scale = float(sum(abs(x) for x in exact))
    assert n == len(exact)
    assert abs(mean - float(mu)) <= dot_tol(n, scale) / n
    assert abs(m2 - float(dev)) <= dot_tol(4 * n, float(sum(x * x for x in exact)))
    assert merge_moments([]) == (0, 0.0, 0.0) and merge_moments([(0, 5.0, 1.0), (3, 2.0, 1.0)]) == (3, 2.0, 1.0)


def test_mc_sweep_statistics_are_those_of_all_chunks_together():
    from scipy import stats

    from gcsim.coding.evaluate import optimal_error
    from gcsim.coding.stragglers import straggler_model
    from gcsim.coding.sweeps import expected_error_sweep
    from tolerances import dot_tol

    sch = _petersen_scheme()
    model = straggler_model("fixed", sch.n, s=3)
    res = expected_error_sweep(sch, model, samples=1100, chunk=250, seed=5, progress=False)
    # the same chunks drawn by hand, pooled, and summarised by numpy and scipy
    sizes = [250, 250, 250, 250, 100]
    values = np.concatenate(
        [optimal_error(sch, model.sample(k, int_seed(task_seed(5, i))), progress=False) for i, k in enumerate(sizes)]
    )
    assert res.count == values.size == 1100 and res.method == "monte-carlo n=1100 in 5 chunks of 250"
    tol = dot_tol(values.size, float(np.abs(values).sum())) / values.size
    assert abs(res.mean - values.mean()) <= tol
    se = values.std(ddof=1) / np.sqrt(values.size)
    # the sums of squares of the two routes differ by rounding of sums of |x|² at most; se is a square root
    m2 = float(((values - values.mean()) ** 2).sum())
    se_tol = se * dot_tol(4 * values.size, float((values**2).sum())) / m2
    assert abs(res.stderr - se) <= se_tol
    q = stats.t.ppf(0.975, values.size - 1)
    lo, hi = stats.t.interval(0.95, values.size - 1, loc=values.mean(), scale=se)
    assert abs(res.ci[0] - lo) <= tol + q * se_tol and abs(res.ci[1] - hi) <= tol + q * se_tol


def test_mc_sweep_refuses_non_iid_models_and_oversize_chunks():
    from gcsim.coding.stragglers import straggler_model
    from gcsim.coding.sweeps import expected_error_sweep
    from gcsim.errors import SizeLimitError

    sch = _petersen_scheme()
    with pytest.raises(InvalidArgumentError) as exc:
        expected_error_sweep(sch, straggler_model("all", sch.n, s=2), samples=500)
    assert exc.value.argument == "model"
    with pytest.raises(InvalidArgumentError, match="samples"):
        expected_error_sweep(sch, straggler_model("fixed", sch.n, s=2), samples=10)
    with pytest.raises(SizeLimitError) as exc:
        expected_error_sweep(sch, straggler_model("fixed", sch.n, s=2), samples=10**8, chunk=10**7)
    assert exc.value.argument == "chunk"


@pytest.mark.timeout(TIMEOUT)
def test_mc_sweep_on_dask_equals_serial_bit_for_bit(client):
    from gcsim.coding.stragglers import straggler_model
    from gcsim.coding.sweeps import expected_error_sweep

    sch = _petersen_scheme()
    model = straggler_model("bernoulli", sch.n, p=0.2)
    kw = dict(samples=3000, chunk=400, seed=11, progress=False)
    serial = expected_error_sweep(sch, model, **kw)
    on_dask = expected_error_sweep(sch, model, scheduler=client, **kw)
    assert (serial.mean, serial.ci, serial.stderr, serial.count) == (
        on_dask.mean,
        on_dask.ci,
        on_dask.stderr,
        on_dask.count,
    )


class DyingFixedModel(FixedModel):
    """The fixed-s model, instrumented for :func:`test_mc_sweep_survives_a_killed_worker_recomputing_nothing`.

    It draws exactly the patterns of :class:`FixedModel`.  Each call of ``sample`` (one per chunk
    of the sweep) leaves a file ``runs/<seed>-<pid>-<nonce>`` in ``folder``, so the test counts
    the runs of every chunk.  The first call anywhere claims ``folder/killed`` (``O_EXCL``: one
    winner over all processes), waits until the caller has checkpointed ``wait_for`` finished
    chunks (computed by the other worker, since this one is busy), writes its seed and those
    chunks' indices into ``killed`` and kills its worker process.  That call precedes every other
    call, so the killed worker ran no chunk of the sweep before it, and every finished result lives
    on the surviving worker or in the caller: nothing finished can be lost.
    """

    def __init__(self, n: int, s: int, folder: str, wait_for: int):
        super().__init__(n, s)
        self.folder = folder
        self.wait_for = wait_for

    def sample(self, count: int, seed: int = 0) -> np.ndarray:
        import json
        import secrets
        import time

        Path(self.folder, "runs", f"{seed}-{os.getpid()}-{secrets.token_hex(4)}").write_text("")
        try:
            fd = os.open(Path(self.folder, "killed"), os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except FileExistsError:
            return super().sample(count, seed)
        checkpoint = Path(self.folder, "ck")
        deadline = time.monotonic() + TIMEOUT / 2  # a guard against a hang only: the test fails then
        while len(done := sorted(checkpoint.glob("task_*.json"))) < self.wait_for and time.monotonic() < deadline:
            time.sleep(0.01)
        os.write(fd, json.dumps({"seed": seed, "done": [int(p.stem[5:]) for p in done]}).encode())
        os.close(fd)
        os._exit(1)  # the worker dies in the middle of the sweep, with chunks finished and chunks left


@pytest.mark.timeout(TIMEOUT)
def test_mc_sweep_survives_a_killed_worker_recomputing_nothing(client, tmp_path):
    import json

    from gcsim.coding.sweeps import expected_error_sweep

    sch = _petersen_scheme()
    (tmp_path / "runs").mkdir()
    chunks, kw = 12, dict(samples=2400, chunk=200, seed=13, progress=False)
    serial = expected_error_sweep(sch, FixedModel(sch.n, 3), **kw)
    model = DyingFixedModel(sch.n, 3, str(tmp_path), wait_for=3)
    on_dask = expected_error_sweep(sch, model, scheduler=client, checkpoint=tmp_path / "ck", **kw)

    def fields(r):
        return (r.mean, r.ci, r.stderr, r.count, r.method, r.model)

    assert fields(on_dask) == fields(serial)  # bit for bit, with a worker lost on the way
    killed = json.loads((tmp_path / "killed").read_text())
    chunk_of = {int_seed(task_seed(13, i)): i for i in range(chunks)}
    runs = [0] * chunks
    for f in (tmp_path / "runs").iterdir():
        runs[chunk_of[int(f.name.split("-")[0])]] += 1
    dead = chunk_of[killed["seed"]]
    # the kill came after 3 or more chunks were in and while chunks remained (the dying one at least)
    assert 3 <= len(killed["done"]) < chunks and dead not in killed["done"]
    # only the chunk that was running on the dead worker ran twice; the finished ones never again
    assert runs[dead] == 2 and all(runs[i] == 1 for i in range(chunks) if i != dead), runs
    assert len(list((tmp_path / "ck").glob("task_*.json"))) == chunks
    # a rerun takes every chunk from the checkpoint: nothing runs
    assert fields(expected_error_sweep(sch, model, checkpoint=tmp_path / "ck", **kw)) == fields(serial)
    assert sum(1 for _ in (tmp_path / "runs").iterdir()) == chunks + 1


@pytest.mark.timeout(TIMEOUT)
def test_catalogue_bound_sweep_on_dask_equals_serial(client):
    import json

    from gcsim.catalogue.sweeps import verify_catalogue_bounds

    kw = dict(names=["petersen", "paley13"], stragglers=[1, 4], draws=4, samples=60, seed=3, progress=False)
    serial = verify_catalogue_bounds(**kw)
    on_dask = verify_catalogue_bounds(scheduler=client, **kw)
    assert [(c.name, c.method, c.s, c.seed) for c in serial] == [(c.name, c.method, c.s, c.seed) for c in on_dask]
    assert [json.dumps(c.report.to_dict(), sort_keys=True) for c in serial] == [
        json.dumps(c.report.to_dict(), sort_keys=True) for c in on_dask
    ]
    assert all(c.report.ok for c in serial) and len(serial) == 4


def test_catalogue_bound_sweep_results_are_storable_in_a_checkpoint(tmp_path):
    """Its records (CatalogueBoundCase holding a BoundReport of BoundChecks) round-trip through the files."""
    import json

    from gcsim.catalogue.sweeps import verify_catalogue_bounds

    kw = dict(names=["petersen"], stragglers=[1, 3], draws=4, samples=40, seed=2, progress=False)
    first = verify_catalogue_bounds(checkpoint=tmp_path, **kw)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        again = verify_catalogue_bounds(checkpoint=tmp_path, **kw)
    assert [type(c).__name__ for c in again] == ["CatalogueBoundCase"] * 2
    assert [json.dumps(c.report.to_dict(), sort_keys=True) for c in again] == [
        json.dumps(c.report.to_dict(), sort_keys=True) for c in verify_catalogue_bounds(**kw)
    ]
    assert [(c.name, c.s, c.seed) for c in again] == [(c.name, c.s, c.seed) for c in first]
    assert all(np.array_equal(a.report.masks, b.report.masks) for a, b in zip(first, again, strict=True))


def test_catalogue_bound_sweep_bad_arguments():
    from gcsim.catalogue.sweeps import verify_catalogue_bounds

    with pytest.raises(InvalidArgumentError, match="names"):
        verify_catalogue_bounds(["no_such_instance"])
    with pytest.raises(InvalidArgumentError, match="stragglers"):
        verify_catalogue_bounds(["petersen"], stragglers=[10])
    with pytest.raises(InvalidArgumentError, match="methods"):
        verify_catalogue_bounds(["petersen"], methods="rd")


@pytest.mark.timeout(TIMEOUT)
def test_pareto_front_on_dask_equals_serial(client):
    pytest.importorskip("cvxpy")
    import pandas as pd

    from gcsim.cerar.pareto import pareto_front

    kw = dict(max_iter=2, progress=False, eps_grid=[0.05, 0.3], vandermonde_grid=[0.2])
    serial, d_serial = pareto_front(3, 4, [3.0, 10.0], return_designs=True, **kw)
    on_dask, d_dask = pareto_front(3, 4, [3.0, 10.0], return_designs=True, scheduler=client, **kw)
    # time_s is the measured wall time of each cap; everything else is bit for bit
    pd.testing.assert_frame_equal(serial.drop(columns="time_s"), on_dask.drop(columns="time_s"), check_exact=True)
    assert len(d_serial) == len(d_dask) == 2
    for a, b in zip(d_serial, d_dask, strict=True):
        assert np.array_equal(a.encoders, b.encoders) and np.array_equal(a.decoders, b.decoders)


# ---------------------------------------------------------------------------
# gcsim reproduce: stages get the scheduler; the tables are the same


def test_reproduce_passes_the_scheduler_to_stages_that_take_it(tmp_path, monkeypatch):
    import gcsim.app.reproduce as rep

    seen: list = []

    def new_style(out, full, seed, progress, scheduler="serial"):
        seen.append(scheduler)
        (out / "a.txt").write_text("a")
        return {"ok": True, "files": ["a.txt"], "text": ""}

    def old_style(out, full, seed, progress):  # a stage without the keyword still runs
        (out / "b.txt").write_text("b")
        return {"ok": True, "files": ["b.txt"], "text": ""}

    monkeypatch.setattr(rep, "STAGES", {"new": new_style, "old": old_style})
    summary = rep.run_reproduce(tmp_path, progress=False)
    assert summary["ok"] and seen == ["serial"]
    with pytest.raises(InvalidArgumentError) as exc:
        rep.run_reproduce(tmp_path, progress=False, scheduler="serial", workers=2)
    assert exc.value.argument == "workers"


@pytest.mark.timeout(TIMEOUT)
def test_training_stage_on_dask_writes_the_serial_tables(client, tmp_path):
    pytest.importorskip("sklearn")
    from gcsim.app.stages.training import run_training_stage

    # a small MNIST slice (30 images per digit): the stage's 33 runs twice fit the Dask timeout
    a = run_training_stage(tmp_path / "serial", iterations=3, samples=300, per_class=30)
    b = run_training_stage(tmp_path / "dask", iterations=3, samples=300, scheduler=client, per_class=30)
    assert a["ok"] == b["ok"]
    for name in ("history.csv", "summary.csv", "unbiasedness.csv", "delay_history.csv", "precision.csv", "claims.csv"):
        assert (tmp_path / "serial" / name).read_bytes() == (tmp_path / "dask" / name).read_bytes(), name


@pytest.mark.timeout(TIMEOUT)
def test_cli_error_on_a_tcp_scheduler_equals_serial(client, capsys):
    import json

    from gcsim.app.cli import main

    argv = ["error", "--design", "petersen", "--method", "rd", "-s", "3", "--samples", "1500", "--chunk", "500"]
    assert main([*argv, "--json"]) == 0
    serial = json.loads(capsys.readouterr().out)
    address = client.scheduler.address  # a running cluster, reached by its tcp:// address
    assert address.startswith("tcp://")
    assert main([*argv, "--json", "--scheduler", address]) == 0
    on_dask = json.loads(capsys.readouterr().out)
    assert serial == on_dask and serial["evaluation"] == "monte-carlo n=1500 in 3 chunks of 500"
    assert main([*argv, "--scheduler", address, "--workers", "2"]) == 2  # --workers is for local only
    assert "--workers" in capsys.readouterr().err
