"""How ranks are written in every message, without polars: `tracekit run` (which loads no analysis
module) and the analysis alike."""


def who(ranks: list[int]) -> str:
    """``[3]`` -> ``rank 3``; ``[1, 2, 3]`` -> ``ranks 1-3``."""
    return f"rank {fmt_ranks(ranks)}" if len(set(ranks)) == 1 else f"ranks {fmt_ranks(ranks)}"


def fmt_ranks(ranks: list[int]) -> str:
    """``[0, 1, 2, 5]`` -> ``0-2,5``."""
    ranks = sorted(set(ranks))
    out, i = [], 0
    while i < len(ranks):
        j = i
        while j + 1 < len(ranks) and ranks[j + 1] == ranks[j] + 1:
            j += 1
        out.append(str(ranks[i]) if i == j else f"{ranks[i]}-{ranks[j]}")
        i = j + 1
    return ",".join(out)


def duration(s: float) -> str:
    """``2 h 2 min``, ``2 min 3 s``, ``4.6 s``: a duration in the units a person reads."""
    whole = round(s)
    if whole >= 3600:
        return f"{whole // 3600} h {whole % 3600 // 60} min"
    if whole >= 120:
        return f"{whole // 60} min {whole % 60} s"
    return f"{s:.1f} s"
