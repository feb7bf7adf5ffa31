"""A host process's data plane, as a protocol: what `hostd` and `background_udp` drive.
`udp_driver.UdpDriver` (the Python endpoints over a UDP socket, select-based; the oracle) and
`native_host.NativeUdpHost` (the compiled endpoints in the core's loop, recvmmsg/sendmmsg)
are the two; `experiment.engine.choose_engine` chooses. tests/test_surfaces.py holds both to it."""
from collections.abc import Sequence
from typing import Callable, Protocol, runtime_checkable


@runtime_checkable
class HostDriver(Protocol):
    """One endpoint (a `HostStack` or a `BackgroundEndpoint`) on one UDP socket."""

    def serve(self, until: int, stopping, leave: Callable[[], bool] | None = None) -> None:
        """Move packets and run the endpoint's timers until `until` (CLOCK_MONOTONIC ns), a
        stop (`stopping` true) or `leave()`."""

    @property
    def sent(self) -> int:
        """Datagrams sent."""

    @property
    def received(self) -> int:
        """Datagrams handed to the endpoint."""

    @property
    def malformed(self) -> int:
        """Datagrams that were not DLCP packets."""

    @property
    def backlogged(self) -> bool:
        """Packets wait for the socket to take them."""

    @property
    def rx_lag_ns(self) -> Sequence[int]:
        """The latest receive lags: ns from the kernel's arrival stamp to handling."""
