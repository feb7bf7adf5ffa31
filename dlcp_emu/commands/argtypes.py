"""argparse `type=` checkers shared by the subcommands: each names what is allowed. A bad
value ends in argparse's own error (exit 2, one line naming the flag), never a traceback."""
import argparse
import math
import os
from pathlib import Path


def positive_int(text):
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text!r}")
    return value


def fat_tree_k(text):
    """A fat tree's k: even, 2..64 (k=64 is 65,536 hosts, within topologies.MAX_LINKS)."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if not (2 <= value <= 64 and value % 2 == 0):
        raise argparse.ArgumentTypeError(f"must be an even integer in 2..64, got {text!r}")
    return value


def name(text):
    """A name (a preset): not blank."""
    if not text.strip():
        raise argparse.ArgumentTypeError(f"must be a name, got {text!r}")
    return text.strip()


def open_fraction(text):
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not (math.isfinite(value) and 0 < value < 1):
        raise argparse.ArgumentTypeError(f"must be a fraction in (0, 1), got {text!r}")
    return value


def number_at_least(lo, kind=float, lo_open=False):
    """A finite number >= lo (> lo with lo_open): NaN and infinity are refused too."""
    what = "an integer" if kind is int else "a finite number"
    rule = f"{what} {'>' if lo_open else '>='} {lo:g}"

    def parse(text):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be {rule}, got {text!r}") from None
        if not math.isfinite(value) or value < lo or (lo_open and value == lo):
            raise argparse.ArgumentTypeError(f"must be {rule}, got {text!r}")
        return value
    return parse


def name_list(text):
    """NAME,NAME,...: at least one name; blanks between commas are ignored."""
    names = [n.strip() for n in text.split(",") if n.strip()]
    if not names:
        raise argparse.ArgumentTypeError(f"must name at least one (comma-separated), got {text!r}")
    return names


def positive_int_list(text):
    """N,N,...: at least one positive integer."""
    values = [positive_int(n.strip()) for n in text.split(",") if n.strip()]
    if not values:
        raise argparse.ArgumentTypeError(f"must give at least one positive integer (comma-separated), got {text!r}")
    return values


def _first_existing(path):
    probe = path
    while not os.path.lexists(probe) and probe != probe.parent:
        probe = probe.parent
    return probe


def output_dir(text):
    """A folder to write in: it exists as a folder we may write in, or can be made where
    its nearest existing ancestor is such a folder. Nothing is created here."""
    if not text.strip():
        raise argparse.ArgumentTypeError("must be a folder, got an empty path")
    path = Path(text)
    probe = _first_existing(path.absolute())
    if not probe.is_dir():
        what = "is a file, not a folder" if probe == path.absolute() else f"is under a file ({probe})"
        raise argparse.ArgumentTypeError(f"{text} {what}")
    if not os.access(probe, os.W_OK | os.X_OK):
        raise argparse.ArgumentTypeError(f"{text}: cannot write in {probe} (permission denied)")
    return path


def folder_or_absent(text):
    """A folder to read, which may not exist yet (nothing there to read), but not a file."""
    path = Path(text)
    if not text.strip() or (os.path.lexists(path) and not path.is_dir()):
        raise argparse.ArgumentTypeError(f"must be a folder, got {text!r}")
    return str(path)


def output_file(text):
    """A file to write: not a folder, and its folder can be made and written in."""
    if not text.strip() or text.endswith("/"):
        raise argparse.ArgumentTypeError(f"must be a file path, got {text!r}")
    path = Path(text)
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"{text} is a folder, not a file")
    output_dir(str(path.absolute().parent))
    return path


def field_values(text):
    """FIELD=V1,V2,...: a spec field named as in the file (`compression.mode`) and the values
    to sweep it over, each read as a TOML value (numbers, true/false), else as a string."""
    import tomllib
    field, sep, rest = text.partition("=")
    values = [v.strip() for v in rest.split(",") if v.strip()]
    names = field.strip().split(".")
    if not sep or not values or not all(n.strip().replace("_", "").isalnum() for n in names):
        raise argparse.ArgumentTypeError(
            f"must be FIELD=V1,V2,... with FIELD a spec field such as compression.mode, got {text!r}")

    def value(v):
        try:
            return tomllib.loads(f"v = {v}")["v"]
        except (tomllib.TOMLDecodeError, RecursionError):
            return v
    return field.strip(), [value(v) for v in values]


def input_file(text):
    """A file to read: it exists, is not a folder, and can be read."""
    path = Path(text)
    if not path.is_file():
        raise argparse.ArgumentTypeError(f"{text}: no such file" if not path.exists()
                                         else f"{text} is not a file")
    if not os.access(path, os.R_OK):
        raise argparse.ArgumentTypeError(f"{text}: cannot read it (permission denied)")
    return path


def cluster_address(text):
    """`--cluster ADDRESS`: a scheduler's address, checked here so that a spec's path written
    after a bare --cluster is said to be no address (argparse gives it to the flag)."""
    from dlcp_emu.study.cluster import check_address
    try:
        check_address(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e).removeprefix("--cluster: ")) from None
    return text
