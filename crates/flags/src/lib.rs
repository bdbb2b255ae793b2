//! The command lines of Karpathy's programs spell a flag more than one way:
//! nanoGPT's configurator and nanochat's argparse take `--max_seq_len` and
//! `--max-seq-len`, Torch's `CmdLine` in char-rnn takes `-rnn_size`. Our tools
//! declare each flag once, as clap spells it (`--max-seq-len`), and
//! [`normalize`] rewrites what the user typed to that spelling before clap
//! parses it.
//!
//! It reads the clap command to know which flags take a value, so a value is
//! never rewritten (`--prime-text -hello_there` keeps its value, and so does
//! `-n -1`), and an on/off switch (`--quick`, `--ddp`) takes no value from the
//! argument after it. A flag it does not know is passed on as it is, for clap
//! to refuse by name.

use clap::{Arg, Command, Parser};
use std::ffi::OsString;

/// `T` parsed from this process's arguments, each flag first rewritten to
/// clap's spelling ([`normalize`]); exits with clap's message on an error,
/// as `T::parse()` does.
pub fn parse<T: Parser>() -> T {
    parse_from(std::env::args_os())
}

/// [`parse`] from the given arguments (the first is the program's name).
pub fn parse_from<T: Parser>(args: impl IntoIterator<Item = impl Into<OsString>>) -> T {
    T::parse_from(normalize(&T::command(), args))
}

/// [`parse_from`] that returns clap's error instead of exiting.
pub fn try_parse_from<T: Parser>(
    args: impl IntoIterator<Item = impl Into<OsString>>,
) -> Result<T, clap::Error> {
    let command = T::command();
    let matches = command
        .clone()
        .try_get_matches_from(normalize(&command, args))?;
    T::from_arg_matches(&matches)
}

/// The arguments with every flag that `command` (or the subcommand named
/// before it) knows spelt as clap spells it: one or two leading dashes, `_`
/// or `-` between words, and `=value` or a value after it all give
/// `--long-name`. Values, positionals, short flags and everything after `--`
/// are left as they are.
pub fn normalize(
    command: &Command,
    args: impl IntoIterator<Item = impl Into<OsString>>,
) -> Vec<OsString> {
    let mut args = args.into_iter().map(Into::into);
    let mut out: Vec<OsString> = args.next().into_iter().collect();
    // The command and the subcommands chosen so far: a flag may be any of theirs
    // (clap's global flags are declared on a parent).
    let mut chosen: Vec<&Command> = vec![command];
    while let Some(arg) = args.next() {
        if arg == "--" {
            out.push(arg);
            out.extend(args.by_ref());
            break;
        }
        // An argument that is not UTF-8 is no flag: clap reads it as it is.
        let Some(spelt) = arg.to_str().and_then(flag) else {
            let sub = arg
                .to_str()
                .and_then(|name| chosen.last().and_then(|c| c.find_subcommand(name)));
            out.push(arg);
            if let Some(sub) = sub {
                chosen.push(sub);
            }
            continue;
        };
        let known = chosen.iter().rev().find_map(|c| find(c, &spelt));
        let Some(known) = known else {
            out.push(arg);
            continue;
        };
        let takes_value = known.get_action().takes_values();
        match &spelt.value {
            Some(value) => out.push(format!("{}={value}", spelt.clap_form()).into()),
            None => {
                out.push(spelt.clap_form().into());
                if takes_value {
                    // The value comes next, whatever it looks like.
                    out.extend(args.next());
                }
            }
        }
    }
    out
}

/// A flag as typed: its name without dashes, and its `=value` if any.
struct Spelt {
    name: String,
    /// True for a one-dash flag of one letter (`-n`): clap's short form.
    short: bool,
    value: Option<String>,
}

impl Spelt {
    fn clap_form(&self) -> String {
        match self.short {
            true => format!("-{}", self.name),
            false => format!("--{}", self.name),
        }
    }
}

/// `Some` where `arg` is a flag: one or two dashes, then a letter (so `-1`
/// and `-0.5` are values, not flags).
fn flag(arg: &str) -> Option<Spelt> {
    let dashes = arg.len() - arg.trim_start_matches('-').len();
    let rest = &arg[dashes..];
    if !(1..=2).contains(&dashes) || !rest.starts_with(|c: char| c.is_ascii_alphabetic()) {
        return None;
    }
    let (name, value) = match rest.split_once('=') {
        Some((name, value)) => (name, Some(value.to_string())),
        None => (rest, None),
    };
    Some(Spelt {
        name: name.replace('_', "-"),
        short: dashes == 1 && name.len() == 1,
        value,
    })
}

