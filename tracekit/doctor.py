"""``tracekit doctor``: known hang and slowness causes in a launch command, before the run.

``check(argv, env)`` reads one command as the program will receive it (after the shell's quoting),
plus the environment and this machine's network interfaces, and returns ``Finding``s: what is
wrong, why it matters for a multi-node run, and the fix. ``commands_in_script`` pulls the launch
commands out of a shell script (as in ms-swift issue 6867's launch.sh; ``script_commands`` reads the
script first); ``compare`` says how the per-node commands differ (they should differ only in the node
rank). ``check_all`` does both for the commands ``tracekit doctor`` was given.
"""

from __future__ import annotations

import ipaddress
import json
import math
import os
import re
import shlex
import socket
from collections import Counter
from dataclasses import asdict, dataclass
from enum import Enum
from pathlib import Path

from tracekit import escape, fixes, inputs
from tracekit.errors import InputError

LAUNCHERS = ("torchrun", "torch.distributed.run", "torch.distributed.launch", "deepspeed", "accelerate",
             "swift")
LAUNCHER_OPTS = {"nnodes", "node_rank", "node-rank", "nproc_per_node", "nproc-per-node", "master_addr",
                 "master-addr", "master_port", "master-port", "rdzv_endpoint", "rdzv-endpoint",
                 "rdzv_backend", "rdzv-backend"}
SWIFT_DEFAULT_DDP_TIMEOUT = 18_000_000  # seconds: ms-swift's default, 208 days


class Severity(Enum):
    ERROR = "error"
    WARNING = "warning"
    INFO = "info"


@dataclass
class Finding:
    id: str
    severity: Severity
    what: str
    why: str
    fix: str

    def to_dict(self) -> dict:
        return asdict(self) | {"severity": self.severity.value}


@dataclass
class Launch:
    """One command split into the launcher's options and the program's flags (in order)."""

    argv: list[str]
    launcher: dict[str, str]
    program: str | None
    flags: list[tuple[str, str | None]]

    def flag(self, name: str) -> str | None:
        """The value the program sees: the last one given, as argparse keeps it."""
        vals = [v for k, v in self.flags if k == name]
        return vals[-1] if vals else None

    @property
    def nnodes(self) -> int:
        try:
            return int(self.launcher.get("nnodes", "1").split(":")[-1])
        except ValueError:
            return 1


def parse_launch(argv: list[str]) -> Launch:
    launcher: dict[str, str] = {}
    i, program = 0, None
    while i < len(argv):
        a = argv[i]
        if a.startswith("--") and program is None:
            name, _, val = a[2:].partition("=")
            if name.replace("-", "_") in {o.replace("-", "_") for o in LAUNCHER_OPTS}:
                if not val and i + 1 < len(argv):
                    i, val = i + 1, argv[i + 1]
                launcher[name.replace("-", "_")] = val
            i += 1
            continue
        if program is None and (a.endswith(".py") or a in ("pt", "sft", "rlhf", "pretrain")):
            program = a
            i += 1
            break
        i += 1
    flags: list[tuple[str, str | None]] = []
    while i < len(argv):
        a = argv[i]
        if a.startswith("--"):
            name, eq, val = a[2:].partition("=")
            if not eq:
                val = argv[i + 1] if i + 1 < len(argv) and not argv[i + 1].startswith("--") else None
                i += val is not None
            flags.append((name, val))
        i += 1
    return Launch(argv, launcher, program, flags)


def _repair_json(value: str) -> str:
    """The JSON the user meant: quote bare keys (what the shell stripped)."""
    fixed = re.sub(r'([{,]\s*)([A-Za-z_]\w*)\s*:', r'\1"\2":', value)
    try:
        return json.dumps(json.loads(fixed))
    except ValueError:
        return fixed


def _interfaces() -> list[str]:
    try:
        return [name for _, name in socket.if_nameindex()]
    except OSError:
        return []


def _is_ipv6(addr: str) -> bool:
    try:
        return isinstance(ipaddress.ip_address(addr.strip("[]")), ipaddress.IPv6Address)
    except ValueError:
        return False


def _resolves(host: str, timeout: float = 2.0) -> bool:
    old = socket.getdefaulttimeout()
    socket.setdefaulttimeout(timeout)
    try:
        socket.getaddrinfo(host, 443)
        return True
    except OSError:
        return False
    finally:
        socket.setdefaulttimeout(old)


def _seconds(text: str) -> float | None:
    """A number of seconds as the program would parse it (``float``), else None: ``²`` is a digit
    to ``str.isdigit`` and no number to ``float``."""
    try:
        secs = float(text)
    except ValueError:
        return None
    return secs if math.isfinite(secs) else None


def _fix(cause: str) -> str:
    """The fix of a cause and how to check it took, from the one table (``tracekit.fixes``)."""
    f = fixes.BY_CAUSE[cause]
    return f"{f.fix}; check it took: {f.check}"


