//! Fixed-width binary rows for the parts of the aggregate that grow with the
//! ranks (a site's row per rank, its peers, the wait matrix), serialized as
//! one byte string each: in a merged job log of 65,536 ranks they are most of
//! the bytes, and MessagePack's named fields would be most of those and of
//! the time to read them.

use serde::de::{Error, Visitor};
use serde::{Deserializer, Serializer};

use crate::exact_sum::Fx;
use crate::HashMap;

/// A value with a fixed-width little-endian encoding.
pub(crate) trait Row: Sized {
    const SIZE: usize;
    fn put(&self, out: &mut Vec<u8>);
    /// `b` is exactly `SIZE` bytes.
    fn get(b: &[u8]) -> Self;
}

pub(crate) fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap_or_default())
}

pub(crate) fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap_or_default())
}

pub(crate) fn fx_at(b: &[u8], at: usize) -> Fx {
    Fx::from_bits(i128::from_le_bytes(
        b[at..at + 16].try_into().unwrap_or_default(),
    ))
}

impl Row for u32 {
    const SIZE: usize = 4;
    fn put(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.to_le_bytes());
    }
    fn get(b: &[u8]) -> Self {
        u32_at(b, 0)
    }
}

impl Row for i32 {
    const SIZE: usize = 4;
    fn put(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.to_le_bytes());
    }
    fn get(b: &[u8]) -> Self {
        u32_at(b, 0) as i32
    }
}

impl Row for u64 {
    const SIZE: usize = 8;
    fn put(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.to_le_bytes());
    }
    fn get(b: &[u8]) -> Self {
        u64_at(b, 0)
    }
}

impl Row for f32 {
    const SIZE: usize = 4;
    fn put(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.to_le_bytes());
    }
    fn get(b: &[u8]) -> Self {
        f32::from_bits(u32_at(b, 0))
    }
}

impl<A: Row, B: Row> Row for (A, B) {
    const SIZE: usize = A::SIZE + B::SIZE;
    fn put(&self, out: &mut Vec<u8>) {
        self.0.put(out);
        self.1.put(out);
    }
    fn get(b: &[u8]) -> Self {
        (A::get(&b[..A::SIZE]), B::get(&b[A::SIZE..]))
    }
}

pub(crate) fn bytes_of<T: Row>(rows: impl ExactSizeIterator<Item = T>) -> Vec<u8> {
    let mut out = Vec::with_capacity(rows.len() * T::SIZE);
    for r in rows {
        r.put(&mut out);
    }
    out
}

struct Rows<T>(std::marker::PhantomData<T>);

impl<'de, T: Row> Visitor<'de> for Rows<T> {
    type Value = Vec<T>;
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        write!(f, "a byte string of {}-byte rows", T::SIZE)
    }
    fn visit_bytes<E: Error>(self, b: &[u8]) -> Result<Vec<T>, E> {
        if !b.len().is_multiple_of(T::SIZE) {
            return Err(E::custom(format!(
                "{} bytes are not whole {}-byte rows",
                b.len(),
                T::SIZE
            )));
        }
        Ok(b.chunks_exact(T::SIZE).map(T::get).collect())
    }
    fn visit_byte_buf<E: Error>(self, b: Vec<u8>) -> Result<Vec<T>, E> {
        self.visit_bytes(&b)
    }
}

fn rows<'de, T: Row, D: Deserializer<'de>>(d: D) -> Result<Vec<T>, D::Error> {
    d.deserialize_bytes(Rows(std::marker::PhantomData))
}

/// `Vec<T>` as rows.
pub(crate) mod vec {
    use super::*;

    pub(crate) fn serialize<T: Row + Copy, S: Serializer>(
        v: &[T],
        s: S,
    ) -> Result<S::Ok, S::Error> {
        s.serialize_bytes(&bytes_of(v.iter().copied()))
    }

    pub(crate) fn deserialize<'de, T: Row, D: Deserializer<'de>>(d: D) -> Result<Vec<T>, D::Error> {
        rows(d)
    }
}

/// A map as (key, value) rows.
pub(crate) mod map {
    use super::*;

    pub(crate) fn serialize<K: Row + Copy, V: Row + Clone, S: Serializer>(
        m: &HashMap<K, V>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        s.serialize_bytes(&bytes_of(m.iter().map(|(k, v)| (*k, v.clone()))))
    }

    pub(crate) fn deserialize<'de, K, V, D>(d: D) -> Result<HashMap<K, V>, D::Error>
    where
        K: Row + Eq + std::hash::Hash,
        V: Row,
        D: Deserializer<'de>,
    {
        Ok(rows::<(K, V), D>(d)?.into_iter().collect())
    }
}
