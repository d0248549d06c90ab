"""Evidence.pace reads a throughput wherever the step line prints it: after its unit or before it."""

from tests.factory import make_store
from tracekit.evidence import Evidence


def pace(messages):
    return Evidence.gather(make_store(events=[
        dict(kind="step", message=m, rank=0, line=i, file="rank0.log", step=i)
        for i, m in enumerate(messages, 1)
    ])).pace


def test_a_rate_before_its_unit_is_the_throughput():
    p = pace([f"iteration {i} | loss 2.1 | 875.63 samples/sec" for i in range(4)])
    assert p["rate"] == 875.63 and p["falling"] is None


def test_a_rate_after_its_unit_still_reads():
    assert pace([f"step {i} samples/sec: 1,204.5" for i in range(3)])["rate"] == 1204.5


def test_a_tqdm_rate_that_ends_at_its_lowest_is_falling():
    p = pace(["10/100 [00:02<00:20, 4.51it/s]", "20/100 [00:04<00:18, 4.49it/s]",
              "30/100 [00:09<00:30, 1.20it/s]"])
    assert p["rate"] == 4.49 and "fell from 4.51 to 1.2" in p["falling"][0]
