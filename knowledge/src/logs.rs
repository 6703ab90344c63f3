//! Training logs: progress (step, total, rate, elapsed, ETA) and the failure class.
//!
//! Progress comes from tqdm bars (Hugging Face Trainer, Lightning, accelerate scripts:
//! `450/1000 [02:10<02:39, 3.45it/s]`), Megatron and DeepSpeed lines (`iteration 100/ 500000`,
//! `step=100`), plain `step k/N` or `iter k/N` lines, and `step: k ... loss` lines with a
//! `total steps N` said once (torchtitan, nanochat, DeepSpeed-Chat); rates also from
//! milliseconds per step (`step_avg:216ms`, `dt: 5.1ms`); ANSI colour codes are removed and
//! evaluation progress (`Validation`, `Evaluating`) is not the training's; the last progress
//! line wins. Failure
//! classes ([`FAILURES`]) match the messages PyTorch, NCCL, the kernel, Python and Slurm print;
//! the last matching line decides (a job that hit a NaN and was then killed died of the kill),
//! and it is kept as the evidence.

use std::sync::LazyLock;

use regex::Regex;
use serde_json::json;

use crate::facts::{Field, JobFacts, Source, Strength};

/// Failure classes and the patterns of their messages.
pub const FAILURES: &[(&str, &str)] = &[
    // The error itself, not a help text or a log line that names it: the exception's name,
    // an `...Error:` prefix, or PyTorch's "Tried to allocate".
    (
        "cuda_oom",
        r"torch\.(cuda\.)?OutOfMemoryError|\b\w*(Error|Exception):\s*CUDA out of memory|CUDA out of memory\.\s*Tried to allocate|CUBLAS_STATUS_ALLOC_FAILED|CUDA error: out of memory",
    ),
    (
        "nccl_timeout",
        r"(?i)watchdog caught collective operation timeout|NCCL.*(timed? ?out)|ProcessGroupNCCL.*timeout|NCCL communicator was aborted|NCCL error",
    ),
    (
        "nan_loss",
        r"(?i)(loss|perplexity|ppl)\s*(is|=|:)\s*'?(nan|inf)\b|\bnan loss\b|non-finite loss|loss (became|has become) (nan|inf)|detected (nan|inf) in loss",
    ),
    (
        "oom_killed",
        r"(?i)oom[-_]kill|out of memory: killed process|exceeded (its )?memory limit|^\s*Killed\s*$",
    ),
    (
        "missing_module",
        r"ModuleNotFoundError: No module named|ImportError: No module named",
    ),
    (
        "disk_quota",
        r"(?i)disk quota exceeded|no space left on device",
    ),
    (
        "time_limit",
        r"(?i)DUE TO TIME LIMIT|\btime limit (exceeded|reached)\b|job exceeded (its )?(wall ?time|time limit)|PBS: job killed: walltime \d+ exceeded",
    ),
    (
        "preempted",
        r"(?i)due to preemption|job (was )?preempted|\bPREEMPTED\b|received preemption signal",
    ),
];

/// The patterns compiled once; a pattern that does not compile is a bug in this file, reported
/// loudly at first use (and by the unit tests) instead of switching its class off.
static FAILURE_RES: LazyLock<Vec<(&'static str, Regex)>> = LazyLock::new(|| {
    FAILURES
        .iter()
        .map(|(class, pattern)| (*class, compiled(pattern)))
        .collect()
});

/// A pattern of this crate, compiled; one that does not compile is a bug here and panics at
/// first use (the unit tests compile every one), never a rule silently switched off.
pub(crate) fn compiled(pattern: &str) -> Regex {
    Regex::new(pattern).unwrap_or_else(|e| panic!("pattern {pattern:?} does not compile: {e}"))
}

/// `450/1000 [02:10<02:39, 3.45it/s]` (tqdm; the rate may be `s/it`, the ETA `?`).
static TQDM: LazyLock<Regex> = LazyLock::new(|| {
    compiled(
        r"(\d+)/(\d+)\s*\[(\d+(?::\d+){1,2})<(\d+(?::\d+){1,2}|\?)(?:,\s*([\d.]+)\s*(it/s|s/it))?",
    )
});

/// `step 120/5000`, `Step: 120 / 5000`, `iteration      100/  500000` (Megatron), `iter 3/10`.
static STEP_OF: LazyLock<Regex> = LazyLock::new(|| {
    compiled(r"(?i)\b(?:global[_ ])?(?:step|iter|iteration)\s*[:=]?\s*(\d+)\s*/\s*(\d+)")
});

