"""Where the files are parsed (worker processes: tracekit/dumps.py; Ray: tracekit/engines.py) must not
change the store.

Dumps decoded in worker processes give the store of one process, row for row; a local Ray cluster
(one task per batch of files, combined on the driver) gives it table for table, on several samples.
"""

import importlib.util

import polars as pl
import pytest
from click.testing import CliRunner

from tests.conftest import SAMPLES, copy_sample
from tracekit import dumps, engines
from tracekit.cli import main
from tracekit.ingest import ingest, parse_files
from tracekit.store import scan
from tracekit.verdict import decide

FR_SAMPLES = sorted({p.parent for p in SAMPLES.glob("*/*") if p.is_file() and p.read_bytes()[:1] == b"\x80"})


def test_dumps_decoded_in_worker_processes_give_the_one_process_store(monkeypatch):
    pickles = sum(1 for run in FR_SAMPLES for p in run.rglob("*") if p.is_file() and p.read_bytes()[:1] == b"\x80")
    assert pickles >= 32  # enough real dumps that ingest hands them to workers
    monkeypatch.setattr(dumps, "DUMPS_FOR_WORKERS", 32)
    asked = []
    real = dumps.decode_dumps
    monkeypatch.setattr(dumps, "decode_dumps", lambda paths: asked.append(len(paths)) or real(paths))
    pooled = ingest(FR_SAMPLES)
    assert asked and asked[0] >= pickles and dumps.cores() > 1  # (JSON traces go to the workers too)
    monkeypatch.setattr(dumps, "DUMPS_FOR_WORKERS", 10**9)
    here = ingest(FR_SAMPLES)
    for name, table in here.tables().items():
        assert pooled.tables()[name].equals(table), name
    assert here.collectives.filter(pl.col("source") == "fr").height > 1000


def test_parse_files_without_workers_decodes_here(monkeypatch):
    monkeypatch.setattr(dumps, "DUMPS_FOR_WORKERS", 1)
    monkeypatch.setattr(dumps, "decode_dumps", lambda paths: pytest.fail("no workers asked for"))
    files = [str(p) for p in sorted((SAMPLES / "gpu_2x1_divergence").iterdir()) if p.suffix == ".pkl"]
    got = parse_files(files, workers=False)
    assert [row["kind"] for row, _ in got] == ["flight-recorder"] * len(files)


ray_installed = importlib.util.find_spec("ray") is not None
RAY_RUNS = ["gloo_2x2_deadlock", "gpu_2x1_divergence", "swift_2x2_wandb", "zero3_crash_2x2", "gpu_2x1_initstall"]


def _sorted(df: pl.DataFrame) -> pl.DataFrame:
    return df.sort(df.columns, nulls_last=True)


@pytest.fixture(scope="module")
def ray_cluster():
    if not ray_installed:
        pytest.skip("ray is not installed (pip install -e '.[ray]')")
    import ray

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    yield ray
    ray.shutdown()


def _same_rows(name: str, a: pl.DataFrame, b: pl.DataFrame) -> bool:
    """The same table. Row for row, but for the collectives: a batch of text files gives its rows
    with its first file, so batches cut elsewhere put a log's collectives elsewhere among the dumps'."""
    return _sorted(a).equals(_sorted(b)) if name == "collectives" else a.equals(b)


def test_a_local_ray_cluster_gives_the_one_process_store(ray_cluster):
    for run in RAY_RUNS:
        # several tasks for each run: one per file
        on_ray = engines.parse_on_ray([SAMPLES / run], tasks=len(list((SAMPLES / run).rglob("*"))))
        here = ingest([SAMPLES / run])
        for name, table in here.tables().items():
            assert _same_rows(name, on_ray.tables()[name], table), f"{run}: {name} differs"
        assert decide(on_ray).to_dict() == decide(here).to_dict(), run


