"""tracekit: why multi-node PyTorch training hangs or crawls, from the logs its ranks write."""

import os

__version__ = "0.1.0"

# polars' allocator (jemalloc) may back its big tables with huge pages, where the kernel leaves that
# to the program (THP "madvise", the common default): 2.5x faster building the collectives table of a
# 1 GB log, whose time is mostly first touches of fresh memory. It takes effect only if polars is
# imported after tracekit (as the CLI does); a value the user set is kept.
# (`tracekit run` leaves it out of the run's own environment)
ALLOCATOR_SET = "_RJEM_MALLOC_CONF" not in os.environ
os.environ.setdefault("_RJEM_MALLOC_CONF", "thp:always")
