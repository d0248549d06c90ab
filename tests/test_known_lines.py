"""Line families real logs carry, known or decoded (issue 31, round 2), on real excerpts of samples/wild:
each family's lines leave the unknown count, and the error lines among them stay (unknown or decoded)."""

from __future__ import annotations

import polars as pl
import pytest

from tracekit.ingest import ingest, unknown_lines

from conftest import ROOT

WILD = ROOT / "samples" / "wild"


def unknown(name: str) -> list[str]:
    return unknown_lines([WILD / name])["raw"].to_list()


@pytest.mark.parametrize("name, family", [
    ("dev-102-jax-gdb-sigbus-ncclshmopen.txt", ("#0 0x", "  from /usr/local/lib", "(gdb) bt", "[Switching to Thread")),
    ("dv2-040-horovod-pr-gdb-ncclallreduce-after-init.txt", ("Thread 55 (Thread", "in ncclAllReduce ()", "---Type <return>")),
    ("dv2-001-nccl-2277-ras-segv-signal11.txt", ("==== backtrace (tid:", "libucs.so.0(ucs_handle_error")),
    ("dev-113-nccl2223-roce-version-segv-local-rank2.txt", ("Py_BytesMain()  ???:0", "_start()  ???:0")),
    ("dev-037-sglang-dsv3-tp-init-begin.txt", ("== CUDA ==", "CUDA Version 12.4.1", "Container image Copyright")),
    ("dev-081-rocm-vllm-quoted-rccl-iommu-veth.txt", ("HIP version  :", "ROCm version :", "Librccl path :")),
    ("dev-017-mmr-deepspeed-0140-init-rank0.txt", ("Time to load fused_adam op:", "ninja: no work to do.")),
    ("dv2-009-kubeflow-master0-nccl-socket-lo-first.txt", ("Downloading http://yann.lecun.com", "9920512it [00:00")),
    ("dv2-042-kubeflow-worker7-restart-nccl-bootstrap.txt", ("Downloading: 100%|", "Loading cached processed dataset")),
    ("dev-004-colossalai-gemini-sigkill-rank0.txt", ("INFO     colossalai",)),
    ("dev-045-tests-8node-v100-low-busbw-alltoall.txt", ("```",)),
    ("dv3-006-lightning-slurm-duplicate-global-rank-init-hang.txt", ("GPU available:", "TPU available:")),
    ("dv3-021-deepops-srun-pyxis-nccl-tests-1node-start.txt", ("pyxis: importing",)),
])
def test_a_family_of_lines_that_mean_nothing_is_known(name, family):
    left = unknown(name)
    assert not [ln for ln in left if any(ln.strip().startswith(f.strip()) or f in ln for f in family)], left


def test_errors_among_the_known_families_stay_unknown():
    """A debugger's warning of a CUDA error, and the call stack in torchelastic's error file (a JSON dump, listed as
    one block), are no boilerplate."""
    assert sum("Cuda API error detected" in ln for ln in unknown("dev-090-tests-cudagdb-peer-access-warnings.txt")) >= 3
    left = unknown("dev-007-avhubert-rendezvous-timeout.txt")
    assert any('"py_callstack"' in ln for ln in left)


def test_torchvision_metric_logger_lines_are_steps_counted_over_epochs():
    store = ingest([WILD / "dv2-031-repvit-epoch7-progress-then-local-rank2-exit1.txt"])
    steps = store.events.filter(pl.col("kind") == "step").sort("line")
    assert steps["step"].to_list() == [7 * 1251, 7 * 1251 + 100, 7 * 1251 + 200]
    assert steps["loss"].to_list() == [5.2755, 4.6559, 4.5642]
    assert steps["max_steps"].null_count() == steps.height  # an epoch's length is no end of the run


def test_megatron_says_the_world_size():
    store = ingest([WILD / "dev-094-glm-interleaved-invalid-device-ordinal.txt"])
    assert store.ranks["world_size"].max() == 2
