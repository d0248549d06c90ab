"""A rank that failed in communicator set-up left a set-up that never completed (rules_set_up, issue 31:
"an init failure called a crash" is a wrong kind): INIT_STALL that says the failure, where the job never got
past set-up; the same failure after set-up completed stays a crash."""

from __future__ import annotations

from tests.conftest import ROOT
from tracekit.ingest import ingest
from tracekit.verdict import Kind, decide

WILD = ROOT / "samples" / "wild"

# NCCL 2.18's init lines (src/init.cc: `ncclCommInitRank comm %p rank %d nranks %d cudaDev %d busId %lx
# commId 0x%llx - Init START` / `... - Init COMPLETE`) and a failure of NCCL's own topology code on each rank
# after them (src/graph/xml.cc's WARN, the unwind line of src/graph/topo.cc, torch's DistBackendError)
INIT = ("node1:{pid}:{pid} [{r}] NCCL INFO ncclCommInitRank comm 0x55{r}0 rank {r} nranks 2 cudaDev {r} "
        "busId {r}000 commId 0x4e2a1b - Init {state}\n")
RAISED = ("node1:{pid}:{pid} [{r}] graph/xml.cc:332 NCCL WARN Could not find real path of "
          "/sys/class/pci_bus/0000:21/../../0000:21:00.0\n"
          "node1:{pid}:{pid} [{r}] NCCL INFO graph/topo.cc:651 -> 2\n"
          "[rank{r}]: torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/"
          "ProcessGroupNCCL.cpp:1970, unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL version "
          "2.18.1\n")
# a device fault in set-up is the rank's own (rules_set_up.DEVICE_FAULT)
OOM = "[rank{r}]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n"


def _decide(tmp_path, states: tuple[str, ...], raised: str = RAISED):
    for r in (0, 1):
        body = "".join(INIT.format(pid=100 + r, r=r, state=s) for s in states) + raised.format(pid=100 + r, r=r)
        (tmp_path / f"rank{r}.log").write_text(body)
    return decide(ingest([tmp_path]))


def test_nccls_own_set_up_failing_before_any_communicator_completed_init_is_a_set_up_that_never_completed(
        tmp_path):
    v = _decide(tmp_path, ("START",))
    assert v.kind == Kind.INIT_STALL and v.rule == "failed_in_set_up"
    assert "set-up never completed" in v.summary and "graph/xml.cc" in v.summary


def test_an_out_of_memory_in_set_up_is_the_ranks_own_crash(tmp_path):
    v = _decide(tmp_path, ("START",), OOM)
    assert v.kind == Kind.CRASHED_RANK and "out of memory" in v.summary


def test_two_ranks_on_one_gpu_is_the_programs_crash_with_its_cause_and_fix():
    # (s29: the launch's placement of its ranks, checked in init but the program's own error, rules_set_up.MISPLACED)
    v = decide(ingest([WILD / "dev-082-verl-duplicate-gpu-rank1-rank0.txt"]))
    assert v.kind == Kind.CRASHED_RANK and "Duplicate GPU detected" in v.summary
    assert "one GPU per rank" in v.fix


def test_a_program_that_never_began_set_up_stays_a_crash():
    # `Default process group has not been initialized`: init_process_group was never called
    v = decide(ingest([WILD / "dv20-023-signgraph-ddp-without-process-group.txt"]))
    assert v.kind == Kind.CRASHED_RANK
