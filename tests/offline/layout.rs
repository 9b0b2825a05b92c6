//! The architecture holds: the reconcile framework knows no kind (outside its tests,
//! no file under `src/controller/framework/` names a custom resource kind, its plural
//! or its folder under `src/controller/kinds/`), a kind reaches the framework through
//! its prelude of six names and the types of the hooks it overrides, and no two sibling
//! modules import each other.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use edge_operator::controller::kinds::Kind;

use crate::support::cluster::repo_root;

/// The Rust files under `dir`, test modules in files of their own (`tests.rs`) left out.
fn rust_files(dir: &Path, found: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("a readable folder").flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, found);
        } else if path.extension().is_some_and(|ext| ext == "rs") && !path.ends_with("tests.rs") {
            found.push(path);
        }
    }
}

/// A file's text without its `#[cfg(test)] mod tests` (by convention, its end).
fn without_tests(text: &str) -> &str {
    text.find("#[cfg(test)]\nmod tests").map_or(text, |at| &text[..at])
}

/// The statements of `text` (its tests aside), comments dropped, each from its first
/// word.
fn statements(text: &str) -> Vec<String> {
    let code: String = without_tests(text)
        .lines()
        .filter(|line| !line.trim_start().starts_with("//"))
        .map(|line| format!("{line}\n"))
        .collect();
    code.split(';')
        .map(|statement| statement.trim_start().to_string())
        .collect()
}

