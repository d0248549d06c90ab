"""Wrapper prefixes (issue 31): each taken off the line under it, and the rank it names kept only
where the wrapper's template says the number is a rank. Lines follow the templates of the code that
prints them: torchelastic's TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE (torch/distributed/elastic/agent/
server/local_elastic_agent.py; default `[${role_name}${local_rank}]:`), torchx and NeMo-Run's replica
labels, Ray's actor prefix, kubectl, docker compose, journald, Go's log, Open MPI's --timestamp-output,
Slurm's srun --label, pytest's failure lines."""

from __future__ import annotations

import polars as pl
import pytest

from tracekit.parsers import text

NCCL = ("gpu7:4242:4300 [3] NCCL INFO comm 0xa rank 3 nranks 8 cudaDev 3 busId 1000 commId 0xabc"
        " - Init COMPLETE")
WATCHDOG = ("[E1202 12:00:00.123 4242 ProcessGroupNCCL.cpp:607] [Rank 1] Watchdog caught collective "
            "operation timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE, NumelIn=8, NumelOut=8, "
            "Timeout(ms)=600000) ran for 600010 milliseconds before timing out.")


# (prefix, the global rank it names, the local rank it names)
PREFIXES = [
    ("[rank5]:", 5, None),
    ("[default3]:", None, 3),  # torchelastic's default template: role `default`, the local rank
    ("[trainer3]:", None, 3),  # the same with --role trainer
    ("[3]:", None, 3),  # an empty role (torchx's dist.ddp)
    ("[trainer6|2]:", 6, 2),  # a template `[${role_name}${rank}|${local_rank}]:`
    ("trainer/0 [1]:", None, 1),  # `torchx log`: replica, then the worker's tag
    ("B-nemo-ft3/0 [default1]:[rank1]:", 1, 1),  # NeMo-Run
    ("(CommandActor pid=369, ip=10.131.6.134) [0]:", None, 0),  # torchx on Ray
    ("(RayTrainWorker pid=615, ip=10.0.0.6) ", None, None),
    ("(pid=615) ", None, None),
    ("(raylet, ip=10.0.0.6) ", None, None),
    ("(worker1, rank=1, pid=2462, ip=172.31.85.1) ", None, None),  # SkyPilot: the node's rank, no process's
    ("(en-hi-spot, pid=0) ", None, None),  # SkyPilot's cluster name
    ("[0]<stderr>:", 0, None),  # horovodrun's gloo launcher
    (">         [1,2]<stdout>:", 2, None),  # a quoted, indented paste of mpirun's output
    ("[rank: 1] ", 1, None),  # Lightning's rank_prefixed_message
    ("[pod/job-worker-3/pytorch] ", None, None),  # kubectl logs --prefix: a pod's index is no rank
    ("trainer-1  | ", None, None),  # docker compose
    ("2024-01-01T00:00:00.123456789Z ", None, None),  # GitHub Actions, kubectl --timestamps
    ("Dec 04 20:11:13 gpu-node7 python[4242]: ", None, None),  # journald / syslog
    ("2023/10/26 09:19:04 ", None, None),  # Go's log
    ("Mon Dec  4 20:11:13 2023[1,3]<stdout>:", 3, None),  # mpirun --timestamp-output --tag-output
    ("12: ", None, None),  # srun --label: a task, a rank only where each task is one
    ("P1 12: ", None, None),  # srun --label of a heterogeneous job
]


@pytest.mark.parametrize("prefix, rank, local", PREFIXES)
@pytest.mark.parametrize("line", [NCCL, WATCHDOG, "Traceback (most recent call last):"])
def test_each_prefix_is_taken_off_and_its_rank_kept_or_not(prefix, rank, local, line):
    df = text.lines_frame("x", prefix + line + "\n")
    assert df["text"][0] == line
    assert df["launch_rank"][0] == rank
    assert df["local_tag"][0] == local


def test_a_collectors_stamps_and_hosts_are_kept():
    df = text.lines_frame("x", "2024-01-01T00:00:00.123456789Z " + NCCL + "\n"
                          "Dec 04 20:11:13 gpu-node7 python[4242]: " + NCCL + "\n"
                          "Dec 04 20:11:14 gpu-node7 python[4242]: " + NCCL + "\n")
    assert df["ts"][0] == "2024-01-01T00:00:00.123456789"
    assert df["pdsh_host"].to_list() == [None, "gpu-node7", "gpu-node7"]


def test_a_recurring_unknown_prefix_is_learned_and_names_no_rank():
    log = "".join(f"job-{n}.cluster | node{n % 3} >>> {line}\n" for n, line in enumerate(
        [NCCL, "Traceback (most recent call last):", '  File "train.py", line 3, in <module>', "    main()",
         "RuntimeError: NCCL error in: ProcessGroupNCCL.cpp:1, unhandled system error"]))
    df = text.lines_frame("x", log)
    assert df["text"].to_list() == [
        NCCL, "Traceback (most recent call last):", '  File "train.py", line 3, in <module>', "    main()",
        "RuntimeError: NCCL error in: ProcessGroupNCCL.cpp:1, unhandled system error"]
    assert df["launch_rank"].null_count() == df.height and df["local_tag"].null_count() == df.height


