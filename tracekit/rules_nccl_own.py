"""NCCL's WARNs of its own code, not of its network: which of NCCL's lines are the network's (a transport's
source file, a socket's or verbs' words, a peer that dropped) and which are of NCCL's own sources (its
topology, its settings, its enqueue), and the verdict where a rank's NCCL failed in its own code; and a
failure line that only traces NCCL's error code unwinding (crashed_rank leaves it to the code). Split out
of rules_nccl_errors (nccl_failure and transport_error read them)."""

from __future__ import annotations

import re

import polars as pl

from tracekit import nccl_messages
from tracekit.evidence import NETWORK_FAIL, Evidence, clip, lines
from tracekit.outcome import EventKind, Kind, Verdict
from tracekit.wording import who

#: NCCL's words for a connection its peer closed or reset (net/socket.cc, net_ib.cc, include/socket.h)
PEER_DROPPED = r"(?i)closed by (?:remote )?peer|Connection reset by peer|Broken pipe"


#: NCCL's source files of the network (its transports, sockets, IB verbs, bootstrap, proxy, net plugins, RAS),
#: as a WARN line's `file.cc:line` names them
NET_SOURCE = (r"(?i)(?:^|/)(?:transport/|net|socket|ib|bootstrap|proxy|p2p|shm|coll_?net|nvls|ras/|plugin/"
              # (aws-ofi-nccl, the EFA / libfabric network plugin: nccl_net_ofi_rdma.c, nccl_ofi_api.c: waits s28)
              r"|nccl_(?:net_)?ofi|ofi_)")
SOURCE = r"\.(?:cc|cu|cpp|c|h|hpp):\d+$"


def network_lines(t: pl.DataFrame) -> pl.DataFrame:
    """NCCL's lines of ``t`` that are the network's: not a WARN (a transport error, a connect retry), a WARN
    of a transport source, or in a socket's or verbs' words of failure or of a peer that dropped."""
    where = pl.col("where").fill_null("")
    return t.filter((pl.col("kind") != EventKind.NCCL_WARN) | where.str.contains(NET_SOURCE)
                    | pl.col("message").str.contains(NETWORK_FAIL) | pl.col("message").str.contains(PEER_DROPPED))


#: NCCL's call to NVML, the GPU-management library, that failed (src/misc/nvmlwrap.cc: ``WARN("%s() failed: %s",
#: "nvmlDeviceGetHandleByPciBusId", ...)``), as torch quotes it under `Last error:`: the rank's GPU, never the
#: network (a GPU its task's binding hides from NVML, a driver/NVML mismatch)
DEVICE_CALL = r"^\s*nvml\w+\(\) failed"


def own_code(t: pl.DataFrame) -> pl.DataFrame:
    """NCCL WARNs from a source file of NCCL's own that is not the network's (`include/msccl/msccl_parser.h:70
    NCCL WARN Attribute minBytes of node algo not found`, graph/, misc/, enqueue.cc), or NCCL's word under
    torch's `Last error:` of a GPU-management call that failed (``DEVICE_CALL``), in words that are not the
    network's: NCCL failed in its own code on that rank, not on the wire."""
    where = pl.col("where").fill_null("")
    return t.filter((pl.col("kind") == EventKind.NCCL_WARN)
                    & (where.str.contains(SOURCE) | pl.col("message").str.contains(DEVICE_CALL))
                    & ~where.str.contains(NET_SOURCE)
                    & ~pl.col("message").str.contains(NETWORK_FAIL)
                    & ~pl.col("message").str.contains(PEER_DROPPED))


#: NCCL's topology detection: its graph/ sources (NVIDIA/nccl 5067397c src/init.cc:1141-1215 initTransportsRank
#: calls ncclTopoGetSystem, ncclTopoComputePaths, ncclTopoSearchInit, ncclTopoCompute, and nothing else calls
#: them), and the sysfs path it reads for a GPU (src/os/linux.cc:637 ncclOsGetPciPath: WARN("Could not find
#: real path of %s", busPath), in 2.7-2.2x src/graph/xml.cc:332): they run only inside a communicator's init
TOPOLOGY = r"(?:^|/)graph/\w+\.cc:\d+$"
TOPOLOGY_SAID = r"Could not find real path of /sys/class/pci_bus/"