/// DeepSpeed's `step=100, skipped=0` and `global_step=100` without a total.
static STEP_EQ: LazyLock<Regex> = LazyLock::new(|| compiled(r"\b(?:global_)?step=(\d+)"));

/// Milliseconds per step: Megatron's `elapsed time per iteration (ms): 1234.5`, modded-nanogpt's
/// `step_avg:216.33ms`, nanochat's `dt: 5.09ms`.
static MS_PER_ITER: LazyLock<Regex> = LazyLock::new(|| {
    compiled(
        r"elapsed time per iteration \(ms\):\s*([\d.]+)|\bstep_avg:\s*([\d.]+)ms|\bdt:\s*([\d.]+)ms",
    )
});

/// A step without a total on a line that reports a loss: `step: 10  loss: 4.98`,
/// `step 00067 (0.00%) | loss: nan`, DeepSpeed-Chat's `epoch: 0|step: 14|...|act_loss: ...`.
static STEP_LOSS: LazyLock<Regex> = LazyLock::new(|| compiled(r"(?i)\bstep:?\s*(\d+)\b[^/].*loss"));

/// A total announced once: torchtitan's `total steps 10`.
static TOTAL_STEPS: LazyLock<Regex> = LazyLock::new(|| compiled(r"(?i)\btotal steps:?\s*(\d+)"));

/// ANSI colour and cursor codes (`\x1b[31m`), which some loggers put between words.
static ANSI: LazyLock<Regex> = LazyLock::new(|| compiled(r"\x1b\[[0-9;]*[A-Za-z]"));

/// Progress of evaluation, not training (`Validation DataLoader 0: 50/50`, `Evaluating iter 1/50`).
static EVALUATION: LazyLock<Regex> = LazyLock::new(|| compiled(r"(?i)validat|evaluat|\beval\b"));

/// Reads log `name` (its text) into `facts`: `current_step`, `total_steps`,
/// `iterations_per_s`, `elapsed_s`, `eta_s`, `failure` (the class) and `failure_evidence`.
pub fn read_log(name: &str, text: &str, facts: &mut JobFacts) {
    let mut set = |field: Field, value: serde_json::Value, line: usize, confidence: f64| {
        facts.set(
            field,
            value,
            Source::line(name, line),
            confidence,
            Strength::Log,
        )
    };
    // A tqdm bar redraws with carriage returns: each redraw is read in turn, with the line's
    // number.
    let pieces = text
        .split('\n')
        .enumerate()
        .flat_map(|(index, line)| line.split('\r').map(move |piece| (index + 1, piece)));
    let mut failure: Option<(&str, usize, String)> = None;
    let mut progress_since = false;
    for (number, raw) in pieces {
        let clean = ANSI.replace_all(raw, "");
        let line: &str = &clean;
        let evaluation = EVALUATION.is_match(line);
        if let Some(c) = TOTAL_STEPS.captures(line) {
            if let Some(total) = c.get(1).and_then(|m| m.as_str().parse::<u64>().ok()) {
                set(Field::TotalSteps, json!(total), number, 0.9);
            }
        }
        if evaluation {
            // Neither its progress nor its rate is the training's.
        } else if let Some(c) = TQDM.captures(line) {
            let num = |i: usize| c.get(i).and_then(|m| m.as_str().parse::<u64>().ok());
            if let (Some(step), Some(total)) = (num(1), num(2)) {
                set(Field::CurrentStep, json!(step), number, 1.0);
                set(Field::TotalSteps, json!(total), number, 1.0);
            }
            if let Some(elapsed) = c.get(3).and_then(|m| clock(m.as_str())) {
                set(Field::ElapsedS, json!(elapsed), number, 1.0);
            }
            if let Some(eta) = c.get(4).and_then(|m| clock(m.as_str())) {
                set(Field::EtaS, json!(eta), number, 1.0);
            }
            if let (Some(rate), Some(unit)) = (c.get(5), c.get(6)) {
                if let Ok(r) = rate.as_str().parse::<f64>() {
                    let per_s = if unit.as_str() == "s/it" && r > 0.0 {
                        1.0 / r
                    } else {
                        r
                    };
                    set(Field::IterationsPerS, json!(per_s), number, 1.0);
                }
            }
        } else if let Some(c) = STEP_OF.captures(line) {
            let num = |i: usize| c.get(i).and_then(|m| m.as_str().parse::<u64>().ok());
            if let (Some(step), Some(total)) = (num(1), num(2)) {
                set(Field::CurrentStep, json!(step), number, 1.0);
                set(Field::TotalSteps, json!(total), number, 1.0);
            }
        } else if let Some(c) = STEP_EQ.captures(line) {
            if let Some(step) = c.get(1).and_then(|m| m.as_str().parse::<u64>().ok()) {
                set(Field::CurrentStep, json!(step), number, 1.0);
            }
        } else if let Some(c) = STEP_LOSS.captures(line) {
            if let Some(step) = c.get(1).and_then(|m| m.as_str().parse::<u64>().ok()) {
                set(Field::CurrentStep, json!(step), number, 0.9);
            }
        }
        let ms_per_step = MS_PER_ITER
            .captures(line)
            .and_then(|c| (1..=3).find_map(|i| c.get(i)))
            .and_then(|m| m.as_str().parse::<f64>().ok());
        if let Some(ms) = ms_per_step.filter(|&ms| ms > 0.0 && !evaluation) {
            set(Field::IterationsPerS, json!(1000.0 / ms), number, 1.0);
        }
        // A stack frame names functions (`checkTimeout`), not what happened.
        let frame = line.contains("frame #");
        if let Some((class, _)) = FAILURE_RES
            .iter()
            .find(|(_, re)| !frame && re.is_match(line))
        {
            failure = Some((class, number, line.trim().to_string()));
            progress_since = false;
        } else if !evaluation && makes_progress(line) {
            progress_since = true;
        }
    }
    // A failure the run went on from (an OOM retried with a smaller batch, a NaN step skipped)
    // is not what ended it: training progress after it drops it.
    if let Some((class, number, evidence)) = failure.filter(|_| !progress_since) {
        set(Field::Failure, json!(class), number, 1.0);
        set(Field::FailureEvidence, json!(evidence), number, 1.0);
    }
}

