"""The ``rgrade`` command, installed with the package: the same command line
as the Rust binary (grade, compare, report, merge, gen), run in the
extension, so a pip install needs no cargo. ``python -m rgrade`` runs it too.
"""

import signal
import sys

from ._rgrade import main as _main


def main() -> None:
    """Run ``rgrade`` with this process's arguments and exit with its status."""
    # Ctrl-C stops the command as it stops the binary: Python's handler
    # would wait for the extension to return.
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    sys.exit(_main(["rgrade", *sys.argv[1:]]))


if __name__ == "__main__":
    main()