/// The argument of `command` that `spelt` names: by its long name or an alias
/// of it, or a one-letter flag by its short name.
fn find<'a>(command: &'a Command, spelt: &Spelt) -> Option<&'a Arg> {
    command.get_arguments().find(|a| match spelt.short {
        true => spelt
            .name
            .chars()
            .next()
            .is_some_and(|c| a.get_short() == Some(c) || a.get_long() == Some(&spelt.name)),
        false => {
            a.get_long() == Some(&spelt.name)
                || a.get_all_aliases()
                    .is_some_and(|aliases| aliases.contains(&spelt.name.as_str()))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[derive(Parser, Debug, PartialEq)]
    struct Cli {
        #[command(subcommand)]
        command: Sub,
        /// A flag every subcommand takes.
        #[arg(long, global = true, default_value = "runs")]
        out_dir: String,
    }

    #[derive(clap::Subcommand, Debug, PartialEq)]
    enum Sub {
        Train {
            #[arg(long, default_value_t = 128)]
            rnn_size: usize,
            #[arg(long, allow_negative_numbers = true, default_value_t = 0)]
            gpuid: i64,
            #[arg(long)]
            quick: bool,
            #[arg(long, default_value = "")]
            primetext: String,
            #[arg(short = 'n', long, allow_negative_numbers = true, default_value_t = 1)]
            num_files: i64,
            /// nanoGPT's configurator: Python booleans as values.
            #[arg(long, default_value = "True")]
            compile: String,
            files: Vec<String>,
        },
    }

    fn n(args: &[&str]) -> Vec<OsString> {
        normalize(&Cli::command(), args.iter().copied())
    }

    #[test]
    fn every_spelling_becomes_claps() {
        assert_eq!(
            n(&[
                "p",
                "train",
                "-rnn_size",
                "512",
                "--rnn_size=3",
                "-gpuid",
                "-1",
                "--out_dir",
                "x"
            ]),
            [
                "p",
                "train",
                "--rnn-size",
                "512",
                "--rnn-size=3",
                "--gpuid",
                "-1",
                "--out-dir",
                "x"
            ]
        );
    }

    #[test]
    fn values_are_never_rewritten() {
        // A value that looks like a flag, after a flag that takes one.
        assert_eq!(
            n(&["p", "train", "--primetext", "-rnn_size", "-n", "-num_files"]),
            ["p", "train", "--primetext", "-rnn_size", "-n", "-num_files"]
        );
        assert_eq!(
            n(&["p", "train", "--primetext=-x_y", "--", "--rnn_size"]),
            ["p", "train", "--primetext=-x_y", "--", "--rnn_size"]
        );
    }

    #[test]
    fn a_switch_takes_no_value_and_positionals_stay() {
        assert_eq!(
            n(&[
                "p",
                "train",
                "--quick",
                "config/train_x.py",
                "--compile=False"
            ]),
            [
                "p",
                "train",
                "--quick",
                "config/train_x.py",
                "--compile=False"
            ]
        );
        let cli: Cli =
            try_parse_from(["p", "train", "-quick", "a_b.py", "--num_files", "-1"]).unwrap();
        let Sub::Train {
            quick,
            files,
            num_files,
            ..
        } = cli.command;
        assert!(quick);
        assert_eq!(files, ["a_b.py"]);
        assert_eq!(num_files, -1);
    }

    #[cfg(unix)]
    #[test]
    fn an_argument_that_is_not_utf8_passes_as_it_is() {
        use std::os::unix::ffi::OsStrExt;
        let odd = std::ffi::OsStr::from_bytes(b"out-\xff").to_os_string();
        let args = [
            OsString::from("p"),
            "train".into(),
            "--out_dir".into(),
            odd.clone(),
        ];
        assert_eq!(
            normalize(&Cli::command(), args),
            [OsString::from("p"), "train".into(), "--out-dir".into(), odd]
        );
    }

    #[test]
    fn unknown_flags_reach_clap_as_typed() {
        assert_eq!(
            n(&["p", "train", "--no_such", "1"]),
            ["p", "train", "--no_such", "1"]
        );
        let err = try_parse_from::<Cli>(["p", "train", "--no_such", "1"]).unwrap_err();
        assert!(err.to_string().contains("--no_such"), "{err}");
    }

    #[test]
    fn parsed_as_clap_parses_the_plain_spelling() {
        let ours: Cli =
            try_parse_from(["p", "train", "-rnn_size", "7", "-gpuid=-1", "-out_dir", "o"]).unwrap();
        let plain = Cli::try_parse_from([
            "p",
            "train",
            "--rnn-size",
            "7",
            "--gpuid=-1",
            "--out-dir",
            "o",
        ])
        .unwrap();
        assert_eq!(ours, plain);
    }
}
