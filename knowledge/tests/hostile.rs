//! `extract` on job directories built to attack the reader (issue #33): links out of the
//! directory, special files, an alias bomb, formats it does not know. Each is skipped and
//! named; no byte outside the directory reaches the facts.

use schedlm_knowledge::facts::Field;
use std::os::unix::fs::symlink;
use std::path::Path;

use schedlm_knowledge::extract;

fn skipped_reason(e: &schedlm_knowledge::Extraction, file: &str) -> String {
    e.skipped
        .iter()
        .find(|s| s.file == file)
        .map(|s| s.reason.clone())
        .unwrap_or_else(|| panic!("{file} is not listed as skipped: {:?}", e.skipped))
}

fn fifo(path: &Path) {
    let name = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    assert_eq!(unsafe { libc::mkfifo(name.as_ptr(), 0o600) }, 0);
}

#[test]
fn nothing_outside_the_directory_is_read_and_every_hostile_file_is_named() {
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(
        outside.path().join("config.json"),
        r#"{"model_name_or_path": "zz-distinctive-outside-model", "learning_rate": 0.123}"#,
    )
    .unwrap();
    std::fs::write(outside.path().join("env.sh"), "export NPROC=77\n").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(
        d.join("train.sh"),
        "#!/bin/bash\nsource ./env.sh\ntorchrun --nproc_per_node 8 train.py --model_name_or_path gpt2\n",
    )
    .unwrap();
    symlink(outside.path().join("config.json"), d.join("config.json")).unwrap();
    symlink(outside.path().join("env.sh"), d.join("env.sh")).unwrap();
    symlink("/etc", d.join("etc")).unwrap();
    symlink("/dev/zero", d.join("zero.yaml")).unwrap();
    fifo(&d.join("x.yaml"));
    let mut bomb = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x]\n");
    for k in 1..10 {
        let prev = format!("*a{}", k - 1);
        bomb += &format!("a{k}: &a{k} [{}]\n", [prev.as_str(); 9].join(", "));
    }
    std::fs::write(d.join("laughs.yaml"), bomb).unwrap();
    std::fs::write(d.join("model.gin"), "train.steps = 1000\n").unwrap();

    let e = extract(d, None, &[]).unwrap();
    let everything = serde_json::to_string(&e.facts).unwrap();
    assert!(!everything.contains("zz-distinctive"), "{everything}");
    assert!(
        !everything.contains("0.123") && !everything.contains("77"),
        "{everything}"
    );
    assert_eq!(e.facts.get(Field::Model).unwrap().value, "gpt2");
    assert_eq!(e.facts.get(Field::GpusPerNode).unwrap().value, 8);
    for (file, why) in [
        ("config.json", "outside the job directory"),
        ("env.sh", "outside the job directory"),
        ("etc", "outside the job directory"),
        ("zero.yaml", "outside the job directory"),
        ("x.yaml", "a FIFO"),
        ("laughs.yaml", "aliases would add"),
        ("model.gin", "format the reader does not know"),
    ] {
        let reason = skipped_reason(&e, file);
        assert!(reason.contains(why), "{file}: {reason}");
    }
    assert_eq!(e.read, ["train.sh"]);
}

#[test]
fn links_inside_the_directory_are_read() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::create_dir(d.join("conf")).unwrap();
    std::fs::write(d.join("conf/real.yaml"), "learning_rate: 0.0003\n").unwrap();
    symlink(d.join("conf/real.yaml"), d.join("train.yaml")).unwrap();
    symlink(d.join("conf"), d.join("conf-link")).unwrap();
    let e = extract(d, None, &[]).unwrap();
    assert!(e.read.contains(&"train.yaml".to_string()), "{:?}", e.read);
    assert!(skipped_reason(&e, "conf-link").contains("folder"));
}

