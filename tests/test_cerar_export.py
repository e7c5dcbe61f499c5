"""Tests of gcsim.cerar.export: catalogue round trip and refusal of tampered/truncated bundles."""

from __future__ import annotations

import io
import json

import numpy as np
import pytest
import scipy.linalg as sla

from gcsim.cerar.design import CerarDesign
from gcsim.cerar.export import export_design, load_design
from gcsim.errors import CatalogueError, InvalidArgumentError


def random_design(N=3, c=4, seed=0, method="custom", metadata=None) -> CerarDesign:
    rng = np.random.default_rng(seed)
    return CerarDesign(
        N,
        c,
        rng.standard_normal((N, c, c)),
        rng.standard_normal((N, c, c + N - 2)),
        method=method,
        metadata=metadata or {"seed": seed},
    )


@pytest.fixture(scope="module")
def optimized():
    from gcsim.cerar.optimize import optimized_design

    return optimized_design(3, 4, kappa=5.0, init="random", seed=3, max_iter=2, progress=False)


def test_round_trip_custom(tmp_path):
    d = random_design()
    p = export_design(d, tmp_path, "rt")
    assert p == tmp_path / "rt.json" and (tmp_path / "rt.npz").exists()
    e = load_design(p)
    assert (e.N, e.c, e.method) == (d.N, d.c, "custom")
    np.testing.assert_array_equal(e.encoders, d.encoders)
    np.testing.assert_array_equal(e.decoders, d.decoders)
    man = json.loads(p.read_text())
    md = man["metadata"]
    assert md["kind"] == "cerar" and md["L"] == 5 and md["seed"] == 0
    # certificate and metrics agree with an independent scipy computation
    for j in range(3):
        s = sla.svdvals(d.encoders[j])
        assert md["certificate"]["kappa_A"][j] == pytest.approx(s[0] / s[-1], rel=1e-10)
    assert man["sha256"] and man["provenance"]["gcsim_version"]


def test_round_trip_optimized_keeps_certificate_and_solver(tmp_path, optimized):
    p = export_design(optimized, tmp_path)
    assert p.name == "optimized_N3_c4_kappa5.json"
    e = load_design(p.with_suffix(""))  # the stem works too
    md = json.loads(p.read_text())["metadata"]
    assert md["solver"] == "SCS" and md["seed"] == 3
    assert md["certificate"]["caps"] == {"kappa_A": 5.0, "kappa_D": 5.0}
    assert max(md["certificate"]["kappa_A"]) <= 5.0 * (1 + 1e-9)
    assert md["metrics"]["frobenius"] == pytest.approx(optimized.metadata["frobenius"], rel=1e-12)
    assert md["versions"]["cvxpy"]
    np.testing.assert_array_equal(e.encoders, optimized.encoders)
    assert e.metadata["history"] == optimized.metadata["history"]


def test_existing_bundle_not_overwritten(tmp_path):
    d = random_design()
    export_design(d, tmp_path, "x")
    with pytest.raises(FileExistsError):
        export_design(d, tmp_path, "x")
    export_design(random_design(seed=1), tmp_path, "x", overwrite=True)
    assert not np.array_equal(load_design(tmp_path / "x").encoders, d.encoders)


def test_bad_arguments(tmp_path):
    with pytest.raises(InvalidArgumentError, match="design"):
        export_design("not a design", tmp_path)
    with pytest.raises(InvalidArgumentError, match="name"):
        export_design(random_design(), tmp_path, "../escape")


