//! The reader's vocabularies as data: the training-setting names of the frameworks
//! ([`NAMES`]), the launchers ([`LAUNCHERS`]) and their flags ([`LAUNCHER_FLAGS`]), the
//! resource requests of schedulers ([`SLURM_OPTIONS`], [`SLURM_COUNTS`], [`PBS_OPTIONS`],
//! [`PBS_RESOURCES`], [`SUBMITIT_OPTIONS`]), the keys a config section names by where they
//! stand ([`SECTION_KEYS`]), and the word lists the readers consult. Each row of the name and
//! launcher tables names the setup of `tests/data/knowledge` that shows it (a test checks
//! that it does); a rule for a new framework is a new row.

use crate::derive::Counted;
use crate::facts::Field;

/// How the value of a scheduler's resource request is read (`crate::scheduler::request`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Request {
    /// The text as written (a job name).
    Text,
    /// A whole number.
    Count,
    /// A whole number or a range `2-4`: the range's minimum, with less confidence.
    CountOrRange,
    /// The number after the last `:` (`a100:4`).
    TypedCount,
    /// The GPU count of a generic-resource list (`gpu:a100:4,shard:2`).
    Gres,
    /// Memory (`64G`, `500M`, plain megabytes) in MiB.
    Memory,
    /// Memory in MiB, where 0 (Slurm's "all of the node's memory") is no number.
    MemoryNotZero,
    /// A time (`1-12:00:00`, `90`, `hh:mm:ss`) in seconds.
    Time,
}

/// Slurm options (`#SBATCH` lines, `srun` and `sbatch` words; short and long names) -> the
/// field each requests and how its value reads.
pub const SLURM_OPTIONS: &[(&[&str], Field, Request)] = &[
    (&["J", "job-name"], Field::JobName, Request::Text),
    (&["N", "nodes"], Field::Nodes, Request::CountOrRange),
    (&["gres"], Field::GpusPerNode, Request::Gres),
    (&["gpus-per-node"], Field::GpusPerNode, Request::TypedCount),
    (&["c", "cpus-per-task"], Field::CpusPerTask, Request::Count),
    (&["mem"], Field::MemoryMib, Request::MemoryNotZero),
    (&["t", "time"], Field::RequestedTimeS, Request::Time),
];

/// Slurm options that give a fact only with another ([`crate::derive::request`]): a GPU
/// total (`--gpus 16`) with the node count, tasks per node with GPUs per task, memory per CPU
/// with the CPUs of a node.
pub const SLURM_COUNTS: &[(&[&str], Counted, Request)] = &[
    (&["G", "gpus"], Counted::GpusTotal, Request::TypedCount),
    (&["ntasks-per-node"], Counted::TasksPerNode, Request::Count),
    (
        &["gpus-per-task"],
        Counted::GpusPerTask,
        Request::TypedCount,
    ),
    (
        &["mem-per-cpu"],
        Counted::MemPerCpuMib,
        Request::MemoryNotZero,
    ),
];

/// PBS options other than `-l` (`#PBS -N name`) -> field and reading.
pub const PBS_OPTIONS: &[(&[&str], Field, Request)] = &[(&["N"], Field::JobName, Request::Text)];

/// PBS `-l` resources (`select=2:ngpus=4`, `walltime=...`) -> field and reading; PBS counts
/// GPUs per chunk, that is per node.
pub const PBS_RESOURCES: &[(&[&str], Field, Request)] = &[
    (&["select", "nodes"], Field::Nodes, Request::Count),
    (&["ngpus", "gpus"], Field::GpusPerNode, Request::Count),
    (&["ncpus", "ppn"], Field::CpusPerTask, Request::Count),
    (&["mem"], Field::MemoryMib, Request::Memory),
    (&["walltime"], Field::RequestedTimeS, Request::Time),
];

