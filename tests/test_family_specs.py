"""One parser for family specs (issue #19 item 4).

The commands that take a design are enumerated from the argument parser (every ``--design`` whose
help offers a family spec, and the positional ``FAMILY PARAMS`` of construct/exists); each is given
specs of the wrong arity and bad values and must answer in one line naming the flag and the
expected form, exit status 2, never a traceback.  Valid specs build the same object as the
family's factory called directly.
"""

from __future__ import annotations

import argparse

import numpy as np
import pytest

from gcsim import bibd, srg
from gcsim.app.cli import build_parser, main
from gcsim.app.common import UsageError
from gcsim.app.specs import FAMILY_FORMS, design_arg, family_form, parse_family_spec
from gcsim.combinatorics.biregular import biregular_graph
from gcsim.combinatorics.coset import coset_graph


def _leaves(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()):
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs and path:
        yield path, parser
    for action in subs:
        for name, sub in action.choices.items():
            yield from _leaves(sub, (*path, name))


def spec_commands() -> list[tuple[str, ...]]:
    """Leaf commands with a ``--design`` that accepts a family spec (its help says so)."""
    found = []
    for path, parser in _leaves(build_parser()):
        for action in parser._actions:
            if "--design" in action.option_strings and "family" in (action.help or ""):
                found.append(path)
    return sorted(found)


#: a minimal command line around ``--design SPEC`` (nothing is written or launched before the design is read)
SAMPLES = {
    ("error",): lambda spec, tmp: ["error", "--design", spec],
    ("bounds",): lambda spec, tmp: ["bounds", "verify", "--design", spec],
    ("decoder-table",): lambda spec, tmp: ["decoder-table", "--design", spec, "--s-max", "1", "--out", str(tmp)],
    ("gc", "run"): lambda spec, tmp: ["gc", "run", "--design", spec],
}


def test_every_design_command_has_a_sample():
    enumerated = set(spec_commands())
    assert enumerated == set(SAMPLES), sorted(enumerated)


ARITY = [
    ("bibd:7,3,1,9", "bibd takes 2 to 3 parameters (bibd:V,K[,LAM]), got 4"),
    ("bibd:7", "bibd takes 2 to 3 parameters (bibd:V,K[,LAM]), got 1"),
    ("bibd:", "bibd takes 2 to 3 parameters (bibd:V,K[,LAM]), got 0"),
    ("srg:10,3,0", "srg takes 4 parameters (srg:V,K,LAM,MU), got 3"),
    ("srg:10,3,0,1,2", "srg takes 4 parameters (srg:V,K,LAM,MU), got 5"),
    ("coset:27,2,5,1,1", "coset takes 3 parameters (coset:K,M,DELTA), got 5"),
    ("biregular:40,20,3", "biregular takes 4 to 5 parameters (biregular:V,B,R,K[,SEED]), got 3"),
    ("biregular:40,20,3,6,0,1", "biregular takes 4 to 5 parameters (biregular:V,B,R,K[,SEED]), got 6"),
]
VALUES = [
    ("bibd:7,x,1", "parameter 2 of bibd:7,x,1 must be an integer, got 'x' (form bibd:V,K[,LAM])"),
    ("bibd:7,,1", "parameter 2 of 'bibd:7,,1' is empty (form bibd:V,K[,LAM])"),
    ("bibd:7,3.5", "parameter 2 of bibd:7,3.5 must be an integer, got '3.5' (form bibd:V,K[,LAM])"),
    ("bibd:0,3,1", "v must be >= 2, got 0 (in bibd:0,3,1; form bibd:V,K[,LAM])"),
    ("srg:10,3,0,-1", "(in srg:10,3,0,-1; form srg:V,K,LAM,MU)"),
    ("bibd:" + "9" * 5000 + ",3,1", "parameter 1 of bibd:... is too large: 5,000 digits, over Python's limit"),
    ("nope:1,2", "unknown family 'nope'; the forms are bibd:V,K[,LAM], srg:V,K,LAM,MU, coset:K,M,DELTA"),
    ("", "is empty; give a named instance"),
]


