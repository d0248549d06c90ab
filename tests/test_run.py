"""`tracekit run` on real gloo runs: per-rank logs, launch record, stall dumps, and the verdict."""

import os
import signal
import subprocess
import sys
import time

import polars as pl

from tests.conftest import ROOT
from tracekit.ingest import ingest
from tracekit.verdict import Kind, decide


def tracekit_run(out, scenario, *flags, timeout_s="20"):
    env = dict(os.environ, TK_SCENARIO=scenario, TK_TIMEOUT_S=timeout_s, OMP_NUM_THREADS="1", GLOO_SOCKET_IFNAME="lo")
    env.pop("TK_OUT", None)
    cmd = [sys.executable, "-m", "tracekit.cli", "run", "--out", str(out), "--quiet", *flags, "--",
           sys.executable, "-m", "torch.distributed.run", "--nproc_per_node=4", str(ROOT / "samples/repro/train.py")]
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=240)


def test_run_healthy_collects_per_rank_logs_and_settings(tmp_path):
    r = tracekit_run(tmp_path, "healthy")
    assert r.returncode == 0, r.stderr[-2000:]
    names = sorted(p.name for p in tmp_path.iterdir())
    assert sum(n.startswith("rank") and n.endswith(".log") for n in names) == 4
    store = ingest([tmp_path])
    assert decide(store).kind == Kind.HEALTHY
    assert sorted(store.ranks["rank"].to_list()) == [0, 1, 2, 3]
    settings = store.events.filter(pl.col("kind") == "setting")["message"].to_list()
    assert "NCCL_DEBUG=INFO" in settings and "TORCH_FR_BUFFER_SIZE=2000" in settings
    assert store.events.filter(pl.col("kind") == "package")["message"].str.starts_with("torch==").any()
    logs = store.files.filter(pl.col("file").str.contains(r"/rank\d\."))
    assert logs.height == 4 and (logs["unknown"] <= 1).all(), logs  # the profiler warning's source line


def test_run_deadlock_dumps_stacks_twice_and_names_the_rank(tmp_path):
    r = tracekit_run(tmp_path, "deadlock", "--stall", "6", "--repeat", "3")  # dumps during a slow start would be 3 s
    assert r.returncode != 0  # the gloo timeout ends the hung job
    names = [p.name for p in tmp_path.iterdir()]
    assert sum(n.startswith("pyspy.") or n.startswith("stacks_") for n in names) >= 8  # 4 ranks x 2 rounds
    assert sum(n.startswith("fr_rank") for n in names) >= 8
    v = decide(ingest([tmp_path]))
    assert v.kind == Kind.DEADLOCK and v.ranks == [3], v.summary
    assert "next_batch_stuck" in v.summary
    notes = ingest([tmp_path]).events.filter(pl.col("kind") == "run_note")["message"].to_list()
    assert any(n.startswith("stall dump 2") for n in notes)
    # the verdict came live while the job still hung (the gloo timeout ended it); on a loaded machine
    # the ranks' imports outlast the 6 s limit and an earlier live verdict is UNDECIDED (stacks in import
    # code): the latest live verdict, taken once the ranks were in their collectives, names the deadlock
    live = [x for x in r.stdout.splitlines() if x.startswith("tracekit: verdict (live")]
    assert live and "DEADLOCK: " in live[-1] and "rank 3 never issued it" in live[-1], r.stdout[-3000:]
    assert r.stdout.index(live[0]) < r.stdout.index("exit code")


def test_profile_steps_gives_each_hf_trainer_rank_a_kineto_trace(tmp_path):
    """A real HF Trainer run (2 gloo ranks, DDP) under `tracekit run --profile-steps 2:2`: the
    script knows nothing of tracekit, yet every rank writes a Kineto trace of its steps, and the
    traces align into a healthy verdict."""
    env = dict(os.environ, OMP_NUM_THREADS="1", GLOO_SOCKET_IFNAME="lo", TK_STEPS="6")
    cmd = [sys.executable, "-m", "tracekit.cli", "run", "--quiet", "--out", str(tmp_path), "--profile-steps", "2:2", "--",
           sys.executable, "-m", "torch.distributed.run", "--nproc_per_node=2", "--master_port=29613",
           str(ROOT / "samples/repro/hf_trainer.py")]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    traces = sorted(p.name.split(".")[0] for p in tmp_path.glob("kineto_rank*.json.gz"))
    assert traces == ["kineto_rank0", "kineto_rank1"]
    s = ingest([tmp_path])
    k = s.collectives.filter(pl.col("source") == "kineto")
    assert sorted(k["rank"].unique().to_list()) == [0, 1]
    per_rank = k.group_by("rank").agg(pl.col("op").filter(pl.col("op") == "all_reduce").len().alias("n"))
    assert per_rank["n"].min() >= 2  # DDP's gradient all_reduce in each profiled step
    v = decide(s)
    assert v.kind == Kind.HEALTHY, f"{v.kind.name}: {v.summary}"


