//! The architecture holds: the reconcile framework knows no kind. Outside its tests,
//! no file under `src/controller/framework/` names a custom resource kind, its plural
//! or its folder under `src/controller/kinds/`.

use std::path::{Path, PathBuf};

use edge_operator::crd::Kind;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn rust_files(dir: &Path, found: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("a readable folder").flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, found);
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            found.push(path);
        }
    }
}

/// A file's text without its `#[cfg(test)] mod tests` (by convention, its end).
fn without_tests(text: &str) -> &str {
    text.find("#[cfg(test)]\nmod tests").map_or(text, |at| &text[..at])
}

/// Every name of every kind, lowercase: `AccessListConfig`, `accesslistconfigs`, and
/// its folder `access_list` with and without the underscore or as words.
fn kind_names() -> Vec<String> {
    let mut names: Vec<String> = Kind::ALL
        .iter()
        .flat_map(|kind| [kind.name().to_lowercase(), kind.api_resource().plural])
        .collect();
    for folder in std::fs::read_dir(repo().join("src/controller/kinds"))
        .expect("kinds/")
        .flatten()
    {
        if folder.path().is_dir() {
            let folder = folder.file_name().to_string_lossy().to_lowercase();
            names.extend([folder.clone(), folder.replace('_', ""), folder.replace('_', " ")]);
        }
    }
    names.sort();
    names.dedup();
    names
}

#[test]
fn the_framework_names_no_kind() {
    let names = kind_names();
    assert!(
        names.iter().any(|n| n == "access_list") && names.len() >= 9,
        "{names:?}"
    );
    let mut files = Vec::new();
    rust_files(&repo().join("src/controller/framework"), &mut files);
    assert!(files.len() > 10, "{files:?}");
    let mut found = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).expect("a readable file");
        let text = without_tests(&text).to_lowercase();
        for (number, line) in text.lines().enumerate() {
            for name in names.iter().filter(|name| line.contains(name.as_str())) {
                found.push(format!("{}:{}: {name}", file.display(), number + 1));
            }
        }
    }
    assert!(found.is_empty(), "the framework names a kind:\n{}", found.join("\n"));
}

#[test]
fn a_kind_name_outside_tests_is_found() {
    let text = "fn a() {}\n// AccessListConfig\n#[cfg(test)]\nmod tests {\n// ContainerAppWatch\n}\n";
    let kept = without_tests(text).to_lowercase();
    let names = kind_names();
    assert!(names.iter().any(|n| kept.contains(n.as_str())));
    assert!(
        !names
            .iter()
            .any(|n| n.contains("containerappwatch") && kept.contains(n.as_str()))
    );
}
