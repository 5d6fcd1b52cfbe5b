//! The `cleanup` Lambda function: Berth's shared runtime running one sweep
//! per scheduled invocation.

use std::time::Duration;

#[tokio::main]
async fn main() -> std::process::ExitCode {
    berth_api::runtime::run_scheduled("cleanup", Duration::from_secs(600), berth_fn_cleanup::run)
        .await
}
