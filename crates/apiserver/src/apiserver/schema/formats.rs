//! String `format`s that kube-apiserver checks on custom resources.
//!
//! Checked here: `date-time`, `date`, `byte`, `uuid`, `uuid3`, `uuid4`, `uuid5`,
//! `ipv4`, `ipv6`, `cidr`, `mac`, `hostname`, `hexcolor`, `bsonobjectid`,
//! `k8s-short-name`, `k8s-long-name` and `password` (always valid). The other formats
//! the server knows (`uri`, `email`, `isbn*`, `creditcard`, `ssn`, `rgbcolor`,
//! `duration`) are accepted without checking, because their Go parsers have
//! idiosyncrasies that a second implementation would only approximate; formats the
//! server does not know are ignored by it and by this module alike.

use std::net::{Ipv4Addr, Ipv6Addr};

use kmm_api::validation::names;

/// A string format that is recognised (and, for most, checked).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StringFormat {
    DateTime,
    Date,
    Byte,
    Uuid,
    Uuid3,
    Uuid4,
    Uuid5,
    Ipv4,
    Ipv6,
    Cidr,
    Mac,
    Hostname,
    HexColor,
    BsonObjectId,
    K8sShortName,
    K8sLongName,
    /// Known to the server but accepted here without checking.
    Unchecked,
}

impl StringFormat {
    /// Parses a format name; like go-openapi, dashes are ignored (`date-time` = `datetime`).
    pub(crate) fn parse(name: &str) -> Option<StringFormat> {
        let normalized: String = name.chars().filter(|c| *c != '-').collect();
        Some(match normalized.as_str() {
            "datetime" => StringFormat::DateTime,
            "date" => StringFormat::Date,
            "byte" => StringFormat::Byte,
            "uuid" => StringFormat::Uuid,
            "uuid3" => StringFormat::Uuid3,
            "uuid4" => StringFormat::Uuid4,
            "uuid5" => StringFormat::Uuid5,
            "ipv4" => StringFormat::Ipv4,
            "ipv6" => StringFormat::Ipv6,
            "cidr" => StringFormat::Cidr,
            "mac" => StringFormat::Mac,
            "hostname" => StringFormat::Hostname,
            "hexcolor" => StringFormat::HexColor,
            "bsonobjectid" => StringFormat::BsonObjectId,
            "k8sshortname" => StringFormat::K8sShortName,
            "k8slongname" => StringFormat::K8sLongName,
            "password" | "uri" | "email" | "isbn" | "isbn10" | "isbn13" | "creditcard" | "ssn"
            | "rgbcolor" | "duration" => StringFormat::Unchecked,
            _ => return None,
        })
    }

    /// Whether `s` is a valid value of this format.
    pub(crate) fn accepts(self, s: &str) -> bool {
        match self {
            StringFormat::DateTime => is_date_time(s),
            StringFormat::Date => is_date(s),
            StringFormat::Byte => is_base64(s),
            StringFormat::Uuid => is_uuid(s, None),
            StringFormat::Uuid3 => is_uuid(s, Some(b'3')),
            StringFormat::Uuid4 => is_uuid(s, Some(b'4')),
            StringFormat::Uuid5 => is_uuid(s, Some(b'5')),
            StringFormat::Ipv4 => s.parse::<Ipv4Addr>().is_ok(),
            StringFormat::Ipv6 => s.parse::<Ipv6Addr>().is_ok(),
            StringFormat::Cidr => is_cidr(s),
            StringFormat::Mac => is_mac(s),
            StringFormat::Hostname => is_hostname(s),
            StringFormat::HexColor => is_hex_color(s),
            StringFormat::BsonObjectId => s.len() == 24 && s.bytes().all(|b| b.is_ascii_hexdigit()),
            StringFormat::K8sShortName => names::is_dns_label(s),
            StringFormat::K8sLongName => names::is_dns_subdomain(s),
            StringFormat::Unchecked => true,
        }
    }
}

fn digits(s: &str, n: usize) -> Option<u32> {
    (s.len() == n && s.bytes().all(|b| b.is_ascii_digit()))
        .then(|| s.parse().ok())
        .flatten()
}

/// `YYYY-MM-DD` with a real calendar day.
fn is_date(s: &str) -> bool {
    let mut parts = s.split('-');
    let (Some(y), Some(m), Some(d), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return false;
    };
    let (Some(year), Some(month), Some(day)) = (digits(y, 4), digits(m, 2), digits(d, 2)) else {
        return false;
    };
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    let days_in_month = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    (1..=days_in_month).contains(&day)
}

