//! Minimal TensorBoard event-file writer (and reader) for scalar summaries.
//!
//! Produces the same files as PyTorch's
//! `torch.utils.tensorboard.SummaryWriter(log_dir).add_scalar(tag, value, step)`,
//! using only `std`.
//!
//! Format, from the outside in:
//! * An event file is a sequence of TFRecords (TensorFlow
//!   `tensorflow/core/lib/io/record_writer.cc`): `u64` little-endian data
//!   length, `u32` LE masked CRC32C of those 8 length bytes, the data, `u32` LE
//!   masked CRC32C of the data. CRC32C is the Castagnoli polynomial (reflected
//!   `0x82F63B78`); the mask (`tensorflow/core/lib/hash/crc32c.h`, `Mask`) is
//!   `((crc >> 15) | (crc << 17)).wrapping_add(0xa282ead8)`.
//! * Each record is a serialized `tensorboard.Event` protobuf
//!   (`tensorboard/compat/proto/event.proto`): `double wall_time = 1`,
//!   `int64 step = 2`, and in the `what` oneof `string file_version = 3` or
//!   `Summary summary = 5`.
//! * `Summary` (`tensorboard/compat/proto/summary.proto`) is
//!   `repeated Value value = 1`, with `Value { string tag = 1; float simple_value = 2; }`
//!   (`simple_value` lives in the `value` oneof).
//! * The first record of a file is an `Event { wall_time, file_version: "brain.Event:2" }`.
//!
//! Encoding follows proto3 rules as the Python protobuf runtime does
//! (zero-valued `wall_time`/`step`/empty `tag` are omitted, oneof members are
//! always written), so records are byte-identical to those of `SummaryWriter`.

use std::fs::{self, File};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

// ---------------------------------------------------------------------------
// CRC32C (Castagnoli)
// ---------------------------------------------------------------------------

const CRC32C_POLY_REFLECTED: u32 = 0x82F6_3B78;
const CRC_MASK_DELTA: u32 = 0xa282_ead8;

const fn make_crc32c_table() -> [u32; 256] {
    let mut table = [0u32; 256];
    let mut i = 0;
    while i < 256 {
        let mut crc = i as u32;
        let mut bit = 0;
        while bit < 8 {
            crc = if crc & 1 != 0 {
                (crc >> 1) ^ CRC32C_POLY_REFLECTED
            } else {
                crc >> 1
            };
            bit += 1;
        }
        table[i] = crc;
        i += 1;
    }
    table
}

static CRC32C_TABLE: [u32; 256] = make_crc32c_table();

/// CRC32C (Castagnoli) checksum of `data`, as used by TFRecord framing.
pub fn crc32c(data: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in data {
        crc = CRC32C_TABLE[((crc ^ b as u32) & 0xff) as usize] ^ (crc >> 8);
    }
    !crc
}

/// Masked CRC32C as stored in TFRecord files (TensorFlow's `crc32c::Mask`).
pub fn masked_crc32c(data: &[u8]) -> u32 {
    // ((crc >> 15) | (crc << 17)) + 0xa282ead8, i.e. rotate right by 15.
    crc32c(data).rotate_right(15).wrapping_add(CRC_MASK_DELTA)
}

// ---------------------------------------------------------------------------
// Protobuf encoding helpers
// ---------------------------------------------------------------------------

const WIRE_VARINT: u8 = 0;
const WIRE_FIXED64: u8 = 1;
const WIRE_LEN: u8 = 2;
const WIRE_FIXED32: u8 = 5;

fn put_varint(buf: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        buf.push((v as u8) | 0x80);
        v >>= 7;
    }
    buf.push(v as u8);
}

fn put_key(buf: &mut Vec<u8>, field: u32, wire: u8) {
    put_varint(buf, ((field as u64) << 3) | wire as u64);
}

fn put_len_delimited(buf: &mut Vec<u8>, field: u32, bytes: &[u8]) {
    put_key(buf, field, WIRE_LEN);
    put_varint(buf, bytes.len() as u64);
    buf.extend_from_slice(bytes);
}

/// `Event` header fields shared by every event: wall_time (1) and step (2),
/// omitted when zero as proto3 does.
fn encode_event_header(buf: &mut Vec<u8>, wall_time: f64, step: i64) {
    if wall_time.to_bits() != 0 {
        put_key(buf, 1, WIRE_FIXED64);
        buf.extend_from_slice(&wall_time.to_le_bytes());
    }
    if step != 0 {
        put_key(buf, 2, WIRE_VARINT);
        put_varint(buf, step as u64);
    }
}

