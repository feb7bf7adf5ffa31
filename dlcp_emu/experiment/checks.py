"""The checking mechanism of experiment specs: every problem collected, each naming its field
and what is allowed (`dlcp_emu.experiment.spec` lists the fields)."""
import math


class SpecError(ValueError):
    """An experiment spec is wrong; the message lists every problem, one a line."""

    def __init__(self, problems, source="spec"):
        self.problems = list(problems)
        if len(self.problems) == 1:
            super().__init__(f"{source}: {self.problems[0]}")
        else:
            super().__init__(f"{source}: {len(self.problems)} problem(s):\n  "
                             + "\n  ".join(self.problems))


class Checker:
    """Collects problems instead of stopping at the first."""

    def __init__(self):
        self.problems = []

    def take(self, table, prefix, fields):
        """fields: {name: (default or REQUIRED, check(value) -> bool, allowed text)}."""
        if not isinstance(table, dict):
            self.problems.append(f"[{prefix}] must be a table" if prefix else
                                 f"the spec must be a table of fields, got {type(table).__name__}")
            return {}
        out = {}
        for name in sorted(set(table) - set(fields)):
            self.problems.append(f"{_path(prefix, name)}: unknown field; allowed: {', '.join(fields)}")
        for name, (default, check, allowed) in fields.items():
            if name not in table:
                if default is REQUIRED:
                    self.problems.append(f"{_path(prefix, name)}: missing; must be {allowed}")
                else:
                    out[name] = default
                continue
            value = table[name]
            if not check(value):
                self.problems.append(f"{_path(prefix, name)}: {value!r} is not allowed; must be {allowed}")
            out[name] = value
        return out


REQUIRED = object()


def _path(prefix, name):
    return f"{prefix}.{name}" if prefix else name


def number(lo, hi=None, lo_open=False):
    """A finite number in [lo, hi] ((lo, hi] with lo_open): NaN and infinity never pass."""
    def check(v):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            return False
        if v < lo or (lo_open and v == lo):
            return False
        return hi is None or v <= hi
    return check


def integer(lo, hi=None):
    return lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= lo and (hi is None or v <= hi)


def one_of(options):
    # The options are names: anything else is none of them (and a table `in` a dict of
    # options would raise instead of being refused).
    return lambda v: isinstance(v, str) and v in options