/// Whether a line reports training progress (a step count), after which an earlier failure
/// is taken as recovered from.
fn makes_progress(line: &str) -> bool {
    [&*TQDM, &*STEP_OF, &*STEP_EQ, &*STEP_LOSS]
        .iter()
        .any(|re| re.is_match(line))
}

/// `mm:ss` or `h:mm:ss` in seconds; `None` for `?`.
fn clock(text: &str) -> Option<u64> {
    let parts: Vec<u64> = text
        .split(':')
        .map(|p| p.parse().ok())
        .collect::<Option<_>>()?;
    match parts.as_slice() {
        [m, s] => Some(m * 60 + s),
        [h, m, s] => Some(h * 3600 + m * 60 + s),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> JobFacts {
        let mut facts = JobFacts::default();
        read_log("train.log", text, &mut facts);
        facts
    }

    #[test]
    fn tqdm_progress_with_carriage_returns() {
        let facts = read(
            "loading\n 10%|#         | 100/1000 [00:30<04:30,  3.33it/s]\r 45%|####5     | 450/1000 [02:10<02:39,  3.45it/s]\n",
        );
        assert_eq!(facts.value(Field::CurrentStep).unwrap(), 450);
        assert_eq!(facts.value(Field::TotalSteps).unwrap(), 1000);
        assert_eq!(facts.value(Field::ElapsedS).unwrap(), 130);
        assert_eq!(facts.value(Field::EtaS).unwrap(), 159);
        assert_eq!(facts.value(Field::IterationsPerS).unwrap(), 3.45);
        assert_eq!(facts.get(Field::CurrentStep).unwrap().source, "train.log:2");
    }

    #[test]
    fn megatron_and_plain_steps() {
        let facts = read(" iteration      200/  500000 | consumed samples: 51200 | elapsed time per iteration (ms): 2000.0 | lm loss: 7.1\n");
        assert_eq!(facts.value(Field::CurrentStep).unwrap(), 200);
        assert_eq!(facts.value(Field::TotalSteps).unwrap(), 500_000);
        assert_eq!(facts.value(Field::IterationsPerS).unwrap(), 0.5);
        let plain = read("Step 30/120 loss=2.5\n[Rank 0] step=40, skipped=0, lr=[1e-4]\n");
        assert_eq!(plain.value(Field::CurrentStep).unwrap(), 40);
        assert_eq!(plain.value(Field::TotalSteps).unwrap(), 120);
        let slow = read("  3/10 [01:00<02:20, 20.00s/it]");
        assert_eq!(slow.value(Field::IterationsPerS).unwrap(), 0.05);
    }

    #[test]
    fn step_lines_without_totals_rates_in_ms_and_evaluation_left_out() {
        let facts = read(concat!(
            "Trainer is initialized with local batch size 160, total steps 10\n",
            "\x1b[31mstep:  9  \x1b[32mloss:  4.9\n",
            "step:6199/6200 train_loss:3.2344 train_time:1338853ms step_avg:250.00ms\n",
            "Evaluating iter 1/50\n",
        ));
        assert_eq!(facts.value(Field::CurrentStep).unwrap(), 6199);
        assert_eq!(facts.value(Field::TotalSteps).unwrap(), 6200);
        assert_eq!(facts.value(Field::IterationsPerS).unwrap(), 4.0);
        let titan = read("total steps 10\n\x1b[31mstep: 10  \x1b[32mloss:  4.98934\n");
        assert_eq!(titan.value(Field::CurrentStep).unwrap(), 10);
        assert_eq!(titan.value(Field::TotalSteps).unwrap(), 10);
        let frame = read("frame #1: c10d::ProcessGroupNCCL::WorkNCCL::checkTimeout()\n");
        assert!(
            frame.get(Field::Failure).is_none(),
            "a stack frame is not the failure"
        );
        let ppl = read("Step at 6 with Perplexity: nan\n");
        assert_eq!(ppl.value(Field::Failure).unwrap(), "nan_loss");
    }

    #[test]
    fn every_pattern_compiles() {
        assert_eq!(FAILURE_RES.len(), FAILURES.len());
        let all = [
            &*TQDM,
            &*STEP_OF,
            &*STEP_EQ,
            &*MS_PER_ITER,
            &*STEP_LOSS,
            &*TOTAL_STEPS,
            &*ANSI,
            &*EVALUATION,
        ];
        assert!(all.iter().all(|re| !re.as_str().is_empty()));
    }

    #[test]
    fn failure_classes_and_evidence() {
        for (line, class) in [
            ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB", "cuda_oom"),
            ("[E ProcessGroupNCCL.cpp:475] [Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1, OpType=ALLREDUCE) ran for 1800000 milliseconds before timing out.", "nccl_timeout"),
            ("ValueError: loss is nan, stopping training", "nan_loss"),
            ("slurmstepd: error: Detected 1 oom-kill event(s) in StepId=123.0.", "oom_killed"),
            ("Killed", "oom_killed"),
            ("ModuleNotFoundError: No module named 'flash_attn'", "missing_module"),
            ("OSError: [Errno 122] Disk quota exceeded", "disk_quota"),
            ("slurmstepd: error: *** JOB 42 ON node7 CANCELLED AT 2024-01-01T00:00:00 DUE TO PREEMPTION ***", "preempted"),
            ("slurmstepd: error: *** JOB 43 ON node7 CANCELLED AT 2024-01-01T00:00:00 DUE TO TIME LIMIT ***", "time_limit"),
            ("RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 15.78 GiB total capacity)", "cuda_oom"),
        ] {
            let facts = read(&format!("epoch 1\n{line}\n"));
            assert_eq!(facts.value(Field::Failure).unwrap(), class, "{line}");
            assert_eq!(facts.value(Field::FailureEvidence).unwrap(), line.trim());
            assert_eq!(facts.get(Field::Failure).unwrap().source, "train.log:2");
        }
        // The last failure decides.
        let facts = read("loss is nan\nstill going\nKilled\n");
        assert_eq!(facts.value(Field::Failure).unwrap(), "oom_killed");
        // A help text that names the error is not the error.
        let help = read(
            "  --auto_find_batch_size  halve the batch on CUDA out of memory errors\n\
             100%|##########| 50/50 [00:10<00:00, 5.00it/s]\ntraining finished\n",
        );
        assert!(help.get(Field::Failure).is_none(), "{help:?}");
        // An OOM the run recovered from (retried with a smaller batch) is not its failure.
        let recovered = read(
            "  10%|#  | 5/50 [00:01<00:09, 5.00it/s]\n\
             torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n\
             Reducing batch size to 4\n\
             100%|##########| 50/50 [00:10<00:00, 5.00it/s]\n",
        );
        assert!(recovered.get(Field::Failure).is_none(), "{recovered:?}");
        // Progress before the error does not hide it.
        let died = read(
            "  10%|#  | 5/50 [00:01<00:09, 5.00it/s]\n\
             RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB\n",
        );
        assert_eq!(died.value(Field::Failure).unwrap(), "cuda_oom");
        // Words that only look alike are not failures.
        let clean = read(
            "eval nan_to_num applied\nkilled 3 stale workers cleanly\nmodule named foo loaded\n",
        );
        assert!(clean.get(Field::Failure).is_none(), "{clean:?}");
    }
}
