"""Identity, session 16 (issue 31, item 4): what reads as a launcher prefix and is the message's own first word,
and rank and world-size sentences of whole families of logs, each from the code that prints it."""

from __future__ import annotations

from tests.factory import text_store as store_of, ranks_of as ranks, worlds_of as worlds, hosts_of as hosts
from tracekit.parsers.text import lines_frame


def test_a_cann_error_code_at_a_lines_start_is_the_message_not_a_hosts_prefix(tmp_path):
    # torch_npu / CANN print `EJ0001: [PID: ..] ...` (a vLLM-Ascend paste, the worker's own prefix taken off);
    # the code fits `host: ` (a letter, then a digit), and on two lines pdsh's prefix would be assumed
    text = ("EJ0001: [PID: 35532] 2025-08-26-04:05:21.569.071 Failed to initialize the HCCP process. Reason: "
            "Maybe the last training process is running.\n"
            "EJ0001: [PID: 35533] 2025-08-26-04:05:21.569.072 Failed to initialize the HCCP process.\n"
            "E19999: Inner Error!\n"
            "E19999: Inner Error!\n")
    df = lines_frame("npu.log", text)
    assert df["text"].str.starts_with("E").all() and df["pdsh_host"].null_count() == df.height
    assert df["text"][0].startswith("EJ0001: [PID: 35532] ")
    assert hosts(store_of(tmp_path, text)) == []
    # under pdsh's own prefix, the prefix names the host and the code stays the message's
    text = "worker-1: EH9999: Inner Error!\nworker-1: EH9999: wait for compute device to finish failed\n"
    df = lines_frame("pdsh.log", text)
    assert df["text"].to_list()[0] == "EH9999: Inner Error!"
    assert df["pdsh_host"].to_list() == ["worker-1", "worker-1"]
    # a host's prefix of the same letters-then-digits shape stays a prefix
    df = lines_frame("h.log", "node12: hello\nnode12: again\n")
    assert df["pdsh_host"].to_list() == ["node12", "node12"] and df["text"].to_list() == ["hello", "again"]
