"""The shapes of NCCL's lines, and of the tools that write beside it (RCCL, aws-ofi-nccl, SHARP,
libfabric, the verbs provider): the prefixes, the message each decoder of ``nccl.parse`` reads, the
WARNs known to be harmless with why, and the INFO chatter known to say nothing further."""

from __future__ import annotations

from tracekit.meanings import (  # noqa: F401 (read by nccl.py)
    BENIGN_LOGGED as BENIGN, BENIGN_LOGGED_ANY as BENIGN_ANY)

# (a host a user redacted reads `<cluster_name>`: one host all the same)
PREFIX = (
    r"(?:^|[^\w.\-:<]|:\d+)(?P<host>\w[\w.\-]*|<[\w.\-]+>):(?P<pid>\d+):(?P<tid>\d+) \[(?P<dev>\d+)\] "
    r"(?:(?P<src_loc>\S+) )?(?:NCCL )?(?P<level>INFO|WARN|TRACE|ABORT) ?(?P<msg>.*)$"
)
# the same without pid:tid (RCCL builds that print `node [1] NCCL INFO ...`): then "NCCL" must be there
PREFIX_NO_PID = (
    r"(?:^|[^\w.\-:])(?P<host>\w[\w.\-]*) \[(?P<dev>\d+)\] (?:(?P<src_loc>\S+) )?NCCL "
    r"(?P<level>INFO|WARN|TRACE|ABORT) ?(?P<msg>.*)$"
)
# aws-ofi-nccl's own lines where it logs outside NCCL:
# `WARN: Function: find_ofi_provider Line: 543: NET/OFI ...`
OFI_LINE = r"^(?P<level>INFO|WARN|TRACE): Function: (?P<src_loc>\w+ Line: \d+): (?P<msg>.*)$"
# SHARP's: `[gpu34:0:34088 - context.c:665][2025-05-26 15:39:24] ERROR SHArP Job init error: No resource`
SHARP_LINE = (r"^\[(?P<host>[\w.\-]+):\d+:(?P<pid>\d+)(?: - (?P<src_loc>[\w.]+:\d+)| unique id \d+)"
              r"\]\[[^\]]*\] (?P<level>INFO|WARN|WARNING|ERROR|DEBUG) (?P<msg>.*)$")
# SHARP's daemon: `[gpu34][May 26 15:39:24 887618][GENERAL][34135][warn ] - Begin job id: ... failed ...`
SHARPD_LINE = r"^\[(?P<host>[\w.\-]+)\]\[[^\]]+\]\[\w+\]\[(?P<pid>\d+)\]\[(?P<level>\w+)\s*\] - (?P<msg>.*)$"
# libfabric's own log: `libfabric:451707:1708520807::efa:cq:efa_rdm_txe_handle_error():737<warn> err: 5, ...`
FABRIC_LINE = (r"^\s*libfabric:(?P<pid>\d+):\d+::\w+:\w+:(?P<src_loc>\S+?)"
               r"<(?P<level>warn|info|debug|trace)> (?P<msg>.*)$")
# the verbs provider's error dump (`mlx5: host: got completion with error:`) and a plugin's line with its
# prefix cut away (`NET/OFI Unexpected number of remote rails ...`): a WARN when it says something failed
MLX5_LINE = r"^(?:mlx5: )?[\w.\-]+: (?P<msg>got completion with error:?.*)$"
BARE_PLUGIN = r"^(?P<msg>NET/(?:OFI|IB|Socket|Plugin) .*)$"
# an NCCL line whose `host:pid:tid [dev]` a paste lost: `NCCL WARN NET/IB : Unable to open device mlx5_0`,
# `Broadcast: opCount 1 sendbuff ...` (no process named: no rank)
# (NCCL 2.4-2.6 lost it and kept the source place:
# `init.cc:1247 NCCL WARN Mismatched collective detected, ...`)
BARE_NCCL = (r"^(?:(?P<src_loc>[\w/.\-]+\.(?:cc|cu|h|cpp):\d+) )?"
             r"NCCL (?P<level>INFO|WARN|TRACE|ABORT) (?P<msg>.*)$")
