//! Kubernetes quantities and process sizes.
//!
//! A [`Quantity`] compares by value, exactly: `1Gi` > `1000Mi`, `1G` < `1Gi`,
//! `1024Mi` == `1Gi`. That is what "a volume may grow, never shrink" needs,
//! whatever notation the old and the new size were written in.

use std::cmp::Ordering;
use std::fmt;

use super::Invalid;

const QUANTITY_RULE: &str = "must be a Kubernetes quantity such as 500m, 2, 1536Mi or 1Gi (digits, an optional fraction \
     and an optional suffix: n, u, m, k, M, G, T, P, E, Ki, Mi, Gi, Ti, Pi, Ei or an exponent e3)";

const PLAIN_QUANTITY_RULE: &str = "must be a Kubernetes quantity such as 500m, 2, 512Mi or 4Gi";

/// The longest quantity in plain notation.
pub const MAX_PLAIN_LEN: usize = 32;

/// Digits beyond this, and exponents beyond ±`MAX_EXPONENT`, are refused: no
/// real size needs them, and they keep exact comparison cheap.
const MAX_DIGITS: usize = 64;
const MAX_EXPONENT: i32 = 64;

/// A Kubernetes quantity (`500m`, `1.5Gi`, `2`, `1e3`), kept as written and
/// compared by the value it stands for.
#[derive(Clone)]
pub struct Quantity {
    text: String,
    value: Value,
}

/// `±digits × 10^decimal × 2^binary`, with the decimal point folded into
/// `decimal` and no trailing zeros in `digits`, so zero has one form.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Value {
    negative: bool,
    /// Little-endian base-2³² limbs of the digits; empty for zero.
    digits: Vec<u32>,
    decimal: i32,
    binary: i32,
}

impl Quantity {
    pub fn parse(text: &str) -> Result<Self, Invalid> {
        parse_value(text)
            .map(|(value, _)| Self {
                text: text.to_owned(),
                value,
            })
            .ok_or_else(|| Invalid::new(QUANTITY_RULE))
    }

    /// A quantity in its plain notation: digits, an optional fraction and an
    /// optional suffix, at most [`MAX_PLAIN_LEN`] characters (`500m`, `2`,
    /// `1.5`, `512Mi`, `1E`): no sign, no exponent, no bare fraction (`.5`).
    pub fn parse_plain(text: &str) -> Result<Self, Invalid> {
        match parse_value(text) {
            Some((value, Notation::Plain)) if text.len() <= MAX_PLAIN_LEN => Ok(Self {
                text: text.to_owned(),
                value,
            }),
            _ => Err(Invalid::new(PLAIN_QUANTITY_RULE)),
        }
    }

    /// As written: the form to put in a Kubernetes object.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    pub fn is_positive(&self) -> bool {
        !self.value.negative && !self.value.digits.is_empty()
    }

    /// The value in thousandths, rounded up (`500m` is 500, `1Gi` is
    /// 1073741824000, `1n` is 1), as a quota sums requests: `None` for a
    /// negative quantity or one beyond `u128`.
    pub fn to_millis(&self) -> Option<u128> {
        let value = &self.value;
        if value.negative {
            return None;
        }
        let mut number: u128 = 0;
        for limb in value.digits.iter().rev() {
            number = number
                .checked_mul(1 << 32)?
                .checked_add(u128::from(*limb))?;
        }
        let decimal = value.decimal + 3;
        let up = |number: u128, divisor: u128| number.div_ceil(divisor);
        number = number.checked_mul(1u128.checked_shl(u32::try_from(value.binary).ok()?)?)?;
        if decimal >= 0 {
            number.checked_mul(10u128.checked_pow(u32::try_from(decimal).ok()?)?)
        } else {
            match 10u128.checked_pow(decimal.unsigned_abs()) {
                Some(divisor) => Some(up(number, divisor)),
                // Smaller than any thousandth it could be rounded to.
                None => Some(u128::from(number > 0)),
            }
        }
    }
}

impl fmt::Debug for Quantity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Quantity({})", self.text)
    }
}

