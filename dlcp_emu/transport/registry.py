"""Every transport by name, with what it can do: the one place that decides what a
transport kind means (a new transport is a module of endpoints and a line here).

- `bounded_loss`: it may zero-fill up to the spec's loss bound (the summary then holds the
  run to that bound); the others deliver every byte.
- `kernel`: the host kernel's TCP, not a sans-I/O endpoint pair: only a real network stack
  has it, so only the emulator runs it.
- `native_sender`, `native_receiver`: the same endpoints compiled (`transport.native`),
  which the simulator's core runs without Python per packet.
"""
from dataclasses import dataclass

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


TRANSPORTS = {t.name: t for t in (
    Transport("tcp", "kernel TCP connections, as Horovod or Gloo over TCP", kernel=True),
    Transport("reliable", "the packet transport, every byte delivered (retransmission)",
              ReliableSender, ReliableReceiver,
              native_sender=native.ReliableSender, native_receiver=native.ReliableReceiver),
    Transport("dlcp", "bounded loss: small-magnitude chunks may be lost, zero-filled; probe + "
              "bitmap retransmission of the rest", DlcpSender, DlcpReceiver, bounded_loss=True,
              native_sender=native.DlcpSender, native_receiver=native.DlcpReceiver),
)}
# A spec may also say `auto`: the DLCP transport under DLCP presets, else the reliable one.
AUTO = "auto"


def transport(name):
    """The transport of that name, or a ValueError naming the allowed ones."""
    try:
        return TRANSPORTS[name]
    except KeyError:
        raise ValueError(f"transport must be one of {', '.join(TRANSPORTS)}, got {name!r}") from None


def for_preset(kind, preset):
    """The transport a switch preset runs with: `auto` pairs DLCP presets with the DLCP
    transport and every other preset with the reliable one (the fair baseline)."""
    if kind != AUTO:
        return transport(kind).name
    return "dlcp" if str(preset).startswith("dlcp") else "reliable"
