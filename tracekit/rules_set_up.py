"""Set-up that never completed: INIT_STALL, with the failure and where it happened.

- ``bootstrap_failed``: NCCL's bootstrap (the ranks' exchange of addresses before a communicator exists,
  NVIDIA/nccl src/bootstrap.cc) failed: its WARN (`bootstrap.cc:48 NCCL WARN Bootstrap : no socket interface
  found`), the socket failure it unwound through (`misc/socket.cc:533 NCCL WARN socketPollConnect: Connect to
  10.0.0.4<56849> returned 113(No route to host)`, then `bootstrap.cc:285 -> 2`), or the same words quoted by
  torch under `Last error:`, with no communicator past init, no collective and no step. The communicator
  never formed: LABELS.md's init-stall ("a bootstrap started and never completed"), and issue 31 counts
  "bootstrap failures called transport errors" among the wrong kinds. It says the failure, what its words
  mean (no interface, nothing listening, no route), the interface and address, and the rank. A socket failure
  that never names the bootstrap (a proxy's connect, a NET/IB completion error) stays the transport's.
  ``rules_rendezvous.init_connection_failed`` is the same failure one layer up (c10d's store or a process
  group's init frame); both read ``unfinished``.
- the re-kind of another rule's verdict where its failure came in set-up (``failed_in_set_up``,
  ``undecided_in_set_up``) is ``set_up_rekind``'s (split from here in s27); this module keeps the set-up steps
  (``SET_UP``, ``step_named``), the phase (``unfinished``) and the exclusions both read.
- ``set_up_step_unreturned`` (s29): a runtime's verbose trace of its set-up steps (``start_up_steps``: Open MPI's
  component init inside MPI_Init, mpirun's and PRRTE's launch states) ends in a step begun that never returned.
- ``nccl_code_in_set_up``: NCCL's error code, unexplained, raised as a process set up its communicator
  (``rules_nccl_errors.nccl_error_unexplained`` asks it before it says UNDECIDED).

LABELS.md's init-stall is "a communicator init / rendezvous / bootstrap started and never completed"; issue
31 counts "an init failure called a crash" among the wrong kinds. So where the rule that decides says
CRASHED_RANK and the job never got past set-up (no communicator completed init, no collective and no step
is recorded, nothing ended cleanly), and the failure is set-up's own (NCCL's init started and never
completed, or the failure names a set-up call or check, ``SET_UP``), the verdict is INIT_STALL and says the
failure as the crash rule said it. A program that never began set-up (``Default process group has not been
initialized``: it never called init_process_group) stays a crash, and so does a fault of the rank's device or
memory that came during set-up (``DEVICE_FAULT``: an out-of-memory or a CUDA error is the rank's own).
"""

from __future__ import annotations

import re

import polars as pl

from tracekit import align, exit_barrier, start_up_steps as ss
from tracekit.evidence import BOOTSTRAP, Evidence, clip, lines
from tracekit.outcome import EventKind, Kind, Verdict
from tracekit.parsers.salient import Telling
from tracekit.rules_common import msg, said_in_files
from tracekit.rules_nccl_codes import SET_UP as NCCL_SET_UP, failing
from tracekit.rules_salient import address
from tracekit.wording import who