impl fmt::Display for Quantity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl PartialEq for Quantity {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Quantity {}

impl PartialOrd for Quantity {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Quantity {
    fn cmp(&self, other: &Self) -> Ordering {
        let (a, b) = (&self.value, &other.value);
        match (a.digits.is_empty(), b.digits.is_empty()) {
            (true, true) => return Ordering::Equal,
            (true, false) => {
                return if b.negative {
                    Ordering::Greater
                } else {
                    Ordering::Less
                };
            }
            (false, true) => {
                return if a.negative {
                    Ordering::Less
                } else {
                    Ordering::Greater
                };
            }
            (false, false) => {}
        }
        match (a.negative, b.negative) {
            (false, true) => Ordering::Greater,
            (true, false) => Ordering::Less,
            (false, false) => compare_magnitudes(a, b),
            (true, true) => compare_magnitudes(b, a),
        }
    }
}

/// Compares `|a|` and `|b|` exactly by scaling both to the smaller powers of
/// ten and two: `x·10^p·2^q` against `y·10^r·2^s` is
/// `x·10^(p−m)·2^(q−n)` against `y·10^(r−m)·2^(s−n)`.
fn compare_magnitudes(a: &Value, b: &Value) -> Ordering {
    let decimal = a.decimal.min(b.decimal);
    let binary = a.binary.min(b.binary);
    let scale = |value: &Value| {
        let mut digits = value.digits.clone();
        for _ in decimal..value.decimal {
            mul_small(&mut digits, 10);
        }
        for _ in binary..value.binary {
            mul_small(&mut digits, 2);
        }
        digits
    };
    compare_limbs(&scale(a), &scale(b))
}

fn mul_small(limbs: &mut Vec<u32>, factor: u32) {
    let mut carry = 0u64;
    for limb in limbs.iter_mut() {
        let product = u64::from(*limb) * u64::from(factor) + carry;
        *limb = product as u32; // the low 32 bits; the rest carries
        carry = product >> 32;
    }
    if carry > 0 {
        limbs.push(carry as u32);
    }
}

fn add_small(limbs: &mut Vec<u32>, addend: u32) {
    let mut carry = u64::from(addend);
    for limb in limbs.iter_mut() {
        if carry == 0 {
            return;
        }
        let sum = u64::from(*limb) + carry;
        *limb = sum as u32;
        carry = sum >> 32;
    }
    if carry > 0 {
        limbs.push(carry as u32);
    }
}

fn compare_limbs(a: &[u32], b: &[u32]) -> Ordering {
    a.len()
        .cmp(&b.len())
        .then_with(|| a.iter().rev().cmp(b.iter().rev()))
}

/// How a quantity was written: plainly (`digits[.digits][suffix]`), or with
/// a sign, an exponent or a bare fraction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Notation {
    Plain,
    Other,
}

/// `[+-]digits[.digits](suffix)`, as Kubernetes writes quantities.
fn parse_value(text: &str) -> Option<(Value, Notation)> {
    let (negative, signed, unsigned) = match text.as_bytes().first()? {
        b'-' => (true, true, &text[1..]),
        b'+' => (false, true, &text[1..]),
        _ => (false, false, text),
    };
    let number_end = unsigned
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .unwrap_or(unsigned.len());
    let (number, suffix) = unsigned.split_at(number_end);
    let (whole, fraction) = match number.split_once('.') {
        Some((whole, fraction)) if !fraction.is_empty() => (whole, fraction),
        Some(_) => return None,
        None => (number, ""),
    };
    if (whole.is_empty() && fraction.is_empty()) || fraction.contains('.') {
        return None;
    }
    let (mut decimal, binary, exponent) = parse_suffix(suffix)?;
    let notation = if signed || exponent || whole.is_empty() {
        Notation::Other
    } else {
        Notation::Plain
    };
    let all_digits = format!("{whole}{fraction}");
    let significant = all_digits.trim_start_matches('0');
    let trimmed = significant.trim_end_matches('0');
    if trimmed.len() > MAX_DIGITS {
        return None;
    }
    // The fraction's digits move the point left; trailing zeros move it back.
    decimal -= i32::try_from(fraction.len()).ok()?;
    decimal += i32::try_from(significant.len() - trimmed.len()).ok()?;
    let mut digits = Vec::new();
    for digit in trimmed.bytes() {
        mul_small(&mut digits, 10);
        add_small(&mut digits, u32::from(digit - b'0'));
    }
    if digits.is_empty() {
        decimal = 0;
    }
    let value = Value {
        negative: negative && !digits.is_empty(),
        binary: if digits.is_empty() { 0 } else { binary },
        digits,
        decimal,
    };
    Some((value, notation))
}

/// The power of ten and of two a suffix stands for, and whether it is an
/// exponent (`e3`) rather than a unit.
fn parse_suffix(suffix: &str) -> Option<(i32, i32, bool)> {
    let known = match suffix {
        "" => Some((0, 0)),
        "n" => Some((-9, 0)),
        "u" => Some((-6, 0)),
        "m" => Some((-3, 0)),
        "k" => Some((3, 0)),
        "M" => Some((6, 0)),
        "G" => Some((9, 0)),
        "T" => Some((12, 0)),
        "P" => Some((15, 0)),
        "E" => Some((18, 0)),
        "Ki" => Some((0, 10)),
        "Mi" => Some((0, 20)),
        "Gi" => Some((0, 30)),
        "Ti" => Some((0, 40)),
        "Pi" => Some((0, 50)),
        "Ei" => Some((0, 60)),
        _ => None,
    };
    if let Some((decimal, binary)) = known {
        return Some((decimal, binary, false));
    }
    // `1e3`, `1E-3`: a decimal exponent (a lone `E` is exa, matched above).
    let exponent = suffix.strip_prefix(['e', 'E'])?;
    let unsigned = exponent.strip_prefix(['+', '-']).unwrap_or(exponent);
    if unsigned.is_empty() || !unsigned.bytes().all(|b| b.is_ascii_digit()) || unsigned.len() > 3 {
        return None;
    }
    let power: i32 = exponent.parse().ok()?;
    (power.abs() <= MAX_EXPONENT).then_some((power, 0, true))
}

const SIZE_RULE: &str = "must be nano, small, medium, large or CPU/MEMORY in Kubernetes \
                         quantities, both above zero, such as 750m/1536Mi";

/// The largest custom size a process may ask for: no tenant takes a whole
/// node (or more) for one process.
pub const MAX_CPU: &str = "16";
pub const MAX_MEMORY: &str = "64Gi";
const SIZE_LIMIT_RULE: &str = "must be at most 16 CPU and 64Gi of memory";

/// The largest volume a tenant may ask for (a volume can grow to it, never past it).
pub const MAX_VOLUME: &str = "1Ti";
const VOLUME_RULE: &str = "must be a Kubernetes quantity above zero and at most 1Ti, such as 5Gi";

/// The size presets: name, CPU, memory.
const PRESETS: [(&str, &str, &str); 4] = [
    ("nano", "100m", "128Mi"),
    ("small", "250m", "512Mi"),
    ("medium", "500m", "1Gi"),
    ("large", "1", "2Gi"),
];

/// What a process gets: CPU and memory, as both request and limit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Size {
    /// The preset's name, when it is one.
    preset: Option<&'static str>,
    cpu: Quantity,
    memory: Quantity,
    text: String,
}

