//! One upgrade path: the README and docs/operations.md give the same upgrade command,
//! and it reads into the commands the upgrade test (tests/upgrade) runs.

use crate::support::recipe::{self, DOCUMENTED_RELEASE};

const VERSION: &str = env!("CARGO_PKG_VERSION");

fn words(words: &[&str]) -> Vec<String> {
    words.iter().map(|w| w.to_string()).collect()
}

#[test]
fn the_readme_and_operations_give_one_upgrade_command() {
    let readme = recipe::block("README.md", "upgrade");
    assert_eq!(
        readme,
        recipe::block("docs/operations.md", "upgrade"),
        "README.md and docs/operations.md give different upgrade commands"
    );
    let apart = recipe::block("docs/operations.md", "upgrade-crds-apart");
    let (crds, helm) = apart.split_once('\n').expect("two commands");
    assert_eq!(crds, "kubectl apply --server-side --force-conflicts -f crds/");
    assert_eq!(
        helm,
        readme.trim_end().to_string() + " --set crds.enabled=false\n",
        "with the CRDs apart, the same helm upgrade with crds.enabled=false"
    );
}

#[test]
fn the_upgrade_test_runs_the_documented_upgrade() {
    let (name, namespace) = DOCUMENTED_RELEASE;
    let chart = format!("/releases/x/edge-operator-{VERSION}.tgz");
    let upgrade = words(&[
        "helm",
        "upgrade",
        "r123456",
        &chart,
        "-n",
        "upgrade-ns",
        "--reset-then-reuse-values",
        "--wait",
    ]);
    assert_eq!(
        recipe::upgrade(false, "/releases/x", "r123456", "upgrade-ns"),
        std::slice::from_ref(&upgrade)
    );
    let mut apart = upgrade;
    apart.extend(words(&["--set", "crds.enabled=false"]));
    assert_eq!(
        recipe::upgrade(true, "/releases/x", "r123456", "upgrade-ns"),
        [
            words(&["kubectl", "apply", "--server-side", "--force-conflicts", "-f", "crds/"]),
            apart
        ]
    );
    // Read as written, the block names the docs' release.
    let documented = recipe::commands(
        &recipe::block("README.md", "upgrade"),
        &[("EDGE_RELEASE", "/releases/x")],
    );
    assert_eq!(documented[0][2..6], words(&[name, &chart, "-n", namespace]));
}

#[test]
fn a_recipe_reads_as_the_shell_would_run_it() {
    let script = "# a comment\nhelm install edge \"$DIR/a b.tgz\" \\\n  --set 'x={a,b}' ${DIR}/c # why\n\nkubectl get \"\\$x\"\n";
    assert_eq!(
        recipe::commands(script, &[("DIR", "/d")]),
        [
            words(&["helm", "install", "edge", "/d/a b.tgz", "--set", "x={a,b}", "/d/c"]),
            words(&["kubectl", "get", "$x"]),
        ]
    );
    for refused in [
        "a | b",
        "a && b",
        "a; b",
        "a > f",
        "a $(b)",
        "a *.tgz",
        "a $UNSET",
        "a ${X:+y}",
    ] {
        let read = std::panic::catch_unwind(|| recipe::commands(refused, &[("X", "x")]));
        assert!(read.is_err(), "{refused:?} is not read as a simple command");
    }
}
