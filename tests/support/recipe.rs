//! The docs' marked shell blocks (the ```sh block after `<!-- recipe: NAME -->`, as
//! `hack/e2e-kind.sh`'s `recipe` reads them) as the commands they run, so that a test
//! runs what a page says, word for word.

use super::cluster::repo_root;

/// The ```sh block after the line `<!-- recipe: name -->` of `page` (a path from the
/// repository root).
pub(crate) fn block(page: &str, name: &str) -> String {
    let text = std::fs::read_to_string(repo_root().join(page)).unwrap_or_else(|e| panic!("{page}: {e}"));
    let marker = format!("<!-- recipe: {name} -->");
    let mut lines = text.lines().skip_while(|line| *line != marker);
    assert!(lines.next().is_some(), "{page} has no line {marker}");
    let body: Vec<&str> = lines
        .skip_while(|line| *line != "```sh")
        .skip(1)
        .take_while(|line| *line != "```")
        .collect();
    assert!(!body.is_empty(), "{page} has no ```sh block after {marker}");
    body.join("\n") + "\n"
}

/// The commands of `script`, each as its words, with `$NAME` and `${NAME}` taken from
/// `variables`. Reads what the docs' simple commands use (quotes, escaped line ends,
/// comments) and refuses the rest (pipes, lists, redirections, globs, substitutions, a
/// variable not given), so that a word list is what the shell would run.
pub(crate) fn commands(script: &str, variables: &[(&str, &str)]) -> Vec<Vec<String>> {
    let mut commands = Vec::new();
    let mut words: Vec<String> = Vec::new();
    let mut word: Option<String> = None;
    let mut chars = script.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&'\n') => {
                chars.next();
            }
            '\\' => word
                .get_or_insert_default()
                .push(chars.next().expect("a character after \\")),
            ' ' | '\t' | '\n' => {
                words.extend(word.take());
                if c == '\n' && !words.is_empty() {
                    commands.push(std::mem::take(&mut words));
                }
            }
            '#' if word.is_none() => while chars.next_if(|&c| c != '\n').is_some() {},
            '\'' => {
                let quoted: String = chars.by_ref().take_while(|&c| c != '\'').collect();
                word.get_or_insert_default().push_str(&quoted);
            }
            '"' => {
                let word = word.get_or_insert_default();
                loop {
                    match chars.next().expect("a closing \"") {
                        '"' => break,
                        '\\' if chars.peek().is_some_and(|c| matches!(c, '"' | '\\' | '$')) => {
                            word.push(chars.next().expect("escaped"));
                        }
                        '$' => word.push_str(&variable(&mut chars, variables)),
                        '`' => panic!("a command substitution in {script:?}"),
                        c => word.push(c),
                    }
                }
            }
            '$' => word.get_or_insert_default().push_str(&variable(&mut chars, variables)),
            ';' | '|' | '&' | '<' | '>' | '`' | '(' | ')' | '*' | '?' | '[' | '{' | '}' | '~' => {
                panic!("{c:?} in {script:?}: only simple commands are read")
            }
            c => word.get_or_insert_default().push(c),
        }
    }
    words.extend(word);
    if !words.is_empty() {
        commands.push(words);
    }
    commands
}

/// The value of the variable whose name follows a `$`.
fn variable(chars: &mut std::iter::Peekable<std::str::Chars<'_>>, variables: &[(&str, &str)]) -> String {
    let braced = chars.next_if_eq(&'{').is_some();
    let mut name = String::new();
    while let Some(c) = chars.next_if(|c| c.is_ascii_alphanumeric() || *c == '_') {
        name.push(c);
    }
    if braced {
        assert_eq!(chars.next(), Some('}'), "${{{name}…}}: only ${{NAME}} is read");
    }
    assert!(!name.is_empty(), "a $ that names no variable");
    variables
        .iter()
        .find(|(known, _)| *known == name)
        .map(|(_, value)| value.to_string())
        .unwrap_or_else(|| panic!("the recipe uses ${name}, which the caller does not give"))
}

/// The release name and namespace the docs' commands use.
pub(crate) const DOCUMENTED_RELEASE: (&str, &str) = ("edge", "edge-system");

/// The documented upgrade as the commands it runs: the README's `upgrade` block, or, for
/// CRDs installed apart, docs/operations.md's `upgrade-crds-apart` block; with
/// `EDGE_RELEASE` = `release_dir`, and release `name` in `namespace` in place of the
/// docs' `edge` in `edge-system`. Nothing else is changed.
pub(crate) fn upgrade(crds_apart: bool, release_dir: &str, name: &str, namespace: &str) -> Vec<Vec<String>> {
    let script = if crds_apart {
        block("docs/operations.md", "upgrade-crds-apart")
    } else {
        block("README.md", "upgrade")
    };
    let mut commands = commands(&script, &[("EDGE_RELEASE", release_dir)]);
    let (documented_name, documented_namespace) = DOCUMENTED_RELEASE;
    for command in &mut commands {
        if command[0] == "helm" {
            assert_eq!(
                command.get(2).map(String::as_str),
                Some(documented_name),
                "helm's command then the release's name: {command:?}"
            );
            command[2] = name.to_string();
        }
        if let Some(at) = command.iter().position(|w| w == "-n" || w == "--namespace") {
            assert_eq!(
                command.get(at + 1).map(String::as_str),
                Some(documented_namespace),
                "{command:?}"
            );
            command[at + 1] = namespace.to_string();
        }
    }
    commands
}
