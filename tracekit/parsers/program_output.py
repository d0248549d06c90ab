"""The fixed output of the programs around a training job, known by printing program (issue 31, round 3).

A log of a distributed job carries, besides NCCL's and torch's lines, what every program around it
prints as it starts, sets up and reports: HF Trainer and accelerate, DeepSpeed, Megatron-LM and NeMo,
Lightning, vLLM and SGLang, Ray, Slurm and its container plugins, MPI and UCX, the CUDA tools, the
package installers, a shell's trace. Each family below is written from the code that prints it (the
file is named over it), so it takes the whole format, not the lines one log happened to hold. None of
these lines makes a row: the lines that carry a fact (a step, an end, a world size, a version) are
decoded by parsers/trainer.py and parsers/environment.py. No error or failure line is here; a warning
only where its printing code shows it harmless (a compatibility note, a deprecation, an aggregation
note of a message shown once).

``BLOCKS`` are families known only together: a run of lines of one shape (table rows, a listing)
counts as known when one of its lines shows whose output it is. JSON dumps and model printouts are left
to the listing of unknown lines by block (``tracekit ingest --unknown``).
"""

from __future__ import annotations

import polars as pl

from tracekit.parsers import Parsed, any_of

FAMILIES: dict[str, list[str]] = {
    # transformers/trainer.py (the banner, log_metrics, save_model), modeling_utils.py (loading notices),
    # configuration_utils.py and tokenization_utils_base.py (saved/loaded files), training_args.py
    "hf-transformers": [
        r"^\*{5} [\w ]+ metrics \*{5}\s*$", r"^\s+(?:Batch size|Num examples|Num Epochs) = \d",
        r"^\s+(?:Continuing training from (?:checkpoint|epoch|global step)|Will skip the first \d+ epochs)",
        r"^(?:Saving model checkpoint to|Configuration saved in|Model weights saved in|tokenizer config file "
        r"saved in|Special tokens file saved in|chat template saved in|loading configuration file|loading "
        r"weights file|loading file \S+(?: from cache at)?|Generate config GenerationConfig \{|Instantiating "
        r"\w+ model under default dtype|Deleting older checkpoint \[) ",
        r"^(?:Model config \w+ \{|Generate config \w+ \{|PyTorch: setting up devices|"
        r"Using auto half precision backend|Special tokens have been added in the vocabulary, make sure)",
        r"^(?:All model checkpoint weights were used when initializing|"
        r"All the weights of \w+ were initialized from the model checkpoint|"
        r"If your task is similar to the task the model of the checkpoint was trained on|"
        r"Some weights of (?:the model checkpoint at )?\S+ were not (?:used|initialized)|"
        r"You should probably TRAIN this model on a down-stream task|"
        r"- This IS (?:NOT )?expected if you are initializing)",
        r"^The following columns in the (?:training|evaluation|test) set don't have a corresponding argument",
        r"^(?:Training/evaluation parameters|\w+Arguments)\($", r"^Loading checkpoint shards: ",
        r"^(?:\[(?:INFO|WARNING)\|\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\] [\w.]+:\d+ >> )",  # LLaMA-Factory's logger
        # PEFT's print_trainable_parameters (peft/peft_model.py)
        r"^trainable params: [\d,]+ \|\| all params: [\d,]+ \|\| trainable%: [\d.]+",
    ],
    # accelerate/state.py (PartialState.__repr__, printed by its examples) and commands/launch.py
    "accelerate": [
        r"^Distributed environment: \w+(?:  Backend: \w+)?\s*$", r"^(?:Num processes|Process index|Local "
        r"process index): \d+\s*$", r"^Device: (?:cuda|cpu|xpu|npu|mps|hpu)(?::\d+)?\s*$",
        r"^Mixed precision type: \w+\s*$", r"^The following values were not passed to `accelerate launch`",
        r"^\s+`--[\w\-]+` was set to a value of `", r"^\s+(?:More than one GPU was found, enabling multi-GPU "
        r"training|If this was unintended please pass in `--num_processes=1`)",
        r"^To avoid this warning pass in values for each of the problematic parameters or run `accelerate "
        r"config`",
    ],
    # deepspeed/env_report.py (ds_report), op_builder/builder.py (`print(f"{WARNING} ...")`: an op's
    # compatibility, two spaces after the tag), comm/comm.py log_summary, profiling/flops_profiler
    "deepspeed": [
        r"^\s*\[WARNING\]  [^\[\s]", r"^DeepSpeed C\+\+/CUDA extension op report\s*$",
        r"^(?:NOTE: Ops not installed will be just-in-time \(JIT\) compiled at|\s+runtime if needed\. Op "
        r"compatibility means that your system|\s+meet the required dependencies to JIT install the op\.)",
        r"^JIT compiled ops requires ninja\s*$", r"^DeepSpeed general environment info:\s*$",
        r"^Comm\. Op\s+Message Size\s+Count\s+Total Latency",
        r"^\s{8,}[\d.]+ [KMGT]?B\s+\d+(?:\s+[\d.]+){4}\s*$",
        r"^(?:all_reduce|inference_all_reduce|all_gather(?:_into_tensor|_base)?|reduce_scatter(?:_tensor|"
        r"_base)?|broadcast|all_to_all(?:_single)?|barrier|isend|irecv|send|recv|reduce)\s*$",
        r"^-+ DeepSpeed Flops Profiler -+\s*$", r"^Profile Summary at step \d+:",
        r"^-+ (?:Aggregated|Detailed) "
        r"Profile per GPU -+\s*$", r"^Top \d+ modules in terms of params, MACs or fwd latency",
        r"^(?:Notations:|data parallel size \(dp_size\), model parallel size|"
        r"number of parameters \(params\), number of multiply-accumulate|"
        r"number of floating-point operations \(flops\)|fwd latency \(forward propagation latency\)|"
        r"step \(weights update latency\)|Each module profile is listed after its name|"
        r"params, percentage of total params, MACs|Note: \d\. A module can have torch\.nn\.module)",
        r"^depth \d+:\s*$", r"^\s+(?:params|MACs|fwd latency)\s+- \{",
        r"^(?:Installed CUDA version [\d.]+ does not match the version torch was compiled with [\d.]+ but "
        r"since the APIs are compatible, accepting this combination|"
        r"Setting ds_accelerator to \w+ \((?:auto detect|override)\))",
    ],
    # Megatron-LM: training/initialize.py, training/training.py (print_rank_0, print_datetime), the
    # arguments table of arguments.py, datasets/*.py; older Megatron-DeepSpeed the same. The `> ` its
    # lines start with is taken off with the paste quotes (parsers/text.py).
    "megatron": [
        r"^\s*>?\s*(?:initializing torch distributed|initialized (?:tensor|pipeline|data|expert|context|"
        r"virtual pipeline)[\w ]*parallel with size \d+|initializing (?:tensor |"
        r"pipeline )?model parallel with size|setting random seeds to \d+|compiling dataset index builder|"
        r"done with dataset index builder|compiling and loading fused kernels|"
        r"done with compiling and loading fused kernels|building \w+ model|"
        r"number of parameters on (?:\(tensor, pipeline\) )?model parallel rank|learning rate decay style|"
        r"building train, validation, and test datasets|datasets target sizes|"
        r"finished creating \w+ datasets|loading (?:doc|sample|shuffle)-idx mapping from|"
        r"building dataset index|finished creating indexed dataset|dataset split:|"
        r"padded vocab \(size: \d+\)|setting tensorboard|using torch\.\w+ for parameters|"
        r"elapsed time to build and save (?:doc|sample|shuffle)-idx mapping|building indices for|"
        r"rank \d+ is using|setting number of micro-batches to|"
        r"will not load any checkpoints and will start from random|"
        r"loading checkpoint from .* at iteration \d+|successfully (?:saved|"
        r"loaded) checkpoint (?:from )?(?:at iteration|\S+ at iteration)|"
        r"saving checkpoint at iteration\s+\d+|done with setup \.\.\.|training \.\.\.|"
        r"setting training iterations to \d+|compiling and loading fused kernels)",
        r"^\s{3,}(?:reading sizes|reading pointers|reading document index|creating numpy buffer of mmap|"
        r"creating memory view of numpy buffer|loaded indexed file in|total number of (?:samples|epochs|"
        r"documents)|number of documents|(?:train|validation|valid|test):\s+\d+|document indices in \[)",
        r"^time to initialize megatron \(seconds\): ", r"^\[[a-z][\w ,]+\] datetime: \d{4}-\d\d-\d\d",
        r"^\(min, max\) time across ranks \(ms\):", r"^-+ (?:end of )?arguments -+\s*$",
        r"^\s*(?:validation|test) loss at (?:iteration \d+|the end of training for \w+ data) \|",
        r"^(?:\[Rank \d+\] )?\(after \d+ iterations\) memory \(MB\) \| allocated: ",
        r"^(?:Number of parameters in (?:transformer layers|embedding layers|most loaded shard) in billions|"
        r"Total number of parameters in billions|Theoretical memory footprints: )",
        r"^\s*WARNING: could not find the metadata file ",
        # the `name .... value` tables of Megatron's arguments and timers and of DeepSpeed's ds_report
        r"^\s*\w[\w\-/()+,.' ]{0,60} \.{3,}:? \S.*$",
    ],
    # a `[LEVEL    | logger.name]: ` header (NeMo 2 and nemo_run's Python logging) at its calm levels
    "logger-headers": [r"^\[(?:DEBUG|INFO|WARNING)\s*\| [\w.]+\]: "],
    # PyTorch's ImageNet example and the scripts built on it (examples/imagenet/main.py: `Use GPU: 0 for
    # training`, `=> creating model 'resnet50'`, the evaluation's `Test: [ 10/196]` meter and ` * Acc@1
    # 76.1`); fairseq before 0.7 (its epoch summaries `| epoch 010 | train loss 1.44 | ...`)
    "examples": [
        r"^Use GPU: \d+ for training\s*$",
        r"^=> (?:creating model|using pre-trained model|loading checkpoint|"
        r"loaded checkpoint|no checkpoint found) ", r"^Test: \[\s*\d+/\d+\]\s+Time\b",
        r"^ \* Acc@1 [\d.]+ Acc@5 ",
        r"^\| epoch \d+ \| (?:train loss [\d.]+|valid on '\w+' subset)",
    ],
    # torch.distributed.elastic's own logger before torch 2.2 (`[%(asctime)s] %(name)s: [%(levelname)s] `:
    # torch/distributed/elastic/utils/logging.py) at its calm levels
    "torch-elastic": [r"^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d+\] [\w.]+: \[(?:DEBUG|INFO|WARNING)\] "],
    # NVIDIA apex's amp set-up (apex/amp/frontend.py: `Selected optimization level O1: ...`, the options table
    # `opt_level              : O1`) and its loss scaler's overflow notice (apex/amp/scaler.py)
    "apex": [
        r"^(?:Selected optimization level O\d|Defaults for this optimization level are:|"
        r"Processing user overrides \(additional kwargs that are not None\)\.\.\.|"
        r"After processing overrides, optimization options are:)",
        r"^(?:enabled|opt_level|cast_model_type|patch_torch_functions|keep_batchnorm_fp32|master_weights|"
        r"loss_scale)\s+: \S",
        r"^Gradient overflow\.\s+Skipping step, loss scaler \d+ reducing loss scale to ",
    ],
    # NeMo's logger (nemo/utils/formatters/base.py: `[NeMo %(levelname)1.1s %(asctime)s
    # %(module)s:%(lineno)d]`), its INFO, WARNING and DEBUG lines
    "nemo": [r"^\[NeMo [IWD] \d{4}-\d\d-\d\d \d\d:\d\d:\d\d \S+:\d+\]"],
    # lightning/pytorch: trainer/connectors/accelerator_connector.py, utilities/seed.py,
    # callbacks/model_summary (the table and its totals), trainer/connectors/checkpoint_connector.py,
    # accelerators/cuda.py
    "lightning": [
        r"^(?:\[rank: \d+\] )?(?:Global )?[Ss]eed set to \d+\s*$",
        r"^Using (?:16bit|bfloat16|16-mixed|bf16-mixed|"
        r"native 16bit)[\w ]*(?:Automatic Mixed Precision \(AMP\)|precision\.?)\s*$",
        r"^You are using a CUDA device \('[^']+'\) that has Tensor Cores\. To properly utilize them",
        r"^(?:Missing logger folder: |Restoring states from the checkpoint path at |"
        r"Restored all states from the checkpoint at |"
        r"Trainer already configured with model summary callbacks)",
        r"^\s*\|\s*Name\s*\|\s*Type\s*\|\s*Params",
        r"^\s*\d+\s*\|\s*[\w.]+\s*\|\s*[\w.]+\s*\|\s*[\d.]+\s*[KMBT]?\s*(?:\||$)",
        r"^[\d.]+\s*[KMBT]?\s+(?:Trainable params|Non-trainable params|Total params|"
        r"Total estimated model params size \(MB\)|Modules in (?:train|eval) mode)\s*$",
    ],
    # vLLM's logger (vllm/logger.py: `%(levelname)s %(asctime)s [%(filename)s:%(lineno)d] %(message)s`, date
    # `%m-%d %H:%M:%S`, older without the brackets) under its worker's `(VllmWorker rank=N pid=P) `; SGLang's
    # (sglang/srt/utils.py configure_logger: `[%(asctime)s{prefix}] %(message)s`, no level, so only its
    # fixed progress messages), and uvicorn's `INFO:     ` under both servers
    "vllm-sglang": [
        r"^(?:\(\w+(?: \w+=\S+)*\) )?(?:INFO|DEBUG|"
        r"WARNING) \d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)? \[?[\w.]+:\d+\]? ",
        r"^(?:\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?: [A-Z]{2}\d+)*\] )?(?:Prefill batch\. |Decode batch\. |"
        r"Load weight (?:begin|end)\. |Capture cuda graph (?:begin|end)\. |Init torch distributed (?:begin|"
        r"ends)\. |KV Cache is allocated\. |Memory pool end\. |max_total_num_tokens=|server_args=|"
        r"Using [\w ]+ as attention backend|The server is fired up and ready to roll!|INFO: |"
        r"Overlap scheduler is disabled|Registering \d+ cuda graph)",
        # the weights' progress bar (vllm/model_executor/model_loader/weight_utils.py _BAR_FORMAT, SGLang's
        # copy)
        r"^[\w ]+: +\d+% Completed \| \d+/\d+ \[[\d:]+<[\d:?]+, +[\d.?]+\w*/s\]",
        r"^(?:INFO|DEBUG|WARNING):\s{2,}(?:Started server process|Waiting for application (?:startup|"
        r"shutdown)|Application (?:startup|shutdown) complete|Uvicorn running on|Shutting down|"
        r"Finished server process)",
    ],
    # verl's worker and trainer set-up prints (verl/workers/fsdp_workers.py, utils/model.py print_model_size,
    # utils/checkpoint/checkpoint_manager.py, trainer/ppo/ray_trainer.py)
    "verl": [
        r"^\w+ contains [\d.]+[KMBT]? parameters\s*$",
        r"^Total (?:training )?steps: \d+(?:, num_warmup_steps: \d+)?\s*$",
        r"^(?:Actor|Critic|Ref|Rollout) use_(?:remove_padding|fused_kernels|dynamic_bsz)=\w+\s*$",
        r"^wrap_policy: ",
        r"^Monkey patch \w+ in [\w.]+", r"^Training from scratch\s*$",
        r"^Checkpoint tracker file does not exist: ",
    ],
    # Ray: its Python logger (ray/_private/ray_constants.py LOGGER_FORMAT `%(asctime)s\t%(levelname)s
    # %(filename)s:%(lineno)s -- %(message)s`), `ray start` (scripts/scripts.py), `ray job submit`
    # (dashboard/modules/job/cli.py), `ray status` (autoscaler/_private/util.py format_info_string)
    "ray": [
        r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d+\s+(?:INFO|DEBUG|WARNING) [\w.]+:\d+ -- ",
        r"^(?:Local node IP: \S+|Ray runtime started\.|Next steps|Usage stats collection is (?:enabled|"
        r"disabled)|Job submission server address: \S+|"
        r"Tailing logs until the job exits \(disable with --no-wait\):)",
        r"^-*\s*Job '[\w\-]+' submitted successfully", r"^\s+To (?:add another node to this Ray cluster, run|"
            r"connect to this Ray cluster:|submit a Ray job using the Ray Jobs CLI:|"
            r"terminate the Ray runtime, run|view the status of the cluster, use|"
            r"monitor and debug Ray, view the dashboard at)",
        r"^\s+(?:ray (?:start --address=|stop|status|job (?:logs|status|stop) )|import ray$|ray\.init\(\)$|"
        r"(?:Query the (?:logs|status) of the job|Request the job to be stopped):$|"
        r"See https://docs\.ray\.io/|for more information on submitting Ray jobs|"
        r"If connection to the dashboard fails, check your firewall)",
        # its C++ components' log (src/ray/util/logging.cc: `[time L pid tid] (component) file.cc:N: `) at
        # the levels I, D and W
        r"^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d+ [IDW] \d+ \d+\] (?:\([\w\-]+\) )?\w+\.cc:\d+: ",
        r"^=+ Autoscaler status: ",
        r"^(?:Node status|Resources|Active:|Idle:|Pending:|Recent failures:|Usage:|"
        r"Demands:|Total Usage:|Total Demands:|Pending Demands:)\s*$",
        r"^\s\((?:no pending nodes|no failures|no resource demands)\)\s*$", r"^\s\d+ node_[0-9a-f]{8,}\s*$",
        r"^\s[\d.]+[KMGT]?i?B?/[\d.]+[KMGT]?i?B? [\w:\-]+\s*(?:\(.*\))?$",
    ],
    # Slurm's client notices (src/srun/, src/salloc/, src/sbatch/), enroot (src/*.sh `common::log INFO`) and
    # mksquashfs under pyxis
    "slurm": [
        r"^(?:srun|salloc|sbatch): (?:job \d+ (?:queued and waiting for resources|"
        r"has been allocated resources)|Granted job allocation \d+|Waiting for resource configuration|"
        r"Nodes \S+ are ready for job|Relinquishing job allocation \d+|Step created for (?:StepId=)?\S+|"
        r"Job \d+ step creation (?:temporarily|still) disabled, retrying|Pending job allocation \d+|"
        r"Submitted batch job \d+)",
        r"^Submitted batch job \d+\s*$", r"^\[INFO\] [A-Z]", r"^Parallel mksquashfs: Using \d+ processors",
        r"^Creating [\d.]+ filesystem on \S+, block size \d+\.", r"^\[[=\\|/\- ]+\]\s+\d+/\d+\s+\d+%\s*$",
    ],
    # Open MPI's help aggregation (opal/util/show_help.c), its openib-to-UCX note (btl_openib help text),
    # --display-map (orte/util/dash_host), --report-bindings; Intel MPI's `MPI startup():` (I_MPI_DEBUG);
    # UCX's log (ucs/debug/log_def.h: `[time] [host:pid:thread] file:line UCX LEVEL msg`) at its quiet
    # levels; libfabric's log (src/log.c: `libfabric:pid:time:prov:subsys:func():line<level> `) the same
    "mpi-ucx": [
        r"^\[[\w.\-]+:\d+\] \d+ more process(?:es)? ha(?:s|ve) sent help message ",
        r"^\[[\w.\-]+:\d+\] Set MCA parameter \"orte_base_help_aggregate\" to 0 to see all help",
        r"^(?:By default, for Open MPI 4\.0 and later, infiniband ports on a device|"
        r"are not used by default\.\s+The intent is to use UCX for these devices\.|"
        r"You can override this policy by setting the btl_openib_allow_ib MCA parameter|to true\.\s*$)",
        r"^\s+Local (?:device|adapter|port):\s", r"^\s*Data for JOB \[\d+,\d+\] offset \d+",
        r"^\s*=+\s+JOB MAP\s+=+\s*$", r"^\s*Data for node: \S+\s+Num slots: \d+", r"^\s+Process OMPI jobid: ",
        r"^\[[\w.\-]+:\d+\] MCW rank \d+ (?:bound to|is not bound)", r"^MPI startup\(\): ",
        r"^\[\d+\.\d+\] \[[\w.\-]+:\s*\d+\s*:\s*\d+\]\s+\S+:\d+\s+UCX\s+(?:INFO|DIAG|DEBUG|TRACE\w*|PRINT)\s",
        r"^libfabric:\d+:\d+:[\w:;]*:[\w:]*\w+\(\):\d+<(?:info|debug|trace)> ",
    ],
    # nvidia-smi's header (the table itself is a block, below), `nvidia-smi topo -m` and its legend, torch's
    # collect_env (torch/utils/collect_env.py env_info_fmt) with lscpu's lines under its `CPU:`, vLLM's
    # collect_env additions
    "cuda-tools": [
        r"^\s+GPU0(?:\s+GPU\d+)*(?:\s+(?:NIC\d+|mlx5_\d+))*\s+CPU Affinity", r"^\s*Legend:\s*$",
        r"^(?:GPU|NIC)\d+\s+(?:X|NV\d+|SYS|NODE|PHB|PXB|PIX)\s", r"^\s+(?:X|SYS|NODE|PHB|PXB|PIX|NV#)\s+= ",
        r"^\s*NIC Legend:\s*$", r"^\s+NIC\d+: \w+\s*$",
        r"^(?:PyTorch version|Is debug build|CUDA used to build PyTorch|ROCM used to build PyTorch|OS|"
        r"GCC version|Clang version|CMake version|Libc version|Python version|Python platform|"
        r"Is CUDA available|CUDA runtime version|CUDA_MODULE_LOADING set to|GPU models and configuration|"
        r"Nvidia driver version|cuDNN version|HIP runtime version|MIOpen runtime version|"
        r"Is XNNPACK available|Is XPU available|Caching allocator config|Versions of relevant libraries|"
        r"vLLM Version|vLLM Build Flags|GPU Topology|ROCM Version|Neuron SDK Version|Aphrodite Version|"
        r"CUDA Archs):(?: .*)?$",
        r"^\[(?:pip3?|conda)\] [\w.\-]+(?:==| +)\S+",
        r"^GPU \d+: .*(?:NVIDIA|Tesla|GeForce|Quadro|AMD|Radeon)",
        r"^(?:Architecture|CPU op-mode\(s\)|Byte Order|Address sizes|CPU\(s\)|On-line CPU\(s\) list|"
        r"Vendor ID|Model name|CPU family|Model|Thread\(s\) per core|Core\(s\) per (?:socket|cluster)|"
        r"Socket\(s\)|Stepping|BogoMIPS|Flags|Virtualization|Hypervisor vendor|Virtualization type|"
        r"L[123][di]? cache|NUMA node\(s\)|NUMA node\d+ CPU\(s\)|Vulnerability [\w ]+|CPU (?:max|min) MHz|"
        r"CPU MHz|Frequency boost|Caches \(sum of all\)|NUMA|Vulnerabilities|BIOS Vendor ID|BIOS Model name|"
        r"CPU scaling MHz|Boost|Frequency boost):\s+\S.*$",
    ],
    # pip (src/pip/_internal/...: install, download, build, the root-user note), conda's solver
    # (conda/cli/install.py, core/link.py), docker pull, TensorBoard's server, wandb without its `wandb:`
    "installers": [
        r"^(?:Requirement already satisfied: |Collecting \S+|Installing collected packages: |Successfully "
        r"(?:installed|built|uninstalled) |Looking in (?:indexes|links): |Building wheels? for |Obtaining "
        r"(?:file|git)|Attempting uninstall: |Stored in directory: |Using cached \S+|Downloading \S+\.(?:whl|"
        r"tar\.gz|zip)\b|Created wheel for |Preparing metadata|Installing build dependencies|Getting "
        r"requirements to build|Found existing installation: |Uninstalling \S+:|Processing \S+|Defaulting to "
        r"user installation)",
        r"^\s+(?:Downloading \S+\.(?:whl|tar\.gz|zip)|Building wheel for \S+ \(|Created wheel for |"
        r"Stored in directory: |Preparing metadata \(|Installing build dependencies \.\.\.|"
        r"Getting requirements to build |Found existing installation: |Uninstalling \S+:|"
        r"Successfully uninstalled |Using cached |Running setup\.py (?:develop|install) for )",
        r"^WARNING: Running pip as the 'root' user can result in broken permissions",
        r"^\[notice\] (?:A new release of pip is available|To update, run: )",
        r"^(?:Collecting package metadata \(\w+\.json\)|Solving environment|Preparing transaction|Verifying "
        r"transaction|Executing transaction|Downloading and Extracting Packages|Retrieving notices): ",
        r"^## Package Plan ##\s*$", r"^\s+environment location: ", r"^\s+added / updated specs:\s*$",
        r"^(?:Unable to find image '\S+' locally|[\w.\-]+: Pulling from \S+|[0-9a-f]{12}: (?:Pull complete|"
        r"Already exists|Waiting|Verifying Checksum|Download complete|Pulling fs layer|Extracting|"
        r"Downloading)|Digest: sha256:[0-9a-f]+|Status: (?:Downloaded newer image|Image is up to date) for )",
        r"^(?:TensorFlow installation not found - running with reduced feature set\.|Serving TensorBoard on "
        r"|TensorBoard [\d.]+ at https?://)",
    ],
    # a Python warning's fixed parts: the `warnings.warn(` source line Python prints under it, torch's
    # multi-line notices (distributed/launch.py's deprecation, utils/cpp_extension.py's compiler check)
    "python-warnings": [
        r"^\s+(?:warnings\.warn|warn|logger\.warning|logging\.warning|_warn_once|rank_zero_warn)\($",
        r"^\s+(?:warnings\.warn|rank_zero_warn)\([\w.\"'(]",
        r"^The module torch\.distributed\.launch is deprecated",
        r"^and will be removed in future\. Use torchrun\.",
        r"^Note that --use[-_]env is set by default in torchrun",
        r"^If your script expects `--local[-_]rank` argument to be set, please",
        r"^change it to read from `os\.environ\['LOCAL_RANK'\]` instead\. See",
        r"^https://pytorch\.org/docs/stable/distributed\.html#launch-utility for",
        r"^further instructions\s*$",
        r"^\s+!! WARNING !!\s*$", r"^!{20,}\s*$",
        r"^Your compiler \(\S+\) is not compatible with the compiler "
        r"Pytorch was", r"^built with for this platform, which is \S+ on \w+\. Please",
        r"^use \S+ to to compile your extension\. Alternatively, you may",
        r"^compile PyTorch from source using "
        r"\S+, and then you can also use", r"^\S+ to compile your extension\.\s*$",
        r"^See https://github\.com/pytorch/pytorch/blob/master/CONTRIBUTING\.md for help",
        r"^with compiling PyTorch from source\.\s*$",
    ],
    # a shell's own output: `set -x` tracing (bash's PS4, `+` once per level of nesting), `env` / `export`
    # dumps of settings
    "shell": [r"^\++ \S", r"^(?:export |declare -x )?[A-Z][A-Z0-9_]*=(?:'[^']*'|\"[^\"]*\"|\S*)\s*$"],
    # kubectl's tables and `describe` events at their calm reasons (kubectl/pkg/describe), its apply notices
    "kubernetes": [
        r"^NAME\s+READY\s+STATUS\s+RESTARTS\s+AGE", r"^[\w.\-]+\s+\d+/\d+\s+(?:Running|Completed|Pending|"
        r"ContainerCreating|Init:\d+/\d+)\s+\d+(?: \([\w ]+ ago\))?\s+\w+",
        r"^\s*Type\s+Reason\s+Age\s+From\s+Message\s*$", r"^\s*----\s+------\s+----\s+----\s+-------\s*$",
        r"^\s*Normal\s+(?:Scheduled|Pulling|Pulled|Created|Started|SuccessfulCreate|Killing)\s",
        r"^(?:pod|job|service|deployment|configmap|pytorchjob|mpijob|rayjob|raycluster)[\w.]*/\S+ "
        r"(?:created|configured|unchanged|deleted)\s*$",
    ],
    # (s34) pycocotools' COCO evaluation (pycocotools/coco.py loadRes/createIndex, cocoeval.py evaluate/accumulate/
    # summarize: `Loading and preparing results...`, `DONE (t=0.73s)`, `Evaluate annotation type *bbox*`, its
    # `iStr = ' {:<18} {} @[ IoU={:<9} | area={:>6s} | maxDets={:>3d} ] = {:0.3f}'` lines): an evaluation's output
    "pycocotools": [
        r"^(?:creating index\.\.\.|index created!|Loading and preparing results\.\.\.|Running per image evaluation"
        r"\.\.\.|Accumulating evaluation results\.\.\.|DONE \(t=\d+\.\d+s\)\.?|Evaluate annotation type \*\w+\*"
        r"|GT annotations already exist!|loading annotations into memory\.\.\.|Done \(t=\d+\.\d+s\))\s*$",
        r"^\W?\s*Average (?:Precision|Recall)\s+\((?:AP|AR)\) @\[ IoU=[\d.:]+\s*\| area=\s*\w+ \| maxDets=\s*\d+ \] = "
        r"-?\d+\.\d+\s*$",
    ],
    # stack frames around a failure that is itself decoded elsewhere: glog's failure signal handler
    # (glog/src/signalhandler.cc: `PC: @ 0x... (unknown)`, `    @ 0x... size symbol`, `@ ... and at least N
    # more frames`), rich's traceback panel (rich/traceback.py: `path:lineno in name`, its borders taken off)
    "stack-frames": [
        r"^PC: @\s+0x[0-9a-fA-F]+ ", r"^\s+@\s+0x[0-9a-fA-F]+\s",
        r"^\s*@ \.\.\. and at least \d+ more frames",
        r"^\S+:\d+ in [<>\w.]+\s*$", r"^(?:❱ )?\s*\d+ │",
    ],
}

