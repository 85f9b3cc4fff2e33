//! An entry's kept samples, stored in the profile so that the error models can
//! be refitted, compared and validated without measuring again
//! (`mpiover profile refit`, `mpiover fit --entry`).
//!
//! # Encoding
//!
//! A sample is the run-time of one call in seconds, measured in whole ticks of
//! the calibration's timer. Stored as text numbers they would take 10-20
//! characters each and make every rank's `MPI_Init` parse them; stored as
//! ticks above the sample's minimum they are small integers. So each entry
//! holds
//!
//! ```text
//! "samples": {"unit_s": 2.9e-10, "base_s": 1.2345e-6, "count": 400,
//!             "runs": [400], "ticks": "<base64>"}
//! ```
//!
//! with t_i = base_s + v_i * unit_s, v_i the i-th value of `ticks` in
//! **measurement order** (the order matters: the stopping rule and the
//! out-of-sample checks split the sample by time). `ticks` is the values as
//! LEB128 varints (7 bits per byte, high bit set on every byte but the last),
//! then base64 (RFC 4648, standard alphabet, padded). A value of a few hundred
//! ticks takes 2 bytes, about 3 characters: a 400-sample entry adds about
//! 1.2 KB, a quick calibration of 140 entries about 170 KB. `unit_s` is the
//! timer's resolution (the unit the times were quantized to), `base_s` the
//! sample's minimum, `runs` the number of samples of each calibration run, in
//! the order of the entry's `runs` (their sum is `count`).
//!
//! Decoding checks everything (alphabet, padding, a varint running past the
//! end, the count, the runs' sum) and says what is wrong; the profile loader
//! does not decode (the interposer never needs the samples), the tools that
//! refit do.
use serde::{Deserialize, Serialize};

/// Seconds of one stored tick when the timer's resolution is unknown.
const FALLBACK_UNIT_S: f64 = 1e-9;

/// The kept samples of one entry (see the module docs).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Samples {
    /// Seconds per stored tick.
    pub unit_s: f64,
    /// The time of tick 0 (the smallest sample), seconds.
    pub base_s: f64,
    /// Number of samples.
    pub count: u64,
    /// Samples per calibration run, in the order of the entry's `runs`.
    #[serde(default)]
    pub runs: Vec<u64>,
    /// The ticks above `base_s`, LEB128 varints in base64.
    pub ticks: String,
}

/// Why stored samples cannot be read back.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SamplesError {
    #[error("unit_s {0} is not a positive number")]
    BadUnit(f64),
    #[error("base_s {0} is not a non-negative number")]
    BadBase(f64),
    #[error("ticks: {0}")]
    BadEncoding(String),
    #[error("ticks hold {found} values, count says {count}")]
    Count { found: u64, count: u64 },
    #[error("the runs' counts add up to {sum}, count says {count}")]
    Runs { sum: u64, count: u64 },
    #[error("the runs' counts add up to more than 2^64")]
    RunsOverflow,
}

impl Samples {
    /// Encodes run-times (seconds, in measurement order) on a timer of
    /// `unit_s` seconds per tick (the resolution; 1 ns when not positive).
    /// Returns None for an empty sample or one holding a NaN, infinite or
    /// negative time.
    pub fn encode(times_s: &[f64], unit_s: f64) -> Option<Samples> {
        if times_s.is_empty() || times_s.iter().any(|t| !(t.is_finite() && *t >= 0.0)) {
            return None;
        }
        let unit = if unit_s.is_finite() && unit_s > 0.0 {
            unit_s
        } else {
            FALLBACK_UNIT_S
        };
        let base = times_s.iter().copied().fold(f64::INFINITY, f64::min);
        let mut bytes = Vec::with_capacity(times_s.len() * 2);
        for &t in times_s {
            // Round to the nearest tick: the times are whole ticks of the
            // timer up to the floating-point error of ticks * unit.
            let v = ((t - base) / unit).round();
            push_varint(&mut bytes, if v > 0.0 { v as u64 } else { 0 });
        }
        Some(Samples {
            unit_s: unit,
            base_s: base,
            count: times_s.len() as u64,
            runs: vec![times_s.len() as u64],
            ticks: base64_encode(&bytes),
        })
    }

    /// The stored ticks above `base_s`, in measurement order.
    pub fn ticks(&self) -> Result<Vec<u64>, SamplesError> {
        if !(self.unit_s.is_finite() && self.unit_s > 0.0) {
            return Err(SamplesError::BadUnit(self.unit_s));
        }
        if !(self.base_s.is_finite() && self.base_s >= 0.0) {
            return Err(SamplesError::BadBase(self.base_s));
        }
        let bytes = base64_decode(&self.ticks).map_err(SamplesError::BadEncoding)?;
        let values = read_varints(&bytes).map_err(SamplesError::BadEncoding)?;
        let found = values.len() as u64;
        if found != self.count {
            return Err(SamplesError::Count {
                found,
                count: self.count,
            });
        }
        if !self.runs.is_empty() {
            // Checked: a sum that wrapped around to `count` would pass, and
            // `times_by_run` then slice past the end.
            let sum = self
                .runs
                .iter()
                .try_fold(0u64, |a, &n| a.checked_add(n))
                .ok_or(SamplesError::RunsOverflow)?;
            if sum != self.count {
                return Err(SamplesError::Runs {
                    sum,
                    count: self.count,
                });
            }
        }
        Ok(values)
    }