impl Size {
    /// A preset (`nano`, `small`, `medium`, `large`) or `CPU/MEMORY`.
    pub fn parse(text: &str) -> Result<Self, Invalid> {
        if let Some((name, cpu, memory)) = PRESETS.iter().find(|(name, ..)| *name == text) {
            return Ok(Self {
                preset: Some(name),
                cpu: Quantity::parse(cpu)?,
                memory: Quantity::parse(memory)?,
                text: (*name).to_owned(),
            });
        }
        let invalid = || Invalid::new(SIZE_RULE);
        let (cpu, memory) = text.split_once('/').ok_or_else(invalid)?;
        let cpu = Quantity::parse(cpu).map_err(|_| invalid())?;
        let memory = Quantity::parse(memory).map_err(|_| invalid())?;
        if !cpu.is_positive() || !memory.is_positive() {
            return Err(invalid());
        }
        if cpu > Quantity::parse(MAX_CPU)? || memory > Quantity::parse(MAX_MEMORY)? {
            return Err(Invalid::new(SIZE_LIMIT_RULE));
        }
        Ok(Self {
            preset: None,
            text: format!("{cpu}/{memory}"),
            cpu,
            memory,
        })
    }

    pub fn cpu(&self) -> &Quantity {
        &self.cpu
    }

    pub fn memory(&self) -> &Quantity {
        &self.memory
    }

    /// The form to store: the preset's name, or `CPU/MEMORY`.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    pub fn is_preset(&self) -> bool {
        self.preset.is_some()
    }
}

/// [`Quantity::parse`]'s notation as a pattern (unanchored): a sign, digits
/// with an optional fraction (or a bare fraction), and a suffix or a decimal
/// exponent. Its bounds (64 significant digits, an exponent of at most 64)
/// and the magnitudes the types below allow are the parsers' alone.
pub const QUANTITY_NOTATION: &str = r"[+-]?(?:[0-9]+(?:\.[0-9]+)?|\.[0-9]+)(?:[numkMGTPE]|[KMGTPE]i|[eE][+-]?(?:0?[0-5]?[0-9]|0?6[0-4]))?";