def own_code_failed(ev: Evidence, own: pl.DataFrame, in_init: bool = False) -> Verdict:
    """A rank's NCCL failed in its own code (a WARN of no network file), and the code it unwound with. With
    ``in_init`` (NCCL's WARNs alone, no program's report of its error code), where that code is NCCL's
    topology detection (``TOPOLOGY``), which runs only inside a communicator's init, and no communicator
    completed init, the init failed: INIT_STALL (the job never got past start-up). (Where the program
    reports NCCL's error code, ``nccl_failure``, the rank's call failing is said, tests/test_failures_nccl_own.py
    ``test_topology_it_could_not_read_at_init_is_no_transport_error``; both kinds are accepted on dev.)"""
    first = own.row(0, named=True)
    unwound = ev.kinds(EventKind.NCCL_UNWIND).filter((pl.col("file") == first["file"])
                                                    & (pl.col("line") > first["line"])).sort("line")
    code = unwound["message"].str.extract(r"-> (\d+)$", 1).cast(pl.Int64, strict=False).drop_nulls()
    name = nccl_messages.RESULT_CODES.get(code[0]) if code.len() else None
    said = nccl_messages.BY_NAME[name].meaning if name in nccl_messages.BY_NAME else None
    back = (f"; it unwound with code {code[0]} through {unwound.height} call(s) "
            f"(last {unwound['message'][-1].split(' ->')[0]})" + (f": {said}" if said else "")
            if code.len() else "")
    r = own["rank"].drop_nulls().unique().sort().to_list()
    topo = own.filter(pl.col("where").fill_null("").str.contains(TOPOLOGY)
                      | pl.col("message").str.contains(TOPOLOGY_SAID))
    if in_init and topo.height and not ev.store.comms.filter(pl.col("state") == "init_complete").height:
        t = topo.row(0, named=True)
        return Verdict(Kind.INIT_STALL, f"NCCL's communicator init failed in its topology detection on "
                       f"{who(r) if r else 'a rank'}: {t['where']}: {clip(t['message'], 160)} (NCCL's "
                       f"{t['where'].split(':')[0]}, which runs only inside ncclCommInitRank's "
                       f"initTransportsRank){back}; no communicator completed init, so the job never got past "
                       "start-up: NCCL could not read the GPUs' PCI topology from sysfs (a VM, WSL or a "
                       "container that hides /sys/class/pci_bus; NCCL_TOPO_FILE gives it one)", r,
                       lines(topo, 3) + lines(unwound, 3))
    return Verdict(Kind.CRASHED_RANK, f"NCCL failed in its own code on {who(r) if r else 'a rank'}: "
                   f"{first['where']}: {clip(first['message'], 160)} ("
                   + (f"a WARN of NCCL's {first['where'].split(':')[0]}" if re.search(SOURCE, first["where"] or "")
                      else "a call of NCCL's to the GPU's driver or its management library")
                   + f", not of its network){back}: that rank's NCCL call or "
                   "communicator init failed there; the WARN names what it could not do (a setting, a file "
                   "NCCL reads, an algorithm or topology it was given)", r, lines(own, 3) + lines(unwound, 3))


#: an error's own words in a failure line: an exception's name, an error, a signal, a CUDA fault, a process's
#: end (``Aborted (core dumped)``: the abort NCCL's error led to is that process's death, its own fact)
OWN_ERROR = (r"(?i)\w*(?:error|exception)\b|out of memory|\bSIG[A-Z]{3,6}\b|illegal|assert|segmentation|abort"
             r"|core dumped|killed|died|signal|fault")
#: a failure line that only says where a failure passed: nccl-tests' ``Test failure common.cu:519`` trace
TRACE_ONLY = r"\b\w+\.(?:cu|cc|cpp|c|h|hpp):\d+\b"
#: how far above such a line NCCL's error code it unwinds from may stand
UNWOUND_WITHIN = 10


def unwinds_nccl_code(ev: Evidence, first: pl.DataFrame) -> bool:
    """NCCL's error code stands just above the first failure in its file (``UNWOUND_WITHIN`` lines) and the
    failure line has no error of its own (``OWN_ERROR``), only a source location (``TRACE_ONLY``): it is the
    trace of that code's unwinding (nccl-tests'
    ``Test NCCL failure common.cu:401 'remote process exited or there was a network error'`` then ``Test
    failure common.cu:519``), and the code decides, as the rules that read NCCL's codes say."""
    said = first["message"][0] or ""
    if not ev.nccl_errors.height or re.search(OWN_ERROR, said) or not re.search(TRACE_ONLY, said):
        return False
    at, line = first["file"][0], first["line"][0]
    return ev.nccl_errors.filter((pl.col("file") == at) & (pl.col("line") < line)
                                 & (pl.col("line") >= line - UNWOUND_WITHIN)).height > 0