/// Keywords of submitit's `update_parameters` and keys of Hydra's Slurm launcher
/// (`hydra.launcher`), without the `slurm_` prefix of `AutoExecutor` -> the Slurm option each
/// stands for ([`SLURM_OPTIONS`], [`SLURM_COUNTS`]). `timeout_min` is minutes, as Slurm's
/// `--time=600` is; `mem_gb` gigabytes.
pub const SUBMITIT_OPTIONS: &[(&str, &str)] = &[
    ("nodes", "nodes"),
    ("gpus_per_node", "gpus-per-node"),
    ("tasks_per_node", "ntasks-per-node"),
    ("ntasks_per_node", "ntasks-per-node"),
    ("gpus_per_task", "gpus-per-task"),
    ("cpus_per_task", "cpus-per-task"),
    ("timeout_min", "time"),
    ("time", "time"),
    ("mem_gb", "mem"),
    ("mem", "mem"),
    ("gres", "gres"),
    ("job_name", "job-name"),
    ("name", "job-name"),
];

/// Keys of a configuration section that name a setting by where they stand: (sections, keys,
/// the setting's name in [`NAMES`]). DeepSpeed's `"bf16": {"enabled": true}` is the switch
/// `bf16: true`; a `[model]` section's `name` (torchtitan) or `arch` (LAVIS) is the model, and
/// so is detectron2's `MODEL.WEIGHTS` (the checkpoint training starts from); `DATASETS.TRAIN`
/// (detectron2) and `data: {train: ...}` are the training data (their `test` and `valid`
/// siblings are evaluation).
pub const SECTION_KEYS: &[(&[&str], &[&str], &str)] = &[
    (&["bf16"], &["enabled"], "bf16"),
    (&["fp16"], &["enabled"], "fp16"),
    (&["model"], &["name", "arch", "weights"], "model"),
    (&["datasets", "data", "dataset"], &["train"], "dataset"),
];

