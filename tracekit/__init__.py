"""tracekit: why multi-node PyTorch training hangs or crawls, from the logs its ranks write."""

import os

__version__ = "0.1.0"

# polars writes its allocator's settings into the environment when it loads; the runs tracekit
# launches get the user's own value back (tracekit.run.rank_env). tracekit asks for nothing more:
# huge pages (`thp:always`) made a second ingest in one process faster but the first, the one a
# command runs, slower: 1 GB of NCCL logs took 2.3-2.6 s with them, 1.4-1.5 s without (2 cores).
USER_ALLOCATOR = os.environ.get("_RJEM_MALLOC_CONF")