/// Every name of every kind, lowercase: `AccessListConfig`, `accesslistconfigs`, and
/// its folder `access_list` with and without the underscore or as words.
fn kind_names() -> Vec<String> {
    let mut names: Vec<String> = Kind::all()
        .iter()
        .flat_map(|kind| [kind.name().to_lowercase(), kind.api_resource().plural])
        .collect();
    for folder in std::fs::read_dir(repo_root().join("src/controller/kinds"))
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
fn the_framework_and_the_runtime_name_no_kind() {
    let names = kind_names();
    assert!(
        names.iter().any(|n| n == "access_list") && names.len() >= 9,
        "{names:?}"
    );
    let mut files = Vec::new();
    rust_files(&repo_root().join("src/controller/framework"), &mut files);
    rust_files(&repo_root().join("src/controller/runtime"), &mut files);
    assert!(files.len() > 20, "{files:?}");
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
    assert!(
        found.is_empty(),
        "the framework or the runtime names a kind:\n{}",
        found.join("\n")
    );
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

/// A module's path (`api::client`) from its file under `src/`.
fn module_of(file: &Path) -> Vec<String> {
    let relative = file.strip_prefix(repo_root().join("src")).expect("a file under src/");
    let mut path: Vec<String> = relative
        .with_extension("")
        .iter()
        .map(|part| part.to_string_lossy().into_owned())
        .collect();
    if path.last().is_some_and(|last| last == "mod" || last == "lib") {
        path.pop();
    }
    path
}

/// The module paths a `use` declaration names, before they are cut to a module.
fn used_paths(module: &[String], declaration: &str) -> Vec<Vec<String>> {
    let declaration: String = declaration.chars().filter(|c| !c.is_whitespace()).collect();
    let (head, group) = match declaration.split_once('{') {
        Some((head, group)) => (head.trim_end_matches("::"), Some(group.trim_end_matches('}'))),
        None => (declaration.as_str(), None),
    };
    let mut parts = head.split("::");
    let mut base: Vec<String> = match parts.next() {
        Some("crate") => Vec::new(),
        Some("super") => module[..module.len().saturating_sub(1)].to_vec(),
        Some("self") => module.to_vec(),
        _ => return Vec::new(),
    };
    for part in parts {
        match part {
            "super" => {
                base.pop();
            }
            part => base.push(part.to_string()),
        }
    }
    let Some(group) = group else {
        return vec![base];
    };
    group
        .split(',')
        .map(|member| {
            let mut path = base.clone();
            path.extend(member.split(['{', ':']).filter(|p| !p.is_empty()).map(str::to_string));
            path
        })
        .collect()
}

/// The modules of `src/` (its binaries aside), by path, with their files.
fn source_modules() -> BTreeMap<Vec<String>, PathBuf> {
    let mut files = Vec::new();
    rust_files(&repo_root().join("src"), &mut files);
    files
        .iter()
        .filter(|file| !file.starts_with(repo_root().join("src/bin")))
        .map(|file| (module_of(file), file.clone()))
        .collect()
}

/// The paths the `use` declarations of `module` (its tests aside) name; with
/// `re_exports`, its `pub use` declarations too.
fn imports_of(module: &[String], file: &Path, re_exports: bool) -> Vec<Vec<String>> {
    let text = std::fs::read_to_string(file).expect("a readable file");
    let mut paths = Vec::new();
    for statement in statements(&text) {
        let line = statement.as_str();
        let line = match re_exports {
            true => line
                .strip_prefix("pub(crate) ")
                .or(line.strip_prefix("pub "))
                .unwrap_or(line),
            false => line,
        };
        if let Some(declaration) = line.strip_prefix("use ") {
            paths.extend(used_paths(module, declaration));
        }
    }
    paths
}

#[test]
fn no_two_sibling_modules_import_each_other() {
    let modules = source_modules();
    let module_holding = |path: &[String]| {
        (0..=path.len())
            .rev()
            .map(|len| &path[..len])
            .find(|prefix| modules.contains_key(*prefix))
            .map(<[String]>::to_vec)
    };
    let mut imports = BTreeSet::new();
    for (module, file) in &modules {
        for path in imports_of(module, file, true) {
            if let Some(target) = module_holding(&path).filter(|target| target != module) {
                imports.insert((module.clone(), target));
            }
        }
    }
    assert!(imports.len() > 100, "{} imports found", imports.len());
    let nested = |a: &Vec<String>, b: &Vec<String>| a.starts_with(b) || b.starts_with(a);
    let circles: Vec<String> = imports
        .iter()
        .filter(|(from, to)| from < to && !nested(from, to) && imports.contains(&(to.clone(), from.clone())))
        .map(|(from, to)| format!("{} <-> {}", from.join("::"), to.join("::")))
        .collect();
    assert!(circles.is_empty(), "modules that import each other: {circles:?}");
}

/// The names an ancestor module re-exports (`pub use …::Name`, `pub use …::{A, B}`).
fn re_exports(text: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for declaration in statements(text) {
        let Some(path) = declaration
            .strip_prefix("pub use ")
            .or_else(|| declaration.strip_prefix("pub(crate) use "))
        else {
            continue;
        };
        let path: String = path.chars().filter(|c| !c.is_whitespace()).collect();
        let members = match path.split_once('{') {
            Some((_, group)) => group.trim_end_matches('}').split(',').map(str::to_string).collect(),
            None => vec![path.rsplit("::").next().unwrap_or_default().to_string()],
        };
        names.extend(members.into_iter().filter(|m| !m.is_empty() && m != "self"));
    }
    names
}

#[test]
fn no_module_imports_what_an_ancestor_re_exports() {
    let modules = source_modules();
    let is_test_module = |module: &[String]| module.iter().any(|part| part.ends_with("tests") || part == "fixtures");
    let mut climbing = Vec::new();
    for (module, file) in modules.iter().filter(|(module, _)| !is_test_module(module)) {
        for path in imports_of(module, file, false) {
            let Some((name, ancestor)) = path.split_last() else {
                continue;
            };
            let is_ancestor = ancestor.len() < module.len() && module.starts_with(ancestor);
            let through = modules
                .get(ancestor)
                .map(|file| std::fs::read_to_string(file).unwrap_or_default());
            if is_ancestor && through.is_some_and(|text| re_exports(&text).contains(name)) {
                climbing.push(format!("{}: {}", module.join("::"), path.join("::")));
            }
        }
    }
    assert!(
        climbing.is_empty(),
        "imports through an ancestor's re-export:\n{}",
        climbing.join("\n")
    );
}

/// The files outside `src/controller/kinds/<folder>/` whose code (comments and tests
/// left out) names the kind `name`.
fn files_naming(name: &str, folder: &str) -> BTreeSet<String> {
    let mut files = Vec::new();
    rust_files(&repo_root().join("src"), &mut files);
    let own = repo_root().join("src/controller/kinds").join(folder);
    let is_word = |c: char| c.is_alphanumeric() || c == '_';
    files
        .iter()
        .filter(|file| !file.starts_with(&own) && !file.to_string_lossy().contains("driver_tests"))
        .filter(|file| {
            let text = std::fs::read_to_string(file).expect("a readable file");
            without_tests(&text).lines().any(|line| {
                let code = line.split("//").next().unwrap_or_default();
                code.match_indices(name).any(|(at, _)| {
                    let before = code[..at].chars().next_back().is_none_or(|c| !is_word(c));
                    let after = code[at + name.len()..].chars().next().is_none_or(|c| !is_word(c));
                    before && after
                })
            })
        })
        .map(|file| {
            file.strip_prefix(repo_root())
                .expect("a file of the repository")
                .display()
                .to_string()
        })
        .collect()
}

#[test]
fn a_kind_is_named_outside_its_folder_only_by_the_registry() {
    let registry = "src/controller/kinds/mod.rs";
    let kinds: Vec<&str> = Kind::all().iter().map(|kind| kind.name()).collect();
    assert_eq!(kinds.len(), 3, "{kinds:?}");
    // Greeting: the kind the unit tests register, with its one line, and drive.
    for kind in kinds.into_iter().chain(["Greeting"]) {
        let folder = kind_folder(kind);
        let named = files_naming(kind, &folder);
        assert!(named.contains(registry), "the registry does not name {kind}");
        let elsewhere: Vec<&String> = named.iter().filter(|file| *file != registry).collect();
        assert!(
            elsewhere.is_empty(),
            "{kind} is named outside its folder and the registry: {elsewhere:?}"
        );
    }
}

/// The folder under `src/controller/kinds/` of the kind `name`: the one whose files
/// declare its resource.
fn kind_folder(name: &str) -> String {
    let declaration = format!("kind = \"{name}\"");
    std::fs::read_dir(repo_root().join("src/controller/kinds"))
        .expect("kinds/")
        .flatten()
        .filter(|entry| entry.path().is_dir())
        .find(|entry| {
            let mut files = Vec::new();
            rust_files(&entry.path(), &mut files);
            files
                .iter()
                .any(|file| std::fs::read_to_string(file).is_ok_and(|text| text.contains(&declaration)))
        })
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .unwrap_or_else(|| panic!("no folder of src/controller/kinds declares {name}"))
}

/// The longest a function of `src/` may be, its tests aside.
const LONGEST_FUNCTION_LINES: usize = 80;

/// The functions of a file longer than [`LONGEST_FUNCTION_LINES`], `#[cfg(test)]` items
/// left out.
struct LongFunctions<'a> {
    file: &'a str,
    found: Vec<String>,
}

impl LongFunctions<'_> {
    fn measure(&mut self, name: &syn::Ident, body: &syn::Block) {
        let braces = body.brace_token.span;
        let lines = braces.close().end().line - braces.open().start().line + 1;
        if lines > LONGEST_FUNCTION_LINES {
            self.found.push(format!("{}: {name} ({lines} lines)", self.file));
        }
    }
}