/// Training-setting names of the frameworks (without dashes, `-` read as `_`) -> (field,
/// confidence, the setup of `tests/data/knowledge` that shows the name, or where it is
/// documented). Names that do not say whether a batch is per device or global read as per
/// device, with less confidence.
pub const NAMES: &[(&str, Field, f64, &str)] = &[
    ("model_name_or_path", Field::Model, 1.0, "setups/alignment-handbook-smollm-sft"),
    ("pretrained_model_name_or_path", Field::Model, 1.0, "heldout/llm-foundry-mpt-7b-dolly-sft"),
    ("model_name", Field::Model, 1.0, "setups/litgpt-pretrain-tinyllama"),
    ("model_id", Field::Model, 1.0, "heldout/trl-sft-tiny-aya-tool-calling"),
    ("base_model", Field::Model, 1.0, "setups/axolotl-llama3-lora-1b"),
    ("pretrain", Field::Model, 1.0, "setups/litgpt-pretrain-tinyllama"),
    ("pretrained_path", Field::Model, 0.9, "heldout3/lit-llama-adapter-alpaca"),
    ("model_path", Field::Model, 0.9, "heldout5/minicpm-2b-sft-deepspeed-include"),
    ("base_model_name", Field::Model, 1.0, "heldout6/cosmopedia-edu-classifier-slurm"),
    // SwissArmyTransformer (CogVLM): `--from_pretrained cogvlm-base-490`.
    ("from_pretrained", Field::Model, 0.9, "heldout/stanford-alpaca-train-defaults"),
    // A model built from an architecture file (GaLore's `--model_config configs/llama_7b.json`).
    ("model_config", Field::Model, 0.7, "setups/litgpt-pretrain-tinyllama"),
    // The language model a vision-language model is built on (OpenFlamingo's `--lm_path`).
    ("lm_path", Field::Model, 0.8, "heldout5/open-flamingo-3b-mpt1b-srun"),
    ("model", Field::Model, 0.9, "setups/alignment-handbook-smollm-sft"),
    // verl's SFT trainer: `model.partial_pretrain=org/name`.
    ("partial_pretrain", Field::Model, 0.9, "heldout10/tinyzero-deepseek-coder-6-7b-sft"),
    (
        "per_device_train_batch_size",
        Field::BatchSizePerDevice,
        1.0, "setups/alignment-handbook-smollm-sft"),
    ("per_gpu_train_batch_size", Field::BatchSizePerDevice, 1.0, "documented: transformers TrainingArguments (the older name of per_device_train_batch_size)"),
    ("batch_size_per_gpu", Field::BatchSizePerDevice, 1.0, "heldout4/open-instruct-tulu2-7b-accelerate"),
    // RWKV-LM's `--micro_bsz`, `--ctx_len`, `--lr_init`, `--data_file`.
    ("micro_bsz", Field::BatchSizePerDevice, 1.0, "heldout6/rwkv-v7-pile-l12-d768"),
    (
        "train_micro_batch_size_per_gpu",
        Field::BatchSizePerDevice,
        1.0, "setups/deepspeed-pipeline-parallel"),
    ("micro_batch_size", Field::BatchSizePerDevice, 1.0, "setups/axolotl-llama3-lora-1b"),
    ("micro_train_batch_size", Field::BatchSizePerDevice, 1.0, "setups/openrlhf-dpo-torchrun"),
    ("local_batch_size", Field::BatchSizePerDevice, 1.0, "heldout/torchtitan-llama3-8b-multinode"),
    (
        "device_train_microbatch_size",
        Field::BatchSizePerDevice,
        1.0, "heldout/llm-foundry-mpt-7b-dolly-sft"),
    ("train_micro_batch_size", Field::BatchSizePerDevice, 1.0, "documented: DeepSpeed configs (train_micro_batch_size_per_gpu, shortened by wrappers)"),
    ("batch_size", Field::BatchSizePerDevice, 0.7, "setups/nanogpt-shakespeare-char"),
    // LAVIS's `run.batch_size_train`.
    ("batch_size_train", Field::BatchSizePerDevice, 0.9, "heldout4/lavis-blip2-opt-caption-coco"),
    ("global_batch_size", Field::GlobalBatchSize, 1.0, "setups/litgpt-pretrain-tinyllama"),
    ("global_train_batch_size", Field::GlobalBatchSize, 1.0, "heldout/llm-foundry-mpt-7b-dolly-sft"),
    ("total_batch_size", Field::GlobalBatchSize, 1.0, "heldout4/diffusers-pixart-controlnet"),
    // detectron2's `SOLVER.IMS_PER_BATCH`: images per step over all GPUs.
    ("ims_per_batch", Field::GlobalBatchSize, 0.8, "heldout5/detectron2-faster-rcnn-r50-voc"),
    // DeepSpeed's meaning: micro batch x accumulation x data-parallel ranks.
    ("train_batch_size", Field::GlobalBatchSize, 0.8, "setups/deepspeed-pipeline-parallel"),
    (
        "gradient_accumulation_steps",
        Field::GradientAccumulation,
        1.0, "setups/alignment-handbook-smollm-sft"),
    ("accumulate_grad_batches", Field::GradientAccumulation, 1.0, "heldout/nemo-megatron-llama-hydra"),
    // nanotron, Composer, open_clip, fairseq.
    (
        "batch_accumulation_per_replica",
        Field::GradientAccumulation,
        1.0, "heldout3/smollm3-stage1-nanotron"),
    ("grad_accum", Field::GradientAccumulation, 1.0, "heldout/nanogpt-finetune-shakespeare"),
    ("accum_freq", Field::GradientAccumulation, 1.0, "documented: open_clip --accum-freq"),
    ("update_freq", Field::GradientAccumulation, 1.0, "heldout4/fairseq-data2vec-text-submitit"),
    ("accum_grad_iters", Field::GradientAccumulation, 1.0, "heldout4/lavis-blip2-opt-caption-coco"),
    ("grad_acc_steps", Field::GradientAccumulation, 1.0, "setups/alignment-handbook-smollm-sft"),
    ("accumulation_steps", Field::GradientAccumulation, 1.0, "heldout7/internimage-t-in1k-srun"),
    ("max_seq_length", Field::SequenceLength, 1.0, "setups/litgpt-pretrain-tinyllama"),
    ("max_seq_len", Field::SequenceLength, 1.0, "setups/deepspeed-chat-opt-1.3b"),
    ("max_len", Field::SequenceLength, 0.9, "setups/openrlhf-dpo-torchrun"),
    ("seq_length", Field::SequenceLength, 1.0, "heldout/gpt-neox-llemma-7b"),
    ("sequence_length", Field::SequenceLength, 1.0, "heldout/nemo-megatron-llama-hydra"),
    ("max_sequence_length", Field::SequenceLength, 1.0, "heldout3/olmo-llama7-kempner-slurm"),
    ("seq_len", Field::SequenceLength, 1.0, "heldout/pytorch-word-language-model"),
    ("ctx_len", Field::SequenceLength, 1.0, "heldout6/rwkv-v7-pile-l12-d768"),
    ("sequence_len", Field::SequenceLength, 1.0, "setups/axolotl-llama3-lora-1b"),
    ("cutoff_len", Field::SequenceLength, 1.0, "heldout/llamafactory-fsdp-qlora-accelerate"),
    ("block_size", Field::SequenceLength, 1.0, "setups/nanogpt-shakespeare-char"),
    ("model_max_length", Field::SequenceLength, 1.0, "setups/fastchat-vicuna-13b-torchrun"),
    ("max_length", Field::SequenceLength, 0.8, "setups/alignment-handbook-smollm-sft"),
    // fairseq's `task.tokens_per_sample`.
    ("tokens_per_sample", Field::SequenceLength, 1.0, "heldout4/fairseq-data2vec-text-submitit"),
    ("num_train_epochs", Field::Epochs, 1.0, "setups/alignment-handbook-smollm-sft"),
    ("max_epochs", Field::Epochs, 1.0, "setups/openrlhf-dpo-torchrun"),
    ("num_epochs", Field::Epochs, 1.0, "setups/axolotl-llama3-lora-1b"),
    ("num_epoch", Field::Epochs, 1.0, "heldout3/colossalai-vit-beans-gemini"),
    ("max_epoch", Field::Epochs, 1.0, "heldout3/espnet-librispeech-100-conformer"),
    ("epochs", Field::Epochs, 1.0, "setups/litgpt-pretrain-tinyllama"),
    // verl's `trainer.total_epochs`.
    ("total_epochs", Field::Epochs, 1.0, "heldout/verl-ray-on-slurm"),
    ("max_steps", Field::MaxSteps, 1.0, "setups/alignment-handbook-smollm-sft"),
    ("max_iters", Field::MaxSteps, 1.0, "setups/litgpt-pretrain-tinyllama"),
    ("train_iters", Field::MaxSteps, 1.0, "heldout/gpt-neox-llemma-7b"),
    ("total_steps", Field::MaxSteps, 1.0, "heldout3/colossalai-vit-beans-gemini"),
    // nanotron's `tokens.train_steps`, fairseq's `--max-update`.
    ("train_steps", Field::MaxSteps, 1.0, "heldout/megatron-deepspeed-llama2-heredoc"),
    ("max_update", Field::MaxSteps, 1.0, "heldout4/fairseq-data2vec-text-submitit"),
    // Hugging Face diffusers' scripts; detectron2's `SOLVER.MAX_ITER`.
    ("max_train_steps", Field::MaxSteps, 1.0, "heldout4/diffusers-pixart-controlnet"),
    ("num_training_steps", Field::MaxSteps, 1.0, "heldout4/diffusers-pixart-controlnet"),
    ("max_iter", Field::MaxSteps, 1.0, "heldout5/detectron2-faster-rcnn-r50-voc"),
    // Levanter's `trainer.num_train_steps`.
    ("num_train_steps", Field::MaxSteps, 1.0, "heldout4/levanter-llama-7b-tulu"),
    ("steps", Field::MaxSteps, 0.8, "setups/alignment-handbook-smollm-sft"),
    ("learning_rate", Field::LearningRate, 1.0, "setups/alignment-handbook-smollm-sft"),
    ("lr", Field::LearningRate, 1.0, "setups/deepspeed-pipeline-parallel"),
    // LAVIS: the peak of the warmup-cosine schedule.
    ("init_lr", Field::LearningRate, 0.9, "heldout4/lavis-blip2-opt-caption-coco"),
    ("lr_init", Field::LearningRate, 0.9, "heldout6/rwkv-v7-pile-l12-d768"),
    ("dataset_name", Field::Dataset, 1.0, "heldout/trl-sft-tiny-aya-tool-calling"),
    // verl's `data.train_files=...` (its `val_files` are evaluation).
    ("train_files", Field::Dataset, 0.9, "heldout/verl-ray-on-slurm"),
    ("dataset", Field::Dataset, 1.0, "setups/litgpt-pretrain-tinyllama"),
    ("data_path", Field::Dataset, 0.9, "setups/deepspeed-chat-opt-1.3b"),
    ("train_file", Field::Dataset, 0.9, "heldout4/chatglm-6b-ds-finetune"),
    ("train_data", Field::Dataset, 0.9, "heldout/pytorch-word-language-model"),
    ("train_urls", Field::Dataset, 0.9, "heldout4/levanter-llama-7b-tulu"),
    ("train_data_path", Field::Dataset, 0.9, "heldout4/llmc-gpt2-124m-multinode-tcp"),
    ("train_file_dir", Field::Dataset, 0.9, "heldout9/medicalgpt-qwen3-5-2b-dpo-defaults"),
    ("train_datasets", Field::Dataset, 0.9, "heldout5/oumi-gpt2-polaris-pbs"),
    ("train_dataset_name", Field::Dataset, 1.0, "heldout7/distil-whisper-large-32-2-flax"),
    ("data_file", Field::Dataset, 0.8, "heldout6/rwkv-v7-pile-l12-d768"),
    // llm-foundry / Composer's `data_local`.
    ("data_local", Field::Dataset, 0.8, "heldout8/llm-shearing-continue-pretrain-1-3b-composer"),
    ("dataset_path", Field::Dataset, 1.0, "heldout5/alpaca-farm-sft-torchrun"),
    ("data_dir", Field::Dataset, 0.8, "heldout3/lit-llama-adapter-alpaca"),
    // mmengine's `train_dataloader.dataset.data_root`.
    ("data_root", Field::Dataset, 0.8, "heldout4/mmpretrain-mae-vit-base-300e"),
    ("data", Field::Dataset, 0.7, "setups/alignment-handbook-smollm-sft"),
    ("hf_name", Field::Dataset, 0.9, "heldout/llm-foundry-mpt-7b-dolly-sft"),
    ("num_nodes", Field::Nodes, 1.0, "setups/alignment-handbook-smollm-sft"),
    // submitit launchers' `--nodes` (DeiT, DINO, ConvNeXt).
    ("nodes", Field::Nodes, 0.8, "heldout9/deit-base-submitit-defaults"),
    // Lightning's `--gpus 1` / `Trainer(devices=8)`: the GPUs of each node (a count only).
    ("gpus", Field::GpusPerNode, 0.8, "setups/accelerate-slurm-multinode"),
    ("ngpus", Field::GpusPerNode, 0.8, "heldout6/convnext-tiny-submitit-defaults"),
    ("devices", Field::GpusPerNode, 0.8, "setups/litgpt-pretrain-tinyllama"),
    // Model parallelism, so the global batch is not derived from the GPU count.
    ("tensor_parallel_dim", Field::ModelParallel, 1.0, "setups/torchtune-llama3-3-70b-multinode"),
    ("tensor_parallel_size", Field::ModelParallel, 1.0, "setups/alignment-handbook-smollm-sft"),
    ("tensor_model_parallel_size", Field::ModelParallel, 1.0, "heldout/megatron-deepspeed-llama2-heredoc"),
    ("pipeline_model_parallel_size", Field::ModelParallel, 1.0, "heldout/megatron-deepspeed-llama2-heredoc"),
    ("pipeline_parallel_size", Field::ModelParallel, 1.0, "documented: vLLM/DeepSpeed pipeline degree"),
    ("tp_size", Field::ModelParallel, 1.0, "heldout3/colossalai-vit-beans-gemini"),
    ("pp_size", Field::ModelParallel, 1.0, "heldout3/colossalai-vit-beans-gemini"),
    ("precision", Field::Precision, 1.0, "setups/litgpt-pretrain-tinyllama"),
    ("mixed_precision", Field::Precision, 1.0, "setups/accelerate-slurm-multinode"),
    ("dtype", Field::Precision, 0.9, "setups/torchtune-llama3-3-70b-multinode"),
    ("param_dtype", Field::Precision, 0.9, "setups/openrlhf-dpo-torchrun"),
    ("model_dtype", Field::Precision, 0.9, "heldout5/lingua-llama-7b-baseline"),
    ("torch_dtype", Field::Precision, 0.8, "setups/alignment-handbook-smollm-sft"),
    ("torch_dtype_str", Field::Precision, 0.8, "heldout5/oumi-gpt2-polaris-pbs"),
];

