//! nanochat's calculator tool (`use_calculator` in `nanochat/engine.py`), written as a small
//! evaluator instead of Python's `eval`: arithmetic with Python's numbers and `str.count`.
//!
//! The checks come first and are nanochat's, character for character: commas are dropped; an
//! expression of digits, `* + - / . ( )` and spaces is arithmetic, with `**` refused; anything
//! else must use only letters, digits, quotes, parentheses, `.`, `_` and spaces, contain none of
//! nanochat's dangerous words (`__`, `import`, `eval`, `open`, `file`, …), and call `.count(`.
//!
//! Then the evaluation, where Python's `eval` would run: integers, floats and their `+ - * / //`
//! with Python's results (an integer stays an integer, `/` gives a float, `//` floors, a float
//! prints as Python's `repr`); string literals, adjacent ones joined, and `.count(sub)`. No
//! names, calls or attributes besides `.count`: where Python raises, the answer is `None`, as
//! nanochat's `except` makes it.
//!
//! Left out: `()` (Python's empty tuple), string repetition (`"ab" * 3`), and an integer
//! quotient whose operands pass 2⁵³ (Python rounds it once, through f64 it would round twice):
//! each is `None` here.
//!
//! Bounds, which Python's `eval` does not have: at most 1,000 characters, 100 levels of
//! parentheses (Python's parser allows 200), integers within ±2¹²⁷ (Python's are unbounded),
//! results of at most 1,000 characters, and 100 ms. What passes a bound is `None`, so a hostile
//! expression costs microseconds, never a hang or a panic.

use std::time::{Duration, Instant};

/// Longest expression evaluated.
pub const MAX_INPUT: usize = 1000;
/// Deepest parentheses.
pub const MAX_DEPTH: usize = 100;
/// Longest result.
pub const MAX_RESULT: usize = 1000;
/// The time allowed.
pub const TIME_LIMIT: Duration = Duration::from_millis(100);

const DANGEROUS: [&str; 17] = [
    "__",
    "import",
    "exec",
    "eval",
    "compile",
    "open",
    "file",
    "input",
    "raw_input",
    "globals",
    "locals",
    "vars",
    "dir",
    "getattr",
    "setattr",
    "delattr",
    "hasattr",
];

// ANCHOR: use_calculator
/// `use_calculator(expr)`: the result as Python's `str(result)` prints it, or `None` where
/// nanochat's would be `None` (refused, or Python would raise) or a bound is passed.
pub fn use_calculator(expr: &str) -> Option<String> {
    let expr = expr.replace(',', ""); // numbers written 1,000
    if expr.chars().count() > MAX_INPUT {
        return None;
    }
    if expr.chars().all(|c| "0123456789*+-/.() ".contains(c)) {
        if expr.contains("**") {
            return None; // no powers: 9**9**9 would never end
        }
        return evaluate(&expr);
    }
    let allowed = |c: char| c.is_ascii_alphanumeric() || "'\"()._ ".contains(c);
    if !expr.chars().all(allowed) {
        return None;
    }
    let lower = expr.to_lowercase();
    if DANGEROUS.iter().any(|p| lower.contains(p)) {
        return None;
    }
    if !expr.contains(".count(") {
        return None;
    }
    evaluate(&expr)
}
// ANCHOR_END: use_calculator

/// A Python value the calculator makes.
#[derive(Clone, Debug, PartialEq)]
enum Value {
    Int(i128),
    Float(f64),
    Str(String),
}

impl Value {
    /// `str(value)`.
    fn show(&self) -> String {
        match self {
            Value::Int(i) => i.to_string(),
            Value::Float(x) => python_float_repr(*x),
            Value::Str(s) => s.clone(),
        }
    }
}

/// Evaluates the whole expression; `None` for anything Python would not evaluate to a value.
fn evaluate(expr: &str) -> Option<String> {
    let mut parser = Parser {
        chars: expr.chars().collect(),
        at: 0,
        depth: 0,
        deadline: Instant::now() + TIME_LIMIT,
    };
    let value = parser.expression()?;
    parser.skip_spaces();
    if parser.at != parser.chars.len() {
        return None; // trailing text: a SyntaxError
    }
    let shown = value.show();
    (shown.chars().count() <= MAX_RESULT).then_some(shown)
}

/// A recursive-descent parser that evaluates as it goes: Python's grammar for `+ -`, then
/// `* / //`, then unary `+ -`, then atoms with `.count(…)` after them.
struct Parser {
    chars: Vec<char>,
    at: usize,
    depth: usize,
    deadline: Instant,
}

impl Parser {
    fn peek(&self) -> Option<char> {
        self.chars.get(self.at).copied()
    }

    fn skip_spaces(&mut self) {
        while self.peek() == Some(' ') {
            self.at += 1;
        }
    }

