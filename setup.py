"""The one compiled part: tracekit/_scan.c, the single-pass reader of NCCL COLL lines.

Optional: where it cannot be built (no C compiler), tracekit reads the same lines with polars
alone, slower (``tracekit doctor`` and benchmarks/ingest_nccl.py say which is in use).
"""

from setuptools import Extension, setup

setup(ext_modules=[Extension("tracekit._scan", ["tracekit/_scan.c"], optional=True,
                             extra_compile_args=["-std=c11"])])
