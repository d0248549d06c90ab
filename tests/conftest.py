import shutil
import warnings
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "samples"
CORPUS = ROOT.parent / "shared" / "corpus"
STORE = ".tracekit"  # a folder's own store (tracekit.load.CACHE), which README's first command writes


def copy_sample(name: str, dest: Path) -> Path:
    """A copy of ``samples/NAME`` at ``dest`` without the store a user's ``tracekit ingest
    samples/NAME`` may have left in it: tests see the sample as cloned, whatever ran before."""
    return Path(shutil.copytree(SAMPLES / name, dest, ignore=shutil.ignore_patterns(STORE)))


def samples_listing() -> set[str]:
    """The entries of ``samples/`` and of each sample folder (two levels: where a store lands)."""
    top = {p.name for p in SAMPLES.iterdir()}
    return top | {f"{d.name}/{p.name}" for d in SAMPLES.iterdir() if d.is_dir() for p in d.iterdir()}


@pytest.fixture(autouse=True)
def samples_left_as_they_were(request):
    """No test leaves anything in ``samples/``. A store a test wrote there is tracekit's own output
    and is removed (with a warning naming the test: pass --no-store or copy the sample); anything
    else new fails the test."""
    before = samples_listing()
    yield
    new = sorted(samples_listing() - before)
    stores = [n for n in new if Path(n).name == STORE]
    for n in stores:
        shutil.rmtree(SAMPLES / n, ignore_errors=True)
        warnings.warn(f"{request.node.nodeid} wrote samples/{n}: give --no-store or use copy_sample",
                      stacklevel=1)
    others = [n for n in new if n not in stores]
    assert not others, f"{request.node.nodeid} left files in samples/: {', '.join(others)}"


@pytest.fixture
def corpus():
    if not CORPUS.is_dir():
        pytest.skip("../shared/corpus is not here (a user's clone): corpus tests skipped")
    return CORPUS
