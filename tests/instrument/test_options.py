"""ffcc's own options are picked out of argv; everything else reaches the compiler in order."""

import pytest

from ffcc.instrument.errors import FfccError
from ffcc.instrument.options import HELP, parse_options
from ffcc.rewriters.model import MCC_MAX_DEFAULT
from ffcc.rewriters.operators import GROUPS, WM_DEFAULT, WM_GROUPS


def test_compiler_arguments_keep_their_order():
    opts = parse_options(["-O2", "--mcc", "-o", "x", "-lm", "--wm", "x.c", "-DA=1"], environ={})
    assert opts.compiler_args == ["-O2", "-o", "x", "-lm", "x.c", "-DA=1"]
    assert opts.mcc and opts.wm_ops == frozenset(WM_DEFAULT)
    assert parse_options(["--wm=all", "x.c"], environ={}).wm_ops == frozenset(WM_GROUPS)


def test_wm_subset_and_values():
    opts = parse_options(["--wm=ror,COR", "--mcc-max", "3", "--only=src/*.c", "--only-func=f",
                          "--cc=gcc", "a.c"], environ={})
    assert opts.wm_ops == {"ROR", "COR"}
    assert opts.mcc_max == 3 and opts.only_files == ("src/*.c",) and opts.only_funcs == ("f",)
    assert opts.cc == "gcc" and opts.compiler_args == ["a.c"]
    assert parse_options(["--prune=gccdiff", "--jobs=3", "build/"], environ={}).jobs == 3


def test_mcc_bound_defaults_to_the_rewriters_and_zero_lifts_it():
    assert parse_options(["--mcc"], environ={}).mcc_bound == MCC_MAX_DEFAULT == 6
    assert parse_options(["--mcc-max=3"], environ={}).mcc_bound == 3
    assert parse_options(["--mcc-max=0"], environ={}).mcc_bound == 0
    assert f"(default {MCC_MAX_DEFAULT}; 0: no bound" in HELP


def test_environment_supplies_flags_and_compiler():
    opts = parse_options(["-c", "a.c"], environ={"FFCC_FLAGS": "--mcc --wm=ABS", "FFCC_CC": "clang"})
    assert opts.mcc and opts.wm_ops == {"ABS"} and opts.cc == "clang"
    assert opts.compiler_args == ["-c", "a.c"]


def test_compiler_long_options_pass_through():
    opts = parse_options(["--version"], environ={})
    assert opts.compiler_args == ["--version"]
    opts = parse_options(["--sysroot=/x", "--param", "max-inline-insns-single=10"], environ={})
    assert opts.compiler_args == ["--sysroot=/x", "--param", "max-inline-insns-single=10"]


@pytest.mark.parametrize("argv, fragment", [
    (["--mcx"], "unknown option '--mcx'"),
    (["--wm=XYZ"], "unknown --wm operator XYZ "
                   "(choose from ROR, AOR, COR, ABS, UOD, IDR, BOR, ASR, or all)"),
    (["--mcc-max=-1"], "needs a number of conditions, or 0 for no bound"),
    (["--mcc-max=x"], "needs a number of conditions, or 0 for no bound"),
    (["--cc"], "needs a value"),
    (["--mcc=1"], "takes no value"),
    (["--prune=slow"], "unknown --prune method"),
    (["--jobs=0"], "positive integer"),
])
def test_bad_options_are_one_line_errors(argv, fragment):
    with pytest.raises(FfccError) as err:
        parse_options(argv, environ={})
    assert fragment in str(err.value) and "\n" not in str(err.value)
    assert err.value.exit_code == 2


def test_environment_may_not_smuggle_compiler_flags():
    with pytest.raises(FfccError, match="FFCC_FLAGS may hold only ffcc options"):
        parse_options(["a.c"], environ={"FFCC_FLAGS": "-O3"})


def test_help_lists_the_operator_groups_of_the_registry():
    assert ("--wm[=OPS]         weak-mutation labels; OPS from ROR,AOR,COR,ABS,UOD,IDR,BOR,ASR "
            "or all\n                     (default ROR,AOR,COR,ABS,UOD,IDR: Mull's default set)"
            in HELP)
    for group, text in GROUPS.items():
        assert f"  {group}  {text}\n" in HELP
