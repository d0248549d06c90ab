"""The ingest summary for a terminal: a ``view.Summary`` (counted once from the store by
``Summary.build``) as text; its JSON is ``Summary.to_dict``. And the lines no parser understood
(``ingest --unknown``), by block (``view.unknown_blocks``).

JSON schema (``schema_version`` 1): files_by_kind {kind: n}, files [{file, kind, lines, parsed,
unknown, error}], ranks {count, world_size, nodes, hosts}, coverage {world_size, seen, missing,
sources {rank: [source]}, unranked_processes, complete, text}, versions {nccl, torch, deepspeed},
transports [{host_pair, transport, n}], network [{host, what, value}], bootstrap [{host, rank,
seconds}], communicators {total, init_complete, pending}, last_collective [{rank, source, pg, seq,
op}], errors [{file, line, kind, message, consequence}], errors_total, unknown_lines {file: n},
unknown_blocks [{kind, blocks, lines}] or null, traffic {ranks, nranks, steps, accumulation, by_op
[{op, calls, data_bytes, sent_bytes}] per rank over the run, text} or null without NCCL COLL lines
(tracekit.traffic), verdict {kind, meaning, summary, ranks, evidence, notes, coverage,
failure_signs, failed, rule, findings, fix, check}; where the logs hold several runs, runs [{run,
files, folder, ranks, world_size, hosts, start_ns, end_ns, timed_by, torchrun_run_id,
restart_count, verdict}] and run_shown.
"""

from __future__ import annotations

import polars as pl

from tracekit import escape, traffic
from tracekit.view import Summary
from tracekit.wording import who

#: where a collective row came from, as the summary says it
SOURCE_NAMES = {"fr": "the Flight Recorder", "nccl": "the NCCL log", "kineto": "the Kineto trace",
                "kineto-gpu": "the Kineto trace's GPU kernels", "deepspeed": "DeepSpeed's comms log"}
#: what each kind of network line of NCCL's says, as the summary words it
NETWORK_WORDS = {"network": "NCCL uses", "bootstrap": "NCCL bootstrap on",
                 "ib_not_found": "NCCL found no InfiniBand device:",
                 "socket_devices": "NCCL socket interface", "ib_devices": "NCCL InfiniBand devices"}
ERROR_WIDTH = 240  # characters of the first error line shown; longer ones end at a word, with "..."


def _clip(text: str, width: int = ERROR_WIDTH) -> str:
    """``text`` whole when it fits, else cut at the last space before ``width`` and marked with "..."."""
    text = " ".join(text.split())
    if len(text) <= width:
        return text
    cut = text[: width - 3]
    return (cut.rsplit(" ", 1)[0] if " " in cut else cut) + " ..."


def render(s: Summary) -> str:
    """The verdict first (its evidence and notes under it), then the summary it comes from: what
    a user reads in ten seconds on top, in a pipe as on a terminal."""
    vd = s.verdict
    out = [f"verdict   {vd.kind.word.upper()}: {vd.summary}"]
    for e in list(dict.fromkeys(str(e) for e in vd.evidence))[:8]:  # a line two rules cite is shown once
        out.append(f"  evidence {e}")
    for n in vd.notes[:3]:
        out.append(f"  note     {n}")
    out.append("")
    out += _files_and_ranks(s) + _setup(s) + _collectives(s) + _problems(s)
    # one line each whatever a file name or a log line holds: a newline or a terminal's escape
    # sequence in them is shown escaped, never acted on (a file named "x\nverdict   HEALTHY")
    return "\n".join(map(escape.line, out))


def _files_and_ranks(s: Summary) -> list[str]:
    # a file several parsers read (torchrun lines and trainer lines in one stdout) is of kind "torch,trainer"
    kinds = ", ".join(f"{n} {(k or 'unknown').replace(',', '+')}" for k, n in s.files_by_kind.items())
    rk, hosts = s.ranks, s.ranks["hosts"]
    out = [f"files     {len(s.files)} ({kinds})"]
    on = f" on {len(hosts)} host(s)" if len(hosts) != rk["nodes"] else ""
    named = f": {', '.join(hosts[:8])}" + (" ..." if len(hosts) > 8 else "") if hosts else ""
    out.append(f"ranks     {rk['count']} seen, world size {rk['world_size'] or '?'}, {rk['nodes']} node(s)"
               + on + named)
    cov = s.verdict.coverage or {}
    if cov:
        by: dict[str, list[int]] = {}
        for rank, srcs in cov["sources"].items():
            by.setdefault(", ".join(srcs), []).append(int(rank))
        first = sorted(by.items(), key=lambda kv: min(kv[1]))[:4]
        out.append(f"coverage  {cov['text']}"
                   + "".join(f"; {who(ranks)} from {srcs}" for srcs, ranks in first))
    return out


def _setup(s: Summary) -> list[str]:
    out = []
    v = "; ".join(f"{k} {', '.join(vs)}" for k, vs in s.versions.items() if vs)
    if v:
        out.append(f"versions  {v}")
    for n in s.network[:6]:
        out.append(f"network   {n['host']}: {NETWORK_WORDS.get(n['what'], n['what'])} {n['value']}")
    for b in s.bootstrap[:1]:
        out.append(f"bootstrap NCCL's bootstrap took {b['seconds']:.1f} s on {b['host']}"
                   + (f" (rank {b['rank']})" if b["rank"] is not None else "")
                   + ": some rank joined late or the network is slow")
    if s.transports:
        out.append("transports " + "; ".join(f"{t['host_pair']} {t['transport']} x{t['n']}"
                                             for t in s.transports[:8]))
    cm = s.communicators
    if cm["total"]:
        out.append(f"comms     {cm['total']} communicator(s), {cm['init_complete']} finished init, "
                   f"{cm['pending']} pending")
    return out


