//! nanochat's `tasks/`: datasets of conversations for SFT, and `TaskMixture`, which shuffles
//! them together.
//!
//! - [`Conversations`]: a JSON-lines file a user writes, one conversation per line in nanochat's
//!   format (`CustomJSON` in nanochat's later tasks);
//! - [`SimpleSpelling`] and [`SpellingBee`]: `tasks/spellingbee.py` at commit da32e1d, before
//!   nanochat removed them, over any word list (names.txt here, words_alpha.txt there);
//! - [`Arithmetic`]: word problems in GSM8K's form, `<<12+30=42>>` turned into a python call
//!   and its output by GSM8K's own rule ([`gsm8k_conversation`]), so the model learns to call
//!   the calculator. Its Python twin is in `tests/fixtures/chat_sft/make_fixtures.py`.
//!
//! The generated tasks draw each example from `random.Random(index)` (the test split from
//! `10_000_000 + index`), so example i is the same in nanochat and here.

use crate::tokenizer::{Content, Conversation, Message, Part};
use pyrandom::PyRandom;
use std::path::Path;

/// A seed offset larger than any train index, so the test split's examples differ.
pub const TEST_RANDOM_SEED_OFFSET: u64 = 10_000_000;

/// A dataset of conversations (nanochat's `Task`).
pub trait Task {
    /// How many conversations.
    fn len(&self) -> usize;
    /// The `index`-th conversation, `index < len()`.
    fn example(&self, index: usize) -> Conversation;
    /// Whether there are none.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The train or the test split of a generated task.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Split {
    /// Seeds 0, 1, 2, …
    Train,
    /// Seeds from [`TEST_RANDOM_SEED_OFFSET`].
    Test,
}

impl Split {
    fn rng(self, index: usize) -> PyRandom {
        match self {
            Split::Train => PyRandom::seed(index as u64),
            Split::Test => PyRandom::seed(TEST_RANDOM_SEED_OFFSET + index as u64),
        }
    }
}

fn user(text: String) -> Message {
    Message {
        role: "user".into(),
        content: Content::Text(text),
    }
}

fn assistant(content: Content) -> Message {
    Message {
        role: "assistant".into(),
        content,
    }
}

fn part(kind: &str, text: impl Into<String>) -> Part {
    Part {
        kind: kind.into(),
        text: text.into(),
    }
}

/// A JSON-lines file of conversations, each `{"messages": [...]}`, checked when read: roles
/// alternate user and assistant (after an optional system message), the user writes strings,
/// parts are "text", "python" or "python_output".
pub struct Conversations(pub Vec<Conversation>);

impl Conversations {
    /// Reads `path`; a line that is not such a conversation is refused with its number.
    pub fn read(path: &Path) -> Result<Conversations, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let mut conversations = Vec::new();
        for (i, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let at = |e: String| format!("{} line {}: {e}", path.display(), i + 1);
            let conversation: Conversation = serde_json::from_str(line).map_err(|e| {
                at(format!(
                    "not a conversation {{\"messages\": [{{\"role\": …, \"content\": …}}]}} ({e})"
                ))
            })?;
            check(&conversation).map_err(at)?;
            conversations.push(conversation);
        }
        if conversations.is_empty() {
            return Err(format!("{}: no conversations in it", path.display()));
        }
        Ok(Conversations(conversations))
    }
}

/// What `render_conversation` asserts, checked up front.
fn check(conversation: &Conversation) -> Result<(), String> {
    let mut messages = &conversation.messages[..];
    if messages.first().is_some_and(|m| m.role == "system") {
        if !matches!(messages[0].content, Content::Text(_)) {
            return Err("a system message must be a string".into());
        }
        messages = &messages[1..];
    }
    if messages.is_empty() {
        return Err("no user message".into());
    }
    for (i, m) in messages.iter().enumerate() {
        let expected = if i % 2 == 0 { "user" } else { "assistant" };
        if m.role != expected {
            return Err(format!(
                "message {i} is from {:?}, where {expected:?} was expected",
                m.role
            ));
        }
        match &m.content {
            Content::Parts(_) if m.role == "user" => {
                return Err(format!("message {i}: a user message must be a string"))
            }
            Content::Parts(parts) => {
                if let Some(p) = parts
                    .iter()
                    .find(|p| !matches!(&p.kind[..], "text" | "python" | "python_output"))
                {
                    return Err(format!("message {i}: unknown part type {:?}", p.kind));
                }
            }
            Content::Text(_) => {}
        }
    }
    Ok(())
}

