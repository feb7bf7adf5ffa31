"""The checks every builder makes of its parameters, each error naming the topology and the
field, and the host nodes they make."""
from topologies.model import HOST, MIN_BUFFER_BYTES, Node, TopologyError, check_int, check_rate


def _rate(topo: str, name: str, v) -> int:
    try:
        return check_rate(name, v)
    except TopologyError as e:
        raise TopologyError(f"{topo}: {e}") from None


def _int(topo: str, name: str, v, lo: int, what: str = "") -> int:
    try:
        return check_int(name, v, lo, what)
    except TopologyError as e:
        raise TopologyError(f"{topo}: {e}") from None


def _delay(topo: str, name: str, v) -> int:
    return _int(topo, name, v, 0, " (ns)")


def _buffer(topo: str, name: str, v) -> int:
    return _int(topo, name, v, MIN_BUFFER_BYTES, " (bytes, one full frame)")


# Links a topology may have, checked before any is built: a fat tree of k=64 (65,536 hosts,
# 196,608 links) fits; a typo such as 10**9 hosts is refused instead of filling memory.
MAX_LINKS = 200_000


def _size(topo: str, links: int, how: str) -> None:
    if links > MAX_LINKS:
        raise TopologyError(f"{topo}: {how} makes {links:,} links; at most {MAX_LINKS:,}")


def _hosts(n: int, first: int = 1, **attrs) -> list[Node]:
    return [Node(f"h{i}", HOST, "host", **attrs) for i in range(first, first + n)]