@pytest.mark.parametrize("path", sorted(SAMPLES), ids=" ".join)
@pytest.mark.parametrize("spec, message", ARITY + VALUES, ids=lambda x: x[:24] if isinstance(x, str) else None)
def test_bad_specs_are_one_line_naming_the_flag_and_form(path, spec, message, tmp_path, capsys):
    code = main(SAMPLES[path](spec, tmp_path / "out"))
    out, err = capsys.readouterr()
    assert code == 2, (out, err)
    assert err.startswith("gcsim: error: --design: ") and err.count("\n") == 1, err
    assert message in err, err
    assert "Traceback" not in err and "PosixPath" not in err and "not an integer" not in err
    assert not (tmp_path / "out").exists()  # refused before anything is written


@pytest.mark.parametrize(
    "argv, message",
    [
        (["construct", "bibd", "7", "3", "1", "9"], "params: bibd takes 2 to 3 parameters (bibd V K [LAM]), got 4"),
        (["construct", "srg", "10", "3", "0"], "params: srg takes 4 parameters (srg V K LAM MU), got 3"),
        (["construct", "coset", "27", "2", "5", "1", "1"], "params: coset takes 3 parameters (coset K M DELTA), got 5"),
        (["construct", "biregular", "40", "20", "3"], "params: biregular takes 4 to 5 parameters"),
        (["construct", "bibd", "0", "3"], "params: v must be >= 2, got 0 (in bibd:0,3; form bibd V K [LAM])"),
        (["exists", "srg", "10", "3", "0"], "params: srg takes 4 parameters (srg V K LAM MU), got 3"),
        (["exists", "bibd", "7", "3", "1", "1"], "params: bibd takes 2 to 3 parameters"),
    ],
)
def test_construct_and_exists_share_the_arity_table(argv, message, capsys):
    code = main(argv)
    _, err = capsys.readouterr()
    assert code == 2 and err.count("\n") == 1 and message in err, err


def test_construct_biregular_seed_from_a_fifth_parameter_or_seed(capsys):
    assert main(["construct", "biregular", "40", "20", "3", "6", "2", "--json"]) == 0
    a = capsys.readouterr().out
    assert main(["construct", "biregular", "40", "20", "3", "6", "--seed", "2", "--json"]) == 0
    assert capsys.readouterr().out == a
    assert main(["construct", "biregular", "40", "20", "3", "6", "2", "--seed", "3"]) == 2
    assert "--seed: 3 disagrees" in capsys.readouterr().err


@pytest.mark.parametrize(
    "spec, direct",
    [
        ("bibd:7,3", lambda: bibd(7, 3, 1)),
        ("bibd: 13 , 4 , 1", lambda: bibd(13, 4, 1)),
        ("srg:10,3,0,1", lambda: srg(10, 3, 0, 1)),
        ("coset:27,2,5", lambda: coset_graph(27, 2, 5)),
        ("biregular:40,20,3,6", lambda: biregular_graph(40, 20, 3, 6, seed=0)),
        ("biregular:40,20,3,6,7", lambda: biregular_graph(40, 20, 3, 6, seed=7)),
    ],
)
def test_valid_specs_build_what_the_factory_builds(spec, direct):
    got = design_arg("--design", spec)
    want = direct()
    assert type(got) is type(want) and tuple(got.params) == tuple(want.params)
    assert np.array_equal(got.assignment, want.assignment)


def test_named_instances_and_files_still_resolve(tmp_path):
    from gcsim.catalogue.objects import export_object

    assert design_arg("--design", "petersen").params == srg(10, 3, 0, 1).params
    export_object(bibd(7, 3, 1), tmp_path, name="fano")
    assert np.array_equal(design_arg("--design", str(tmp_path / "bibd" / "fano")).assignment, bibd(7, 3).assignment)
    with pytest.raises(UsageError, match=r"^--design: 'nothing' is neither a named instance"):
        design_arg("--design", "nothing")


def test_every_family_has_a_form_and_the_help_lists_it():
    from gcsim.catalogue.named import FAMILIES

    assert set(FAMILY_FORMS) == set(FAMILIES)
    construct = dict(_leaves(build_parser()))[("construct",)]
    text = " ".join(construct.format_help().split())
    for family in FAMILY_FORMS:
        assert family_form(family, positional=True) in text
        assert parse_family_spec("--x", f"{family}:" + ",".join(["1"] * len(FAMILY_FORMS[family].required)))
