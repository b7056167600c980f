//! Errors told on one line: logs, conditions and the console show a failure with every cause that adds something,
//! and walk the same chain to find the cause they word.

use std::error::Error;

/// `error` and every error beneath it, outermost first.
pub fn chain<'a>(
    error: &'a (dyn Error + 'static),
) -> impl Iterator<Item = &'a (dyn Error + 'static)> {
    std::iter::successors(Some(error), |&error| error.source())
}

/// `error` and its causes on one line, each cause once: many errors repeat their cause's message in their own.
pub fn cause_chain(error: &(dyn Error + 'static)) -> String {
    let mut line = error.to_string();
    for cause in chain(error).skip(1) {
        let message = cause.to_string();
        if !line.contains(&message) {
            line.push_str(": ");
            line.push_str(&message);
        }
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug)]
    struct Layer(&'static str, Option<Box<Layer>>);

    impl std::fmt::Display for Layer {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str(self.0)
        }
    }

    impl Error for Layer {
        fn source(&self) -> Option<&(dyn Error + 'static)> {
            self.1
                .as_deref()
                .map(|inner| inner as &(dyn Error + 'static))
        }
    }

    #[test]
    fn each_cause_is_told_once_outermost_first() {
        let error = Layer(
            "patching Module a: connection refused",
            Some(Box::new(Layer(
                "connection refused",
                Some(Box::new(Layer("os error 111", None))),
            ))),
        );
        assert_eq!(chain(&error).count(), 3);
        assert_eq!(
            cause_chain(&error),
            "patching Module a: connection refused: os error 111"
        );
    }
}
