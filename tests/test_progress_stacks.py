"""Stacks as people paste them (issue 31): a py-spy dump under a header naming its rank, gdb's
`thread apply all bt`, and what each stack says its thread does (a checkpoint save, a barrier, the data
loader, a collective)."""

from __future__ import annotations

from pathlib import Path

from tracekit.ingest import ingest
from tracekit.parsers import pyspy, text
from tracekit.verdict import Kind, decide

# py-spy's dump (py-spy src/dump.rs: `Thread 0x... (idle): "MainThread"`, frames `func (file:line)`)
PYSPY = ('Thread 0x7FA6E7C01740 (idle): "MainThread"\n    wait (threading.py:302)\n    get (queue.py:170)\n'
         "    __next__ (fairseq/data/iterators.py:648)\n    train (fairseq_cli/train.py:274)\n")
# py-spy of a rank waiting in a collective
PYSPY_C10D = ('Thread 0x7F00AA001740 (active): "MainThread"\n    all_reduce (torch/distributed/distributed_c10d.py:2050)\n'
              "    wrapper (torch/distributed/c10d_logger.py:75)\n    train (train.py:90)\n")
# gdb (gdb/thread.c thread_apply_all_command; stack.c print_frame_info)
GDB = ("Thread 55 (Thread 0x7f0085cb9700 (LWP 69796)):\n"
       "#0 pthread_cond_wait@@GLIBC_2.3.2 () at ../nptl/sysdeps/unix/sysv/linux/x86_64/pthread_cond_wait.S:185\n"
       "#1 0x00007f008a16b1eb in ?? () from /opt/nccl/lib/libnccl.so.2\n"
       "#2 0x00007f008a19fabe in ncclAllReduce () from /opt/nccl/lib/libnccl.so.2\n")


def verdict_of(tmp_path: Path, text: str, name: str = "stacks.txt"):
    p = tmp_path / name
    p.write_text(text)
    store = ingest([p])
    return store, decide(store)


def test_a_header_naming_the_rank_gives_the_dump_its_rank(tmp_path):
    store, v = verdict_of(tmp_path, "It always hangs at the same place.\n\nThe stack for rank0:\n```\n" + PYSPY + "```\n")
    st = store.events.filter(store.events["kind"] == "stack")
    assert st["rank"].to_list() == [0] and store.ranks["rank"].to_list() == [0]
    assert v.kind == Kind.UNDECIDED and v.ranks == [0]
    assert ("rank 0 is in __next__ (fairseq/data/iterators.py:648) (its data loader, outside any collective: get "
            "(queue.py:170))") in v.summary


def test_a_header_far_above_the_dump_names_no_rank():
    near = pyspy.parse(text.lines_frame("a.txt", "Rank 3 was slow:\n\n" + PYSPY)).tables["events"]
    far = pyspy.parse(text.lines_frame("a.txt", "Rank 3 was slow:\nsome\nmore\nprose\n" + PYSPY)).tables["events"]
    assert near["rank"].to_list() == [3] and far["rank"].to_list() == [None]


def test_each_header_names_its_own_dump(tmp_path):
    text = "rank 1:\n" + PYSPY_C10D + "\nrank 3:\n" + PYSPY
    store, v = verdict_of(tmp_path, text)
    st = store.events.filter(store.events["kind"] == "stack").sort("line")
    assert st["rank"].to_list() == [1, 3]
    # one rank in a collective, the other outside any: the one outside holds the others
    assert v.kind == Kind.DEADLOCK and v.ranks == [3] and "iterators.py" in v.summary


def test_gdb_threads_are_stacks_and_say_the_nccl_call(tmp_path):
    store, v = verdict_of(tmp_path, GDB)
    st = store.events.filter(store.events["kind"] == "stack")
    assert st["where"].to_list() == ["ncclAllReduce (libnccl.so.2)"]
    assert v.kind == Kind.UNDECIDED and "ncclAllReduce (libnccl.so.2) (a collective)" in v.summary
    assert store.files["unknown"].sum() == 0


def test_every_rank_in_the_checkpoint_save_says_so(tmp_path):
    save = ('Thread 0x7F01 (idle): "MainThread"\n    barrier (torch/distributed/distributed_c10d.py:4159)\n'
            "    barrier (lightning/pytorch/strategies/ddp.py:290)\n"
            "    save_checkpoint (lightning/pytorch/trainer/trainer.py:1384)\n    fit (train.py:20)\n")
    text = "".join(f"# tracekit stack dump rank={r}\n" + save for r in (0, 1))
    _, v = verdict_of(tmp_path, text)
    assert v.kind == Kind.UNDECIDED and "every one of the 2 is in saving a checkpoint" in v.summary
    assert "never reaches the same call" in v.summary


# Python's traceback (Lib/traceback.py StackSummary.format: `  File "x", line N, in f` and the code under it)
INTERRUPTED = ('Traceback (most recent call last):\n  File "train.py", line 90, in <module>\n    main()\n'
               '  File "train.py", line 60, in main\n    batch = next(it)\n'
               '  File "/usr/lib/python3.10/site-packages/torch/utils/data/dataloader.py", line 631, in __next__\n'
               "    data = self._next_data()\nKeyboardInterrupt\n")


