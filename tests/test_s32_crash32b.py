"""Session 32 (crash32b): a user's stop (Ctrl-C) and what raised as it unwound is no rank's crash.

Covers (real lines of samples/wild dv50-005, Megatron-DeepSpeed's committed log):
- ``user_stop.stopped_by_user``: steady steps, then the processes' ``KeyboardInterrupt`` tracebacks, the DeepSpeed
  runner's ``sigkill_handler`` raising ``NameError: free variable 'kill_cmd' ...`` and the launcher's SIGTERM ->
  HEALTHY saying the user's stop, never CRASHED_RANK; without the steps -> UNDECIDED saying the stop.
- ``user_stop.stopped``: a failure line within the stop's interleaved tracebacks is the stop's; one far above the
  first ``KeyboardInterrupt`` (a rank that crashed, then a user who stopped the others) stays a failure, and
  ``crashed_rank`` still reads it.
"""

from __future__ import annotations

from tests.factory import text_store
from tracekit import user_stop
from tracekit.evidence import Evidence
from tracekit.outcome import Kind
from tracekit.verdict import decide

STEPS = "".join([
    '[2022-10-29 00:11:35,112] [INFO] [logging.py:68:log_dist] [Rank 0] step=2110, skipped=0, lr=[0.0001243938816, 0.0001243938816], mom=[(0.9, 0.95), (0.9, 0.95)]\n'
    '[2022-10-29 00:11:35,115] [INFO] [timer.py:198:stop] 0/2110, RunningAvgSamplesPerSec=392.52063727641263, CurrSamplesPerSec=467.0034585702257, MemAllocated=1.64GB, MaxMemAllocated=5.66GB\n'
    ' iteration     2110/ 1716613 | consumed samples:       540160 | consumed tokens:   1106247680 | elapsed time per iteration (ms): 1217.0 | learning rate: 1.244E-04 | global batch size:   256 | lm loss: 4.573008E+00 | loss scale: 32768.0 | number of skipped iterations:   0 | number of nan iterations:   0 |\n'
    '[2022-10-29 00:11:41,697] [INFO] [logging.py:68:log_dist] [Rank 0] step=2120, skipped=0, lr=[0.00012498370559999998, 0.00012498370559999998], mom=[(0.9, 0.95), (0.9, 0.95)]\n'
    '[2022-10-29 00:11:41,700] [INFO] [timer.py:198:stop] 0/2120, RunningAvgSamplesPerSec=392.2952367209612, CurrSamplesPerSec=400.64873836197506, MemAllocated=1.64GB, MaxMemAllocated=5.66GB\n'
    ' iteration     2120/ 1716613 | consumed samples:       542720 | consumed tokens:   1111490560 | elapsed time per iteration (ms): 658.5 | learning rate: 1.250E-04 | global batch size:   256 | lm loss: 4.555441E+00 | loss scale: 32768.0 | number of skipped iterations:   0 | number of nan iterations:   0 |\n'
    '[2022-10-29 00:11:47,206] [INFO] [logging.py:68:log_dist] [Rank 0] step=2130, skipped=0, lr=[0.00012557352959999997, 0.00012557352959999997], mom=[(0.9, 0.95), (0.9, 0.95)]\n'
    '[2022-10-29 00:11:47,208] [INFO] [timer.py:198:stop] 0/2130, RunningAvgSamplesPerSec=392.343111873222, CurrSamplesPerSec=459.60096017203654, MemAllocated=1.64GB, MaxMemAllocated=5.66GB\n'
    ' iteration     2130/ 1716613 | consumed samples:       545280 | consumed tokens:   1116733440 | elapsed time per iteration (ms): 550.9 | learning rate: 1.256E-04 | global batch size:   256 | lm loss: 4.569905E+00 | loss scale: 32768.0 | number of skipped iterations:   0 | number of nan iterations:   0 |\n'
])
# (the end of the excerpt: interleaved frames, the runner's NameError, the KeyboardInterrupt, the launcher's kill)
STOP = "".join([
    '  File "/opt/conda/lib/python3.8/subprocess.py", line 1766, in _try_wait\n'
    '    (pid, sts) = os.waitpid(self.pid, wait_flags)\n'
    '  File "/home/xiaoxiawu/TokenDropping/deepspeed-token-drop/DeepSpeed-internal-connor/deepspeed/launcher/runner.py", line 511, in sigkill_handler\n'
    '    _set_cuda_rng_state(orig_cuda_rng_state)\n'
    '  File "/home/xiaoxiawu/TokenDropping/deepspeed-token-drop/Megatron-DeepSpeed-internal/megatron/mpu/random.py", line 101, in _set_cuda_rng_state\n'
    '    _lazy_call(cb)    \n'
    'result_kill = subprocess.Popen(kill_cmd, env=env)\n'
    '  File "/opt/conda/lib/python3.8/site-packages/torch/cuda/__init__.py", line 155, in _lazy_call\n'
    "NameError: free variable 'kill_cmd' referenced before assignment in enclosing scope\n"
    '    callable()\n'
    '  File "/home/xiaoxiawu/TokenDropping/deepspeed-token-drop/Megatron-DeepSpeed-internal/megatron/mpu/random.py", line 99, in cb\n'
    '    default_generator.set_state(new_state)\n'
    'KeyboardInterrupt\n'
    '[2022-10-29 00:11:49,560] [INFO] [launch.py:286:sigkill_handler] Killing subprocess 58800\n'
    '[2022-10-29 00:11:50,671] [INFO] [launch.py:286:sigkill_handler] Killing subprocess 58801\n'
    '[2022-10-29 00:11:51,526] [INFO] [launch.py:286:sigkill_handler] Killing subprocess 58803\n'
    '[2022-10-29 00:11:51,780] [INFO] [launch.py:286:sigkill_handler] Killing subprocess 58805\n'
    '[2022-10-29 00:11:52,514] [INFO] [launch.py:286:sigkill_handler] Killing subprocess 58807\n'
    '[2022-10-29 00:11:52,516] [INFO] [launch.py:286:sigkill_handler] Killing subprocess 58809\n'
    '[2022-10-29 00:11:52,527] [INFO] [launch.py:286:sigkill_handler] Killing subprocess 58811\n'
    '[2022-10-29 00:11:52,534] [INFO] [launch.py:295:sigkill_handler] Main process received SIGTERM, exiting\n'
])


