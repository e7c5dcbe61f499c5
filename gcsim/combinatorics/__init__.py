"""Combinatorial objects: block designs, strongly regular graphs, coset and bi-regular graphs, baselines.

Every object is an immutable assignment of data parts to workers with exact verification
and a round trip through arrays (:class:`~gcsim.combinatorics.base.CombinatorialObject`).
Modules, split by family as networkx splits its generators:

* ``fields``, ``geometries``, ``difference_families``, ``steiner`` -- finite fields (one
  encoding, cached tables), finite geometries, difference families, triple systems;
* ``bibd_design`` (the :class:`BIBD` object), ``bibd_existence`` (necessary conditions),
  ``bibd_geometries``, ``bibd_difference``, ``bibd_elementary`` (families of constructions)
  and ``bibd`` (the factory :func:`bibd` and its planner);
* ``srg_feasibility`` (parameter conditions), ``srg_graph`` (the object), ``srg_cayley``,
  ``srg_combinatorial``, ``srg_geometric``, ``srg_sporadic`` (families of constructions)
  and ``srg`` (the factory :func:`srg` and its catalogue);
* ``coset``, ``biregular``, ``baselines``, ``expanders`` (multigraphs kept with multiplicities);
* ``families`` (the registry: :func:`register_family`, :func:`registered_families`), with the
  built-in families declared in ``srg_families``, ``bibd_families`` and ``srg_distance_union``
  (the Johnson / Hamming distance-union graphs).

The factories ``bibd``, ``srg`` and ``srg_feasibility`` share their names with their modules,
so the package namespace keeps the modules (``from gcsim.combinatorics import srg`` is the
module); the functions are ``gcsim.bibd``, ``gcsim.srg`` and
``gcsim.combinatorics.srg_feasibility.srg_feasibility``.  The two tables of known
nonexistence results stay in their modules (``bibd_existence.KNOWN_NONEXISTENT_BIBDS``,
``srg_feasibility.KNOWN_NONEXISTENT_SRGS``).
"""

from __future__ import annotations

from .base import CombinatorialObject
from .baselines import (
    CyclicRepetition,
    CyclicRepetitionParams,
    FractionalRepetition,
    FractionalRepetitionParams,
    MargulisGabberGalil,
    MargulisGabberGalilParams,
    RandomRegularAssignment,
    RandomRegularParams,
    cyclic_repetition,
    fractional_repetition,
    margulis_gabber_galil,
    mgg_neighbours,
    random_regular_assignment,
)
from .bibd import buildable_bibds
from .bibd_design import BIBD, BIBDParams, union_design
from .bibd_difference import difference_family_design, five_q_design, paley_design
from .bibd_elementary import complete_design, steiner_triple_system
from .bibd_existence import bibd_necessary_conditions, bruck_ryser_chowla, ternary_form_isotropic
from .bibd_geometries import (
    affine_geometry_design,
    affine_plane,
    hermitian_unital,
    hyperoval_biplane,
    mcfarland_design,
    projective_geometry_design,
    projective_plane,
    singer_design,
)
from .biregular import (
    BiregularGraph,
    BiregularParams,
    biregular_from_assignment,
    biregular_graph,
    is_connected_assignment,
)
from .coset import (
    GROUPS,
    CosetBipartiteGraph,
    CosetParams,
    InvertibilityCertificate,
    certify_invertibility,
    coset_graph,
    encoded_matrix,
    encoded_matrix_is_invertible,
    encoded_matrix_obstruction,
    exact_rank,
    integer_determinant,
    interval_connection_sets,
)
from .difference_families import (
    DIFFERENCE_FAMILIES,
    cyclotomic_difference_family,
    develop,
    group_elements,
    multiplier_difference_family,
    paley_difference_set,
    radical_difference_family,
    search_difference_family,
    singer_difference_set,
)
from .expanders import (
    MGG_LAMBDA_BOUND,
    ChordalCycle,
    ChordalCycleParams,
    WeightedGraphAssignment,
    WeightedMargulisGabberGalil,
    WeightedMargulisGabberGalilParams,
    chordal_cycle,
    chordal_cycle_neighbours,
    weighted_margulis_gabber_galil,
)
from .families import (
    BIBDFamily,
    Family,
    Member,
    SRGFamily,
    get_family,
    register_family,
    registered_families,
    unregister_family,
)
from .fields import (
    CONWAY_POLYNOMIALS,
    additive_cosets,
    defining_polynomial,
    field_tables,
    finite_field,
    is_prime,
    is_prime_power,
    multiplicative_cosets,
    nonzero_squares,
    prime_power_decomposition,
    primitive_element,
)
from .geometries import (
    ag_flats,
    ag_parameters,
    gaussian_binomial,
    pg_flats,
    pg_parameters,
    projective_point_index,
    projective_points,
    subspaces,
)
from .srg import KNOWN_EXISTING, buildable_srgs, srg_construction_name, steiner_system_blocks
from .srg_cayley import MENON_36_CONNECTION, abelian_cayley_graph, menon_graph_36, paley_graph
from .srg_combinatorial import (
    block_graph,
    complete_multipartite_graph,
    disjoint_cliques,
    kneser_graph_2,
    triangular_graph,
)
from .srg_distance_union import (
    distance_union_parameters,
    hamming_distance_union_graph,
    johnson_distance_union_graph,
    scheme_eigenmatrix,
    strongly_regular_distance_sets,
)
from .srg_feasibility import (
    CONDITION_NAMES,
    SRGCondition,
    SRGFeasibility,
    check_srg_parameters,
    complement_parameters,
    is_sum_of_two_squares,
    srg_eigenvalues,
)
from .srg_geometric import (
    affine_polar_graph,
    generalized_quadrangle_graph,
    hyperoval_gq_graph,
    latin_square_graph,
    lattice_graph,
    polar_graph,
    polar_graph_parameters,
    symplectic_graph,
    two_intersection_graph,
)
from .srg_gq_dual import dual_hyperoval_gq_graph
from .srg_graph import SRGParams, StronglyRegularGraph, srg_parameters_of
from .srg_nonisotropic import nonisotropic_graph, nonisotropic_graph_parameters
from .srg_payne_gq import payne_gq_graph
from .srg_sporadic import (
    clebsch_graph,
    gewirtz_graph,
    higman_sims_graph,
    hoffman_singleton_graph,
    m22_graph,
    petersen_graph,
    schlafli_graph,
    shrikhande_graph,
)
from .steiner import bose_sts_blocks, skolem_sts_blocks, steiner_triple_system_blocks, triple_system_hill_climb

