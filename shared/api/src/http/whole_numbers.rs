//! Whole numbers written as decimals or with an exponent (`8.0`, `8e0`,
//! `80e-1`). JSON Schema 2020-12, which OpenAPI 3.1 and so the API's
//! description use, counts them as integers ("a number with a zero
//! fractional part"), and clients send them so: Python's `json` writes the
//! float `8.0` as `8.0`. serde reads an integer only from integer syntax,
//! so the body's text is given to it again with such numbers written as
//! integers. The value is read from the text's decimal digits, never
//! through a float: `8.5` and `8.000000000000001` stay what they are.

/// The most digits an integer of the API can have (`u64::MAX` has 20): a
/// longer whole number is left as written, and refused as out of range.
const MAX_DIGITS: usize = 20;

/// `text` (JSON) with every whole number outside its strings written as an
/// integer; `None` when there is none to rewrite. Text that is not JSON is
/// left to serde to refuse.
pub fn as_integers(text: &[u8]) -> Option<Vec<u8>> {
    let mut rewritten: Option<Vec<u8>> = None;
    let mut copied = 0;
    let mut at = 0;
    while at < text.len() {
        match text[at] {
            b'"' => at = string_end(text, at),
            b'-' | b'0'..=b'9' => {
                let end = number_end(text, at);
                if let Some(integer) = whole(&text[at..end]) {
                    let out = rewritten.get_or_insert_with(|| Vec::with_capacity(text.len()));
                    out.extend_from_slice(&text[copied..at]);
                    out.extend_from_slice(integer.as_bytes());
                    copied = end;
                }
                at = end.max(at + 1);
            }
            _ => at += 1,
        }
    }
    rewritten.map(|mut out| {
        out.extend_from_slice(&text[copied..]);
        out
    })
}

/// Where the string starting at `start` (its opening quote) ends, after its
/// closing quote (or the text's end).
fn string_end(text: &[u8], start: usize) -> usize {
    let mut at = start + 1;
    while at < text.len() {
        match text[at] {
            b'\\' => at += 2,
            b'"' => return at + 1,
            _ => at += 1,
        }
    }
    text.len()
}

/// Where the number starting at `start` ends: `-`, digits, `.` and digits,
/// `e` or `E`, a sign and digits, as far as they go.
fn number_end(text: &[u8], start: usize) -> usize {
    let digits = |mut at: usize| {
        while text.get(at).is_some_and(u8::is_ascii_digit) {
            at += 1;
        }
        at
    };
    let mut at = digits(start + usize::from(text[start] == b'-'));
    if text.get(at) == Some(&b'.') {
        at = digits(at + 1);
    }
    if matches!(text.get(at), Some(b'e' | b'E')) {
        at += 1;
        if matches!(text.get(at), Some(b'+' | b'-')) {
            at += 1;
        }
        at = digits(at);
    }
    at
}

/// The integer a number with a fraction or an exponent stands for, when it
/// is whole and has at most [`MAX_DIGITS`] digits; `None` otherwise (also
/// for an integer already written as one).
fn whole(number: &[u8]) -> Option<String> {
    let number = std::str::from_utf8(number).ok()?;
    let (negative, unsigned) = match number.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, number),
    };
    let (mantissa, exponent) = match unsigned.split_once(['e', 'E']) {
        Some((mantissa, exponent)) => (mantissa, Some(exponent)),
        None => (unsigned, None),
    };
    let (integral, fraction) = match mantissa.split_once('.') {
        Some((integral, fraction)) => (integral, Some(fraction)),
        None => (mantissa, None),
    };
    if fraction.is_none() && exponent.is_none() {
        return None;
    }
    let all_digits = |part: &str| !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit());
    // JSON's grammar: no leading zero, digits on both sides of the point.
    if !all_digits(integral)
        || (integral.len() > 1 && integral.starts_with('0'))
        || fraction.is_some_and(|fraction| !all_digits(fraction))
    {
        return None;
    }
    let fraction = fraction.unwrap_or_default();
    // value = digits × 10^scale
    let exponent: i64 = match exponent {
        Some(exponent) => {
            let digits = exponent.strip_prefix(['+', '-']).unwrap_or(exponent);
            if !all_digits(digits) || digits.len() > 6 {
                return None;
            }
            let magnitude: i64 = digits.parse().ok()?;
            if exponent.starts_with('-') {
                -magnitude
            } else {
                magnitude
            }
        }
        None => 0,
    };
    let scale = exponent - i64::try_from(fraction.len()).ok()?;
    let digits = format!("{integral}{fraction}");
    let digits = digits.trim_start_matches('0');
    if digits.is_empty() {
        return Some("0".to_owned());
    }
    let integer = if scale < 0 {
        let dropped = usize::try_from(-scale).ok()?;
        let kept = digits.len().checked_sub(dropped)?;
        if !digits[kept..].bytes().all(|b| b == b'0') {
            return None;
        }
        digits[..kept].to_owned()
    } else {
        let zeros = usize::try_from(scale).ok()?;
        if digits.len() + zeros > MAX_DIGITS {
            return None;
        }
        format!("{digits}{}", "0".repeat(zeros))
    };
    if integer.is_empty() || integer.len() > MAX_DIGITS {
        return None;
    }
    Some(if negative {
        format!("-{integer}")
    } else {
        integer
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rewritten(text: &str) -> Option<String> {
        as_integers(text.as_bytes()).map(|bytes| String::from_utf8(bytes).unwrap())
    }

    #[test]
    fn whole_numbers_become_integers() {
        for (number, integer) in [
            ("8.0", "8"),
            ("8.000", "8"),
            ("24202.0", "24202"),
            ("-3.0", "-3"),
            ("0.0", "0"),
            ("-0.0", "0"),
            ("8e0", "8"),
            ("8E+0", "8"),
            ("1e2", "100"),
            ("1.5e1", "15"),
            ("80e-1", "8"),
            ("0.5e1", "5"),
            ("1.50e1", "15"),
            ("1e19", "10000000000000000000"),
            ("0e-999999", "0"),
        ] {
            assert_eq!(
                whole(number.as_bytes()).as_deref(),
                Some(integer),
                "{number}"
            );
        }
    }

    #[test]
    fn other_numbers_stay_as_written() {
        for number in [
            "8",
            "-8",
            "8.5",
            "8.000000000000001",
            "1e-1",
            "15e-1",
            "1e20",
            "123456789012345678901.0",
            "1e9999999",
            "01.0",
            ".5",
            "1.",
            "1e",
            "-",
        ] {
            assert_eq!(whole(number.as_bytes()), None, "{number}");
        }
    }

    #[test]
    fn only_numbers_outside_strings_are_rewritten() {
        assert_eq!(
            rewritten(r#"{"max_replicas": 8.0, "note": "8.0 \" 9.0", "n": [1.0, 2.5, 3e0]}"#)
                .as_deref(),
            Some(r#"{"max_replicas": 8, "note": "8.0 \" 9.0", "n": [1, 2.5, 3]}"#)
        );
        assert_eq!(rewritten(r#"{"replicas": 8, "x": 8.5}"#), None);
        assert_eq!(
            rewritten(r#"{"a\\": 1.0}"#).as_deref(),
            Some(r#"{"a\\": 1}"#)
        );
        // Not JSON: whatever comes out, serde refuses it.
        assert_eq!(rewritten(r#"{"a": "1.0"#), None);
        assert_eq!(rewritten("-"), None);
    }
}
