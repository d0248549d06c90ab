"""The ingest summary, as a stable JSON-able dict and as text for a terminal.

JSON schema (``schema_version`` 1): files_by_kind {kind: n}, files [{file, kind, lines, parsed,
unknown, error}], ranks {count, world_size, nodes, hosts}, coverage {world_size, seen, missing,
sources {rank: [source]}, unranked_processes, complete, text}, versions {nccl, torch, deepspeed},
transports [{host_pair, transport, n}], network [{host, what, value}], communicators {total,
init_complete, pending}, last_collective [{rank, source, pg, seq, op}], errors [{file, line, kind,
message}], unknown_lines {file: n}, traffic {ranks, nranks, steps, accumulation, by_op [{op, calls,
data_bytes, sent_bytes}] per rank over the run, text} or null without NCCL COLL lines (tracekit.traffic),
verdict {kind, meaning, summary, ranks, evidence, notes, coverage, failure_signs, failed, rule, findings}.
"""

from __future__ import annotations

import polars as pl

from tracekit import escape, traffic
from tracekit.meanings import CONSEQUENCE
from tracekit.outcome import EventKind, Verdict
from tracekit.store import Store
from tracekit.wording import who

#: kinds of error line that follow a failure elsewhere (meanings.CONSEQUENCE says it of a message)
KNOCK_ON = ["rank_exit", "child_failed", "closing_signal", "watchdog_abort", "signal"]
#: ... and lines of other kinds that do (torchrun's `failed (exitcode: 1) local_rank: 1`, glog E-level)
KNOCK_ON_TEXT = CONSEQUENCE + r"|failed \(exitcode: -?\d+\) local_rank|closing signal"
ERROR_KINDS = [EventKind.NCCL_WARN, EventKind.TRANSPORT_ERROR, EventKind.CONNECT_RETRY, EventKind.WATCHDOG_TIMEOUT,
               EventKind.CRASH, EventKind.EXCEPTION, EventKind.RANK_EXIT, EventKind.COLLECTIVE_MISMATCH,
               EventKind.C10D_ERROR, EventKind.JOB_CANCELLED]


#: where a collective row came from, as the summary says it
SOURCE_NAMES = {"fr": "the Flight Recorder", "nccl": "the NCCL log", "kineto": "the Kineto trace",
                "kineto-gpu": "the Kineto trace's GPU kernels", "deepspeed": "DeepSpeed's comms log"}
#: what each kind of network line of NCCL's says, as the summary words it
NETWORK_WORDS = {"network": "NCCL uses", "bootstrap": "NCCL bootstrap on", "ib_not_found": "NCCL found no InfiniBand device:",
                 "socket_devices": "NCCL socket interface", "ib_devices": "NCCL InfiniBand devices"}
ERROR_WIDTH = 240  # characters of the first error line shown; longer ones end at a word, with "..."
SLOW_BOOTSTRAP_S = 10.0  # NCCL's bootstrap takes well under a second when every rank is there


def _clip(text: str, width: int = ERROR_WIDTH) -> str:
    """``text`` whole when it fits, else cut at the last space before ``width`` and marked with "..."."""
    text = " ".join(text.split())
    if len(text) <= width:
        return text
    cut = text[: width - 3]
    return (cut.rsplit(" ", 1)[0] if " " in cut else cut) + " ..."


def _last_collectives(c: pl.DataFrame) -> pl.DataFrame:
    """Each rank's last collective of each source (by start time, record id, then line; a null
    counts as the latest), Kineto's GPU kernels aside. The rows are found on their keys alone, then
    gathered: the strings of a million rows are never copied."""
    keys = [pl.col(k).cast(pl.Int64).fill_null(2**63 - 1).alias(k) for k in ("start_ns", "record_id", "line")]
    at = (c.lazy().with_row_index("_i").filter(pl.col("rank").is_not_null() & (pl.col("source") != "kineto-gpu"))
          .select("_i", "rank", "source", *keys).group_by("rank", "source")
          .agg(pl.col("_i").sort_by("start_ns", "record_id", "line", maintain_order=True).last()).collect())
    return c[at["_i"].sort()].sort("rank", "source").select(
        "rank", "source", "pg", "seq", pl.coalesce("op_raw", pl.col("op").cast(pl.Utf8)).alias("op"))


