"""Builds dlcp_native's compiled core (C++17, pybind11); everything else is in pyproject.toml.

`pip install -e .` (scripts/setup.sh) compiles it; a compiler error fails the install.
-O2: the build runs on small shared machines, and -O3 bought nothing measurable there.
-ffp-contract=off: the serialisation time is (size + overhead) * ns_per_byte + 0.5 in double,
as in Python; a fused multiply-add would round differently. -flto: the stages live in files
of their own, as in Python, and link-time optimisation inlines across them. No
-march=native: the binary must run on every machine of the kind it was built for.
Sources: every .cpp of the layer folders (dlcp_native/src/<layer>/), sorted, so a new file
needs no edit here and the build is the same wherever it runs; includes name their layer
(`#include "switch/port.hpp"`) from the one include root, dlcp_native/src.
"""
from glob import glob

from pybind11.setup_helpers import ParallelCompile, Pybind11Extension, build_ext
from setuptools import setup

ParallelCompile("DLCP_NATIVE_BUILD_JOBS", default=2).install()

setup(
    ext_modules=[
        Pybind11Extension(
            "dlcp_native._core",
            sorted(glob("dlcp_native/src/*/*.cpp")),
            include_dirs=["dlcp_native/src"],
            cxx_std=17,
            extra_compile_args=["-O2", "-flto", "-ffp-contract=off", "-Wall"],
            extra_link_args=["-O2", "-flto=auto", "-ffp-contract=off"],
        ),
    ],
    cmdclass={"build_ext": build_ext},
)