def check(argv: list[str], env: dict[str, str] | None = None, interfaces: list[str] | None = None,
          rdma: bool | None = None, network: bool | None = None) -> list[Finding]:
    """Findings for one launch command. ``interfaces``, ``rdma`` and ``network`` describe the node
    (read from this machine when not given)."""
    env = dict(os.environ if env is None else env)
    ifaces = _interfaces() if interfaces is None else interfaces
    ib = Path("/sys/class/infiniband")
    rdma = (ib.is_dir() and any(ib.iterdir())) if rdma is None else rdma
    L = parse_launch(argv)
    out: list[Finding] = []
    swift_program = L.program is not None and ("swift" in L.program
                                               or L.program in ("pt", "sft", "rlhf", "pretrain"))
    swift = swift_program or any(a == "swift" or a.endswith("/swift") for a in argv[:2])

    for name, val in L.flags:
        if val and val.lstrip()[:1] in "{[":
            try:
                json.loads(val)
            except ValueError:
                out.append(Finding(
                    "json-mangled", Severity.WARNING,
                    f"--{name} reaches the program as `{val}`, which is not JSON",
                    "the shell removed the inner double quotes of \"{ \"key\": ...}\"; ms-swift repairs it "
                    "with json_repair on every rank alike, other programs fail or parse it differently",
                    f"quote it with single quotes: --{name} '{_repair_json(val)}'"))
    seen: dict[str, list[str | None]] = {}
    for name, val in L.flags:
        seen.setdefault(name, []).append(val)
    for name, vals in seen.items():
        if len(vals) > 1 and len(set(vals)) > 1:
            out.append(Finding(
                "repeated-flag", Severity.WARNING,
                f"--{name} is given {len(vals)} times ({', '.join(map(str, vals))}); "
                f"the program keeps {vals[-1]}",
                "argparse and HfArgumentParser keep the last value silently; "
                "the earlier one was probably meant",
                f"give --{name} once"))

    multinode = L.nnodes > 1
    ds = (L.flag("deepspeed") or "").lower()
    if multinode and "zero3" in ds.replace("_", "").replace("-", "") or multinode and "stage3" in ds:
        offload = "offload" in ds
        out.append(Finding(
            "zero3-multinode", Severity.WARNING,
            f"ZeRO-3{' with CPU offload' if offload else ''} ({L.flag('deepspeed')}) across {L.nnodes} nodes"
            + ("" if rdma else "; no RDMA device on this node (/sys/class/infiniband)"),
            "ZeRO-3 all-gathers every layer's parameters in forward and again in backward and "
            "reduce-scatters the gradients, every micro-step (x gradient_accumulation_steps); over NCCL's "
            "NET/Socket fallback a step can take so long that it looks like a hang"
            + (", and offload adds host copies to it" if offload else ""),
            _fix("socket-fallback") + "; or tune sockets (NCCL_SOCKET_NTHREADS=4 NCCL_NSOCKS_PERTHREAD=4)"))
    virtual = ("docker", "veth", "virbr", "ifb", "br-")
    real_ifaces = [i for i in ifaces if i != "lo" and not i.startswith(virtual)]
    if multinode and not env.get("NCCL_SOCKET_IFNAME") and len(real_ifaces) > 1:
        out.append(Finding(
            "no-socket-ifname", Severity.WARNING,
            f"NCCL_SOCKET_IFNAME is not set and this node has {len(real_ifaces)} interfaces "
            f"({', '.join(real_ifaces)})",
            "NCCL and Gloo pick an interface by their own order; one whose address the other node cannot "
            "reach makes the first cross-node connect retry and time out (a hang at the first collective)",
            f"{_fix('interface')} (here e.g. {real_ifaces[0]})"))
    master = L.launcher.get("master_addr") or env.get("MASTER_ADDR", "")
    fam = env.get("NCCL_SOCKET_FAMILY", "")
    if multinode and _is_ipv6(master):
        if fam.upper() == "AF_INET":
            out.append(Finding(
                "ipv6-master-ipv4-family", Severity.ERROR,
                f"the master address {master} is IPv6 but NCCL_SOCKET_FAMILY=AF_INET",
                "the rendezvous runs over IPv6 while NCCL's bootstrap and data sockets look for IPv4 "
                "addresses: nodes reachable only over IPv6 never connect",
                "set NCCL_SOCKET_FAMILY=AF_INET6 (and, on RoCE, NCCL_IB_ADDR_FAMILY=AF_INET6 or the IPv6 "
                "NCCL_IB_GID_INDEX)"))
        elif not fam:
            out.append(Finding(
                "ipv6-master", Severity.INFO,
                f"the master address {master} is an IPv6 literal; NCCL_SOCKET_FAMILY is not set",
                "torchrun's rendezvous works over IPv6, but NCCL picks its interface and address family on "
                "its own, and RoCE defaults to an IPv4 GID: the data path can differ from the path the "
                "rendezvous proved",
                "check `Bootstrap : Using` and `NET/IB : Using` in the NCCL log (tracekit ingest shows "
                "both); set NCCL_SOCKET_FAMILY=AF_INET6 / NCCL_IB_ADDR_FAMILY=AF_INET6 where the nodes share "
                "only IPv6"))
    timeout = L.flag("ddp_timeout")
    secs = _seconds(timeout) if timeout else (SWIFT_DEFAULT_DDP_TIMEOUT if swift else None)
    if secs is not None and secs > 7200:
        out.append(Finding(
            "huge-ddp-timeout", Severity.WARNING,
            f"the collective timeout is {secs:,.0f} s ({secs / 86400:.0f} days)"
            + (" (ms-swift's default; --ddp_timeout is not given)" if not timeout else ""),
            "a deadlocked rank is never reported: no watchdog error, no Flight Recorder dump on timeout; "
            "a hang and a very slow step look the same",
            "--ddp_timeout 1800, and launch with `tracekit run` so stalls dump stacks and the Flight "
            "Recorder"))
    report = (L.flag("report_to") or "").lower()
    offline = env.get("WANDB_MODE", "").lower() in ("offline", "disabled", "dryrun")
    if ("wandb" in report or report == "all") and not offline:
        reachable = _resolves("api.wandb.ai") if network is None else network
        out.append(Finding(
            "wandb-online", Severity.WARNING if not reachable else Severity.INFO,
            "--report_to wandb with WANDB_MODE unset"
            + ("" if reachable else "; api.wandb.ai does not resolve from this node"),
            "wandb.init runs on global rank 0 only, in on_train_begin, after deepspeed.initialize; while it "
            "waits for the network the other ranks sit in the first all-gather",
            _fix("wandb")))
    flash = (L.flag("attn_impl") or "") in ("flash_attn", "flash_attention_2")
    if (L.flag("packing") or "").lower() == "true" and not flash:
        out.append(Finding(
            "packing-without-flash-attn", Severity.WARNING, "--packing True without --attn_impl flash_attn",
            "ms-swift's packing needs flash-attn to keep packed sequences apart", "--attn_impl flash_attn"))
    return out


