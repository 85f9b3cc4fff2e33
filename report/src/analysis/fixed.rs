//! Order-independent exact sums of seconds.

/// Order-independent exact sum of seconds (1e-15 s units).
/// Ordered as the exact sums they are.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Fx(i128);

// Serialized as (high i64, low u64): MessagePack has no 128-bit integers.
impl serde::Serialize for Fx {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        ((self.0 >> 64) as i64, self.0 as u64).serialize(s)
    }
}

impl<'de> serde::Deserialize<'de> for Fx {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let (hi, lo) = <(i64, u64)>::deserialize(d)?;
        Ok(Fx(((hi as i128) << 64) | lo as i128))
    }
}

pub(crate) const FX_SCALE: f64 = 1e15;

impl Fx {
    pub(crate) fn add(&mut self, x: f64) {
        self.0 += (x * FX_SCALE).round() as i128;
    }
    pub(crate) fn merge(&mut self, o: Fx) {
        self.0 += o.0;
    }
    pub(crate) fn bits(self) -> i128 {
        self.0
    }
    pub(crate) fn from_bits(b: i128) -> Fx {
        Fx(b)
    }
    pub(crate) fn get(self) -> f64 {
        self.0 as f64 / FX_SCALE
    }
}
