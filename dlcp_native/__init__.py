"""The compiled twins (C++17, `src/<layer>/`), proven identical to the Python models, reached
through one Python face a layer: `switch` (`NativeSwitch`, as `switch_models.Switch`, plus
`run_batch`: a whole sequence of arrivals without Python per packet), `network`
(`NativeNetwork`: the simulator's switches, host NICs, wires and event loop in the core),
`transport` (the endpoints), `host` (an emulated host's data plane, the traffic generator)
and `datapath` (the switch process's loop, the machine probes). The framework never imports
`_core` or this package's root: it goes through the faces (`.importlinter`). The models stay the
specification: `tests/test_native_switch.py` drives both with the same random inputs and
asserts identical departures, drops and counters; the other layers have theirs.
"""
try:
    from . import _core  # noqa: F401  (loads the core, or says why not)
except ImportError as error:  # never a silent fall-back to the Python model
    raise ImportError("dlcp_native's compiled core is not built or does not load: run `make setup`, "
                      f"which builds it ({error})") from error

from .network import NativeNetwork
from .switch import NATIVE_STAGES, REASONS, BatchResult, NativeSwitch, NotNativeError, not_native

__all__ = ["NATIVE_STAGES", "REASONS", "BatchResult", "NativeNetwork", "NativeSwitch", "NotNativeError",
           "not_native"]
