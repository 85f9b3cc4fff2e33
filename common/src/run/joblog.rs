//! The job log: one file per run, written once by rank 0 at `MPI_Finalize`
//! (`docs/log-format.md`). Version 1 (`mpiover-log/1`) packs every rank's
//! record; version 2 (`mpiover-log/2`, *merged*) holds one payload, the job
//! aggregate of every rank, folded and merged over MPI in the job (its type and
//! format version are the `mpiover-aggregate` crate's; here it is bytes), with
//! one index row per rank it holds, all pointing at that frame.
//!
//! ```text
//! header   "MPIOVLOG" | u32 version = 1 | u32 n | n bytes of JSON
//!          {"schema": "mpiover-log/1", "run_id": ..., "ranks": ..., "writer": ...}
//! frames   per rank: u32 rank | u32 0 | u64 len | len bytes:
//!          zstd(MessagePack(record, named fields))
//! index    u32 count | count x (u32 rank | u32 0 | u64 frame offset | u64 len)
//! trailer  u64 index offset | "MPIOVIDX"
//! ```
//!
//! Integers are little-endian. Each rank compresses its own record before
//! sending it, so rank 0 only copies frames; the index at the end lets a
//! reader decode frames in parallel. A frame holds exactly what the rank's
//! `rank-NNNNNN.json` would hold, so a report on the log equals the report on
//! the per-rank files. A file without its trailer was cut short: the reader
//! says at which byte, and never guesses.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::error::RunError;
use crate::record::Record;

pub const LOG_SCHEMA: &str = "mpiover-log/1";
/// The merged job log's schema (format version 2).
pub const MERGED_LOG_SCHEMA: &str = "mpiover-log/2";
/// The rank field of the merged log's one frame.
pub const MERGED_FRAME: u32 = u32::MAX;
/// The job log's name in a run directory.
pub const LOG_FILE_NAME: &str = "job.mpiover-log";
const MAGIC: &[u8; 8] = b"MPIOVLOG";
const TRAILER: &[u8; 8] = b"MPIOVIDX";
const VERSION: u32 = 1;
const MERGED_VERSION: u32 = 2;
const FRAME_HEAD: usize = 16;
const INDEX_ROW: usize = 24;

/// The log's header.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LogHeader {
    pub schema: String,
    pub run_id: String,
    pub ranks: u32,
    /// `mpiover VERSION`.
    pub writer: String,
}

/// One rank's record as a frame's payload of a version 1 log (nothing
/// writes those any more; the tests make them, to check they are still read).
#[cfg(test)]
pub(crate) fn encode_record(rec: &Record) -> Result<Vec<u8>, String> {
    let packed = rmp_serde::to_vec_named(rec).map_err(|e| format!("MessagePack: {e}"))?;
    zstd::bulk::compress(&packed, 3).map_err(|e| format!("zstd: {e}"))
}

/// Writes a job log frame by frame (frames in any rank order).
pub struct LogWriter<W: std::io::Write> {
    out: W,
    at: u64,
    index: Vec<(u32, u64, u64)>,
}

impl<W: std::io::Write> LogWriter<W> {
    pub fn new(mut out: W, header: &LogHeader) -> std::io::Result<Self> {
        let json = serde_json::to_vec(header).map_err(std::io::Error::other)?;
        let version = if header.schema == MERGED_LOG_SCHEMA {
            MERGED_VERSION
        } else {
            VERSION
        };
        out.write_all(MAGIC)?;
        out.write_all(&version.to_le_bytes())?;
        out.write_all(&(json.len() as u32).to_le_bytes())?;
        out.write_all(&json)?;
        Ok(LogWriter {
            out,
            at: (16 + json.len()) as u64,
            index: Vec::new(),
        })
    }

    /// One rank's encoded record (version 1), or the merged aggregate's
    /// frame ([`LogWriter::merged`]).
    pub fn frame(&mut self, rank: u32, payload: &[u8]) -> std::io::Result<()> {
        self.out.write_all(&rank.to_le_bytes())?;
        self.out.write_all(&0u32.to_le_bytes())?;
        self.out.write_all(&(payload.len() as u64).to_le_bytes())?;
        self.out.write_all(payload)?;
        self.index.push((rank, self.at, payload.len() as u64));
        self.at += (FRAME_HEAD + payload.len()) as u64;
        Ok(())
    }

    /// The merged log's one frame, and an index row pointing at it for each
    /// rank it holds.
    pub fn merged(&mut self, ranks: &[u32], payload: &[u8]) -> std::io::Result<()> {
        let at = self.at;
        self.frame(MERGED_FRAME, payload)?;
        self.index.pop();
        for &r in ranks {
            self.index.push((r, at, payload.len() as u64));
        }
        Ok(())
    }

