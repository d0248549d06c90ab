"""Start-up begun and never returned, in the words of torchrun's agent and Megatron (session 34, issue 31).

Covers ``start_up_messages``' entries read by ``rules_init.start_up_ends_the_log``:
- torchrun's elastic agent: ``[default] Rendezvous'ing worker group`` (torch/distributed/elastic/agent/server/
  api.py:707) and the c10d backend's ``The node '...' attempts to join the next round of the rendezvous`` (rendezvous/
  dynamic_rendezvous.py:1151), ending the log after the agent's launch block (dv12-037's lines 1-20 as posted, and
  dv17-030's glog-prefixed line): INIT_STALL naming the rendezvous; the same lines followed by the c10d store's
  connects (dv12-037 whole, labelled healthy) or by the round joined (dynamic_rendezvous.py:1186) are not.
- Megatron-LM's ``> initializing torch distributed ...`` (training/initialize.py), whose ``> `` parsers/text takes
  off as a paste's quote mark: ending the log it is a start-up begun (INIT_STALL); followed by ``> initialized
  tensor model parallel with size 8`` (dv30-017's lines 10-14) it returned, and nothing decides a stall.
- detectron2's ``Command Line Args: Namespace(... num_gpus=2, num_machines=1 ...)`` (tools/train_net.py:155, right
  before launch() creates the process group in every worker when the world is over one): ending the log it is a
  start-up begun, also when a paste's closing code fence follows it (dv6-015 whole, dv17-011 whole); a world of one
  creates no group and decides nothing; ``Rank of current process: 0. World size: 2`` (engine/defaults.py:218) is
  the group returned; NCCL's INFO lines after a start-up line (torch-010 whole, labelled undecided) are set-up
  that went on: no INIT_STALL.
"""

from __future__ import annotations

from tests.conftest import ROOT
from tests.factory import text_store
from tracekit import start_up_messages as sm
from tracekit.ingest import ingest
from tracekit.verdict import Kind, decide

WILD = ROOT / "samples" / "wild"
DV12_037 = WILD / "dv12-037-accelerate-thread-torchrun-static-rdzv-2node-connects.txt"

#: dv12-037's first 21 lines: the OMP banner, the agent's launch block, its rendezvous begun
AGENT = "\n".join(DV12_037.read_text().splitlines()[:21]) + "\n"
#: dv17-030's first line: the agent's rendezvous begun under torch's glog prefix and NeMo-Run's task prefix
AGENT_GLOG = ("llama32_1b/0 I0601 20:17:03.073000 616467 site-packages/torch/distributed/elastic/agent/server/"
              "api.py:677] [default] Rendezvous'ing worker group\n")
#: dynamic_rendezvous.py:1151 and :1186 as torch 2.13 formats them (node id `{fqdn}_{pid}_{local_id}`)
JOIN = ("I0601 20:17:03.080000 616467 torch/distributed/elastic/rendezvous/dynamic_rendezvous.py:1151] The node "
        "'node1_616467_0' attempts to join the next round of the rendezvous 'llama32_1b'.\n")
JOINED = ("I0601 20:17:09.000000 616467 torch/distributed/elastic/rendezvous/dynamic_rendezvous.py:1186] The node "
          "'node1_616467_0' has joined round 1 of the rendezvous 'llama32_1b' as rank 0 in a world of size 2.\n")
#: dv30-017's lines 10-14 (Megatron-LM's rank 0)
MEGATRON = ("   > building GPT2BPETokenizer tokenizer ...\n"
            "   > padded vocab (size: 50257) with 943 dummy tokens (new size: 51200)\n"
            "   > initializing torch distributed ...\n")
MEGATRON_RETURNED = ("   > initialized tensor model parallel with size 8\n"
                     "   > initialized pipeline model parallel with size 1\n")


