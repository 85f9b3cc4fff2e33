//! The one pseudo-random generator of the workspace: xorshift64* (Vigna,
//! 2016), for the synthetic run records of the report's tests and benchmark
//! and for the calibrator's shuffled run order.
//!
//! It is not for statistics: its users need a sequence that a given start
//! value always reproduces, on every platform and version, which a library
//! generator does not promise. The report's snapshot tests pin the records
//! drawn from it, so the sequence must not change.

/// xorshift64*: 64 bits of state, one 64-bit output per step.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator started from `start`. The start value is spread over the
    /// state (times the golden ratio) and made odd, since the all-zero state
    /// would only ever yield zeros.
    pub fn new(start: u64) -> Rng {
        Rng(start.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Uniform in [0, 1), from the top 53 bits.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Exponential with the given mean.
    pub fn exp(&mut self, mean: f64) -> f64 {
        -mean * (1.0 - self.unit()).ln()
    }

    /// An index below `n` (`n > 0`). The modulo's bias, under 2^-40 for the
    /// sizes shuffled here, does not matter to a run order.
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sequence_is_pinned() {
        // The records of the report's fixtures are drawn from this sequence.
        let mut r = Rng::new(1);
        let got: Vec<u64> = (0..3).map(|_| r.next_u64()).collect();
        assert_eq!(got, PINNED);
    }

    const PINNED: [u64; 3] = [
        0x0d83_b3e2_9a21_487a,
        0x54c4_4c79_f1fe_9d67,
        0xa845_f342_007a_0e78,
    ];

    #[test]
    fn unit_and_below_stay_in_range() {
        let mut r = Rng::new(7);
        for n in 1..200 {
            assert!(r.below(n) < n);
            let u = r.unit();
            assert!((0.0..1.0).contains(&u));
            assert!(r.exp(2.0) >= 0.0);
        }
    }
}
