//! Order-independent exact sums of seconds.

/// Order-independent exact sum of seconds (1e-15 s units).
/// Ordered as the exact sums they are.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Fx(i128);

pub(crate) const FX_SCALE: f64 = 1e15;

impl Fx {
    pub(crate) fn add(&mut self, x: f64) {
        self.0 += (x * FX_SCALE).round() as i128;
    }
    pub(crate) fn merge(&mut self, o: Fx) {
        self.0 += o.0;
    }
    pub(crate) fn get(self) -> f64 {
        self.0 as f64 / FX_SCALE
    }
}