def commands_in_script(text: str) -> list[tuple[int, list[str]]]:
    """(line number, argv) of each launch command in a shell script."""
    found = []
    for n, line in enumerate(text.splitlines(), 1):
        s = line.strip()
        if s.startswith("#") or not any(k in s for k in LAUNCHERS):
            continue
        s = re.sub(r"^\s*[\w*|\-]+\)\s*", "", s)  # a `case` label such as `0)`
        s = s.split(";;")[0]
        try:
            argv = shlex.split(s, comments=True)
        except ValueError:
            continue
        launch = (i for i, a in enumerate(argv)
                  if any(a.endswith(k) for k in LAUNCHERS) or a in ("python", "python3"))
        start = next(launch, None)
        if start is not None:
            found.append((n, argv[start:]))
    return found


def script_commands(path: str) -> list[tuple[str, list[str]]]:
    """``(where, argv)`` of each launch command in the shell script at ``path``, ``where`` its
    ``FILE:LINE``. InputError where the script cannot be read (a FIFO or a device is refused, not
    waited on) or holds no launch command."""
    got = inputs.read(path)
    if got.data is None:
        raise InputError(str(got.notes[0]))
    commands = commands_in_script(bytes(got.data).decode(errors="replace"))
    if not commands:
        raise InputError(f"{escape.name(path)}: no launch command (torchrun, deepspeed, swift, "
                         "python -m torch.distributed.run) found")
    return [(f"{escape.name(path)}:{n}", argv) for n, argv in commands]


def check_all(commands: list[tuple[str, list[str]]]) -> tuple[list[dict], list[str]]:
    """Each command's findings (``[{where, findings: [Finding.to_dict()]}]``) and how the commands
    differ (``compare``): what ``tracekit doctor`` prints, and its JSON."""
    report = [{"where": w, "findings": [f.to_dict() for f in check(a)]} for w, a in commands]
    return report, compare([a for _, a in commands])


SHOWN_IN_ORDER = 8  # up to this many commands, a difference lists each command's value in order


def compare(commands: list[list[str]]) -> list[str]:
    """How per-node commands differ, flag by flag (expected: the node rank only): ``--node_rank: 0 | 1``,
    each command's value in order; past SHOWN_IN_ORDER commands, each value with how many commands
    give it, most common first (``--lr: 1e-4 x15, 2e-4 x1``). Linear in the commands' size."""
    if len(commands) < 2:
        return []
    given: dict[str, dict[int, str | None]] = {}  # flag -> {command: its value as the program keeps it}
    for i, c in enumerate(commands):
        p = parse_launch(c)
        for k, v in [*p.flags, *p.launcher.items()]:  # the last value given; the launcher's option first
            given.setdefault(k, {})[i] = v
    n, diffs = len(commands), []
    for k, by in given.items():
        distinct = Counter(by.values())
        if len(by) < n:
            distinct["unset"] += n - len(by)
        if len(distinct) < 2:
            continue
        if n <= SHOWN_IN_ORDER:
            diffs.append(f"--{k}: " + " | ".join(str(by.get(i)) for i in range(n)))
            continue
        shown = [f"{v} x{times}" for v, times in distinct.most_common(4)]
        more = len(distinct) - len(shown)
        diffs.append(f"--{k}: " + ", ".join(shown) + (f", {more} other value(s)" if more else ""))
    return diffs