impl utoipa::PartialSchema for Size {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        let presets = PRESETS.map(|(name, ..)| name).join("|");
        super::string_schema(
            None,
            None,
            &format!("^(?:{presets}|{QUANTITY_NOTATION}/{QUANTITY_NOTATION})$"),
            "A preset or `CPU/MEMORY` in Kubernetes quantities, at most 16 CPU and 64Gi.",
        )
    }
}

impl utoipa::ToSchema for Size {}

impl utoipa::PartialSchema for VolumeSize {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        super::string_schema(
            None,
            None,
            &format!("^{QUANTITY_NOTATION}$"),
            "A Kubernetes quantity above zero and at most 1Ti.",
        )
    }
}

impl utoipa::ToSchema for VolumeSize {}

/// A volume's size: a quantity above zero and at most [`MAX_VOLUME`].
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct VolumeSize(Quantity);

impl VolumeSize {
    pub fn parse(text: &str) -> Result<Self, Invalid> {
        let size = Quantity::parse(text).map_err(|_| Invalid::new(VOLUME_RULE))?;
        if !size.is_positive() || size > Quantity::parse(MAX_VOLUME)? {
            return Err(Invalid::new(VOLUME_RULE));
        }
        Ok(Self(size))
    }

    pub fn quantity(&self) -> &Quantity {
        &self.0
    }

    /// As written: the form to store and to put in a claim.
    pub fn as_str(&self) -> &str {
        self.0.as_str()
    }
}

impl fmt::Display for Size {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantities_in_thousandths_round_up() {
        let millis = |text: &str| Quantity::parse(text).unwrap().to_millis();
        assert_eq!(millis("500m"), Some(500));
        assert_eq!(millis("2"), Some(2000));
        assert_eq!(millis("1Gi"), Some(1_073_741_824_000));
        assert_eq!(millis("1.5Gi"), Some(1_610_612_736_000));
        assert_eq!(millis("12Gi"), Some(12 * 1_073_741_824_000));
        assert_eq!(millis("1n"), Some(1));
        assert_eq!(millis("0"), Some(0));
        assert_eq!(millis("1e3"), Some(1_000_000));
        assert_eq!(millis("-1"), None);
        assert_eq!(millis("1e64"), None);
    }

    fn q(text: &str) -> Quantity {
        Quantity::parse(text).unwrap_or_else(|e| panic!("{text}: {e}"))
    }

    #[test]
    fn quantities_in_every_notation_parse() {
        for text in [
            "0", "1", "+1", "-1", "500m", "1.5", ".5", "1.5Gi", "100n", "3u", "2k", "2M", "2G",
            "2T", "2P", "2E", "1Ki", "1Mi", "1Gi", "1Ti", "1Pi", "1Ei", "1e3", "1E3", "1e-3",
            "1E+3", "0.000001",
        ] {
            assert_eq!(q(text).as_str(), text);
        }
    }

    #[test]
    fn malformed_quantities_are_refused_without_echoing_them() {
        for text in [
            "", " 1", "1 ", "Gi", "1.", ".", "1.2.3", "1gi", "1KI", "1K", "1b", "1e", "1e3.5",
            "1Gi1", "--1", "1e9999", "abc", "1/2",
        ] {
            assert_eq!(Quantity::parse(text).expect_err(text).0, QUANTITY_RULE);
        }
    }

    #[test]
    fn plain_quantities_have_no_sign_exponent_or_bare_fraction() {
        for good in [
            "1", "500m", "0.5", "2", "512Mi", "4Gi", "1G", "100k", "1E", "1Ei",
        ] {
            assert!(Quantity::parse_plain(good).is_ok(), "{good}");
        }
        for bad in [
            "", "m", "-1", "+1", "1.", ".5", "1.5.1", "4GB", "4 Gi", "one", "1mi", "1e3",
        ] {
            assert!(Quantity::parse_plain(bad).is_err(), "{bad}");
        }
        assert!(Quantity::parse_plain(&"1".repeat(MAX_PLAIN_LEN)).is_ok());
        assert!(Quantity::parse_plain(&"1".repeat(MAX_PLAIN_LEN + 1)).is_err());
    }