def build(store: Store, verdict: Verdict, unknown: pl.DataFrame | None = None) -> dict:
    """The summary; ``unknown``: the lines not understood (``ingest.unknown_lines``), counted by
    block where given."""
    r, f, c, lk, ev = store.ranks, store.files, store.comms, store.links, store.events
    conn = lk.filter(pl.col("what") == "connection")
    hosts = store.ranks.select("rank", "host").drop_nulls()
    # a [receive] line is written by the receiver: its host is the pair's second, the sender's (src) the first
    recv = pl.col("direction") == "receive"
    transports = (conn.with_columns(pl.when(recv).then("src").otherwise("dst").alias("_peer"))
                  .join(hosts.rename({"rank": "_peer", "host": "peer_host"}), on="_peer", how="left")
                  .with_columns(pl.coalesce("peer_host", pl.lit("?")).alias("peer_host"))
                  .with_columns(pl.when(recv.fill_null(False)).then(pl.format("{} -> {}", "peer_host", "host"))
                                .otherwise(pl.format("{} -> {}", "host", "peer_host")).alias("host_pair"))
                  .group_by("host_pair", "transport_kind").len().sort("host_pair", "transport_kind"))
    net = (lk.filter(pl.col("what").is_in(["network", "bootstrap", "ib_not_found", "socket_devices", "ib_devices"]))
           # the IB line's iface:addr is its out-of-band interface: the devices are its value
           .select("host", "what", pl.when(pl.col("what") == "ib_devices").then(
               pl.coalesce(pl.format("{} (OOB {}:{})", "value", "iface", "addr"), "value"))
               .otherwise(pl.coalesce(pl.format("{}:{} ({})", "iface", "addr", "family"), "value")).alias("value"))
           .unique(maintain_order=True))
    init = c.filter(pl.col("state").is_in(["init_start", "init_complete"])).group_by("host", "pid", "comm").agg(
        (pl.col("state") == "init_complete").any().alias("done"))
    last = _last_collectives(store.collectives)
    # the causes first, their consequences (a peer that closed, torchrun's child failed, an abort) under them
    knock_on = pl.col("kind").is_in(KNOCK_ON) | pl.col("message").fill_null("").str.contains(KNOCK_ON_TEXT)
    errors = (ev.filter(pl.col("kind").is_in(ERROR_KINDS)).with_columns(knock_on.alias("consequence"))
              .sort("consequence", "file", "line").select("file", "line", "kind", "message", "consequence"))
    # node index (torchrun's GROUP_RANK) where printed: fake nodes (network namespaces) share a host name
    # and NCCL's own count (`nNodes 4`), which can exceed the host names a paste shows
    nodes = max(r["host"].drop_nulls().n_unique(), r["node"].drop_nulls().n_unique() if "node" in r.columns else 0,
                c["nnodes"].max() or 0)
    boot = lk.filter(pl.col("what") == "bootstrap_s").with_columns(pl.col("value").cast(pl.Float64, strict=False).alias("s"))
    slow_boot = boot.sort("s", descending=True).head(1).filter(pl.col("s") >= SLOW_BOOTSTRAP_S)
    return {
        "schema_version": 1,
        "files_by_kind": dict(f.group_by("kind").len().sort("kind").iter_rows()),
        "files": f.select("file", "kind", "lines", "parsed", "unknown", "error").to_dicts(),
        "ranks": {"count": r["rank"].drop_nulls().n_unique(), "world_size": r["world_size"].max(),
                  "nodes": nodes, "hosts": sorted(r["host"].drop_nulls().unique().to_list())},
        "versions": {k: sorted(v for v in r[col].drop_nulls().unique().to_list() if v) for k, col in
                     (("nccl", "nccl_version"), ("torch", "torch_version"), ("deepspeed", "deepspeed_version"))},
        "transports": [{"host_pair": a, "transport": b, "n": n} for a, b, n in transports.iter_rows()],
        "network": net.to_dicts(),
        "bootstrap": slow_boot.select("host", "rank", pl.col("s").alias("seconds")).to_dicts(),
        "communicators": {"total": init.height, "init_complete": init["done"].sum(),
                          "pending": init.height - init["done"].sum()},
        "last_collective": last.to_dicts(),
        "errors": errors.head(50).to_dicts(), "errors_total": errors.height,
        "unknown_lines": {row["file"]: row["unknown"] for row in f.filter(pl.col("unknown") > 0).iter_rows(named=True)},
        "unknown_blocks": None if unknown is None else block_counts(unknown_blocks(unknown)),
        "coverage": verdict.coverage,
        "traffic": _traffic(store),
        "verdict": verdict.to_dict(),
    }


def _traffic(store: Store) -> dict | None:
    """Collective traffic per step (tracekit.traffic), with the lines ``render`` prints."""
    t = traffic.measure(store)
    return None if t is None else t.to_dict() | {"text": traffic.lines(t)}