def test_past_the_drivers_memory_tasks_write_the_collectives_and_the_verdict_streams_them(ray_cluster, tmp_path):
    """ingest_on_ray_to_disk: tasks write the collectives as parts, resolve their ranks, the parts
    merge into the store; the store is the one-process store, and the verdict over it (scanned) too."""
    from tracekit.store import Store

    for run in RAY_RUNS:
        folder = engines.ingest_on_ray_to_disk([SAMPLES / run], tmp_path / run / "store", tasks=4)
        assert sorted(p.name for p in (tmp_path / run).iterdir()) == ["store"]  # the parts are gone
        here, disk = ingest([SAMPLES / run]), Store.read(folder)
        for name, table in here.tables().items():
            assert _same_rows(name, disk.tables()[name], table), f"{run}: {name} differs"
        assert decide(scan(folder)).to_dict() == decide(here).to_dict(), run


@pytest.mark.skipif(not ray_installed, reason="ray is not installed (pip install -e '.[ray]')")
def test_ingest_command_on_ray_writes_the_store_and_verdict_of_one_process(tmp_path):
    run = tmp_path / "run"
    copy_sample("gloo_2x2_deadlock", run)
    here = CliRunner().invoke(main, ["ingest", str(run), "--no-store", "--json"])
    on_ray = CliRunner().invoke(main, ["ingest", str(run), "--engine", "ray", "--json"])
    assert on_ray.exit_code == 0, on_ray.output
    assert on_ray.stdout == here.stdout
    assert (run / ".tracekit" / "collectives.parquet").exists()


def test_an_unknown_engine_is_one_line_and_exit_2(tmp_path):
    r = CliRunner().invoke(main, ["ingest", str(SAMPLES / "gloo_2x2_deadlock"), "--no-store", "--engine", "spark"])
    assert r.exit_code == 2
    assert r.output.strip().splitlines()[-1].startswith("error: ")


@pytest.mark.parametrize("run", ["gloo_2x2_deadlock", "gpu_2x1_divergence", "zero3_slow_2x2", "gloo_1x4_straggler",
                                 "zero3_wandb_2x2", "gpu_2x1_initstall", "swift_2x2_healthy"])
def test_a_scanned_store_gives_the_verdict_of_the_store_in_memory(run, tmp_path):
    """store.scan leaves the collectives on disk (a LazyFrame); the verdict streams its group-bys
    over them and must say exactly what it says over the store read into memory."""
    from tracekit.store import Store

    folder = ingest([SAMPLES / run]).write(tmp_path / "store")
    scanned = scan(folder)
    assert isinstance(scanned.collectives, pl.LazyFrame)
    assert decide(scanned).to_dict() == decide(Store.read(folder)).to_dict()


def test_scan_refuses_a_broken_store_in_one_line(tmp_path):
    from tracekit.errors import StoreError

    folder = ingest([SAMPLES / "gloo_2x2_deadlock"]).write(tmp_path / "store")
    (folder / "collectives.parquet").write_bytes(b"not parquet")
    with pytest.raises(StoreError, match="collectives.parquet: not a readable parquet file"):
        scan(folder)


def test_group_members_keeps_each_distinct_list_once():
    """align.group_members: where every dump lists a group alike, one list; where dumps disagree (in
    members or in length), each distinct list, as deduplicating every row would."""
    from tests.factory import make_store
    from tracekit import align

    def lists(rows):
        got = align.group_members(make_store(groups=[dict(file=f"fr{r}", rank=r, pg=pg, members=m) for r, pg, m in rows]))
        return sorted((pg, tuple(m)) for pg, m in got.iter_rows())

    assert lists([(r, "0", [0, 1, 2]) for r in range(3)]) == [("0", (0, 1, 2))]
    assert lists([(0, "0", [0, 1]), (1, "0", [0, 1]), (2, "0", [1, 2]), (0, "7", [0, 2]), (2, "7", [0, 2, 3]),
                  (1, "8", [])]) == [("0", (0, 1)), ("0", (1, 2)), ("7", (0, 2)), ("7", (0, 2, 3))]