    /// The index and the trailer; returns the writer.
    pub fn finish(mut self) -> std::io::Result<W> {
        let index_at = self.at;
        self.out
            .write_all(&(self.index.len() as u32).to_le_bytes())?;
        for &(rank, off, len) in &self.index {
            self.out.write_all(&rank.to_le_bytes())?;
            self.out.write_all(&0u32.to_le_bytes())?;
            self.out.write_all(&off.to_le_bytes())?;
            self.out.write_all(&len.to_le_bytes())?;
        }
        self.out.write_all(&index_at.to_le_bytes())?;
        self.out.write_all(TRAILER)?;
        self.out.flush()?;
        Ok(self.out)
    }
}

/// A job log checked down to its frames' bounds; frames are read from the
/// file when decoded (by any number of threads), so memory does not grow
/// with the log.
#[derive(Debug)]
pub struct JobLog {
    pub path: PathBuf,
    pub header: LogHeader,
    data: Backing,
    /// (rank, payload offset, payload length), in file order.
    frames: Vec<(u32, usize, usize)>,
    /// Format version 2: one aggregate frame, the rows are the ranks it holds.
    merged: bool,
}

/// Where the log's bytes are.
#[derive(Debug)]
enum Backing {
    File(std::fs::File, usize),
    Bytes(Vec<u8>),
}

/// A part of a file, read with `pread` (the file is shared by threads).
struct RangeReader<'a> {
    file: &'a std::fs::File,
    at: u64,
    end: u64,
}

impl std::io::Read for RangeReader<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        use std::os::unix::fs::FileExt;
        let want = buf.len().min(self.end.saturating_sub(self.at) as usize);
        if want == 0 {
            return Ok(0);
        }
        let n = self.file.read_at(&mut buf[..want], self.at)?;
        if n == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        self.at += n as u64;
        Ok(n)
    }
}

impl Backing {
    fn len(&self) -> usize {
        match self {
            Backing::File(_, n) => *n,
            Backing::Bytes(b) => b.len(),
        }
    }

    /// `len` bytes at `at`, or None past the end (or on a read error).
    fn get(&self, at: usize, len: usize) -> Option<Vec<u8>> {
        let end = at.checked_add(len)?;
        if end > self.len() {
            return None;
        }
        match self {
            Backing::Bytes(b) => Some(b[at..end].to_vec()),
            Backing::File(f, _) => {
                use std::os::unix::fs::FileExt;
                let mut v = vec![0u8; len];
                f.read_exact_at(&mut v, at as u64).ok()?;
                Some(v)
            }
        }
    }

    fn u32_at(&self, at: usize) -> Option<u32> {
        Some(u32::from_le_bytes(self.get(at, 4)?.try_into().ok()?))
    }

    fn u64_at(&self, at: usize) -> Option<u64> {
        Some(u64::from_le_bytes(self.get(at, 8)?.try_into().ok()?))
    }
}

impl JobLog {
    pub fn open(path: &Path) -> Result<JobLog, RunError> {
        let io = |source| RunError::Io {
            path: path.to_path_buf(),
            source,
        };
        let f = std::fs::File::open(path).map_err(io)?;
        let n = f.metadata().map_err(io)?.len() as usize;
        JobLog::check(path, Backing::File(f, n))
    }

    /// A log held in memory (tests, tools).
    pub fn parse(path: &Path, bytes: Vec<u8>) -> Result<JobLog, RunError> {
        JobLog::check(path, Backing::Bytes(bytes))
    }