def test_tampered_npz_refused(tmp_path):
    p = export_design(random_design(), tmp_path, "t")
    npz = tmp_path / "t.npz"
    data = bytearray(npz.read_bytes())
    data[len(data) // 2] ^= 0xFF
    npz.write_bytes(bytes(data))
    with pytest.raises(CatalogueError, match="checksum"):
        load_design(p)


@pytest.mark.parametrize("which", ["npz", "json"])
def test_truncated_files_refused(tmp_path, which):
    p = export_design(random_design(), tmp_path, "t")
    f = tmp_path / f"t.{which}"
    data = f.read_bytes()
    f.write_bytes(data[: len(data) // 2])
    with pytest.raises(CatalogueError):
        load_design(p)


def test_tampered_metadata_refused(tmp_path):
    """Editing the stored metrics (checksum of the data still fine) is caught by re-verification."""
    p = export_design(random_design(), tmp_path, "t")
    man = json.loads(p.read_text())
    man["metadata"]["metrics"]["frobenius"] *= 0.5
    p.write_text(json.dumps(man))
    with pytest.raises(CatalogueError, match="frobenius"):
        load_design(p)


def test_rewritten_arrays_with_fixed_checksum_refused(tmp_path, optimized):
    """Someone replaces an encoder and updates the sha256: the kappa certificate no longer matches."""
    import hashlib

    p = export_design(optimized, tmp_path, "t")
    enc = optimized.encoders.copy()
    enc[0] = np.diag(np.arange(1.0, 5.0) ** 3)  # kappa 64 > cap 5
    buf = io.BytesIO()
    np.savez_compressed(buf, encoders=enc, decoders=optimized.decoders)
    (tmp_path / "t.npz").write_bytes(buf.getvalue())
    man = json.loads(p.read_text())
    man["sha256"] = hashlib.sha256(buf.getvalue()).hexdigest()
    man["size_bytes"] = len(buf.getvalue())
    p.write_text(json.dumps(man))
    with pytest.raises(CatalogueError, match="kappa"):
        load_design(p)


def test_cap_violation_refused(tmp_path, optimized):
    p = export_design(optimized, tmp_path, "t")
    man = json.loads(p.read_text())
    man["metadata"]["certificate"]["caps"]["kappa_A"] = 1.0  # claims a cap the arrays do not meet
    p.write_text(json.dumps(man))
    with pytest.raises(CatalogueError, match="cap"):
        load_design(p)


def test_other_kind_refused(tmp_path):
    from gcsim.io.bundle import save_bundle

    p = save_bundle(tmp_path / "o", {"x": np.eye(2)}, {"kind": "bibd"})
    with pytest.raises(CatalogueError, match="not a CERAR design"):
        load_design(p)


@pytest.mark.parametrize(
    "edit, needle",
    [
        (lambda md: md["certificate"].update(caps=[5.0]), "caps"),
        (lambda md: md["certificate"].update(caps={"kappa_A": "5", "kappa_D": None}), "cap"),
        (lambda md: md.update(N="3"), "N"),
        (lambda md: md.update(metrics=[1.0]), "metrics"),
        (lambda md: md.update(construction_params=[1, 2]), "construction_params"),
        (lambda md: md.update(params=[1, 2]), "params"),
    ],
)
def test_metadata_of_the_wrong_type_refused(tmp_path, edit, needle):
    """Hand-edited metadata types give a CatalogueError naming the field, never an AttributeError."""
    p = export_design(random_design(), tmp_path, "t")
    man = json.loads(p.read_text())
    edit(man["metadata"])
    p.write_text(json.dumps(man))
    with pytest.raises(CatalogueError, match=needle):
        load_design(p)


def test_bundle_paths_in_the_manifest_cannot_leave_the_folder(tmp_path):
    p = export_design(random_design(), tmp_path / "sub", "t")
    (tmp_path / "t.npz").write_bytes((tmp_path / "sub" / "t.npz").read_bytes())
    man = json.loads(p.read_text())
    man["data_file"] = "../t.npz"  # same bytes, but outside the bundle's folder
    p.write_text(json.dumps(man))
    with pytest.raises(CatalogueError, match="data_file"):
        load_design(p)


def _metrics_at_50_digits(d: CerarDesign) -> dict:
    """Error metrics and kappas of a design in 50-digit arithmetic (mpmath), rounded to float64 at the end.

    This is what an exact machine would store; any float64 evaluation differs from it by
    rounding errors only.
    """
    import mpmath as mp

    with mp.workdps(50):
        A = [mp.matrix(a.tolist()) for a in d.encoders]
        D = [mp.matrix(x.tolist()) for x in d.decoders]
        N, c = d.N, d.c
        fro, workers = mp.mpf(0), []
        for i in range(N):
            row = mp.zeros(c, (N - 1) * c)
            for m in range(1, N):
                E = D[i][:, m - 1 : m - 1 + c] * A[(i - m) % N] - mp.eye(c)
                fro += sum(E[r, s] ** 2 for r in range(c) for s in range(c))
                row[:, (m - 1) * c : m * c] = E
            workers.append(max(mp.svd_r(row, compute_uv=False)))

        def kappas(mats):
            out = []
            for M in mats:
                sv = mp.svd_r(M, compute_uv=False)
                out.append(float(max(sv) / min(sv)))
            return out

        kA, kD = kappas(A), kappas(D)
        return {
            "frobenius": float(fro),
            "mean_relative_mse": float(fro / (N * N * c)),
            "worst_case": float(max(workers)),
            "worker_errors": [float(w) for w in workers],
            "kappa_A": kA,
            "kappa_D": kD,
            "kappa_A_max": max(kA),
            "kappa_D_max": max(kD),
        }


@pytest.mark.parametrize("eps", [1e-1, 1e-5])
def test_design_exported_by_an_exact_machine_loads(tmp_path, eps):
    """Trust on every machine: the stored certificate may come from another BLAS kernel.

    The stored metrics are replaced by 50-digit values (an "exact" machine); this machine's
    float64 recomputation differs from them only by rounding, which the load tolerances
    (derived from rounding-error bounds) must accept, also for the ill-conditioned eps = 1e-5.
    A value off by 10^-6 relative on the well-conditioned design is still refused.
    """
    from gcsim.cerar.factory import design

    d = design(4, 8, "perturbation", eps=eps)
    p = export_design(d, tmp_path, "x")
    exact = _metrics_at_50_digits(d)
    man = json.loads(p.read_text())
    md = man["metadata"]
    for key in ("frobenius", "mean_relative_mse", "worst_case", "worker_errors"):
        md["metrics"][key] = exact[key]
    for key in ("kappa_A", "kappa_D", "kappa_A_max", "kappa_D_max"):
        md["certificate"][key] = exact[key]
    p.write_text(json.dumps(man))
    loaded = load_design(p)
    np.testing.assert_array_equal(loaded.encoders, d.encoders)
    if eps == 1e-1:
        md["metrics"]["frobenius"] = exact["frobenius"] * (1 + 1e-6)
        p.write_text(json.dumps(man))
        with pytest.raises(CatalogueError, match="frobenius"):
            load_design(p)


def test_export_design_needs_a_folder(tmp_path, monkeypatch):
    # there is no default folder: a bare export_design(d) used to write designs/cerar/ into the
    # current folder (the repository, when run from the clone)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(TypeError):
        export_design(random_design())  # type: ignore[call-arg]
    assert not any(tmp_path.iterdir())
