//! The request being served, as every layer below the HTTP API sees it: its
//! id (for the detail of an internal error) and its deadline (retries of
//! backend calls stop short of it). The HTTP pipeline sets it for each
//! request (`berth_api::http::scope`); outside a request (the controller,
//! the admin CLI) there is none.

use tokio::time::Instant;

#[derive(Debug, Clone)]
struct Request {
    id: String,
    deadline: Instant,
}

tokio::task_local! {
    static REQUEST: Request;
}

/// Runs `future` as the request `id`, due by `deadline`.
pub async fn serve<F: Future>(id: String, deadline: Instant, future: F) -> F::Output {
    REQUEST.scope(Request { id, deadline }, future).await
}

pub fn request_id() -> Option<String> {
    REQUEST.try_with(|request| request.id.clone()).ok()
}

/// The deadline of the request being served, if any.
pub fn deadline() -> Option<Instant> {
    REQUEST.try_with(|request| request.deadline).ok()
}
