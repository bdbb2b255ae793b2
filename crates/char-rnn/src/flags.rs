//! char-rnn's flags as Torch's `CmdLine` spells them, `-rnn_size 128`, beside
//! the usual `--rnn-size 128`.
//!
//! Every train.lua and sample.lua option takes a value, so the arguments after
//! the subcommand alternate flag and value (or come as `-flag=value`); a
//! positional argument (sample.lua's checkpoint) stands where a flag would.
//! [`normalize`] rewrites each flag to clap's spelling and leaves every value
//! as it is, so `-gpuid -1` and `-primetext "-hello"` keep their values.

/// `-rnn_size`, `--rnn_size` and `--rnn-size` all become `--rnn-size`; values,
/// positionals and everything before the subcommand are left alone.
pub fn normalize(args: impl IntoIterator<Item = String>) -> Vec<String> {
    let mut out = Vec::new();
    let mut expect_value = false;
    for (i, arg) in args.into_iter().enumerate() {
        let is_flag = arg.starts_with('-')
            && arg
                .trim_start_matches('-')
                .starts_with(|c: char| c.is_ascii_alphabetic());
        if i < 2 || expect_value || !is_flag {
            expect_value = false;
            out.push(arg);
            continue;
        }
        let (name, value) = match arg.trim_start_matches('-').split_once('=') {
            Some((n, v)) => (n.to_string(), Some(v.to_string())),
            None => (arg.trim_start_matches('-').to_string(), None),
        };
        let name = name.replace('_', "-");
        let is_switch = matches!(name.as_str(), "help" | "h" | "version" | "V");
        match value {
            Some(v) => out.push(format!("--{name}={v}")),
            None if is_switch => out.push(if name.len() == 1 {
                format!("-{name}")
            } else {
                format!("--{name}")
            }),
            None => {
                out.push(format!("--{name}"));
                expect_value = true;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::normalize;

    fn n(args: &[&str]) -> Vec<String> {
        normalize(args.iter().map(|s| s.to_string()))
    }

    #[test]
    fn torch_spelling_becomes_clap_spelling() {
        assert_eq!(
            n(&[
                "char-rnn",
                "train",
                "-rnn_size",
                "512",
                "-gpuid",
                "-1",
                "--data-dir=x",
                "--batch_size",
                "10"
            ]),
            [
                "char-rnn",
                "train",
                "--rnn-size",
                "512",
                "--gpuid",
                "-1",
                "--data-dir=x",
                "--batch-size",
                "10"
            ]
        );
        assert_eq!(
            n(&[
                "char-rnn",
                "sample",
                "cv/lm.safetensors",
                "-primetext",
                "-hello_there",
                "-length",
                "5"
            ]),
            [
                "char-rnn",
                "sample",
                "cv/lm.safetensors",
                "--primetext",
                "-hello_there",
                "--length",
                "5"
            ]
        );
        assert_eq!(n(&["char-rnn", "train", "-h"]), ["char-rnn", "train", "-h"]);
    }
}
