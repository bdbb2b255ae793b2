//! `torch.save`'s file, both ways: nanochat's `model_<step>.pt` and `optim_<step>_rank<r>.pt`.
//!
//! A `.pt` file is a zip archive (stored, not compressed) under one folder name: `data.pkl`, a
//! protocol-2 pickle of the object, and `data/<key>`, one raw little-endian storage per tensor,
//! beside `byteorder`, `version` and the rest (PyTorch's `torch/serialization.py`, `_save`). The
//! pickle refers to a storage by a persistent id, `("storage", torch.FloatStorage, key,
//! location, numel)`, and rebuilds the tensor with `torch._utils._rebuild_tensor_v2(storage,
//! offset, size, stride, requires_grad, hooks)`.
//!
//! [`load`] reads what `torch.save` of a `state_dict` (a model's or an optimizer's) writes, and
//! refuses every other global by name. [`save`] writes an archive that `torch.load` (with
//! `weights_only=True`, its default) reads back: the same layout, the storages aligned to 64
//! bytes, the dates at zip's epoch and the serialization id taken from the contents, so the
//! same object always gives the same bytes.

use crate::pickle::{self, Value};
use sha2::{Digest, Sha256};
use std::io::{Cursor, Read, Seek, Write};

/// A tensor's element type, as `torch.<Name>Storage` names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dtype {
    /// `torch.float32`.
    F32,
    /// `torch.bfloat16`.
    Bf16,
    /// `torch.float16`.
    F16,
    /// `torch.float64`.
    F64,
    /// `torch.int64`.
    I64,
    /// `torch.int32`.
    I32,
}

/// Each dtype's storage class, its size in bytes and its name in messages.
const DTYPES: [(Dtype, &str, usize, &str); 6] = [
    (Dtype::F32, "FloatStorage", 4, "float32"),
    (Dtype::Bf16, "BFloat16Storage", 2, "bfloat16"),
    (Dtype::F16, "HalfStorage", 2, "float16"),
    (Dtype::F64, "DoubleStorage", 8, "float64"),
    (Dtype::I64, "LongStorage", 8, "int64"),
    (Dtype::I32, "IntStorage", 4, "int32"),
];

impl Dtype {
    fn entry(self) -> &'static (Dtype, &'static str, usize, &'static str) {
        DTYPES
            .iter()
            .find(|d| d.0 == self)
            .expect("every dtype is listed")
    }
    /// Bytes per element.
    pub fn size(self) -> usize {
        self.entry().2
    }
    /// PyTorch's name (`float32`).
    pub fn name(self) -> &'static str {
        self.entry().3
    }
}

/// A tensor read from (or to be written to) a `.pt` file: contiguous, little-endian.
#[derive(Clone, Debug, PartialEq)]
pub struct StoredTensor {
    /// Element type.
    pub dtype: Dtype,
    /// Shape.
    pub shape: Vec<usize>,
    /// `numel × dtype.size()` bytes, row-major.
    pub data: Vec<u8>,
}

impl StoredTensor {
    /// A float32 tensor.
    pub fn f32(shape: &[usize], values: &[f32]) -> StoredTensor {
        StoredTensor {
            dtype: Dtype::F32,
            shape: shape.to_vec(),
            data: values.iter().flat_map(|v| v.to_le_bytes()).collect(),
        }
    }

    /// An int32 tensor.
    pub fn i32(shape: &[usize], values: &[i32]) -> StoredTensor {
        StoredTensor {
            dtype: Dtype::I32,
            shape: shape.to_vec(),
            data: values.iter().flat_map(|v| v.to_le_bytes()).collect(),
        }
    }

    /// Elements.
    pub fn numel(&self) -> usize {
        self.shape.iter().product()
    }