def test_agent_rendezvous_that_ends_the_log_is_a_start_up_stall(tmp_path):
    v = decide(text_store(tmp_path, AGENT))
    assert v.kind is Kind.INIT_STALL
    assert "rendezvous" in v.summary and "Rendezvous'ing worker group" in v.summary


def test_agent_rendezvous_under_glog_prefix_ends_the_log(tmp_path):
    v = decide(text_store(tmp_path, AGENT_GLOG))
    assert v.kind is Kind.INIT_STALL
    assert "torchelastic" in v.summary


def test_c10d_round_join_begun_then_nothing_is_a_start_up_stall(tmp_path):
    v = decide(text_store(tmp_path, AGENT_GLOG + JOIN))
    assert v.kind is Kind.INIT_STALL


def test_round_joined_is_no_start_up_stall(tmp_path):
    v = decide(text_store(tmp_path, AGENT_GLOG + JOIN + JOINED))
    assert v.kind is not Kind.INIT_STALL
    assert sm.read(JOINED)[0].means is sm.Means.RETURNED


def test_dv12_037_whole_agent_then_store_connects_is_not_a_stall():
    v = decide(ingest([DV12_037]))
    assert v.kind is not Kind.INIT_STALL


def test_megatron_initializing_without_its_quote_mark_ends_the_log(tmp_path):
    v = decide(text_store(tmp_path, MEGATRON))
    assert v.kind is Kind.INIT_STALL
    assert "Megatron" in v.summary and "initializing torch distributed" in v.summary


def test_megatron_initialized_model_parallel_is_no_stall(tmp_path):
    v = decide(text_store(tmp_path, MEGATRON + MEGATRON_RETURNED))
    assert v.kind is not Kind.INIT_STALL


def test_megatron_entries_read_both_with_and_without_the_quote_mark():
    for line in ("> initializing torch distributed ...", "initializing torch distributed ..."):
        assert sm.read(line)[0].name == "megatron_init_distributed"
    for line in ("> initialized tensor model parallel with size 8", "initialized pipeline model parallel with size 1"):
        assert sm.read(line)[0].means is sm.Means.RETURNED
    # (inside another sentence the words are no announcement of Megatron's)
    assert sm.read("the job is initializing torch distributed ... again") is None


#: dv6-015's three lines (the paste's code fences kept)
DETECTRON2 = ("```\n"
              "Command Line Args: Namespace(config_file='../configs/COCO-InstanceSegmentation/mask_rcnn_R_50_FPN_1x.yaml', "
              "dist_url='tcp://127.0.0.1:50152', eval_only=False, machine_rank=0, num_gpus=2, num_machines=1, opts=[], "
              "resume=False)\n"
              "```\n")


def test_detectron2_launch_args_then_the_closing_fence_is_a_start_up_stall(tmp_path):
    v = decide(text_store(tmp_path, DETECTRON2))
    assert v.kind is Kind.INIT_STALL
    assert "detectron2" in v.summary and "num_machines x num_gpus" in v.summary


def test_detectron2_world_of_one_decides_nothing(tmp_path):
    v = decide(text_store(tmp_path, DETECTRON2.replace("num_gpus=2", "num_gpus=1")))
    assert v.kind is not Kind.INIT_STALL


def test_detectron2_rank_set_up_is_the_group_returned(tmp_path):
    v = decide(text_store(tmp_path, DETECTRON2 + "[12/01 10:00:00 detectron2]: Rank of current process: 0. World "
                          "size: 2\n"))
    assert v.kind is not Kind.INIT_STALL


def test_dv17_011_two_machines_launch_is_a_start_up_stall():
    v = decide(ingest([WILD / "dv17-011-detectron2-2node-unequal-num-gpus-launch.txt"]))
    assert v.kind is Kind.INIT_STALL
    assert "Command Line Args" in v.summary


def test_torch_010_nccl_set_up_after_the_joins_is_no_start_up_stall():
    v = decide(ingest([WILD / "torch-010-deit-distinit-roce-bootstrap.txt"]))
    assert v.kind is not Kind.INIT_STALL
