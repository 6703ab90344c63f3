//! Writes a small solved dataset (`test.jsonl`) and a predictions file with valid, reordered,
//! garbage and missing answers (`predictions.jsonl`) into a directory, for trying
//! `schedlm eval` and for tests/browser/check_report.sh.
//!
//! `cargo run -p schedlm-eval --example demo_data -- DIR`

#[path = "../tests/common/mod.rs"]
mod common;

fn main() {
    let Some(dir) = std::env::args().nth(1) else {
        eprintln!("usage: demo_data DIR");
        std::process::exit(2);
    };
    let dir = std::path::Path::new(&dir);
    if let Err(e) = std::fs::create_dir_all(dir) {
        eprintln!("cannot create {}: {e}", dir.display());
        std::process::exit(1);
    }
    let records = common::mixed();
    common::write_records(&dir.join("test.jsonl"), &records);
    if let Err(e) = std::fs::write(dir.join("predictions.jsonl"), common::predictions(&records)) {
        eprintln!("cannot write predictions: {e}");
        std::process::exit(1);
    }
    println!("wrote {} records to {}", records.len(), dir.display());
}
