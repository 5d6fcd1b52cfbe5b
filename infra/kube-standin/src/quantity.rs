//! Resource quantities (`1Gi`, `1024Mi`, `500m`, `1e3`), compared by value as the API server
//! does: `1Gi` and `1024Mi` are the same request.

use std::cmp::Ordering;

use serde_json::Value;

/// A quantity in nano-units: exact for every suffix down to `n`, and wide enough for `Ei`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Quantity(i128);

const NANO: i128 = 1_000_000_000;

impl Quantity {
    pub const ZERO: Quantity = Quantity(0);

    /// Parses a quantity string or a plain JSON number; `None` if it isn't one.
    pub fn from_value(v: &Value) -> Option<Quantity> {
        match v {
            Value::String(s) => Quantity::parse(s),
            Value::Number(n) => Quantity::parse(&n.to_string()),
            _ => None,
        }
    }

    pub fn parse(text: &str) -> Option<Quantity> {
        let text = text.trim();
        let (sign, rest) = match text.strip_prefix('-') {
            Some(r) => (-1, r),
            None => (1, text.strip_prefix('+').unwrap_or(text)),
        };
        let number_end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let (number, suffix) = rest.split_at(number_end);
        if number.is_empty() || number == "." {
            return None;
        }
        let (int_part, frac_part) = number.split_once('.').unwrap_or((number, ""));
        // Digits past nano precision are dropped (the API server rounds them up; no claim or
        // request is that fine-grained).
        let frac: String = frac_part.chars().take(9).collect();
        let mut nanos = int_part.parse::<i128>().unwrap_or(0).checked_mul(NANO)?;
        if !frac.is_empty() {
            let scale = 10i128.pow(9 - frac.len() as u32);
            nanos += frac.parse::<i128>().ok()? * scale;
        }
        let scaled = match suffix {
            "" => nanos,
            "n" => nanos / NANO,
            "u" => nanos / 1_000_000,
            "m" => nanos / 1_000,
            "k" => nanos.checked_mul(1_000)?,
            "M" => nanos.checked_mul(1_000_000)?,
            "G" => nanos.checked_mul(1_000_000_000)?,
            "T" => nanos.checked_mul(10i128.pow(12))?,
            "P" => nanos.checked_mul(10i128.pow(15))?,
            "E" => nanos.checked_mul(10i128.pow(18))?,
            "Ki" => nanos.checked_mul(1 << 10)?,
            "Mi" => nanos.checked_mul(1 << 20)?,
            "Gi" => nanos.checked_mul(1 << 30)?,
            "Ti" => nanos.checked_mul(1 << 40)?,
            "Pi" => nanos.checked_mul(1 << 50)?,
            "Ei" => nanos.checked_mul(1 << 60)?,
            exp => {
                let e: i32 = exp.strip_prefix(['e', 'E']).and_then(|e| e.parse().ok())?;
                if e >= 0 {
                    nanos.checked_mul(10i128.checked_pow(e as u32)?)?
                } else {
                    nanos / 10i128.checked_pow(e.unsigned_abs())?
                }
            }
        };
        Some(Quantity(sign * scaled))
    }
}

/// Compares two quantity values; unparseable ones compare as their JSON (so a garbled value
/// still counts as a change).
pub fn same(a: Option<&Value>, b: Option<&Value>) -> bool {
    match (
        a.and_then(Quantity::from_value),
        b.and_then(Quantity::from_value),
    ) {
        (Some(x), Some(y)) => x.cmp(&y) == Ordering::Equal,
        _ => a == b,
    }
}

/// Two maps of quantities (`requests`, `limits`, `capacity`) with the same keys and values.
pub fn same_map(a: Option<&Value>, b: Option<&Value>) -> bool {
    let empty = serde_json::Map::new();
    let a = a.and_then(Value::as_object).unwrap_or(&empty);
    let b = b.and_then(Value::as_object).unwrap_or(&empty);
    a.len() == b.len() && a.iter().all(|(k, v)| same(Some(v), b.get(k)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(s: &str) -> Quantity {
        Quantity::parse(s).unwrap_or_else(|| panic!("{s} parses"))
    }

    #[test]
    fn by_value() {
        assert_eq!(q("1Gi"), q("1024Mi"));
        assert_eq!(q("1G"), q("1000M"));
        assert_eq!(q("0.5Gi"), q("512Mi"));
        assert_eq!(q("100m"), q("0.1"));
        assert_eq!(q("1e3"), q("1k"));
        assert!(q("1Gi") > q("1G"));
        assert!(q("2Gi") > q("1500Mi"));
        assert!(Quantity::parse("lots").is_none());
        assert!(Quantity::parse("1Xi").is_none());
    }
}
