//! `schedlm completions SHELL` and `schedlm man`: shell completions and manual pages,
//! generated from the same definitions as `--help` (clap_complete, clap_mangen).

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::{Args, CommandFactory};
use clap_complete::Shell;

use super::Cli;

/// `schedlm completions`.
#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell: bash, zsh, fish, elvish or powershell. Install, for example, with
    /// `schedlm completions bash > ~/.local/share/bash-completion/completions/schedlm`.
    pub shell: Shell,
}

/// `schedlm man`.
#[derive(Debug, Args)]
pub struct ManArgs {
    /// Write `schedlm.1` and one page per subcommand (`schedlm-solve.1`, ...) into this
    /// directory (created if missing) instead of printing `schedlm.1` to standard output.
    /// Read one with `man -l DIR/schedlm.1`.
    #[arg(
        short = 'o',
        long = "out",
        visible_alias = "output",
        value_name = "DIR"
    )]
    pub out: Option<PathBuf>,
}

pub fn completions(args: &CompletionsArgs) -> Result<()> {
    let mut command = Cli::command();
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut command, "schedlm", &mut script);
    std::io::Write::write_all(&mut std::io::stdout(), &script)
        .context("writing the completion script")?;
    Ok(())
}

pub fn man(args: &ManArgs) -> Result<()> {
    let command = Cli::command();
    let Some(dir) = &args.out else {
        clap_mangen::Man::new(command)
            .render(&mut std::io::stdout())
            .context("writing the manual page")?;
        return Ok(());
    };
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let mut pages = 0;
    write_pages(&command, "schedlm", dir, &mut pages)?;
    eprintln!("man: wrote {pages} pages into {}", dir.display());
    Ok(())
}

/// Writes the page of `command` (named `name`) and of each of its subcommands, recursively.
fn write_pages(
    command: &clap::Command,
    name: &str,
    dir: &std::path::Path,
    pages: &mut usize,
) -> Result<()> {
    let page = dir.join(format!("{name}.1"));
    let mut text = Vec::new();
    let named = command
        .clone()
        .display_name(name.to_string())
        .bin_name(name.replace('-', " "));
    clap_mangen::Man::new(named)
        .title(name.to_string())
        .render(&mut text)
        .context("rendering a manual page")?;
    std::fs::write(&page, text).with_context(|| format!("writing {}", page.display()))?;
    *pages += 1;
    for sub in command.get_subcommands().filter(|s| s.get_name() != "help") {
        write_pages(sub, &format!("{name}-{}", sub.get_name()), dir, pages)?;
    }
    Ok(())
}
