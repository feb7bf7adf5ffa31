"""The project's switches and topologies for Mininet's own `mn`:

    sudo mn --custom examples/mn_dlcp.py --switch dlcp --topo leafspine,2,2,2 --controller none
    sudo mn --custom examples/mn_dlcp.py --switch dlcp,preset=dlcp \
            --topo leafspine,hosts_per_leaf=1,host_rate_bps=50e6 --controller none --test pingall

Switches: `dlcp[,preset=NAME][,seed=N]`. Topologies: `leafspine`, `star`, `dumbbell`,
`fattree`, with the builders' parameters (positional or by name). The CLI is Mininet's with
`ports` (the switches' live view) and an `iperf` that works with Debian 12's iperf. The
options are described in dlcp_emu/emu/mncustom.py.

mn runs Debian's /usr/bin/python3, which has Mininet but not this project; this file puts
the project and its virtual environment (.venv, made by `make setup`) first on the path.
mn makes every name defined here one of its own globals: only `topos`, `switches`, `tests`
(`iperf` and `all` with iperf3), `CLI` and `cleanup` (mn's own cleanup kills processes by
name; ours stops what this mn started).
"""


def _dlcp_load():
    import glob
    import os
    import sys
    here = os.path.abspath(sys._getframe().f_code.co_filename)   # mn exec()s us: no __file__
    root = os.path.dirname(os.path.dirname(here))
    want = f"python{sys.version_info.major}.{sys.version_info.minor}"
    site = glob.glob(os.path.join(root, ".venv", "lib", want, "site-packages"))
    if not site:
        raise SystemExit(f"{here}: no {root}/.venv/lib/{want}/site-packages: run `sudo make setup` "
                         f"in {root} first (its .venv must be made with {sys.executable})")
    for path in (site[0], root):
        if path not in sys.path:
            sys.path.insert(0, path)
    from dlcp_emu.emu import mncli, mncustom
    return mncustom, mncli


_dlcp_custom, _dlcp_cli = _dlcp_load()
topos = _dlcp_custom.topos
switches = _dlcp_custom.switches
tests = _dlcp_custom.tests
cleanup = _dlcp_custom.cleanup
CLI = _dlcp_cli.DlcpCLI
