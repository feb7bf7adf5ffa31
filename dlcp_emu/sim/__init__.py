"""The simulator: the same switch models and endpoints, driven by a discrete-event loop in
virtual time (integer nanoseconds)."""
from dlcp_emu.sim.events import EventLoop
from dlcp_emu.sim.network import SimNetwork

__all__ = ["EventLoop", "SimNetwork"]
