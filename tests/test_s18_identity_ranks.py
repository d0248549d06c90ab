"""Session 18 identity: lines whose runtime's code names the writer's rank (parsers/launcher.SELF: c10d, PyTorch/XLA,
DeepSpeed, Accelerate), launcher prefixes behind a collector's clock and vLLM's worker names (parsers/prefixes,
parsers/text), and a shell's job lines that are no rank tag, each on real input: dev excerpts of samples/wild and
lines in the exact format the runtime's code prints (its file quoted by each case)."""

from __future__ import annotations

import polars as pl
import pytest

from tests.conftest import SAMPLES
from tracekit.ingest import ingest

WILD = SAMPLES / "wild"


def ranks_of(store) -> list[int]:
    return sorted(set(store.ranks["rank"].drop_nulls().to_list()))


def one(prefix: str):
    return ingest([next(WILD.glob(prefix + "-*.txt"))])


def test_c10d_store_barrier_in_its_older_wording_under_a_logger_header(tmp_path):
    # torch before 1.13 (the header cites distributed_c10d.py:224; torch 2.13's form, distributed_c10d.py:1088,
    # adds `key:... with`): `Rank 2: Completed store-based barrier for 4 nodes.` after Python logging's
    # `%(asctime)s %(levelname)s {%(pathname)s:%(lineno)d}  `, as dv17-032 shows it
    log = tmp_path / "rank.log"
    log.write_text(
        "2025-06-26 06:31:28,561 INFO {/opt/conda/lib/python3.9/site-packages/torch/distributed/"
        "distributed_c10d.py:224}  Rank 2: Completed store-based barrier for 4 nodes.\n"
        "2025-06-26 06:31:28,562 INFO {/opt/conda/lib/python3.9/site-packages/torch/distributed/"
        "distributed_c10d.py:224}  Rank 1: Completed store-based barrier for 4 nodes.\n")
    store = ingest([log])
    assert ranks_of(store) == [1, 2]
    assert store.ranks["world_size"].max() == 4


def test_dev_excerpt_of_the_older_barrier_shows_every_rank_it_names():
    # dv17-032: `GLOBAL_RANK: 3`, `Added key: ... for rank: 0`, and rank 2 only in its barrier line
    assert ranks_of(one("dv17-032")) == [0, 2, 3]


def test_a_time_of_day_stamp_before_torchrun_prefix_is_taken_off():
    # dv3-001: `18:11:06.680 [rank4]:[E205 18:11:06.375750231 ProcessGroupNCCL.cpp:1870] [PG ID 12 PG GUID
    # 99(EXPERT_MODEL_PARALLEL_GROUP) Rank 4] ...`: the collector's time of day, then torchrun's global prefix
    # (whose `Rank 4` inside the PG tag is group-local; the prefix's rank is the global one)
    assert ranks_of(one("dv3-001")) == [4]


def test_jenkins_timestamper_time_of_day_before_a_launcher_prefix(tmp_path):
    # Jenkins' Timestamper (`HH:mm:ss ` by default) before Lightning's rank_prefixed_message `[rank: N] `
    # (Lightning-AI/utilities src/lightning_utilities/core/rank_zero.py, rank_prefixed_message:
    # `f"[rank: {rank}] {message}"`)
    log = tmp_path / "console.log"
    log.write_text("05:54:35 [rank: 3] Seed set to 42\n05:54:35 [rank: 2] Seed set to 42\n")
    assert ranks_of(ingest([log])) == [2, 3]


def test_vllm_worker_names_of_mid_2025_name_the_tensor_parallel_rank(tmp_path):
    # vllm/v1/executor/multiproc_executor.py (WorkerProc.__init__): `pp_str = f"PP{rank // tp_size}"`,
    # `tp_str = f"TP{rank % tp_size}"`, `process_name = f"{process_name} {suffix}"`, then decorate_logs(
    # process_name): `(VllmWorker TP1 pid=615) `; a pipeline stage past the first with TP (`PP1_TP0`) names
    # no global rank without the tensor-parallel size
    log = tmp_path / "serve.log"
    log.write_text(
        "(VllmWorker TP1 pid=615) INFO 08-11 10:45:36 [gpu_worker.py:100] Loading model\n"
        "(VllmWorker TP0 pid=614) INFO 08-11 10:45:36 [gpu_worker.py:100] Loading model\n"
        "(VllmWorker PP1_TP0 pid=616) INFO 08-11 10:45:36 [gpu_worker.py:100] Loading model\n")
    store = ingest([log])
    assert ranks_of(store) == [0, 1]
    assert sorted(store.ranks.filter(pl.col("rank") == 1)["pid"].to_list()) == [615]


def test_torch_xla_progress_lines_name_the_replica_ordinal():
    # dv13-001: `| Training Device=xla:1/0 Epoch=1 Step=640 Loss=0.00174 Rate=551.37 ...`, `xla:0/5`, ...:
    # torch_xla/test/test_utils.py `_get_device_spec`: `'{}/{}'.format(device, ordinal)`, ordinal
    # `xm.get_ordinal()`; printed by print_training_update (`print('|', ' '.join(update_data))`)
    assert ranks_of(one("dv13-001")) == list(range(8))


def test_torch_xla_test_update_names_its_ordinal(tmp_path):
    # print_test_update: `| Test Device=xla:0/3 Step=10 Epoch=1 Accuracy=98.10 Time=01:53:55`
    log = tmp_path / "xla.log"
    log.write_text("| Test Device=xla:0/3 Step=10 Epoch=1 Accuracy=98.10 Time=01:53:55\n"
                   "| Test Device=xla:1/0 Step=10 Epoch=1 Accuracy=98.10 Time=01:53:55\n")
    assert ranks_of(ingest([log])) == [0, 3]


