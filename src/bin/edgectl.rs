//! `edgectl`: a command-line client of the Edge Platform API.

use std::process::ExitCode;

use clap::Parser;
use edge_operator::cli::args::Cli;
use edge_operator::cli::commands;

#[tokio::main]
async fn main() -> ExitCode {
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