#: set-up calls and checks whose failure leaves set-up unfinished: (pattern, where the runtime prints it); the
#: Python frames of set-up are start_up_messages.FRAMES' (``frame_of``: init_process_group, DDP's construction,
#: Megatron's and DeepSpeed's initialisers; not vLLM's init_device, which makes no process group itself)
SET_UP = (
    (r"ncclCommInit\w*|ncclCommSplit|ncclGetUniqueId", "NCCL's init API (src/init.cc), named by its callers"),
    (r"\binit\.cc:\d+|\bbootstrap\.cc:\d+|graph/\w+\.cc:\d+|transport/\w+\.cc:\d+",
     "NCCL's set-up sources in a WARN or an unwind line (init, bootstrap, topology, transport set-up)"),
    (r"HcclCommInit\w*|Failed to initiali[sz]e the HCCP", "Ascend HCCL's communicator init"),
    # (torch: torch/distributed/rendezvous.py and c10d's TCPStore, csrc/distributed/c10d/TCPStore.cpp and
    # socket.cpp `The client socket has failed to connect to [host]:29500`, `DistStoreError: Timed out after
    # 901 seconds waiting for clients`; torchelastic's RendezvousConnectionError / RendezvousTimeoutError)
    (r"init_process_group|(?i:\brendezvous\b|\brdzv\b)|Rendezvous\w*Error|TCPStore|DistStoreError"
     r"|client socket has failed to connect|store_based_barrier|DistNetworkError"
     r"|waiting for clients\. \d+/\d+ clients joined",
     "torch's rendezvous or its c10d store (init_process_group, TCPStore, torchelastic's rendezvous)"),
    # (Open MPI ompi/errhandler and MPICH: `*** An error occurred in MPI_Init_thread`, `Fatal error in
    # PMPI_Init_thread`; PMIx's `PMIx_Init failed`)
    # (and ORTE's launch of its daemons, orte/mca/plm: `ORTE was unable to reliably start one or more daemons`)
    # (and, in MPI_Init's wire-up: an orted that never reported back, orte/mca/plm help-plm-base.txt `An ORTE daemon
    # has unexpectedly failed after launch and before communicating back to mpirun`; the BML's add_procs finding
    # no transport between two processes, ompi/mca/bml/r2/help-mca-bml-r2.txt `At least one pair of MPI processes
    # are unable to reach each other for MPI communications`; PMIx's wire-up `PMIX ERROR: UNREACHABLE`)
    (r"MPI_Init\w*|MPI_INIT\b|\bPMIx?\d?_Init\w*|ompi_rte_init|orte_init|ORTE was unable to reliably start"
     # (Open MPI wraps its help texts at 70 columns: the first line's words alone)
     r"|An ORTE daemon has unexpectedly failed after launch|before communicating back to mpirun"
     r"|At least one pair of MPI processes are unable to reach each other"
     r"|PMIX ERROR: UNREACHABLE"
     # (s29: PRRTE, Open MPI 5's launcher, in its own name, src/mca/errmgr/help-errmgr-base.txt; and mpirun's
     # routes to its daemons, orte/mca/errmgr/base/help-errmgr-base.txt [no-path])
     r"|PRTE was unable to reliably start|(?:ORTE|PRTE) does not know how to route a message",
     "MPI's start-up (MPI_Init, PMI/PMIx, mpirun's daemons)"),
    # (XLA/JAX's distributed runtime: xla/pjrt/distributed/client.cc `Failed to connect to distributed JAX
    # controller`, `WaitForConnected`, torch_xla's mesh_service.cc `Waiting to connect to client mesh master`)
    # (not the coordination service's heartbeat or a task's failure it reports: those come while the job runs)
    (r"(?i)jax\.distributed\.initialize|Failed to connect to (?:the )?distributed JAX controller"
     r"|WaitForConnected|client mesh master"
     # (the coordination service's registration at start-up: PjRt's connect barrier, xla/pjrt/distributed/
     # client.cc `Barrier_id: PjRT_Client_Connect`, and CoordinationServiceAgent's RegisterTask / Connect)
     r"|PjRT_Client_Connect|\bRegisterTask\b|Failed to connect to (?:the )?coordination service",
     "XLA's or JAX's distributed runtime reaching its coordinator"),
    # (Horovod: horovod/common/basics.py HorovodBasics.init, after horovod_init_comm returned false: `raise
    # ValueError("Horovod initialization failed. Please check log messages above for a more descriptive
    # error.")`; its background thread's set-up, MPI or Gloo's rendezvous, failed first)
    (r"Horovod initialization failed|\bhvd\.init\(\)|\bhorovod_init\w*",
     "Horovod's init (hvd.init(): its MPI or Gloo controller's set-up)"),
    # (s29: oneCCL's transport set-up as its communicator is made, uxlfoundation/oneCCL src/atl/ofi/atl_ofi_comm.cpp
    # atl_ofi_comm: `CCL_THROW_IF_NOT(init_transport(...) == ATL_STATUS_SUCCESS, "failed to init transport")`, after
    # atl_ofi_helper.cpp's `atl_ofi_open_nw_provs: can not open network providers`)
    (r"\binit_transport\b|failed to init transport|atl_ofi_open_nw_provs|can not open network providers",
     "oneCCL's transport set-up (its ATL/OFI providers, as the communicator is made)"),
    # (s29: Ray Client's connect to the head, ray-project/ray python/ray/util/client/worker.py _connect_channel)
    (r"\bray client connection timeout\b", "Ray Client's connect to the head (ray.init(address=\"ray://...\"))"),
    # (Ray: `Cannot provide a placement group requiring ...`, placement group creation that never completed)
    (r"(?i)placement group", "Ray's placement group creation (the job's workers placed)"),
    # (a store's or a launcher's own address at start-up: glibc's resolver, the kernel's bind)
    (r"(?i)Name or service not known|Temporary failure in name resolution|getaddrinfo|"
     r"nodename nor servname|Address already in use|EADDRINUSE|Call to bind",
     "resolving or binding the start-up address (the master's hostname, the store's port)"),
    # (Gloo's full-mesh connect at its process group's creation, gloo/rendezvous/context.cc connectFullMesh;
    # not gloo's pair.cc, whose errors come in its collectives as well)
    (r"connectFullMesh", "Gloo's process group creation (its full-mesh connect)"),
    # (Gloo's device, made as its process group is: gloo/transport/tcp/device.cc `ifa != nullptr. Unable to find
    # address for: eth1`, GLOO_SOCKET_IFNAME naming no interface of the host)
    (r"gloo/transport/tcp/device\.cc:\d+|Unable to find address for:",
     "Gloo's device creation (the interface GLOO_SOCKET_IFNAME names, or the host name's address)"),
    # (TensorFlow's gRPC server, started before any worker connects: tensorflow/core/distributed_runtime/rpc/
    # grpc_server_lib.cc `Could not start gRPC server`, its port taken or not bindable)
    (r"Could not start gRPC server", "TensorFlow's gRPC server start (the port in TF_CONFIG or the cluster spec)"),
)
# (MPI_Init's failure is set-up's: issue 31 reads "an init failure called a crash" as a wrong kind; a program,
# module or library that is missing is not, ``salient.NO_START`` / ``IMPORT_FAILED``: it never ran set-up)
#: the program never began set-up: its failure is its own, not set-up's (a call before init_process_group; the
#: env:// rendezvous refusing to start without its variables, pytorch/pytorch torch/distributed/rendezvous.py
#: _env_error: `Error initializing torch.distributed using env:// rendezvous: environment variable RANK
#: expected, but not set`: a launch without torchrun, nothing waited)
NEVER_BEGAN = (r"(?i)process group (?:has not been|is not) initiali[sz]ed"
               # (horovod/common/basics.py: `Horovod has not been initialized; use hvd.init().`: a call before
               # hvd.init)
               r"|Horovod has not been initiali[sz]ed"
               r"|environment variable \w+ expected, but not set")
