"""What the fast tier (`make test-fast`, which sets DLCP_HYPOTHESIS=fast) runs of a property:
a fifth of the examples it draws in the full suite, the same ones every run (conftest.py's
derandomized profile). `make test` draws the whole count, anew each run."""
import os

FAST = os.environ.get("DLCP_HYPOTHESIS") == "fast"


def examples(n):
    """max_examples of a property that draws n in the full suite."""
    return max(10, n // 5) if FAST else n