#: families known only as a run of lines: (the shape every line of the run has, a line that shows whose
#: output the run is); a run holding no such line stays unknown
BLOCKS = [
    # DeepSpeed's pipeline partition (runtime/pipe/module.py _partition_layers: `stage=0 layers=12`, then
    # `    0: EmbeddingPipe` a layer, `  loss: CrossEntropyLoss`)
    (r"^stage=\d+ layers=\d+\s*$|^\s+\d+: [\w.<>]+\s*$|^\s+loss: \w+\s*$", r"^stage=\d+ layers=\d+"),
    # HF Trainer's log_metrics (trainer_pt_utils.py: `***** train metrics *****`, then `  key = value`
    # aligned)
    (r"^\s+[\w/.\-]+\s+=\s+\S+\s*$|^\*{5} [\w ]+ metrics \*{5}\s*$", r"^\*{5} [\w ]+ metrics \*{5}"),
    # nvidia-smi's table (nvidia-smi: `| NVIDIA-SMI 535.104.05  Driver Version: ...` over `|`-framed rows)
    (r"^[|+]", r"NVIDIA-SMI \S+|GPU\s+Name\s+Persistence-M|GPU\s+GI\s+CI\s+PID"),
]
#: lines of a block that stay unknown: what an error carries
BLOCK_ERRORS = r"(?i)error|exception|traceback|fail|\"message\""


