"""The synthetic numbers a schedule's messages carry, drawn so that the Python agent
(`schedule_agent.py`) and its twin in the core (dlcp_native/src/host/schedule_agent.cpp)
draw the same bits: a counter-based hash (SplitMix64) of (seed, iteration, message gid,
index), not a sequential generator whose state would depend on the order messages are sent.

- values (payload "values"): float32 in [-1, 1), 24 random bits each, exact in both twins;
- magnitudes (payload "sizes"): one per chunk, a double in (0, 1] with 53 random bits.

The chunks' classes (the message's own octiles) and droppable chunks (the smallest first)
depend only on the order of the magnitudes, so a uniform draw serves as the lognormal did.
"""
import numpy as np

GOLDEN = 0x9E3779B97F4A7C15
MASK = (1 << 64) - 1
_U = np.uint64


def _mix_int(z):
    """SplitMix64's finaliser on a Python int (64 bits)."""
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return z ^ (z >> 31)


def message_key(seed, iteration, gid):
    """The stream of one message: mix(mix(mix(seed) ^ iteration) ^ gid)."""
    return _mix_int(_mix_int(_mix_int(seed & MASK) ^ (iteration & MASK)) ^ (gid & MASK))


def draws(key, n):
    """The first n outputs of SplitMix64 from state `key` (uint64 array)."""
    z = _U(key) + (np.arange(1, n + 1, dtype=np.uint64) * _U(GOLDEN))
    z = (z ^ (z >> _U(30))) * _U(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> _U(27))) * _U(0x94D049BB133111EB)
    return z ^ (z >> _U(31))


def message_values(seed, iteration, gid, n):
    """n float32 values in [-1, 1): the top 24 bits of each draw, centred, times 2**-23."""
    bits = (draws(message_key(seed, iteration, gid), n) >> _U(40)).astype(np.int64) - (1 << 23)
    return bits.astype(np.float32) * np.float32(2.0 ** -23)


def chunk_magnitudes(seed, iteration, gid, nbytes, chunk_bytes):
    """One magnitude per chunk of an nbytes message: (top 53 bits + 1) * 2**-53, in (0, 1]."""
    n = -(-nbytes // chunk_bytes)
    top = (draws(message_key(seed, iteration, gid), n) >> _U(11)) + _U(1)
    return top.astype(np.float64) * 2.0 ** -53