/// Precision switches (`--bf16`, `fp16: true`, automatic mixed precision `--amp`, `amp: true`;
/// `tf32` is not a training precision).
pub const PRECISION_FLAGS: &[&str] = &["bf16", "fp16", "amp"];

/// Container runners that run a command in an image: (program, subcommands, options that
/// take no value); their other options take one (`--bind DIR`). Shown by
/// `heldout/verl-ray-on-slurm` (`apptainer run --nv --bind DIR IMAGE python3 -m ...`).
pub const CONTAINER_RUNNERS: &[(&str, &[&str], &[&str])] = &[
    ("apptainer", &["run", "exec"], CONTAINER_SWITCHES),
    ("singularity", &["run", "exec"], CONTAINER_SWITCHES),
];

/// Options of `apptainer` / `singularity` `run` and `exec` that take no value.
const CONTAINER_SWITCHES: &[&str] = &[
    "--nv",
    "--nvccli",
    "--rocm",
    "--cleanenv",
    "-e",
    "--contain",
    "-c",
    "--containall",
    "-C",
    "--writable",
    "-w",
    "--writable-tmpfs",
    "--fakeroot",
    "-f",
    "--no-home",
    "--no-init",
    "--no-privs",
    "--userns",
    "-u",
    "--compat",
    "--ipc",
    "-i",
    "--pid",
    "-p",
    "--net",
    "-n",
];

