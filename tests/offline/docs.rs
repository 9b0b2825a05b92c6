//! The documentation holds: every relative link and anchor of `README.md` and `docs/`
//! resolves, and every flag of the three binaries and every chart value is documented
//! in `docs/`.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::cluster::repo_root;
use edge_operator::controller::kinds::Kind;

fn pages() -> Vec<PathBuf> {
    let mut pages = vec![repo_root().join("README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(repo_root().join("docs"))
        .expect("docs/")
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| path.extension().is_some_and(|ext| ext == "md"))
        .collect();
    docs.sort();
    pages.extend(docs);
    pages
}

fn docs_text() -> String {
    pages()
        .iter()
        .filter(|page| page.parent() == Some(repo_root().join("docs").as_path()))
        .map(|page| std::fs::read_to_string(page).expect("page"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// GitHub's anchors of a page's headings (`## A b` → `a-b`; repeats get `-1`, `-2`).
fn anchors(page: &Path) -> BTreeSet<String> {
    let text = std::fs::read_to_string(page).unwrap_or_default();
    let mut seen = BTreeSet::new();
    let mut in_code = false;
    for line in text.lines() {
        if line.starts_with("```") {
            in_code = !in_code;
        }
        let Some(title) = line.strip_prefix('#').filter(|_| !in_code) else {
            continue;
        };
        let slug: String = title
            .trim_start_matches('#')
            .trim()
            .to_lowercase()
            .chars()
            .filter(|c| c.is_alphanumeric() || *c == ' ' || *c == '-' || *c == '_')
            .map(|c| if c == ' ' { '-' } else { c })
            .collect();
        let mut anchor = slug.clone();
        let mut repeat = 0;
        while seen.contains(&anchor) {
            repeat += 1;
            anchor = format!("{slug}-{repeat}");
        }
        seen.insert(anchor);
    }
    seen
}

/// The targets of the Markdown links of `text`, outside code blocks.
fn links(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut in_code = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            in_code = !in_code;
            continue;
        }
        if in_code {
            continue;
        }
        let mut rest = line;
        while let Some(start) = rest.find("](") {
            rest = &rest[start + 2..];
            let Some(end) = rest.find(')') else { break };
            found.push(rest[..end].to_string());
            rest = &rest[end..];
        }
    }
    found
}

#[test]
fn every_relative_link_and_anchor_of_the_docs_resolves() {
    let mut broken = Vec::new();
    for page in pages() {
        let text = std::fs::read_to_string(&page).expect("page");
        for target in links(&text) {
            if target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            let (path, anchor) = match target.split_once('#') {
                Some((path, anchor)) => (path, Some(anchor)),
                None => (target.as_str(), None),
            };
            let file = if path.is_empty() {
                page.clone()
            } else {
                page.parent().expect("folder").join(path)
            };
            let name = page.strip_prefix(repo_root()).unwrap_or(&page).display().to_string();
            if !file.exists() {
                broken.push(format!("{name}: {target} (no such file)"));
            } else if let Some(anchor) = anchor
                && !anchors(&file).contains(anchor)
            {
                broken.push(format!("{name}: {target} (no such heading)"));
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

/// The help of `binary` with `args`.
fn help(binary: &str, args: &[&str]) -> String {
    let output = Command::new(binary)
        .args(args)
        .arg("--help")
        .env_clear()
        .output()
        .expect("the binary runs");
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// The subcommands a help text lists (`help` aside).
fn subcommands(help: &str) -> Vec<String> {
    help.lines()
        .skip_while(|line| !line.starts_with("Commands:"))
        .skip(1)
        .take_while(|line| !line.trim().is_empty())
        .filter_map(|line| line.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(str::to_string)
        .collect()
}

/// The long flags a help text lists (`--help` and `--version` aside).
fn flags(help: &str) -> BTreeSet<String> {
    help.lines()
        .filter_map(|line| {
            let line = line.trim_start();
            let line = line
                .strip_prefix('-')
                .filter(|_| line.len() > 2 && line.as_bytes()[1] != b'-')
                .map_or(line, |short| short[1..].trim_start_matches(", "));
            line.strip_prefix("--")
                .map(|flag| {
                    flag.split(|c: char| !(c.is_alphanumeric() || c == '-'))
                        .next()
                        .unwrap_or_default()
                })
                .map(|flag| format!("--{flag}"))
        })
        .filter(|flag| flag != "--help" && flag != "--version")
        .collect()
}

/// Every flag of `binary` and its subcommands, with the command that has it.
fn every_flag(binary: &str) -> Vec<(String, String)> {
    let mut found = Vec::new();
    let mut commands: Vec<Vec<String>> = vec![Vec::new()];
    while let Some(command) = commands.pop() {
        let args: Vec<&str> = command.iter().map(String::as_str).collect();
        let text = help(binary, &args);
        for flag in flags(&text) {
            found.push((command.join(" "), flag));
        }
        for sub in subcommands(&text) {
            let mut deeper = command.clone();
            deeper.push(sub);
            commands.push(deeper);
        }
    }
    found
}

/// Whether `text` holds `flag` as a whole word (`--page` is not in `--page-size`).
fn mentions(text: &str, flag: &str) -> bool {
    let word = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '-');
    text.match_indices(flag)
        .any(|(at, _)| !word(text[..at].chars().next_back()) && !word(text[at + flag.len()..].chars().next()))
}

#[test]
fn every_flag_of_the_three_binaries_is_documented() {
    let docs = docs_text();
    let mut missing = Vec::new();
    let binaries = [
        ("edge-operator", env!("CARGO_BIN_EXE_edge-operator")),
        ("edgectl", env!("CARGO_BIN_EXE_edgectl")),
        ("edge-sim", env!("CARGO_BIN_EXE_edge-sim")),
    ];
    for (name, binary) in binaries {
        let every = every_flag(binary);
        assert!(every.len() > 5, "{name}: flags read from its help: {every:?}");
        for (command, flag) in every {
            if !mentions(&docs, &flag) {
                missing.push(format!("{name} {command} {flag}"));
            }
        }
    }
    missing.sort();
    missing.dedup();
    assert!(
        missing.is_empty(),
        "flags no page of docs/ documents:\n{}",
        missing.join("\n")
    );
}

/// The dotted paths of a values document's leaves (an empty map or a list is a leaf).
fn value_paths(value: &serde_yaml::Value, prefix: &str, paths: &mut Vec<String>) {
    match value {
        serde_yaml::Value::Mapping(members) if !members.is_empty() => {
            for (key, member) in members {
                let key = key.as_str().unwrap_or_default();
                let path = if prefix.is_empty() {
                    key.to_string()
                } else {
                    format!("{prefix}.{key}")
                };
                value_paths(member, &path, paths);
            }
        }
        _ => paths.push(prefix.to_string()),
    }
}

#[test]
fn every_chart_value_is_documented() {
    let values: serde_yaml::Value = serde_yaml::from_str(
        &std::fs::read_to_string(repo_root().join("charts/edge-operator/values.yaml")).expect("values.yaml"),
    )
    .expect("YAML");
    let mut paths = Vec::new();
    value_paths(&values, "", &mut paths);
    assert!(paths.len() > 30, "{paths:?}");
    let docs = docs_text();
    let missing: Vec<&String> = paths
        .iter()
        .filter(|path| !docs.contains(&format!("`{path}`")) && !docs.contains(&format!("`{path}=")))
        .collect();
    assert!(
        missing.is_empty(),
        "chart values no page of docs/ documents (as `path`):\n{}",
        missing.iter().map(|p| p.as_str()).collect::<Vec<_>>().join("\n")
    );
}

/// The words (`=> "StatusName"` arms) of `file`'s lines that mention `marker`.
fn words_of(file: &str, marker: &str) -> Vec<String> {
    let text = std::fs::read_to_string(repo_root().join(file)).expect("source");
    text.lines()
        .filter(|line| line.contains(marker))
        .filter_map(|line| {
            line.split_once("=> \"")?
                .1
                .split_once('"')
                .map(|(word, _)| word.to_string())
        })
        .collect()
}

/// The words the unit variants of `enum name` in `file` write: each variant's name, or
/// the word its `#[strum(serialize = "…")]` gives.
fn variants_of(file: &str, name: &str) -> Vec<String> {
    let text = std::fs::read_to_string(repo_root().join(file)).expect("source");
    let body = text
        .split_once(&format!("enum {name} {{"))
        .and_then(|(_, rest)| rest.split_once("\n}"))
        .map(|(body, _)| body)
        .unwrap_or_else(|| panic!("no enum {name} in {file}"));
    let mut serialized = None;
    let mut words = Vec::new();
    for line in body.lines().map(str::trim) {
        if let Some(word) = line.strip_prefix("#[strum(serialize = \"") {
            serialized = word.split_once('"').map(|(word, _)| word.to_string());
        } else if let Some(variant) = line.strip_suffix(',')
            && variant.chars().all(char::is_alphanumeric)
        {
            words.push(serialized.take().unwrap_or_else(|| variant.to_string()));
        }
    }
    words
}

#[test]
fn every_condition_reason_of_the_code_has_a_troubleshooting_entry() {
    let mut reasons = variants_of("src/controller/framework/reasons/mod.rs", "Reason");
    // A withheld write is reported as NotLeader; it is never written itself.
    reasons.extend(
        variants_of("src/api/error.rs", "ApiFailure")
            .into_iter()
            .filter(|r| r != "WriteWithheld"),
    );
    for kind in Kind::all() {
        reasons.extend(kind.reasons().into_iter().map(str::to_string));
    }
    for own in ["InSync", "RestoreHeld", "Issued", "AppActive", "Synced"] {
        assert!(reasons.iter().any(|r| r == own), "{own}: a kind's reason is read");
    }
    assert!(
        !reasons.iter().any(|r| r == "App"),
        "an application's state is written as itself"
    );
    reasons.extend(words_of("src/api/models/apps.rs", "AppStatus::"));
    assert!(reasons.len() > 40, "reasons read from the vocabularies: {reasons:?}");
    let page = std::fs::read_to_string(repo_root().join("docs/troubleshooting.md")).expect("docs/troubleshooting.md");
    let missing: Vec<&String> = reasons
        .iter()
        .filter(|reason| !page.contains(&format!("`{reason}`")))
        .collect();
    assert!(
        missing.is_empty(),
        "reasons docs/troubleshooting.md does not explain: {missing:?}"
    );
}
