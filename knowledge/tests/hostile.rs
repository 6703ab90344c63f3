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
        ("laughs.yaml", "expand to more than"),
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