    /// The values as float32: bfloat16 is widened (as checkpoint_manager's `v.float()` does on a
    /// CPU), float32 is taken as it is; any other dtype is an error naming `name`.
    pub fn to_f32(&self, name: &str) -> Result<Vec<f32>, String> {
        let chunks = |n: usize| self.data.chunks_exact(n);
        match self.dtype {
            Dtype::F32 => Ok(chunks(4)
                .map(|b| f32::from_le_bytes(b.try_into().expect("4 bytes")))
                .collect()),
            Dtype::Bf16 => Ok(chunks(2)
                .map(|b| f32::from_bits((u16::from_le_bytes([b[0], b[1]]) as u32) << 16))
                .collect()),
            other => Err(format!(
                "{name} is {}, where float32 or bfloat16 was expected",
                other.name()
            )),
        }
    }
}

/// A Python object as a `state_dict` holds it.
#[derive(Clone, Debug, PartialEq)]
pub enum Obj {
    /// `None`.
    None,
    /// A `bool`.
    Bool(bool),
    /// An `int`.
    Int(i64),
    /// A `float`.
    Float(f64),
    /// A `str`.
    Str(String),
    /// A `list`.
    List(Vec<Obj>),
    /// A `tuple`.
    Tuple(Vec<Obj>),
    /// A `dict`; [`save`] writes it as a plain dict.
    Dict(Vec<(Obj, Obj)>),
    /// A `collections.OrderedDict` (what `Module.state_dict()` returns); [`load`] gives a
    /// [`Obj::Dict`] for both.
    OrderedDict(Vec<(Obj, Obj)>),
    /// A `torch.Tensor`.
    Tensor(StoredTensor),
}

impl Obj {
    /// The items of a dict.
    pub fn items(&self) -> Option<&[(Obj, Obj)]> {
        match self {
            Obj::Dict(d) | Obj::OrderedDict(d) => Some(d),
            _ => None,
        }
    }

    /// The value of the dict's key `key` (a string).
    pub fn get(&self, key: &str) -> Option<&Obj> {
        self.items()?
            .iter()
            .find(|(k, _)| matches!(k, Obj::Str(s) if s == key))
            .map(|(_, v)| v)
    }

    /// A number (`int` or `float`) as f64.
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Obj::Int(i) => Some(*i as f64),
            Obj::Float(f) => Some(*f),
            _ => None,
        }
    }
}

/// The globals `torch.save` of a `state_dict` writes: the tensor rebuilder, the storage
/// classes and `OrderedDict`.
fn allowed_globals() -> Vec<(&'static str, &'static str)> {
    let mut globals = vec![
        ("collections", "OrderedDict"),
        ("torch._utils", "_rebuild_tensor_v2"),
    ];
    globals.extend(DTYPES.iter().map(|d| ("torch", d.1)));
    globals
}

/// Reads a `.pt` file's object: its tensors copied out of their storages.
pub fn load(bytes: &[u8]) -> Result<Obj, String> {
    load_from(Cursor::new(bytes))
}

/// [`load`] from a file or any reader: each storage is read when its tensor is rebuilt, so a
/// checkpoint of several gigabytes takes its own size in memory, once.
pub fn load_from<R: Read + Seek>(reader: R) -> Result<Obj, String> {
    let mut zip = zip::ZipArchive::new(reader)
        .map_err(|e| format!("not a torch.save archive (its zip directory: {e})"))?;
    let pkl_name = zip
        .file_names()
        .filter_map(Result::ok)
        .find(|n| n.ends_with("/data.pkl") && n.matches('/').count() == 1)
        .ok_or("not a torch.save archive (no <name>/data.pkl in it)")?
        .to_string();
    let prefix = pkl_name.trim_end_matches("data.pkl").to_string();
    let mut read = |name: &str| -> Result<Vec<u8>, String> {
        let mut file = zip
            .by_name(name)
            .map_err(|e| format!("the archive's {name}: {e}"))?;
        // Not the size the zip's directory claims: a damaged one may claim terabytes.
        let mut out = Vec::new();
        file.read_to_end(&mut out)
            .map_err(|e| format!("the archive's {name} cannot be read ({e})"))?;
        Ok(out)
    };
    if let Ok(order) = read(&format!("{prefix}byteorder")) {
        if order != b"little" {
            return Err(format!(
                "its tensors are {}-endian; only little-endian files are read",
                String::from_utf8_lossy(&order)
            ));
        }
    }
    let pickle = read(&pkl_name)?;
    let value = pickle::run(&pickle, &allowed_globals(), "torch.save of a state_dict")
        .map_err(|e| format!("{pkl_name}: {e}"))?;
    // A state_dict's tensors each have a storage of their own; one shared by two views is
    // read twice.
    let mut storage = |key: &str| read(&format!("{prefix}data/{key}"));
    to_obj(value, &mut storage)
}

