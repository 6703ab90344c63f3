//! schedlm on a real Slurm (issue #36, docs/slurm.md): the job array of `slurm/build.sbatch`
//! and the merge job of `slurm/merge.sbatch` after it (`--dependency=afterok`) give the same
//! files as one unsharded build, also when a shard is requeued in the middle of its build.
//!
//! The job_submit filter (`slurm/job_submit.lua`, `schedlm submit fill`) fills a job from the
//! history, reads only what the submitting user may read, and leaves a job unchanged, with the
//! cause, when the history is locked.
//!
//! Needs a running cluster: `scripts/test.sh` starts one with `slurm/cluster.sh` and exports
//! `SLURM_CONF`; without one (or without the Slurm commands) the tests are skipped, and say so.
//! The tests of another user's rights need root (to start the reader as that user, and to
//! create the user `schedlm-test2`); without it they are skipped.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use common::{path_str, tempdir};

/// Whether a cluster answers; skips the calling test (counted) when not.
fn cluster() -> bool {
    let up = std::env::var_os("SLURM_CONF").is_some()
        && Command::new("sinfo")
            .args(["-h", "-o", "%T"])
            .output()
            .is_ok_and(|o| o.status.success() && !o.stdout.is_empty());
    if !up {
        schedlm_model::skips::skip(
            "slurm",
            "no Slurm cluster (scripts/test.sh starts one with slurm/cluster.sh; SLURM_CONF)",
        );
    }
    up
}

/// The build of the tests: small, and labelled under a node limit, so every run gives the
/// same bytes.
const BUILD_ARGS: &str = "--family hpc --count 400 --queue 10..12 --solver bnb \
    --node-limit 50000 --seed 3 --chunk 2";

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `sbatch --parsable` of `script` with the test's resources and environment; the job id.
fn sbatch(dir: &Path, script: &str, extra: &[&str]) -> String {
    let bin = Path::new(env!("CARGO_BIN_EXE_schedlm"));
    let out = Command::new("sbatch")
        .current_dir(dir)
        .args([
            "--parsable",
            "--cpus-per-task=1",
            "--mem=1G",
            "--time=00:15:00",
        ])
        .args(extra)
        .arg(format!(
            "--export=ALL,OUT={},SCHEDLM={},BUILD_ARGS={BUILD_ARGS}",
            path_str(&dir.join("out")),
            path_str(bin)
        ))
        .arg(repo().join("slurm").join(script))
        .output()
        .expect("sbatch runs");
    let text = String::from_utf8_lossy(&out.stdout).trim().to_string();
    assert!(
        out.status.success(),
        "sbatch {script}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    text.split(';').next().unwrap_or_default().to_string()
}

/// `scontrol show job -o ID`: one line per job (per array task), as `key=value` words.
fn jobs(id: &str) -> Vec<String> {
    let out = Command::new("scontrol")
        .args(["show", "job", "-o", id])
        .output()
        .expect("scontrol runs");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect()
}

/// The value of `key` in a `scontrol show job -o` line.
fn field<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    line.split_whitespace()
        .find_map(|w| w.strip_prefix(key)?.strip_prefix('='))
}