def _collectives(s: Summary) -> list[str]:
    out = []
    if s.traffic is not None:
        for i, line in enumerate(traffic.lines(s.traffic)):
            out.append(f"{'traffic' if i == 0 else '':<10}{line}")
    by: dict[tuple, list[int]] = {}
    for row in s.last_collective:
        by.setdefault((row["source"], row["op"], row["seq"], row["pg"]), []).append(row["rank"])
    for (src, op, seq, pg), ranks in sorted(by.items(), key=lambda kv: min(kv[1]))[:8]:
        out.append(f"last      {who(ranks)}: {op} seq {seq} on pg {pg} (from {SOURCE_NAMES.get(src, src)})")
    return out


def _problems(s: Summary) -> list[str]:
    out = []
    if s.errors_total:
        first = s.errors[0]
        which = "first" if first.get("consequence") else "first cause"
        out.append(f"errors    {s.errors_total} line(s), {which}: {first['file']}:{first['line']}: "
                   f"{_clip(first['message'] or '')}")
    # nothing read of these (tracekit.ingest.unreadable); a file read in part (a truncated .gz) is read
    bad = [x for x in s.files if x["error"] and not (x["lines"] or x["parsed"])]
    for x in bad[:5]:
        out.append(f"unreadable {x['file']}: {x['error']}")
    unk = s.unknown_lines
    if unk:
        counted = s.unknown_blocks or []
        # (said only where some block holds several lines: a JSON dump is one block, not 37 lines)
        blocks = "".join(f", {b['blocks']} {b['kind']}{'s' if b['blocks'] > 1 else ''} ({b['lines']} lines)"
                         for b in counted) if any(b["lines"] > b["blocks"] for b in counted) else ""
        out.append(f"unknown   {sum(unk.values())} line(s) not understood in {len(unk)} file(s){blocks} "
                   "(ingest --unknown lists them)")
    return out


UNKNOWN_PER_FILE, UNKNOWN_FILES = 10, 20  # lines shown of each file, files shown: the rest are counted


def unknown_listing(lines: pl.DataFrame) -> list[dict]:
    """The first UNKNOWN_PER_FILE lines not understood (``file, line, raw``) of the first
    UNKNOWN_FILES files, each as ``{file, line, text}``, and for each file shown, how many of its
    lines were left off (``ingest --unknown --json``)."""
    by_file = lines.group_by("file", maintain_order=True).agg(
        pl.len().alias("n"), pl.col("line", "raw").head(UNKNOWN_PER_FILE))
    return [{"file": f, "total": n,
             "lines": [{"line": ln, "text": (t or "").rstrip("\r")} for ln, t in zip(nums, raws)]}
            for f, n, nums, raws in by_file.head(UNKNOWN_FILES).iter_rows()]


def render_unknown(blocks: pl.DataFrame) -> str:
    """``tracekit ingest --unknown``: the lines no parser understood, from their blocks
    (``view.unknown_blocks``), capped: a block of text a line each (``file:line: text``), a JSON
    dump or a traceback as one line (``file:first-last: a JSON dump of N lines: its first line``)."""
    if not blocks.height:
        return "lines not understood: none"
    out = [f"lines not understood: {blocks['lines'].sum()} in {blocks['file'].n_unique()} file(s); "
           f"the first {UNKNOWN_PER_FILE} of each file, by block:"]
    shown: list[str] = []
    for f, of_file in blocks.group_by("file", maintain_order=True):
        if len(shown) == UNKNOWN_FILES:
            break
        shown.append(f[0])
        out += _file_blocks(f[0], of_file)
    rest = blocks.filter(~pl.col("file").is_in(shown))
    if rest.height:
        out.append(f"  ... and {rest['lines'].sum()} more in {rest['file'].n_unique()} more file(s)")
    return "\n".join(map(escape.line, out))


def _file_blocks(file: str, blocks: pl.DataFrame) -> list[str]:
    """One file's blocks of lines not understood, its first UNKNOWN_PER_FILE lines."""
    out, said, total = [], 0, int(blocks["lines"].sum())
    for b in blocks.iter_rows(named=True):
        if said >= UNKNOWN_PER_FILE:
            break
        if b["kind"] == "text block" or b["lines"] == 1:
            rows = list(zip(range(b["first"], b["last"] + 1), b["raw"]))[: UNKNOWN_PER_FILE - said]
            texts = [(n, (t or "").rstrip("\r")) for n, t in rows]
            out += [f"{file}:{n}: {t if len(t) <= ERROR_WIDTH else _clip(t)}" for n, t in texts]
            said += len(rows)
        else:
            out.append(f"{file}:{b['first']}-{b['last']}: a {b['kind']} of {b['lines']} lines: "
                       f"{_clip((b['raw'][0] or '').strip(), 80)}")
            said += b["lines"]
    if total > said:
        out.append(f"  ... and {total - said} more in {file}")
    return out
