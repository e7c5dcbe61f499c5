"""Bad inputs and faults of the CERAR API (gcsim.cerar): designs, simulator, optimizer."""

from reliability import Case

_D = "from gcsim.cerar import design, simulate, errors, CerarDesign\nimport numpy as np\n"

CASES = [
    Case(area="api", fault="CERAR design with N = 1 worker", code=_D + "design(1, 4, 'perturbation')"),
    Case(area="api", fault="CERAR design with c = 0 components", code=_D + "design(4, 0, 'perturbation')"),
    Case(area="api", fault="CERAR design with N = 3.5 (not an integer)", code=_D + "design(3.5, 4, 'perturbation')"),
    Case(
        area="api",
        fault="exact CERAR design for c > N (impossible by the exactness theorem)",
        code=_D + "design(3, 4, 'exact')",
    ),
    Case(
        area="api",
        fault="CERAR perturbation design with eps = NaN",
        code=_D + "design(3, 5, 'perturbation', eps=float('nan'))",
    ),
    Case(
        area="api",
        fault="optimized CERAR design with kappa = 0.5 < 1",
        code=_D + "design(3, 4, 'optimized', kappa=0.5, progress=False)",
    ),
    Case(
        area="api",
        fault="optimized CERAR design with decoder cap kappa_D = 0.9 < 1",
        code=_D + "design(3, 4, 'optimized', kappa=5, kappa_D=0.9, progress=False)",
    ),
    Case(
        area="api",
        fault="optimized CERAR design, kappa = 1 for (N, c) = (4, 2) (exact design exists)",
        code=_D + "d = design(4, 2, 'optimized', kappa=1, progress=False)\n"
        "print('start', d.metadata['start'], 'F', d.metadata['frobenius'], d.metadata['stop_reason'])",
        expect="ok",
        timeout=120,
    ),
    Case(
        area="api",
        fault="optimized CERAR design, kappa = 1 for (N, c) = (4, 4)",
        code=_D + "d = design(4, 4, 'optimized', kappa=1, progress=False)\n"
        "print('start', d.metadata['start'], 'F %.3g' % d.metadata['frobenius'], d.metadata['stop_reason'])",
        expect="ok",
        timeout=120,
    ),
    Case(
        area="api",
        fault="optimizer with an unknown SDP solver",
        code=_D + "design(3, 4, 'optimized', kappa=5, solver='NOPE', progress=False)",
    ),
    Case(
        area="api",
        fault="optimizer with init='exact' for c > N",
        code=_D + "design(3, 4, 'optimized', kappa=5, init='exact', progress=False)",
    ),
    Case(
        area="api",
        fault="CerarDesign with a NaN in an encoder",
        code=_D + "A = np.ones((3, 2, 2)); A[0, 0, 0] = np.nan\nCerarDesign(3, 2, A, np.ones((3, 2, 3)))",
    ),
    Case(
        area="api",
        fault="CerarDesign with encoders of the wrong shape",
        code=_D + "CerarDesign(3, 2, np.ones((3, 3, 3)), np.ones((3, 2, 3)))",
    ),
    Case(
        area="api",
        fault="CERAR simulate with an inf gradient",
        code=_D + "g = np.zeros((3, 8)); g[1, 2] = np.inf\nsimulate(design(3, 2, 'exact'), g)",
    ),
    Case(
        area="api",
        fault="CERAR simulate with gradients for the wrong number of workers",
        code=_D + "simulate(design(3, 2, 'exact'), np.zeros((4, 8)))",
    ),
    Case(
        area="api",
        fault="CERAR simulate in float32 with kappa(A) ~ 2e6 (beyond float32)",
        code=_D + "simulate(design(3, 5, 'perturbation', eps=1e-6), np.ones((3, 5)), dtype='float32')\n"
        "print('simulated')",
        expect="warning",
    ),
]
