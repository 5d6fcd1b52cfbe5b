//! The `members` Lambda function: Berth's shared runtime running this group's router.

#[tokio::main]
async fn main() -> std::process::ExitCode {
    berth_api::runtime::run_function("members", berth_fn_members::router).await
}