EXITS = """
import os, sys, torch, torch.distributed as dist
dist.init_process_group("gloo", init_method="tcp://127.0.0.1:%s" % os.environ["PORT"], rank=0, world_size=1)
t = torch.ones(4); dist.all_reduce(t); dist.destroy_process_group()
how = os.environ["HOW"]
if how == "code":
    sys.exit(3)
if how == "message":
    sys.exit("stopping: bad config")
if how == "raise":
    raise RuntimeError("boom")
print("done", t.sum().item())
"""


def test_gloo_rank_exit_codes_survive_the_exit_guard(tmp_path):
    """The hook ends CPU ranks with the Flight Recorder on through os._exit (torch can abort in
    static destructors otherwise): the exit code and output must stay what Python would give."""
    script = tmp_path / "exits.py"
    script.write_text(EXITS)
    for port, (how, want) in enumerate([("normal", 0), ("code", 3), ("message", 1), ("raise", 1)], start=29631):
        env = dict(os.environ, RANK="0", WORLD_SIZE="1", LOCAL_RANK="0", HOW=how, PORT=str(port), GLOO_SOCKET_IFNAME="lo")
        out = tmp_path / how
        done = subprocess.run([sys.executable, "-m", "tracekit.cli", "run", "--quiet", "--out", str(out), "--",
                               sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == want, (how, done.stderr[-1000:])
        log = next(out.glob("rank0.*.log")).read_text()
        assert {"normal": "done 4.0", "code": "[tracekit] rank=0", "message": "stopping: bad config",
                "raise": "RuntimeError: boom"}[how] in log, (how, log)
        said = [x for x in done.stdout.splitlines() if x.startswith("tracekit: verdict")]
        if how == "raise":  # a failed run gets the verdict ingest would give, at exit
            assert said == ["tracekit: verdict (exit code 1): CRASHED-RANK: rank 0 failed first: RuntimeError: boom"
                            " | where each rank is: rank 0: raised RuntimeError: boom"], done.stdout
            assert (out / "verdict.txt").read_text().splitlines()[1].startswith("CRASHED-RANK: rank 0 failed first")
        if how == "normal":
            assert said == [] and not (out / "verdict.txt").exists()


RACE = """
import sys, threading, time, torch, torch.distributed as dist
from pathlib import Path
from tracekit import hook
dist.init_process_group("gloo", init_method="tcp://127.0.0.1:29641", rank=0, world_size=1)
t = torch.ones(4); dist.all_reduce(t)
sys.path.insert(0, sys.argv[1])
started = threading.Event()
def importer():
    started.set()
    import slow_module  # sleeps in its body: an import in flight, as torch._dynamo's is on a loaded machine
threading.Thread(target=importer).start()
started.wait(); time.sleep(0.3)
before = set(sys.modules)
assert hook._importing_elsewhere()
assert hook.dump_fr(Path(sys.argv[1]) / "fr.pkl")
print("imported during dump:", len(set(sys.modules) - before - {"slow_module"}))
"""


def test_fr_dump_during_an_import_imports_nothing(tmp_path):
    """Symbolising FR stack traces imports ~800 modules; done while the main thread imports
    torch._dynamo it killed a rank with an ImportError. The dump must import nothing then."""
    (tmp_path / "slow_module.py").write_text("import time\ntime.sleep(1.5)\n")
    script = tmp_path / "race.py"
    script.write_text(RACE)
    env = dict(os.environ, TORCH_FR_BUFFER_SIZE="100", GLOO_SOCKET_IFNAME="lo")
    done = subprocess.run([sys.executable, str(script), str(tmp_path)], env=env, capture_output=True, text=True, timeout=120)
    assert "imported during dump: 0" in done.stdout, done.stderr[-2000:]
    import pickle
    assert pickle.loads((tmp_path / "fr.pkl").read_bytes())["entries"][0]["profiling_name"] == "gloo:all_reduce"


def test_the_run_gets_the_users_allocator_setting():
    """polars writes its allocator's settings into the environment when it loads; the ranks tracekit
    launches see the environment the user gave them, with or without that variable."""
    probe = ("import tracekit, polars; from pathlib import Path; from tracekit.run import Settings, rank_env; "
             "import os; print(os.environ.get('_RJEM_MALLOC_CONF'), rank_env(Settings(Path('.'))).get('_RJEM_MALLOC_CONF'))")
    env = {k: v for k, v in os.environ.items() if k != "_RJEM_MALLOC_CONF"}
    seen, given = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True).stdout.split()
    assert seen != "None" and given == "None"  # (polars set one in tracekit's process)
    env["_RJEM_MALLOC_CONF"] = "narenas:2"
    seen, given = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True).stdout.split()
    assert seen != "narenas:2" and given == "narenas:2"