#: a fault of the rank's device or memory, whatever phase it came in: the rank's own crash (a CUDA error or an
#: out-of-memory inside ncclCommInitRank is the GPU's, not set-up's; dev labels read it so, 5 of 6)
#: (s30) a process's own fault, where it came: a segfault inside ncclCommInitRank is the process's (dv18-034,
#: labelled a crash); but not one after a set-up failure its file already said (``PROCESS_FAULT``)
PROCESS_WORDS = r"segmentation fault|\bSIGSEGV\b|\bSIGBUS\b"
PROCESS_FAULT = f"(?i){PROCESS_WORDS}"
#: a fault of the rank's device or memory, whatever phase it came in (a CUDA error or an out-of-memory inside
#: ncclCommInitRank is the GPU's, not set-up's; dev labels read it so, 5 of 6)
HARDWARE_FAULT = (r"(?i)out of memory|\bOOM\b|CUDA error|[Cc]uda failure|unhandled cuda error|cudaError\w*|CUDA call"
                  r"|illegal memory access"
                  # (and an accelerator's own failure its runtime reports: a TPU slice's chip driver, dv31-015,
                  # `Detected failure SLICE_FAILURE_CHIP_DRIVER_ERROR`, `detected TPU session error from worker`)
                  r"|\bSLICE_FAILURE_\w+|chip driver error|\bTPU (?:chip|session) error")
#: the rank's own crash, whatever phase it came in: its device's or its process's fault
DEVICE_FAULT = f"{HARDWARE_FAULT}|{PROCESS_WORDS}"


#: (s29) a launch that placed two ranks of one communicator on one device (NCCL src/init.cc's `Duplicate GPU
#: detected : rank 1 and rank 0 both on CUDA device 1000`, ncclInvalidUsage): checked in init, but the program's
#: own placement of its ranks (no torch.cuda.set_device(local_rank), one CUDA_VISIBLE_DEVICES for both), as a bad
#: argument is; dev labels read it a crash first, 9 of 9 (dv6-007 accepts no init-stall)
MISPLACED = r"Duplicate GPU detected"