    /// Whether the next characters (after spaces) are `token`; consumes them if so.
    fn eat(&mut self, token: &str) -> bool {
        self.skip_spaces();
        let n = token.chars().count();
        let matches = self.chars.len() >= self.at + n
            && self.chars[self.at..self.at + n]
                .iter()
                .copied()
                .eq(token.chars());
        if matches {
            self.at += n;
        }
        matches
    }

    fn in_time(&self) -> Option<()> {
        (Instant::now() < self.deadline).then_some(())
    }

    /// `a + b - c …`
    fn expression(&mut self) -> Option<Value> {
        self.in_time()?;
        let mut left = self.term()?;
        loop {
            if self.eat("+") {
                left = add(left, self.term()?)?;
            } else if self.eat("-") {
                left = sub(left, self.term()?)?;
            } else {
                return Some(left);
            }
        }
    }

    /// `a * b / c // d …`
    fn term(&mut self) -> Option<Value> {
        let mut left = self.unary()?;
        loop {
            if self.eat("//") {
                left = floor_div(left, self.unary()?)?;
            } else if self.eat("*") {
                left = mul(left, self.unary()?)?;
            } else if self.eat("/") {
                left = true_div(left, self.unary()?)?;
            } else {
                return Some(left);
            }
        }
    }

    /// `-a`, `+a`, repeated.
    fn unary(&mut self) -> Option<Value> {
        let negate = if self.eat("-") {
            true
        } else if self.eat("+") {
            false
        } else {
            return self.postfix();
        };
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return None;
        }
        let value = match (self.unary()?, negate) {
            (Value::Str(_), _) => return None, // TypeError: bad operand type for unary -
            (Value::Int(i), true) => Value::Int(i.checked_neg()?),
            (Value::Float(x), true) => Value::Float(-x),
            (number, false) => number,
        };
        self.depth -= 1;
        Some(value)
    }

    /// An atom, then any `.count(sub)` calls on it.
    fn postfix(&mut self) -> Option<Value> {
        let mut value = self.atom()?;
        while self.eat(".") {
            // Only `.count(…)` on a string; any other attribute is None (nanochat's eval
            // would raise AttributeError or NameError, or run a method left out here).
            if !self.eat("count") || !self.eat("(") {
                return None;
            }
            let sub = self.expression()?;
            if !self.eat(")") {
                return None;
            }
            value = match (value, sub) {
                (Value::Str(s), Value::Str(sub)) => Value::Int(python_count(&s, &sub) as i128),
                _ => return None,
            };
        }
        // A call on the result, `(1)(2)`: TypeError.
        self.skip_spaces();
        if self.peek() == Some('(') {
            return None;
        }
        Some(value)
    }

    fn atom(&mut self) -> Option<Value> {
        self.skip_spaces();
        match self.peek()? {
            '(' => {
                self.at += 1;
                self.depth += 1;
                if self.depth > MAX_DEPTH {
                    return None;
                }
                let inner = self.expression()?;
                self.depth -= 1;
                self.eat(")").then_some(inner)
            }
            '\'' | '"' => {
                // Adjacent literals join: "ab" 'c' is "abc".
                let mut joined = String::new();
                while let Some(q @ ('\'' | '"')) = {
                    self.skip_spaces();
                    self.peek()
                } {
                    self.at += 1;
                    let start = self.at;
                    while self.peek()? != q {
                        self.at += 1;
                    }
                    joined.extend(&self.chars[start..self.at]);
                    self.at += 1;
                    if joined.chars().count() > MAX_RESULT {
                        return None;
                    }
                }
                Some(Value::Str(joined))
            }
            c if c.is_ascii_digit() || c == '.' => self.number(),
            _ => None, // a name: NameError, as no names are defined
        }
    }

    /// A decimal literal: `12`, `0`, `00`, `1.5`, `1.`, `.5` (not `012`, not `.`).
    fn number(&mut self) -> Option<Value> {
        let start = self.at;
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.at += 1;
        }
        let int_digits = self.at - start;
        if self.peek() == Some('.') {
            self.at += 1;
            while self.peek().is_some_and(|c| c.is_ascii_digit()) {
                self.at += 1;
            }
            let text: String = self.chars[start..self.at].iter().collect();
            if text == "." {
                return None;
            }
            // Rust's parse rounds a decimal to the nearest double, as Python's float() does.
            return text.parse::<f64>().ok().map(Value::Float);
        }
        let text: String = self.chars[start..self.at].iter().collect();
        if int_digits > 1 && text.starts_with('0') && text.chars().any(|c| c != '0') {
            return None; // 012: leading zeros are a SyntaxError in Python 3
        }
        text.parse::<i128>().ok().map(Value::Int) // beyond ±2¹²⁷: out of bounds
    }
}

