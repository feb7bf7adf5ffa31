"""A real model and data set for training under the emulated network: a multilayer
perceptron in numpy on scikit-learn's handwritten digits (1,797 8x8 images, shipped inside
the package: nothing is downloaded).

The parameters are one flat float32 vector, dense layer by dense layer (weights, then
biases); a layer's slice of it is the gradient tensor the transports carry, so its layer id
is the trace's (`Mlp.trace`). Gradients are the sum over the given samples of the
cross-entropy gradient times a scale: a worker passes 1 / global batch, so the sum of the
workers' gradients is the mean over the whole batch.
"""
import gzip
import importlib.util
import math
from pathlib import Path

import numpy as np
import pandas as pd

from workloads import Trace

DATASETS = ("digits",)
MODELS = ("mlp",)
SPLIT_SEED = 0   # the held-out set is the same for every run and seed


def load_dataset(name="digits"):
    """(X float32 in [0, 1], y int64): the data set, read from the file scikit-learn ships
    (importing scikit-learn itself costs seconds; the file is all that is needed)."""
    if name not in DATASETS:
        raise ValueError(f"dataset must be one of {', '.join(DATASETS)}, got {name!r}")
    found = importlib.util.find_spec("sklearn")
    if found is None or not found.submodule_search_locations:
        raise RuntimeError("the digits data set comes with scikit-learn: install it "
                           "(`make setup` does)")
    path = Path(found.submodule_search_locations[0]) / "datasets" / "data" / "digits.csv.gz"
    with gzip.open(path, "rt") as f:
        table = np.loadtxt(f, delimiter=",", dtype=np.float32)
    return table[:, :-1] / np.float32(16.0), table[:, -1].astype(np.int64)


def split(X, y, test_fraction):
    """(train X, train y, test X, test y): a fixed shuffle, the last test_fraction held out."""
    order = np.random.default_rng(SPLIT_SEED).permutation(len(y))
    n_test = max(1, int(round(test_fraction * len(y))))
    train, test = order[:-n_test], order[-n_test:]
    return X[train], y[train], X[test], y[test]


class Mlp:
    """Dense layers with ReLU between them and softmax cross-entropy on top."""

    def __init__(self, sizes):
        self.sizes = tuple(int(s) for s in sizes)
        if len(self.sizes) < 2 or min(self.sizes) < 1:
            raise ValueError(f"an MLP needs at least input and output sizes >= 1, got {sizes!r}")
        self.layers = []          # per dense layer: (start, stop) of its slice, weight shape
        start = 0
        for n_in, n_out in zip(self.sizes, self.sizes[1:]):
            stop = start + n_in * n_out + n_out
            self.layers.append(((start, stop), (n_in, n_out)))
            start = stop
        self.n_params = start

    def init(self, seed):
        """He-initialised weights, zero biases."""
        rng = np.random.default_rng([seed, 0x6D6C70])
        w = np.zeros(self.n_params, dtype=np.float32)
        for (a, _), (n_in, n_out) in self.layers:
            w[a:a + n_in * n_out] = rng.standard_normal(n_in * n_out, dtype=np.float32) \
                * np.float32(math.sqrt(2.0 / n_in))
        return w

    def _unpack(self, w):
        for (a, b), (n_in, n_out) in self.layers:
            yield w[a:a + n_in * n_out].reshape(n_in, n_out), w[a + n_in * n_out:b]

    def logits(self, w, X):
        h = X
        params = list(self._unpack(w))
        for i, (W, b) in enumerate(params):
            h = h @ W + b
            if i + 1 < len(params):
                np.maximum(h, 0, out=h)
        return h

    def gradient(self, w, X, y, scale):
        """scale * the sum over samples of d(cross-entropy)/dw, float32, flat like w."""
        params = list(self._unpack(w))
        acts = [X]
        for i, (W, b) in enumerate(params):
            h = acts[-1] @ W + b
            if i + 1 < len(params):
                np.maximum(h, 0, out=h)
            acts.append(h)
        z = acts[-1]
        p = np.exp(z - z.max(axis=1, keepdims=True))
        p /= p.sum(axis=1, keepdims=True)
        p[np.arange(len(y)), y] -= 1.0
        delta = p * np.float32(scale)
        g = np.empty_like(w)
        for i in range(len(params) - 1, -1, -1):
            (a, b), (n_in, n_out) = self.layers[i]
            g[a:a + n_in * n_out] = (acts[i].T @ delta).ravel()
            g[a + n_in * n_out:b] = delta.sum(axis=0)
            if i:
                delta = (delta @ params[i][0].T) * (acts[i] > 0)
        return g

    def evaluate(self, w, X, y):
        """(accuracy, mean cross-entropy) on (X, y)."""
        z = self.logits(w, X).astype(np.float64)
        z -= z.max(axis=1, keepdims=True)
        logp = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
        return float((z.argmax(axis=1) == y).mean()), float(-logp[np.arange(len(y)), y].mean())

    def trace(self, compute_ms, name="mlp"):
        """The model as the agents replay it: one layer per dense layer, its gradient bytes
        the slice's, compute times an iteration's compute_ms split in proportion to the
        layers' multiply-adds, a third forward and two thirds backward (as the zoo's
        synthetic traces). The magnitude columns are never drawn from: the gradients are
        computed."""
        nbytes = np.array([4 * (b - a) for (a, b), _ in self.layers], dtype=np.int64)
        macs = np.array([n_in * n_out for _, (n_in, n_out) in self.layers], dtype=float)
        share = macs / macs.sum() * compute_ms * 1000.0
        layers = pd.DataFrame({
            "layer_id": np.arange(len(self.layers)),
            "name": [f"dense{i}" for i in range(len(self.layers))],
            "grad_bytes": nbytes, "backward_us": share * 2 / 3, "forward_us": share / 3,
            "mag_dist": "lognormal", "mag_mu": -7.0, "mag_sigma": 1.0})
        meta = {"source": f"numpy MLP {'-'.join(map(str, self.sizes))} (float32 gradients)",
                "synthetic": "forward_us, backward_us (multiply-add split of the spec's "
                             "compute_ms); magnitudes unused (the gradients are computed)"}
        return Trace(name, layers, compute_ms * 1000.0, meta=meta).validate()
