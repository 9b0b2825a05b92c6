//! The benchmark's one table: every figure with its target and verdict.

use std::fmt::Write as _;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    Pass,
    Fail,
    /// Printed for information: no target, or a target that only holds at full scale.
    Info,
}

#[derive(Debug)]
struct Row {
    suite: &'static str,
    figure: String,
    value: String,
    target: String,
    verdict: Verdict,
}

/// Rows in the order they were measured. In a smoke run, targets stated for full-scale
/// runs (times, memory) are printed but not gated; count targets always are.
#[derive(Debug)]
pub(crate) struct Report {
    rows: Vec<Row>,
    smoke: bool,
}

impl Report {
    pub(crate) fn new(smoke: bool) -> Self {
        Self {
            rows: Vec::new(),
            smoke,
        }
    }

    fn push(&mut self, suite: &'static str, figure: &str, value: String, target: String, verdict: Verdict) {
        println!("[{suite}] {figure}: {value} (target {target}) {verdict:?}");
        self.rows.push(Row {
            suite,
            figure: figure.to_string(),
            value,
            target,
            verdict,
        });
    }

    /// A figure whose target holds at every scale (counts, correctness).
    pub(crate) fn check(&mut self, suite: &'static str, figure: &str, value: String, target: &str, pass: bool) {
        let verdict = if pass { Verdict::Pass } else { Verdict::Fail };
        self.push(suite, figure, value, target.to_string(), verdict);
    }

    /// A figure whose target is stated for the full-scale run (times, memory).
    pub(crate) fn check_at_scale(
        &mut self,
        suite: &'static str,
        figure: &str,
        value: String,
        target: &str,
        pass: bool,
    ) {
        if self.smoke {
            self.push(suite, figure, value, format!("{target} at full scale"), Verdict::Info);
        } else {
            self.check(suite, figure, value, target, pass);
        }
    }

    pub(crate) fn info(&mut self, suite: &'static str, figure: &str, value: String) {
        self.push(suite, figure, value, "-".to_string(), Verdict::Info);
    }

    /// A suite that could not run to the end: its remaining figures are missing.
    pub(crate) fn error(&mut self, suite: &'static str, error: &dyn std::fmt::Display) {
        self.push(
            suite,
            "ran to completion",
            format!("no: {error}"),
            "yes".to_string(),
            Verdict::Fail,
        );
    }

    pub(crate) fn failed(&self) -> bool {
        self.rows.iter().any(|r| r.verdict == Verdict::Fail)
    }

    /// The table in Markdown, ready for the README.
    pub(crate) fn render(&self) -> String {
        let mut out = String::from("| suite | figure | value | target | result |\n|---|---|---|---|---|\n");
        for row in &self.rows {
            let result = match row.verdict {
                Verdict::Pass => "PASS",
                Verdict::Fail => "FAIL",
                Verdict::Info => "",
            };
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {result} |",
                row.suite, row.figure, row.value, row.target
            );
        }
        out
    }
}