def test_pytest_failure_lines_keep_their_indentation():
    # pytest's repr of a failure: `E` and the source's indentation before each line of the exception
    log = ("E       torch.multiprocessing.spawn.ProcessRaisedException:\n"
           "E       \n"
           "E       -- Process 3 terminated with the following error:\n"
           "E       Traceback (most recent call last):\n"
           'E         File "/x/spawn.py", line 59, in _wrap\n'
           "E           fn(i, *args)\n"
           "E       RuntimeError: NCCL error in: ProcessGroupNCCL.cpp:957, unhandled system error\n")
    df = text.lines_frame("x", log)
    assert df["text"].to_list()[3:6] == [
        "Traceback (most recent call last):", '  File "/x/spawn.py", line 59, in _wrap', "    fn(i, *args)"]
    assert df["blank"].to_list()[1]


def test_a_prefix_on_a_few_lines_is_not_learned():
    # one line's own words before a traceback are no prefix of the file
    log = "while saving: Traceback (most recent call last):\n" + NCCL + "\n" + NCCL + "\n"
    assert text.lines_frame("x", log)["text"][0].startswith("while saving: ")


def test_a_message_that_starts_like_a_host_is_left_alone():
    # the lead before a header ends at a word's edge: no letter of the host is taken for a prefix
    df = text.lines_frame("x", "\n".join([NCCL] * 3) + "\n")
    assert df["text"].to_list() == [NCCL] * 3
    assert df.filter(pl.col("launch_rank").is_not_null()).height == 0


def test_a_line_that_starts_with_a_known_head_keeps_its_start():
    # two damaged NCCL heads (`vm:10:7:1037 [0] NCCL`, read as a lead `vm:` before a head) teach a
    # prefix `vm:`; the intact lines of the same host start with a head already: nothing is taken off them
    good = NCCL.replace("gpu7", "vm")
    bad = good.replace("vm:4242:4300", "vm:10:7:4300")
    df = text.lines_frame("x", "\n".join([good, bad, good, bad, good]) + "\n")
    assert df["text"].to_list()[0::2] == [good] * 3


def test_childfailederrors_numbered_failures_are_no_workers_tags():
    log = "Failures:\n[1]:\n  time      : 2024-02-22_22:55:00\n  rank      : 1 (local_rank: 1)\n[3]: hello\n"
    assert text.lines_frame("x", log)["local_tag"].to_list() == [None, None, None, None, 3]


@pytest.mark.parametrize("prefix, rank", [
    ("(VllmWorker rank=1 pid=4242) INFO 08-03 13:35:33 [multiproc_executor.py:912] ", 1),  # vLLM's workers
    ("(Worker pid=213) ERROR 08-03 13:35:33 [multiproc_executor.py:912] ", None),
    ("INFO 07-22 07:59:45 logger.py:150] ", None),  # vLLM before its brackets
    ("2021-09-30 17:34:05,265 WARNING [train.py:546] (3/7) ", 3),  # icefall's logger: rank / world size
])
def test_a_loggers_header_after_a_workers_tag(prefix, rank):
    df = text.lines_frame("x", prefix + "Traceback (most recent call last):\n")
    assert df["text"][0] == "Traceback (most recent call last):"
    assert df["launch_rank"][0] == rank


def test_hugging_faces_logger_header_is_taken_off_its_level_kept():
    line = "[INFO|trainer.py:1605] 2022-07-26 19:15:43,851 >> ***** Running training *****\n"
    df = text.lines_frame("x", line)
    assert df.select("text", "log_level").row(0) == ("***** Running training *****", "INFO")


def test_a_viewers_line_numbers_on_lines_of_their_own_are_no_text():
    # a copy from a code viewer: each line's number on a line of its own before it
    log = "".join(f"{n}\npytorch [I debug.cpp:49] [c10d] The debug level is set to INFO.\n" for n in range(24, 28))
    df = text.lines_frame("x", log)
    assert df.filter(pl.col("blank"))["line"].to_list() == [1, 3, 5, 7]
    # numbers that do not count up are a program's output
    df = text.lines_frame("x", "8\n3\n5\n")
    assert not df["blank"].any()


def test_nccls_device_field_is_no_rank_where_a_paste_cut_its_host():
    df = text.lines_frame("x", "[3] include/shm.h:28 NCCL WARN Call to posix_fallocate failed\n"
                               "[3] NCCL INFO include/shm.h:41 -> 2\n[3] loss 0.5\n")
    assert df["launch_rank"].to_list() == [None, None, 3]


@pytest.mark.parametrize("header, level", [
    ("[NeMo I 2024-01-01 00:00:00 nemo_logging:349] ", "I"),  # nemo/utils/formatters/base.py
    ("[NeMo E 2024-01-01 00:00:00 exp_manager:910] ", "E"),
    ("[INFO     | pytorch_lightning.utilities.rank_zero]: ", "INFO"),  # NeMo 2's padded header
])
def test_nemos_logger_headers_are_taken_off_their_level_kept(header, level):
    df = text.lines_frames([text.raw("x.log", header + WATCHDOG)])
    assert df.select("text", "log_level").row(0) == (WATCHDOG, level)
