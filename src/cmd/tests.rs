//! Tests of the command line as a whole: flag spellings shared by every command, and the
//! rules between options.

use super::*;

fn parse(args: &str) -> Result<Cli, clap::Error> {
    Cli::try_parse_from(args.split_whitespace())
}

/// Every `-o` is spelled both `--out` and `--output` (one the name, the other a visible
/// alias), so the spelling of the command a user ran a minute ago never fails.
#[test]
fn every_dash_o_takes_both_spellings() {
    use clap::CommandFactory;
    fn walk(command: &clap::Command, path: &str, seen: &mut usize) {
        for arg in command.get_arguments() {
            if arg.get_short() != Some('o') {
                continue;
            }
            *seen += 1;
            let mut names: Vec<&str> = arg.get_long().into_iter().collect();
            names.extend(arg.get_visible_aliases().unwrap_or_default());
            assert!(
                names.contains(&"out") && names.contains(&"output"),
                "{path}: -o is {names:?}"
            );
        }
        for sub in command.get_subcommands() {
            walk(sub, &format!("{path} {}", sub.get_name()), seen);
        }
    }
    let mut seen = 0;
    walk(&Cli::command(), "schedlm", &mut seen);
    assert!(seen >= 12, "{seen} commands with -o");
}

/// Every command that can take more than a few seconds has `-q/--quiet` and `--progress`
/// from the one place that decides ([`crate::io::ProgressArgs`]).
#[test]
fn long_commands_take_quiet_and_progress() {
    use clap::CommandFactory;
    let cli = Cli::command();
    for path in [
        "solve",
        "eval",
        "finetune",
        "predict",
        "rl",
        "estimate",
        "dataset build",
        "dataset merge",
        "bench solve",
        "generate",
        "import psplib",
    ] {
        let mut command = &cli;
        for name in path.split(' ') {
            command = command
                .find_subcommand(name)
                .unwrap_or_else(|| panic!("no command {path}"));
        }
        let args: Vec<_> = command.get_arguments().collect();
        let quiet = args.iter().find(|a| a.get_long() == Some("quiet"));
        assert!(
            quiet.is_some_and(|a| a.get_short() == Some('q')),
            "{path}: no -q/--quiet"
        );
        assert!(
            args.iter().any(|a| a.get_long() == Some("progress")),
            "{path}: no --progress"
        );
    }
}

/// Wherever `--quiet` is documented, `-q` is accepted too, and means the same.
#[test]
fn every_quiet_takes_q() {
    use clap::CommandFactory;
    fn walk(command: &clap::Command, path: &str, seen: &mut usize) {
        for arg in command.get_arguments() {
            if arg.get_long() == Some("quiet") {
                *seen += 1;
                assert_eq!(arg.get_short(), Some('q'), "{path}: --quiet without -q");
            }
        }
        for sub in command.get_subcommands() {
            walk(sub, &format!("{path} {}", sub.get_name()), seen);
        }
    }
    let mut seen = 0;
    walk(&Cli::command(), "schedlm", &mut seen);
    assert!(seen >= 11, "{seen} commands with --quiet");
}

/// An option that only means something with another one is refused without it, also when
/// a conflicting option is given (clap skips `requires` then: clap-rs/clap#4520).
#[test]
fn options_that_need_another_are_refused_without_it() {
    for line in [
        "schedlm generate --family hpc --policy sjf",
        "schedlm generate --servers 3 --every 2",
        "schedlm generate --estimate last2",
        "schedlm estimate --train a.swf --test b.swf --split 0.3",
        "schedlm replay --trace t.swf -o out --window 0:3 --windows 2x3",
    ] {
        assert!(parse(line).is_err(), "accepted: {line}");
    }
    for line in [
        "schedlm generate --from-trace t.swf --policy sjf --every 2",
        "schedlm estimate --trace t.swf --split 0.3",
        "schedlm replay --trace t.swf -o out --windows 2x3 --estimate oracle",
    ] {
        assert!(parse(line).is_ok(), "refused: {line}");
    }
}

/// What clap cannot refuse, the commands do, naming the options.
#[test]
fn generated_shape_options_are_refused_with_snapshots_from_elsewhere() {
    let Ok(Cli {
        command: Command::Generate(args),
    }) = parse("schedlm generate --from-trace t.swf --family dl --load 0.5")
    else {
        panic!("does not parse");
    };
    let e = generate::run(&args).unwrap_err().to_string();
    assert!(e.contains("drop --family, --load"), "{e}");
    let Ok(Cli {
        command: Command::Estimate(args),
    }) = parse("schedlm estimate --trace t.swf --train a.swf --test b.swf")
    else {
        panic!("does not parse");
    };
    let e = estimate::run(&args).unwrap_err().to_string();
    assert!(e.contains("not both"), "{e}");
    let Ok(Cli {
        command: Command::Dataset(command),
    }) = parse("schedlm dataset build --from x.jsonl --family dl --queue 3 --deps 0.1 -o d")
    else {
        panic!("does not parse");
    };
    let e = dataset::run(&command).unwrap_err().to_string();
    assert!(e.contains("drop --family, --queue, --deps"), "{e}");
}
