"""One verdict on what kind of stall a run is in, fused from every source, with its evidence.

``decide`` computes the evidence once (``tracekit.evidence``), walks the ordered rules
(``tracekit.rules``: the order is the order of causation) and says how much of the job the
evidence covers. A verdict never claims more than that: HEALTHY needs positive evidence from every
rank, and a rank that left no record is said to have left none. The types live in ``tracekit.outcome``.
"""

from __future__ import annotations

from tracekit import fixes, rules, rules_progress, rules_salient, set_up_rekind, situation
from tracekit.evidence import Evidence, clip
# (Kind, Match and FAILED are imported from here by live, cli and the tests)
from tracekit.outcome import FAILED, Cited, Kind, Match, Verdict  # noqa: F401
from tracekit.store import Store


def decide(store: Store) -> Verdict:
    ev = Evidence.gather(store)
    name, v = rules.first(ev)
    if v.kind is Kind.HEALTHY:
        # HEALTHY reads progress; a failure's words after the last of it say the run did not go on (a
        # start-up's, a transport's error after hours of steps): the rules that read such words decide,
        # else UNDECIDED, never HEALTHY over them
        late = rules_progress.failed_after_progress(ev)
        if late.height:
            said = rules_salient.said_by_telling_lines(ev)
            name, v = (("said_by_telling_lines", said) if said is not None
                       else ("failure_after_progress", rules_progress.failure_after_progress(ev, late)))
    # the phase says the kind: a rank that failed in communicator set-up left a set-up that never completed
    in_set_up = set_up_rekind.failed_in_set_up(ev, v)
    if in_set_up is not None:
        name, v = "failed_in_set_up", in_set_up
    # (and an UNDECIDED whose failure line names set-up, where the job never got past it: s26, issue 31)
    elif (stopped := set_up_rekind.undecided_in_set_up(ev, v, name)) is not None:
        name, v = "undecided_in_set_up", stopped
    cov = ev.coverage
    told = rules_salient.first_telling(ev)
    if v.kind is Kind.UNDECIDED and told is not None and not any(
            (e.file, e.line) == (told["file"], told["line"]) for e in v.evidence):
        # UNDECIDED from any rule quotes the telling line no parser decodes (undecided.undecided does its own)
        v.summary += f"; {rules_salient.quote(told)}: not a line tracekit decodes"
        v.evidence.append(Cited(told["file"], told["line"], clip(told["message"])))
    where = situation.brief(store, ev)
    if where:
        v.summary += f" | where each rank is: {where}"
    seen = situation.in_view(ev, v.summary)  # (the failure lines' facts the summary does not say yet)
    if seen:
        v.summary += f" | in view: {seen}"
    if not cov.complete and cov.describe() not in v.summary:
        v.summary += f" ({cov.describe()})"
    v.evidence = list(dict.fromkeys(v.evidence))  # each line once
    if (ev.finished or ev.moving) and v.kind not in FAILED:
        for f in ev.findings:
            f.snapshot = f.kind in (Match.MISSING, Match.RANK_ABSENT)
    v.findings, v.rule = ev.findings, name
    v.notes = v.notes + [n for n in rules.notes(ev) if n not in v.notes]
    v.coverage, v.failure_signs = cov.to_dict(), ev.failure_signs
    said = " ".join([v.summary, *v.evidence])
    # (a failure in set-up is fixed as its cause is: the crash's row first)
    fix = ((fixes.for_verdict(Kind.CRASHED_RANK, said) if in_set_up is not None else None)
           or fixes.for_verdict(v.kind, said))
    if fix is not None:
        v.fix, v.check = fix.fix, fix.check
        v.notes.append(f"fix: {fix.fix}; check it took: {fix.check}")
    return v
