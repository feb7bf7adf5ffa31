"""argparse `type=` checkers shared by the subcommands: each names what is allowed."""
import argparse


def positive_int(text):
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text!r}")
    return value


def open_fraction(text):
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"must be a fraction in (0, 1), got {text!r}")
    return value


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
        except tomllib.TOMLDecodeError:
            return v
    return field.strip(), [value(v) for v in values]
