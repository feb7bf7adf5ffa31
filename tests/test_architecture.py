"""The house rules hold: `lint-imports` checks the import contracts of `.importlinter`
(switch_models pure, emu and sim independent, the rooms layered, the compiled core reached
through its layers' Python faces only), and no module outgrows what one reader holds in mind:
a Python module, or a C++ twin (its .cpp and .hpp together), at most 400 lines. Each C++ file
lives in the folder of the layer it mirrors, and the pure layers include only what they sit on."""
import os
import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NATIVE_SRC = ROOT / "dlcp_native" / "src"
MAX_LINES = 400
CPP_SUFFIXES = (".cpp", ".hpp")
# The compiled core's folders, one a layer of the Python house (docs/architecture.md).
LAYERS = ("base", "bindings", "datapath", "host", "net", "switch", "transport", "wire")
# What a layer may include besides itself, where the Python house says so: the switch is
# switch_models' twin (pure), the wire header is the bottom, the transports sit on it, and
# nothing includes the bindings (the Python contracts, in C++); base/ (generic containers, as
# Python's standard library) includes nothing and any layer may include it.
MAY_INCLUDE = {"base": set(), "switch": {"base"}, "wire": {"base"}, "transport": {"wire", "base"}}


def test_import_contracts_are_kept():
    lint = Path(sys.executable).with_name("lint-imports")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    r = subprocess.run([str(lint), "--config", str(ROOT / ".importlinter")], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "0 broken" in r.stdout


def _lines(path):
    return len(path.read_text().splitlines())


def test_no_module_is_over_400_lines():
    too_long = {}
    for pkg in ("dlcp_emu", "dlcp_native", "switch_models", "workloads", "topologies"):
        for path in (ROOT / pkg).rglob("*.py"):
            n = _lines(path)
            if n > MAX_LINES:
                too_long[str(path.relative_to(ROOT))] = n
    assert not too_long, f"modules over {MAX_LINES} lines: {too_long}"


def test_no_cpp_twin_is_over_400_lines():
    """A twin is a stem's .cpp and .hpp in one folder, read together."""
    twins = defaultdict(int)
    for path in NATIVE_SRC.rglob("*"):
        if path.suffix in CPP_SUFFIXES:
            twins[str(path.relative_to(ROOT).with_suffix(""))] += _lines(path)
    assert twins, f"no C++ sources under {NATIVE_SRC}"
    too_long = {stem: n for stem, n in twins.items() if n > MAX_LINES}
    assert not too_long, f"C++ twins (.cpp + .hpp) over {MAX_LINES} lines: {too_long}"


def test_every_cpp_file_lives_in_a_layer_folder():
    misplaced = sorted(str(p.relative_to(NATIVE_SRC)) for p in NATIVE_SRC.rglob("*")
                       if p.is_file() and p.relative_to(NATIVE_SRC).parent.as_posix() not in LAYERS)
    assert not misplaced, f"dlcp_native/src files outside a layer folder {LAYERS}: {misplaced}"


def test_only_the_bindings_know_python():
    """The layers are plain C++: pybind11 converts at their edge, in bindings/ alone."""
    knowing = sorted(str(p.relative_to(NATIVE_SRC)) for p in NATIVE_SRC.rglob("*")
                     if p.suffix in CPP_SUFFIXES and p.parent.name != "bindings"
                     and ("pybind11" in p.read_text() or "Python.h" in p.read_text()))
    assert not knowing, f"C++ outside dlcp_native/src/bindings that includes Python: {knowing}"


def test_the_pure_layers_include_only_what_they_sit_on():
    include = re.compile(r'^\s*#include "(\w+)/', re.M)
    wrong = []
    for path in NATIVE_SRC.rglob("*"):
        if path.suffix not in CPP_SUFFIXES:
            continue
        layer = path.parent.name
        for used in set(include.findall(path.read_text())) - {layer}:
            if used == "bindings" or used not in MAY_INCLUDE.get(layer, set(LAYERS)):
                wrong.append(f"{path.relative_to(NATIVE_SRC)} includes {used}/")
    assert not wrong, f"layer includes out of place: {sorted(wrong)}"