    /// The run-times in seconds, in measurement order.
    pub fn times_s(&self) -> Result<Vec<f64>, SamplesError> {
        Ok(self
            .ticks()?
            .into_iter()
            .map(|v| self.base_s + v as f64 * self.unit_s)
            .collect())
    }

    /// The run-times of each calibration run (one slice per entry of
    /// `runs`; all in one when `runs` is empty).
    pub fn times_by_run(&self) -> Result<Vec<Vec<f64>>, SamplesError> {
        let all = self.times_s()?;
        if self.runs.is_empty() {
            return Ok(vec![all]);
        }
        let mut out = Vec::with_capacity(self.runs.len());
        let mut at = 0usize;
        for &n in &self.runs {
            let end = at + n as usize;
            out.push(all[at..end].to_vec());
            at = end;
        }
        Ok(out)
    }

    /// Larger over smaller of the medians of the first and the second half
    /// of the last run's samples (measurement order): how far the entry's
    /// typical call moved while it was measured. None below `min` samples.
    pub fn half_drift(&self, min: usize) -> Option<f64> {
        let last = self.times_by_run().ok()?.pop()?;
        if last.len() < min.max(2) {
            return None;
        }
        let h = last.len() / 2;
        let a = median_of(last[..h].to_vec());
        let b = median_of(last[h..].to_vec());
        (a > 0.0 && b > 0.0).then(|| a.max(b) / a.min(b))
    }

    /// The samples of several runs, one after the other, re-encoded on the
    /// finest unit among them.
    pub fn concat(parts: &[&Samples]) -> Result<Option<Samples>, SamplesError> {
        let unit = parts.iter().map(|s| s.unit_s).fold(f64::INFINITY, f64::min);
        let mut times = Vec::new();
        let mut runs = Vec::new();
        for s in parts {
            for r in s.times_by_run()? {
                runs.push(r.len() as u64);
                times.extend(r);
            }
        }
        Ok(Samples::encode(&times, unit).map(|mut s| {
            s.runs = runs;
            s
        }))
    }
}

fn push_varint(out: &mut Vec<u8>, mut v: u64) {
    loop {
        let low = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out.push(low);
            return;
        }
        out.push(low | 0x80);
    }
}

fn read_varints(bytes: &[u8]) -> Result<Vec<u64>, String> {
    let mut out = Vec::with_capacity(bytes.len() / 2 + 1);
    let (mut v, mut shift) = (0u64, 0u32);
    for (i, &b) in bytes.iter().enumerate() {
        if shift >= 64 || (shift == 63 && b & 0x7e != 0) {
            return Err(format!("value at byte {i} does not fit in 64 bits"));
        }
        v |= u64::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            out.push(v);
            v = 0;
            shift = 0;
        } else {
            shift += 7;
        }
    }
    if shift != 0 {
        return Err("the last value is cut off".into());
    }
    Ok(out)
}

const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

fn base64_encode(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for (i, shift) in [18u32, 12, 6, 0].into_iter().enumerate() {
            if i <= chunk.len() {
                s.push(ALPHABET[((n >> shift) & 63) as usize] as char);
            } else {
                s.push('=');
            }
        }
    }
    s
}

fn base64_decode(s: &str) -> Result<Vec<u8>, String> {
    let b = s.as_bytes();
    if !b.len().is_multiple_of(4) {
        return Err(format!("{} characters, not a multiple of 4", b.len()));
    }
    let value = |c: u8, at: usize| -> Result<u32, String> {
        match c {
            b'A'..=b'Z' => Ok(u32::from(c - b'A')),
            b'a'..=b'z' => Ok(u32::from(c - b'a') + 26),
            b'0'..=b'9' => Ok(u32::from(c - b'0') + 52),
            b'+' => Ok(62),
            b'/' => Ok(63),
            _ => Err(format!(
                "character {:?} at {at} is not base64",
                char::from(c)
            )),
        }
    };
    let mut out = Vec::with_capacity(b.len() / 4 * 3);
    let quads = b.len() / 4;
    for (qi, q) in b.chunks(4).enumerate() {
        let pad = q.iter().rev().take_while(|&&c| c == b'=').count();
        if pad > 2 || (pad > 0 && qi + 1 != quads) {
            return Err(format!("padding inside the text (group {qi})"));
        }
        let mut n = 0u32;
        for (i, &c) in q[..4 - pad].iter().enumerate() {
            n |= value(c, qi * 4 + i)? << (18 - 6 * i as u32);
        }
        let bytes = [(n >> 16) as u8, (n >> 8) as u8, n as u8];
        out.extend_from_slice(&bytes[..3 - pad]);
    }
    Ok(out)
}