fn is_test_only(attributes: &[syn::Attribute]) -> bool {
    attributes.iter().any(|attribute| {
        attribute.path().is_ident("cfg")
            && attribute
                .meta
                .require_list()
                .is_ok_and(|list| list.tokens.to_string() == "test")
    })
}

impl<'ast> syn::visit::Visit<'ast> for LongFunctions<'_> {
    fn visit_item_mod(&mut self, module: &'ast syn::ItemMod) {
        if !is_test_only(&module.attrs) {
            syn::visit::visit_item_mod(self, module);
        }
    }

    fn visit_item_fn(&mut self, function: &'ast syn::ItemFn) {
        if !is_test_only(&function.attrs) {
            self.measure(&function.sig.ident, &function.block);
            syn::visit::visit_item_fn(self, function);
        }
    }

    fn visit_impl_item_fn(&mut self, function: &'ast syn::ImplItemFn) {
        if !is_test_only(&function.attrs) {
            self.measure(&function.sig.ident, &function.block);
            syn::visit::visit_impl_item_fn(self, function);
        }
    }

    fn visit_trait_item_fn(&mut self, function: &'ast syn::TraitItemFn) {
        if let Some(body) = &function.default {
            self.measure(&function.sig.ident, body);
        }
        syn::visit::visit_trait_item_fn(self, function);
    }
}

/// `file` parsed as Rust.
fn parsed(file: &Path) -> syn::File {
    let text = std::fs::read_to_string(file).expect("a readable file");
    syn::parse_file(&text).unwrap_or_else(|e| panic!("{}: {e}", file.display()))
}

#[test]
fn no_function_outside_tests_is_longer_than_eighty_lines() {
    let mut files = Vec::new();
    rust_files(&repo_root().join("src"), &mut files);
    let mut long = Vec::new();
    for file in files
        .iter()
        .filter(|file| !file.components().any(|part| part.as_os_str() == "tests"))
    {
        let parsed = parsed(file);
        let name = file.strip_prefix(repo_root()).unwrap_or(file).display().to_string();
        let mut visitor = LongFunctions {
            file: &name,
            found: Vec::new(),
        };
        syn::visit::Visit::visit_file(&mut visitor, &parsed);
        long.extend(visitor.found);
    }
    assert!(files.len() > 100, "{} files read", files.len());
    assert!(
        long.is_empty(),
        "functions over {LONGEST_FUNCTION_LINES} lines:\n{}",
        long.join("\n")
    );
}