/// RFC 3339 date-time as go-openapi checks it: a date, `T` (any case), then
/// `hh:mm:ss`, optional fraction and a mandatory zone (`Z` or `±hh:mm`).
fn is_date_time(s: &str) -> bool {
    let lower = s.to_ascii_lowercase();
    let mut parts = lower.split('t');
    let (Some(date), Some(time)) = (parts.next(), parts.next()) else {
        return false;
    };
    is_date(date) && is_time_with_zone(time)
}

fn is_time_with_zone(s: &str) -> bool {
    let (clock, zone) = match s.find(['z', '+', '-']) {
        Some(i) => s.split_at(i),
        None => return false,
    };
    let zone_ok = zone == "z" || {
        let offset = &zone[1..];
        offset.len() == 5
            && offset.as_bytes()[2] == b':'
            && digits(&offset[..2], 2).is_some()
            && digits(&offset[3..], 2).is_some()
    };
    if !zone_ok || clock.len() < 8 || !clock.is_char_boundary(8) {
        return false;
    }
    let (hms, fraction) = clock.split_at(8);
    if !hms.is_ascii() {
        return false;
    }
    let fraction_ok = fraction.is_empty()
        || (fraction.len() >= 2 && fraction[1..].bytes().all(|b| b.is_ascii_digit()));
    let b = hms.as_bytes();
    let (Some(h), Some(m), Some(sec)) = (
        digits(&hms[..2], 2),
        digits(&hms[3..5], 2),
        digits(&hms[6..], 2),
    ) else {
        return false;
    };
    fraction_ok && b[2] == b':' && b[5] == b':' && h <= 23 && m <= 59 && sec <= 59
}

/// Standard base64 with padding, as Go's `base64.StdEncoding` decodes it.
fn is_base64(s: &str) -> bool {
    let bytes = s.as_bytes();
    if !bytes.len().is_multiple_of(4) {
        return false;
    }
    let padding = bytes.iter().rev().take_while(|b| **b == b'=').count();
    if padding > 2 {
        return false;
    }
    bytes[..bytes.len() - padding]
        .iter()
        .all(|b| b.is_ascii_alphanumeric() || *b == b'+' || *b == b'/')
}

/// UUID in 8-4-4-4-12 hex groups (dashes optional, any case), optionally of a version.
fn is_uuid(s: &str, version: Option<u8>) -> bool {
    let hex: Vec<u8> = s.bytes().filter(|b| *b != b'-').collect();
    if hex.len() != 32 || !hex.iter().all(u8::is_ascii_hexdigit) || !dashes_at_boundaries(s) {
        return false;
    }
    match version {
        None => true,
        Some(v) => {
            let variant_ok =
                v == b'3' || matches!(hex[16].to_ascii_lowercase(), b'8' | b'9' | b'a' | b'b');
            hex[12] == v && variant_ok
        }
    }
}

/// Each dash is optional, but present dashes must sit at the 8-4-4-4-12 boundaries.
fn dashes_at_boundaries(s: &str) -> bool {
    const BOUNDARIES: [usize; 4] = [8, 12, 16, 20];
    let mut hex_seen = 0;
    for b in s.bytes() {
        if b == b'-' {
            if !BOUNDARIES.contains(&hex_seen) {
                return false;
            }
        } else {
            hex_seen += 1;
        }
    }
    !s.contains("--")
}

fn is_cidr(s: &str) -> bool {
    let Some((ip, bits)) = s.split_once('/') else {
        return false;
    };
    let Some(bits) =
        (!bits.is_empty() && bits.len() <= 3 && bits.bytes().all(|b| b.is_ascii_digit()))
            .then(|| bits.parse::<u32>().ok())
            .flatten()
    else {
        return false;
    };
    if ip.parse::<Ipv4Addr>().is_ok() {
        bits <= 32
    } else {
        ip.parse::<Ipv6Addr>().is_ok() && bits <= 128
    }
}

/// MAC-48, EUI-64 or 20-octet IPoIB addresses in the notations Go's `net.ParseMAC` accepts.
fn is_mac(s: &str) -> bool {
    let octets_ok = |groups: Vec<&str>, width: usize| {
        matches!(groups.len() * width / 2, 6 | 8 | 20)
            && groups
                .iter()
                .all(|g| g.len() == width && g.bytes().all(|b| b.is_ascii_hexdigit()))
    };
    if s.contains(':') {
        octets_ok(s.split(':').collect(), 2)
    } else if s.contains('-') {
        octets_ok(s.split('-').collect(), 2)
    } else if s.contains('.') {
        octets_ok(s.split('.').collect(), 4)
    } else {
        false
    }
}