def unfinished(ev: Evidence) -> bool:
    """Nothing shows the job past set-up: no communicator completed init, no collective, no step, no end, no
    exit barrier (torchelastic's agent waits there once its workers ended: ``exit_barrier``)."""
    s = ev.store
    if (s.comms.filter(pl.col("state") == "init_complete").height or ev.steps.height or ev.clean_end
            or exit_barrier.seen(ev)):
        return False
    # (the collectives may be a scan of a store left on disk: counted, not read)
    return not align.collect(s.collectives.lazy().select(pl.len())).item()


#: NCCL's unwind through its bootstrap (`bootstrap.cc:285 -> 2`): the socket failure above it was the
#: bootstrap's
BOOTSTRAP_UNWIND = r"(?:^|/)bootstrap\.(?:cc|cu):\d+ -> \d+"
#: what the bootstrap's failure says, in the socket's words, and what that means (the first that matches)
BOOTSTRAP_WORDS = (
    (r"(?i)no socket interface found|No usable listening interface",
     "NCCL found no network interface it may use on this host (NCCL_SOCKET_IFNAME names one that is not "
     "here or not up, or only lo and docker bridges are): check `ip -br addr` on every node and set "
     "NCCL_SOCKET_IFNAME to the interface the nodes share"),
    (r"(?i)already checked in", "two processes took the same rank (a launch that gave two processes one rank "
     "number, or two jobs on one bootstrap address): check each process's RANK/NODE_RANK"),
    (r"(?i)Connection refused",
     "nothing listened at the peer's address (the bootstrap root on rank 0's host, or the next rank of the "
     "ring): that process had not started, had already failed, or a firewall rejects the port"),
    (r"(?i)No route to host|Network is unreachable|timed out|\b11[03]\(",
     "the peer's address is not reachable from this host (the peer advertised an interface the others cannot "
     "reach: a link-local, docker or IPv6 address, a wrong NCCL_SOCKET_IFNAME; or a firewall drops the "
     "packets)"),
    (r"(?i)connection abort|reset by peer|closed by (?:remote )?peer|Broken pipe",
     "the connection to the peer was cut during the bootstrap (the peer failed or was killed, or the "
     "interface it advertised does not carry traffic between the hosts)"),
    (r"(?i)Address already in use|Call to bind", "the port it listens on was taken on this host"),
    (r"(?i)truncated|magic", "a message of another size or a foreign process arrived on the bootstrap socket "
     "(NCCL versions that differ between ranks, or another job on the same port)"),
)


#: a peer's address as NCCL's sockets print it: `10.0.0.4<56849>`, `fe80::966d:ae03:a2:8cf0%ib1<17943>`
NCCL_ADDRESS = r"(?P<host>[\w.:%\-]*[\w\]])<(?P<port>\d+)>"


def bootstrap_unwinds(ev: Evidence) -> pl.DataFrame:
    """NCCL's unwind lines through its bootstrap (``BOOTSTRAP_UNWIND``: `bootstrap.cc:285 -> 2`)."""
    return ev.kinds(EventKind.NCCL_UNWIND).filter(pl.col("message").fill_null("").str.contains(BOOTSTRAP_UNWIND))


def bootstrap_lines(ev: Evidence) -> pl.DataFrame:
    """NCCL's lines of its bootstrap's failure: a WARN, a connect retry or a transport error that names the
    bootstrap (``BOOTSTRAP``: `bootstrap.cc:48`, `Bootstrap : ...`, torch's `Last error:` quoting it), or a
    socket failure that NCCL then unwound through bootstrap.cc in the same file (same process where known)."""
    said = ev.kinds(EventKind.NCCL_WARN, EventKind.TRANSPORT_ERROR, EventKind.CONNECT_RETRY)
    if not said.height:
        return said
    text = pl.concat_str(pl.col("where").fill_null(""), pl.lit(" "), pl.col("message").fill_null(""))
    named = said.filter(text.str.contains(BOOTSTRAP)
                        & ~pl.col("message").fill_null("").str.contains(r"(?i)^Bootstrap ?: ?Using\b"))
    through = said.join(bootstrap_unwinds(ev).select("file", pl.col("pid").alias("_p"), pl.col("line").alias("_u")),
                        on="file")
    through = through.filter((pl.col("_u") > pl.col("line")) & (pl.col("_u") - pl.col("line") <= 12)
                             & (pl.col("pid").is_null() | pl.col("_p").is_null()
                                | (pl.col("pid") == pl.col("_p"))))
    return (pl.concat([named, through.select(said.columns)]).unique(["file", "line"], maintain_order=True)
            .sort("file", "line"))


