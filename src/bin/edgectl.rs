//! `edgectl`: a command-line client of the Edge Platform API.

use std::process::ExitCode;

use clap::Parser;
use edge_operator::cli::args::Cli;
use edge_operator::cli::commands;

#[tokio::main]
async fn main() -> ExitCode {
    stop_quietly_when_the_reader_goes();
    // Every error exits 1, bad usage included: 2 is `plan`'s "something would change".
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(error) => {
            let _ = error.print();
            return ExitCode::from(u8::from(error.use_stderr()));
        }
    };
    match commands::run(cli).await {
        Ok(code) => ExitCode::from(code),
        Err(failure) => {
            eprintln!("edgectl: {failure}");
            ExitCode::FAILURE
        }
    }
}

/// A reader that goes away (`edgectl completion bash | head -1`) ends edgectl as it ends
/// any Unix tool, by SIGPIPE, with nothing printed: Rust ignores SIGPIPE, so a write to
/// a closed pipe would otherwise fail, and `print!` panic.
#[cfg(unix)]
fn stop_quietly_when_the_reader_goes() {
    // SAFETY: setting a signal's disposition to its default installs no handler; it
    // only undoes the runtime's "ignore", process-wide.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

#[cfg(not(unix))]
fn stop_quietly_when_the_reader_goes() {}