fn to_obj(
    value: Value,
    storage: &mut dyn FnMut(&str) -> Result<Vec<u8>, String>,
) -> Result<Obj, String> {
    let mut all = |items: Vec<Value>| -> Result<Vec<Obj>, String> {
        items.into_iter().map(|v| to_obj(v, storage)).collect()
    };
    Ok(match value {
        Value::None => Obj::None,
        Value::Bool(b) => Obj::Bool(b),
        Value::Int(i) => Obj::Int(i),
        Value::Float(f) => Obj::Float(f),
        Value::Str(s) => Obj::Str(s),
        Value::List(l) => Obj::List(all(l)?),
        Value::Tuple(t) => Obj::Tuple(all(t)?),
        Value::Dict(d) => {
            let mut items = Vec::with_capacity(d.len());
            for (k, v) in d {
                items.push((to_obj(k, storage)?, to_obj(v, storage)?));
            }
            Obj::Dict(items)
        }
        Value::Object(cls, args, _) if *cls == rebuild_tensor() => {
            Obj::Tensor(rebuild_tensor_v2(*args, storage)?)
        }
        other => return Err(format!("the pickle holds {}", describe(&other))),
    })
}

fn rebuild_tensor() -> Value {
    Value::Global("torch._utils".into(), "_rebuild_tensor_v2".into())
}

fn describe(v: &Value) -> String {
    match v {
        Value::Object(cls, _, _) => match &**cls {
            Value::Global(m, n) => format!("a call of {m}.{n}, which is not a tensor"),
            _ => "an object without a class".into(),
        },
        Value::Global(m, n) => format!("the class {m}.{n} itself"),
        Value::Bytes(_) => "bytes, which a state_dict never holds".into(),
        Value::PersistentId(_) => "a storage outside a tensor".into(),
        _ => "a value a state_dict never holds".into(),
    }
}

fn usize_of(v: &Value, what: &str) -> Result<usize, String> {
    match v {
        Value::Int(i) => usize::try_from(*i).map_err(|_| format!("{what} is {i}")),
        _ => Err(format!("{what} is not an integer")),
    }
}

fn usizes(v: &Value, what: &str) -> Result<Vec<usize>, String> {
    match v {
        Value::Tuple(t) => t.iter().map(|x| usize_of(x, what)).collect(),
        _ => Err(format!("{what} is not a tuple")),
    }
}

