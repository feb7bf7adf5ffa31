"""The magnitude models of a trace's layers: how |gradient| values are drawn from a layer's
``mag_dist``, ``mag_mu`` and ``mag_sigma`` (trace.py's docstring says what each model means).
One home for the rule: a trace's samples (`Trace.sample_magnitudes`) and a training plan's
draws for whole buckets (dlcp_emu/host/plan.py) both draw here.

Draws are float32 throughout, and each model computed only where it is used: float64 with
every branch evaluated everywhere cost more than the network time the values feed.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

# The models by name; a model's code in the vectorised draws is its index here.
DISTS = ("lognormal", "normal", "uniform")
LOGNORMAL = DISTS.index("lognormal")
NORMAL = DISTS.index("normal")
_SQRT3 = np.float32(np.sqrt(3))


def layer_params(layers: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(model code, mu, sigma) arrays indexed by layer id, from a trace's layer table."""
    by_id = layers.set_index("layer_id").sort_index()
    codes = {name: code for code, name in enumerate(DISTS)}
    return (by_id["mag_dist"].map(codes).to_numpy(), by_id["mag_mu"].to_numpy(float),
            by_id["mag_sigma"].to_numpy(float))


def draw(dist: str, mu: float, sigma: float, n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` draws of one layer's model (float32)."""
    return draws(np.full(n, DISTS.index(dist)), np.full(n, mu, np.float32),
                 np.full(n, sigma, np.float32), rng)


def draws(dist, mu, sigma, rng, lognormal_only=None) -> np.ndarray:
    """|gradient| draws, one per entry of the per-draw arrays of model codes, mu and sigma
    (float32). lognormal_only: whether every model is lognormal, if the caller knows (a
    payload-free message's shape does: its tests on small arrays cost as much as the draws)."""
    mags = rng.standard_normal(len(dist), dtype=np.float32)
    mags *= sigma
    mags += mu
    if lognormal_only is None:
        lognormal_only = bool((dist == LOGNORMAL).all())
    if lognormal_only:
        np.exp(mags, out=mags)
    else:
        lognormal, normal = dist == LOGNORMAL, dist == NORMAL
        uniform = ~(lognormal | normal)
        mags[lognormal] = np.exp(mags[lognormal])
        mags[normal] = np.abs(mags[normal])
        u = 2 * rng.random(int(uniform.sum()), dtype=np.float32) - 1
        mags[uniform] = mu[uniform] + sigma[uniform] * _SQRT3 * u
    return mags


def lognormal_layers(mu, sigma, counts, rng) -> np.ndarray:
    """`draws` where every layer is lognormal: the same values, bit for bit (the same draws,
    the same float32 operations), with layer k's parameters applied to its `counts[k]` draws
    rather than repeated into arrays as long as all of them (a third of the time they took)."""
    mags = rng.standard_normal(int(counts.sum()), dtype=np.float32)
    start = 0
    for m, s, n in zip(mu, sigma, counts.tolist()):
        part = mags[start:start + n]
        part *= s
        part += m
        start += n
    np.exp(mags, out=mags)
    return mags
