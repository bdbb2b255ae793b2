//! Python's pickles as nanochat writes them: `tokenizer.pkl` (a tiktoken `Encoding`) and the
//! `data.pkl` inside a `torch.save` archive (a `state_dict`, see [`crate::pt`]).
//!
//! tiktoken pickles an `Encoding` as its class (`tiktoken.core.Encoding`) and a state dict with
//! four keys: `name`, `pat_str`, `mergeable_ranks` (token bytes -> rank) and `special_tokens`
//! (name -> id). [`dumps`] writes the bytes CPython 3.11's C pickler writes at its default
//! protocol (4), frames and batches included, so a file we save is the file nanochat would
//! save; [`loads`] runs the small part of the pickle machine such a file needs.
//!
//! The machine ([`run`]) builds values and never calls anything: a class or function the pickle
//! names is only a name, and a name outside the caller's short list is refused, so a hostile
//! pickle (`os.system`, `builtins.eval`) is an error, not a call.

use std::collections::HashMap;

/// The state tiktoken pickles for an `Encoding`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EncodingState {
    /// `Encoding.name` (nanochat: "rustbpe").
    pub name: String,
    /// The split pattern.
    pub pat_str: String,
    /// Token bytes and their ranks, in the dict's order.
    pub mergeable_ranks: Vec<(Vec<u8>, u32)>,
    /// Special tokens and their ids, in the dict's order.
    pub special_tokens: Vec<(String, u32)>,
}

// The opcodes used here (Python's Lib/pickletools.py names them).
const PROTO: u8 = 0x80;
const FRAME: u8 = 0x95;
const STOP: u8 = b'.';
const MARK: u8 = b'(';
const EMPTY_DICT: u8 = b'}';
const EMPTY_TUPLE: u8 = b')';
const EMPTY_LIST: u8 = b']';
const SETITEM: u8 = b's';
const SETITEMS: u8 = b'u';
const SHORT_BINUNICODE: u8 = 0x8c;
const BINUNICODE: u8 = b'X';
const BINUNICODE8: u8 = 0x8d;
const SHORT_BINBYTES: u8 = b'C';
const BINBYTES: u8 = b'B';
const BINBYTES8: u8 = 0x8e;
const BININT1: u8 = b'K';
const BININT2: u8 = b'M';
const BININT: u8 = b'J';
const LONG1: u8 = 0x8a;
const MEMOIZE: u8 = 0x94;
const BINPUT: u8 = b'q';
const LONG_BINPUT: u8 = b'r';
const BINGET: u8 = b'h';
const LONG_BINGET: u8 = b'j';
const STACK_GLOBAL: u8 = 0x93;
const GLOBAL: u8 = b'c';
const NEWOBJ: u8 = 0x81;
const REDUCE: u8 = b'R';
const BUILD: u8 = b'b';
const TUPLE: u8 = b't';
const TUPLE1: u8 = 0x85;
const TUPLE2: u8 = 0x86;
const TUPLE3: u8 = 0x87;
const NONE: u8 = b'N';
const NEWTRUE: u8 = 0x88;
const NEWFALSE: u8 = 0x89;
const BINFLOAT: u8 = b'G';
const APPEND: u8 = b'a';
const APPENDS: u8 = b'e';
const BINPERSID: u8 = b'Q';

/// CPython's `_FRAME_SIZE_TARGET` and the batch size of `SETITEMS`.
const FRAME_SIZE_TARGET: usize = 64 * 1024;
const BATCHSIZE: usize = 1000;

/// A protocol-4 pickler with CPython's framing: before each object is saved, a frame that has
/// reached 64 KiB is closed and a new one begins.
struct Pickler {
    out: Vec<u8>,
    frame_start: usize,
    memo: u32,
}

impl Pickler {
    fn new() -> Pickler {
        let mut out = vec![PROTO, 4];
        let frame_start = out.len();
        out.extend([FRAME, 0, 0, 0, 0, 0, 0, 0, 0]);
        Pickler {
            out,
            frame_start,
            memo: 0,
        }
    }

    fn commit_frame(&mut self) {
        let len = (self.out.len() - self.frame_start - 9) as u64;
        self.out[self.frame_start + 1..self.frame_start + 9].copy_from_slice(&len.to_le_bytes());
    }

