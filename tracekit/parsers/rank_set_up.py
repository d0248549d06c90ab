"""The set-up lines by which a program's processes each say their own global rank once, as they start, and the
progress lines that carry it (issue 31, rank identity): a framework's or a training script's log of its
distributed set-up, read from the code that prints it. ``rank_words`` reads them with its ``RANK_WORDS`` (``SET_UP`` is their tail); each entry says which
program prints the line and what its number is (the writer's global rank, the world's size beside it). A
number such a line gives a group (Paddle's `dp_group: [0, 1]`) or a local rank (OpenCLIP's `local 1`) is no
entry's: the line is one process's word about itself.
"""

from __future__ import annotations

from typing import NamedTuple


class RankWord(NamedTuple):
    pattern: str  # the named groups: rank, other (a second rank named), local, world
    source: str  # where the runtime prints it
    meaning: str



SET_UP = (
    # MXNet's distributed Speedometer (its copies in MLPerf's image_classification common/fit.py and others:
    # `logging.info('Node[%d] Epoch[%d] Batch [%d]\tSpeed: %.2f samples/sec ...', self.rank, ...)`, the rank the
    # KVStore gives the worker): the writer's global rank on each of its progress lines (dv39-002)
    RankWord(r"\bNode\[(?P<rank>\d+)\] (?:Epoch|Iter)\[\d+\] Batch \[",
             "MXNet's Speedometer with the worker's rank (MLPerf image_classification common/fit.py)",
             "the writer's global rank"),
    # Paddle's hybrid-parallel topology, printed by each process at fleet.init (python/paddle/distributed/fleet/
    # base/topology.py HybridCommunicateGroup: `"HybridParallelInfo: rank_id: %d, mp_degree: %d, ..." %
    # (self.global_rank, ...)`, from Paddle 2.1 on; PaddleSeg, PaddleNLP and PaddleOCR logs carry it, dv35-001):
    # the writer's global rank (its groups follow on the line: `dp_group: [0, 1]` names no writer)
    RankWord(r"\bHybridParallelInfo: rank_id: (?P<rank>\d+),",
             "Paddle python/paddle/distributed/fleet/base/topology.py (HybridCommunicateGroup's debug line)",
             "the writer's global rank"),
    # detectron2's set-up (detectron2/engine/defaults.py default_setup: `logger.info("Rank of current process:
    # {}. World size: {}".format(rank, comm.get_world_size()))`), kept by its families (d2go's `Using {}
    # processes per machine. Rank of current process: {}`, virtex, detrex, Mask2Former, visual_prompt): the
    # writer's global rank (comm.get_rank(), dist.get_rank()) and the world's size
    RankWord(r"\bRank of current process: (?P<rank>\d+)(?:\. World(?: size)?: (?P<world>\d+))?",
             "detectron2 detectron2/engine/defaults.py default_setup (and its families' copies)",
             "the writer's global rank and the world's size"),
    # timm's train.py (`_logger.info('Training in distributed mode with multiple processes, 1 device per process.'
    # f'Process {args.rank}, total {args.world_size}, device {args.device}.')`, the two strings joined with no
    # space; older releases `1 GPU per process. Process %d, total %d.`), each process once, its global rank
    RankWord(r"\bTraining in distributed mode with multiple processes, 1 (?:device|GPU) per process\. ?"
             r"Process (?P<rank>\d+), total (?P<world>\d+)\b",
             "timm train.py (the distributed set-up line of each process)",
             "the writer's global rank and the world's size"),
    # Swin Transformer's main.py and the many repos built on it (`print(f"RANK and WORLD_SIZE in environ:
    # {rank}/{world_size}")`, rank = int(os.environ["RANK"]), the global rank torchrun sets)
    RankWord(r"\bRANK and WORLD_SIZE in environ: (?P<rank>\d+)/(?P<world>\d+)\b",
             "Swin-Transformer main.py (and its families' copies)",
             "the writer's global rank and the world's size"),
    # OpenCLIP's main.py and the repos built on it (`logging.info(f'Running in distributed mode with multiple
    # processes. Device: {args.device}.' f'Process (global: {args.rank}, local {args.local_rank}), total
    # {args.world_size}.')`, `Running in horovod mode ...` likewise): the global rank, beside the local one
    RankWord(r"\bProcess \(global: (?P<rank>\d+), local \d+\), total (?P<world>\d+)\b",
             "open_clip src/training/main.py (the distributed set-up line of each process)",
             "the writer's global rank and the world's size"),
    # BLIP's and LAVIS's set-up (lavis/common/dist_utils.py init_distributed_mode: `print("| distributed init
    # (rank {}, world {}): {}".format(args.rank, args.world_size, args.dist_url))`), DETR's shape with the world
    RankWord(r"\bdistributed init \(rank (?P<rank>\d+), world (?P<world>\d+)\)",
             "LAVIS lavis/common/dist_utils.py, BLIP utils.py (init_distributed_mode)",
             "the writer's global rank and the world's size"),
)