/// Sections of a second model of the job (an RL critic, a reward model, a reference or
/// teacher model): their settings are not the trained model's (`critic.model.path`).
pub const OTHER_MODELS: &[&str] = &["critic", "reward_model", "ref", "teacher", "rm"];

/// Words of a script's name that mark an evaluation, not a training run.
pub const EVALUATION_WORDS: &[&str] = &[
    // Speech and translation recipes' steps after training: decoding, scoring, averaging and
    // exporting checkpoints (`wenet/bin/recognize.py`, `tools/compute-wer.py`).
    "decode",
    "recognize",
    "wer",
    "cer",
    "bleu",
    "score",
    "average",
    "export",
    "val",
    "valid",
    "validate",
    "validation",
    "test",
    "inference",
    "infer",
    "predict",
    "generate",
    "sample",
    "sampling",
    "serve",
];

/// Short options of `srun` and `mpirun` that take no value (`-l`: label output lines).
pub const SRUN_SWITCHES: &[&str] = &[
    "-l", "-u", "-v", "-Q", "-K", "-X", "-Z", "-O", "-k", "-s", "-H", "-E",
];

/// Whose flags a launcher takes: its rows of [`LAUNCHER_FLAGS`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flags {
    /// `torchrun` (also `python -m torch.distributed.run|launch`, `tune run`, `colossalai run`).
    Torchrun,
    /// `deepspeed`.
    Deepspeed,
    /// `accelerate launch`.
    Accelerate,
    /// Composer's `composer`.
    Composer,
}

