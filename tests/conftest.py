"""Tests marked `root` run real emulations: they need root and Mininet's tools. Without them
such a test is skipped, saying why, unless the emulation tests are required: under `make
test` (which sets DLCP_REQUIRE_ROOT=1), in CI (CI=true), or with DLCP_REQUIRE_ROOT=1 set by
hand. Then it fails, so that a run that could not emulate never passes as green."""
import os
import shutil
import socket

import pytest
from hypothesis import settings

pytest_plugins = ["pytester"]

# `make test-fast` draws the same examples every run (DLCP_HYPOTHESIS=fast): a fast tier that
# passes once passes again, and a boundary it misses is the fixed cases' to pin
# (test_twin_boundaries.py). The full suite draws anew each run, to find what no one wrote.
settings.register_profile("fast", derandomize=True)
if os.environ.get("DLCP_HYPOTHESIS"):
    settings.load_profile(os.environ["DLCP_HYPOTHESIS"])

TOOLS = ("mnexec", "iperf3", "ethtool", "ping", "tcpdump")
SEARCH_PATH = os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/usr/bin", "/sbin", "/bin"])


def root_required():
    return (os.environ.get("CI", "").lower() in ("true", "1")
            or os.environ.get("DLCP_REQUIRE_ROOT", "") not in ("", "0"))


def missing_for_emulation():
    """What this process lacks to emulate, or None."""
    if os.geteuid() != 0:
        return "root (network namespaces, veths, AF_PACKET): run them with `sudo make test`"
    tools = [t for t in TOOLS if shutil.which(t, path=SEARCH_PATH) is None]
    if tools:
        return f"{', '.join(tools)}, which `sudo make setup` installs"
    return None


def pytest_runtest_setup(item):
    if item.get_closest_marker("root") is None:
        return
    missing = missing_for_emulation()
    if missing is None:
        return
    if root_required():
        pytest.fail(f"emulation tests need {missing} (required here: CI or DLCP_REQUIRE_ROOT is set)",
                    pytrace=False)
    pytest.skip(f"emulation tests need {missing}")


@pytest.fixture
def python_only_stage():
    """register(registry, base) -> "mine": a stage only Python has (a subclass of `base`
    registered as "mine"), the way a user adds one; every registry is restored afterwards."""
    saved = []

    def register(registry, base):
        saved.append((registry, dict(registry._classes)))
        registry.register("mine")(type("Mine", (base,), {}))
        return "mine"
    yield register
    for registry, classes in reversed(saved):
        registry._classes.clear()
        registry._classes.update(classes)


@pytest.fixture
def python_only_transport():
    """The name of a transport only Python has (`python_transport`), registered the way a
    user adds one; the registry is restored afterwards."""
    import python_transport
    from dlcp_emu.transport.registry import TRANSPORTS, register
    saved = dict(TRANSPORTS)
    register(python_transport.TRANSPORT)
    yield python_transport.TRANSPORT.name
    TRANSPORTS.clear()
    TRANSPORTS.update(saved)


@pytest.fixture
def sockets():
    """Two UDP sockets bound on loopback (the transport and host data-plane tests)."""
    socks = []
    for _ in range(2):
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.bind(("127.0.0.1", 0))
        socks.append(s)
    yield socks
    for s in socks:
        s.close()
