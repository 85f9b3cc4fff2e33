//! Human units for the text and HTML exporters and the profile commands.

/// Seconds with three significant digits and a unit among ns, us, ms, s.
pub fn secs(s: f64) -> String {
    if !s.is_finite() {
        return "-".into();
    }
    let a = s.abs();
    if a == 0.0 {
        return "0 s".into();
    }
    let (v, unit) = if a < 1e-6 {
        (s * 1e9, "ns")
    } else if a < 1e-3 {
        (s * 1e6, "us")
    } else if a < 1.0 {
        (s * 1e3, "ms")
    } else {
        (s, "s")
    };
    format!("{} {unit}", sig3(v))
}

/// A duration with three decimals in a unit that keeps it readable
/// (`1.234 ms`), for the profile commands' figures.
pub fn precise_secs(s: f64) -> String {
    let a = s.abs();
    if !s.is_finite() {
        format!("{s}")
    } else if a >= 1.0 {
        format!("{s:.3} s")
    } else if a >= 1e-3 {
        format!("{:.3} ms", s * 1e3)
    } else if a >= 1e-6 {
        format!("{:.3} us", s * 1e6)
    } else {
        format!("{:.1} ns", s * 1e9)
    }
}

/// Bytes in B, KiB, MiB, GiB, TiB.
pub fn bytes(b: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    if b < 1024 {
        return format!("{b} B");
    }
    let mut v = b as f64;
    let mut i = 0;
    while v >= 1024.0 && i < UNITS.len() - 1 {
        v /= 1024.0;
        i += 1;
    }
    format!("{} {}", sig3(v), UNITS[i])
}

/// A count with thousands separators.
pub fn count(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A share as a percentage with sensible precision.
pub fn pct(x: f64) -> String {
    if !x.is_finite() {
        return "-".into();
    }
    let p = x * 100.0;
    if p == 0.0 {
        "0 %".into()
    } else if p.abs() < 0.1 {
        "<0.1 %".into()
    } else if p.abs() < 10.0 {
        format!("{p:.1} %")
    } else {
        format!("{p:.0} %")
    }
}

/// Three significant digits, no exponent.
fn sig3(v: f64) -> String {
    let a = v.abs();
    if a >= 100.0 {
        format!("{v:.0}")
    } else if a >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_units() {
        assert_eq!(secs(0.0), "0 s");
        assert_eq!(secs(1.5e-9), "1.50 ns");
        assert_eq!(secs(2.345e-6), "2.35 us");
        assert_eq!(secs(0.01234), "12.3 ms");
        assert_eq!(secs(123.4), "123 s");
        assert_eq!(secs(-0.5), "-500 ms");
    }

    #[test]
    fn byte_units() {
        assert_eq!(bytes(0), "0 B");
        assert_eq!(bytes(1023), "1023 B");
        assert_eq!(bytes(1536), "1.50 KiB");
        assert_eq!(bytes(64 << 20), "64.0 MiB");
        assert_eq!(bytes(3 << 30), "3.00 GiB");
    }

    #[test]
    fn counts_and_shares() {
        assert_eq!(count(0), "0");
        assert_eq!(count(1234567), "1,234,567");
        assert_eq!(pct(0.3456), "35 %");
        assert_eq!(pct(0.01234), "1.2 %");
        assert_eq!(pct(0.0), "0 %");
    }
}