    /// Checks the header, the trailer and every frame's bounds.
    fn check(path: &Path, data: Backing) -> Result<JobLog, RunError> {
        let n = data.len();
        // A message may quote the file (its header's JSON): one line.
        let bad = |offset: usize, what: String| RunError::BadLog {
            path: path.to_path_buf(),
            offset: offset as u64,
            what: crate::one_line::one_line(&what),
        };
        let cut = |offset: usize, what: &str| RunError::TruncatedLog {
            path: path.to_path_buf(),
            offset: offset as u64,
            size: n as u64,
            what: what.to_string(),
        };
        let head = data.get(0, 16).ok_or_else(|| cut(n, "the header"))?;
        if &head[..8] != MAGIC {
            return Err(bad(
                0,
                format!("not a job log (it does not start with {MAGIC:?})"),
            ));
        }
        let version = data.u32_at(8).unwrap_or(0);
        if version != VERSION && version != MERGED_VERSION {
            return Err(bad(
                8,
                format!(
                    "format version {version}, this mpiover reads {VERSION} and {MERGED_VERSION}"
                ),
            ));
        }
        let merged = version == MERGED_VERSION;
        let schema = if merged {
            MERGED_LOG_SCHEMA
        } else {
            LOG_SCHEMA
        };
        let hlen = data.u32_at(12).unwrap_or(0) as usize;
        let hjson = data.get(16, hlen).ok_or_else(|| cut(n, "the header"))?;
        let header: LogHeader = serde_json::from_slice(&hjson)
            .map_err(|e| bad(16, format!("the header is not valid JSON: {e}")))?;
        if header.schema != schema {
            return Err(bad(
                16,
                format!(
                    "schema {:?}, expected {schema:?} (format version {version})",
                    header.schema
                ),
            ));
        }
        let first_frame = 16 + hlen;
        let has_trailer =
            n >= first_frame + 12 && data.get(n - 8, 8).is_some_and(|t| t.as_slice() == TRAILER);
        if !has_trailer {
            // No trailer: find how far the frames are whole, to say where
            // the file was cut.
            let mut at = first_frame;
            while let Some(len) = data.u64_at(at + 8) {
                match at
                    .checked_add(FRAME_HEAD)
                    .and_then(|a| a.checked_add(len as usize))
                {
                    Some(end) if end <= n => at = end,
                    _ => break,
                }
            }
            return Err(cut(at, "a frame or the index (the file has no trailer)"));
        }
        let index_at = data.u64_at(n - 16).unwrap_or(u64::MAX) as usize;
        let count = data
            .u32_at(index_at)
            .ok_or_else(|| bad(n - 16, format!("index offset {index_at} is past the end")))?
            as usize;
        if count
            .checked_mul(INDEX_ROW)
            .and_then(|r| r.checked_add(index_at.checked_add(4)?))
            != Some(n - 16)
        {
            return Err(bad(
                index_at,
                format!("index of {count} frames does not fit before the trailer"),
            ));
        }
        let index = data
            .get(index_at + 4, count * INDEX_ROW)
            .ok_or_else(|| bad(index_at, "the index cannot be read".into()))?;
        let field = |at: usize, w: usize| -> u64 {
            let mut b = [0u8; 8];
            b[..w].copy_from_slice(&index[at..at + w]);
            u64::from_le_bytes(b)
        };
        let mut frames = Vec::with_capacity(count);
        for i in 0..count {
            let row = index_at + 4 + i * INDEX_ROW;
            let at = i * INDEX_ROW;
            let rank = field(at, 4) as u32;
            let off = field(at + 8, 8) as usize;
            let len = field(at + 16, 8) as usize;
            let end = off.checked_add(FRAME_HEAD).and_then(|a| a.checked_add(len));
            if off < first_frame || end.is_none_or(|e| e > index_at) {
                return Err(bad(row, format!("index row {i} points outside the frames")));
            }
            let head = data.get(off, FRAME_HEAD);
            let owner = if merged { MERGED_FRAME } else { rank };
            let matches = head.is_some_and(|h| {
                h[..4] == owner.to_le_bytes() && h[8..16] == (len as u64).to_le_bytes()
            });
            if !matches {
                return Err(bad(
                    off,
                    format!("frame of rank {rank} does not match its index row"),
                ));
            }
            frames.push((rank, off + FRAME_HEAD, len));
        }
        if merged && frames.windows(2).any(|w| w[0].1 != w[1].1) {
            return Err(bad(
                index_at,
                "a merged log's rows point at two frames".into(),
            ));
        }
        Ok(JobLog {
            path: path.to_path_buf(),
            header,
            data,
            frames,
            merged,
        })
    }

    /// A merged log (`mpiover-log/2`): no record per rank, one aggregate.
    pub fn is_merged(&self) -> bool {
        self.merged
    }