/// `_rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad, hooks)`: the
/// tensor's elements gathered out of its storage, which is checked to hold them.
fn rebuild_tensor_v2(
    args: Value,
    storage: &mut dyn FnMut(&str) -> Result<Vec<u8>, String>,
) -> Result<StoredTensor, String> {
    let Value::Tuple(args) = args else {
        return Err("a tensor rebuilt from something that is not a tuple".into());
    };
    let [Value::PersistentId(id), offset, size, stride, ..] = args.as_slice() else {
        return Err("a tensor rebuilt without its storage, offset, size and stride".into());
    };
    let Value::Tuple(id) = &**id else {
        return Err("a storage id that is not a tuple".into());
    };
    let [Value::Str(kind), Value::Global(module, class), Value::Str(key), _, numel] = id.as_slice()
    else {
        return Err("a storage id that is not (\"storage\", class, key, location, numel)".into());
    };
    let dtype = DTYPES
        .iter()
        .find(|d| kind == "storage" && module == "torch" && d.1 == class)
        .map(|d| d.0)
        .ok_or_else(|| format!("a storage of {module}.{class}, which is not read"))?;
    let numel = usize_of(numel, "a storage's size")?;
    let (offset, shape, stride) = (
        usize_of(offset, "a tensor's offset")?,
        usizes(size, "a tensor's size")?,
        usizes(stride, "a tensor's stride")?,
    );
    if shape.len() != stride.len() {
        return Err(format!(
            "a tensor of shape {shape:?} with the strides {stride:?}"
        ));
    }
    let bytes = storage(key)?;
    let esize = dtype.size();
    if numel.checked_mul(esize) != Some(bytes.len()) {
        return Err(format!(
            "the storage data/{key} holds {} bytes, not the {numel} {} elements its id gives",
            bytes.len(),
            dtype.name()
        ));
    }
    let too_large = || format!("a tensor of shape {shape:?} and strides {stride:?}, too large");
    let count = shape
        .iter()
        .try_fold(1usize, |acc, &n| acc.checked_mul(n))
        .ok_or_else(too_large)?;
    if count == 0 {
        return Ok(StoredTensor {
            dtype,
            shape,
            data: Vec::new(),
        });
    }
    if count > numel {
        return Err(format!(
            "a tensor of {count} elements over the storage data/{key} of {numel} (an expanded \
             view, which a state_dict never holds)"
        ));
    }
    let last = shape
        .iter()
        .zip(&stride)
        .try_fold(offset, |acc, (&n, &s)| {
            acc.checked_add((n - 1).checked_mul(s)?)
        })
        .ok_or_else(too_large)?;
    if last >= numel {
        return Err(format!(
            "a tensor of shape {shape:?} at offset {offset} reaches past its storage data/{key} \
             ({numel} elements)"
        ));
    }
    let mut row_major = vec![1usize; shape.len()];
    for d in (0..shape.len().saturating_sub(1)).rev() {
        row_major[d] = row_major[d + 1] * shape[d + 1];
    }
    let contiguous = shape
        .iter()
        .zip(stride.iter().zip(&row_major))
        .all(|(&n, (s, r))| n <= 1 || s == r);
    if contiguous {
        let mut data = bytes;
        data.truncate((offset + count) * esize);
        data.drain(..offset * esize);
        return Ok(StoredTensor { dtype, shape, data });
    }
    let mut data = Vec::with_capacity(count * esize);
    let mut index = vec![0usize; shape.len()];
    for _ in 0..count {
        let at = offset + index.iter().zip(&stride).map(|(i, s)| i * s).sum::<usize>();
        data.extend_from_slice(&bytes[at * esize..(at + 1) * esize]);
        for d in (0..shape.len()).rev() {
            index[d] += 1;
            if index[d] < shape[d] {
                break;
            }
            index[d] = 0;
        }
    }
    Ok(StoredTensor { dtype, shape, data })
}

// The protocol-2 opcodes `torch.save` writes (Python's Lib/pickletools.py names them).
mod op {
    pub const PROTO: u8 = 0x80;
    pub const STOP: u8 = b'.';
    pub const MARK: u8 = b'(';
    pub const GLOBAL: u8 = b'c';
    pub const REDUCE: u8 = b'R';
    pub const BINPERSID: u8 = b'Q';
    pub const EMPTY_DICT: u8 = b'}';
    pub const EMPTY_LIST: u8 = b']';
    pub const EMPTY_TUPLE: u8 = b')';
    pub const SETITEMS: u8 = b'u';
    pub const APPENDS: u8 = b'e';
    pub const TUPLE: u8 = b't';
    pub const TUPLE1: u8 = 0x85;
    pub const BINUNICODE: u8 = b'X';
    pub const BININT1: u8 = b'K';
    pub const BININT2: u8 = b'M';
    pub const BININT: u8 = b'J';
    pub const LONG1: u8 = 0x8a;
    pub const BINFLOAT: u8 = b'G';
    pub const NONE: u8 = b'N';
    pub const NEWTRUE: u8 = 0x88;
    pub const NEWFALSE: u8 = 0x89;
}

