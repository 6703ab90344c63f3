//! `schedlm`: the command-line front end. It only parses arguments and calls the library
//! crates (`schedlm-model`, `schedlm-generator`, `schedlm-solver`), so every command is also
//! a library call.

mod args;
mod cmd;
mod io;

use clap::Parser;

/// mimalloc keeps freed pages for reuse; the system allocator returns large blocks to the
/// kernel, which zero-fills them again on the next touch (docs/benchmarks.md).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    let cli = args::Cli::parse();
    if let Err(e) = cmd::run(cli) {
        eprintln!("error: {e:#}");
        std::process::exit(1);
    }
}
