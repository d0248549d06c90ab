"""tracekit: why multi-node PyTorch training hangs or crawls, from the logs its ranks write."""

__version__ = "0.1.0"