/// One launcher: the words that start it (the program, then its subcommands; `python` stands
/// for any `python3...` after the interpreter's own options), whose flags it takes, and the
/// setup of `tests/data/knowledge` that shows it. After its flags comes the training script
/// (or `-m module`) and the script's arguments.
#[derive(Debug, Clone, Copy)]
pub struct Launcher {
    /// The words that start it.
    pub words: &'static [&'static str],
    /// Whose flags it takes.
    pub flags: Flags,
    /// The setup that shows it.
    pub shown_by: &'static str,
}

/// Every launcher the reader knows, one row each.
pub const LAUNCHERS: &[Launcher] = &[
    Launcher {
        words: &["torchrun"],
        flags: Flags::Torchrun,
        shown_by: "setups/fastchat-vicuna-13b-torchrun",
    },
    Launcher {
        words: &["python", "-m", "torch.distributed.run"],
        flags: Flags::Torchrun,
        shown_by: "heldout4/lavis-blip2-opt-caption-coco",
    },
    Launcher {
        words: &["python", "-m", "torch.distributed.launch"],
        flags: Flags::Torchrun,
        shown_by: "heldout10/mplug-owl-llama-7b-sft-lora",
    },
    Launcher {
        words: &["deepspeed"],
        flags: Flags::Deepspeed,
        shown_by: "setups/deepspeed-pipeline-parallel",
    },
    Launcher {
        words: &["accelerate", "launch"],
        flags: Flags::Accelerate,
        shown_by: "setups/alignment-handbook-smollm-sft",
    },
    // torchtune's `tune run [torchrun flags] RECIPE --config ... key=value`.
    Launcher {
        words: &["tune", "run"],
        flags: Flags::Torchrun,
        shown_by: "setups/torchtune-llama3-3-70b-multinode",
    },
    // ColossalAI's `colossalai run [torchrun flags] SCRIPT ...`.
    Launcher {
        words: &["colossalai", "run"],
        flags: Flags::Torchrun,
        shown_by: "heldout3/colossalai-vit-beans-gemini",
    },
    // `composer -n 8 train.py config.yaml key=value ...`.
    Launcher {
        words: &["composer"],
        flags: Flags::Composer,
        shown_by: "heldout9/mosaicml-examples-mosaic-bert-mcloud",
    },
    // oumi's `oumi distributed torchrun|accelerate ...` passes on to that launcher.
    Launcher {
        words: &["oumi", "distributed", "torchrun"],
        flags: Flags::Torchrun,
        shown_by: "heldout5/oumi-gpt2-polaris-pbs",
    },
    Launcher {
        words: &["oumi", "distributed", "accelerate"],
        flags: Flags::Accelerate,
        shown_by: "documented: oumi's `oumi distributed accelerate` (oumi CLI reference)",
    },
];