impl Task for Conversations {
    fn len(&self) -> usize {
        self.0.len()
    }
    fn example(&self, index: usize) -> Conversation {
        self.0[index].clone()
    }
}

/// A word list, one word per line (`line.strip()`); an empty line is refused, since
/// spellingbee.py would fail on drawing it.
pub fn read_words(path: &Path) -> Result<Vec<String>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let words: Vec<String> = text.lines().map(|l| l.trim().to_string()).collect();
    if let Some(i) = words.iter().position(String::is_empty) {
        return Err(format!(
            "{} line {}: an empty word (give one word per line)",
            path.display(),
            i + 1
        ));
    }
    if words.is_empty() {
        return Err(format!("{}: no words in it", path.display()));
    }
    Ok(words)
}

/// `",".join(list(word))`.
fn spelled(word: &str) -> String {
    word.chars().map(String::from).collect::<Vec<_>>().join(",")
}

/// `SimpleSpelling`: "Spell the word: anna" → "anna:a,n,n,a", a word drawn per example from
/// the list shuffled by `random.Random(42)`.
pub struct SimpleSpelling {
    words: Vec<String>,
    size: usize,
    split: Split,
}

impl SimpleSpelling {
    /// `size` examples over `words`.
    pub fn new(mut words: Vec<String>, size: usize, split: Split) -> SimpleSpelling {
        PyRandom::seed(42).shuffle(&mut words); // another order than SpellingBee's
        SimpleSpelling { words, size, split }
    }
}

impl Task for SimpleSpelling {
    fn len(&self) -> usize {
        self.size
    }
    fn example(&self, index: usize) -> Conversation {
        let mut rng = self.split.rng(index);
        let word = rng.choice(&self.words).expect("a word list is not empty");
        Conversation {
            messages: vec![
                user(format!("Spell the word: {word}")),
                assistant(Content::Text(format!("{word}:{}", spelled(word)))),
            ],
        }
    }
}

const LETTERS: &str = "abcdefghijklmnopqrstuvwxyz";

/// spellingbee.py's `USER_MSG_TEMPLATES`, in its order.
const USER_MSG_TEMPLATES: [&str; 51] = [
    "How many {letter} are in the word {word}",
    "How many {letter} are in {word}",
    "Count the number of {letter} in {word}",
    "How many times does {letter} appear in {word}",
    "What's the count of {letter} in {word}",
    "In the word {word}, how many {letter} are there",
    "How many letter {letter} are in the word {word}",
    "Count how many {letter} appear in {word}",
    "Tell me the number of {letter} in {word}",
    "How many occurrences of {letter} are in {word}",
    "Find the count of {letter} in {word}",
    "Can you count the {letter} letters in {word}",
    "What is the frequency of {letter} in {word}",
    "How many {letter}s are in {word}",
    "How many {letter}'s are in {word}",
    "Count all the {letter} in {word}",
    "How many times is {letter} in {word}",
    "Number of {letter} in {word}",
    "Total count of {letter} in {word}",
    "How many {letter} does {word} have",
    "How many {letter} does {word} contain",
    "What's the number of {letter} in {word}",
    "{word} has how many {letter}",
    "In {word}, count the {letter}",
    "How many {letter} appear in {word}",
    "Count the {letter} in {word}",
    "Give me the count of {letter} in {word}",
    "How many instances of {letter} in {word}",
    "Show me how many {letter} are in {word}",
    "Calculate the number of {letter} in {word}",
    "¿Cuántas {letter} hay en {word}?",
    "¿Cuántas veces aparece {letter} en {word}?",
    "Cuenta las {letter} en {word}",
    "¿Cuántas letras {letter} tiene {word}?",
    "{word}中有多少个{letter}",
    "{word}里有几个{letter}",
    "数一下{word}中的{letter}",
    "{word}这个词里有多少{letter}",
    "{word}에 {letter}가 몇 개 있나요",
    "{word}에서 {letter}의 개수는",
    "{word}에 {letter}가 몇 번 나오나요",
    "{word}라는 단어에 {letter}가 몇 개",
    "Combien de {letter} dans {word}",
    "Combien de fois {letter} apparaît dans {word}",
    "Compte les {letter} dans {word}",
    "Wie viele {letter} sind in {word}",
    "Wie oft kommt {letter} in {word} vor",
    "Zähle die {letter} in {word}",
    "{word}に{letter}は何個ありますか",
    "{word}の中に{letter}がいくつ",
    "{word}に{letter}が何回出てくる",
];

