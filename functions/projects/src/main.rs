//! The `projects` Lambda function: Berth's shared runtime running this group's router.

#[tokio::main]
async fn main() -> std::process::ExitCode {
    berth_api::runtime::run_function("projects", berth_fn_projects::router).await
}