def render(s: dict) -> str:
    """The verdict first (its evidence and notes under it), then the summary it comes from: what
    a user reads in ten seconds on top, in a pipe as on a terminal."""
    vd = s["verdict"]
    out = [f"verdict   {vd['kind'].upper()}: {vd['summary']}"]
    for e in list(dict.fromkeys(vd["evidence"]))[:8]:  # a line two rules cite is shown once
        out.append(f"  evidence {e}")
    for n in vd["notes"][:3]:
        out.append(f"  note     {n}")
    out.append("")
    # a file several parsers read (torchrun lines and trainer lines in one stdout) is of kind "torch,trainer"
    kinds = ", ".join(f"{n} {(k or 'unknown').replace(',', '+')}" for k, n in s["files_by_kind"].items())
    rk = s["ranks"]
    out.append(f"files     {len(s['files'])} ({kinds})")
    out.append(f"ranks     {rk['count']} seen, world size {rk['world_size'] or '?'}, {rk['nodes']} node(s)"
               + (f" on {len(rk['hosts'])} host(s)" if len(rk["hosts"]) != rk["nodes"] else "")
               + (f": {', '.join(rk['hosts'][:8])}" + (" ..." if len(rk["hosts"]) > 8 else "") if rk["hosts"] else ""))
    cov = s.get("coverage") or {}
    if cov:
        by: dict[str, list[int]] = {}
        for rank, srcs in cov["sources"].items():
            by.setdefault(", ".join(srcs), []).append(int(rank))
        out.append(f"coverage  {cov['text']}" + "".join(
            f"; {who(ranks)} from {srcs}" for srcs, ranks in sorted(by.items(), key=lambda kv: min(kv[1]))[:4]))
    v = "; ".join(f"{k} {', '.join(vs)}" for k, vs in s["versions"].items() if vs)
    if v:
        out.append(f"versions  {v}")
    for n in s["network"][:6]:
        out.append(f"network   {n['host']}: {NETWORK_WORDS.get(n['what'], n['what'])} {n['value']}")
    for b in s.get("bootstrap", [])[:1]:
        out.append(f"bootstrap NCCL's bootstrap took {b['seconds']:.1f} s on {b['host']}"
                   + (f" (rank {b['rank']})" if b["rank"] is not None else "") + ": some rank joined late or the network is slow")
    if s["transports"]:
        out.append("transports " + "; ".join(f"{t['host_pair']} {t['transport']} x{t['n']}" for t in s["transports"][:8]))
    cm = s["communicators"]
    if cm["total"]:
        out.append(f"comms     {cm['total']} communicator(s), {cm['init_complete']} finished init, {cm['pending']} pending")
    for i, line in enumerate((s.get("traffic") or {}).get("text", [])):
        out.append(f"{'traffic' if i == 0 else '':<10}{line}")
    if s["last_collective"]:
        by = {}
        for row in s["last_collective"]:
            by.setdefault((row["source"], row["op"], row["seq"], row["pg"]), []).append(row["rank"])
        for (src, op, seq, pg), ranks in sorted(by.items(), key=lambda kv: min(kv[1]))[:8]:
            out.append(f"last      {who(ranks)}: {op} seq {seq} on pg {pg} (from {SOURCE_NAMES.get(src, src)})")
    if s["errors_total"]:
        first = s["errors"][0]
        which = "first" if first.get("consequence") else "first cause"
        out.append(f"errors    {s['errors_total']} line(s), {which}: {first['file']}:{first['line']}: "
                   f"{_clip(first['message'] or '')}")
    # nothing read of these (tracekit.ingest.unreadable); a file read in part (a truncated .gz) is counted as read
    bad = [x for x in s["files"] if x["error"] and not (x["lines"] or x["parsed"])]
    for x in bad[:5]:
        out.append(f"unreadable {x['file']}: {x['error']}")
    unk = s["unknown_lines"]
    if unk:
        counted = s.get("unknown_blocks") or []
        # (said only where some block holds several lines: a JSON dump is one block, not 37 lines)
        blocks = "".join(f", {b['blocks']} {b['kind']}{'s' if b['blocks'] > 1 else ''} ({b['lines']} lines)"
                         for b in counted) if any(b["lines"] > b["blocks"] for b in counted) else ""
        out.append(f"unknown   {sum(unk.values())} line(s) not understood in {len(unk)} file(s){blocks} "
                   "(ingest --unknown lists them)")
    # one line each whatever a file name or a log line holds: a newline or a terminal's escape
    # sequence in them is shown escaped, never acted on (a file named "x\nverdict   HEALTHY")
    return "\n".join(map(escape.line, out))


