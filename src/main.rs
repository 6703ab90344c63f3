//! `schedlm`: the command-line front end. It only parses arguments and calls the library
//! crates (`schedlm-model`, `schedlm-generator`, `schedlm-solver`), so every command is also
//! a library call.

#[macro_use]
mod io;
mod args;
mod cmd;

use clap::Parser;

/// mimalloc keeps freed pages for reuse; the system allocator returns large blocks to the
/// kernel, which zero-fills them again on the next touch (docs/benchmarks.md).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Index of `mi_option_purge_delay` in mimalloc's `mi_option_e` (15 in mimalloc 2 and 3; the
/// Rust bindings do not name it).
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// Never hands freed memory back to the kernel (unless `MIMALLOC_PURGE_DELAY` says otherwise):
/// training frees and allocates the same large tensors at every step, and each page returned
/// would be zero-filled by the kernel again on its next touch (19 % of a training step at 942
/// tokens; docs/benchmarks.md). Resident memory stays at its peak instead.
fn keep_freed_memory() {
    if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
        // SAFETY: sets one integer option of the allocator; any value is valid for it.
        unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, -1) };
    }
}

fn main() {
    keep_freed_memory();
    let cli = cmd::Cli::parse();
    if let Err(e) = cmd::run(cli) {
        // A reader that stopped reading (`schedlm ... | head`) is not an error of ours: stop
        // quietly, as other Unix tools do.
        if io::is_broken_pipe(&e) {
            std::process::exit(0);
        }
        eprintln!("error: {}", message(&e));
        std::process::exit(1);
    }
}

/// The error and its causes, `: `-separated, each cause once: library errors often repeat
/// their cause in their own message ("x.gz: cannot read: unexpected end of file"), and the
/// chain would print it again.
fn message(e: &anyhow::Error) -> String {
    let mut text = e.to_string();
    for cause in e.chain().skip(1) {
        let cause = cause.to_string();
        if !text.contains(&cause) {
            text.push_str(": ");
            text.push_str(&cause);
        }
    }
    text
}