    /// `save()`'s opcode boundary.
    fn boundary(&mut self) {
        if self.out.len() - self.frame_start - 9 >= FRAME_SIZE_TARGET {
            self.commit_frame();
            self.frame_start = self.out.len();
            self.out.extend([FRAME, 0, 0, 0, 0, 0, 0, 0, 0]);
        }
    }

    fn memoize(&mut self) {
        self.out.push(MEMOIZE);
        self.memo += 1;
    }

    fn str(&mut self, s: &str) {
        self.boundary();
        let b = s.as_bytes();
        if b.len() < 256 {
            self.out.extend([SHORT_BINUNICODE, b.len() as u8]);
        } else {
            self.out.push(BINUNICODE);
            self.out.extend((b.len() as u32).to_le_bytes());
        }
        self.out.extend(b);
        self.memoize();
    }

    fn bytes(&mut self, b: &[u8]) {
        self.boundary();
        if b.len() < 256 {
            self.out.extend([SHORT_BINBYTES, b.len() as u8]);
        } else {
            self.out.push(BINBYTES);
            self.out.extend((b.len() as u32).to_le_bytes());
        }
        self.out.extend(b);
        self.memoize();
    }

    fn int(&mut self, v: u32) {
        self.boundary();
        match v {
            0..=0xff => self.out.extend([BININT1, v as u8]),
            0x100..=0xffff => {
                self.out.push(BININT2);
                self.out.extend((v as u16).to_le_bytes());
            }
            _ => {
                self.out.push(BININT);
                self.out.extend((v as i32).to_le_bytes());
            }
        }
    }

    /// A dict as `batch_dict_exact` writes it: one item with SETITEM, otherwise batches of
    /// 1,000 between MARK and SETITEMS, with an empty batch after a full last one.
    fn dict<T>(&mut self, items: &[T], mut item: impl FnMut(&mut Pickler, &T)) {
        self.boundary();
        self.out.push(EMPTY_DICT);
        self.memoize();
        if items.len() == 1 {
            item(self, &items[0]);
            self.out.push(SETITEM);
            return;
        }
        let mut rest = items;
        loop {
            let n = rest.len().min(BATCHSIZE);
            self.out.push(MARK);
            for it in &rest[..n] {
                item(self, it);
            }
            self.out.push(SETITEMS);
            rest = &rest[n..];
            if n < BATCHSIZE {
                break;
            }
        }
    }
}

/// The bytes `pickle.dumps(encoding)` gives for an `Encoding` with this state.
pub fn dumps(state: &EncodingState) -> Vec<u8> {
    let mut p = Pickler::new();
    // save_reduce: the class, its (empty) arguments, NEWOBJ, then BUILD with the state.
    p.boundary();
    p.str("tiktoken.core");
    p.str("Encoding");
    p.out.push(STACK_GLOBAL);
    p.memoize();
    p.boundary();
    p.out.push(EMPTY_TUPLE);
    p.out.push(NEWOBJ);
    p.memoize();
    enum Field<'a> {
        Str(&'a str),
        Ranks,
        Specials,
    }
    let fields = [
        ("name", Field::Str(&state.name)),
        ("pat_str", Field::Str(&state.pat_str)),
        ("mergeable_ranks", Field::Ranks),
        ("special_tokens", Field::Specials),
    ];
    p.dict(&fields, |p, (key, value)| {
        p.str(key);
        match value {
            Field::Str(s) => p.str(s),
            Field::Ranks => p.dict(&state.mergeable_ranks, |p, (b, r)| {
                p.bytes(b);
                p.int(*r);
            }),
            Field::Specials => p.dict(&state.special_tokens, |p, (s, id)| {
                p.str(s);
                p.int(*id);
            }),
        }
    });
    p.out.push(BUILD);
    p.out.push(STOP);
    p.commit_frame();
    p.out
}

