"""What the tiering-*.py scripts share: refusing bad input in one line, and reading a file.

Imported by the scripts beside it (a script's own directory is first on Python's path).
"""
import os
import sys

PROG = os.path.basename(sys.argv[0]).removesuffix(".py")


def die(msg):
    """The script's name and `msg` on standard error, exit status 2."""
    print(f"{PROG}: {msg}", file=sys.stderr)
    sys.exit(2)


def read_text(path):
    """The whole of `path`, or `die` naming it and why it cannot be read."""
    try:
        with open(path) as f:
            return f.read()
    except OSError as e:
        die(f"{path}: {e.strerror}")
