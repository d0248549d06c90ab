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