/// A value on the pickle machine's stack.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// MARK: where a TUPLE's or a SETITEMS' items begin (never left in a result).
    Mark,
    /// `None`.
    None,
    /// `True` or `False`.
    Bool(bool),
    /// An `int` (up to 64 bits).
    Int(i64),
    /// A `float`.
    Float(f64),
    /// A `str`.
    Str(String),
    /// A `bytes`.
    Bytes(Vec<u8>),
    /// A `tuple`.
    Tuple(Vec<Value>),
    /// A `list`.
    List(Vec<Value>),
    /// A `dict` (or `collections.OrderedDict`), its items in order.
    Dict(Vec<(Value, Value)>),
    /// A class or function by name: `(module, name)`.
    Global(String, String),
    /// A persistent id (BINPERSID): `torch.save` refers to a tensor's storage this way.
    PersistentId(Box<Value>),
    /// `cls(*args)` (REDUCE) or `cls.__new__(cls, *args)` (NEWOBJ), then BUILD's state.
    Object(Box<Value>, Box<Value>, Option<Box<Value>>),
}

struct Reader<'a> {
    data: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        let end = self.at.checked_add(n).filter(|&e| e <= self.data.len());
        let end =
            end.ok_or_else(|| format!("the file ends inside an opcode at byte {}", self.at))?;
        let s = &self.data[self.at..end];
        self.at = end;
        Ok(s)
    }
    fn u8(&mut self) -> Result<u8, String> {
        Ok(self.take(1)?[0])
    }
    fn le(&mut self, n: usize) -> Result<u64, String> {
        let mut b = [0u8; 8];
        b[..n].copy_from_slice(self.take(n)?);
        Ok(u64::from_le_bytes(b))
    }
    fn len(&mut self, n: usize) -> Result<usize, String> {
        let v = self.le(n)?;
        usize::try_from(v).map_err(|_| format!("a length of {v} bytes"))
    }
    fn utf8(&mut self, n: usize) -> Result<String, String> {
        let at = self.at;
        String::from_utf8(self.take(n)?.to_vec())
            .map_err(|e| format!("a string at byte {at} is not UTF-8 ({e})"))
    }
    fn line(&mut self) -> Result<String, String> {
        let rest = &self.data[self.at..];
        let end = rest
            .iter()
            .position(|&b| b == b'\n')
            .ok_or("a GLOBAL without its newline")?;
        let s = self.utf8(end)?;
        self.at += 1;
        Ok(s)
    }
}

fn pop(stack: &mut Vec<Value>) -> Result<Value, String> {
    stack.pop().ok_or_else(|| "the stack is empty".to_string())
}

/// Everything above the topmost MARK, which is removed.
fn pop_mark(stack: &mut Vec<Value>) -> Result<Vec<Value>, String> {
    let at = stack
        .iter()
        .rposition(|v| matches!(v, Value::Mark))
        .ok_or("SETITEMS or TUPLE without a MARK")?;
    let items = stack.split_off(at + 1);
    stack.pop();
    Ok(items)
}

fn append(stack: &mut [Value], items: Vec<Value>) -> Result<(), String> {
    match stack.last_mut() {
        Some(Value::List(l)) => {
            l.extend(items);
            Ok(())
        }
        _ => Err("APPEND on something that is not a list".into()),
    }
}

fn set_items(stack: &mut [Value], items: Vec<Value>) -> Result<(), String> {
    if !items.len().is_multiple_of(2) {
        return Err("a dict update with an odd number of items".into());
    }
    let Some(Value::Dict(d)) = stack.last_mut() else {
        return Err("SETITEM on something that is not a dict".into());
    };
    let mut it = items.into_iter();
    while let (Some(k), Some(v)) = (it.next(), it.next()) {
        d.push((k, v));
    }
    Ok(())
}

