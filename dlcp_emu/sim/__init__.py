"""The simulator: the same switch models and endpoints, driven by a discrete-event loop in
virtual time (integer nanoseconds)."""
from .events import EventLoop
from .network import SimNetwork

__all__ = ["EventLoop", "SimNetwork"]