fn encode_file_version_event(wall_time: f64) -> Vec<u8> {
    let mut buf = Vec::with_capacity(32);
    encode_event_header(&mut buf, wall_time, 0);
    put_len_delimited(&mut buf, 3, b"brain.Event:2");
    buf
}

fn encode_scalar_event(tag: &str, value: f32, step: i64, wall_time: f64) -> Vec<u8> {
    // Summary.Value { tag = 1; simple_value = 2 (oneof: always written) }
    let mut val = Vec::with_capacity(tag.len() + 8);
    if !tag.is_empty() {
        put_len_delimited(&mut val, 1, tag.as_bytes());
    }
    put_key(&mut val, 2, WIRE_FIXED32);
    val.extend_from_slice(&value.to_le_bytes());
    // Summary { repeated Value value = 1 }
    let mut summary = Vec::with_capacity(val.len() + 4);
    put_len_delimited(&mut summary, 1, &val);
    // Event { wall_time = 1; step = 2; summary = 5 (oneof: always written) }
    let mut buf = Vec::with_capacity(summary.len() + 24);
    encode_event_header(&mut buf, wall_time, step);
    put_len_delimited(&mut buf, 5, &summary);
    buf
}

/// Encodes one TFRecord (length, masked CRC of length, data, masked CRC of data).
fn write_record<W: Write>(w: &mut W, data: &[u8]) -> io::Result<()> {
    let len = (data.len() as u64).to_le_bytes();
    w.write_all(&len)?;
    w.write_all(&masked_crc32c(&len).to_le_bytes())?;
    w.write_all(data)?;
    w.write_all(&masked_crc32c(data).to_le_bytes())
}

// ---------------------------------------------------------------------------
// Writer
// ---------------------------------------------------------------------------

/// Per-process counter for the last component of event file names
/// (tensorboard's `_global_uid`).
static GLOBAL_UID: AtomicU64 = AtomicU64::new(0);

fn hostname() -> String {
    if let Ok(s) = fs::read_to_string("/proc/sys/kernel/hostname") {
        let s = s.trim();
        if !s.is_empty() {
            return s.to_string();
        }
    }
    if let Ok(s) = std::env::var("HOSTNAME") {
        let s = s.trim();
        if !s.is_empty() {
            return s.to_string();
        }
    }
    "localhost".to_string()
}

/// Current time as seconds since the Unix epoch, as Python's `time.time()`;
/// a convenient `wall_time` argument for [`EventWriter::add_scalar`].
pub fn wall_time_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// Writes a TensorBoard event file of scalar summaries, like PyTorch's
/// `SummaryWriter`. Writes are buffered; call [`EventWriter::flush`] to make
/// them visible to readers (also done on drop).
pub struct EventWriter {
    writer: BufWriter<File>,
    path: PathBuf,
}

impl EventWriter {
    /// Creates `log_dir` if needed and a new file in it named
    /// `events.out.tfevents.{unix_seconds}.{hostname}.{pid}.{n}` (as
    /// `SummaryWriter` names them; `n` is a per-process counter starting at 0),
    /// then writes and flushes the leading `file_version: "brain.Event:2"` event.
    pub fn create(log_dir: &Path) -> io::Result<EventWriter> {
        fs::create_dir_all(log_dir)?;
        let wall_time = wall_time_now();
        let name = format!(
            "events.out.tfevents.{:010}.{}.{}.{}",
            wall_time as u64,
            hostname(),
            std::process::id(),
            GLOBAL_UID.fetch_add(1, Ordering::Relaxed)
        );
        let path = log_dir.join(name);
        let file = File::create(&path)?;
        let mut writer = EventWriter {
            writer: BufWriter::new(file),
            path,
        };
        write_record(&mut writer.writer, &encode_file_version_event(wall_time))?;
        writer.flush()?;
        Ok(writer)
    }

    /// Path of the event file being written.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends a scalar summary event `tag = value` at `step`; `wall_time` is
    /// seconds since the Unix epoch (see [`wall_time_now`]).
    pub fn add_scalar(
        &mut self,
        tag: &str,
        value: f32,
        step: i64,
        wall_time: f64,
    ) -> io::Result<()> {
        write_record(
            &mut self.writer,
            &encode_scalar_event(tag, value, step, wall_time),
        )
    }

    /// Flushes buffered records to the file.
    pub fn flush(&mut self) -> io::Result<()> {
        self.writer.flush()
    }
}

impl Drop for EventWriter {
    fn drop(&mut self) {
        let _ = self.writer.flush();
    }
}