def bootstrap_failed(ev: Evidence) -> Verdict | None:
    """INIT_STALL where NCCL's bootstrap failed (``bootstrap_lines``) and nothing shows the job past set-up
    (``unfinished``): the failure, what its words mean, the address and interface, the rank."""
    t = bootstrap_lines(ev)
    if not t.height or not unfinished(ev) or ev.moving or ev.progressed:
        return None
    # (the line to quote: a failure with the peer's address, `Connect to 10.0.0.4<56849> failed`, over the
    # retries before it and the unwind after it)
    m = pl.col("message").fill_null("")
    order = (pl.when(m.str.contains(r"(?i)fail|returned \d+\(") & m.str.contains(NCCL_ADDRESS)).then(0)
             .when(m.str.contains(r"(?i)fail|no socket|unreachable|abort|checked in|closed|truncated"))
             .then(1)
             .otherwise(2))
    t = t.sort(order, "file", "line")
    said = " ".join(t["message"].fill_null("").to_list())
    means = next((m for p, m in BOOTSTRAP_WORDS if re.search(p, said)), "")
    hit = re.search(NCCL_ADDRESS, said)
    at = f"{hit['host']} port {hit['port']}" if hit else address(said)
    r = sorted(set(t["rank"].drop_nulls().to_list()))
    boot = ev.store.links.filter(pl.col("what") == "bootstrap")
    ifaces = sorted(set(boot["value"].drop_nulls().to_list())) if boot.height else []
    where = ([f"the peer's address {at}"] if at else []) + (
        [f"bootstrap over {clip(', '.join(ifaces), 80)}"] if ifaces else []) + (
        [ev.launched_with] if ev.launched_with else [])
    # (what the rank's program said of it next: torch's or nccl-tests' report of NCCL's code)
    then = (pl.concat([ev.nccl_errors, ev.kinds(EventKind.CRASH, EventKind.EXCEPTION, EventKind.C10D_ERROR)],
                      how="diagonal_relaxed").unique(["file", "line"], maintain_order=True)
            .join(t.select("file", "line"), on=["file", "line"], how="anti").sort("file", "line"))
    boot_unwind = bootstrap_unwinds(ev).filter(pl.col("file").is_in(t["file"].implode())).sort("file", "line")
    through = (f", and NCCL unwound the error through {boot_unwind['message'][0].split(' ->')[0]} "
               f"(`{boot_unwind['message'][0].strip()}`)"
               if boot_unwind.height else "")
    return Verdict(Kind.INIT_STALL, f"NCCL's bootstrap failed on {who(r) if r else 'a rank'}, so its "
                   f"communicator's init never completed (no Init COMPLETE, no collective): "
                   f"\"{clip(t['message'][0], 180)}\"" + (f" ({'; '.join(where)})" if where else "") + through
                   + (f": {means}" if means else ": NCCL_DEBUG=INFO with NCCL_DEBUG_SUBSYS=INIT,NET says why")
                   + (f"; then: {clip(then['message'][0], 120)}" if then.height else ""),
                   r, lines(t, 3) + lines(then, 2) + lines(ev.network_settings, 3))


def step_named(said: str) -> str:
    """``MPI_Init_thread (MPI's start-up (MPI_Init, PMI/PMIx))``: the first set-up call or check ``said`` names
    (``SET_UP``), with what step of set-up it is, or nothing."""
    hits = [(m.start(), m.group(0), means) for p, means in SET_UP if (m := re.search(p, said))]
    if not hits:
        return ""
    _, name, means = min(hits)
    return f"{clip(name, 60)} ({means})"