    #[test]
    fn quantities_compare_exactly_by_value() {
        assert!(q("1Gi") > q("1000Mi"));
        assert!(q("1G") < q("1Gi"));
        assert_eq!(q("1024Mi"), q("1Gi"));
        assert_eq!(q("1"), q("1000m"));
        assert_eq!(q("1k"), q("1e3"));
        assert_eq!(q("0.5"), q("500m"));
        assert_eq!(q("1.5Gi"), q("1536Mi"));
        assert_eq!(q("0"), q("0Gi"));
        assert_eq!(q("-0"), q("0m"));
        assert!(q("1n") > q("0"));
        assert!(q("-1") < q("0"));
        assert!(q("-2") < q("-1"));
        assert!(q("1Ei") > q("1E"));
        assert!(q("1000000000000000000000") > q("1Ei"));
        assert!(q("999999999999999999999999") < q("1e24"));
        assert!(q("1Mi") > q("1048575"));
        assert_eq!(q("1Mi"), q("1048576"));
        assert!(q("1001m") > q("1"));
        assert!(q("5Gi") > q("5G"));
        let mut sizes = [q("2Gi"), q("1G"), q("1500Mi"), q("1Gi"), q("100Mi")];
        sizes.sort();
        let sorted: Vec<_> = sizes.iter().map(Quantity::as_str).collect();
        assert_eq!(sorted, ["100Mi", "1G", "1Gi", "1500Mi", "2Gi"]);
    }

    #[test]
    fn positive_means_above_zero() {
        assert!(q("1m").is_positive());
        assert!(!q("0").is_positive());
        assert!(!q("0.0Gi").is_positive());
        assert!(!q("-1").is_positive());
    }

    #[test]
    fn presets_have_their_cpu_and_memory() {
        for (name, cpu, memory) in [
            ("nano", "100m", "128Mi"),
            ("small", "250m", "512Mi"),
            ("medium", "500m", "1Gi"),
            ("large", "1", "2Gi"),
        ] {
            let size = Size::parse(name).unwrap();
            assert_eq!(size.as_str(), name);
            assert!(size.is_preset());
            assert_eq!(size.cpu().as_str(), cpu);
            assert_eq!(size.memory().as_str(), memory);
        }
    }

    #[test]
    fn custom_sizes_are_cpu_slash_memory() {
        let size = Size::parse("750m/1536Mi").unwrap();
        assert_eq!(size.as_str(), "750m/1536Mi");
        assert!(!size.is_preset());
        assert_eq!(size.cpu(), &q("0.75"));
        assert_eq!(size.memory(), &q("1.5Gi"));
        assert_eq!(size.to_string(), "750m/1536Mi");
    }

    #[test]
    fn bad_sizes_are_refused_without_echoing_them() {
        for text in [
            "",
            "huge",
            "Small",
            "750m",
            "750m/",
            "/1Gi",
            "0/1Gi",
            "1/0",
            "-1/1Gi",
            "1/1Gi/1",
            "750 m/1Gi",
            "secret-value/1Gi",
        ] {
            let error = Size::parse(text).expect_err(text);
            assert_eq!(error.0, SIZE_RULE);
        }
    }

    #[test]
    fn custom_sizes_stop_at_16_cpu_and_64_gi() {
        for text in ["16/64Gi", "16000m/65536Mi", "15.5/1Gi", "1/68719476736"] {
            Size::parse(text).unwrap_or_else(|e| panic!("{text}: {e}"));
        }
        for text in [
            "17/1Gi",
            "16001m/1Gi",
            "1/65Gi",
            "1/64.1Gi",
            "1/1Ti",
            "1e3/1Gi",
            "1/1E",
        ] {
            assert_eq!(Size::parse(text).expect_err(text).0, SIZE_LIMIT_RULE);
        }
    }

    #[test]
    fn volumes_are_above_zero_and_at_most_1_ti() {
        for text in ["1Gi", "1Ti", "1024Gi", "1099511627776", "500Mi", "1k"] {
            assert_eq!(VolumeSize::parse(text).unwrap().as_str(), text);
        }
        for text in [
            "0", "0Gi", "-1Gi", "1025Gi", "1.1Ti", "2Ti", "1Pi", "1e13", "lots", "",
        ] {
            assert_eq!(VolumeSize::parse(text).expect_err(text).0, VOLUME_RULE);
        }
        assert!(VolumeSize::parse("2Gi").unwrap() > VolumeSize::parse("2G").unwrap());
    }
}
