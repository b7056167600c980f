//! Backslash escapes, as `echo -e`, `printf`'s format and its `%b` read them.

/// Which octal escape a reader takes: `echo -e` and `%b` write `\0NNN`, a `printf` format `\NNN`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Octal {
    LeadingZero,
    Plain,
}

/// `text` with its escapes replaced, and whether a `\c` asked for no further output.
pub(super) fn unescape(text: &str, octal: Octal) -> (Vec<u8>, bool) {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] != b'\\' || i + 1 == bytes.len() {
            out.push(bytes[i]);
            i += 1;
            continue;
        }
        let escape = bytes[i + 1];
        i += 2;
        let simple = match escape {
            b'a' => Some(7),
            b'b' => Some(8),
            b'e' => Some(27),
            b'f' => Some(12),
            b'n' => Some(b'\n'),
            b'r' => Some(b'\r'),
            b't' => Some(b'\t'),
            b'v' => Some(11),
            b'\\' => Some(b'\\'),
            _ => None,
        };
        if let Some(byte) = simple {
            out.push(byte);
            continue;
        }
        match escape {
            b'c' => return (out, true),
            b'0'..=b'7' => {
                let (start, most) = match (octal, escape) {
                    (Octal::LeadingZero, b'0') => (i, 3),
                    (Octal::LeadingZero, _) => {
                        out.extend([b'\\', escape]);
                        continue;
                    }
                    (Octal::Plain, _) => (i - 1, 3),
                };
                let digits = bytes[start..]
                    .iter()
                    .take(most)
                    .take_while(|b| (b'0'..=b'7').contains(*b))
                    .count();
                let value = bytes[start..start + digits]
                    .iter()
                    .fold(0u32, |v, d| v * 8 + u32::from(d - b'0'));
                out.push((value & 0xff) as u8);
                i = start + digits;
            }
            b'x' => {
                let digits = bytes[i..]
                    .iter()
                    .take(2)
                    .take_while(|b| b.is_ascii_hexdigit())
                    .count();
                if digits == 0 {
                    out.extend(b"\\x");
                    continue;
                }
                let hex = std::str::from_utf8(&bytes[i..i + digits]).unwrap_or("0");
                out.push(u8::from_str_radix(hex, 16).unwrap_or(0));
                i += digits;
            }
            other => out.extend([b'\\', other]),
        }
    }
    (out, false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_are_replaced_and_backslash_c_stops() {
        assert_eq!(
            unescape(r"a\tb\n\0101\x41\q", Octal::LeadingZero),
            (b"a\tb\nAA\\q".to_vec(), false)
        );
        assert_eq!(unescape(r"\101\0", Octal::Plain), (b"A\0".to_vec(), false));
        assert_eq!(unescape(r"x\cy", Octal::Plain), (b"x".to_vec(), true));
    }
}
