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
