//! The cold-start baseline: a bare lambda_http function with one axum route,
//! nothing else. `benches/cold_start.rs` compares Berth's functions with it.

use axum::Router;
use axum::routing::get;

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    let app = Router::new().route("/", get(|| async { "ok" }));
    lambda_http::run(app).await
}