/// Runs the pickle machine over `data` and returns the object left by STOP. A GLOBAL outside
/// `globals` is refused, naming it and `what` (what the pickle should have held).
/// `collections.OrderedDict()` becomes a [`Value::Dict`] (its BUILD, the `_metadata` a
/// `state_dict` carries, is dropped).
pub fn run(data: &[u8], globals: &[(&str, &str)], what: &str) -> Result<Value, String> {
    let mut r = Reader { data, at: 0 };
    let mut stack: Vec<Value> = Vec::new();
    let mut memo: HashMap<u64, Value> = HashMap::new();
    loop {
        let at = r.at;
        let op = r
            .u8()
            .map_err(|_| "the file ends before the pickle's STOP".to_string())?;
        match op {
            PROTO => {
                let v = r.u8()?;
                if !(2..=5).contains(&v) {
                    return Err(format!("pickle protocol {v} (2 to 5 are read)"));
                }
            }
            FRAME => {
                r.le(8)?;
            }
            STOP => return pop(&mut stack),
            MARK => stack.push(Value::Mark),
            EMPTY_DICT => stack.push(Value::Dict(Vec::new())),
            EMPTY_TUPLE => stack.push(Value::Tuple(Vec::new())),
            EMPTY_LIST => stack.push(Value::List(Vec::new())),
            NONE => stack.push(Value::None),
            NEWTRUE => stack.push(Value::Bool(true)),
            NEWFALSE => stack.push(Value::Bool(false)),
            SETITEM => {
                let v = pop(&mut stack)?;
                let k = pop(&mut stack)?;
                set_items(&mut stack, vec![k, v])?;
            }
            SETITEMS => {
                let items = pop_mark(&mut stack)?;
                set_items(&mut stack, items)?;
            }
            APPEND => {
                let v = pop(&mut stack)?;
                append(&mut stack, vec![v])?;
            }
            APPENDS => {
                let items = pop_mark(&mut stack)?;
                append(&mut stack, items)?;
            }
            BINFLOAT => stack.push(Value::Float(f64::from_bits(u64::from_be_bytes(
                r.take(8)?.try_into().expect("8 bytes"),
            )))),
            BINPERSID => {
                let id = pop(&mut stack)?;
                stack.push(Value::PersistentId(Box::new(id)))
            }
            SHORT_BINUNICODE => {
                let n = r.len(1)?;
                stack.push(Value::Str(r.utf8(n)?))
            }
            BINUNICODE => {
                let n = r.len(4)?;
                stack.push(Value::Str(r.utf8(n)?))
            }
            BINUNICODE8 => {
                let n = r.len(8)?;
                stack.push(Value::Str(r.utf8(n)?))
            }
            SHORT_BINBYTES => {
                let n = r.len(1)?;
                stack.push(Value::Bytes(r.take(n)?.to_vec()))
            }
            BINBYTES => {
                let n = r.len(4)?;
                stack.push(Value::Bytes(r.take(n)?.to_vec()))
            }
            BINBYTES8 => {
                let n = r.len(8)?;
                stack.push(Value::Bytes(r.take(n)?.to_vec()))
            }
            BININT1 => stack.push(Value::Int(r.le(1)? as i64)),
            BININT2 => stack.push(Value::Int(r.le(2)? as i64)),
            BININT => stack.push(Value::Int(r.le(4)? as u32 as i32 as i64)),
            LONG1 => {
                let n = r.len(1)?;
                if n > 8 {
                    return Err(format!("an integer of {n} bytes at byte {at}"));
                }
                let b = r.take(n)?;
                let mut v: i64 = 0;
                for (i, &x) in b.iter().enumerate() {
                    v |= (x as i64) << (8 * i);
                }
                if n > 0 && n < 8 && b[n - 1] & 0x80 != 0 {
                    v -= 1i64 << (8 * n); // two's complement of n bytes
                }
                stack.push(Value::Int(v))
            }
            MEMOIZE => {
                let top = stack.last().ok_or("MEMOIZE on an empty stack")?.clone();
                memo.insert(memo.len() as u64, top);
            }
            BINPUT | LONG_BINPUT => {
                let key = r.le(if op == BINPUT { 1 } else { 4 })?;
                let top = stack.last().ok_or("PUT on an empty stack")?.clone();
                memo.insert(key, top);
            }
            BINGET | LONG_BINGET => {
                let key = r.le(if op == BINGET { 1 } else { 4 })?;
                let v = memo
                    .get(&key)
                    .ok_or(format!("GET of memo {key}, never put"))?;
                stack.push(v.clone())
            }
            STACK_GLOBAL | GLOBAL => {
                let (module, name) = if op == GLOBAL {
                    (r.line()?, r.line()?)
                } else {
                    match (pop(&mut stack)?, pop(&mut stack)?) {
                        (Value::Str(n), Value::Str(m)) => (m, n),
                        _ => return Err("STACK_GLOBAL of something that is not a name".into()),
                    }
                };
                if !globals.iter().any(|&(m, n)| m == module && n == name) {
                    return Err(format!(
                        "the pickle names {module}.{name} at byte {at}, which {what} never holds \
                         (refused: unpickling it could run code)"
                    ));
                }
                stack.push(Value::Global(module, name))
            }
            NEWOBJ | REDUCE => {
                let args = pop(&mut stack)?;
                let cls = pop(&mut stack)?;
                let ordered_dict = Value::Global("collections".into(), "OrderedDict".into());
                if cls == ordered_dict && args == Value::Tuple(Vec::new()) {
                    stack.push(Value::Dict(Vec::new()));
                } else {
                    stack.push(Value::Object(Box::new(cls), Box::new(args), None))
                }
            }
            BUILD => {
                let state = pop(&mut stack)?;
                match stack.last_mut() {
                    Some(Value::Object(_, _, s)) => *s = Some(Box::new(state)),
                    Some(Value::Dict(_)) => {} // an OrderedDict's attributes
                    _ => return Err("BUILD on something that is not an object".into()),
                }
            }
            TUPLE => {
                let items = pop_mark(&mut stack)?;
                stack.push(Value::Tuple(items))
            }
            TUPLE1 | TUPLE2 | TUPLE3 => {
                let n = (op - TUPLE1 + 1) as usize;
                if stack.len() < n {
                    return Err("TUPLE of more items than the stack holds".into());
                }
                let items = stack.split_off(stack.len() - n);
                stack.push(Value::Tuple(items))
            }
            _ => {
                return Err(format!(
                    "opcode 0x{op:02x} at byte {at}, which {what} never uses"
                ))
            }
        }
    }
}