UNKNOWN_PER_FILE, UNKNOWN_FILES = 10, 20  # lines shown of each file, files shown: the rest are counted
#: what a line not understood looks like, for the kind of block it sits in (a JSON or Python dict dump:
#: braces, brackets, `"key": value` lines; a traceback: its header, frames, carets, the exception)
LINE_KINDS = {
    "JSON dump": r"^\s*(?:[{}\[\]],?\s*$|[{\[]\s*[\"'{\[]|[\"'][^\"']+[\"']\s*:\s*|\}\s*,?\s*$)",
    "traceback": r"^(?:Traceback \(most recent call last\)|\s+File \"|\s+[~^]+\s*$|[\w.]+(?:Error|Exception): )",
    "model printout": r"^\s*(?:\([\w.]+\): [\w.]+\(|\)\s*$|[A-Z]\w+\($)",  # print(model): `(embed): Embedding(`
}


def unknown_blocks(lines: pl.DataFrame) -> pl.DataFrame:
    """Lines not understood (``file, line, raw``) as blocks: each run of consecutive lines of one
    file is one, of the kind most of its lines look like (``LINE_KINDS``, else text): ``file, first,
    last, lines, kind, raw`` (its lines' text, in order)."""
    kind = pl.lit("text block")
    for name, pattern in reversed(LINE_KINDS.items()):
        kind = pl.when(pl.col("raw").fill_null("").str.contains(pattern)).then(pl.lit(name)).otherwise(kind)
    return (lines.sort("file", "line", maintain_order=True)
            .with_columns(kind.alias("_k"), (pl.col("line") - pl.int_range(pl.len()).over("file")).alias("_b"))
            .group_by("file", "_b", maintain_order=True)
            .agg(pl.col("line").first().alias("first"), pl.col("line").last().alias("last"), pl.len().alias("lines"),
                 pl.col("_k").mode().sort().first().alias("kind"), pl.col("raw"))
            .drop("_b"))


def block_counts(blocks: pl.DataFrame) -> list[dict]:
    """``[{kind, blocks, lines}]``, the kind with the most lines first."""
    counted = blocks.group_by("kind").agg(pl.len().alias("blocks"), pl.col("lines").sum())
    return counted.sort("lines", "kind", descending=[True, False]).to_dicts()



def unknown_listing(lines: pl.DataFrame) -> list[dict]:
    """The first UNKNOWN_PER_FILE lines not understood (``file, line, raw``) of the first UNKNOWN_FILES
    files, each as ``{file, line, text}``, and for each file shown, how many of its lines were left off."""
    by_file = lines.group_by("file", maintain_order=True).agg(pl.len().alias("n"), pl.col("line", "raw").head(UNKNOWN_PER_FILE))
    return [{"file": f, "total": n, "lines": [{"line": ln, "text": (t or "").rstrip("\r")} for ln, t in zip(nums, raws)]}
            for f, n, nums, raws in by_file.head(UNKNOWN_FILES).iter_rows()]


def render_unknown(lines: pl.DataFrame) -> str:
    """``tracekit ingest --unknown``: the lines no parser understood by block, capped: a block of
    text a line each (``file:line: text``), a JSON dump or a traceback as one line (``file:first-last:
    a JSON dump of N lines: its first line``)."""
    if not lines.height:
        return "lines not understood: none"
    out = [f"lines not understood: {lines.height} in {lines['file'].n_unique()} file(s); "
           f"the first {UNKNOWN_PER_FILE} of each file, by block:"]
    shown: list[str] = []
    for f, blocks in unknown_blocks(lines).group_by("file", maintain_order=True):
        if len(shown) == UNKNOWN_FILES:
            break
        shown.append(f[0])
        said, total = 0, int(blocks["lines"].sum())
        for b in blocks.iter_rows(named=True):
            if said >= UNKNOWN_PER_FILE:
                break
            if b["kind"] == "text block" or b["lines"] == 1:
                rows = list(zip(range(b["first"], b["last"] + 1), b["raw"]))[: UNKNOWN_PER_FILE - said]
                texts = [(n, (t or "").rstrip("\r")) for n, t in rows]
                out += [f"{f[0]}:{n}: {t if len(t) <= ERROR_WIDTH else _clip(t)}" for n, t in texts]
                said += len(rows)
            else:
                out.append(f"{f[0]}:{b['first']}-{b['last']}: a {b['kind']} of {b['lines']} lines: "
                           f"{_clip((b['raw'][0] or '').strip(), 80)}")
                said += b["lines"]
        if total > said:
            out.append(f"  ... and {total - said} more in {f[0]}")
    listing = [{"file": f} for f in shown]
    rest = lines.filter(~pl.col("file").is_in([f["file"] for f in listing]))
    if rest.height:
        out.append(f"  ... and {rest.height} more in {rest['file'].n_unique()} more file(s)")
    return "\n".join(map(escape.line, out))
