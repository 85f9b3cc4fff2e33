//! Order-independent exact sums of seconds, in fixed point.

/// Exact sum of seconds in 1e-15 s units: adding in any order gives the same
/// bits, so an aggregate does not depend on which worker or rank folded
/// what first. Ordered as the exact sums they are.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Fx(i128);

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

/// Units of [`Fx`] per second.
pub const FX_SCALE: f64 = 1e15;

impl Fx {
    pub fn add(&mut self, x: f64) {
        self.0 += (x * FX_SCALE).round() as i128;
    }
    pub fn merge(&mut self, o: Fx) {
        self.0 += o.0;
    }
    pub fn bits(self) -> i128 {
        self.0
    }
    pub fn from_bits(b: i128) -> Fx {
        Fx(b)
    }
    pub fn get(self) -> f64 {
        self.0 as f64 / FX_SCALE
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_point_sums_do_not_depend_on_order() {
        let xs = [0.1, 1e-9, 3.3, 7e-7, 2.5e-3];
        let mut a = Fx::default();
        let mut b = Fx::default();
        for x in xs {
            a.add(x);
        }
        for x in xs.iter().rev() {
            b.add(*x);
        }
        assert_eq!(a, b);
        assert!((a.get() - xs.iter().sum::<f64>()).abs() < 1e-12);
    }
}