BARE_COLL = r"^(?P<msg>\w+: opCount [0-9a-fA-F]+ sendbuff \S+ recvbuff .*)$"
OTHER_SHAPES = (r"^(?:INFO|WARN): Function: |^\[[\w.\-]+(?::\d+:\d+ |\]\[)|libfabric:\d+:"
                r"|got completion with error|^NET/(?:OFI|IB|Socket|Plugin) "
                r"|^(?:[\w/.\-]+:\d+ )?NCCL (?:INFO|WARN|TRACE|ABORT) |^\w+: opCount ")
FAILED_WORDS = r"(?i)unexpected|couldn't|could not|fail|error|invalid|mismatch"
# a message that starts with a second writer's prefix (two writers glued in one line)
GLUED = r"(?:^|[^\w.\-:]|:\d+)\w[\w.\-]*:\d+:\d+ \[\d+\] (?:\S+ )?NCCL (?:INFO|WARN|TRACE|ABORT)"
# the same, as the place to cut a glued line: what stood before the prefix, and the prefix
GLUED_CUT = (r"(?P<pre>^|[^\w.\-:]|:\d+)"
             r"(?P<p>\w[\w.\-]*:\d+:\d+ \[\d+\] (?:\S+ )?NCCL (?:INFO|WARN|TRACE|ABORT))")
# NCCL's banner (RCCL's too), and the version a program says it loaded (`vLLM is using nccl==2.20.5`)
VERSION = r"(?:[NR]CCL version |\bis using nccl==)(?P<version>[\w.+\-]+?)(?:NCCL|\s|$)"
USING = r"(?P<where>\w+) is using nccl==(?P<version>[\w.+\-]+)"
NCCL_TUPLE = r"\((?P<a>\d+), (?P<b>\d+), (?P<c>\d+)\)\s*$"
INIT = (
    r"^(?:\[Rank \d+\] )?(?:(?P<api>\w+) )?comm (?P<comm>0x[0-9a-fA-F]+) rank (?P<rank>\d+) "
    r"nranks (?P<nranks>\d+) cudaDev (?P<cuda_dev>\d+)(?: nvmlDev \d+)?(?: busId (?P<bus_id>[0-9a-fA-F]+))?"
    r"(?: commId (?P<comm_id>0x[0-9a-fA-F]+))?(?: parent (?P<parent>0x[0-9a-fA-F]+))?"
    r"(?: color (?P<color>-?\d+))?(?: key (?P<key>-?\d+))?.*?-\s*"
    r"(?P<state>Init START|Init COMPLETE|Destroy COMPLETE|Abort COMPLETE)"
)
NNODES = (
    r"comm (?P<comm>0x[0-9a-fA-F]+) rank (?P<rank>\d+) nRanks (?P<nranks>\d+) nNodes (?P<nnodes>\d+) "
    r"localRanks (?P<local_ranks>\d+) localRank (?P<local_rank>\d+)"
)
COLL = (
    r"^(?P<op>\w+): opCount (?P<opcount>[0-9a-fA-F]+) sendbuff \S+ recvbuff \S+ count (?P<count>\d+) "
    r"datatype (?P<dtype>\d+) op \d+ root (?P<root>-?\d+) comm (?P<comm>0x[0-9a-fA-F]+|\(nil\))"
    r"(?: \[nranks=(?P<nranks>\d+)\])?"
)
CONN = (
    r"^(?:Channel|Ring) (?P<channel>\d+)(?:/\d+)? : (?P<src>\d+)(?:\[\w+\])? -> (?P<dst>\d+)(?:\[\w+\])? "
    r"(?:\[(?P<direction>send|receive)\] )?via (?P<transport>\S+)"
    r"(?:.*? comm 0x[0-9a-fA-F]+ nRanks (?P<nranks>\d+))?"
)
# pre-2.4 init (`rank 0 nranks 8`, `comm 0x... rank 1 nranks 8`), 2.4's `... cudaDev 0 nvmlDev 0` without a
# state, 2.23+'s `Init timings - ncclCommInitRank: rank 5 nranks 16 total ...`
RANK_NRANKS = (r"^(?:(?:\w+ )?comm 0x[0-9a-fA-F]+ |Init timings[^:]*: "
               r"|\[Rank \d+\] (?:\w+ )?comm 0x[0-9a-fA-F]+ )?"
               r"rank (?P<rank>\d+) n[Rr]anks (?P<nranks>\d+)\b")
