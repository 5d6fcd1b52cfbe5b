//! The `console` Lambda function: the embedded web console, answered with
//! the headers `berth-console-serve` gives every place Berth serves it.

use std::convert::Infallible;
use std::sync::Arc;

use lambda_http::{Body, Request, Response, service_fn};

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    lambda_http::tracing::init_default_subscriber();
    // Built once per cold start: the files are the binary's own bytes.
    let console = berth_fn_console::embedded().map(Arc::new);
    if console.is_none() {
        lambda_http::tracing::warn!("built without the web console: every page answers 503");
    }
    lambda_http::run(service_fn(move |request: Request| {
        let console = console.clone();
        async move {
            let answer = berth_fn_console::answer(console.as_deref(), &request);
            let (parts, bytes) = answer.into_parts();
            // Binary: API Gateway passes it base64-encoded, compressed
            // copies included.
            Ok::<_, Infallible>(Response::from_parts(parts, Body::Binary(bytes.to_vec())))
        }
    }))
    .await
}
