"""The live stall detector: its policy on simulated clocks, the phases it reads from real log lines,
its verdict files, and a real gloo job under `tracekit run` that hangs and gets its verdict live."""

import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time

from click.testing import CliRunner

from tests.conftest import ROOT, SAMPLES, copy_sample
from tracekit import live
from tracekit.cli import main
from tracekit.ingest import ingest
from tracekit.live import Act, Watchdog
from tracekit.verdict import Kind, decide


def drive(dog, advances, until, phase=lambda t: None, printed_after=Act.ROUND):
    """Look every 0.5 s from 0 to ``until``, as tracekit run does; the job advances at the times in
    ``advances``. A verdict counts as printed after ``printed_after`` (as the launcher marks it)."""
    adv, acts, i, t = sorted(advances), [], 0, 0.0
    while t <= until:
        moved = False
        while i < len(adv) and adv[i] <= t + 1e-9:
            moved, i = True, i + 1
        for a in dog.tick(t, moved, lambda: phase(t)):
            acts.append((t, a))
            if a is printed_after and dog.episode is not None:
                dog.episode.printed = True
        t = round(t + 0.5, 3)
    return acts


def every(start, stop, gap=0.5):
    return [round(start + k * gap, 3) for k in range(int(round((stop - start) / gap)) + 1)]


def test_a_steady_job_that_stops_is_suspected_at_the_floor_and_confirmed_one_limit_later():
    acts = drive(Watchdog(), every(0, 20), 40)
    assert acts == [(24.0, Act.SUSPECT), (28.0, Act.ROUND)]


def test_a_slower_rhythm_allows_a_longer_gap():
    dog = Watchdog()
    acts = drive(dog, every(0, 60, 2.0), 90)
    assert dog.usual() == 2.0
    assert acts == [(68.0, Act.SUSPECT), (76.0, Act.ROUND)]


def test_the_first_steps_get_the_cold_limit():
    """Before the job has a rhythm (imports, compilation, ZeRO-3 partitioning) only a long gap counts."""
    acts = drive(Watchdog(), every(0, 2), 130)
    assert acts == [(122.0, Act.SUSPECT)]


def test_an_announced_checkpoint_is_a_long_phase_and_its_length_is_learned():
    dog = Watchdog()
    ckpt = lambda t: "checkpoint" if 20 < t < 50 or 80 < t < 200 else None
    acts = drive(dog, every(0, 20) + every(50, 80), 200, phase=ckpt)
    assert dog.phases == {"checkpoint": 30.0}
    assert acts == [(140.0, Act.SUSPECT), (200.0, Act.ROUND)]  # max(60 s, twice the last one)


def test_one_long_gap_then_the_usual_rhythm_is_learned_not_reported():
    dog = Watchdog()
    acts = drive(dog, every(0, 20) + every(26, 40) + every(46, 60), 60)
    assert acts == [(24.0, Act.SUSPECT), (26.0, Act.MOVED)]  # the 6 s gap at 40-46 is in its history now
    assert dog.long_gap == 6.0 and dog.kept is None


def test_a_second_long_gap_right_after_the_first_is_slow_progress():
    acts = drive(Watchdog(), every(0, 20) + [26.0, 26.5, 33.0], 33)
    assert acts == [(24.0, Act.SUSPECT), (26.0, Act.MOVED), (30.5, Act.SLOW), (33.0, Act.RESUMED)]


def test_progress_after_a_printed_verdict_is_reported_and_the_gap_learned():
    dog = Watchdog()
    acts = drive(dog, every(0, 20) + every(40, 50), 50)
    assert acts == [(24.0, Act.SUSPECT), (28.0, Act.ROUND), (40.0, Act.RESUMED)]
    assert dog.limit()[0] == 25.0


def test_a_fixed_stall_ignores_the_rhythm():
    acts = drive(Watchdog(fixed_s=10, repeat_s=3, rounds=3), every(0, 20), 40)
    assert acts == [(30.0, Act.SUSPECT), (33.0, Act.ROUND), (36.0, Act.ROUND)]


def test_phase_from_the_last_lines_a_job_wrote(tmp_path):
    loss = "{'loss': 0.52, 'grad_norm': 1.3, 'learning_rate': 5e-05, 'epoch': 0.4}\n"
    cases = {"eval": loss + "***** Running Evaluation *****\n  Num examples = 500\n  Batch size = 8\n",
             "checkpoint": loss + "Saving model checkpoint to out/checkpoint-500\n",
             "checkpoint ": loss + "[2024-05-01 10:00:00,000] [INFO] [logging.py:96:log_dist] [Rank 0] "
                                   "[Torch] Checkpoint global_step500 is about to be saved!\n",
             "": "***** Running Evaluation *****\n" + loss * 3}
    for i, (want, text) in enumerate(cases.items()):
        f = tmp_path / f"rank0.{i}.log"
        f.write_text(text)
        assert live.phase([f]) == (want.strip() or None), text