/// `template.format(letter=…, word=…)`, in one pass as Python's `format` substitutes.
fn fill(template: &str, letter: &str, word: &str) -> String {
    let mut out = String::new();
    let mut rest = template;
    while let Some(at) = rest.find('{') {
        out.push_str(&rest[..at]);
        rest = &rest[at..];
        if let Some(after) = rest.strip_prefix("{letter}") {
            out.push_str(letter);
            rest = after;
        } else if let Some(after) = rest.strip_prefix("{word}") {
            out.push_str(word);
            rest = after;
        } else {
            out.push('{');
            rest = &rest[1..];
        }
    }
    out.push_str(rest);
    out
}

/// `SpellingBee`: "How many r are in strawberry?", answered by spelling the word out, counting
/// by hand, checking with `'strawberry'.count('r')` and giving `#### 3`.
pub struct SpellingBee {
    words: Vec<String>,
    size: usize,
    split: Split,
}

impl SpellingBee {
    /// `size` examples over `words`.
    pub fn new(words: Vec<String>, size: usize, split: Split) -> SpellingBee {
        SpellingBee { words, size, split }
    }
}

impl Task for SpellingBee {
    fn len(&self) -> usize {
        self.size
    }
    fn example(&self, index: usize) -> Conversation {
        let mut rng = self.split.rng(index);
        let word = rng.choice(&self.words).expect("a word list is not empty");
        let word_chars: Vec<char> = word.chars().collect();
        let letters: Vec<char> = LETTERS.chars().collect();
        // A letter of the word (90%) or any letter (10%).
        let letter = if rng.random() < 0.9 {
            *rng.choice(&word_chars).expect("a word is not empty")
        } else {
            *rng.choice(&letters).expect("26 letters")
        };
        let count = word_chars.iter().filter(|&&c| c == letter).count();
        let mut template = rng
            .choice(&USER_MSG_TEMPLATES)
            .expect("templates")
            .to_string();
        if rng.random() < 0.3 {
            template = template.to_lowercase(); // lazy people don't use shift
        }
        let quotes = ["", "'", "\""];
        let letter_quote = *rng.choice(&quotes).expect("quotes");
        let word_quote = *rng.choice(&quotes).expect("quotes");
        let mut user_msg = fill(
            &template,
            &format!("{letter_quote}{letter}{letter_quote}"),
            &format!("{word_quote}{word}{word_quote}"),
        );
        if rng.random() < 0.5 {
            user_msg.push('?');
        }
        let mut manual = format!(
            "We are asked to find the number '{letter}' in the word '{word}'. Let me try a manual approach first.\n\n\
             First spell the word out:\n{word}:{}\n\nThen count the occurrences of '{letter}':\n",
            spelled(word)
        );
        let mut running = 0;
        for (i, c) in word_chars.iter().enumerate() {
            if *c == letter {
                running += 1;
                // No space between i and the letter: " a" and "a" are different tokens.
                manual.push_str(&format!("{}:{c} hit! count={running}\n", i + 1));
            } else {
                manual.push_str(&format!("{}:{c}\n", i + 1));
            }
        }
        manual.push_str(&format!("\nThis gives us {running}."));
        let parts = vec![
            part("text", manual),
            part("text", "\n\nLet me double check this using Python:\n\n"),
            part("python", format!("'{word}'.count('{letter}')")),
            part("python_output", count.to_string()),
            part(
                "text",
                format!("\n\nPython gives us {count}.\n\nMy final answer is:\n\n#### {count}"),
            ),
        ];
        Conversation {
            messages: vec![user(user_msg), assistant(Content::Parts(parts))],
        }
    }
}

/// The spans of `<<[^>]+>>` in `s`, leftmost first, as Python's `re` finds them.
fn tool_call_spans(s: &str) -> Vec<(usize, usize)> {
    let b = s.as_bytes();
    let mut spans = Vec::new();
    let mut i = 0;
    while i + 1 < b.len() {
        if b[i] == b'<' && b[i + 1] == b'<' {
            let mut j = i + 2;
            while j < b.len() && b[j] != b'>' {
                j += 1;
            }
            if j > i + 2 && b[j..].starts_with(b">>") {
                spans.push((i, j + 2));
                i = j + 2;
                continue;
            }
        }
        i += 1;
    }
    spans
}