// ---------------------------------------------------------------------------
// Reader
// ---------------------------------------------------------------------------

fn invalid(msg: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg)
}

/// Minimal protobuf cursor over a byte slice.
struct Proto<'a> {
    buf: &'a [u8],
    pos: usize,
    what: &'static str,
}

impl<'a> Proto<'a> {
    fn new(buf: &'a [u8], what: &'static str) -> Self {
        Proto { buf, pos: 0, what }
    }

    fn err(&self, msg: &str) -> io::Error {
        invalid(format!(
            "malformed {} protobuf at byte {}: {}",
            self.what, self.pos, msg
        ))
    }

    fn done(&self) -> bool {
        self.pos >= self.buf.len()
    }

    fn varint(&mut self) -> io::Result<u64> {
        let mut v = 0u64;
        for i in 0..10 {
            let b = *self
                .buf
                .get(self.pos)
                .ok_or_else(|| self.err("truncated varint"))?;
            self.pos += 1;
            v |= ((b & 0x7f) as u64) << (7 * i);
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(self.err("varint longer than 10 bytes"))
    }

    fn take(&mut self, n: usize) -> io::Result<&'a [u8]> {
        if self.buf.len() - self.pos < n {
            return Err(self.err("field runs past end of message"));
        }
        let s = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    /// Reads a field key, returning (field number, wire type).
    fn key(&mut self) -> io::Result<(u64, u8)> {
        let k = self.varint()?;
        Ok((k >> 3, (k & 7) as u8))
    }

    fn len_delimited(&mut self) -> io::Result<&'a [u8]> {
        let n = self.varint()?;
        let n = usize::try_from(n).map_err(|_| self.err("length too large"))?;
        self.take(n)
    }

    fn skip(&mut self, wire: u8) -> io::Result<()> {
        match wire {
            WIRE_VARINT => self.varint().map(drop),
            WIRE_FIXED64 => self.take(8).map(drop),
            WIRE_LEN => self.len_delimited().map(drop),
            WIRE_FIXED32 => self.take(4).map(drop),
            w => Err(self.err(&format!("unsupported wire type {}", w))),
        }
    }
}

/// Scalars `(tag, value)` of one `Summary.Value`, if it has a `simple_value`.
fn parse_summary_value(buf: &[u8]) -> io::Result<Option<(String, f32)>> {
    let mut p = Proto::new(buf, "Summary.Value");
    let mut tag = String::new();
    let mut value = None;
    while !p.done() {
        match p.key()? {
            (1, WIRE_LEN) => {
                let b = p.len_delimited()?;
                tag = String::from_utf8(b.to_vec()).map_err(|_| p.err("tag is not UTF-8"))?;
            }
            (2, WIRE_FIXED32) => {
                let b = p.take(4)?;
                value = Some(f32::from_le_bytes([b[0], b[1], b[2], b[3]]));
            }
            (_, wire) => p.skip(wire)?,
        }
    }
    Ok(value.map(|v| (tag, v)))
}

fn parse_event(buf: &[u8], out: &mut Vec<(String, i64, f32)>) -> io::Result<()> {
    let mut p = Proto::new(buf, "Event");
    let mut step = 0i64;
    let mut summaries: Vec<&[u8]> = Vec::new();
    while !p.done() {
        match p.key()? {
            (2, WIRE_VARINT) => step = p.varint()? as i64,
            (5, WIRE_LEN) => summaries.push(p.len_delimited()?),
            (_, wire) => p.skip(wire)?,
        }
    }
    for summary in summaries {
        let mut s = Proto::new(summary, "Summary");
        while !s.done() {
            match s.key()? {
                (1, WIRE_LEN) => {
                    if let Some((tag, v)) = parse_summary_value(s.len_delimited()?)? {
                        out.push((tag, step, v));
                    }
                }
                (_, wire) => s.skip(wire)?,
            }
        }
    }
    Ok(())
}

