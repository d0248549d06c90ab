"""An inference server's own word that it starts and serves (split from parsers/trainer.py, which calls
``events``; issue 31).

Written from the code that prints it:

- SGLang's model runner (python/sglang/srt/model_executor/model_runner.py): ``Init torch distributed ends.
  mem usage=1.77 GB`` (every TP/PP rank, once its process groups exist), ``Load weight begin. avail
  mem=...``, ``Load weight end. ...``, ``Memory pool end. ...``, ``Capture cuda graph begin/end. ...``;
  its HTTP server (entrypoints/http_server.py) ``The server is fired up and ready to roll!`` once its
  warm-up request returned;
- SGLang's scheduler (managers/scheduler_metrics_mixin.py): ``Prefill batch. #new-seq: 2, #new-token: 2,
  #cached-token: 8027, token usage: 0.26, #running-req: 28, #queue-req: 0`` (newer: ``Prefill batch,``);
  its ``Decode batch`` lines carry a throughput and are read by parsers/series.py;
- uvicorn (vLLM's and SGLang's API servers; uvicorn/logging.py's access formatter): ``INFO:
  127.0.0.1:20504 - "POST /v1/completions HTTP/1.1" 200 OK``, and ``Application startup complete.``.

A ``served`` event per request line (``where="request"``; a 5xx status ``where="request_failed"``, a probe
of its liveness or metrics ``where="probe"``: answered while the engine behind it hangs) and per
batch line (``where="batch"``); a ``server_up`` event per milestone (``where`` its phase: ``dist_init``,
``load_weights``, ``memory_pool``, ``cuda_graph``, ``ready``).
"""

from __future__ import annotations

import polars as pl

from tracekit.schema import EventKind

#: an HTTP access line: the request and its status
HTTP_ACCESS = r"\"(?:GET|POST|PUT|DELETE|PATCH|HEAD) /\S* HTTP/[\d.]+\" (\d{3})\b"
#: a request that asks whether the server is up, not for work (a liveness or metrics probe, a model list):
#: it is answered while the engine behind it hangs
HTTP_PROBE = r"\"(?:GET|HEAD) /(?:metrics|health\w*|ping|v1/models|get_model_info|get_server_info|version)\b"
#: SGLang's scheduler scheduling a prefill batch
PREFILL_BATCH = r"\bPrefill batch[.,] #new-seq: \d+, #new-token: \d+"
#: start-up milestones, by phase
SERVER_MILESTONES = {
    "dist_init": r"\bInit torch distributed ends\b",
    "load_weights": r"\bLoad weight (?:begin|end)\b",
    "memory_pool": r"\bMemory pool end\b",
    "cuda_graph": r"\bCapture cuda graph (?:begin|end)\b",
    "ready": r"\bThe server is fired up and ready to roll!|\bApplication startup complete\.",
}
#: every line this module reads
SERVING = "|".join([HTTP_ACCESS, PREFILL_BATCH, *SERVER_MILESTONES.values()])


def events(df: pl.DataFrame) -> pl.DataFrame | None:
    """The serving lines of ``df`` (``file``, ``line``, ``text``, ``ts``, ``rank``) as events, else None."""
    t = pl.col("text")
    got = df.filter(t.str.contains(SERVING))
    if not got.height:
        return None
    phase = pl.coalesce(*(pl.when(t.str.contains(p)).then(pl.lit(k)) for k, p in SERVER_MILESTONES.items()))
    status = t.str.extract(HTTP_ACCESS, 1).cast(pl.Int64, strict=False)
    where = (pl.when(status >= 500).then(pl.lit("request_failed")).when(t.str.contains(HTTP_PROBE))
             .then(pl.lit("probe")).when(status.is_not_null()).then(pl.lit("request"))
             .when(t.str.contains(PREFILL_BATCH)).then(pl.lit("batch")).otherwise(phase))
    kind = pl.when(phase.is_not_null() & status.is_null()).then(pl.lit(EventKind.SERVER_UP)).otherwise(
        pl.lit(EventKind.SERVED))
    told = [c for c in ("ts", "rank") if c in got.columns]
    return got.select("file", "line", "text", *told, kind.alias("kind"), t.str.strip_chars().alias("message"),
                      where.alias("where"))
