use proptest::prelude::*;

use super::*;

fn text(text: &str, quoted: bool) -> Part {
    Part::Text {
        text: text.to_owned(),
        quoted,
    }
}

fn simple(script: &str) -> Simple {
    let list = parse(script, 32).unwrap();
    match &list[0].first.commands[0] {
        Command::Simple(simple) => simple.clone(),
        other => panic!("not a simple command: {other:?}"),
    }
}

#[test]
fn words_keep_what_was_quoted() {
    let command = simple("echo a'b c'\"$x\"\\*");
    assert_eq!(command.words[0], Word(vec![text("echo", false)]));
    assert_eq!(
        command.words[1],
        Word(vec![
            text("a", false),
            text("b c", true),
            Part::Param {
                param: Box::new(Param {
                    name: "x".into(),
                    op: ParamOp::Value
                }),
                quoted: true
            },
            text("*", true),
        ])
    );
}

#[test]
fn assignments_come_before_the_command_only() {
    let command = simple("A=1 B= cmd C=2");
    assert_eq!(
        command.assignments,
        [
            ("A".to_owned(), Word(vec![text("1", false)])),
            ("B".to_owned(), Word(vec![]))
        ]
    );
    assert_eq!(command.words.len(), 2);
}

#[test]
fn redirections_take_descriptors_and_here_documents() {
    let command = simple("cmd 2>&1 >out 2>>log <in &>both <<EOF\nbody $x\nEOF\n");
    let ops: Vec<(u32, RedirectOp)> = command.redirects.iter().map(|r| (r.fd, r.op)).collect();
    assert_eq!(
        ops,
        [
            (2, RedirectOp::DupOutput),
            (1, RedirectOp::Write),
            (2, RedirectOp::Append),
            (0, RedirectOp::Read),
            (1, RedirectOp::WriteBoth),
            (0, RedirectOp::HereDoc),
        ]
    );
    assert_eq!(command.redirects[5].target.0[0], text("body ", true));
    let quoted = simple("cat <<'E'\n$x\nE");
    assert_eq!(quoted.redirects[0].target, Word::quoted("$x\n"));
}

#[test]
fn compound_commands_nest() {
    let list = parse(
        "if a; then b; elif c; then d; else e; fi\nwhile x; do y; done\nfor v in 1 2; do :; done\n\
         case $w in a|b) one;; *) two;; esac\n{ g; }\n(s)\nf() { body; }",
        32,
    )
    .unwrap();
    let kinds: Vec<&str> = list
        .iter()
        .map(|and_or| match &and_or.first.commands[0] {
            Command::Compound(compound, _) => match **compound {
                Compound::If { ref branches, .. } if branches.len() == 2 => "if",
                Compound::Loop { until: false, .. } => "while",
                Compound::For { ref items, .. } if items.as_ref().map(Vec::len) == Some(2) => "for",
                Compound::Case { ref arms, .. } if arms[0].patterns.len() == 2 => "case",
                Compound::Group(_) => "group",
                Compound::Subshell(_) => "subshell",
                _ => "other",
            },
            Command::Function(name, _) if name == "f" => "function",
            _ => "other",
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "if", "while", "for", "case", "group", "subshell", "function"
        ]
    );
}

#[test]
fn incomplete_scripts_say_so() {
    for script in [
        "if true; then",
        "for i in 1 2\n",
        "echo 'open",
        "echo \"open",
        "echo $(echo",
        "a &&",
        "a |",
        "cat <<EOF\nline",
        "case x in",
        "{ echo",
        "echo ${x",
        "echo `a",
    ] {
        assert!(
            matches!(parse(script, 32), Err(ParseError::Incomplete(_))),
            "{script}: {:?}",
            parse(script, 32)
        );
    }
}

#[test]
fn errors_are_told_apart() {
    assert_eq!(parse("a &", 32), Err(ParseError::Background));
    assert_eq!(parse("a & b", 32), Err(ParseError::Background));
    assert!(parse("a && b", 32).is_ok());
    assert!(matches!(parse("then", 32), Err(ParseError::Unexpected(_))));
    assert!(matches!(parse(")", 32), Err(ParseError::Unexpected(_))));
    assert_eq!(parse(&"(".repeat(100), 32), Err(ParseError::TooDeep));
    assert_eq!(parse(&"$(".repeat(100), 32), Err(ParseError::TooDeep));
    assert!(parse("echo ``", 32).is_ok());
}

#[test]
fn arithmetic_and_subshell_substitutions_are_told_apart() {
    let command = simple("echo $((1+(2))) $( (a) )");
    assert!(matches!(command.words[1].0[0], Part::Arith { .. }));
    assert!(matches!(command.words[2].0[0], Part::Command { .. }));
}

/// Tokens shell scripts are made of.
const TOKENS: &[&str] = &[
    "if", "then", "elif", "else", "fi", "while", "until", "do", "done", "for", "in", "case",
    "esac", ";;", "(", ")", "{", "}", "|", "||", "&&", ";", "&", "\n", "'", "\"", "$(", "`", "<<",
    "<<-", "EOF", "${", "}", "$((", "))", "2>&1", ">", "<", "word", "x=1", "$x", "!", "#", "\\",
    "*", "f()", " ",
];

proptest! {
    #[test]
    fn parsing_any_text_never_panics(source in ".{0,200}") {
        let _ = parse(&source, 16);
    }

    #[test]
    fn parsing_any_sequence_of_tokens_never_panics(tokens in prop::collection::vec(prop::sample::select(TOKENS), 0..60)) {
        let _ = parse(&tokens.concat(), 16);
        let _ = parse(&tokens.join(" "), 16);
    }
}