/// RFC 1034 host name, allowing Unicode letters like go-openapi does.
fn is_hostname(s: &str) -> bool {
    if s.is_empty() || s.len() > 255 {
        return false;
    }
    let labels: Vec<&str> = s.split('.').collect();
    let label_ok = |l: &str| {
        let n = l.chars().count();
        (1..=63).contains(&n)
            && !l.starts_with('-')
            && !l.ends_with('-')
            && l.chars().all(|c| c.is_alphanumeric() || c == '-')
    };
    if labels.len() == 1 {
        return label_ok(labels[0]);
    }
    let Some((top, rest)) = labels.split_last() else {
        return false;
    };
    let top_len = top.chars().count();
    rest.iter().all(|l| label_ok(l))
        && (2..=63).contains(&top_len)
        && top.chars().all(char::is_alphabetic)
}

fn is_hex_color(s: &str) -> bool {
    let hex = s.strip_prefix('#').unwrap_or(s);
    matches!(hex.len(), 3 | 6) && hex.bytes().all(|b| b.is_ascii_hexdigit())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_accept_and_reject() {
        let cases: &[(&str, &str, bool)] = &[
            ("date-time", "2024-02-29T23:59:59Z", true),
            ("date-time", "2024-02-29T23:59:59.123456+02:00", true),
            ("date-time", "2024-02-29t10:00:00z", true),
            ("date-time", "2023-02-29T10:00:00Z", false),
            ("date-time", "2024-01-01T24:00:00Z", false),
            ("date-time", "2024-01-01T10:00:00", false),
            ("date-time", "2024-01-01", false),
            ("date-time", "yesterday", false),
            ("date-time", "2024-01-01T1234567éZ", false),
            ("date-time", "2024-01-01T12:é:00Z", false),
            ("date", "2000-02-29", true),
            ("date", "1900-02-29", false),
            ("date", "2024-13-01", false),
            ("date", "2024-1-01", false),
            ("byte", "aGVsbG8=", true),
            ("byte", "", true),
            ("byte", "aGVsbG8", false),
            ("byte", "a*==", false),
            ("uuid", "123e4567-e89b-12d3-a456-426614174000", true),
            ("uuid", "123E4567E89B12D3A456426614174000", true),
            ("uuid", "123e4567-e89b-12d3-a456-42661417400", false),
            ("uuid", "123e-4567e89b-12d3-a456-426614174000", false),
            ("uuid4", "123e4567-e89b-42d3-a456-426614174000", true),
            ("uuid4", "123e4567-e89b-12d3-a456-426614174000", false),
            ("uuid4", "123e4567-e89b-42d3-c456-426614174000", false),
            ("uuid3", "123e4567-e89b-32d3-c456-426614174000", true),
            ("ipv4", "10.0.0.1", true),
            ("ipv4", "10.0.0.256", false),
            ("ipv6", "fe80::1", true),
            ("ipv6", "10.0.0.1", false),
            ("cidr", "10.0.0.0/8", true),
            ("cidr", "fd00::/64", true),
            ("cidr", "10.0.0.0/33", false),
            ("cidr", "10.0.0.0", false),
            ("mac", "00:1a:2B:3c:4d:5e", true),
            ("mac", "00-1a-2b-3c-4d-5e", true),
            ("mac", "001a.2b3c.4d5e", true),
            ("mac", "00:1a:2b:3c:4d", false),
            ("hostname", "node-1.example.com", true),
            ("hostname", "localhost", true),
            ("hostname", "-bad.example.com", false),
            ("hostname", "a.b.c1", false),
            ("hexcolor", "#ffaa00", true),
            ("hexcolor", "fa0", true),
            ("hexcolor", "#ffaa0", false),
            ("bsonobjectid", "507f1f77bcf86cd799439011", true),
            ("bsonobjectid", "507f1f77bcf86cd79943901", false),
            ("k8s-short-name", "my-name", true),
            ("k8s-short-name", "My-name", false),
            ("k8s-short-name", "a.b", false),
            ("k8s-long-name", "my.dotted-name", true),
            ("k8s-long-name", "my..name", false),
            ("password", "anything at all", true),
            ("email", "not checked", true),
        ];
        for (format, input, expected) in cases {
            let parsed = StringFormat::parse(format).expect("known format");
            assert_eq!(parsed.accepts(input), *expected, "{format} on {input:?}");
        }
    }

    #[test]
    fn unknown_formats_are_not_recognised() {
        assert_eq!(StringFormat::parse("my-custom"), None);
        assert_eq!(StringFormat::parse("int32"), None);
    }
}