fn id(v: &Value, what: &str) -> Result<u32, String> {
    match v {
        Value::Int(i) => u32::try_from(*i).map_err(|_| format!("{what} has the id {i}")),
        _ => Err(format!("{what} has an id that is not an integer")),
    }
}

/// Reads a pickled tiktoken `Encoding`. An encoding pickled by name (tiktoken pickles the ones
/// it registers, "gpt2" or "cl100k_base", as just their name) is an error that says so.
pub fn loads(data: &[u8]) -> Result<EncodingState, String> {
    let what = "a tiktoken Encoding";
    let Value::Object(cls, _, state) = run(data, &[("tiktoken.core", "Encoding")], what)? else {
        return Err("the pickle holds no object (a tiktoken Encoding was expected)".into());
    };
    match *cls {
        Value::Global(m, n) if m == "tiktoken.core" && n == "Encoding" => {}
        Value::Global(m, n) => {
            return Err(format!(
                "the pickle holds a {m}.{n}, not a tiktoken.core.Encoding"
            ))
        }
        _ => return Err("the pickle's object has no class".into()),
    }
    let fields = match state.map(|s| *s) {
        Some(Value::Dict(d)) => d,
        Some(Value::Str(name)) => {
            return Err(format!("the Encoding was pickled by name ({name:?}, one tiktoken registers), not by its merges"))
        }
        _ => return Err("the Encoding has no state".into()),
    };
    let mut out = EncodingState {
        name: String::new(),
        pat_str: String::new(),
        mergeable_ranks: Vec::new(),
        special_tokens: Vec::new(),
    };
    let mut seen = [false; 4];
    for (k, v) in fields {
        let Value::Str(key) = k else { continue };
        match (key.as_str(), v) {
            ("name", Value::Str(s)) => (out.name, seen[0]) = (s, true),
            ("pat_str", Value::Str(s)) => (out.pat_str, seen[1]) = (s, true),
            ("mergeable_ranks", Value::Dict(d)) => {
                for (b, r) in d {
                    let Value::Bytes(b) = b else {
                        return Err("a mergeable rank whose token is not bytes".into());
                    };
                    let r = id(&r, &format!("the token {b:?}"))?;
                    out.mergeable_ranks.push((b, r));
                }
                seen[2] = true;
            }
            ("special_tokens", Value::Dict(d)) => {
                for (s, i) in d {
                    let Value::Str(s) = s else {
                        return Err("a special token whose name is not a string".into());
                    };
                    let i = id(&i, &format!("the special token {s:?}"))?;
                    out.special_tokens.push((s, i));
                }
                seen[3] = true;
            }
            (key, _) => return Err(format!("the Encoding's {key:?} has an unexpected type")),
        }
    }
    let names = ["name", "pat_str", "mergeable_ranks", "special_tokens"];
    if let Some(i) = seen.iter().position(|s| !s) {
        return Err(format!("the Encoding's state has no {:?}", names[i]));
    }
    Ok(out)
}