// ANCHOR: gsm8k_conversation
/// GSM8K's `get_example`: the answer split at its `<<expr=result>>` calculator marks into text,
/// a python call (`expr`) and its output (`result`), as the assistant's parts.
pub fn gsm8k_conversation(question: &str, answer: &str) -> Conversation {
    let mut parts = Vec::new();
    let mut at = 0;
    for (start, end) in tool_call_spans(answer) {
        parts.push(part("text", &answer[at..start]));
        let inner = &answer[start + 2..end - 2];
        let (expr, result) = inner.rsplit_once('=').unwrap_or((inner, ""));
        parts.push(part("python", expr));
        parts.push(part("python_output", result));
        at = end;
    }
    parts.push(part("text", &answer[at..]));
    Conversation {
        messages: vec![user(question.to_string()), assistant(Content::Parts(parts))],
    }
}
// ANCHOR_END: gsm8k_conversation

const NAMES: [&str; 16] = [
    "Ava", "Ben", "Chloe", "Dev", "Emma", "Finn", "Grace", "Hugo", "Isla", "Jack", "Kira", "Liam",
    "Maya", "Noah", "Omar", "Priya",
];
const ITEMS: [&str; 10] = [
    "apples", "books", "cards", "coins", "eggs", "marbles", "pencils", "shells", "stamps",
    "stickers",
];

/// One arithmetic word problem in GSM8K's form: a sum or difference of numbers from 10 to 999,
/// or a product of 2–20 by 2–12, the answer computed by a `<<…>>` call and given as `#### n`.
pub fn arithmetic_problem(index: usize, split: Split) -> (String, String) {
    let mut rng = split.rng(index);
    let name = *rng.choice(&NAMES).expect("names");
    let item = *rng.choice(&ITEMS).expect("items");
    let op = *rng.choice(&['+', '-', '*']).expect("ops");
    if op == '*' {
        let (a, b) = (rng.randint(2, 20), rng.randint(2, 12));
        let c = a * b;
        return (
            format!("{name} buys {a} bags with {b} {item} in each bag. How many {item} does {name} buy?"),
            format!("{name} buys {a} * {b} = <<{a}*{b}={c}>>{c} {item}.\n#### {c}"),
        );
    }
    let (a, b) = (rng.randint(10, 999), rng.randint(10, 999));
    if op == '+' {
        let c = a + b;
        (
            format!(
                "{name} has {a} {item} and gets {b} more. How many {item} does {name} have now?"
            ),
            format!("{name} has {a} + {b} = <<{a}+{b}={c}>>{c} {item} now.\n#### {c}"),
        )
    } else {
        let (a, b) = (a.max(b), a.min(b));
        let c = a - b;
        (
            format!("{name} has {a} {item} and gives {b} away. How many {item} are left?"),
            format!("{a} - {b} = <<{a}-{b}={c}>>{c} {item} are left.\n#### {c}"),
        )
    }
}

/// [`arithmetic_problem`]s as conversations, the calculator called for each.
pub struct Arithmetic {
    size: usize,
    split: Split,
}

impl Arithmetic {
    /// `size` problems.
    pub fn new(size: usize, split: Split) -> Arithmetic {
        Arithmetic { size, split }
    }
}

impl Task for Arithmetic {
    fn len(&self) -> usize {
        self.size
    }
    fn example(&self, index: usize) -> Conversation {
        let (question, answer) = arithmetic_problem(index, self.split);
        gsm8k_conversation(&question, &answer)
    }
}

/// `TaskMixture`: every example of every task, in an order shuffled by `random.Random(42)`;
/// a task given twice is seen twice.
pub struct TaskMixture {
    tasks: Vec<Box<dyn Task>>,
    index_map: Vec<(usize, usize)>,
}

impl TaskMixture {
    /// The mixture of `tasks`.
    pub fn new(tasks: Vec<Box<dyn Task>>) -> TaskMixture {
        let mut index_map: Vec<(usize, usize)> = tasks
            .iter()
            .enumerate()
            .flat_map(|(t, task)| (0..task.len()).map(move |i| (t, i)))
            .collect();
        PyRandom::seed(42).shuffle(&mut index_map);
        TaskMixture { tasks, index_map }
    }