# a proxy thread names the rank it serves: `[Proxy Service 3] Failed to execute operation Connect from rank 3`
PROXY_RANK = r"^\[Proxy (?:Service|Progress|Thread)(?: UDS)? (?P<rank>\d+)\]"
# a line that names its communicator's rank and not its size: `UDS: Creating service thread comm 0x36 rank 1`
# (proxy.cc), `Destroyed comm 0x7f24 rank 4` (init.cc before 2.12), `commDestroySync: comm 0x.. rank 2 ...`
# (lines that say nranks too are read by INIT, NNODES and RANK_NRANKS)
COMM_RANK = r"\bcomm 0x[0-9a-fA-F]+ rank (?P<rank>\d+)\b"
# NCCL's words that name ranks other than the writer's (the rank at fault, two ranks on one GPU, a rank
# that checked in twice, of how many): src/init.cc, src/bootstrap.cc:348 (NCCL 2.4's enqueue check)
NAMED_RANKS = (
    r"Mismatched collective detected, please check your collective calls at and around rank (?P<a>\d+)",
    r"Duplicate GPU detected : rank (?P<a>\d+) and rank (?P<b>\d+) both on CUDA device",
    r"Bootstrap Root ?: rank (?P<a>\d+) of (?P<nranks>\d+) ranks has already checked in",
)
RING = r"^Channel (?P<channel>\d+)(?:/\d+)? :\s*(?P<value>\d[\d ]*?)\s*$"
TREES = r"^Trees (?P<value>.*\S)"
BOOT = r"^Bootstrap ?: Using (?:\[\d+\])?(?P<iface>[\w.\-]+):(?P<addr>[^<\s]+)<"
NET = r"^Using network (?P<value>\S+)"
IB_NONE = r"^NET/IB ?: No device found"
IB_USING = r"^NET/IB ?: Using (?P<value>.*?)\s*(?:;\s*OOB (?P<iface>[\w.\-]+):(?P<addr>[^<\s]+)<\d+>)?\s*$"
SOCK_USING = r"^NET/Socket ?: Using (?P<value>\[0\](?P<iface>[\w.\-]+):(?P<addr>[^<\s]+)<.*)"
CONNECT_RETRY = r"(?i)(connect to .* failed|retrying|connection refused|connection timed out)"
IB_ERROR = (r"Got completion from peer (?P<peer>\S+) with (?:error|status)"
            r"[ =]?(?:IBV_WC_\w+\()?(?P<status>\d+)"
            r"|^got completion with error")
# NCCL's last error quoted inline in an exception that lost its line breaks (`... ncclRemoteError: ... Last
# error: NET/IB : Got completion from peer ... with error 12, ...`): torch prints it on a line of its own
LAST_ERROR_INLINE = r"\S.*?\bLast error: (?:\d+: )?(?P<msg>\S.*?)(?: \d+: |$)"
FAST_HEAD = r"^[\w.\-]+:\d+:\d+ \[\d+\] (?:[\w.\-/]+:\d+ )?NCCL (?:INFO|WARN|TRACE|ABORT)(?: |$)"
UNWIND = r"^[\w/.\-]+\.(?:cc|h|cu|cpp):\d+ -> \d+"

# how long init took:
# `Init timings - ncclCommInitRank: rank 2 nranks 8 total 0.75 (..., bootstrap 0.01, ...)`,
# `Bootstrap timings total 0.030028 (create ...)`: a `timings` link, value the bootstrap's seconds
TIMINGS = r"^(?:Init timings[^(]*\(.*?\bbootstrap (?P<boot>[\d.]+)|Bootstrap timings total (?P<total>[\d.]+))"
# pre-2.4 network lines: `NET : Using interface eth0:10.1.2.3<0>` (the bootstrap's),
# `Using internal Network IB`, `NET/IB: [0] mlx5_0:1/IB` (the devices)
OLD_BOOT = r"^NET : Using interface (?P<iface>[\w.\-]+):(?P<addr>[^<\s]+)<"
OLD_NET = r"^Using internal Network (?P<value>\w+)"
OLD_IB = r"^NET/IB ?: (?P<value>\[\d+\] ?\S+:\d+/\w+.*)"
# `NCCL_SOCKET_IFNAME set by environment to lo`, `NCCL_SOCKET_IFNAME set to eth0`: a setting event
SETTING = (r"^(?P<key>NCCL_\w+|[A-Z][A-Z0-9_]+) set (?:by environment )?to "
           r"(?P<value>.*?)\.?(?: \[repeated.*)?$")