@pytest.mark.parametrize("line, rank, world", [
    # deepspeed/comm/comm.py mpi_discovery: "Discovered MPI settings of world_rank={}, local_rank={},
    # world_size={}, master_addr={}, master_port={}" (in_aml: AzureML, in_aws_sm: AWS SageMaker), under
    # DeepSpeed's logger header `[%(asctime)s] [%(levelname)s] [%(filename)s:%(lineno)d:%(funcName)s] `
    ("[2024-01-01 00:00:00,000] [INFO] [comm.py:637:mpi_discovery] Discovered MPI settings of world_rank=3, "
     "local_rank=1, world_size=8, master_addr=10.0.0.1, master_port=29500", 3, 8),
    ("[2024-01-01 00:00:00,000] [INFO] [comm.py:680:in_aml] Discovered AzureML settings of world_rank=5, "
     "local_rank=1, world_size=16, master_addr=10.0.0.1, master_port=6105", 5, 16),
    # deepspeed/runtime/engine.py _checkpoint_tag_validation: f"[rank={dist.get_rank()}] The checkpoint tag
    # name '{tag}' is not consistent across all ranks. ..."
    ("[2024-01-01 00:00:00,000] [WARNING] [engine.py:3000:_checkpoint_tag_validation] [rank=6] The checkpoint "
     "tag name 'global_step10' is not consistent across all ranks.", 6, None),
])
def test_deepspeed_lines_that_name_their_writer(tmp_path, line, rank, world):
    log = tmp_path / "ds.log"
    log.write_text(line + "\n")
    store = ingest([log])
    assert ranks_of(store) == [rank]
    assert store.ranks["world_size"].max() == world


@pytest.mark.parametrize("line, rank, world", [
    # torch 2.13 torch/distributed/distributed_c10d.py:1081-1084 (_store_based_barrier's DistStoreError):
    # "Timed out initializing process group in store based barrier on " f"rank {rank}, for key: {store_key}
    # (world_size={world_size}, " f"num_workers_joined={worker_count}, timeout={timeout} error={e})"
    ("torch.distributed.DistStoreError: Timed out initializing process group in store based barrier on rank 3, "
     "for key: store_based_barrier_key:1 (world_size=4, num_workers_joined=3, timeout=0:30:00 error=Wait timeout)",
     3, 4),
    # distributed_c10d.py:1068-1070 (its debug line; the two literals join without a space): "Waiting in store
    # based barrier to initialize process group for %s seconds" "rank: %s, key: %s (world_size=%s, ..."
    ("DEBUG:torch.distributed.distributed_c10d:Waiting in store based barrier to initialize process group for "
     "30.0 secondsrank: 2, key: store_based_barrier_key:1 (world_size=4, num_workers_joined=3, timeout=0:30:00 "
     "error=Wait timeout)", 2, 4),
    # distributed_c10d.py:1105 _warn_not_in_group: f"Running {op_name} on global rank {global_rank} which does
    # not " "belong to the given group."
    ("/opt/conda/lib/python3.11/site-packages/torch/distributed/distributed_c10d.py:1105: UserWarning: Running "
     "barrier on global rank 5 which does not belong to the given group.", 5, None),
])
def test_c10d_lines_of_torch_2_that_name_their_writer(tmp_path, line, rank, world):
    log = tmp_path / "c10d.log"
    log.write_text(line + "\n")
    store = ingest([log])
    assert ranks_of(store) == [rank]
    assert store.ranks["world_size"].max() == world


def test_accelerate_state_names_the_process_index_and_the_world(tmp_path):
    # accelerate/state.py PartialState.__repr__ (f"Distributed environment: {self.distributed_type}..."
    # f"Num processes: {self.num_processes}\n" f"Process index: {self.process_index}\n" f"Local process index:
    # {self.local_process_index}\n" f"Device: {self.device}\n"), logged by a script's
    # `logger.info(accelerator.state, main_process_only=False)` under its logging header
    log = tmp_path / "accelerate.log"
    log.write_text(
        "12/05/2024 10:00:00 - INFO - __main__ - Distributed environment: MULTI_GPU  Backend: nccl\n"
        "Num processes: 8\nProcess index: 3\nLocal process index: 3\nDevice: cuda:3\n\n"
        "12/05/2024 10:00:00 - INFO - __main__ - Distributed environment: MULTI_GPU  Backend: nccl\n"
        "Num processes: 8\nProcess index: 6\nLocal process index: 6\nDevice: cuda:6\n\n")
    store = ingest([log])
    assert ranks_of(store) == [3, 6]
    assert store.ranks["world_size"].max() == 8


def test_a_shells_job_status_line_names_no_rank():
    # dv13-015: rank 0's traceback under `[rank0]:`, then zsh's job status `[1]    143628 exit 1     PYTORCH_...
    # tune run ...` (Src/jobs.c printjob): job 1, pid 143628, not rank 1
    assert ranks_of(one("dv13-015")) == [0]


@pytest.mark.parametrize("line", [
    "[1] 143628",  # zsh spawnjob / bash: a job sent to the background, its pid
    "[1]  143628 exit 1     torchrun --nproc_per_node 2 train.py",  # zsh printjob, no current-job mark
    "[2]  + 51234 killed     python train.py",  # zsh printjob with its current-job mark
])
def test_shell_job_lines_are_no_rank_tags(tmp_path, line):
    log = tmp_path / "shell.log"
    log.write_text("[rank0]: RuntimeError: CUDA error: out of memory\n" + line + "\n")
    assert ranks_of(ingest([log])) == [0]