def test_steady_steps_then_a_users_stop_is_healthy_not_a_crash(tmp_path):
    v = decide(text_store(tmp_path, STEPS + STOP))
    assert v.kind is Kind.HEALTHY
    assert "KeyboardInterrupt" in v.summary and "2130" in v.summary and "no rank's crash" in v.summary


def test_a_users_stop_without_progress_is_undecided_saying_the_stop(tmp_path):
    v = decide(text_store(tmp_path, STOP))
    assert v.kind is Kind.UNDECIDED
    assert "stopped by its user" in v.summary


def test_the_runners_nameerror_is_the_stops(tmp_path):
    ev = Evidence.gather(text_store(tmp_path, STEPS + STOP))
    gone = user_stop.stopped(ev, ev.crashes)
    assert gone["message"].str.contains("NameError").any()
    assert not user_stop.without_stop(ev, ev.crashes).height


def test_a_crash_far_above_the_stop_stays_a_crash(tmp_path):
    crash = "[rank0]: RuntimeError: Expected all tensors to be on the same device\n"
    v = decide(text_store(tmp_path, crash + STEPS * 6 + STOP))
    assert v.kind is Kind.CRASHED_RANK
    assert "Expected all tensors" in v.summary


def test_an_oom_right_above_the_stop_stays_the_crash(tmp_path):
    # a rank ran out of memory, the others hung, the user pressed Ctrl-C: the OOM is the cause, however close
    oom = "[rank0]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n"
    v = decide(text_store(tmp_path, STEPS + oom + STOP))
    assert v.kind is Kind.CRASHED_RANK
    assert "out of memory" in v.summary