def parse(lines: pl.DataFrame) -> Parsed:
    if not lines.height:
        return Parsed("program-output")
    t = pl.col("text")
    patterns = [p for family in FAMILIES.values() for p in family]
    # (a few dozen at a time: one regex of them all grows past what the regex engine runs fast)
    known = pl.any_horizontal([t.str.contains(any_of(*patterns[i:i + 24]))
                               for i in range(0, len(patterns), 24)])
    df = lines.select("file", "line", t, known.alias("_known"))
    found = [df.filter(pl.col("_known")).select("file", "line")]
    for shape, marker in BLOCKS:
        if df.select(t.str.contains(marker).any()).item():  # (the runs are found only where a marker is)
            block = _block(shape, marker) & ~t.str.contains(BLOCK_ERRORS)
            found.append(df.filter(block).select("file", "line"))
    found.append(_warning_body(df))
    said = df.filter(t.str.strip_chars() != "")
    claimed = pl.concat(found).unique().join(said, on=["file", "line"], how="semi")
    return Parsed("program-output", {}, claimed.sort("file", "line"))


def _block(shape: str, marker: str) -> pl.Expr:
    """The lines of each run of consecutive lines of ``shape`` (in one file) that holds a ``marker`` line."""
    t = pl.col("text")
    fits = t.str.contains(shape).fill_null(False)
    run = (fits != fits.shift(1).over("file")).fill_null(True).cum_sum().over("file")
    return fits & t.str.contains(marker).fill_null(False).any().over("file", run)


