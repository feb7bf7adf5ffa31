"""tshark with the project's dissector (wireshark/dlcp.lua), field by field, for the tests.

tshark runs with a HOME of its own, so that a dissector the user installed (a Personal Lua
Plugin) is not loaded beside the one under test. Without tshark the tests skip, saying why,
unless the full suite is required (`make test`, CI): then they fail."""
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import root_required
from dlcp_emu.wire.layout import HEADER_FIELDS, VERSION, Flags, split_tensor_id

ROOT = Path(__file__).resolve().parents[1]
LUA = ROOT / "wireshark" / "dlcp.lua"
HEADER_NAMES = [f.name for f in HEADER_FIELDS]
FLAG_FIELDS = [f"flags.{f.name.lower()}" for f in Flags]
# Every field the dissector gives, then what tshark's expert layer says.
DLCP_FIELDS = [*HEADER_NAMES, *FLAG_FIELDS, "tensor_id.layer", "tensor_id.phase", "tensor_id.step", "payload"]
COLUMNS = ["frame.number", *(f"dlcp.{n}" for n in DLCP_FIELDS), "_ws.expert.message",
           "_ws.expert.group"]
PI_MALFORMED = 0x07000000     # Wireshark's expert group "Malformed"


def tshark():
    path = shutil.which("tshark")
    if path is None:
        why = "tshark, which `sudo make setup` installs (Debian package tshark)"
        if root_required():
            pytest.fail(f"the dissector's tests need {why}", pytrace=False)
        pytest.skip(f"the dissector's tests need {why}")
    return path


def dissect(pcap, home, *, lua=LUA, extra=()):
    """One dict per frame: column -> text tshark printed ('' when the frame has no such field)."""
    cmd = [tshark(), "-r", str(pcap), "-T", "fields", "-E", "separator=\t", "-E", "occurrence=a"]
    if lua is not None:
        cmd += ["-X", f"lua_script:{lua}"]
    for c in COLUMNS:
        cmd += ["-e", c]
    r = subprocess.run([*cmd, *extra], capture_output=True, text=True, timeout=120,
                       env={"HOME": str(home), "PATH": "/usr/bin:/bin"})
    assert r.returncode == 0, r.stderr
    assert "Lua" not in r.stderr, r.stderr          # a Lua error in the dissector
    rows = [dict(zip(COLUMNS, line.split("\t"))) for line in r.stdout.splitlines()]
    assert all(len(line.split("\t")) == len(COLUMNS) for line in r.stdout.splitlines())
    return rows


def expected_fields(header, payload):
    """What the dissector must print for a header the project's codec decoded, as tshark
    prints it (-T fields: integers in decimal, hex fields with 0x, booleans 1/0)."""
    out = {}
    for f in HEADER_FIELDS:
        v = int(getattr(header, f.name)) if hasattr(header, f.name) else 0
        out[f.name] = v
    out["magic"], out["version"] = "0xd1c9", VERSION
    out["flags"] = f"0x{int(header.flags):02x}"
    for fl in Flags:
        out[f"flags.{fl.name.lower()}"] = int(bool(header.flags & fl))
    out["tensor_id.layer"], out["tensor_id.phase"], out["tensor_id.step"] = split_tensor_id(header.tensor_id)
    out["payload"] = payload.hex()
    return {k: str(v) for k, v in out.items()}
