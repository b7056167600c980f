//! Counts with their noun in the messages people read (`1 node`, `3 nodes`, `2 batches`).
//!
//! The engine's Events and conditions and the console's panes and dialogs all count things; one rule here keeps
//! every one of them from saying `1 nodes`.

/// `noun` in the plural when `count` is not 1: `node` → `nodes`, `batch` → `batches`, `entry` → `entries`.
pub fn plural(count: impl TryInto<u64>, noun: &str) -> String {
    if count.try_into().is_ok_and(|count| count == 1) {
        return noun.to_owned();
    }
    let consonant_y = noun
        .strip_suffix('y')
        .filter(|stem| !stem.ends_with(['a', 'e', 'i', 'o', 'u']));
    if let Some(stem) = consonant_y {
        format!("{stem}ies")
    } else if ["s", "sh", "ch", "x", "z"]
        .iter()
        .any(|end| noun.ends_with(end))
    {
        format!("{noun}es")
    } else {
        format!("{noun}s")
    }
}

/// `count` and its noun: `1 node`, `0 nodes`, `3 batches`.
pub fn count<N: Copy + std::fmt::Display + TryInto<u64>>(count: N, noun: &str) -> String {
    format!("{count} {}", plural(count, noun))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_is_singular_and_every_other_count_plural() {
        assert_eq!(count(1, "node"), "1 node");
        assert_eq!(count(0, "node"), "0 nodes");
        assert_eq!(count(2, "batch"), "2 batches");
        assert_eq!(count(3, "entry"), "3 entries");
        assert_eq!(count(3, "day"), "3 days");
        assert_eq!(plural(1, "image"), "image");
        assert_eq!(plural(4, "image"), "images");
    }
}
