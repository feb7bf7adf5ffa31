"""A transport written in Python alone, the way a user adds one: the reliable transport's
endpoints subclassed, under a name of its own, with no native twin. conftest's
`python_only_transport` registers it for a test; an emulation's host processes load it from
their config (`transport.registry.as_config`), so it lives in a module they can import."""
from dlcp_emu.transport import ReliableReceiver, ReliableSender, Transport


class PyReliableSender(ReliableSender):
    """The reliable sender, as a user's own transport would start from it."""


class PyReliableReceiver(ReliableReceiver):
    """The reliable receiver, as a user's own transport would start from it."""


TRANSPORT = Transport("py-reliable", "the reliable transport in Python alone (a test's)",
                      PyReliableSender, PyReliableReceiver)
