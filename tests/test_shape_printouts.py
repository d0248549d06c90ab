"""Printouts of a program's own objects are known by their structure, and nothing another parser
decodes is taken with them (parsers/printouts.py, issue 31). The texts below are written as the
printing code writes them (torch.nn.Module.__repr__, json.dumps(indent=2), argparse.Namespace.__repr__,
transformers' TrainingArguments.__str__, Megatron's _print_args), or read from a sample run."""

from __future__ import annotations

import polars as pl

from tracekit.ingest import unknown_lines
from tracekit.parsers import printouts, text

from conftest import ROOT

SWIFT = ROOT / "samples" / "swift_1x4_healthy"


def claimed(lines: list[str]) -> list[int]:
    """The numbers (1-based) of the lines the parser takes as a printout."""
    frame = text.lines_frame("log.txt", "\n".join(lines) + "\n")
    return printouts.parse(frame).claimed["line"].to_list()


MODEL = [
    "Qwen2ForCausalLM(",
    "  (model): Qwen2Model(",
    "    (embed_tokens): Embedding(151936, 896)",
    "    (layers): ModuleList(",
    "      (0-23): 24 x Qwen2DecoderLayer(",
    "        (self_attn): Qwen2Attention(",
    "          (q_proj): Linear(in_features=896, out_features=896, bias=True)",
    "        )",
    "        (input_layernorm): Qwen2RMSNorm((896,), eps=1e-06)",
    "      )",
    "    )",
    "    (rotary_emb): Qwen2RotaryEmbedding()",
    "  )",
    "  (lm_head): Linear(in_features=896, out_features=151936, bias=False)",
    ")",
]


def test_a_models_print_is_a_printout():
    assert claimed(["step 1 loss 2.0"] + MODEL + ["step 2 loss 1.9"]) == list(range(2, 2 + len(MODEL)))


def test_a_json_dump_and_a_dataclass_repr_are_printouts():
    dump = ["config = {", '  "zero_optimization": {', '    "stage": 3,', '    "overlap_comm": true', "  },",
            '  "train_micro_batch_size_per_gpu": 2,', '  "layer_types": [', '    "full_attention",',
            '    "full_attention"', "  ]", "}"]
    args = ["TrainingArguments(", "_n_gpu=8,", "adafactor=False,", "ddp_timeout=1800,",
            "deepspeed=ds_config.json,", "fsdp=[],", "fsdp_config={'min_num_params': 0, 'xla': False},",
            "output_dir=out,", ")"]
    assert claimed(dump + args) == list(range(1, len(dump) + len(args) + 1))


def test_a_dump_whose_head_the_excerpt_cut_off_is_known_by_its_json_items():
    assert claimed(['    "train_micro_batch_size_per_gpu": 2, ', '    "train_batch_size": 32', "}",
                    "[rank0]: Watchdog caught collective operation timeout"]) == [1, 2, 3]


def test_a_namespace_and_an_argument_section_are_printouts():
    lines = ["Command Line Args: Namespace(config_file='configs/mask_rcnn.yaml', "
             "dist_url='tcp://127.0.0.1:50152', eval_only=False, machine_rank=0, num_gpus=2, num_machines=1, "
             "opts=[], resume=False)",
             "------------------------ arguments ------------------------",
             "  accumulate_allreduce_grads_in_fp32 .............. False",
             "  deepspeed_activation_checkpointing  True",
             "  world_size ...................................... 64",
             "-------------------- end of arguments ---------------------",
             "building GPT2BPETokenizer tokenizer ..."]
    assert claimed(lines) == [1, 2, 3, 4, 5, 6]


def test_a_traceback_or_an_nccl_line_is_never_taken():
    """A call spread over lines in a traceback is no printout; a block holding an NCCL line or an
    exception is not one at all (torchelastic's error file)."""
    traceback = ["Traceback (most recent call last):", '  File "train.py", line 10, in <module>',
                 "    torch.distributed.init_process_group(", '  File "c10d_logger.py", line 83, in wrapper',
                 "    return func(*args, **kwargs)", "RuntimeError: connect() timed out.", ")"]
    assert claimed(traceback) == []
    with_nccl = ["state = {", "  'rank': 1,",
                 "node1:20:20 [0] NCCL INFO comm 0x5 rank 1 nranks 2 - Init COMPLETE", "  'world': 2,", "}"]
    assert claimed(with_nccl) == []
    error_file = ["ERROR:torch.distributed.elastic.multiprocessing.errors.error_handler:{", '  "message": {',
                  '    "message": "RendezvousTimeoutError: ",', '    "extraInfo": {',
                  '      "py_callstack": "Traceback (most recent call last):\\n  File \\"run.py\\"",',
                  '      "timestamp": "1646384581"', "    }", "  }", "}"]
    assert claimed(error_file) == []  # a dump holding an error stays unknown, listed as one block


def test_the_printouts_of_a_real_run_are_no_longer_unknown():
    """ms-swift's rank 0 prints the model's config (JSON), its datasets and the model itself: none of
    those lines is unknown, and what is not a printout still is."""
    log = SWIFT / "rank0.vm.2911.log"
    frame = text.lines_frame(str(log), log.read_text())
    t = frame["text"]
    head = frame.filter(t.str.ends_with(": Qwen3ForCausalLM("))["line"][0]
    close = frame.filter((pl.col("line") > head) & (pl.col("text") == ")"))["line"][0]
    unknown = set(unknown_lines([str(log)])["line"])
    assert close - head > 20
    assert not unknown & set(range(head, close + 1))
    assert not unknown & set(frame.filter(t.str.contains(r'^\s*"(?:architectures|vocab_size)"'))["line"])


def test_a_yaml_dump_is_a_printout_and_an_errors_fields_are_not():
    """OmegaConf / detectron2's `Running with full config:` YAML nests keys under keys; the flat fields
    of an error (TCPStore's `port: / code: / name: EADDRINUSE`) say what failed and stay unknown."""
    yaml = ["Running with full config:", "CUDNN_BENCHMARK: false", "DATALOADER:",
            "  ASPECT_RATIO_GROUPING: true", "  NUM_WORKERS: 4", "DATASETS:", "  TEST:", "  - coco_2017_val",
            "SEED: -1"]
    fields = ["port: 29500", "useIpv6: 0", "code: -98", "name: EADDRINUSE", "message: address already in use"]
    assert claimed(yaml + [""] + fields) == list(range(2, len(yaml) + 1))


def test_a_native_stacks_frame_wrapped_over_lines_is_no_printout():
    gdb = ["#5  0x00007fe93f6c4d46 in horovod::common::(anonymous namespace)::RunLoopOnce (",
           "    state=..., is_coordinator=is_coordinator@entry=true)"]
    assert claimed(gdb) == []


def test_a_pprinted_dict_is_a_printout():
    """pprint.pprint puts the first item beside the opening brace and the last beside the closing one."""
    pp = ["{'architectures': ['LlamaForCausalLM'],", " 'bos_token_id': 1,", " 'hidden_size': 4096,",
          " 'rope_scaling': {'factor': 8.0,", "                  'rope_type': 'llama3'},",
          " 'vocab_size': 128256}"]
    assert claimed(pp) == list(range(1, len(pp) + 1))