def test_a_traceback_a_person_interrupted_says_where_the_process_was():
    ev = pyspy.parse(text.lines_frame("a.txt", INTERRUPTED)).tables["events"]
    assert ev["thread"].to_list() == ["MainThread traceback (interrupted)"]
    assert ev["where"].to_list() == ["__next__ (/usr/lib/python3.10/site-packages/torch/utils/data/dataloader.py:631)"]
    assert ev["frames"][0].endswith("<module> (train.py:90)")


def test_a_traceback_of_an_error_is_no_stack():
    failed = INTERRUPTED.replace("KeyboardInterrupt", "RuntimeError: CUDA error: out of memory")
    chained = INTERRUPTED.replace("KeyboardInterrupt", "\nThe above exception was the direct cause of ...")
    for tb in (failed, chained):
        assert "events" not in pyspy.parse(text.lines_frame("a.txt", tb)).tables or not pyspy.parse(
            text.lines_frame("a.txt", tb)).tables["events"].height


def test_a_pasted_stack_with_no_error_under_it_is_where_the_process_waits(tmp_path):
    stack = ('  File "/opt/env/lib/python3.8/site-packages/lightning/pytorch/trainer/trainer.py", line 1384, in '
             'save_checkpoint\n    self.strategy.barrier("Trainer.save_checkpoint")\n'
             '  File "/opt/env/lib/python3.8/site-packages/lightning/pytorch/strategies/ddp.py", line 290, in barrier\n'
             "    torch.distributed.barrier(device_ids=self.determine_ddp_device_ids())\n")
    _, v = verdict_of(tmp_path, "```\n" + stack + "```\n")
    assert v.kind == Kind.UNDECIDED
    assert "saving a checkpoint: save_checkpoint (lightning/pytorch/trainer/trainer.py:1384)" in v.summary


def test_interleaved_tracebacks_cut_before_their_errors_are_no_stacks():
    one = ('  File "/env/site-packages/torch/distributed/rendezvous.py", line 246, in _env_rendezvous_handler\n'
           "    store = _create_c10d_store(master_addr, master_port, rank, world_size, timeout)\n")
    two = ('  File "/env/site-packages/deepspeed/comm/torch.py", line 120, in __init__\n'
           "    self.init_process_group(backend, timeout, init_method, rank, world_size)\n")
    ev = pyspy.parse(text.lines_frame("a.txt", one + two + "\n\n\n\n" + one + two)).tables.get("events")
    assert ev is None or not ev.height


def test_a_traceback_cut_before_its_error_is_a_failure_not_a_stack(tmp_path):
    bar = "Train epoch [3/3]: 100%|##########| 8/8 [00:15<00:00,  1.85s/it, act_loss=-0.722]\n"
    cut = ('[2025-02-09 21:23:00 TP2] Scheduler hit an exception: Traceback (most recent call last):\n'
           '  File "/sgl/srt/managers/scheduler.py", line 1787, in run_scheduler_process\n'
           "    scheduler = Scheduler(server_args, port_args, gpu_id, tp_rank, dp_rank)\n"
           '  File "/sgl/srt/model_executor/model_runner.py", line 253, in init_torch_distributed\n'
           "    initialize_model_parallel(tensor_model_parallel_size=self.tp_size)\n")
    store, v = verdict_of(tmp_path, bar * 3 + cut)
    ev = store.events.filter(store.events["kind"] == "stack")
    assert ev["message"].to_list() == ["Traceback (most recent call last): raised in init_torch_distributed "
                                       "(/sgl/srt/model_executor/model_runner.py:253) (its error line is not in the "
                                       "excerpt)"]
    assert ev["thread"].to_list() == [pyspy.RAISED] and v.kind != Kind.HEALTHY


def test_an_error_line_between_frames_ends_the_traceback():
    tb = ('  File "a.py", line 39, in <module>\n    results = ray.get(refs)\n'
          "ray.exceptions.RayTaskError(NcclError): ray::Worker.compute() (pid=35381)\n"
          '  File "a.py", line 21, in compute\n')
    ev = pyspy.parse(text.lines_frame("a.txt", tb)).tables.get("events")
    assert ev is None or not ev.height  # two tracebacks, each an error's: no stack


def test_torchfrtrace_missing_ranks_as_a_set_or_bare():
    from tracekit.parsers import fr_trace
    for said in ("{0, 3}", "0, 3"):
        report = ("Not all ranks joining collective, sequence number: 31117\ngroup info: 0:default_pg\n"
                  f"collective: nccl:all_reduce\nmissing ranks: {said}\n")
        ev = fr_trace.parse(text.lines_frame("fr.txt", report)).tables["events"]
        assert ev["rank"].to_list() == [0, 3] and ev["seq"].to_list() == [31117, 31117]
