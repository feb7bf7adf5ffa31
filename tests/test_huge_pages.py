"""The command line starts itself with glibc's huge-page tunable, keeps a user's own choice,
and a run's summary says which pages its memory was in (dlcp_emu/huge_pages.py)."""
import json
import os
import subprocess
import sys

import pytest

from dlcp_emu import huge_pages

TINY = """name = "tiny"
seed = 2
byte_scale = 0.002
time_limit_s = 30
[topology]
kind = "leaf-spine"
leaves = 2
spines = 2
hosts_per_leaf = 2
host_rate_bps = 10e9
[workload]
model = "resnet50"
pattern = "ring"
workers = 4
iterations = 1
"""


def test_the_tunable_is_added_to_what_glibc_tunables_holds():
    assert huge_pages.environment({"PATH": "/bin"}, libc="glibc") == {
        "PATH": "/bin", "GLIBC_TUNABLES": "glibc.malloc.hugetlb=1", huge_pages.BEFORE: ""}
    env = huge_pages.environment({"GLIBC_TUNABLES": "glibc.malloc.arena_max=2"}, libc="glibc")
    assert env["GLIBC_TUNABLES"] == "glibc.malloc.arena_max=2:glibc.malloc.hugetlb=1"
    assert env[huge_pages.BEFORE] == "glibc.malloc.arena_max=2"


@pytest.mark.parametrize("tunables", ["glibc.malloc.hugetlb=0", "glibc.malloc.arena_max=2:glibc.malloc.hugetlb=1"])
def test_a_users_own_choice_is_kept(tunables):
    assert huge_pages.environment({"GLIBC_TUNABLES": tunables}, libc="glibc") is None


def test_nothing_changes_but_under_glibc():
    assert huge_pages.environment({}, libc="") is None


def test_in_effect_reads_the_value():
    assert huge_pages.in_effect({"GLIBC_TUNABLES": "glibc.malloc.hugetlb=1"})
    assert not huge_pages.in_effect({"GLIBC_TUNABLES": "glibc.malloc.hugetlb=0"})
    assert not huge_pages.in_effect({"GLIBC_TUNABLES": "glibc.malloc.hugetlb.x=1"})
    assert not huge_pages.in_effect({})


CHILD = """
import os, subprocess, sys
from dlcp_emu import huge_pages
huge_pages.reexec()
def child():
    return subprocess.run([sys.executable, "-c", "import os; print(os.environ.get('GLIBC_TUNABLES'))"],
                          capture_output=True, text=True, check=True).stdout.strip()
plain = child()
with huge_pages.for_children():
    simulating = child()
print(huge_pages.pages(), os.environ.get("GLIBC_TUNABLES"), plain, huge_pages.BEFORE in os.environ, simulating,
      os.environ.get("GLIBC_TUNABLES"))
"""


@pytest.mark.skipif(huge_pages.environment({}) is None, reason="the C library is not glibc")
@pytest.mark.parametrize("tunables", [None, "glibc.malloc.arena_max=2"])
def test_the_restarted_process_gives_its_children_the_environment_it_was_given(tunables):
    """...but for a sweep's simulating processes, started with its pages (`for_children`)."""
    env = {k: v for k, v in os.environ.items() if k != "GLIBC_TUNABLES"}
    if tunables:
        env["GLIBC_TUNABLES"] = tunables
    out = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, env=env, timeout=60,
                         check=True).stdout.split()
    with_pages = f"{tunables}:glibc.malloc.hugetlb=1" if tunables else "glibc.malloc.hugetlb=1"
    assert out == ["huge", str(tunables), str(tunables), "False", with_pages, str(tunables)]


def _pages(tmp_path, env):
    tmp_path.mkdir()
    spec = tmp_path / "tiny.toml"
    spec.write_text(TINY)
    out = subprocess.run([sys.executable, "-m", "dlcp_emu.cli", "simulate", str(spec), "--no-report", "--json",
                          "--results", str(tmp_path / "results")],
                         capture_output=True, text=True, env=env, timeout=120, check=True)
    log, _, summary = out.stdout.partition("\n{")   # the run's log, then the summary
    return json.loads("{" + summary)["presets"]["fifo"]["memory_pages"], log


@pytest.mark.skipif(huge_pages.environment({}) is None, reason="the C library is not glibc")
def test_the_command_line_starts_itself_in_huge_pages_and_says_so(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "GLIBC_TUNABLES"}
    pages, log = _pages(tmp_path / "plain", env)
    assert pages == "huge" and "malloc advises transparent huge pages" in log
    pages, log = _pages(tmp_path / "declined", {**env, "GLIBC_TUNABLES": "glibc.malloc.hugetlb=0"})
    assert pages == "4k" and "malloc in 4 KiB pages" in log
