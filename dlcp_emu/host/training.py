"""Live data-parallel training: what a worker computes, sends and applies when a run trains
a real model (spec `[training]`) instead of replaying a trace with synthetic gradients.

Every worker holds its own replica of the model. Iteration i's global batch is drawn from
(seed, i), the same at every rank; rank r takes the r-th slice of it and computes its
gradient scaled by 1 / global batch, so the workers' sum is the batch mean. Those values
are the payloads the agent synchronises; the transports class each chunk by its own values
and zero-fill what they give up, and each replica applies what arrived (SGD with momentum,
bucket by bucket). Lost values differ between receivers, so replicas may drift apart: each
is evaluated on the held-out set, and the run reports their mean.

All of it is CPU work done inside the agent's callbacks: the simulator spends no virtual
time on it, and the emulator's hosts do it within the compute wait the plan gives (the
spec's compute_ms), off the network's clock.

`reference` trains the same model on the same batches in one process, with nothing lost or
compressed: the lossless baseline (and, with no loss, what the workers must reproduce).
"""
import functools
from dataclasses import asdict, dataclass

import numpy as np

from dlcp_emu.host.learning import DATASETS, MODELS, Mlp, load_dataset, split


@dataclass(frozen=True)
class TrainingSpec:
    """What the spec's [training] table says (the defaults live here, once)."""
    model: str = "mlp"
    hidden: tuple = (512, 512)     # hidden layer widths
    dataset: str = "digits"
    batch_size: int = 32           # samples per worker and iteration
    lr: float = 0.05
    momentum: float = 0.9
    compute_ms: float = 10.0       # real-world compute time of one iteration (forward + backward)
    eval_every: int = 10           # evaluate on the held-out set every N iterations (and at the end)
    target_accuracy: float = 0.95  # the summary reports when the mean replica first reaches it
    test_fraction: float = 0.2     # held out

    def __post_init__(self):
        object.__setattr__(self, "hidden", tuple(self.hidden))
        if self.model not in MODELS or self.dataset not in DATASETS:
            raise ValueError(f"training model must be one of {MODELS} and dataset one of "
                             f"{DATASETS}, got {self.model!r}, {self.dataset!r}")

    def as_config(self):
        return {**asdict(self), "hidden": list(self.hidden)}

    def network(self, n_features, n_classes):
        return Mlp((n_features, *self.hidden, n_classes))


@functools.lru_cache(maxsize=4)
def data(dataset, test_fraction):
    """(train X, train y, test X, test y), read once per process."""
    X, y = load_dataset(dataset)
    return split(X, y, test_fraction)


def model_of(spec):
    Xtr, ytr, _, _ = data(spec.dataset, spec.test_fraction)
    return spec.network(Xtr.shape[1], int(ytr.max()) + 1)


def trace_of_training(spec):
    """The trace the agents replay: the model's layers, the spec's compute time."""
    return model_of(spec).trace(spec.compute_ms, name=f"{spec.model}-{spec.dataset}")


def _single_blas_thread():
    """One BLAS thread: a host's training must not take the cores the network runs on (a
    multithreaded matrix product on a loaded 2-core machine was 15x slower, too)."""
    from threadpoolctl import threadpool_limits
    threadpool_limits(1)


def global_batch(n_train, workers, batch_size, seed, iteration):
    """Indices of iteration's global batch, workers x batch_size samples without repeats."""
    return np.random.default_rng([seed, iteration, 0x6261]).choice(
        n_train, size=min(n_train, workers * batch_size), replace=False)


class Training:
    """One worker's replica: its gradient of the current iteration, and the update."""

    def __init__(self, spec, rank, workers, seed, iterations):
        _single_blas_thread()
        self.spec, self.rank, self.workers, self.seed = spec, rank, workers, seed
        self.iterations = iterations
        self.X, self.y, self.X_test, self.y_test = data(spec.dataset, spec.test_fraction)
        self.model = model_of(spec)
        self.w = self.model.init(seed)          # every replica starts alike
        self.v = np.zeros_like(self.w)
        self.grad = None
        self.evaluations = []                   # {iteration, t_ns, accuracy, loss}

    def layer_range(self, layer_id):
        return self.model.layers[layer_id][0]

    def compute(self, iteration):
        idx = global_batch(len(self.y), self.workers, self.spec.batch_size, self.seed, iteration)
        mine = np.array_split(idx, self.workers)[self.rank]
        self.grad = self.model.gradient(self.w, self.X[mine], self.y[mine], 1.0 / len(idx))

    def values(self, layer_ids):
        """This rank's gradient for a bucket, its layers in bucket order (a new array)."""
        return np.concatenate([self.grad[slice(*self.layer_range(lid))] for lid in layer_ids])

    def apply(self, layer_ids, reduced):
        """Momentum SGD on the bucket's layers with the reduced gradient as it arrived."""
        off = 0
        for lid in layer_ids:
            a, b = self.layer_range(lid)
            _step(self.w[a:b], self.v[a:b], reduced[off:off + b - a], self.spec)
            off += b - a
        if off != reduced.size:
            raise ValueError(f"a bucket of {reduced.size} values for layers {layer_ids} of "
                             f"{off} values: training needs byte_scale = 1")

    def due(self, iteration):
        return (iteration + 1) % self.spec.eval_every == 0 or iteration == self.iterations - 1

    def evaluate(self, iteration, now):
        acc, loss = self.model.evaluate(self.w, self.X_test, self.y_test)
        self.evaluations.append({"iteration": iteration, "t_ns": now, "accuracy": acc, "loss": loss})


def _step(w, v, g, spec):
    v *= np.float32(spec.momentum)
    v += g
    w -= np.float32(spec.lr) * v


def reference(spec, workers, seed, iterations):
    """(weights, evaluations): the same training in one process on each whole global batch.
    Evaluations are at the iterations the workers evaluate, without a time."""
    one = Training(spec, 0, 1, seed, iterations)
    for i in range(iterations):
        idx = global_batch(len(one.y), workers, spec.batch_size, seed, i)
        g = one.model.gradient(one.w, one.X[idx], one.y[idx], 1.0 / len(idx))
        _step(one.w, one.v, g, spec)
        if one.due(i):
            one.evaluate(i, None)
    return one.w, one.evaluations
