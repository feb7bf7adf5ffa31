"""The endpoint surfaces, as protocols: what a driver calls of an endpoint, and what a host's
stack calls of its senders and receiver. The Python models (`sender`, `receiver`) and their
compiled twins (`native`) both have them, and so have the host-level endpoints the drivers
run (`host.stack.HostStack`, `host.background.BackgroundEndpoint`); tests/test_surfaces.py
holds each class to its protocol.

A packet on this surface is `(DlcpHeader, payload)`, payload bytes or a memoryview valid only
during the call; times are integer ns.
"""
from typing import Protocol, runtime_checkable

from dlcp_emu.wire import DlcpHeader


@runtime_checkable
class Endpoint(Protocol):
    """What a driver (the simulator's hosts, a host process's UDP driver) calls: hand a
    packet in, ask what to send now, and when to ask next."""

    def receive(self, h: DlcpHeader, payload, now: int, ce: bool = False) -> None:
        """A packet arrived (ce: its IP header carried Congestion Experienced)."""

    def poll(self, now: int) -> list:
        """[(DlcpHeader, payload)] to send now; call after every receive and at next_timeout."""

    def next_timeout(self) -> int | None:
        """When poll must be called at the latest (None: not without a packet)."""


@runtime_checkable
class SenderEndpoint(Endpoint, Protocol):
    """A sender to one destination: messages in, their completions out."""

    src_rank: int
    dst_rank: int
    job: int
    payload_size: int   # a chunk's bytes (payload-free messages give magnitudes per chunk)

    def send(self, msg, now: int) -> None:
        """Send a `Message` (the native senders also take `nbytes=` for payload-free ones)."""

    def take_completed(self) -> list:
        """The `SendResult`s of messages known delivered since the last call."""

    @property
    def pending(self) -> int:
        """Messages not yet known delivered."""


@runtime_checkable
class ReceiverEndpoint(Endpoint, Protocol):
    """A host's receiver, for every source: packets in, whole (or bounded-loss) messages out."""

    rank: int
    payload_size: int

    def take_delivered(self) -> list:
        """The `Delivery`s completed since the last call."""
