"""NCCL's ncclRemoteError in nccl-tests where every rank of the run is listed and only one reports it.

ncclGetErrorString's words for ncclRemoteError are `remote process exited or there was a network error`
(NVIDIA/nccl src/init.cc): by the code alone, a peer's end and a broken network read the same. nccl-tests
tells them apart by what it prints: its NCCLCHECK and CUDACHECK (NVIDIA/nccl-tests src/common.h) print
`<host>: Test NCCL failure <file>:<line> '<error string> / <last error>'` (or `Test CUDA failure`) for EVERY
failed call of every rank, and the `# Using devices` table lists every rank with its pid and host. So where
the table lists ranks on two hosts or more, exactly one process reports a failure, and that failure is
ncclRemoteError with NCCL's last error empty (`... network error / '`: NCCL recorded no WARN), no other
rank said an error of its own, none exited, was signalled or hit a CUDA error: the peer's process did not
fail on its own, the connection between the hosts did. Dev labels of this shape (dv33-003, dv48-001, two
2-node x 4 H100 alltoall_perf runs) both accept transport-error; neither accepts crashed-rank.
"""

from __future__ import annotations

import polars as pl

from tracekit import nccl_messages
from tracekit.evidence import Evidence, lines
from tracekit.outcome import EventKind, Kind, Verdict
from tracekit.wording import who

#: nccl-tests' own line of a failed NCCL call (src/common.h NCCLCHECK) and of the frames it unwinds through
#: (`.. cnode2-001 pid 614292: Test failure common.cu:519`, its testNcclError propagated)
TEST_FAILURE = r"\bTest (?:NCCL |CUDA )?failure\b"


def _listed(ev: Evidence) -> pl.DataFrame:
    """The ranks nccl-tests' device table lists (rank, pid, host)."""
    return ev.store.ranks.filter((pl.col("source") == "nccl-tests") & pl.col("rank").is_not_null())


def nccl_tests_network(ev: Evidence, e: pl.DataFrame) -> Verdict | None:
    """TRANSPORT_ERROR where nccl-tests' one failing process reports ncclRemoteError and no other listed
    rank, on two hosts or more, reports, exits or is signalled (the module's reasoning)."""
    remote = e.filter(nccl_messages.is_one_of(("remote_error",))
                      & pl.col("message").fill_null("").str.contains(TEST_FAILURE))
    listed = _listed(ev)
    if not remote.height or listed["host"].n_unique() < 2 or listed["rank"].n_unique() < 2:
        return None
    if ev.exits.height or ev.cuda.height or ev.timeouts.height or ev.kinds(EventKind.NCCL_WARN).height:
        return None
    failed = ev.store.events.filter(pl.col("kind").is_in([EventKind.CRASH, EventKind.EXCEPTION]))
    if failed.filter(~pl.col("message").fill_null("").str.contains(TEST_FAILURE)).height:
        return None  # (another error of a process's own: not this shape)
    ranks = failed["rank"].drop_nulls().unique().sort().to_list()
    if len(ranks) > 1 or remote.select(pl.col("message").str.extract(r"^(\S+): Test", 1)).n_unique() > 1:
        return None  # (several processes failed: which one first the lines do not say)
    at = listed.filter(pl.col("rank").is_in(ranks)) if ranks else listed.clear()
    where = (f" ({at['host'][0]} pid {at['pid'][0]})" if at.height else "")
    hosts = listed["host"].unique().sort().to_list()
    said = remote["message"][0].strip()
    failing = who(ranks) if ranks else "one process"
    return Verdict(Kind.TRANSPORT_ERROR, f"{failing}{where} failed with NCCL's "
                   f"ncclRemoteError (`{said}`): a connection to a peer broke, and of the "
                   f"{listed['rank'].n_unique()} ranks nccl-tests lists on {len(hosts)} hosts "
                   f"({', '.join(hosts[:4])}) no other reports a failure of its own (nccl-tests prints every "
                   "failed NCCL or CUDA call), exited or was signalled, and NCCL recorded no WARN (its last "
                   "error is empty): the network between the hosts failed, not a peer's process; rerun with "
                   "NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET on both hosts for the connection and its NIC",
                   ranks, lines(remote, 2) + lines(failed, 2))
