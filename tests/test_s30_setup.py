"""Start-up failures read as UNDECIDED or as a crash (session 30, issue 31: "an init failure called a crash" is a
wrong kind, and UNDECIDED only where an expert would not decide):

- ``set_up_rekind.SET_UP_WORDS``: c10d's own ``Socket Timeout`` (a TCPStore socket's send or recv past its timeout,
  the store's wait) raised where nothing shows the job past set-up is INIT_STALL, not a timeout of unknown cause;
  raised after a step it stays what it was;
- ``start_up_c10d`` (split from ``start_up_messages``, with ``start_up_entry``): TCPStore.cpp's own retry line
  (``TCP client failed to connect/validate to host H:P - retrying (try=0, ...): <error>``), which no parser
  decoded, says start-up kept retrying its connect to the store; its error is said;
- ``rules_set_up.PROCESS_FAULT`` and ``set_up_rekind``: a segfault right after a set-up failure its file said
  (gloo's ``connectFullMesh failed``) is that failure's consequence, while a segfault inside ncclCommInitRank with
  no failure before it stays the process's crash (dv18-034);
- ``parsers/start_up``: a connect retried (``start_up_messages.RETRIES``) is start-up under way, a milestone, not a
  stall: a retry then steps is a run that went on;
- ``rules_rendezvous._store_words``: a log head's time (glog's ``E526 03:50:39``) is no store address;
- ``set_up_rekind.failed_in_set_up``: where the crash it re-kinds is only the echo of set-up's failure (vLLM's
  ``Engine core initialization failed. See root cause above.``), the summary quotes set-up's own failure line;
- the split keeps ``start_up_messages.MESSAGES`` whole (names and order).

Lines are real, from dev excerpts (dv18-030, dev-038's and dv2's gloo lines, the dv21/dv10 ``Socket Timeout``), or
as torch prints them (TCPStore.cpp's format, c10d's EADDRINUSE message) with made-up hosts.
"""

from __future__ import annotations

from tests.conftest import ROOT
from tests.factory import text_store
from tracekit import start_up_messages as sm
from tracekit.ingest import ingest
from tracekit.verdict import Kind, decide

WILD = ROOT / "samples" / "wild"

#: dv18-030's TCPStore retry line, verbatim
RETRY = ("[W526 03:50:39.899673126 TCPStore.cpp:340] [c10d] TCP client failed to connect/validate to host "
         "127.0.0.1:51216 - retrying (try=0, timeout=300000ms, delay=87775ms): The client socket has timed out after "
         "300000ms while trying to connect to (127.0.0.1, 51216).")


#: the same line as torch prints it on a connect with no route (TCPStore.cpp's format, the socket's error at its end)
NO_ROUTE = ("[W420 10:11:12.123456 1234 torch/csrc/distributed/c10d/TCPStore.cpp:359] [c10d] TCP client failed to "
            "connect/validate to host 10.0.0.1:29500 - retrying (try=0, timeout=1800000ms, delay=1496ms): The client "
            "socket has failed to connect to 10.0.0.1:29500 (errno: 113 - No route to host).")


def _decide(tmp_path, text: str):
    return decide(text_store(tmp_path, text))


# --- c10d's Socket Timeout ------------------------------------------------------------------------------------------
def test_a_bare_socket_timeout_in_start_up_is_an_init_stall(tmp_path):
    v = _decide(tmp_path, "[rank1]: RuntimeError: Socket Timeout\n")
    assert v.kind is Kind.INIT_STALL and v.rule == "undecided_in_set_up"
    assert "Socket Timeout" in v.summary and v.ranks == [1]


def test_a_socket_timeout_under_init_process_group_is_an_init_stall(tmp_path):
    v = _decide(tmp_path, "Traceback (most recent call last):\n"
                          "  File \"train.py\", line 10, in <module>\n"
                          "    dist.init_process_group(\"nccl\")\n"
                          "torch.distributed.DistStoreError: Socket Timeout\n")
    assert v.kind is Kind.INIT_STALL and "Socket Timeout" in v.summary


def test_a_socket_timeout_after_steps_is_no_init_stall(tmp_path):
    v = _decide(tmp_path, "step 1 loss 2.0\nstep 2 loss 1.9\n"
                          "  File \"/x/train.py\", line 80, in train_step\n"
                          "    batch = next(it)\n"
                          "RuntimeError: Socket Timeout\n")
    assert v.kind is not Kind.INIT_STALL


# --- TCPStore's retry line --------------------------------------------------------------------------------------------
def test_the_tcpstore_retry_line_is_read_as_a_start_up_retry():
    m, groups = sm.read(RETRY)
    assert m.name == "c10d_store_client_retrying" and m.means in sm.DECISIVE
    assert groups["address"] == "127.0.0.1:51216" and groups["attempt"] == "0"
    assert groups["error"].startswith("The client socket has timed out")