/// The pickle and the storages it refers to, in order.
struct Pickler<'a> {
    out: Vec<u8>,
    storages: Vec<&'a StoredTensor>,
}

impl<'a> Pickler<'a> {
    fn global(&mut self, module: &str, name: &str) {
        self.out.push(op::GLOBAL);
        self.out.extend(format!("{module}\n{name}\n").bytes());
    }

    fn str(&mut self, s: &str) {
        self.out.push(op::BINUNICODE);
        self.out.extend((s.len() as u32).to_le_bytes());
        self.out.extend(s.as_bytes());
    }

    fn int(&mut self, v: i64) {
        match v {
            0..=0xff => self.out.extend([op::BININT1, v as u8]),
            0x100..=0xffff => {
                self.out.push(op::BININT2);
                self.out.extend((v as u16).to_le_bytes());
            }
            _ if i32::try_from(v).is_ok() => {
                self.out.push(op::BININT);
                self.out.extend((v as i32).to_le_bytes());
            }
            _ => {
                self.out.extend([op::LONG1, 8]);
                self.out.extend(v.to_le_bytes());
            }
        }
    }

    fn ints(&mut self, v: &[usize]) {
        if v.is_empty() {
            self.out.push(op::EMPTY_TUPLE);
            return;
        }
        self.out.push(op::MARK);
        for &x in v {
            self.int(x as i64);
        }
        self.out.push(op::TUPLE);
    }

    fn items(&mut self, items: &'a [(Obj, Obj)]) {
        if items.is_empty() {
            return;
        }
        self.out.push(op::MARK);
        for (k, v) in items {
            self.obj(k);
            self.obj(v);
        }
        self.out.push(op::SETITEMS);
    }

    fn obj(&mut self, o: &'a Obj) {
        match o {
            Obj::None => self.out.push(op::NONE),
            Obj::Bool(b) => self.out.push(if *b { op::NEWTRUE } else { op::NEWFALSE }),
            Obj::Int(i) => self.int(*i),
            Obj::Float(f) => {
                self.out.push(op::BINFLOAT);
                self.out.extend(f.to_bits().to_be_bytes());
            }
            Obj::Str(s) => self.str(s),
            Obj::List(l) => {
                self.out.push(op::EMPTY_LIST);
                if !l.is_empty() {
                    self.out.push(op::MARK);
                    l.iter().for_each(|x| self.obj(x));
                    self.out.push(op::APPENDS);
                }
            }
            Obj::Tuple(t) if t.is_empty() => self.out.push(op::EMPTY_TUPLE),
            Obj::Tuple(t) => {
                self.out.push(op::MARK);
                t.iter().for_each(|x| self.obj(x));
                self.out.push(op::TUPLE);
            }
            Obj::Dict(d) => {
                self.out.push(op::EMPTY_DICT);
                self.items(d);
            }
            Obj::OrderedDict(d) => {
                self.global("collections", "OrderedDict");
                self.out.extend([op::EMPTY_TUPLE, op::REDUCE]);
                self.items(d);
            }
            Obj::Tensor(t) => self.tensor(t),
        }
    }

    /// `_rebuild_tensor_v2((storage id), 0, size, stride, False, OrderedDict())`.
    fn tensor(&mut self, t: &'a StoredTensor) {
        let key = self.storages.len();
        self.storages.push(t);
        self.global("torch._utils", "_rebuild_tensor_v2");
        self.out.push(op::MARK);
        self.out.push(op::MARK);
        self.str("storage");
        self.global("torch", t.dtype.entry().1);
        self.str(&key.to_string());
        self.str("cpu");
        self.int(t.numel() as i64);
        self.out.extend([op::TUPLE, op::BINPERSID]);
        self.int(0);
        self.ints(&t.shape);
        let mut stride = vec![1usize; t.shape.len()];
        for d in (0..t.shape.len().saturating_sub(1)).rev() {
            stride[d] = stride[d + 1] * t.shape[d + 1];
        }
        if t.shape.len() == 1 {
            self.out.extend([op::BININT1, 1, op::TUPLE1]);
        } else {
            self.ints(&stride);
        }
        self.out.push(op::NEWFALSE);
        self.global("collections", "OrderedDict");
        self.out.extend([op::EMPTY_TUPLE, op::REDUCE]);
        self.out.extend([op::TUPLE, op::REDUCE]);
    }
}

