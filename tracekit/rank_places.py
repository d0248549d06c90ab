"""Where a rank is, in a writer's own short words (issue 31, fail31): `Rank 0 is stuck at dist.barrier()`,
`rank 1 is waiting in all_reduce`, `[rank2] hangs in broadcast`, `Rank 3: still in evaluate()`, the per-rank
lines a user prints or writes up from py-spy while a job hangs. ``parsers/salient`` reads such a line wherever
it stands (a launcher's parser claims `Rank N ...` by its head and decodes nothing of the rest) as a telling
line of class ``wait``; ``places`` takes each rank's place out of those lines; ``rules_places`` weighs them:
ranks waiting in a collective while another rank is somewhere else is the label standard's deadlock (a rank
never issues the collective the others wait in).

A place is the word after the wait (`barrier`, `all_reduce`, `save_checkpoint`, `forward`); a collective's
place (``COLLECTIVE``) is one where ranks wait for each other; any other is where a rank is busy on its own.
"""

from __future__ import annotations

import polars as pl

#: a rank's own word of where it is: `rank N` (`Rank 0`, `[rank2]`, `rank: 3`), a verb of waiting or being
#: (`is stuck at`, `is waiting in`, `hangs in`, `still in`, `blocked on`), then the place (a call, a dotted
#: name, a word)
PLACE = (r"(?i)\brank\s*[:#]?\s*(?P<rank>\d{1,5})\]?\s*:?\s+"
         r"(?:(?:(?:is|was|gets?|keeps?|seems\s+to\s+be)\s+)?(?:still\s+|now\s+|forever\s+)?"
         r"(?P<state>waiting|waits|stuck|hangs?|hanging|hung|blocked|blocks|spinning)"
         # (a bare `in` or `at` only after `is`, `was` or `still`: `as rank 0 in a world of size 2` is no place)
         r"|(?:(?:is|was)\s+(?:still\s+|now\s+)?|still\s+)(?P<state2>in|inside|at))\b"
         r"(?:\s+(?:in|at|on|inside|within|for|forever in))?\s+(?:the\s+)?"
         r"`?(?P<place>[A-Za-z_][\w.]*(?:\(\))?)")
#: a place where ranks wait for each other: a collective, a barrier, a point-to-point transfer
COLLECTIVE = (r"(?i)all_?reduce|all_?gather|reduce_?scatter|broadcast|barrier|all_?to_?all|\bsend\b|\brecv\b"
              r"|\bisend\b|\birecv\b|\bcollective|\bnccl|\bgather\b|\bscatter\b|\breduce\b")
#: the words of waiting (a bare `in` or `at` says where a rank is, not that it waits)
WAITING = r"(?i)^(?:waiting|waits|stuck|hangs?|hanging|hung|blocked|blocks|spinning)$"
#: a place that is no place: a peer (`waiting for rank 1`), the other ranks, a time, a word of grammar
NOT_PLACE = (r"(?i)^(?:rank|ranks|other|others|all|the|a|an|this|that|it|here|there|forever|some|world|group|size"
             r"|step|epoch|iteration|total|\d.*)$")


def places(told: pl.DataFrame) -> pl.DataFrame:
    """``rank, state, place, collective, line, message`` of each rank's last place said in ``told`` (telling
    lines: ``file, line, message``), a line naming several ranks read for each; empty where none."""
    m = (told.select("file", "line", "message", pl.col("message").str.extract_all(PLACE).alias("_m"))
         .explode("_m").drop_nulls("_m")
         .with_columns(pl.col("_m").str.extract_groups(PLACE).alias("_g")).unnest("_g"))
    if not m.height:
        return pl.DataFrame(schema={"file": pl.Utf8, "line": pl.Int64, "message": pl.Utf8, "rank": pl.Int64,
                                    "state": pl.Utf8, "place": pl.Utf8, "collective": pl.Boolean})
    bare = pl.col("place").str.replace(r"\(\)$", "").str.replace(r"^(?:torch\.)?(?:distributed|dist)\.", "")
    return (m.filter(~pl.col("place").str.contains(NOT_PLACE))
            .with_columns(pl.col("rank").cast(pl.Int64), bare.alias("place"),
                          pl.coalesce("state", "state2").alias("state"),
                          pl.col("place").str.contains(COLLECTIVE).alias("collective"))
            .sort("file", "line").group_by("rank", maintain_order=True).last()
            .select("file", "line", "message", "rank", "state", "place", "collective"))
