"""Every transport by name, with what it can do: the one place that decides what a
transport kind means (a new transport is a module of endpoints and a line here).

- `bounded_loss`: it may zero-fill up to the spec's loss bound (the summary then holds the
  run to that bound); the others deliver every byte.
- `kernel`: the host kernel's TCP, not a sans-I/O endpoint pair: only a real network stack
  has it, so only the emulator runs it.
- `native_sender`, `native_receiver`: the same endpoints compiled (`transport.native`),
  which the simulator's core and the emulated hosts' data plane run without Python per
  packet. A transport without them (one written in Python alone) runs on the Python path
  (`experiment.engine.choose_engine`).

A transport of one's own: `register(Transport(...))`. An emulation's host processes load it
again from `as_config` (its classes by import path: they must be importable there).
"""
import importlib
from dataclasses import dataclass, fields

from dlcp_emu.transport import native
from dlcp_emu.transport.receiver import DlcpReceiver, ReliableReceiver
from dlcp_emu.transport.sender import DlcpSender, ReliableSender

EMULATION, SIMULATION = "emulation", "simulation"


@dataclass(frozen=True)
class Transport:
    name: str
    description: str
    sender: type | None = None
    receiver: type | None = None
    bounded_loss: bool = False
    kernel: bool = False
    native_sender: type | None = None
    native_receiver: type | None = None

    @property
    def backends(self):
        return (EMULATION,) if self.kernel else (EMULATION, SIMULATION)

    @property
    def native(self):
        """Whether it has a native twin: compiled endpoints for both ends."""
        return self.native_sender is not None and self.native_receiver is not None


TRANSPORTS = {t.name: t for t in (
    Transport("tcp", "kernel TCP connections, as Horovod or Gloo over TCP", kernel=True),
    Transport("reliable", "the packet transport, every byte delivered (retransmission)",
              ReliableSender, ReliableReceiver,
              native_sender=native.ReliableSender, native_receiver=native.ReliableReceiver),
    Transport("dlcp", "bounded loss: small-magnitude chunks may be lost, zero-filled; probe + "
              "bitmap retransmission of the rest", DlcpSender, DlcpReceiver, bounded_loss=True,
              native_sender=native.DlcpSender, native_receiver=native.DlcpReceiver),
)}
BUILT_IN = frozenset(TRANSPORTS)
CLASSES = ("sender", "receiver", "native_sender", "native_receiver")   # the endpoints' classes
# A spec may also say `auto`: the transport its pipeline declares it pairs with, else the
# reliable one.
AUTO = "auto"
DEFAULT = "reliable"


def transport(name):
    """The transport of that name, or a ValueError naming the allowed ones."""
    try:
        return TRANSPORTS[name]
    except KeyError:
        raise ValueError(f"transport must be one of {', '.join(TRANSPORTS)}, got {name!r}") from None


def register(t):
    """Add a transport (a `Transport`) under its name; a name taken by another is an error."""
    if not isinstance(t, Transport):
        raise TypeError(f"register takes a Transport, got {type(t).__name__}")
    if t.name == AUTO or TRANSPORTS.get(t.name, t) != t:
        raise ValueError(f"transport name {t.name!r} is taken; taken: {', '.join((*TRANSPORTS, AUTO))}")
    if not t.kernel and (t.sender is None or t.receiver is None):
        raise ValueError(f"transport {t.name!r} needs sender and receiver (its Python endpoints, the oracle)")
    TRANSPORTS[t.name] = t
    return t


def as_config(name):
    """What another process needs to know this transport: {} for a built-in one, else
    {"transport_entry": its fields, each class as "module:qualname"} (`adopt` reads it)."""
    t = transport(name)
    if t.name in BUILT_IN:
        return {}
    entry = {f.name: _path(v) if f.name in CLASSES else v
             for f in fields(t) if (v := getattr(t, f.name)) is not None}
    return {"transport_entry": entry}


def adopt(cfg):
    """Register the transport `as_config` described in cfg, if it did (a host process)."""
    entry = cfg.get("transport_entry")
    if entry is not None:
        register(Transport(**{k: _load(v) if k in CLASSES else v for k, v in entry.items()}))


def _path(cls):
    if cls.__module__ == "__main__" or "<locals>" in cls.__qualname__:
        raise ValueError(f"{cls.__qualname__} is defined where another process cannot import it "
                         f"(module {cls.__module__}): define a transport's endpoints in a module")
    return f"{cls.__module__}:{cls.__qualname__}"


def _load(path):
    module, _, qualname = path.partition(":")
    obj = importlib.import_module(module)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return obj


def for_pipeline(kind, paired):
    """The transport a run uses: `kind` unless it is `auto`, then the one its pipeline
    declares it pairs with (`paired`, e.g. PipelineSpec.paired_transport: DLCP presets with
    the DLCP transport), and the reliable one (the fair baseline) where it declares none."""
    if kind != AUTO:
        return transport(kind).name
    return transport(paired or DEFAULT).name