/// A hard link is one more name for a file that may sit outside the directory (another
/// user's config): skipped and listed unless asked for.
#[test]
fn hard_links_are_skipped_unless_asked_for() {
    use schedlm_knowledge::{extract_with, Cache, ExtractOptions};
    let outside = tempfile::tempdir().unwrap();
    let secret = outside.path().join("secret.json");
    std::fs::write(
        &secret,
        r#"{"model_name_or_path": "zz-hard-linked-outside-model"}"#,
    )
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(
        d.join("train.sh"),
        "torchrun --nproc_per_node 8 train.py --model_name_or_path gpt2\n",
    )
    .unwrap();
    if std::fs::hard_link(&secret, d.join("config.json")).is_err() {
        // Another file system: a hard link cannot be made, so there is nothing to check.
        schedlm_model::skips::skip(
            "hardlinks",
            "no hard link across these temporary folders (another file system)",
        );
        return;
    }
    let e = extract(d, None, &[]).unwrap();
    let everything = serde_json::to_string(&e.facts).unwrap();
    assert!(!everything.contains("zz-hard-linked"), "{everything}");
    assert_eq!(e.facts.get(Field::Model).unwrap().value, "gpt2");
    let reason = skipped_reason(&e, "config.json");
    assert!(
        reason.contains("2 hard links") && reason.contains("--follow-hard-links"),
        "{reason}"
    );
    assert_eq!(e.read, ["train.sh"]);
    // Asked for, it is read like any file.
    let options = ExtractOptions {
        follow_hard_links: true,
        ..ExtractOptions::default()
    };
    let e = extract_with(d, None, &[], &mut Cache::default(), options).unwrap();
    assert!(e.read.contains(&"config.json".to_string()), "{:?}", e.read);
}

/// A directory of many files: the walk stops at the cap and counts the rest; the listing of
/// skipped files stops at 1,000 and counts the rest.
#[test]
fn the_walk_and_the_listing_are_capped_and_count_the_rest() {
    use schedlm_knowledge::extract::MAX_LISTED;
    use schedlm_knowledge::{extract_with, Cache, ExtractOptions};
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(
        d.join("a-train.sh"),
        "torchrun --nproc_per_node 4 train.py\n",
    )
    .unwrap();
    std::fs::create_dir(d.join("b")).unwrap();
    for k in 0..1_200 {
        std::fs::write(d.join(format!("b/{k:04}.gin")), "x = 1\n").unwrap();
    }
    std::fs::create_dir(d.join("c")).unwrap();
    for k in 0..30 {
        std::fs::write(d.join(format!("c/{k:02}.sh")), "python train.py --lr 1\n").unwrap();
    }
    let e = extract(d, None, &[]).unwrap();
    assert_eq!(e.skipped.len(), MAX_LISTED);
    assert_eq!(e.skipped_more, 200);
    assert_eq!(e.not_walked, 0);
    assert_eq!(e.read.len(), 31);
    // 1 script, folder b and 1,200 files in it, folder c and 30 files: a cap of 100 looks at
    // the script, b and 98 of its files; 1,102 + 1 + 30 are counted, not looked at.
    let options = ExtractOptions {
        max_entries: 100,
        ..ExtractOptions::default()
    };
    let e = extract_with(d, None, &[], &mut Cache::default(), options).unwrap();
    assert_eq!(e.not_walked, 1_102 + 1 + 30);
    assert_eq!(e.read, ["a-train.sh"]);
    assert_eq!(e.skipped.len(), 98);
    assert_eq!(e.facts.get(Field::GpusPerNode).unwrap().value, 4);
}

/// Names and error texts from the directory reach the output cut and escaped: a 200 KB line
/// of a broken TOML file is not echoed, and a name's newline and ESC stay escaped in reasons.
#[test]
fn error_excerpts_are_bounded_and_escaped() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let long = format!("a = \"\u{1b}[31m{}\n", "x".repeat(200_000));
    std::fs::write(d.join("bad.toml"), long).unwrap();
    std::fs::write(d.join("train.sh"), "python train.py --lr 1\n").unwrap();
    let e = extract(d, None, &[]).unwrap();
    let toml = skipped_reason(&e, "bad.toml");
    assert!(toml.starts_with("not valid TOML"), "{toml}");
    assert!(toml.len() < 2_000, "{} characters", toml.len());
    assert!(toml.contains("more characters"), "{toml}");
    assert!(!toml.contains('\n') && !toml.contains('\u{1b}'), "{toml}");
    assert!(toml.contains("\\u{1b}[31m"), "{toml}");
}
