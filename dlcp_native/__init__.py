"""The switch pipeline compiled (C++17, `src/`), proven identical to `switch_models`.

`NativeSwitch` takes the same arguments and gives the same answers as `switch_models.Switch`,
and adds `run_batch`, which runs a whole sequence of arrivals without Python per packet.
`NativeNetwork` is the simulator's network (`dlcp_emu.sim.SimNetwork`): switches, host NICs,
wires and the event loop, all in the core. The
Python models stay the specification: `tests/test_native_switch.py` drives both with the same
random inputs and asserts identical departures, drops and counters.
"""
try:
    from . import _core  # noqa: F401  (loads the core, or says why not)
except ImportError as error:  # never a silent fall-back to the Python model
    raise ImportError("dlcp_native's compiled core is not built or does not load: run `make setup`, "
                      f"which builds it ({error})") from error

from .network import NativeNetwork
from .switch import NATIVE_STAGES, REASONS, BatchResult, NativeSwitch, NotNativeError

__all__ = ["NATIVE_STAGES", "REASONS", "BatchResult", "NativeNetwork", "NativeSwitch", "NotNativeError"]