#[test]
fn a_long_function_is_found_and_a_test_is_not() {
    let body = "    let x = 1;\n".repeat(LONGEST_FUNCTION_LINES);
    let text = format!("fn long() {{\n{body}}}\n#[cfg(test)]\nmod tests {{\n    fn long_test() {{\n{body}    }}\n}}\n");
    let parsed = syn::parse_file(&text).expect("Rust");
    let mut visitor = LongFunctions {
        file: "x.rs",
        found: Vec::new(),
    };
    syn::visit::Visit::visit_file(&mut visitor, &parsed);
    assert_eq!(
        visitor.found,
        [format!("x.rs: long ({} lines)", LONGEST_FUNCTION_LINES + 2)]
    );
}

/// The parts of the framework a kind imports from: its prelude (what every reconcile
/// uses), the hooks a kind may build beside its reconcile (`extend`), and the words of
/// a status (`reasons`). Everything else in the framework is the driver's own.
const KIND_DOORS: [&str; 3] = ["prelude", "extend", "reasons"];

/// The most names the prelude holds.
const PRELUDE_NAMES: usize = 6;

/// The framework items a module's `use` declarations name, as `door::Name`, and those
/// that come through no door of [`KIND_DOORS`].
fn framework_names(paths: &[Vec<String>]) -> (BTreeSet<String>, Vec<String>) {
    let mut names = BTreeSet::new();
    let mut elsewhere = Vec::new();
    for path in paths {
        let Some(rest) = path.strip_prefix(&["controller".to_string(), "framework".to_string()]) else {
            continue;
        };
        match rest {
            [door, .., name] if KIND_DOORS.contains(&door.as_str()) => {
                names.insert(format!("{door}::{name}"));
            }
            _ => elsewhere.push(rest.join("::")),
        }
    }
    (names, elsewhere)
}

/// The hooks of `Reconcilable` a kind may override beside its reconcile, and the types
/// of `extend` each one needs: all that `extend` holds.
const HOOK_TYPES: [(&str, &[&str]); 3] = [
    ("plan", &["Verdict", "MemberChange"]),
    ("controllers", &["Reconciler", "Runner"]),
    ("refused_example", &["RefusedExample"]),
];

/// The methods of the `impl Reconcilable for ..` blocks of `file`: the hooks a kind
/// overrides, its reconcile among them.
fn reconcilable_methods(file: &syn::File) -> BTreeSet<String> {
    let mut methods = BTreeSet::new();
    for item in &file.items {
        let syn::Item::Impl(block) = item else { continue };
        let is_reconcilable = block
            .trait_
            .as_ref()
            .and_then(|(_, path, _)| path.segments.last())
            .is_some_and(|segment| segment.ident == "Reconcilable");
        if is_reconcilable {
            methods.extend(block.items.iter().filter_map(|member| match member {
                syn::ImplItem::Fn(function) => Some(function.sig.ident.to_string()),
                _ => None,
            }));
        }
    }
    methods
}

/// The names of `extend` among `imported` that no hook of `overridden` needs.
fn unneeded_hook_types(imported: &BTreeSet<String>, overridden: &BTreeSet<String>) -> Vec<String> {
    let needed: BTreeSet<&str> = HOOK_TYPES
        .iter()
        .filter(|(hook, _)| overridden.contains(*hook))
        .flat_map(|(_, types)| types.iter().copied())
        .collect();
    imported
        .iter()
        .filter(|n| !needed.contains(n.as_str()))
        .cloned()
        .collect()
}

/// What one kind imports from the framework: its names through each door, the `extend`
/// names no hook it overrides needs, and the imports past the doors.
struct KindImports {
    kind: String,
    prelude: usize,
    reasons: usize,
    extend: BTreeSet<String>,
    unneeded: Vec<String>,
    elsewhere: Vec<String>,
}

