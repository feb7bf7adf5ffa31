"""dlcp-emu: a packet-level network emulator and simulator for DL-aware transport.

The Python API (docs/api.md), loaded on first use so that `import dlcp_emu` (and every
process that imports a part of the package) stays cheap:

    import dlcp_emu
    result = dlcp_emu.compare(dlcp_emu.load_spec("examples/default.toml"), presets=["fifo", "dlcp"])
    result.figures, result.iterations, result.summary
"""

__version__ = "0.1.0"

API = ("DEFAULT_PRESETS", "Result", "Spec", "SpecError", "TABLES", "compare", "emulate", "load_spec",
       "parse_spec", "simulate")
__all__ = [*API, "__version__"]


def __getattr__(name):
    if name in API:
        from dlcp_emu import api
        return getattr(api, name)
    raise AttributeError(f"module 'dlcp_emu' has no attribute {name!r}")


def __dir__():
    return sorted([*globals(), *API])
