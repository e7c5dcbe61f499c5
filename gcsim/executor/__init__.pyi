from .arrays import (
    SchemeRun as SchemeRun,
    batched_optimal_error as batched_optimal_error,
    get_namespace as get_namespace,
    run_scheme as run_scheme,
    to_numpy as to_numpy,
)
from .cerar_arrays import (
    CerarRun as CerarRun,
    run_cerar as run_cerar,
)
from .coded_training import (
    CodedStep as CodedStep,
    CodedTrainer as CodedTrainer,
    CodedTrainingReport as CodedTrainingReport,
    code_arrays as code_arrays,
    coded_training_job as coded_training_job,
    load_training_code as load_training_code,
    parameter_digest as parameter_digest,
    worker_layout as worker_layout,
)
from .collectives import (
    ByteCounter as ByteCounter,
    RingFailureError as RingFailureError,
    RingTransport as RingTransport,
    as_design as as_design,
    cerar_all_reduce as cerar_all_reduce,
    library_all_reduce as library_all_reduce,
    ring_all_reduce as ring_all_reduce,
)
from .ddp_hook import (
    CerarHookState as CerarHookState,
    cerar_hook as cerar_hook,
    make_hook_state as make_hook_state,
    register_cerar_hook as register_cerar_hook,
    resolve_compute_dtype as resolve_compute_dtype,
)
from .experiments import (
    collectives_job as collectives_job,
    run_collectives as run_collectives,
    run_parameter_server as run_parameter_server,
)
from .launcher import (
    GLOO_SOURCE as GLOO_SOURCE,
    LaunchResult as LaunchResult,
    LaunchTimeoutError as LaunchTimeoutError,
    RankFailure as RankFailure,
    exception_line as exception_line,
    launch as launch,
)
from .netem import (
    NetemError as NetemError,
    NetemTopology as NetemTopology,
    netem_available as netem_available,
    parse_rate as parse_rate,
)
from .parameter_server import (
    parameter_server_job as parameter_server_job,
    seeded_delays as seeded_delays,
    simulated_schedule as simulated_schedule,
)
from .replicas import (
    ReplicaSync as ReplicaSync,
    replica_drift as replica_drift,
    resync_parameters as resync_parameters,
)