RUN = [sys.executable, "-m", "tracekit.cli", "run", "--quiet", "--out"]


def _launch(out, job: str) -> subprocess.Popen:
    """`tracekit run --out OUT -- bash -c JOB` in the background, once the job has started (it
    touches OUT/started)."""
    p = subprocess.Popen([sys.executable, "-m", "tracekit.cli", "run", "--quiet", "--out", str(out), "--",
                          "bash", "-c", f"touch {out}/started; {job}"],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + 60
    while not (out / "started").exists():
        assert p.poll() is None and time.monotonic() < deadline, p.stdout.read()
        time.sleep(0.05)
    return p


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def test_sigterm_is_forwarded_and_the_job_finishes_its_shutdown(tmp_path):
    # the job saves a checkpoint when it is told to stop, slowly, and writes to its output meanwhile
    p = _launch(tmp_path, f"trap 'echo saving; sleep 1; echo saved > {tmp_path}/ckpt; exit 5' TERM; "
                          f"sleep 60 & echo $! > {tmp_path}/child; wait")
    p.send_signal(signal.SIGTERM)
    out, _ = p.communicate(timeout=60)
    assert p.returncode == 5, out
    assert (tmp_path / "ckpt").read_text() == "saved\n"  # the handler ran to its end, its output kept
    assert "SIGTERM: forwarded to the job's process group" in out
    assert "saving" in next(tmp_path.glob("launcher.*.log")).read_text().splitlines()  # its output kept
    assert _gone(int((tmp_path / "child").read_text()))  # its sleep got the signal with it


def test_a_second_signal_kills_the_job_and_the_code_is_a_shells(tmp_path):
    p = _launch(tmp_path, "trap '' INT TERM; sleep 60")  # ignores both (and so does its sleep)
    p.send_signal(signal.SIGINT)
    time.sleep(1.0)
    assert p.poll() is None  # still waiting for the job
    p.send_signal(signal.SIGINT)
    out, _ = p.communicate(timeout=60)
    assert p.returncode == 128 + signal.SIGKILL, out
    assert "SIGINT again: SIGKILL to the job's process group" in out
    done = subprocess.run([*RUN, str(tmp_path / "k"), "--", "bash", "-c", "kill -9 $$"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 137  # as bash gives it (was 247)


def test_what_the_job_leaves_running_is_ended_and_reaped(tmp_path):
    job = f"sleep 60 & echo $! > {tmp_path}/a; (trap '' TERM; sleep 61) & echo $! > {tmp_path}/b; exit 0"
    done = subprocess.run([*RUN, str(tmp_path), "--", "bash", "-c", job], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout
    assert "the job left processes running in its process group: SIGTERM to them" in done.stdout
    assert "still running after 5s: SIGKILL" in done.stdout  # the one that ignores SIGTERM
    assert _gone(int((tmp_path / "a").read_text())) and _gone(int((tmp_path / "b").read_text()))


def test_a_recorded_value_with_a_newline_stays_on_its_line(tmp_path):
    fake = ("[rank3]:[E1203 16:16:51.000 ProcessGroupNCCL.cpp:1] RuntimeError: CUDA error: "
            "an illegal memory access")
    env = dict(os.environ, NCCL_X=f"x\n{fake}", TORCH_Y="\x1b[2J")
    done = subprocess.run([*RUN, str(tmp_path), "--", "bash", "-c", "echo ok", "a\nb"], env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0
    record = next(tmp_path.glob("launch.*.txt")).read_text().splitlines()
    assert all(x.startswith("[tracekit-run] ") for x in record)
    assert f"[tracekit-run] env NCCL_X=x\\n{fake}" in record
    assert "[tracekit-run] env TORCH_Y=\\x1b[2J" in record
    assert "[tracekit-run] argv=bash -c 'echo ok' $'a\\nb'" in record