/// The median of `v` (the mean of the middle two for an even count; NaN for
/// none). Kept here, with the samples, rather than with the merge that also
/// uses it, so that the host load and the samples need nothing from the merge.
pub(crate) fn median_of(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    if n == 0 {
        return f64::NAN;
    }
    if n % 2 == 1 {
        v[n / 2]
    } else {
        0.5 * (v[n / 2 - 1] + v[n / 2])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Counts per run that add up to `count` only modulo 2^64 passed the
    /// check, and cutting the samples into runs then sliced past their end
    /// (a panic in `profile check` and `merge` on a damaged profile).
    #[test]
    fn run_counts_that_wrap_around_to_count_are_an_error_not_a_panic() {
        let mut s = Samples::encode(&[1e-6, 2e-6, 3e-6], 1e-9).unwrap();
        s.runs = vec![u64::MAX, 4];
        assert_eq!(s.ticks(), Err(SamplesError::RunsOverflow));
        assert!(s.times_by_run().is_err());
        assert!(s.half_drift(1).is_none());
    }

    #[test]
    fn round_trip_keeps_order_and_ticks() {
        let unit = 0.3e-9;
        let times: Vec<f64> = [7u64, 0, 300, 1, 5_000_000, 42, 0, 128]
            .iter()
            .map(|&k| 2e-6 + k as f64 * unit)
            .collect();
        let s = Samples::encode(&times, unit).expect("valid");
        assert_eq!(s.count, 8);
        assert_eq!(s.base_s, 2e-6);
        assert_eq!(
            s.ticks().unwrap(),
            vec![7, 0, 300, 1, 5_000_000, 42, 0, 128]
        );
        let back = s.times_s().unwrap();
        for (a, b) in times.iter().zip(&back) {
            assert!((a - b).abs() < unit / 2.0, "{a} {b}");
        }
    }

    #[test]
    fn bad_input_is_not_encoded() {
        assert!(Samples::encode(&[], 1e-9).is_none());
        assert!(Samples::encode(&[1.0, f64::NAN], 1e-9).is_none());
        assert!(Samples::encode(&[1.0, -1.0], 1e-9).is_none());
        // A unit that is no number falls back to 1 ns.
        assert_eq!(Samples::encode(&[1e-6], 0.0).unwrap().unit_s, 1e-9);
    }

    #[test]
    fn corrupt_text_says_what_is_wrong() {
        let s = Samples::encode(&[1e-6, 2e-6, 3e-6], 1e-9).unwrap();
        let mut bad = s.clone();
        bad.ticks.insert(1, '!');
        bad.ticks.truncate(s.ticks.len());
        assert!(
            matches!(bad.ticks(), Err(SamplesError::BadEncoding(m)) if m.contains("not base64"))
        );
        let mut short = s.clone();
        short.count = 4;
        assert_eq!(
            short.ticks(),
            Err(SamplesError::Count { found: 3, count: 4 })
        );
        let mut runs = s.clone();
        runs.runs = vec![1, 1];
        assert_eq!(runs.ticks(), Err(SamplesError::Runs { sum: 2, count: 3 }));
        let mut cut = s.clone();
        // One byte 0x80 (a varint that never ends): "gA==".
        cut.ticks = "gA==".into();
        cut.count = 1;
        assert!(matches!(cut.ticks(), Err(SamplesError::BadEncoding(m)) if m.contains("cut off")));
        let mut unit = s;
        unit.unit_s = -1.0;
        assert_eq!(unit.ticks(), Err(SamplesError::BadUnit(-1.0)));
    }

    #[test]
    fn concat_keeps_the_runs_apart() {
        let a = Samples::encode(&[1e-6, 3e-6], 1e-9).unwrap();
        let b = Samples::encode(&[2e-6, 5e-6, 4e-6], 1e-9).unwrap();
        let c = Samples::concat(&[&a, &b]).unwrap().unwrap();
        assert_eq!(c.runs, vec![2, 3]);
        let by = c.times_by_run().unwrap();
        assert_eq!(by.len(), 2);
        assert!((by[1][2] - 4e-6).abs() < 1e-15);
    }

    proptest! {
        #[test]
        fn base64_and_varints_round_trip(v in proptest::collection::vec(any::<u64>(), 0..200)) {
            let mut bytes = Vec::new();
            for &x in &v {
                push_varint(&mut bytes, x);
            }
            let text = base64_encode(&bytes);
            prop_assert_eq!(base64_decode(&text).unwrap(), bytes.clone());
            prop_assert_eq!(read_varints(&bytes).unwrap(), v);
        }
    }
}
