"""Where a log shows start-up's wait ended: a connect retried before it was start-up under way, not a stall and not the
network's failure (session 31, issue 31: a set-up or transport verdict where the excerpt shows start-up went on is a
contradiction).

What it reads, per file, from ``store.events``:

- a runtime's own word that its start-up returned (``start_up_messages.RETURNS``, ``Means.RETURNED``: torch's
  ``Rank 1: Completed store-based barrier for key:store_based_barrier_key:1 with 2 nodes.``, fairseq's
  ``initialized host H as rank N``, SGLang's ``Init torch distributed ends.``, Megatron's ``> initialized tensor
  model parallel with size N``), torchelastic's ``Rendezvous complete for workers`` (``ELASTIC_RENDEZVOUS``), and
  what says the run moved past start-up (a step, progress, a collective's bandwidth row, a clean end: ``MOVED``);
- the per-attempt lines of a connect that start-up retries until its deadline (``PER_ATTEMPT``: c10d's store
  client, ``The client socket has failed to connect to [H]:P (errno: 111 - Connection refused).`` and TCPStore's
  ``TCP client failed to connect/validate to host H:P - retrying (try=0, ...)``; NCCL's ``Call to connect returned
  Connection refused, retrying``; Paddle's ``server not ready, wait 3 sec to retry``): the peer or store was not up
  yet (rank 0's store comes up last), and the connect may still succeed.

Such a line with start-up returned after it in its file is start-up under way: ``rules_init.start_up_said`` does not
read it as a wait that never ended, and ``evidence.Evidence.transport`` does not count it as the transport's error.

(s33) ``ran_on``: a per-attempt line after which its file runs on for ``RAN_ON`` lines or more, none of them another
attempt or anything that says a failure, a wait or a stop (only lines no rule weighs: a program's own output, a
version, a setting): the program went on past the wait, so the wait ended. A wait that never ended leaves the
waiting process silent, or ends in its deadline's error; dv36-008 (labelled healthy): Paddle's `server not ready,
wait 3 sec to retry...` twice, then ten lines of the program building its graph, loading its parameters and printing
its accuracy.
"""

from __future__ import annotations

import polars as pl

from tracekit import start_up_messages as sm
from tracekit.schema import EventKind

#: the start-up entries printed once per attempt of a connect that is retried until its deadline
PER_ATTEMPT = ("c10d_store_client_retrying", "c10d_client_connect_refused", "c10d_client_connect_unanswered",
               "nccl_connect_retrying", "nccl_connect_retrying_counted", "paddle_endpoint_not_ready")
ATTEMPT = sm.either(m for m in sm.MESSAGES if m.name in PER_ATTEMPT)
#: what says the run moved past start-up (``rules_nccl_errors.MOVED``'s kinds, and torchelastic's rendezvous)
MOVED = (EventKind.BANDWIDTH, EventKind.COMM_OP, EventKind.STEP, EventKind.PROGRESS, EventKind.TEST_PASSED,
         EventKind.CLEAN_EXIT, EventKind.TRAIN_END, EventKind.PROGRAM_END, EventKind.ELASTIC_RENDEZVOUS)


#: how many lines after a file's last per-attempt line, none of them a failure, say the program went on (``ran_on``)
RAN_ON = 10
#: the events that say nothing of a failure, a wait or a stop: the lines after a wait that ran on may hold only these
#: (a telling line's ``where``: only ``last``, its file's last line, or a warning)
QUIET = (EventKind.VERSION, EventKind.SETTING)
QUIET_TELLING = ("last", "warning")


def ran_on(events: pl.DataFrame, files: pl.DataFrame, rows: pl.DataFrame) -> pl.DataFrame:
    """The rows of ``rows`` (``file``, ``line``, ``message``) that are a per-attempt connect line after whose file's
    last such line ``RAN_ON`` lines or more follow (``files``' ``last_line``), every event among them quiet
    (``QUIET``, or a telling line of ``QUIET_TELLING``)."""
    msg = pl.col("message").fill_null("")
    waits = rows.filter(msg.str.contains(ATTEMPT)) if rows.height else rows
    if not waits.height:
        return waits
    last = events.filter(msg.str.contains(ATTEMPT)).group_by("file").agg(pl.col("line").max().alias("_a"))
    after = events.join(last, on="file").filter(pl.col("line") > pl.col("_a"))
    loud = after.filter(~pl.col("kind").is_in(list(QUIET))
                        & ~((pl.col("kind") == EventKind.TELLING_LINE)
                            & pl.col("where").fill_null("").is_in(list(QUIET_TELLING))))
    ends = files.select("file", "last_line").join(last, on="file").filter(
        pl.col("last_line").is_not_null() & (pl.col("last_line") - pl.col("_a") >= RAN_ON))
    quiet = ends.join(loud.select("file").unique(), on="file", how="anti")
    return waits.join(quiet.select("file"), on="file", how="semi")


def returned_at(events: pl.DataFrame) -> pl.DataFrame:
    """Per file, the last line that shows start-up returned: ``file``, ``_r``."""
    back = events.filter(pl.col("message").fill_null("").str.contains(sm.RETURNS)
                         | pl.col("kind").is_in(list(MOVED)))
    return back.group_by("file").agg(pl.col("line").max().alias("_r"))


def went_past(events: pl.DataFrame, rows: pl.DataFrame, any_wait: bool = False) -> pl.DataFrame:
    """The rows of ``rows`` (``file``, ``line``, ``message``) that are a start-up's per-attempt connect line (any start-up
    wait, with ``any_wait``) and that start-up returned after in their file."""
    if not rows.height:
        return rows
    msg = pl.col("message").fill_null("")
    waits = rows if any_wait else rows.filter(msg.str.contains(ATTEMPT))
    if not waits.height:
        return waits
    return waits.join(returned_at(events), on="file").filter(pl.col("line") < pl.col("_r")).drop("_r")