/// `torch.save(obj, "<archive_name>.pt")`'s bytes.
pub fn save(archive_name: &str, obj: &Obj) -> Result<Vec<u8>, String> {
    let mut p = Pickler {
        out: vec![op::PROTO, 2],
        storages: Vec::new(),
    };
    p.obj(obj);
    p.out.push(op::STOP);
    let data: Vec<&[u8]> = p.storages.iter().map(|t| t.data.as_slice()).collect();
    archive(archive_name, &p.out, &data)
}

/// The zip `torch.save` writes around a pickle and its storages (`data/0`, `data/1`, … in
/// the order given), in `_save`'s order, each storage aligned to 64 bytes.
pub fn archive(archive_name: &str, pickle: &[u8], storages: &[&[u8]]) -> Result<Vec<u8>, String> {
    // torch draws the serialization id at random; ours is a digest of the contents, so that
    // the same checkpoint gives the same bytes.
    let mut sha = Sha256::new();
    sha.update(pickle);
    storages.iter().for_each(|data| sha.update(data));
    let id = u128::from_le_bytes(sha.finalize()[..16].try_into().expect("16 bytes"));
    let id = format!("{id:040}");
    let mut zip = zip::ZipWriter::new(Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Stored)
        .last_modified_time(zip::DateTime::default())
        .unix_permissions(0o644);
    let mut put = |name: String, bytes: &[u8], aligned: bool| -> Result<(), String> {
        let options = options.large_file(bytes.len() as u64 >= u32::MAX as u64);
        let options = if aligned {
            options.with_alignment(64)
        } else {
            options
        };
        zip.start_file(format!("{archive_name}/{name}"), options)
            .and_then(|_| Ok(zip.write_all(bytes)?))
            .map_err(|e| format!("cannot write {archive_name}/{name}: {e}"))
    };
    put("data.pkl".into(), pickle, false)?;
    put(".format_version".into(), b"1", false)?;
    put(".storage_alignment".into(), b"64", false)?;
    put("byteorder".into(), b"little", false)?;
    for (key, data) in storages.iter().enumerate() {
        put(format!("data/{key}"), data, true)?;
    }
    put("version".into(), b"3\n", false)?;
    put(".data/serialization_id".into(), id.as_bytes(), false)?;
    let cursor = zip
        .finish()
        .map_err(|e| format!("cannot finish the archive {archive_name}: {e}"))?;
    Ok(cursor.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_saved_object_loads_back() {
        let obj = Obj::OrderedDict(vec![
            (
                Obj::Str("w".into()),
                Obj::Tensor(StoredTensor::f32(&[2, 3], &[1., 2., 3., 4., 5., 6.])),
            ),
            (
                Obj::Str("step".into()),
                Obj::List(vec![
                    Obj::Int(3),
                    Obj::Int(-70000),
                    Obj::Int(1 << 40),
                    Obj::Float(0.25),
                    Obj::Tuple(vec![Obj::Bool(true), Obj::None]),
                ]),
            ),
        ]);
        let bytes = save("model_000001", &obj).unwrap();
        let Obj::OrderedDict(items) = obj else {
            unreachable!()
        };
        assert_eq!(load(&bytes).unwrap(), Obj::Dict(items));
        // What was loaded saves to the same bytes.
        assert_eq!(
            bytes,
            save("model_000001", &load(&bytes).unwrap().with_ordered()).unwrap()
        );
    }

    impl Obj {
        fn with_ordered(self) -> Obj {
            match self {
                Obj::Dict(d) => Obj::OrderedDict(d),
                o => o,
            }
        }
    }
}