fn kind_imports(folder: &Path) -> KindImports {
    let mut files = Vec::new();
    rust_files(folder, &mut files);
    files.retain(|file| !file.ends_with("fixtures.rs"));
    let paths: Vec<Vec<String>> = files
        .iter()
        .flat_map(|file| imports_of(&module_of(file), file, false))
        .collect();
    let (names, elsewhere) = framework_names(&paths);
    let through = |door: &str| -> BTreeSet<String> {
        names
            .iter()
            .filter_map(|n| n.strip_prefix(&format!("{door}::")))
            .map(str::to_string)
            .collect()
    };
    let extend = through("extend");
    let overridden = files
        .iter()
        .flat_map(|file| reconcilable_methods(&parsed(file)))
        .collect();
    let unneeded = unneeded_hook_types(&extend, &overridden);
    KindImports {
        kind: folder.file_name().expect("a folder").to_string_lossy().into_owned(),
        prelude: through("prelude").len(),
        reasons: through("reasons").len(),
        extend,
        unneeded,
        elsewhere,
    }
}

#[test]
fn a_kind_imports_the_six_names_of_the_prelude_and_the_types_of_the_hooks_it_overrides() {
    let framework = repo_root().join("src/controller/framework");
    let exported = imports_of(
        &module_of(&framework.join("prelude.rs")),
        &framework.join("prelude.rs"),
        true,
    );
    assert!(
        exported.len() <= PRELUDE_NAMES,
        "the prelude holds {} names: {exported:?}",
        exported.len()
    );
    let hooks_need: BTreeSet<String> = HOOK_TYPES
        .iter()
        .flat_map(|(_, types)| types.iter().map(|t| t.to_string()))
        .collect();
    let extend: BTreeSet<String> = imports_of(
        &module_of(&framework.join("extend.rs")),
        &framework.join("extend.rs"),
        true,
    )
    .into_iter()
    .filter_map(|path| path.last().cloned())
    .collect();
    assert_eq!(
        extend, hooks_need,
        "`extend` holds the types of the hooks, and only those"
    );
    let mut kinds = Vec::new();
    for folder in std::fs::read_dir(repo_root().join("src/controller/kinds"))
        .expect("kinds/")
        .flatten()
    {
        if folder.path().is_dir() && folder.file_name() != "driver_tests" {
            kinds.push(kind_imports(&folder.path()));
        }
    }
    assert_eq!(kinds.len(), 4, "three kinds and Greeting");
    let table: Vec<_> = kinds
        .iter()
        .map(|k| (&k.kind, k.prelude, k.reasons, &k.extend))
        .collect();
    for kind in &kinds {
        assert!(
            kind.elsewhere.is_empty(),
            "{}: framework imports through no door: {:?}",
            kind.kind,
            kind.elsewhere
        );
        assert!(
            kind.unneeded.is_empty(),
            "{}: imports {:?} of `extend`, which no hook it overrides needs",
            kind.kind,
            kind.unneeded
        );
        // Beside the prelude, a kind needs at most one word of `reasons`.
        assert!(
            kind.prelude <= PRELUDE_NAMES && kind.reasons <= 1,
            "(kind, prelude, reasons, extend): {table:?}"
        );
    }
    let greeting = kinds.iter().find(|k| k.kind == "greeting").expect("Greeting");
    assert!(
        greeting.prelude + greeting.reasons + greeting.extend.len() <= PRELUDE_NAMES,
        "the smallest kind, which overrides no hook, imports six names at most: {table:?}"
    );
}

#[test]
fn a_hook_type_a_kind_does_not_override_is_found() {
    let probe = syn::parse_file(
        "impl Reconcilable for Probe {\n    fn reconcile() {}\n    fn plan() -> Vec<Verdict> { Vec::new() }\n}\n\
         impl Probe {\n    fn refused_example() {}\n}\n",
    )
    .expect("a probe kind");
    let overridden = reconcilable_methods(&probe);
    assert_eq!(overridden.iter().collect::<Vec<_>>(), ["plan", "reconcile"]);
    let imported = ["MemberChange", "RefusedExample", "Verdict"].map(String::from).into();
    assert_eq!(unneeded_hook_types(&imported, &overridden), ["RefusedExample"]);
}

#[test]
fn an_import_past_the_doors_is_found() {
    let module: Vec<String> = ["controller", "kinds", "greeting"].map(String::from).to_vec();
    let paths = used_paths(
        &module,
        "crate::controller::framework::{prelude::Context, pipeline::kind::Requeue, reasons::KindReason}",
    );
    let (names, elsewhere) = framework_names(&paths);
    assert_eq!(
        names.into_iter().collect::<Vec<_>>(),
        ["prelude::Context", "reasons::KindReason"]
    );
    assert_eq!(elsewhere, ["pipeline::kind::Requeue"]);
}