    /// `(task, index within it)` of each example, in the mixture's order.
    pub fn index_map(&self) -> &[(usize, usize)] {
        &self.index_map
    }
}

impl Task for TaskMixture {
    fn len(&self) -> usize {
        self.index_map.len()
    }
    fn example(&self, index: usize) -> Conversation {
        let (task, local) = self.index_map[index];
        self.tasks[task].example(local)
    }
}

/// `render_mc`: a multiple-choice question, each choice followed by `=` and its letter with no
/// space (small models bind " A" and "A" differently), then the instruction to answer with the
/// letter.
pub fn render_mc(question: &str, letters: &[&str], choices: &[String]) -> String {
    let mut query = format!("Multiple Choice question: {question}\n");
    for (letter, choice) in letters.iter().zip(choices) {
        query.push_str(&format!("- {choice}={letter}\n"));
    }
    query.push_str("\nRespond only with the letter of the correct answer.");
    query
}

/// A task over the first `stop` rows of a Hub dataset (nanochat's `Task(stop=…)`), each row
/// turned into a conversation by `convert`, which was checked on every row when loaded.
#[derive(Clone)]
pub struct HubTask {
    dataset: std::sync::Arc<crate::hub::HubDataset>,
    len: usize,
    convert: fn(&serde_json::Value) -> Result<Conversation, String>,
}

impl HubTask {
    /// The task, each of its rows checked to convert.
    pub fn new(
        dataset: std::sync::Arc<crate::hub::HubDataset>,
        stop: Option<usize>,
        convert: fn(&serde_json::Value) -> Result<Conversation, String>,
        name: &str,
    ) -> Result<HubTask, String> {
        let len = stop.map_or(dataset.len(), |s| s.min(dataset.len()));
        for i in 0..len {
            convert(dataset.row(i)).map_err(|e| format!("{name} row {i}: {e}"))?;
        }
        Ok(HubTask {
            dataset,
            len,
            convert,
        })
    }
}

impl Task for HubTask {
    fn len(&self) -> usize {
        self.len
    }
    fn example(&self, index: usize) -> Conversation {
        (self.convert)(self.dataset.row(index)).expect("checked when loaded")
    }
}

fn text_field<'a>(row: &'a serde_json::Value, key: &str) -> Result<&'a str, String> {
    row[key]
        .as_str()
        .ok_or_else(|| format!("no text column {key:?}"))
}

/// SmolTalk's row: its `messages` (an optional system message, then user and assistant in
/// turn, two or more, every content a string).
pub fn smoltalk_conversation(row: &serde_json::Value) -> Result<Conversation, String> {
    let conversation: Conversation =
        serde_json::from_value(serde_json::json!({"messages": row["messages"]}))
            .map_err(|e| format!("its messages are not a conversation ({e})"))?;
    check(&conversation)?;
    let rest = conversation
        .messages
        .iter()
        .skip_while(|m| m.role == "system")
        .count();
    if rest < 2
        || conversation
            .messages
            .iter()
            .any(|m| matches!(m.content, Content::Parts(_)))
    {
        return Err("SmolTalk messages must be two or more strings".into());
    }
    Ok(conversation)
}

/// MMLU's row: the question rendered with its four choices, answered with a letter.
pub fn mmlu_conversation(row: &serde_json::Value) -> Result<Conversation, String> {
    const LETTERS: [&str; 4] = ["A", "B", "C", "D"];
    let question = text_field(row, "question")?;
    let choices: Vec<String> = serde_json::from_value(row["choices"].clone())
        .map_err(|e| format!("choices are not a list of strings ({e})"))?;
    if choices.len() != 4 {
        return Err(format!("MMLU should have 4 choices, not {}", choices.len()));
    }
    let answer = row["answer"]
        .as_u64()
        .filter(|&a| a < 4)
        .ok_or("answer is not 0 to 3")?;
    Ok(Conversation {
        messages: vec![
            user(render_mc(question, &LETTERS, &choices)),
            assistant(Content::Text(LETTERS[answer as usize].into())),
        ],
    })
}

/// GSM8K's row: its question, and its answer with the `<<…>>` calculator marks as parts.
pub fn gsm8k_row_conversation(row: &serde_json::Value) -> Result<Conversation, String> {
    Ok(gsm8k_conversation(
        text_field(row, "question")?,
        text_field(row, "answer")?,
    ))
}
