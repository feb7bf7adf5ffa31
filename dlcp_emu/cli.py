"""`dlcp-emu`: the command line. Each subcommand lives in its own module exposing
`add_parser(subparsers)`; the parser it adds carries `func=` taking the parsed args and
returning an exit code."""
import argparse
import importlib
import sys
import warnings

# Modules that contribute subcommands, in the order `--help` lists them.
COMMAND_MODULES = [
    "dlcp_emu.commands.run",
    "dlcp_emu.commands.net",
    "dlcp_emu.commands.validate",
    "dlcp_emu.commands.calibrate",
    "dlcp_emu.commands.report",
    "dlcp_emu.commands.whatif",
    "dlcp_emu.commands.export",
    "dlcp_emu.commands.bench",
    "dlcp_emu.commands.clean",
    "dlcp_emu.commands.wireshark",
]

DESCRIPTION = ("Packet-level emulation (Mininet, real frames) and simulation (virtual time) of "
               "DL-aware transport and switch policies: FIFO, PIAS, layer priority, pFabric, NDP, "
               "DLCP. Start with `sudo make emulate`, or `dlcp-emu run examples/default.toml`.")


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        # One line: argparse's own wording names the bad flag; add where to read more.
        self.exit(2, f"{self.prog}: error: {message} (see `{self.prog} --help`)\n")


def build_parser():
    parser = _Parser(prog="dlcp-emu", description=DESCRIPTION)
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser,
                                metavar="COMMAND")
    for name in COMMAND_MODULES:
        importlib.import_module(name).add_parser(sub)
    return parser


_SAID = set()


def _say_once(message, category, *_args, **_kwargs):
    """A warning as one line of the command's own (an old field name, ...), each text once:
    a spec is read many times a run."""
    if str(message) not in _SAID:
        _SAID.add(str(message))
        print(f"dlcp-emu: warning: {message}", file=sys.stderr)


def main(argv=None):
    if argv is None:  # the command line itself (not a caller's argv): start in huge pages
        from dlcp_emu import huge_pages
        huge_pages.reexec()
    args = build_parser().parse_args(argv)
    from topologies import RenamedParameterWarning
    warnings.simplefilter("always", RenamedParameterWarning)
    warnings.showwarning = _say_once
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
