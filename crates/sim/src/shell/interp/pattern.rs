//! Glob patterns, for `case`, `${x#pattern}` and pathname expansion: `*`, `?`, `[…]` (`[!…]` negated, with
//! ranges), and `\` quoting the character after it (the expander writes quoted characters so).

/// One element of a pattern; each but `Star` matches exactly one character.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Element {
    Char(char),
    Any,
    Star,
    Class {
        negated: bool,
        ranges: Vec<(char, char)>,
    },
}

fn compile(pattern: &str) -> Vec<Element> {
    let chars: Vec<char> = pattern.chars().collect();
    let mut elements = Vec::new();
    let mut at = 0;
    while at < chars.len() {
        match chars[at] {
            '\\' if at + 1 < chars.len() => {
                elements.push(Element::Char(chars[at + 1]));
                at += 2;
            }
            '*' => {
                if elements.last() != Some(&Element::Star) {
                    elements.push(Element::Star);
                }
                at += 1;
            }
            '?' => {
                elements.push(Element::Any);
                at += 1;
            }
            '[' => match class(&chars, at) {
                Some((element, next)) => {
                    elements.push(element);
                    at = next;
                }
                None => {
                    elements.push(Element::Char('['));
                    at += 1;
                }
            },
            c => {
                elements.push(Element::Char(c));
                at += 1;
            }
        }
    }
    elements
}

/// The bracket expression starting at `chars[start]`, and where it ends; None when it is not closed.
fn class(chars: &[char], start: usize) -> Option<(Element, usize)> {
    let mut at = start + 1;
    let negated = matches!(chars.get(at), Some('!' | '^'));
    if negated {
        at += 1;
    }
    let mut ranges = Vec::new();
    let first = at;
    loop {
        let mut c = *chars.get(at)?;
        if c == ']' && at > first {
            return Some((Element::Class { negated, ranges }, at + 1));
        }
        if c == '\\' {
            at += 1;
            c = *chars.get(at)?;
        }
        if chars.get(at + 1) == Some(&'-') && chars.get(at + 2).is_some_and(|&end| end != ']') {
            let mut end_at = at + 2;
            if chars[end_at] == '\\' {
                end_at += 1;
            }
            let end = *chars.get(end_at)?;
            ranges.push((c, end));
            at = end_at + 1;
        } else {
            ranges.push((c, c));
            at += 1;
        }
    }
}

fn matches_one(element: &Element, c: char) -> bool {
    match element {
        Element::Char(expected) => *expected == c,
        Element::Any => true,
        Element::Star => false,
        Element::Class { negated, ranges } => {
            ranges.iter().any(|(low, high)| (*low..=*high).contains(&c)) != *negated
        }
    }
}

/// Whether `text` matches `pattern` as a whole.
pub(super) fn matches(pattern: &str, text: &str) -> bool {
    let elements = compile(pattern);
    let text: Vec<char> = text.chars().collect();
    let (mut p, mut t) = (0, 0);
    // Where the last star was, and the text position it is retried from.
    let mut star: Option<(usize, usize)> = None;
    while t < text.len() {
        match elements.get(p) {
            Some(Element::Star) => {
                star = Some((p, t));
                p += 1;
            }
            Some(element) if matches_one(element, text[t]) => {
                p += 1;
                t += 1;
            }
            _ => match star {
                Some((star_p, star_t)) => {
                    p = star_p + 1;
                    t = star_t + 1;
                    star = Some((star_p, star_t + 1));
                }
                None => return false,
            },
        }
    }
    elements[p..].iter().all(|e| *e == Element::Star)
}

/// `pattern` with its quoting backslashes removed: the text it matches when it has no special characters.
pub(super) fn unescape(pattern: &str) -> String {
    let mut text = String::with_capacity(pattern.len());
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => text.extend(chars.next().or(Some('\\'))),
            c => text.push(c),
        }
    }
    text
}

/// Whether `pattern` has a special character not quoted.
pub(super) fn is_glob(pattern: &str) -> bool {
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                chars.next();
            }
            '*' | '?' => return true,
            '[' => return true,
            _ => {}
        }
    }
    false
}

/// The prefix (or, `suffix`, the suffix) of `value` matching `pattern` removed: the shortest match or the longest.
pub(super) fn trim(value: &str, pattern: &str, suffix: bool, longest: bool) -> String {
    let mut cuts: Vec<usize> = value
        .char_indices()
        .map(|(at, _)| at)
        .chain([value.len()])
        .collect();
    if suffix != longest {
        cuts.reverse();
    }
    for cut in cuts {
        let (matched, kept) = if suffix {
            (&value[cut..], &value[..cut])
        } else {
            (&value[..cut], &value[cut..])
        };
        if matches(pattern, matched) {
            return kept.to_owned();
        }
    }
    value.to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_match_stars_marks_classes_and_escapes() {
        let cases = [
            ("*", "", true),
            ("*.txt", "a.txt", true),
            ("*.txt", "a.txt.gz", false),
            ("a?c", "abc", true),
            ("a?c", "ac", false),
            ("[a-c]x", "bx", true),
            ("[!a-c]x", "bx", false),
            ("[]]", "]", true),
            ("\\*", "*", true),
            ("\\*", "a", false),
            ("a*b*c", "aXXbYYc", true),
            ("a*b*c", "aXXbYY", false),
            ("[", "[", true),
        ];
        for (pattern, text, expected) in cases {
            assert_eq!(matches(pattern, text), expected, "{pattern} ~ {text}");
        }
    }

    #[test]
    fn trims_take_the_shortest_or_longest_match() {
        assert_eq!(trim("a/b/c", "*/", false, false), "b/c");
        assert_eq!(trim("a/b/c", "*/", false, true), "c");
        assert_eq!(trim("x.tar.gz", ".*", true, false), "x.tar");
        assert_eq!(trim("x.tar.gz", ".*", true, true), "x");
        assert_eq!(trim("abc", "z", true, true), "abc");
    }
}