    /// The merged log's payload, still compressed, as a reader of the file
    /// (it is the size of the log: it is not read into memory), with the
    /// byte offset of its frame for messages; None for a log of records or
    /// without ranks.
    pub fn merged_payload(&self) -> Option<(Box<dyn std::io::Read + '_>, u64)> {
        let &(_, off, len) = self.frames.first().filter(|_| self.merged)?;
        let at = (off - FRAME_HEAD) as u64;
        let r: Box<dyn std::io::Read + '_> = match &self.data {
            Backing::Bytes(b) => Box::new(&b[off..off + len]),
            Backing::File(f, _) => Box::new(std::io::BufReader::with_capacity(
                1 << 20,
                RangeReader {
                    file: f,
                    at: off as u64,
                    end: (off + len) as u64,
                },
            )),
        };
        Some((r, at))
    }

    pub fn len(&self) -> usize {
        self.frames.len()
    }

    pub fn is_empty(&self) -> bool {
        self.frames.is_empty()
    }

    /// The rank of frame `i` (of index row `i` in a merged log).
    pub fn rank(&self, i: usize) -> u32 {
        self.frames[i].0
    }

    /// Frame `i` as a checked record.
    pub fn record(&self, i: usize) -> Result<Record, RunError> {
        let (rank, off, len) = self.frames[i];
        if self.merged {
            return Err(RunError::Invalid {
                path: self.path.clone(),
                what: "a merged job log holds no record per rank".into(),
            });
        }
        let bad = |what: String| RunError::BadLog {
            path: self.path.clone(),
            offset: (off - FRAME_HEAD) as u64,
            what: format!("frame of rank {rank}: {}", crate::one_line::one_line(&what)),
        };
        let bytes = self
            .data
            .get(off, len)
            .ok_or_else(|| bad("cannot be read".into()))?;
        let packed = zstd::stream::decode_all(bytes.as_slice())
            .map_err(|e| bad(format!("not a zstd frame ({e})")))?;
        let rec: Record =
            rmp_serde::from_slice(&packed).map_err(|e| bad(format!("not a record ({e})")))?;
        if rec.rank != rank {
            return Err(bad(format!("holds the record of rank {}", rec.rank)));
        }
        if rec.run_id != self.header.run_id {
            return Err(bad(format!(
                "is of run {:?}, the log of run {:?}",
                rec.run_id, self.header.run_id
            )));
        }
        let here = self.frame_path(rank);
        rec.check().map_err(|e| RunError::of_record(&here, e))?;
        Ok(rec)
    }

    /// How a frame is named in messages: `LOG#rank-N`.
    pub fn frame_path(&self, rank: u32) -> PathBuf {
        PathBuf::from(format!("{}#rank-{rank}", self.path.display()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(rank: u32) -> Record {
        let mut r = crate::record::sample::record(rank, 3, "run-1");
        r.warnings.push(format!("warning of rank {rank}"));
        r
    }

    fn log(ranks: &[u32]) -> Vec<u8> {
        let header = LogHeader {
            schema: LOG_SCHEMA.into(),
            run_id: "run-1".into(),
            ranks: 3,
            writer: "test".into(),
        };
        let mut w = LogWriter::new(Vec::new(), &header).unwrap();
        for &r in ranks {
            w.frame(r, &encode_record(&record(r)).unwrap()).unwrap();
        }
        w.finish().unwrap()
    }

    #[test]
    fn every_frame_reads_back_as_the_record_written() {
        let l = JobLog::parse(Path::new("x"), log(&[2, 0, 1])).unwrap();
        assert_eq!(l.len(), 3);
        for i in 0..3 {
            let rec = l.record(i).unwrap();
            assert_eq!(rec, record(l.rank(i)));
        }
    }

    #[test]
    fn a_cut_log_names_the_byte_where_the_whole_frames_end() {
        let full = log(&[0, 1, 2]);
        let one = log(&[0]);
        // Cut inside the second frame: the first frame is whole.
        let first_end = one.len() - 4 - INDEX_ROW - 16;
        let cut = full[..first_end + 10].to_vec();
        let e = JobLog::parse(Path::new("job"), cut)
            .unwrap_err()
            .to_string();
        assert!(e.contains(&format!("byte {first_end}")), "{e}");
        assert!(e.starts_with("job: truncated job log"), "{e}");
    }

    #[test]
    fn corruption_is_an_error_at_its_offset_never_a_panic() {
        let full = log(&[0, 1]);
        let l = JobLog::parse(Path::new("x"), full.clone()).unwrap();
        let (_, off, len) = l.frames[1];
        let mut bad = full.clone();
        for b in &mut bad[off + len / 2..off + len / 2 + 8] {
            *b ^= 0x5a;
        }
        let l = JobLog::parse(Path::new("x"), bad).unwrap();
        let e = l.record(1).unwrap_err().to_string();
        assert!(e.contains(&format!("byte {}", off - FRAME_HEAD)), "{e}");
        // Any single flipped byte: an error or the same records, no panic.
        for i in (0..full.len()).step_by(7) {
            let mut b = full.clone();
            b[i] ^= 0xff;
            if let Ok(l) = JobLog::parse(Path::new("x"), b) {
                for k in 0..l.len() {
                    let _ = l.record(k);
                }
            }
        }
        let e = JobLog::parse(Path::new("x"), b"{\"schema\":1}".repeat(3)).unwrap_err();
        assert!(e.to_string().contains("not a job log"), "{e}");
    }
}
