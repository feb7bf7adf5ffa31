"""Emulation tests (marked `root`) fail rather than skip where they are required
(tests/conftest.py), and `make test` refuses to run without root, saying to use sudo."""
import os
import subprocess
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent

EMULATION_TEST = """
import pytest

@pytest.mark.root
def test_emulates():
    assert True

def test_needs_nothing():
    assert True
"""


@pytest.mark.parametrize("env, failed", [
    ({}, False), ({"DLCP_REQUIRE_ROOT": "0"}, False),
    ({"CI": "true"}, True), ({"DLCP_REQUIRE_ROOT": "1"}, True)])
def test_without_root_an_emulation_test_skips_unless_required(pytester, monkeypatch, env, failed):
    for name in ("CI", "DLCP_REQUIRE_ROOT"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    pytester.makeconftest((TESTS / "conftest.py").read_text())
    pytester.makepyfile(EMULATION_TEST)
    result = pytester.runpytest("-rsE", "-p", "no:hypothesispytest", "-p", "no:cacheprovider")
    if failed:
        result.assert_outcomes(passed=1, errors=1)
        result.stdout.fnmatch_lines(["*emulation tests need root*sudo make test*required here*"])
        assert result.ret == pytest.ExitCode.TESTS_FAILED
    else:
        result.assert_outcomes(passed=1, skipped=1)
        result.stdout.fnmatch_lines(["*emulation tests need root*sudo make test*"])
        assert result.ret == pytest.ExitCode.OK


def make_test(tmp_path, uid):
    """`make test` with `id -u` answering `uid` and pytest replaced by a script that says it
    ran and what DLCP_REQUIRE_ROOT was (the suite itself is not run again)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "id").write_text(f"#!/bin/sh\necho {uid}\n")
    (bin_dir / "pytest").write_text('#!/bin/sh\necho "pytest ran, DLCP_REQUIRE_ROOT=$DLCP_REQUIRE_ROOT"\n')
    for f in bin_dir.iterdir():
        f.chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    return subprocess.run(["make", "-s", "-C", str(REPO), "-o", "setup", "test", f"PYTEST={bin_dir / 'pytest'}"],
                          env=env, capture_output=True, text=True, timeout=60)


def test_make_test_refuses_to_run_without_root_and_says_to_use_sudo(tmp_path):
    out = make_test(tmp_path, 1000)
    assert out.returncode != 0
    assert "needs root: run 'sudo make test'" in out.stderr, out.stderr
    assert "pytest ran" not in out.stdout


def test_make_test_as_root_requires_every_emulation_test_to_run(tmp_path):
    out = make_test(tmp_path, 0)
    assert out.returncode == 0, out.stderr
    assert "pytest ran, DLCP_REQUIRE_ROOT=1" in out.stdout
