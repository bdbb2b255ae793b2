//! `nanochat chat` (chat_cli.py) on a small model trained here: its banner and commands, the
//! conversation kept across turns, each answer the engine's, the fix for nanochat's issue #581
//! (a conversation longer than the context drops its oldest turns and says so), `-p` for one
//! answer, and the binary driven through a pseudo-terminal as a user would type into it.

use clap::Parser;
use nanochat::base_train::run::base_train;
use nanochat::base_train::BaseTrainArgs;
use nanochat::chat_cli::{chat, fit_context, load, ChatArgs};
use nanochat::engine::{generate_batch, Sampling};
use nanochat::Tokenizer;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::Command;

#[derive(Parser)]
struct TrainCli {
    #[command(flatten)]
    args: BaseTrainArgs,
}

#[derive(Parser)]
struct ChatCli {
    #[command(flatten)]
    args: ChatArgs,
}

/// A base folder with the fixtures' tokenizer and a depth-1 model of `seq_len` tokens trained
/// for 4 steps on tiny Shakespeare, tagged `chat`.
fn trained(name: &str, seq_len: usize) -> PathBuf {
    let base = std::env::temp_dir().join(format!("nanochat-chat-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&base);
    std::fs::create_dir_all(base.join("tokenizer")).unwrap();
    let pkl =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/base_train/tokenizer_4096.pkl");
    std::fs::copy(pkl, base.join("tokenizer/tokenizer.pkl")).unwrap();
    let data = data::path("tinyshakespeare.txt").unwrap_or_else(|e| panic!("{e}"));
    let argv = [
        "base_train".to_string(),
        "--depth=1".into(),
        "--head-dim=64".into(),
        format!("--max-seq-len={seq_len}"),
        "--device-batch-size=4".into(),
        format!("--total-batch-size={}", 4 * seq_len),
        "--num-iterations=4".into(),
        "--eval-every=-1".into(),
        "--sample-every=-1".into(),
        "--core-metric-every=-1".into(),
        "--model-tag=chat".into(),
        format!("--input={}", data.display()),
    ];
    let args = flags::try_parse_from::<TrainCli>(argv).unwrap().args;
    base_train(&args, &base, &mut |_| {}).unwrap();
    base
}

fn tokenizer(base: &Path) -> Tokenizer {
    Tokenizer::from_directory(&base.join("tokenizer")).unwrap()
}

fn args(flags: &[&str]) -> ChatArgs {
    let argv = ["chat", "-i", "base", "-g", "chat"].iter().chain(flags);
    flags::try_parse_from::<ChatCli>(argv).unwrap().args
}

/// The chat's output for `typed` lines.
fn session(base: &Path, flags: &[&str], typed: &str) -> String {
    let args = args(flags);
    let model = args.model.load(base).unwrap();
    let mut out = Vec::new();
    chat(
        &args,
        &model,
        &tokenizer(base),
        &mut typed.as_bytes(),
        &mut out,
    )
    .unwrap();
    String::from_utf8(out).unwrap()
}

#[test]
fn a_conversation_is_kept_cleared_and_ended() {
    let base = trained("session", 128);
    let out = session(
        &base,
        &["-t", "0"],
        "Good morrow\n\nclear\nGood morrow\nQUIT\n",
    );
    assert!(out.starts_with("\nNanoChat Interactive Mode\n"), "{out}");
    assert!(
        out.contains("Type 'clear' to start a new conversation"),
        "{out}"
    );
    assert!(out.contains("Conversation cleared."), "{out}");
    assert!(out.trim_end().ends_with("Goodbye!"), "{out}");
    // The empty line asked nothing: two answers, and after `clear` the same as the first.
    let answers: Vec<&str> = out
        .split("\nAssistant: ")
        .skip(1)
        .map(|a| a.lines().next().unwrap())
        .collect();
    assert_eq!(answers.len(), 2, "{out}");
    assert_eq!(answers[0], answers[1]);
    // The first answer is the engine's for the rendered turn, streamed token by token.
    let tokenizer = tokenizer(&base);
    let model = load(&base, "base", Some("chat"), None).unwrap();
    let special = |s: &str| tokenizer.encode_special(s).unwrap();
    let mut turn = vec![tokenizer.bos_token_id(), special("<|user_start|>")];
    turn.extend(tokenizer.encode("Good morrow"));
    turn.extend([special("<|user_end|>"), special("<|assistant_start|>")]);
    let sampling = Sampling {
        num_samples: 1,
        max_tokens: 128 - turn.len(),
        temperature: 0.0,
        top_k: Some(50),
        seed: 42,
        kv_cache: true,
    };
    let engine = generate_batch(&model, &tokenizer, &turn, sampling).unwrap();
    let ends = [special("<|assistant_end|>"), tokenizer.bos_token_id()];
    let streamed: String = engine[0][turn.len()..]
        .iter()
        .filter(|t| !ends.contains(t))
        .map(|&t| tokenizer.decode(&[t]).unwrap())
        .collect();
    assert!(
        answers[0].starts_with(&streamed),
        "{:?} vs {streamed:?}",
        answers[0]
    );
    assert!(!out.contains("<|assistant_end|>"), "{out}");
    // `-p`: the one answer, without the interactive banner.
    let out = session(&base, &["-t", "0", "-p", "Good morrow"], "");
    assert!(out.starts_with("\nAssistant: "), "{out}");
    assert_eq!(
        out.split("\nAssistant: ").nth(1).unwrap().trim_end(),
        answers[0]
    );
    assert!(
        !out.contains("Interactive") && !out.contains("<|assistant_end|>"),
        "{out}"
    );
    std::fs::remove_dir_all(&base).unwrap();
}

#[test]
fn a_conversation_longer_than_the_context_drops_its_oldest_turns() {
    // nanochat's issue #581: here the context is 48 tokens, and each turn takes most of it.
    let base = trained("overflow", 48);
    let typed = "Good morrow, cousin\nHow fares the king today\nAnd the queen\nquit\n";
    let out = session(&base, &["-t", "0.8"], typed);
    assert!(
        out.contains("(The conversation outgrew the model's 48 tokens: the oldest"),
        "{out}"
    );
    assert_eq!(out.matches("\nAssistant: ").count(), 3, "{out}");
    let long = "so ".repeat(60);
    let out = session(&base, &[], &format!("{long}\nquit\n"));
    assert!(out.contains("Ask it shorter."), "{out}");
    assert!(!out.contains("\nAssistant: "), "{out}");
    std::fs::remove_dir_all(&base).unwrap();
}

#[test]
fn temperatures_and_top_k_out_of_range_are_refused_at_the_flag() {
    let parse = |flags: &[&str]| {
        let argv = ["chat", "-i", "base"].iter().chain(flags);
        flags::try_parse_from::<ChatCli>(argv)
            .map(|cli| cli.args)
            .map_err(|e| e.to_string())
    };
    for t in ["nan", "NaN", "-1", "inf", "2.5", "50", "warm"] {
        let e = parse(&["-t", t])
            .err()
            .unwrap_or_else(|| panic!("-t {t} was taken"));
        assert!(
            e.contains("the temperature must be a number from 0 to 2"),
            "-t {t}: {e}"
        );
    }
    for k in ["201", "1000", "-1"] {
        let e = parse(&["-k", k])
            .err()
            .unwrap_or_else(|| panic!("-k {k} was taken"));
        assert!(
            e.contains("top-k must be a whole number from 0 to 200"),
            "-k {k}: {e}"
        );
    }
    let args = parse(&["-t", "0", "-k", "0"]).unwrap();
    assert_eq!((args.temperature, args.top_k), (0.0, 0));
    assert_eq!(parse(&["-t", "2", "-k", "200"]).unwrap().temperature, 2.0);
}

#[test]
fn fit_context_drops_whole_turns_from_the_oldest() {
    let (bos, user) = (0, 1);
    // bos, then turns [1, a, a], [1, b, b, b], [1, c]
    let mut conversation = vec![bos, user, 5, 5, user, 6, 6, 6, user, 7];
    assert_eq!(fit_context(&mut conversation, user, 20, 1), 0);
    assert_eq!(fit_context(&mut conversation, user, 8, 1), 1);
    assert_eq!(conversation, [bos, user, 6, 6, 6, user, 7]);
    assert_eq!(fit_context(&mut conversation, user, 3, 1), 1);
    assert_eq!(conversation, [bos, user, 7]);
    // The turn being asked stays, even when it alone is too long.
    assert_eq!(fit_context(&mut conversation, user, 2, 1), 0);
    // Room for the answer: a turn goes as soon as the answer would not fit beside it.
    let mut conversation = vec![bos, user, 5, 5, user, 6];
    assert_eq!(fit_context(&mut conversation, user, 10, 4), 0);
    assert_eq!(fit_context(&mut conversation, user, 10, 5), 1);
    assert_eq!(conversation, [bos, user, 6]);
}

#[test]
fn the_binary_talks_through_a_pseudo_terminal() {
    let base = trained("pty", 64);
    // -p: one answer, then exit.
    let out = Command::new(env!("CARGO_BIN_EXE_nanochat"))
        .args(["chat", "-i", "base", "-p", "Good morrow", "-t", "0"])
        .env("NANOCHAT_BASE_DIR", &base)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(stdout.matches("\nAssistant: ").count(), 1, "{stdout}");

    // Typed into a terminal: a question, clear, another, then exit.
    let (mut master, slave) = open_pty();
    // Read the terminal as the child writes, so that it never waits on a full buffer; the read
    // ends at EIO once the child has exited and no writer is left.
    let mut reader = master.try_clone().unwrap();
    let screen = std::thread::spawn(move || {
        let mut screen = Vec::new();
        let mut buf = [0u8; 4096];
        while let Ok(n) = reader.read(&mut buf) {
            if n == 0 {
                break;
            }
            screen.extend_from_slice(&buf[..n]);
        }
        screen
    });
    let child = Command::new(env!("CARGO_BIN_EXE_nanochat"))
        .args(["chat", "-i", "base", "-t", "0"])
        .env("NANOCHAT_BASE_DIR", &base)
        .stdin(slave.try_clone().unwrap())
        .stdout(slave.try_clone().unwrap())
        .stderr(slave)
        .spawn()
        .unwrap();
    master
        .write_all(b"Good morrow\nclear\nHow now\nexit\n")
        .unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(output.status.success());
    let screen = screen.join().unwrap();
    let screen = String::from_utf8_lossy(&screen);
    assert_eq!(screen.matches("Assistant: ").count(), 2, "{screen}");
    assert!(screen.contains("Conversation cleared."), "{screen}");
    assert!(screen.contains("Goodbye!"), "{screen}");
    std::fs::remove_dir_all(&base).unwrap();
}

/// A pseudo-terminal: the master side to type into and read from, the slave side for the child.
fn open_pty() -> (std::fs::File, std::fs::File) {
    use std::os::fd::FromRawFd;
    let (mut master, mut slave) = (0, 0);
    // SAFETY: openpty writes two new file descriptors into the two integers; the null name,
    // termios and window size pointers ask for the defaults.
    let rc = unsafe {
        libc::openpty(
            &mut master,
            &mut slave,
            std::ptr::null_mut(),
            std::ptr::null(),
            std::ptr::null(),
        )
    };
    assert_eq!(rc, 0, "openpty: {}", std::io::Error::last_os_error());
    // SAFETY: both descriptors are new, open, and owned by nothing else.
    unsafe {
        (
            std::fs::File::from_raw_fd(master),
            std::fs::File::from_raw_fd(slave),
        )
    }
}
