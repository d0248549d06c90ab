"""``--help`` for the benchmark scripts: print the script's docstring (it holds the usage) and exit 0,
before anything is built or timed."""

import sys


def answer_help(doc: str) -> None:
    if {"-h", "--help"} & set(sys.argv[1:]):
        print(doc.strip())
        raise SystemExit(0)
