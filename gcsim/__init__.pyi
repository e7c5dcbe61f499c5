from . import (
    advisor as advisor,
    catalogue as catalogue,
    cerar as cerar,
    coding as coding,
    combinatorics as combinatorics,
    errors as errors,
    executor as executor,
    io as io,
    learning as learning,
    limits as limits,
)
from ._version import __version__ as __version__
from .advisor import advise as advise
from .catalogue import (
    export_object as export_object,
    load_object as load_object,
)
from .coding.decoder_table import (
    decoder_table as decoder_table,
    load_decoder_table as load_decoder_table,
)
from .coding.delays import (
    arrival_rule as arrival_rule,
    delay_model as delay_model,
    expected_decode_time as expected_decode_time,
)
from .coding.dispatch import encode as encode
from .coding.evaluate import (
    expected_error as expected_error,
    fixed_decoder_error as fixed_decoder_error,
    optimal_error as optimal_error,
    worst_case_error as worst_case_error,
)
from .coding.partial import partial_scheme as partial_scheme
from .coding.stragglers import straggler_model as straggler_model
from .coding.verify import verify_bounds as verify_bounds
from .combinatorics.bibd import bibd as bibd
from .combinatorics.biregular import biregular_graph as biregular_graph
from .combinatorics.coset import coset_graph as coset_graph
from .combinatorics.expanders import (
    chordal_cycle as chordal_cycle,
    weighted_margulis_gabber_galil as weighted_margulis_gabber_galil,
)
from .combinatorics.fields import finite_field as finite_field
from .combinatorics.srg import srg as srg
from .errors import (
    CatalogueError as CatalogueError,
    GcsimError as GcsimError,
    ImpossibleParametersError as ImpossibleParametersError,
    InvalidArgumentError as InvalidArgumentError,
    MissingDependencyError as MissingDependencyError,
    NotConstructibleError as NotConstructibleError,
    SizeLimitError as SizeLimitError,
    SolverError as SolverError,
    VerificationError as VerificationError,
)
from .executor.arrays import run_scheme as run_scheme
from .sweep import run_sweep as run_sweep
