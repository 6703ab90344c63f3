//! Save and load give the same logits; the key/value cache gives the same logits as a full
//! pass; resuming from a checkpoint takes the same steps as an uninterrupted run.

mod common;

use candle_core::{Device, Tensor};
use schedlm_finetune::curve::{CURVE_CSV, CURVE_SVG};
use schedlm_finetune::model::{self, sorted_vars};
use schedlm_finetune::{TrainOptions, Trainer};

use common::{records, tiny_model, tokenized};

fn max_diff(a: &Tensor, b: &Tensor) -> f32 {
    (a - b)
        .unwrap()
        .abs()
        .unwrap()
        .max_all()
        .unwrap()
        .to_scalar()
        .unwrap()
}

#[test]
fn save_load_gives_same_logits_and_cache_matches_full_pass() {
    let records = records(4, 3, (3, 4));
    let loaded = tiny_model(&records, 5, 32, 2);
    let dir = tempfile::tempdir().unwrap();
    model::save(&loaded, dir.path()).unwrap();
    let again = model::load(dir.path(), &Device::Cpu).unwrap();
    let ids = loaded.tokenizer.encode(&records[0].prompt).unwrap();
    let input = Tensor::new(ids.as_slice(), &Device::Cpu)
        .unwrap()
        .unsqueeze(0)
        .unwrap();
    let a = loaded.model.forward(&input, None).unwrap();
    let b = again.model.forward(&input, None).unwrap();
    assert!(max_diff(&a, &b) == 0.0, "logits differ after save/load");

    let mut cache = loaded.model.cache();
    let half = ids.len() / 2;
    let first = input.narrow(1, 0, half).unwrap();
    loaded.model.forward(&first, Some(&mut cache)).unwrap();
    let mut last = None;
    for i in half..ids.len() {
        let step = input.narrow(1, i, 1).unwrap();
        last = Some(loaded.model.forward(&step, Some(&mut cache)).unwrap());
    }
    let full_last = a.narrow(1, ids.len() - 1, 1).unwrap();
    let diff = max_diff(&last.unwrap(), &full_last);
    assert!(diff < 1e-4, "cached and full logits differ by {diff}");
}

fn options() -> TrainOptions {
    TrainOptions {
        epochs: 2,
        lr: 2e-3,
        batch: 4,
        warmup: 2,
        ..TrainOptions::default()
    }
}

#[test]
fn resume_takes_the_same_steps_as_an_uninterrupted_run() {
    let records = records(8, 11, (3, 4));
    let loaded = tiny_model(&records, 2, 32, 1);
    let examples = tokenized(&records, &loaded);
    let device = Device::Cpu;

    let mut straight = Trainer::new(tiny_model(&records, 2, 32, 1), options(), &device).unwrap();
    straight.fit(&examples, &examples[..2], None).unwrap();

    let dir = tempfile::tempdir().unwrap();
    let mut first = Trainer::new(loaded, options(), &device).unwrap();
    first
        .fit_until(&examples, &examples[..2], Some(dir.path()), 1)
        .unwrap();
    assert_eq!(first.state.epoch, 1);
    let mut resumed = Trainer::resume(dir.path(), None, &device).unwrap();
    resumed
        .fit(&examples, &examples[..2], Some(dir.path()))
        .unwrap();

    assert_eq!(resumed.state.step, straight.state.step);
    let (a, b) = (&resumed.state.history[1], &straight.state.history[1]);
    assert!((a.train_loss - b.train_loss).abs() < 1e-5, "{a:?} vs {b:?}");
    for ((name, x), (_, y)) in sorted_vars(&resumed.loaded.vars)
        .iter()
        .zip(sorted_vars(&straight.loaded.vars).iter())
    {
        let diff = max_diff(x.as_tensor(), y.as_tensor());
        assert!(diff < 1e-5, "{name} differs by {diff}");
    }
}

/// The rows of `curve.csv` without the `elapsed_s` column (wall time differs between runs).
fn curve_rows(dir: &std::path::Path) -> Vec<String> {
    let text = std::fs::read_to_string(dir.join(CURVE_CSV)).unwrap();
    text.lines()
        .map(|line| {
            let mut f: Vec<&str> = line.split(',').collect();
            f.remove(4);
            f.join(",")
        })
        .collect()
}

/// Each epoch's log without its speed.
fn history(t: &Trainer) -> Vec<(usize, usize, f64, Option<f64>)> {
    let h = &t.state.history;
    h.iter()
        .map(|l| (l.epoch, l.steps, l.train_loss, l.val_loss))
        .collect()
}

fn step_options(curriculum: bool) -> TrainOptions {
    TrainOptions {
        steps: Some(7),
        eval_every: 2,
        eval_records: 3,
        curriculum,
        ..options()
    }
}

#[test]
fn resume_at_a_mid_epoch_checkpoint_gives_bit_identical_weights_and_curve() {
    let records = records(12, 11, (3, 4));
    let loaded = tiny_model(&records, 2, 32, 1);
    let examples = tokenized(&records, &loaded);
    let (val, held) = (&examples[..2], &records[..3]);
    let device = Device::Cpu;
    for curriculum in [false, true] {
        // 12 records in batches of 4: 3 steps an epoch; points at 2, 4, 6 and the last step 7.
        let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let fresh = || tiny_model(&records, 2, 32, 1);
        let mut straight = Trainer::new(fresh(), step_options(curriculum), &device).unwrap();
        assert_eq!(straight.set_held_out(held).unwrap(), 3);
        straight.fit(&examples, val, Some(a.path())).unwrap();
        assert_eq!((straight.state.step, straight.state.epoch), (7, 2));

        let mut first = Trainer::new(fresh(), step_options(curriculum), &device).unwrap();
        first.set_held_out(held).unwrap();
        // Killed after step 5: the last checkpoint is the point at step 4, one step into
        // the second epoch.
        first
            .fit_until_step(&examples, val, Some(b.path()), 5)
            .unwrap();
        assert_eq!(first.state.step, 5);
        // A row written after the checkpoint (as by a run killed between the two) is dropped.
        let mut csv = std::fs::read_to_string(b.path().join(CURVE_CSV)).unwrap();
        csv.push_str("5,1.6667,1,1,1.0,1.0,,,,\n");
        std::fs::write(b.path().join(CURVE_CSV), csv).unwrap();

        let mut resumed = Trainer::resume(b.path(), None, &device).unwrap();
        let s = &resumed.state;
        assert_eq!((s.step, s.epoch, s.epoch_step), (4, 1, 1));
        resumed.set_held_out(held).unwrap();
        resumed.fit(&examples, val, Some(b.path())).unwrap();

        assert_eq!(resumed.state.step, straight.state.step);
        assert_eq!(history(&resumed), history(&straight));
        for ((name, x), (_, y)) in sorted_vars(&resumed.loaded.vars)
            .iter()
            .zip(sorted_vars(&straight.loaded.vars).iter())
        {
            let diff = max_diff(x.as_tensor(), y.as_tensor());
            assert!(
                diff == 0.0,
                "curriculum {curriculum}: {name} differs by {diff}"
            );
        }
        let rows = curve_rows(a.path());
        assert_eq!(rows.len(), 5, "{rows:?}");
        assert_eq!(curve_rows(b.path()), rows);
        assert!(b.path().join(CURVE_SVG).is_file());
    }
}
