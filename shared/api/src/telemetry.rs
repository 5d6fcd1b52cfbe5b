//! Logging through `tracing`: JSON lines on Lambda (CloudWatch reads them),
//! readable text elsewhere, coloured only on a terminal (log files stay plain).
//! `RUST_LOG` filters; the default is `info`.

use std::io::IsTerminal;

use tracing_subscriber::EnvFilter;

pub fn on_lambda() -> bool {
    std::env::var_os("AWS_LAMBDA_FUNCTION_NAME").is_some()
}

pub fn init() {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::stdout().is_terminal());
    let _already_set = if on_lambda() {
        builder
            .json()
            .flatten_event(true)
            .with_current_span(false)
            .with_target(false)
            .try_init()
    } else {
        builder.try_init()
    };
}