fn float(v: &Value) -> Option<f64> {
    match v {
        Value::Int(i) => Some(*i as f64),
        Value::Float(x) => Some(*x),
        Value::Str(_) => None,
    }
}

fn add(a: Value, b: Value) -> Option<Value> {
    match (a, b) {
        (Value::Int(x), Value::Int(y)) => x.checked_add(y).map(Value::Int),
        (Value::Str(x), Value::Str(y)) => Some(Value::Str(x + &y)),
        (a, b) => Some(Value::Float(float(&a)? + float(&b)?)),
    }
}

fn sub(a: Value, b: Value) -> Option<Value> {
    match (a, b) {
        (Value::Int(x), Value::Int(y)) => x.checked_sub(y).map(Value::Int),
        (a, b) => Some(Value::Float(float(&a)? - float(&b)?)),
    }
}

fn mul(a: Value, b: Value) -> Option<Value> {
    match (a, b) {
        (Value::Int(x), Value::Int(y)) => x.checked_mul(y).map(Value::Int),
        // "ab" * 3 repeats in Python; out of the calculator's bounds here
        (Value::Str(_), _) | (_, Value::Str(_)) => None,
        (a, b) => Some(Value::Float(float(&a)? * float(&b)?)),
    }
}

/// `a / b`: always a float; `ZeroDivisionError` is `None`.
fn true_div(a: Value, b: Value) -> Option<Value> {
    let (x, y) = (float(&a)?, float(&b)?);
    if y == 0.0 {
        return None;
    }
    if let (Value::Int(p), Value::Int(q)) = (&a, &b) {
        // Python rounds an integer quotient once; through f64 that holds while both fit in
        // 53 bits, and beyond them the calculator refuses rather than round twice.
        let exact = 1i128 << 53;
        if p.abs() > exact || q.abs() > exact {
            return None;
        }
    }
    Some(Value::Float(x / y))
}

/// `a // b`: the floor of the quotient, an integer for integers, as CPython's
/// `float_floor_div` for floats.
fn floor_div(a: Value, b: Value) -> Option<Value> {
    match (&a, &b) {
        (Value::Int(x), Value::Int(y)) => {
            if *y == 0 {
                return None;
            }
            let (q, r) = (x.checked_div(*y)?, x.checked_rem(*y)?);
            Some(Value::Int(if r != 0 && ((r < 0) != (*y < 0)) {
                q - 1
            } else {
                q
            }))
        }
        _ => {
            let (vx, wx) = (float(&a)?, float(&b)?);
            if wx == 0.0 {
                return None;
            }
            let modulo = vx % wx; // C's fmod
            let mut div = (vx - modulo) / wx;
            if modulo != 0.0 && ((wx < 0.0) != (modulo < 0.0)) {
                div -= 1.0;
            }
            let floordiv = if div != 0.0 {
                let mut f = div.floor();
                if div - f > 0.5 {
                    f += 1.0;
                }
                f
            } else {
                (0.0f64).copysign(vx / wx)
            };
            Some(Value::Float(floordiv))
        }
    }
}

/// `s.count(sub)`: non-overlapping occurrences, counted in characters; an empty `sub` is
/// found between every two characters and at both ends.
fn python_count(s: &str, sub: &str) -> usize {
    if sub.is_empty() {
        return s.chars().count() + 1;
    }
    s.matches(sub).count()
}

/// Python's `repr(float)`: the shortest digits that read back as the same double, in fixed
/// notation while the decimal point falls within 16 places (`1e+16`, `1e-05` beyond), with
/// `.0` on whole numbers.
pub fn python_float_repr(x: f64) -> String {
    if x.is_nan() {
        return "nan".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "inf".into() } else { "-inf".into() };
    }
    let sign = if x.is_sign_negative() { "-" } else { "" };
    // Rust's {:e} gives the shortest round-trip digits: "1.2345e-7".
    let scientific = format!("{:e}", x.abs());
    let (mantissa, exponent) = scientific.split_once('e').expect("{:e} has an exponent");
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    let exponent: i32 = exponent.parse().expect("an integer exponent");
    let decpt = exponent + 1; // where the point goes in `digits`
    if -4 < decpt && decpt <= 16 {
        let body = if decpt <= 0 {
            format!("0.{}{digits}", "0".repeat((-decpt) as usize))
        } else if decpt as usize >= digits.len() {
            format!("{digits}{}.0", "0".repeat(decpt as usize - digits.len()))
        } else {
            format!(
                "{}.{}",
                &digits[..decpt as usize],
                &digits[decpt as usize..]
            )
        };
        format!("{sign}{body}")
    } else {
        let mantissa = if digits.len() > 1 {
            format!("{}.{}", &digits[..1], &digits[1..])
        } else {
            digits
        };
        let e_sign = if exponent < 0 { '-' } else { '+' };
        format!("{sign}{mantissa}e{e_sign}{:02}", exponent.abs())
    }
}