def nccl_code_in_set_up(ev: Evidence, e: pl.DataFrame, r: list[int], means: str, why: str) -> Verdict | None:
    """INIT_STALL where NCCL's error code, unexplained, reached the program as it set up its communicator (a
    set-up frame or call in the same file, ``rules_nccl_codes.SET_UP``: vLLM's ``init_device`` /
    PyNcclCommunicator, ncclCommInitRank, init_process_group) and nothing shows the job past set-up
    (``unfinished``), with no network error or timeout: the communicator never formed (issue 31: an init
    failure is no crash and no undecided), though what failed inside NCCL only its INFO lines say."""
    if ev.transport.height or ev.timeouts.height or ev.moving or ev.progressed or not unfinished(ev):
        return None
    said = said_in_files(ev, e, NCCL_SET_UP)
    if not said.height:
        return None
    where, message = said["where"][0] or "", said["message"][0] or ""
    step = where if re.search(NCCL_SET_UP, where) else message
    return Verdict(Kind.INIT_STALL, f"NCCL's communicator set-up never completed on {failing(r, ev)}: "
                   f"{msg(e, 0, 160)}{means}, raised as it set up its communicator (`{clip(step, 120)}`), and "
                   f"no communicator completed init, no collective and no step is logged; {why}: rerun with "
                   "NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET on every rank (its WARN names the step of init "
                   "that failed: its connect to the peers, the topology, a transport's set-up)",
                   r, lines(e, 4) + lines(said, 1) + lines(ev.exits, 2))


#: a verbose runtime line's own host and process (Open MPI's and PRRTE's `[host:pid]` head)
HOST_PID = r"^\[(?P<host>[\w.\-]+):(?P<pid>\d+)\]"
#: where a begun step's runtime waits, in what to check (``start_up_steps``' entry name: what to check first)
STEP_CHECK = {
    "ompi_component_init": "the component's own devices and settings (for openib/ucx: ibv_devinfo, the ports' "
                           "state and the subnet manager; for tcp: the interfaces it may use, btl_tcp_if_include), "
                           "or rerun with it excluded (--mca btl ^NAME) to see start-up pass without it",
    "mpi_launch_state": "that the launcher reaches every host of its list over ssh (or srun) and that the daemons "
                        "it starts there (orted, prted) are on PATH and can connect back to it (ssh HOST prted "
                        "--version; --mca oob_tcp_if_include, --prtemca prte_if_include)",
}


def set_up_step_unreturned(ev: Evidence) -> Verdict | None:
    """INIT_STALL where a runtime's verbose trace of its set-up steps (``start_up_steps``: Open MPI's component
    init in MPI_Init, mpirun's or PRRTE's launch states) ends, in a file, in a step begun that never returned,
    and nothing after it says anything (no error, stall, step, collective, end; only lines no parser decodes):
    start-up stopped inside that step. The step, its host and process, what to check."""
    if (ev.steps.height or ev.progressed or ev.finished or ev.failure_signs or ev.clean_end
            or ev.stalls.height or not unfinished(ev)):
        return None
    steps = ev.kinds(EventKind.SERVER_UP).filter(pl.col("where").fill_null("").str.starts_with("set-up step "))
    if not steps.height:
        return None
    last = steps.sort("file", "line").group_by("file", maintain_order=True).last()
    last = last.filter(pl.col("where").str.starts_with(ss.BEGUN))
    if not last.height:
        return None
    # (after it, nothing but lines no parser decodes: a telling line of an error's or a crash's words is a failure
    # other rules read)
    quiet = (EventKind.VERSION, EventKind.SETTING)
    after = ev.store.events.join(last.select("file", pl.col("line").alias("_b")), on="file").filter(
        (pl.col("line") > pl.col("_b")) & ~pl.col("kind").is_in(quiet)
        & ~((pl.col("kind") == EventKind.TELLING_LINE)
            & pl.col("where").is_in([str(Telling.LAST), str(Telling.WAIT), str(Telling.WARNING)])))
    if after.height:
        return None
    row = last.row(0, named=True)
    read = ss.read(row["message"] or "")
    if read is None:
        return None
    step, _, groups = read
    head = re.search(HOST_PID, row["message"] or "")
    on = f" on host {head['host']} (pid {head['pid']})" if head else ""
    does = step.does.format(**{"framework": "", "step": "", **groups}).replace("  ", " ")
    others = last.height - 1
    return Verdict(Kind.INIT_STALL, f"start-up never completed: {step.runtime}'s verbose trace shows {does} "
                   f"begun{on}: \"{clip(' '.join((row['message'] or '').split()), 160)}\", and no line says it "
                   f"returned (its next state, or its `returned` line) or anything after it: the log ends inside "
                   f"that set-up step, before any rank ran its work"
                   + (f" (and so do {others} other file(s))" if others > 0 else "")
                   + f"; check {STEP_CHECK.get(step.name, 'what that step waits on')}",
                   sorted(set(last["rank"].drop_nulls().to_list())), lines(last, 3) + lines(steps.head(1), 1))