__all__ = [
    "BIBD",
    "BIBDFamily",
    "Family",
    "Member",
    "SRGFamily",
    "distance_union_parameters",
    "dual_hyperoval_gq_graph",
    "get_family",
    "hamming_distance_union_graph",
    "johnson_distance_union_graph",
    "register_family",
    "registered_families",
    "scheme_eigenmatrix",
    "strongly_regular_distance_sets",
    "unregister_family",
    "BIBDParams",
    "BiregularGraph",
    "BiregularParams",
    "CONDITION_NAMES",
    "CONWAY_POLYNOMIALS",
    "ChordalCycle",
    "ChordalCycleParams",
    "CombinatorialObject",
    "CosetBipartiteGraph",
    "CosetParams",
    "CyclicRepetition",
    "CyclicRepetitionParams",
    "DIFFERENCE_FAMILIES",
    "FractionalRepetition",
    "FractionalRepetitionParams",
    "GROUPS",
    "InvertibilityCertificate",
    "KNOWN_EXISTING",
    "MENON_36_CONNECTION",
    "MGG_LAMBDA_BOUND",
    "MargulisGabberGalil",
    "MargulisGabberGalilParams",
    "RandomRegularAssignment",
    "RandomRegularParams",
    "SRGCondition",
    "SRGFeasibility",
    "SRGParams",
    "StronglyRegularGraph",
    "WeightedGraphAssignment",
    "WeightedMargulisGabberGalil",
    "WeightedMargulisGabberGalilParams",
    "abelian_cayley_graph",
    "additive_cosets",
    "affine_geometry_design",
    "affine_plane",
    "affine_polar_graph",
    "ag_flats",
    "ag_parameters",
    "bibd_necessary_conditions",
    "biregular_from_assignment",
    "biregular_graph",
    "block_graph",
    "bose_sts_blocks",
    "bruck_ryser_chowla",
    "buildable_bibds",
    "buildable_srgs",
    "certify_invertibility",
    "check_srg_parameters",
    "chordal_cycle",
    "chordal_cycle_neighbours",
    "clebsch_graph",
    "complement_parameters",
    "complete_design",
    "complete_multipartite_graph",
    "coset_graph",
    "cyclic_repetition",
    "cyclotomic_difference_family",
    "defining_polynomial",
    "develop",
    "difference_family_design",
    "disjoint_cliques",
    "encoded_matrix",
    "encoded_matrix_is_invertible",
    "encoded_matrix_obstruction",
    "exact_rank",
    "field_tables",
    "finite_field",
    "five_q_design",
    "fractional_repetition",
    "gaussian_binomial",
    "generalized_quadrangle_graph",
    "gewirtz_graph",
    "group_elements",
    "hermitian_unital",
    "higman_sims_graph",
    "hoffman_singleton_graph",
    "hyperoval_biplane",
    "hyperoval_gq_graph",
    "integer_determinant",
    "interval_connection_sets",
    "is_connected_assignment",
    "is_prime",
    "is_prime_power",
    "is_sum_of_two_squares",
    "kneser_graph_2",
    "latin_square_graph",
    "lattice_graph",
    "margulis_gabber_galil",
    "mcfarland_design",
    "m22_graph",
    "menon_graph_36",
    "mgg_neighbours",
    "multiplicative_cosets",
    "multiplier_difference_family",
    "nonzero_squares",
    "paley_design",
    "paley_difference_set",
    "nonisotropic_graph",
    "nonisotropic_graph_parameters",
    "paley_graph",
    "payne_gq_graph",
    "petersen_graph",
    "pg_flats",
    "pg_parameters",
    "polar_graph",
    "polar_graph_parameters",
    "prime_power_decomposition",
    "primitive_element",
    "projective_geometry_design",
    "projective_plane",
    "projective_point_index",
    "projective_points",
    "radical_difference_family",
    "random_regular_assignment",
    "schlafli_graph",
    "search_difference_family",
    "shrikhande_graph",
    "singer_design",
    "singer_difference_set",
    "skolem_sts_blocks",
    "srg_construction_name",
    "srg_eigenvalues",
    "srg_parameters_of",
    "steiner_system_blocks",
    "steiner_triple_system",
    "steiner_triple_system_blocks",
    "subspaces",
    "symplectic_graph",
    "ternary_form_isotropic",
    "triangular_graph",
    "triple_system_hill_climb",
    "two_intersection_graph",
    "union_design",
    "weighted_margulis_gabber_galil",
]
