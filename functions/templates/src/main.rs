//! The `templates` Lambda function: Berth's shared runtime running this group's router.

#[tokio::main]
async fn main() -> std::process::ExitCode {
    berth_api::runtime::run_function("templates", berth_fn_templates::router).await
}