#: Python's warnings.formatwarning: `path.py:12: UserWarning: message` (the message maybe over lines),
#: then its source line indented two spaces; the message's lines in between are the warning's
WARNED = r"^\S+\.py:\d+: \w*Warning: "
SOURCE = r"^  \S"
RECORD = (r"^(?:\[|\(|\S+\.py:\d+: |Traceback|\s+File \"|[\w.\-]+:\d+:\d+ \[\d+\]|\d{4}-\d\d-\d\d"
          r"|[IWEF]\d{4} )")
MAX_BODY = 12


def _warning_body(df: pl.DataFrame) -> pl.DataFrame:
    """``file, line`` of the lines between a Python warning's first line and its source line (at most
    ``MAX_BODY`` lines apart, none of them the start of a record of its own). Only the lines a few after
    a warning are looked at."""
    t, n = pl.col("text"), pl.col("line")
    heads = df.filter(t.str.contains("Warning: ", literal=True) & t.str.contains(WARNED)).select("file",
    "line")
    if not heads.height:
        return heads
    near = heads.select("file", pl.int_ranges(n, n + MAX_BODY + 1).alias("line")).explode("line").unique()
    df = df.join(near, on=["file", "line"], how="semi").sort("file", "line")
    warned = t.str.contains(WARNED).fill_null(False)
    source = t.str.contains(SOURCE).fill_null(False)
    since = pl.when(warned).then(n).forward_fill().over("file")
    upto = pl.when(source).then(n).backward_fill().over("file")
    last_source = pl.when(source).then(n).shift(1).forward_fill().over("file")
    head = t.str.contains(RECORD).fill_null(False)
    # a record head between the warning and a line ends the body
    heads_since = pl.when(head & ~warned).then(n).forward_fill().over("file")
    body = ((since.is_not_null() & upto.is_not_null() & (upto - since <= MAX_BODY) & (n > since) & (n < upto)
             & (last_source.is_null() | (last_source < since)) & ~head
             & (heads_since.is_null() | (heads_since < since))).fill_null(False))
    return df.filter(body).select("file", "line")
