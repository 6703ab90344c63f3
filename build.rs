//! Records what was built, for `schedlm --version` and `schedlm version`: the commit (with
//! `-dirty` when the working tree had changes), the build date (UTC; `SOURCE_DATE_EPOCH` when
//! set, for reproducible builds) and the versions of candle and HiGHS' bindings from
//! Cargo.lock. Outside a git checkout the commit is `unknown`.

use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=.git/HEAD");
    println!("cargo:rerun-if-changed=.git/index");
    println!("cargo:rerun-if-changed=Cargo.lock");
    println!("cargo:rerun-if-env-changed=SOURCE_DATE_EPOCH");
    if let Some(reference) = git(&["symbolic-ref", "-q", "HEAD"]) {
        println!("cargo:rerun-if-changed=.git/{reference}");
    }
    let commit = git(&["rev-parse", "--short=12", "HEAD"]).unwrap_or_else(|| "unknown".into());
    let dirty =
        git(&["status", "--porcelain", "--untracked-files=no"]).is_some_and(|s| !s.is_empty());
    let commit = if dirty {
        format!("{commit}-dirty")
    } else {
        commit
    };
    println!("cargo:rustc-env=SCHEDLM_COMMIT={commit}");
    println!("cargo:rustc-env=SCHEDLM_BUILD_DATE={}", build_date());
    let features: Vec<&str> = [
        ("milp", "CARGO_FEATURE_MILP"),
        ("cuda", "CARGO_FEATURE_CUDA"),
    ]
    .into_iter()
    .filter(|(_, var)| std::env::var_os(var).is_some())
    .map(|(name, _)| name)
    .collect();
    let features = if features.is_empty() {
        "none".to_string()
    } else {
        features.join(", ")
    };
    println!("cargo:rustc-env=SCHEDLM_FEATURES={features}");
    let lock = std::fs::read_to_string("Cargo.lock").unwrap_or_default();
    for (package, var) in [
        ("candle-core", "SCHEDLM_CANDLE_VERSION"),
        ("highs-sys", "SCHEDLM_HIGHS_SYS_VERSION"),
    ] {
        let version = locked_version(&lock, package).unwrap_or_else(|| "unknown".into());
        println!("cargo:rustc-env={var}={version}");
    }
}

/// The output of `git ARGS`, trimmed; `None` when git fails or is missing.
fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// Today in UTC (`YYYY-MM-DD`), or the day of `SOURCE_DATE_EPOCH`.
fn build_date() -> String {
    let secs = std::env::var("SOURCE_DATE_EPOCH")
        .ok()
        .and_then(|s| s.parse::<i64>().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs() as i64)
        });
    let (y, m, d) = civil_from_days(secs.div_euclid(86_400));
    format!("{y:04}-{m:02}-{d:02}")
}

/// The calendar date of a day count since 1970-01-01 (Howard Hinnant's algorithm).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

/// The version of `package` in a Cargo.lock.
fn locked_version(lock: &str, package: &str) -> Option<String> {
    let at = lock.find(&format!("name = \"{package}\"\nversion = \""))?;
    let rest = &lock[at..];
    let start = rest.find("version = \"")? + "version = \"".len();
    let end = rest[start..].find('"')?;
    Some(rest[start..start + end].to_string())
}