def test_verdict_files_are_tracekits_own_and_never_a_users(tmp_path):
    run = tmp_path / "run"
    copy_sample("gloo_2x2_deadlock", run)
    v = decide(ingest([run]))
    assert live.write(run, v, "stalled", 9.0, 2, run / "procs")
    said = live.read(run)
    assert said["state"] == "stalled" and said["verdict"]["kind"] == "deadlock" and said["verdict"]["ranks"] == [3]
    txt = (run / "verdict.txt").read_text()
    assert txt.startswith(live.TXT_MARK) and "\nDEADLOCK: " in txt
    # ingest reads the run's files, not tracekit's verdict of them
    assert sorted(ingest([run]).files["file"].str.extract(r"([^/]+)$").to_list()) == sorted(p.name for p in (SAMPLES / "gloo_2x2_deadlock").iterdir() if p.is_file())
    # a user's own verdict.txt is an input, and never overwritten
    other = tmp_path / "other"
    copy_sample("gloo_2x2_deadlock", other)
    (other / "verdict.txt").write_text("my notes: rank 3 looks stuck\n")
    assert not live.write(other, v, "stalled", 9.0, 2, other / "procs")
    assert (other / "verdict.txt").read_text() == "my notes: rank 3 looks stuck\n" and not (other / "verdict.json").exists()
    assert "verdict.txt" in "".join(ingest([other]).files["file"].to_list())


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_real_hang_gets_its_verdict_while_the_job_still_hangs(tmp_path):
    """4 gloo ranks under `tracekit run` with its defaults: rank 3 stops at step 15. The verdict is
    printed while the job hangs, written to verdict.txt/json, the same as `tracekit verdict` gives,
    and `tracekit watch` shows it."""
    out, fault = tmp_path / "run", tmp_path / "fault.txt"
    env = dict(os.environ, TK_SCENARIO="deadlock", TK_FAULT_STEP="15", TK_STEPS="30", TK_FIRST_S="0",
               TK_EVAL_EVERY="1000", TK_CKPT_STEP="0", TK_FAULT_FILE=str(fault), OMP_NUM_THREADS="1",
               GLOO_SOCKET_IFNAME="lo")
    cmd = [sys.executable, "-m", "tracekit.cli", "run", "--quiet", "--out", str(out), "--", sys.executable, "-m",
           "torch.distributed.run", "--nproc_per_node=4", f"--master_port={free_port()}", str(ROOT / "samples/repro/live_job.py")]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    lines, got = [], threading.Event()

    def read():
        for line in proc.stdout:
            lines.append(line)
            if line.startswith("tracekit: verdict"):
                got.set()

    threading.Thread(target=read, daemon=True).start()
    try:
        got.wait(timeout=180)
        time.sleep(0.5)
        alive = proc.poll() is None
        watched = CliRunner().invoke(main, ["watch", "--once", str(out)]).output
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    text = "".join(lines)
    assert got.is_set(), text[-3000:]
    assert alive  # the job still hung when the verdict came
    first = next(x for x in lines if x.startswith("tracekit: verdict"))
    assert re.match(r"tracekit: verdict \(live, no progress for \d+s, 2 dump rounds\): DEADLOCK: .*rank 3 never issued it", first), first
    assert "next_batch_stuck" in first
    assert "stall: no progress for" in text and "limit 4s: usual gap" in text  # learned, not the cold limit
    said = json.loads((out / "verdict.json").read_text())
    assert said["state"] == "stalled" and said["verdict"]["ranks"] == [3]
    v = decide(ingest([out]))
    assert (v.kind, v.ranks) == (Kind.DEADLOCK, [3])
    assert "stalled: no progress for" in watched and "verdict (tracekit run, 2 dump rounds): DEADLOCK" in watched, watched


def test_a_failed_run_into_a_folder_with_a_users_verdict_txt_leaves_it(tmp_path):
    """The verdict at a failed exit is printed; a verdict.txt tracekit did not write stays as it was."""
    run = tmp_path / "logs"
    copy_sample("gloo_2x2_deadlock", run)
    (run / "verdict.txt").write_text("my own notes\n")
    r = CliRunner().invoke(main, ["run", "--quiet", "--out", str(run), "--", sys.executable, "-c", "raise SystemExit(3)"])
    assert r.exit_code == 3
    assert "tracekit: verdict (exit code 3): DEADLOCK: " in r.output  # the logs already in the folder say so
    assert "verdict.txt or verdict.json in " in r.output and "is not tracekit's: left as it is" in r.output
    assert (run / "verdict.txt").read_text() == "my own notes\n" and not (run / "verdict.json").exists()


def test_phase_skips_a_fifo_named_like_a_log(tmp_path):
    """A FIFO among the logs never blocks the launcher's loop: only regular files are read."""
    import os
    from tracekit import live
    os.mkfifo(tmp_path / "rank0.log")
    (tmp_path / "rank1.log").write_text("***** Running Evaluation *****\n")
    assert live.phase([tmp_path / "rank0.log", tmp_path / "rank1.log"]) == "eval"