/// Reads an event file back, returning every scalar summary value as
/// `(tag, step, simple_value)` in file order. Both CRCs of every record are
/// checked; a damaged or truncated file yields an error of kind
/// [`io::ErrorKind::InvalidData`] describing the problem.
pub fn read_scalars(path: &Path) -> io::Result<Vec<(String, i64, f32)>> {
    let data = fs::read(path)?;
    let mut out = Vec::new();
    let mut pos = 0usize;
    let mut index = 0usize;
    while pos < data.len() {
        let rest = &data[pos..];
        if rest.len() < 12 {
            return Err(invalid(format!(
                "record {} at byte {}: truncated header ({} of 12 bytes)",
                index,
                pos,
                rest.len()
            )));
        }
        let len_bytes = &rest[..8];
        let len_crc = u32::from_le_bytes([rest[8], rest[9], rest[10], rest[11]]);
        if len_crc != masked_crc32c(len_bytes) {
            return Err(invalid(format!(
                "record {} at byte {}: length CRC mismatch",
                index, pos
            )));
        }
        let len = u64::from_le_bytes(len_bytes.try_into().unwrap());
        let avail = (rest.len() - 12) as u64;
        if avail < 4 || len > avail - 4 {
            return Err(invalid(format!(
                "record {} at byte {}: truncated data (length {}, {} bytes left)",
                index, pos, len, avail
            )));
        }
        let len = len as usize;
        let body = &rest[12..12 + len];
        let c = &rest[12 + len..16 + len];
        let data_crc = u32::from_le_bytes([c[0], c[1], c[2], c[3]]);
        if data_crc != masked_crc32c(body) {
            return Err(invalid(format!(
                "record {} at byte {}: data CRC mismatch",
                index, pos
            )));
        }
        parse_event(body, &mut out)
            .map_err(|e| invalid(format!("record {} at byte {}: {}", index, pos, e)))?;
        pos += 16 + len;
        index += 1;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    /// A fresh, unique temporary directory (removed by the caller).
    fn temp_dir(name: &str) -> PathBuf {
        static N: AtomicU64 = AtomicU64::new(0);
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_nanos();
        let dir = std::env::temp_dir().join(format!(
            "tb_test_{}_{}_{}_{}",
            name,
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed),
            nanos
        ));
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn crc32c_known_vectors() {
        assert_eq!(crc32c(b"123456789"), 0xE306_9283);
        assert_eq!(crc32c(&[0u8; 32]), 0x8A91_36AA);
        // RFC 3720 B.4 / TensorFlow crc32c_test.cc
        assert_eq!(crc32c(&[0xffu8; 32]), 0x62A8_AB43);
        let ascending: Vec<u8> = (0..32).collect();
        assert_eq!(crc32c(&ascending), 0x46DD_794E);
        let descending: Vec<u8> = (0..32).rev().collect();
        assert_eq!(crc32c(&descending), 0x113F_DB5C);
        assert_eq!(crc32c(b""), 0);
    }

    #[test]
    fn masking_is_invertible() {
        let crc = crc32c(b"foo");
        let masked = masked_crc32c(b"foo");
        assert_ne!(crc, masked);
        let rot = masked.wrapping_sub(CRC_MASK_DELTA);
        assert_eq!(rot.rotate_left(15), crc);
    }

    /// Golden bytes produced by Python protobuf + tensorboard's RecordWriter.
    #[test]
    fn encoding_matches_python_protobuf() {
        assert_eq!(
            encode_scalar_event("Loss/train", 0.25, 500, 1.5),
            hex("09000000000000f83f10f4032a130a110a0a4c6f73732f747261696e150000803e")
        );
        assert_eq!(
            encode_scalar_event("z", 0.0, -3, 0.0),
            hex("10fdffffffffffffffff012a0a0a080a017a1500000000")
        );
        let mut rec = Vec::new();
        write_record(&mut rec, &encode_scalar_event("Loss/train", 0.25, 500, 1.5)).unwrap();
        assert_eq!(
            rec,
            hex("2100000000000000017becf609000000000000f83f10f4032a130a110a0a4c6f73732f747261696e150000803e6492efa2")
        );
        let mut rec = Vec::new();
        write_record(&mut rec, &encode_file_version_event(1.5)).unwrap();
        assert_eq!(
            rec,
            hex("1800000000000000a37f4b2209000000000000f83f1a0d627261696e2e4576656e743a322a28646c")
        );
    }

    #[test]
    fn file_name_and_header() {
        let dir = temp_dir("name");
        let w = EventWriter::create(&dir.join("nested/run")).unwrap();
        let path = w.path().to_path_buf();
        drop(w);
        let name = path.file_name().unwrap().to_str().unwrap().to_string();
        let parts: Vec<&str> = name.splitn(4, '.').collect();
        assert_eq!(&parts[..3], &["events", "out", "tfevents"]);
        let rest: Vec<&str> = parts[3].split('.').collect();
        assert!(rest.len() >= 4, "{}", name);
        assert_eq!(rest[0].len(), 10);
        assert!(rest[0].parse::<u64>().is_ok());
        assert_eq!(rest[rest.len() - 2], std::process::id().to_string());
        assert!(rest[rest.len() - 1].parse::<u64>().is_ok());
        // The file holds exactly the file_version record.
        let bytes = fs::read(&path).unwrap();
        let len = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
        assert_eq!(bytes.len(), 16 + len);
        let body = &bytes[12..12 + len];
        assert_eq!(body[0], 0x09); // wall_time, fixed64
        assert!(body.ends_with(b"\x1a\x0dbrain.Event:2"));
        assert!(read_scalars(&path).unwrap().is_empty());
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn counter_gives_distinct_files() {
        let dir = temp_dir("distinct");
        let a = EventWriter::create(&dir).unwrap();
        let b = EventWriter::create(&dir).unwrap();
        assert_ne!(a.path(), b.path());
        drop((a, b));
        fs::remove_dir_all(&dir).unwrap();
    }

    fn write_sample(dir: &Path) -> (PathBuf, Vec<(String, i64, f32)>) {
        let expected: Vec<(String, i64, f32)> = vec![
            ("Loss/train".into(), 0, 3.3),
            ("Loss/test".into(), 0, 3.4),
            ("Loss/train".into(), 500, 2.25),
            ("Loss/test".into(), 500, 2.5),
            ("Loss/train".into(), 1000, 0.0),
            ("Loss/test".into(), 1000, -1.0e-7),
            ("big".into(), -7, f32::MAX),
            ("".into(), i64::MAX, f32::INFINITY),
        ];
        let mut w = EventWriter::create(dir).unwrap();
        for (i, (tag, step, v)) in expected.iter().enumerate() {
            w.add_scalar(tag, *v, *step, 1.7e9 + i as f64).unwrap();
        }
        let path = w.path().to_path_buf();
        drop(w); // flush on drop
        (path, expected)
    }

    #[test]
    fn round_trip() {
        let dir = temp_dir("roundtrip");
        let (path, expected) = write_sample(&dir);
        let got = read_scalars(&path).unwrap();
        assert_eq!(got.len(), expected.len());
        for (g, e) in got.iter().zip(&expected) {
            assert_eq!(g.0, e.0);
            assert_eq!(g.1, e.1);
            assert_eq!(g.2.to_bits(), e.2.to_bits());
        }
        // NaN survives too (compare bits).
        let mut w = EventWriter::create(&dir).unwrap();
        w.add_scalar("nan", f32::NAN, 1, 0.0).unwrap();
        w.flush().unwrap();
        let got = read_scalars(w.path()).unwrap();
        assert_eq!(got.len(), 1);
        assert!(got[0].2.is_nan());
        drop(w);
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn flush_makes_records_visible() {
        let dir = temp_dir("flush");
        let mut w = EventWriter::create(&dir).unwrap();
        w.add_scalar("a", 1.0, 1, 1.0).unwrap();
        w.flush().unwrap();
        assert_eq!(
            read_scalars(w.path()).unwrap(),
            vec![("a".to_string(), 1, 1.0)]
        );
        drop(w);
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn damage_is_refused() {
        let dir = temp_dir("damage");
        let (path, _) = write_sample(&dir);
        let good = fs::read(&path).unwrap();
        let first_len = u64::from_le_bytes(good[..8].try_into().unwrap()) as usize;
        let second = 16 + first_len; // start of the second record

        let check = |bytes: &[u8], needle: &str| {
            let p = dir.join("damaged");
            fs::write(&p, bytes).unwrap();
            let err = read_scalars(&p).unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::InvalidData);
            assert!(
                err.to_string().contains(needle),
                "{:?} lacks {:?}",
                err.to_string(),
                needle
            );
        };

        // Every single flipped byte in the file is caught.
        for i in 0..good.len() {
            let mut bad = good.clone();
            bad[i] ^= 0x01;
            let p = dir.join("damaged");
            fs::write(&p, &bad).unwrap();
            let err = read_scalars(&p).expect_err(&format!("flip at byte {} accepted", i));
            assert_eq!(err.kind(), io::ErrorKind::InvalidData);
        }
        // Specific messages.
        let mut bad = good.clone();
        bad[second + 20] ^= 0x40; // inside the second record's data
        check(&bad, "data CRC mismatch");
        let mut bad = good.clone();
        bad[second] ^= 0x01; // second record's length
        check(&bad, "length CRC mismatch");
        let mut bad = good.clone();
        bad[second + 9] ^= 0x01; // second record's length CRC
        check(&bad, "length CRC mismatch");
        check(&good[..good.len() - 1], "truncated data");
        check(&good[..second + 5], "truncated header");
        fs::remove_dir_all(&dir).unwrap();
    }
}
