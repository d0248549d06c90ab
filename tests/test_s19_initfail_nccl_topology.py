"""Issue 31, session 19: NCCL's topology detection (its graph/ sources, and the sysfs PCI path it reads)
runs only inside a communicator's init (NVIDIA/nccl src/init.cc initTransportsRank: ncclTopoGetSystem,
ncclTopoComputePaths, ncclTopoCompute), so a WARN there with no communicator complete is an init that
failed: INIT_STALL naming the WARN and its source file, not a crash."""

from pathlib import Path

from tracekit.ingest import ingest
from tracekit.verdict import Kind, decide

WILD = Path(__file__).resolve().parent.parent / "samples" / "wild"


def test_a_topology_warn_is_the_communicator_init_failing():
    # one process driving two device threads under WSL; NCCL's WARN and unwind lines only
    v = decide(ingest([WILD / "dv17-043-humannerf-wsl-nccl-topo-realpath.txt"]))
    assert v.kind == Kind.INIT_STALL
    assert "graph/xml.cc:332: Could not find real path of /sys/class/pci_bus/" in v.summary
    assert "topology detection" in v.summary
