"""Session 23 (issue 31, the first call): a progress line printed twice whose counter rises is a loop's
progress (``parsers/series.py``, ``MIN_COUNTED``): two points of one loop, where one line is a snapshot. The
lines are built in the exact format the runtimes' code prints."""

from tests.factory import text_store
from tracekit.verdict import Kind, decide

# DeepSpeed's pipeline engine on rank 0 every steps_per_print steps: deepspeedai/DeepSpeed
# deepspeed/runtime/pipe/engine.py:404-408 (`f'steps: {self.global_steps} loss: {self.agg_train_loss:0.4f} '`,
# then `f'iter time (s): {iter_time:0.3f} samples/sec: {tput:0.3f}'`, printed)
DS_PIPE = "steps: {n} loss: 2.3456 iter time (s): 0.523 samples/sec: 61.187"
# detectron2's CommonMetricPrinter: facebookresearch/detectron2 detectron2/utils/events.py:275-317
# (`" {eta}iter: {iter}  {losses}  {non_losses}  {avg_time}{last_time}" + "{avg_data_time}{last_data_time} lr:
# {lr}  {memory}"`, each loss `{}: {:.4g}`, `time: {:.4f}  `, `max_mem: {:.0f}M`), through its logger
D2 = ("[12/01 10:00:{s:02d} d2.utils.events]:  eta: 0:10:12  iter: {n}  total_loss: 2.113  loss_cls: 0.5  "
      "time: 0.4012  last_time: 0.4010  data_time: 0.0123  last_data_time: 0.0120   lr: 0.00019981  "
      "max_mem: 3012M")

# timm's train loop: huggingface/pytorch-image-models train.py:1417-1423 (`f'Train: {epoch}
# [{update_idx:>4d}/{updates_per_epoch} '`, `f'({100. * (update_idx + 1) / updates_per_epoch:>3.0f}%)]  '`,
# `f'Loss: {loss_now:#.3g} ({loss_avg:#.3g})  '`, `f'Time: {...:.3f}s, {...:>7.2f}/s  '`,
# `f'({...:.3f}s, {...:>7.2f}/s)  '`, `f'LR: {lr:.3e}  '`, `f'Data: {...:.3f} ({...:.3f})'`)
TIMM = ("Train: 0 [{n:>4d}/1251 (  4%)]  Loss: 6.91 (6.93)  Time: 0.393s,  651.33/s  (0.414s,  618.37/s)  "
        "LR: 1.000e-05  Data: 0.010 (0.022)")


def _lines(fmt: str, n: int) -> str:
    return "".join(fmt.format(n=20 * (i + 1), s=10 + i) + "\n" for i in range(n))


def test_two_lines_whose_counter_rises_are_steps_one_is_a_snapshot_and_a_falling_one_none(tmp_path):
    for fmt in (DS_PIPE, D2, TIMM):
        two = text_store(tmp_path, _lines(fmt, 2), name="two.log")
        steps = two.events.filter(two.events["kind"] == "step")
        assert steps["step"].to_list() == [20, 40], fmt
        assert decide(two).kind == Kind.HEALTHY, fmt
        # (s24) one line alone is one step of the loop seen, its counter and its loss or time beside it
        # (parsers/series.py LONE_COUNTER): a snapshot, never a trend (rules_seen.one_step_seen)
        one = text_store(tmp_path, _lines(fmt, 1), name="one.log")
        assert one.events.filter(one.events["kind"] == "step")["step"].to_list() == [20], fmt
    # a counter that falls over the two lines is no progress
    falls = text_store(tmp_path, DS_PIPE.format(n=40) + "\n" + DS_PIPE.format(n=20) + "\n", name="falls.log")
    assert falls.events.filter(falls.events["kind"] == "step").height == 0