/// Waits until every job of `id` ended; panics with the states on a failure or after 5 min.
fn wait(id: &str, dir: &Path) {
    let started = Instant::now();
    loop {
        let lines = jobs(id);
        let states: Vec<&str> = lines.iter().filter_map(|l| field(l, "JobState")).collect();
        let failed = states.iter().any(|s| {
            matches!(
                *s,
                "FAILED" | "CANCELLED" | "TIMEOUT" | "NODE_FAIL" | "OUT_OF_MEMORY"
            )
        });
        assert!(!failed, "job {id}: {states:?}\n{}", logs(dir));
        if !states.is_empty() && states.iter().all(|s| *s == "COMPLETED") {
            return;
        }
        assert!(
            started.elapsed() < Duration::from_secs(300),
            "job {id} still {states:?} after 5 min\n{}",
            logs(dir)
        );
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// The jobs' output files, for a failure's message.
fn logs(dir: &Path) -> String {
    let mut text = String::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.extension().is_some_and(|e| e == "out") {
            text += &format!(
                "--- {}\n{}",
                path.display(),
                std::fs::read_to_string(&path).unwrap_or_default()
            );
        }
    }
    text
}

/// The unsharded build's files, to compare with.
fn reference(dir: &Path) -> PathBuf {
    let out = dir.join("reference");
    let mut args = vec!["dataset", "build", "-q", "-j", "1", "-o"];
    let o = path_str(&out);
    args.push(&o);
    args.extend(BUILD_ARGS.split_whitespace());
    common::run(&args).ok();
    out
}

fn assert_same_files(reference: &Path, merged: &Path) {
    for split in ["train", "val", "test"] {
        let name = format!("{split}.jsonl");
        let a = std::fs::read(reference.join(&name)).unwrap();
        let b = std::fs::read(merged.join(&name)).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(
            !a.is_empty() || split != "train",
            "the reference build is empty"
        );
        assert!(a == b, "{name} differs from the unsharded build");
    }
}

/// The unsharded build, then an array of 4 shards and the merge job after it: (the reference
/// build's directory, the array's job id, the merge's job id).
fn submit_array_and_merge(dir: &Path) -> (PathBuf, String, String) {
    let reference = reference(dir);
    let array = sbatch(dir, "build.sbatch", &["--array=1-4"]);
    let merge = sbatch(
        dir,
        "merge.sbatch",
        &[&format!("--dependency=afterok:{array}")],
    );
    (reference, array, merge)
}

#[test]
fn a_sharded_array_build_merged_after_it_equals_one_build() {
    if !cluster() {
        return;
    }
    let dir = tempdir();
    let (reference, array, merge) = submit_array_and_merge(dir.path());
    wait(&array, dir.path());
    wait(&merge, dir.path());
    assert_same_files(&reference, &dir.path().join("out/merged"));
}

#[test]
fn a_shard_requeued_in_the_middle_of_its_build_still_gives_the_same_files() {
    if !cluster() {
        return;
    }
    let dir = tempdir();
    let (reference, array, merge) = submit_array_and_merge(dir.path());
    // Shard 2, once it has written some chunks: killed and put back in the queue.
    let task = format!("{array}_2");
    let parts = dir.path().join("out/part-2/parts");
    let started = Instant::now();
    loop {
        let chunks = std::fs::read_dir(&parts).map_or(0, |d| d.count());
        let running = jobs(&task)
            .first()
            .is_some_and(|l| field(l, "JobState") == Some("RUNNING"));
        if running && chunks >= 2 {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "shard 2 never ran with chunks written\n{}",
            logs(dir.path())
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let requeued = Command::new("scontrol")
        .args(["requeue", &task])
        .output()
        .expect("scontrol runs");
    assert!(
        requeued.status.success(),
        "requeue: {}",
        String::from_utf8_lossy(&requeued.stderr)
    );
    wait(&array, dir.path());
    wait(&merge, dir.path());
    let restarts = jobs(&task)
        .first()
        .and_then(|l| field(l, "Restarts").map(str::to_string));
    assert_eq!(restarts.as_deref(), Some("1"), "shard 2 ran twice");
    assert_same_files(&reference, &dir.path().join("out/merged"));
}

/// `schedlm` with `args`, which must succeed.
fn schedlm(args: &[&str]) {
    common::run(args).ok();
}

/// `sbatch` of `script` from `dir` (its working directory), held so that it never runs; its
/// standard error (what the job_submit plugin told the user) and job id.
fn submit_held(dir: &Path, script: &str, extra: &[&str]) -> (String, String) {
    let out = Command::new("sbatch")
        .current_dir(dir)
        .args(["--parsable", "--hold"])
        .args(extra)
        .arg(script)
        .output()
        .expect("sbatch runs");
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "sbatch: {err}");
    let id = String::from_utf8_lossy(&out.stdout).trim().to_string();
    (err, id)
}

/// The job's line of `scontrol show job -o`, and the job cancelled.
fn show_and_cancel(id: &str) -> String {
    let line = jobs(id).first().cloned().unwrap_or_default();
    let _ = Command::new("scancel").arg(id).output();
    line
}

/// Job facts at submission: a script without `--time` and without GPUs gets its time limit
/// from the history (1.5 x the nearest past run) and its GPUs and batch size from past runs of
/// its model, all said in its comment; a job the filler cannot read goes in unchanged with a
/// warning; `--comment=schedlm=off` opts out.
#[test]
fn the_job_submit_plugin_fills_time_gpus_and_batch_from_the_history() {
    if !cluster() {
        return;
    }
    let dir = tempdir();
    let d = dir.path();
    let write = |path: &str, text: &str| {
        let path = d.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    // Two past jobs: BERT (1.5 h) and YOLOv3 (5.6 h).
    write(
        "past/bert/train.sh",
        "#!/bin/bash\n#SBATCH --time=04:00:00\ntorchrun --nproc_per_node 4 train.py \
         --model_name_or_path bert --num_train_epochs 2\n",
    );
    write(
        "past/yolo/train.sh",
        "#!/bin/bash\n#SBATCH --time=10:00:00\ntorchrun --nproc_per_node 4 train.py \
         --model_name_or_path yolov3 --num_train_epochs 2\n",
    );
    let db = path_str(&d.join("history.sqlite"));
    for (name, actual, submit) in [("bert", "5400", "1000"), ("yolo", "20000", "2000")] {
        let facts = path_str(&d.join(format!("{name}.json")));
        schedlm(&[
            "extract",
            &path_str(&d.join("past").join(name)),
            "-o",
            &facts,
        ]);
        schedlm(&[
            "history",
            "add",
            "--db",
            &db,
            "--job",
            &facts,
            "--name",
            name,
            "--actual",
            actual,
            "--outcome",
            "completed",
            "--submit",
            submit,
            "--start",
            submit,
            "--gpus",
            "4",
        ]);
    }
    // The new job: BERT again, no --time, no GPUs.
    write(
        "new/train.sh",
        "#!/bin/bash\n#SBATCH --nodes=1\npython train.py --model_name_or_path bert \
         --num_train_epochs 2\n",
    );
    let conf_dir = PathBuf::from(std::env::var("SLURM_CONF").unwrap())
        .parent()
        .unwrap()
        .to_path_buf();
    let runs = repo().join("tests/data/knowledge/runs/pollux-throughput.csv");
    let settings = |db: &str| {
        format!(
            "schedlm = {}\ndb = {db}\nruns = {}\nmargin = 1.5\ntimeout = 20\nbudget_ms = 10000\n",
            env!("CARGO_BIN_EXE_schedlm"),
            path_str(&runs)
        )
    };
    let conf = conf_dir.join("schedlm-submit.conf");
    std::fs::write(&conf, settings(&db)).unwrap();
    let (told, id) = submit_held(&d.join("new"), "train.sh", &[]);
    let job = show_and_cancel(&id);
    // 1.5 x 5,400 s = 135 min; the fastest BERT configuration of the runs: 8 GPUs, 12 each.
    assert_eq!(field(&job, "TimeLimit"), Some("02:15:00"), "{job}\n{told}");
    assert_eq!(field(&job, "TresPerNode"), Some("gres:gpu:8"), "{job}");
    let comment = job.split("Comment=").nth(1).unwrap_or_default();
    assert!(
        comment.starts_with("schedlm filled: time 2:15:00") && comment.contains("batch 12 per GPU"),
        "{job}"
    );
    assert!(
        told.contains("schedlm filled: time 2:15:00"),
        "the user is told: {told}"
    );

    // What the job states is kept.
    let (_, id) = submit_held(
        &d.join("new"),
        "train.sh",
        &["--time=00:30:00", "--gres=gpu:2"],
    );
    let job = show_and_cancel(&id);
    assert_eq!(field(&job, "TimeLimit"), Some("00:30:00"), "{job}");
    assert_eq!(field(&job, "TresPerNode"), Some("gres:gpu:2"), "{job}");

    // Opting out.
    let (_, id) = submit_held(&d.join("new"), "train.sh", &["--comment=schedlm=off"]);
    let job = show_and_cancel(&id);
    assert_eq!(field(&job, "TimeLimit"), Some("UNLIMITED"), "{job}");

    // A filler that fails (here: a history that does not exist): unchanged, with a warning.
    std::fs::write(&conf, settings(&path_str(&d.join("missing.sqlite")))).unwrap();
    let (told, id) = submit_held(&d.join("new"), "train.sh", &[]);
    let job = show_and_cancel(&id);
    std::fs::write(&conf, settings(&db)).unwrap();
    assert!(
        told.contains("schedlm: could not read the job") && told.contains("submitted unchanged"),
        "{told}"
    );
    assert_eq!(field(&job, "TimeLimit"), Some("UNLIMITED"), "{job}");

    // The replay that measures the filter reads the same settings and the same history.
    let replay = Command::new(env!("CARGO_BIN_EXE_schedlm"))
        .args([
            "history",
            "replay",
            "--conf",
            &path_str(&conf),
            "--servers",
            "1",
        ])
        .output()
        .unwrap();
    let table = String::from_utf8_lossy(&replay.stdout);
    assert!(
        replay.status.success(),
        "{}",
        String::from_utf8_lossy(&replay.stderr)
    );
    assert!(
        table.starts_with(&format!(
            "2 jobs of {db} on a pool of 8 GPUs; filter: prediction x 1.5"
        )),
        "{table}"
    );
}

/// Whether this process runs as root; skips the calling test (counted) when not.
fn root() -> bool {
    let out = Command::new("id").arg("-u").output();
    let root = out.is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0");
    if !root {
        schedlm_model::skips::skip("root", "not root: another user's rights cannot be taken");
    }
    root
}

/// The uid and gid of `user`, creating it (no home, no login) when missing.
fn user_ids(user: &str) -> (String, String) {
    let id = |flag: &str| {
        Command::new("id")
            .args([flag, user])
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    if id("-u").is_none() {
        let made = Command::new("useradd")
            .args(["--no-create-home", "--shell", "/usr/sbin/nologin", user])
            .output()
            .expect("useradd runs");
        assert!(
            made.status.success(),
            "useradd {user}: {}",
            String::from_utf8_lossy(&made.stderr)
        );
    }
    (id("-u").unwrap(), id("-g").unwrap())
}

fn chmod(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// A secret only root may read: a folder (mode 700) whose job names it as its model.
const SECRET: &str = "secret-root-model-4242";

/// A history of one BERT run (1.5 h) in `d/history.sqlite`, and a root-only folder
/// `d/private` (mode 700) whose script trains the secret model; `d` is left open to all
/// (mode 755) and the history readable by all.
fn history_and_private_folder(d: &Path) -> String {
    chmod(d, 0o755);
    std::fs::create_dir_all(d.join("past")).unwrap();
    std::fs::write(
        d.join("past/train.sh"),
        "#!/bin/bash\npython train.py --model_name_or_path bert --num_train_epochs 2\n",
    )
    .unwrap();
    let facts = path_str(&d.join("bert.json"));
    schedlm(&["extract", &path_str(&d.join("past")), "-o", &facts]);
    let db = path_str(&d.join("history.sqlite"));
    schedlm(&[
        "history",
        "add",
        "--db",
        &db,
        "--job",
        &facts,
        "--name",
        "bert",
        "--actual",
        "5400",
        "--outcome",
        "completed",
    ]);
    let private = d.join("private");
    std::fs::create_dir_all(&private).unwrap();
    std::fs::write(
        private.join("train.sh"),
        format!("#!/bin/bash\n#SBATCH --nodes=1\npython train.py --model_name_or_path {SECRET}\n"),
    )
    .unwrap();
    chmod(&private, 0o700);
    db
}

/// `schedlm submit fill` run as root for another user (`nobody`): it reads the job script it
/// is given and the folder only with that user's rights, so a folder of root's (mode 700)
/// gives nothing, and what it could not read is said without its names or contents; a file of
/// root's in a folder the user may list is counted, not read. Root's own submission reads
/// everything (the same folder gives the secret model).
#[test]
fn submit_fill_as_root_reads_the_folder_only_with_the_submitters_rights() {
    if !root() {
        return;
    }
    let dir = tempdir();
    let d = dir.path();
    let db = history_and_private_folder(d);
    let runs = path_str(&repo().join("tests/data/knowledge/runs/pollux-throughput.csv"));
    let (uid, gid) = user_ids("nobody");
    let fill = |dir: &Path, script: Option<&Path>, who: Option<(&str, &str)>| {
        let mut args = vec![
            "submit".to_string(),
            "fill".into(),
            "--dir".into(),
            path_str(dir),
            "--db".into(),
            db.clone(),
            "--runs".into(),
            runs.clone(),
            "--budget-ms".into(),
            "10000".into(),
        ];
        if let Some(script) = script {
            args.extend(["--script".into(), path_str(script)]);
        }
        if let Some((uid, gid)) = who {
            args.extend(["--uid".into(), uid.into(), "--gid".into(), gid.into()]);
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        common::run(&args).ok().stdout_text()
    };
    let private = d.join("private");
    // Root's own job: the folder is read.
    let own = fill(&private, None, None);
    assert!(own.contains(SECRET), "{own}");
    // nobody's job with --chdir there: nothing of it.
    let theirs = fill(&private, None, Some((&uid, &gid)));
    assert!(!theirs.contains(SECRET), "{theirs}");
    assert!(
        theirs.contains("dir: not read: the directory is not readable by the submitting user"),
        "{theirs}"
    );
    // The script Slurm passes is read (it is the user's own): BERT, 1.5 x 5,400 s.
    let script = d.join("script.sh");
    std::fs::write(
        &script,
        "#!/bin/bash\npython train.py --model_name_or_path bert --num_train_epochs 2\n",
    )
    .unwrap();
    let with_script = fill(&private, Some(&script), Some((&uid, &gid)));
    assert!(
        with_script.contains("\"time_limit_min\":135") && !with_script.contains(SECRET),
        "{with_script}"
    );
    // A folder nobody may list, holding a file only root may read and a link out.
    let open = d.join("open");
    std::fs::create_dir_all(&open).unwrap();
    chmod(&open, 0o755);
    std::fs::write(open.join("train.sh"), std::fs::read(&script).unwrap()).unwrap();
    std::fs::write(
        open.join("secret.yaml"),
        format!("model_name_or_path: {SECRET}\n"),
    )
    .unwrap();
    chmod(&open.join("secret.yaml"), 0o600);
    std::os::unix::fs::symlink(private.join("train.sh"), open.join("link.sh")).unwrap();
    let listed = fill(&open, None, Some((&uid, &gid)));
    assert!(
        !listed.contains(SECRET) && !listed.contains("secret.yaml") && !listed.contains("link.sh"),
        "{listed}"
    );
    assert!(
        listed.contains("1 not readable by the submitting user")
            && listed.contains("1 links (never followed)")
            && listed.contains("\"time_limit_min\":135"),
        "{listed}"
    );
}

/// `sbatch` run as `user` (with this process's environment: SLURM_CONF).
fn sbatch_as(user: &str, dir: &Path, args: &[&str]) -> (String, String) {
    let out = Command::new("runuser")
        .args(["-u", user, "--", "sbatch", "--parsable", "--hold"])
        .args(args)
        .current_dir(dir)
        .output()
        .expect("runuser runs");
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "sbatch as {user}: {err}");
    (err, String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// The settings file of the test cluster's plugin.
fn plugin_settings(db: &str) -> PathBuf {
    let conf_dir = PathBuf::from(std::env::var("SLURM_CONF").unwrap())
        .parent()
        .unwrap()
        .to_path_buf();
    let conf = conf_dir.join("schedlm-submit.conf");
    std::fs::write(
        &conf,
        format!(
            "schedlm = {}\ndb = {db}\nmargin = 1.5\ntimeout = 20\nbudget_ms = 10000\n",
            env!("CARGO_BIN_EXE_schedlm")
        ),
    )
    .unwrap();
    conf
}

/// Through slurmctld: a second user submitting with `--chdir` to root's private folder learns
/// nothing of it (not in what sbatch prints, not in the job's comment), and is told that the
/// folder was not read; its own script is still read.
#[test]
fn another_users_private_folder_tells_a_submitter_nothing() {
    if !cluster() || !root() {
        return;
    }
    let user = "schedlm-test2";
    user_ids(user);
    let dir = tempdir();
    let d = dir.path();
    let db = history_and_private_folder(d);
    plugin_settings(&db);
    let mine = d.join("mine");
    std::fs::create_dir_all(&mine).unwrap();
    chmod(&mine, 0o755);
    std::fs::write(
        mine.join("job.sh"),
        "#!/bin/bash\npython train.py --model_name_or_path bert --num_train_epochs 2\n",
    )
    .unwrap();
    let private = path_str(&d.join("private"));
    let (told, id) = sbatch_as(user, &mine, &[&format!("--chdir={private}"), "job.sh"]);
    let job = show_and_cancel(&id);
    assert!(
        !told.contains(SECRET) && !job.contains(SECRET),
        "{told}\n{job}"
    );
    assert!(
        told.contains("dir: not read: the directory is not readable by the submitting user"),
        "{told}"
    );
    assert_eq!(field(&job, "TimeLimit"), Some("02:15:00"), "{job}\n{told}");
}

/// Through slurmctld: a history locked by a writer is not waited for: the job goes in
/// unchanged at once, and the user is told why.
#[test]
fn a_locked_history_leaves_the_job_unchanged_with_the_cause() {
    if !cluster() {
        return;
    }
    let dir = tempdir();
    let d = dir.path();
    let db = history_and_private_folder(d);
    plugin_settings(&db);
    let mine = d.join("mine");
    std::fs::create_dir_all(&mine).unwrap();
    std::fs::write(
        mine.join("job.sh"),
        "#!/bin/bash\npython train.py --model_name_or_path bert --num_train_epochs 2\n",
    )
    .unwrap();
    let writer = rusqlite::Connection::open(&db).unwrap();
    writer.execute_batch("BEGIN EXCLUSIVE").unwrap();
    let (told, id) = submit_held(&mine, "job.sh", &[]);
    writer.execute_batch("ROLLBACK").unwrap();
    let job = show_and_cancel(&id);
    assert!(
        told.contains("schedlm: submitted unchanged: lock: the history")
            && told.contains("is locked by a writer"),
        "{told}"
    );
    assert_eq!(field(&job, "TimeLimit"), Some("UNLIMITED"), "{job}");
    // Unlocked, the same job is filled.
    let (_, id) = submit_held(&mine, "job.sh", &[]);
    let job = show_and_cancel(&id);
    assert_eq!(field(&job, "TimeLimit"), Some("02:15:00"), "{job}");
}