# WARNs (and INFO lines) that a fallback follows, with why each is harmless (`benign_warn` events): BENIGN,
# BENIGN_ANY, from tracekit.meanings (one list, shared with the evidence)
# INFO messages that are known and harmless (set-up chatter): understood, nothing to keep. Decoded kinds
# (init, channels, trees, bootstrap, network, COLL, unwinding, retries, settings) are matched above.
KNOWN_INFO = [
    # plugins and libraries
    r"(?:NET|TUNER|PROFILER|ENV|GIN|COLLNET)/Plugin ?:",
    r"(?:Loaded|Initialized|Assigned) (?:net|coll|NET) plugin",
    r"Failed to initialize (?:NET plugin|any GIN plugin)", r"Using non-device net plugin", r"Plugin Path :",
    r"P2P plugin ", r"Using network \S+", r"dlvsym failed", r"rocm_smi_lib: version",
    r"Setting hipLimitStackSize",
    r"cudaDriverVersion \d+", r"NCCL git version", r"CC (?:On|Off),", r"Comm config \w+ set to",
    # topology and affinity
    r"Setting affinity for GPU", r"ncclTopoGetCpuAffinity:", r"=== System : maxWidth",
    r"\s*\+ (?:PCI|NVL|SYS|NET|LOC)\[",
    r"(?:CPU|GPU|NIC|NET|PCI)/[\w.]+", r"Attribute \w+ of node \w+ not found", r"Pattern \d+, crossNic",
    r"Topology detection:", r"Could not (?:get speed from|find real path of)",
    r"CUDA Dev \d+(?:\[\d+\])?, (?:\w+ NIC distance|IP Interfaces)",
    r"NVLS multicast support is (?:not )?available", r"NVLS comm ", r"MNNVL ", r"Symmetric memory",
    r"P2P is disabled between", r"Could not enable P2P between", r"Check P2P Type", r"Ring \d+ : [\d ]+$",
    r"GPU Direct RDMA (?:Disabled|Enabled)", r"NET/(?:IB|Socket) ?: GPU Direct RDMA", r"DMA-BUF is available",
    r"NET/IB ?: Using interface \S+ for sideband communication", r"NET/Socket ?: \d+ interfaces found",
    r"NET/Socket ?: Using \d+ threads and \d+ sockets per thread",
    r"NET/OFI (?:Selected [Pp]rovider|Using|Setting|Running on|Adding|Received \d+|Server: |Initializing"
    r"|Creating|Support for|Internode latency|Configuring|Disabling|Forcing|Libfabric|Loaded|aws-ofi-nccl"
    r"|GUID|Topology"
    r"|Process rank \d+ started|No NIC info)",
    r"Using NCCL Low-latency algorithm", r"Using \d+ threads, Min Comp Cap", r"Launch mode \w+",
    # channels, graphs, rings once set up
    r"Connected (?:all rings|all trees|NVLS|binomial trees|collnet|all)", r"threadThresholds ",
    r"\d+ coll channels", r"P2P Chunksize set to", r"Enabled NCCL Func/Proto/Algo Matrix", r"NCCL_PROTO ",
    r"(?:Channel|Ring) \d+(?:/\d+)? :\s*$",
    # threads, memory, proxies
    r"\[Proxy (?:Service|Progress|Thread)(?: UDS)?\] Device \d+ CPU core",
    r"New proxy (?:send|recv) connection",
    r"Connected to proxy localRank", r"(?:[\w./\-]+:\d+ )?(?:Cuda |Ib |Cuda Host )?Alloc Size \d+",
    r"Mem Realloc",
    r"ncclCuda(?:CallocDebug|Free)", r"Found side stream", r"Allocated \d+ bytes", r"ncclMemAlloc",
    r"(?:Bootstrap|Init) timings", r"RAS (?:client listening socket|failed to establish)",
    r"Dumping proxy state",
    r"socketProgressOpt: abort called", r"\[Service thread\] Connection closed by localRank \d+",
    r"NCCL_\w+ set to ", r"rank \d+ nranks \d+$",
]
KNOWN_INFO_ANY = "^(?:" + "|".join(f"(?:{k})" for k in KNOWN_INFO) + ")"
