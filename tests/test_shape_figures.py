"""The figures of speed read their timed collectives through the sources (sources.best_lazy): a
store scanned from disk, whose collectives stay there, gives the same figures as one read whole."""

import pytest

from tests.conftest import SAMPLES
from tracekit import figures
from tracekit import store as stores
from tracekit.ingest import ingest
from tracekit.store import Store


@pytest.mark.parametrize("sample, source", [("gloo_1x4_straggler", "fr"), ("gpu_2x1_healthy", "kineto"),
                                            ("gpu_nccl_slow", "fr")])
def test_a_scanned_store_gives_the_figures_a_read_one_gives(tmp_path, sample, source):
    ingest([SAMPLES / sample]).write(tmp_path / "store")
    scanned, read = stores.scan(tmp_path / "store"), Store.read(tmp_path / "store")
    assert not hasattr(scanned.collectives, "height")  # on disk: a LazyFrame
    rate = figures.collective_rate(scanned)
    assert rate.value and rate.value > 0 and rate.source == source
    assert rate == figures.collective_rate(read)
    assert figures.time_in_collectives(scanned) == figures.time_in_collectives(read)
