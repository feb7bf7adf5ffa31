"""`dlcp-emu wireshark`: the DLCP dissector for Wireshark and tshark (wireshark/dlcp.lua),
generated from the wire layout; written to a file, or installed where your Wireshark loads
Lua plugins from (its "Personal Lua Plugins" folder, as `tshark -G folders` names it)."""
import os
import shutil
import subprocess
import sys
from pathlib import Path

FALLBACK_DIR = Path("~/.local/lib/wireshark/plugins")   # Wireshark 4.x on Linux


def add_parser(sub):
    p = sub.add_parser("wireshark", help="the Wireshark/tshark dissector of DLCP frames: write or install it")
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument("--install", action="store_true",
                      help="install it for your Wireshark (its Personal Lua Plugins folder)")
    what.add_argument("--output", metavar="FILE",
                      help="write it to FILE ('-': standard output)")
    p.set_defaults(func=_wireshark)
    return p


def plugin_dir():
    """Wireshark's Personal Lua Plugins folder for this user (from `tshark -G folders`, or
    the default of Wireshark 4 when tshark is not installed)."""
    tshark = shutil.which("tshark")
    if tshark:
        r = subprocess.run([tshark, "-G", "folders"], capture_output=True, text=True, timeout=60)
        for line in r.stdout.splitlines():
            key, _, value = line.partition(":")
            if key.strip() == "Personal Lua Plugins" and value.strip():
                return Path(value.strip())
    return FALLBACK_DIR.expanduser()


def _wireshark(args):
    from dlcp_emu.wire.wireshark import lua_dissector
    text = lua_dissector()
    if args.output == "-":
        sys.stdout.write(text)
        return 0
    target = Path(args.output) if args.output else plugin_dir() / "dlcp.lua"
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    except OSError as e:
        print(f"dlcp-emu wireshark: cannot write {target}: {e.strerror}", file=sys.stderr)
        return 2
    print(f"wrote {target}")
    if args.install:
        if os.geteuid() == 0 and os.environ.get("SUDO_USER"):
            print(f"(installed for root; run it without sudo to install it for {os.environ['SUDO_USER']})")
        print("Wireshark and tshark now dissect DLCP frames (UDP port 9796, or any port by the "
              "magic): e.g. tshark -r capture.pcap -Y dlcp")
    return 0