/// Launchers' flags that give a field: (whose, flag with `_`, field). `accelerate`'s
/// `num_processes` counts the processes of all machines, so it is recorded as the total and
/// divided by the machines in `derive` (its config file's keys of the same names read the
/// same). A count written as an elastic range (`--nnodes
/// 1:4`) gives its minimum.
pub const LAUNCHER_FLAGS: &[(Flags, &str, Field)] = &[
    (Flags::Torchrun, "nproc_per_node", Field::GpusPerNode),
    (Flags::Torchrun, "nnodes", Field::Nodes),
    (Flags::Deepspeed, "num_gpus", Field::GpusPerNode),
    (Flags::Deepspeed, "num_gpus_per_node", Field::GpusPerNode),
    (Flags::Deepspeed, "num_nodes", Field::Nodes),
    (Flags::Accelerate, "num_processes", Field::GpusTotal),
    (Flags::Accelerate, "num_machines", Field::Nodes),
    (Flags::Accelerate, "mixed_precision", Field::Precision),
    (Flags::Composer, "nproc", Field::GpusPerNode),
    (Flags::Composer, "n", Field::GpusPerNode),
];

/// Launcher flags that take no value (`accelerate launch --multi_gpu train.py`: `train.py`
/// is the script, not the flag's value).
pub const SWITCHES: &[&str] = &[
    "standalone",
    // `python -m torch.distributed.launch --use_env train.py`.
    "use_env",
    "no_python",
    "no_local_rank",
    "multi_gpu",
    "use_deepspeed",
    "use_fsdp",
    "use_megatron_lm",
    "use_cpu",
    "cpu",
    "debug",
    "same_network",
    "tee",
    "enable_each_rank_log",
    "autotuning",
];

/// Batch names that do not say per device or global: their meaning depends on the others.
pub const PLAIN_BATCHES: &[&str] = &["train_batch_size", "batch_size"];

/// Sections whose settings are not the training run's (`--eval.steps`, `eval: max_iters`).
pub const NOT_TRAINING: &[&str] = &[
    "eval",
    "evaluation",
    "validation",
    "val",
    "test",
    // nanotron: the settings of the evaluation jobs it launches.
    "lighteval",
    // Generation after or during training (a diffusion model's `sampling.steps`).
    "sampling",
    "generation",
];
