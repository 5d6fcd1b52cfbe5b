//! The `registry` Lambda function: Berth's shared runtime running this group's router.

#[tokio::main]
async fn main() -> std::process::ExitCode {
    berth_api::runtime::run_function("registry", berth_fn_registry::router).await
}
