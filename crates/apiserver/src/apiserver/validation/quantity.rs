//! Resource quantities (`500m`, `1.5Gi`, `2e3`) as exact numbers, so a container's requests can be compared with
//! its limits as kube-apiserver compares them, without floating-point rounding deciding a tie.

/// A quantity in billionths of its unit (nano-cores, nano-bytes): exact for every suffix Kubernetes accepts.
pub(super) fn nanos(quantity: &str) -> Option<i128> {
    let split = quantity
        .find(|c: char| !(c.is_ascii_digit() || matches!(c, '.' | '+' | '-')))
        .unwrap_or(quantity.len());
    let (number, suffix) = quantity.split_at(split);
    let (negative, number) = match number.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, number.strip_prefix('+').unwrap_or(number)),
    };
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    if whole.is_empty() && fraction.is_empty()
        || !(whole.bytes().chain(fraction.bytes())).all(|b| b.is_ascii_digit())
        || fraction.len() > 9
    {
        return None;
    }
    let digits: i128 = format!("{whole}{fraction}").parse().ok()?;
    let mut value = digits.checked_mul(10i128.pow(9 - fraction.len() as u32))?;
    value = match suffix {
        "" => value,
        "n" => value / 1_000_000_000,
        "u" => value / 1_000_000,
        "m" => value / 1_000,
        "k" => value.checked_mul(1_000)?,
        "M" => value.checked_mul(1_000_000)?,
        "G" => value.checked_mul(1_000_000_000)?,
        "T" => value.checked_mul(10i128.pow(12))?,
        "P" => value.checked_mul(10i128.pow(15))?,
        "E" => value.checked_mul(10i128.pow(18))?,
        "Ki" => value.checked_mul(1 << 10)?,
        "Mi" => value.checked_mul(1 << 20)?,
        "Gi" => value.checked_mul(1 << 30)?,
        "Ti" => value.checked_mul(1 << 40)?,
        "Pi" => value.checked_mul(1 << 50)?,
        "Ei" => value.checked_mul(1 << 60)?,
        exponent => {
            let power: u32 = exponent
                .strip_prefix(['e', 'E'])?
                .parse::<i32>()
                .ok()
                .filter(|p| (0..=18).contains(p))? as u32;
            value.checked_mul(10i128.pow(power))?
        }
    };
    Some(if negative { -value } else { value })
}

#[cfg(test)]
mod tests {
    use super::nanos;

    #[test]
    fn quantities_compare_exactly_across_suffixes() {
        assert_eq!(nanos("1"), nanos("1000m"));
        assert_eq!(nanos("0.1"), nanos("100m"));
        assert_eq!(nanos("1Ki"), nanos("1024"));
        assert_eq!(nanos("2e3"), nanos("2k"));
        assert!(nanos("1Gi") > nanos("1G"));
        assert_eq!(nanos("-1"), Some(-1_000_000_000));
        for bad in ["", "abc", "1.2.3", "5Xi", "1e99"] {
            assert_eq!(nanos(bad), None, "{bad}");
        }
    }
}
