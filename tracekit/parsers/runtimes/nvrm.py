"""The NVIDIA kernel driver's own lines (``dmesg``, ``/var/log/kern.log``, ``journalctl -k``) about a GPU that
failed under the job: ``NVRM: Xid (PCI:0000:1b:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off
the bus.`` (drivers 470+; older ones ``pid=12345, ...``), with the syslog head ``Dec  7 06:00:00 node4
kernel: [86400.12] `` or dmesg's ``[Mon Dec  7 06:00:00 2026] ``.

An Xid is the driver's error number (NVIDIA's "XID Errors" catalogue, docs.nvidia.com/deploy/xid-errors).
The ones that end the GPU's work for the process on it (``FATAL``) are a ``crash`` event of that process (its
pid where the line names one, the node from the syslog head): the device failed, the rank on it with it,
and the others' timeouts follow. Xid 74 (an NVLink error) is a ``transport_error``: the link between two GPUs
failed. The others (45: the driver's cleanup of the channels after an earlier error; 63: a page retired,
informational; the driver's follow-up lines) are claimed as known and make no event.
"""

from __future__ import annotations

import polars as pl

from tracekit.parsers import Parsed
from tracekit.schema import EventKind

XID = (r"NVRM: Xid \((?:PCI:)?(?P<bus>[0-9a-fA-F:.]+)\): (?P<xid>\d+),\s*(?:pid=(?:'?(?P<pid>\d+)'?|'?<unknown>'?),"
       r"\s*)?(?:name=(?:(?P<name>[^,]+)|<unknown>),\s*)?(?P<said>.*)$")
HOST = r"^(?:\w{3}\s+\d+ \d\d:\d\d:\d\d|\d{4}-\d\d-\d\dT[\d:.+\-]+) (?P<host>[\w.\-]+) kernel: "
KNOWN = r"NVRM: (?:GPU (?:at PCI:)?[0-9a-fA-F:.]+: |A GPU crash dump has been created|Xid \()"
#: Xid -> what it means, for the Xids that end the GPU's work for the process on it
FATAL = {
    13: "a graphics engine exception (the program's kernel faulted: an illegal memory access, an assert)",
    31: "a GPU memory page fault (the program's kernel read or wrote an address it does not own)",
    43: "the GPU stopped processing the program's work (a fault in its kernel)",
    48: "an uncorrectable double-bit ECC error in the GPU's memory (a hardware fault)",
    61: "an internal micro-controller breakpoint (a driver or firmware fault)",
    62: "an internal micro-controller halt (a driver or firmware fault)",
    64: "an ECC page retirement or row remapping that failed (a memory hardware fault)",
    79: "the GPU has fallen off the bus (it is gone from the PCIe bus: power, thermal or hardware)",
    94: "a contained ECC error (the process using the memory was stopped)",
    95: "an uncontained ECC error (every process on the GPU was stopped)",
    119: "the GPU's System Processor (GSP) timed out (a firmware hang)",
    120: "the GPU's System Processor (GSP) failed",
    140: "an unrecovered ECC error",
}
NVLINK = {74: "an NVLink error (the link between this GPU and a peer GPU or NVSwitch failed)"}
CHECK = ("drain the node and check the GPU (`nvidia-smi -q -d ECC,ROW_REMAPPER`, `nvidia-smi -q | grep -i xid`, "
         "the node's dmesg); a program's fault (13, 31, 43) is its own CUDA error, which its log says")


def parse(lines: pl.DataFrame) -> Parsed:
    if not lines.height:
        return Parsed("nvrm")
    t = pl.col("text")
    df = lines.filter(t.str.contains("NVRM: ", literal=True)).select("file", "line", "text")
    if not df.height:
        return Parsed("nvrm")
    known = df.filter(t.str.contains(KNOWN))
    g = t.str.extract_groups(XID).struct
    xid = df.filter(t.str.contains(XID)).with_columns(
        g.field("xid").cast(pl.Int64).alias("_xid"), g.field("bus").alias("_bus"),
        g.field("pid").cast(pl.Int64, strict=False).alias("pid"), g.field("said").str.strip_chars().alias("_said"),
        t.str.extract(HOST, 1).alias("host"))
    means = {**FATAL, **NVLINK}
    xid = xid.filter(pl.col("_xid").is_in(list(means))).with_columns(
        pl.col("_xid").replace_strict(means, default="", return_dtype=pl.Utf8).alias("_means"))
    events = xid.select(
        "file", "line", "pid", "host",
        pl.when(pl.col("_xid").is_in(list(NVLINK))).then(pl.lit(EventKind.TRANSPORT_ERROR))
        .otherwise(pl.lit(EventKind.CRASH)).alias("kind"),
        pl.format("the GPU at PCI {} failed: Xid {}: {} (the driver's words: {}){}: " + CHECK, "_bus", "_xid",
                  "_means", "_said", pl.when(pl.col("pid").is_not_null())
                  .then(pl.format(", under pid {}", "pid")).otherwise(pl.lit(""))).alias("message"),
        pl.lit("nvidia driver (Xid)").alias("where"))
    ranks = events.filter(pl.col("host").is_not_null()).select("file", "host", "pid").unique(maintain_order=True)
    return Parsed("nvrm", {"events": events, "ranks": ranks}, known.select("file", "line"))
