"""Background traffic: empirical flow sizes, Poisson arrivals at a target load.

Flow-size CDFs (sizes in packets of 1460 payload bytes, as the pFabric/PIAS ns-2 scripts
give them; points are linearly interpolated):

- ``websearch``: the web-search workload measured in the DCTCP paper (Alizadeh et al.,
  SIGCOMM 2010), mean about 1,141 packets = 1.67 MB;
- ``datamining``: the data-mining workload from VL2 (Greenberg et al., SIGCOMM 2009), mean
  about 5,117 packets = 7.47 MB.

Arrivals form one Poisson process whose mean rate fills ``load`` of a link of ``link_bps``:
mean interarrival = mean flow size * 8 / (load * link_bps). Pass the rate of the link whose
load you mean (a host's access link, or the sum over hosts for a network-wide load).
"""

from __future__ import annotations

from typing import NamedTuple, Sequence

import numpy as np

PACKET_BYTES = 1460

# (size in packets, cumulative probability)
FLOW_CDFS: dict[str, tuple[tuple[float, float], ...]] = {
    "websearch": ((6, 0.0), (6, 0.15), (13, 0.2), (19, 0.3), (33, 0.4), (53, 0.53),
                  (133, 0.6), (667, 0.7), (1333, 0.8), (3333, 0.9), (6667, 0.97),
                  (20000, 1.0)),
    "datamining": ((1, 0.0), (1, 0.5), (2, 0.6), (3, 0.7), (7, 0.8), (267, 0.9),
                   (2107, 0.95), (66667, 0.99), (666667, 1.0)),
}


class Flow(NamedTuple):
    start_s: float
    src: int | str
    dst: int | str
    nbytes: int


def _table(cdf: str) -> tuple[np.ndarray, np.ndarray]:
    if cdf not in FLOW_CDFS:
        raise KeyError(f"unknown flow-size CDF {cdf!r}; known: {', '.join(FLOW_CDFS)}")
    sizes, probs = np.array(FLOW_CDFS[cdf], dtype=float).T
    return sizes * PACKET_BYTES, probs


def mean_flow_bytes(cdf: str) -> float:
    """Mean of the piecewise-linear CDF (uniform within each segment)."""
    sizes, probs = _table(cdf)
    return float(np.sum(np.diff(probs) * (sizes[1:] + sizes[:-1]) / 2))


def sample_flow_sizes(cdf: str, n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` flow sizes in bytes (int64, >= 1) by inverse-CDF sampling."""
    sizes, probs = _table(cdf)
    return np.maximum(1, np.rint(np.interp(rng.random(n), probs, sizes))).astype(np.int64)


def poisson_flows(cdf: str, load: float, link_bps: float, duration_s: float,
                  hosts: int | Sequence, seed: int, max_flows: int = 1_000_000) -> list[Flow]:
    """Flows starting in [0, duration_s), sorted by start, each between two distinct hosts
    drawn uniformly. Same arguments, same list. Raises if the expected count exceeds
    ``max_flows``; a random excess beyond it is cut off (the list never exceeds it).

    Gaps, sizes, sources and destinations each come from a stream of their own (spawned from
    `seed`), so a longer duration only appends flows, and a rate k times lower gives the same
    flows at k times the start times: a run's time dilation and time limit leave the flows of
    its first seconds alone (with one stream, a dilated run drew different sizes)."""
    if not 0 < load <= 1 or link_bps <= 0 or duration_s < 0:
        raise ValueError(f"need 0 < load <= 1, link_bps > 0, duration_s >= 0; got {load}, "
                         f"{link_bps}, {duration_s}")
    names = list(range(hosts)) if isinstance(hosts, int) else list(hosts)
    if len(names) < 2:
        raise ValueError("background traffic needs at least two hosts")
    mean_gap = mean_flow_bytes(cdf) * 8 / (load * link_bps)
    expected = duration_s / mean_gap
    if expected > max_flows:
        raise ValueError(f"{expected:.0f} flows expected, above max_flows={max_flows}; "
                         "shorten the duration or raise max_flows")
    gaps, size_rng, src_rng, dst_rng = (np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(4))
    units = np.empty(0)         # start times in mean gaps: the same whatever the rate
    horizon = duration_s / mean_gap
    while (not len(units) or units[-1] < horizon) and len(units) < max_flows:  # draw gaps in batches
        batch = max(16, int(expected - len(units) + 4 * np.sqrt(expected + 1)))
        more = (units[-1] if len(units) else 0.0) + np.cumsum(gaps.standard_exponential(batch))
        units = np.concatenate([units, more])
    n = min(int(np.searchsorted(units, horizon)), max_flows)
    starts = units[:n] * mean_gap
    sizes = sample_flow_sizes(cdf, n, size_rng)
    src = src_rng.integers(0, len(names), n)
    dst = (src + dst_rng.integers(1, len(names), n)) % len(names)  # never src itself
    return [Flow(float(s), names[a], names[b], int(z))
            for s, a, b, z in zip(starts, src, dst, sizes)]