def test_tcpstore_retries_alone_are_an_init_stall_that_says_the_store_and_the_error(tmp_path):
    v = _decide(tmp_path, f"{NO_ROUTE}\n{NO_ROUTE.replace('try=0', 'try=1')}\n")
    assert v.kind is Kind.INIT_STALL and v.rule == "start_up_unfinished"
    assert "10.0.0.1:29500" in v.summary and "No route to host" in v.summary
    assert "kept retrying its connect to the c10d store" in v.summary


def test_the_dev_excerpt_with_the_retry_line_stays_an_init_stall():
    v = decide(ingest([WILD / "dv18-030-swift-rlhf-vllm-server-store-timeout.txt"]))
    assert v.kind is Kind.INIT_STALL and "51216" in v.summary


# --- a process's fault after set-up's failure -------------------------------------------------------------------------
GLOO = ("[E108 17:22:04.118509503 ProcessGroupGloo.cpp:143] Gloo connectFullMesh failed with "
        "[../third_party/gloo/gloo/transport/tcp/pair.h:301] Connect timeout [none]\n"
        "Traceback (most recent call last):\n"
        "  File \"main.py\", line 20, in <module>\n"
        "    dist.init_process_group(\"gloo\", rank=rank, world_size=2)\n"
        "RuntimeError: Gloo connectFullMesh failed with [../third_party/gloo/gloo/transport/tcp/pair.h:301] Connect "
        "timeout [none]\n")


def test_a_segfault_after_a_set_up_failure_is_its_consequence(tmp_path):
    v = _decide(tmp_path, GLOO + "Segmentation fault (core dumped)\n")
    assert v.kind is Kind.INIT_STALL and v.rule == "failed_in_set_up"
    assert "connectFullMesh" in v.summary and "consequence" in v.summary


def test_a_segfault_inside_nccl_init_with_no_failure_before_it_stays_a_crash():
    v = decide(ingest([WILD / "dv18-034-sglang-a40-segfault-in-ncclcomminitrank.txt"]))
    assert v.kind is Kind.CRASHED_RANK and "Segmentation fault" in v.summary


def test_a_segfault_after_a_programs_own_error_stays_a_crash(tmp_path):
    v = _decide(tmp_path, "Traceback (most recent call last):\n"
                          "  File \"main.py\", line 20, in <module>\n"
                          "    cfg = load(path)\n"
                          "KeyError: 'model'\n"
                          "Segmentation fault (core dumped)\n")
    assert v.kind is Kind.CRASHED_RANK


# --- the set-up failure said where the crash only echoes it ---------------------------------------------------
def test_an_engine_cores_echo_quotes_set_ups_own_failure(tmp_path):
    head = "(EngineCore_0 pid=2211) ERROR 09-01 10:00:00 [core.py:700] "
    frame = "/usr/local/lib/python3.12/dist-packages/vllm/distributed/parallel_state.py"
    v = _decide(tmp_path, f"{head}EngineCore failed to start.\n"
                          f"{head}Traceback (most recent call last):\n"
                          f"{head}  File \"{frame}\", line 1008, in init_distributed_environment\n"
                          f"{head}    torch.distributed.init_process_group(\n"
                          f"{head}torch.distributed.DistNetworkError: The server socket has failed to listen on any "
                          "local network address. port: 33649, useIpv6: false, code: -98, name: EADDRINUSE, message: "
                          "address already in use\n"
                          "RuntimeError: Engine core initialization failed. See root cause above. Failed core "
                          "proc(s): {}\n")
    assert v.kind is Kind.INIT_STALL
    assert "EADDRINUSE" in v.summary or "address already in use" in v.summary


# --- the split ------------------------------------------------------------------------------------------------------
def test_the_split_keeps_every_entry_in_its_order():
    names = [m.name for m in sm.MESSAGES]
    assert names.index("c10d_store_client_retrying") < names.index("c10d_client_connect_refused")
    assert names[-1] == "c10d_server_listen_failed" and len(names) == len(set(names))
    assert sm.Means.RETRIED in sm.DECISIVE and sm.DECIDES


# --- a retry is start-up under way, not a stall ---------------------------------------------------------------------
def test_a_retry_then_steps_is_a_run_that_went_on(tmp_path):
    # (dv27-001's Paddle line, verbatim, then steps: the connect succeeded; it was read as a stall before)
    steps = "step 1 loss 2.0\nstep 2 loss 1.9\nstep 3 loss 1.8\n"
    v = _decide(tmp_path, "server not ready, wait 3 sec to retry...\n" + steps)
    assert v.kind is Kind.HEALTHY
    v = _decide(tmp_path, f"{NO_ROUTE}\n{steps}")
    assert v.kind is Kind.HEALTHY


def test_the_store_address_is_never_a_log_heads_time():
    v = decide(ingest([WILD / "dv18-030-swift-rlhf-vllm-server-store-timeout.txt"]))
    assert "store is at 127.0.0.1:51216" in v.summary and "03:50" not in v.summary.split("store is at")[1][:12]
