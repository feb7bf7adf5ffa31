"""The network loop's look-ahead is in the built core: its prefetches are instructions of the
module. GCC counts `__builtin_prefetch` as free of side effects, so a function that only
prefetches was found pure and every call to the look-ahead was dropped, silently (the loop ran
the same, only slower); dlcp_native/src/base/prefetch.hpp emits them so that they stay."""
import platform
import re
import shutil
import subprocess

import pytest

import dlcp_native._core as core

OBJDUMP = shutil.which("objdump")


def prefetches_by_function():
    """{function name: its prefetch instructions} in the built module's disassembly."""
    text = subprocess.run([OBJDUMP, "-d", "-C", "--no-show-raw-insn", core.__file__],
                          capture_output=True, text=True, check=True).stdout
    counts, name = {}, None
    for line in text.splitlines():
        head = re.match(r"^[0-9a-f]+ <(.*)>:$", line)
        if head:
            name = head.group(1)
        elif name and re.search(r"\tprefetch", line):
            counts[name] = counts.get(name, 0) + 1
    return counts


@pytest.mark.skipif(OBJDUMP is None or platform.machine() != "x86_64", reason="needs objdump on x86-64")
def test_the_network_loop_prefetches():
    counts = prefetches_by_function()
    loop = {name: n for name, n in counts.items() if "look_ahead" in name or "look_deeper" in name
            or "Network::run" in name or "NetCore::run" in name}
    # look_ahead: the next packet's switch route and counters or carried header and stacks, the
    # children's wires; look_deeper: the stacks, the head packets (two lines each, some twice).
    assert sum(loop.values()) >= 8, f"the loop's prefetches were compiled away: {loop}"
