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

impl std::ops::Add for Quantity {
    type Output = Quantity;
    fn add(self, other: Quantity) -> Quantity {
        Quantity(self.0.saturating_add(other.0))
    }
}

impl Quantity {
    pub fn is_zero(self) -> bool {
        self.0 == 0
    }

    /// The value in whole units, as a float.
    pub fn as_f64(self) -> f64 {
        self.0 as f64 / NANO as f64
    }

    /// `self / other` as a float (for limit-to-request ratios); `None` when `other` is zero.
    pub fn ratio(self, other: Quantity) -> Option<f64> {
        (other.0 != 0).then(|| self.0 as f64 / other.0 as f64)
    }

    /// The text the API server prints for this value written in `format`
    /// (apimachinery's `Quantity.String()`, `CanonicalizeBytes`): the
    /// largest suffix that keeps the number whole, so `1024Mi` prints `1Gi`,
    /// `0.5` prints `500m` and `1500` stays `1500`; a binary quantity under
    /// 1024 or with a fraction prints as a decimal one.
    pub fn canonical(self, format: Format) -> String {
        let binary =
            format == Format::BinarySI && self.0.abs() >= 1024 * NANO && self.0 % NANO == 0;
        if binary {
            let mut number = self.0 / NANO;
            let mut power = 0;
            while power < 6 && number % 1024 == 0 {
                number /= 1024;
                power += 1;
            }
            let suffix = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"][power];
            return format!("{number}{suffix}");
        }
        if self.0 == 0 {
            return "0".to_string();
        }
        // Nano-units: exponent -9. Strip factors of 1000 while the number stays whole.
        let mut number = self.0;
        let mut exponent = -9;
        while exponent < 18 && number % 1000 == 0 {
            number /= 1000;
            exponent += 3;
        }
        let suffix = match format {
            Format::DecimalExponent if exponent == 0 => String::new(),
            Format::DecimalExponent => format!("e{exponent}"),
            _ => match exponent {
                -9 => "n",
                -6 => "u",
                -3 => "m",
                0 => "",
                3 => "k",
                6 => "M",
                9 => "G",
                12 => "T",
                15 => "P",
                _ => "E",
            }
            .to_string(),
        };
        format!("{number}{suffix}")
    }
}

/// How a quantity was written, which decides how the API server prints it
/// back (apimachinery's `resource.Format`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// `1Ki`, `1Mi`, ...
    BinarySI,
    /// `1e3`
    DecimalExponent,
    /// plain numbers and `n`, `u`, `m`, `k`, `M`, `G`, ...
    DecimalSI,
}

impl Format {
    fn of(text: &str) -> Format {
        let suffix = text.trim_start_matches(|c: char| c.is_ascii_digit() || "+-.".contains(c));
        if suffix.ends_with('i') {
            Format::BinarySI
        } else if suffix.len() > 1 && suffix.starts_with(['e', 'E']) {
            Format::DecimalExponent
        } else {
            Format::DecimalSI
        }
    }
}

/// A quantity together with how it was written: what admission messages
/// print (`requests.memory=256Mi`).
#[derive(Debug, Clone, Copy)]
pub struct Written {
    pub value: Quantity,
    pub format: Format,
}

impl Written {
    pub const ZERO: Written = Written {
        value: Quantity::ZERO,
        format: Format::DecimalSI,
    };

    pub fn from_value(v: &Value) -> Option<Written> {
        let text = match v {
            Value::String(s) => s.trim().to_string(),
            Value::Number(n) => n.to_string(),
            _ => return None,
        };
        Some(Written {
            value: Quantity::parse(&text)?,
            format: Format::of(&text),
        })
    }

    /// A sum keeps the notation of its first non-zero term, as
    /// apimachinery's `Quantity.Add` does.
    pub fn plus(self, other: Written) -> Written {
        Written {
            value: self.value + other.value,
            format: if self.value.is_zero() {
                other.format
            } else {
                self.format
            },
        }
    }
}

impl std::fmt::Display for Written {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.value.canonical(self.format))
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

    fn printed(text: &str) -> String {
        Written::from_value(&Value::from(text))
            .unwrap_or_else(|| panic!("{text} parses"))
            .to_string()
    }

    #[test]
    fn printed_as_the_api_server_prints() {
        for (written, canonical) in [
            ("1024Mi", "1Gi"),
            ("1536Mi", "1536Mi"),
            ("1.5Gi", "1536Mi"),
            ("512", "512"),
            ("0.5", "500m"),
            ("1000m", "1"),
            ("1500", "1500"),
            ("2000", "2k"),
            ("100m", "100m"),
            ("128M", "128M"),
            ("1e3", "1e3"),
            ("0", "0"),
            ("0Mi", "0"),
        ] {
            assert_eq!(printed(written), canonical, "{written}");
        }
        let sum = Written::from_value(&Value::from("128Mi"))
            .unwrap()
            .plus(Written::from_value(&Value::from("128Mi")).unwrap());
        assert_eq!(sum.to_string(), "256Mi");
        assert_eq!(
            Written::ZERO
                .plus(Written::from_value(&Value::from("1Gi")).unwrap())
                .to_string(),
            "1Gi"
        );
    }
}
