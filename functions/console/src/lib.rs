//! The `console` Lambda function: the web console, built and embedded in
//! the binary (`build.rs`), served by the same code as `berth-local`'s
//! ([`berth_console_serve`]) through the API's own gateway, so the console
//! and `/api/v1` share one origin and its session cookie
//! (docs/console.md, "Served on AWS").
//!
//! API Gateway sends it `GET` and `HEAD` of `/` and `/{proxy+}` only; every
//! path under `/api/` reaches the API's functions (`template.yaml`), so an
//! unknown one is still the API's audited `unknownRoute`. It reads no table
//! and writes no audit event: no API operation is called.

use bytes::Bytes;
use http::{HeaderValue, Request, Response, StatusCode, header};

use berth_console_serve::{Console, is_console_request};

mod embedded {
    include!(concat!(env!("OUT_DIR"), "/console_files.rs"));
}

/// The console this binary was built with; none when it was built without
/// one (see `build.rs`).
pub fn embedded() -> Option<Console> {
    Console::from_files(
        embedded::FILES
            .iter()
            .map(|(path, bytes)| (*path, Bytes::from_static(bytes))),
    )
}

/// The answer to one request: the console's, when it is one of the
/// console's and there is a console; else a Problem Details error.
pub fn answer<B>(console: Option<&Console>, request: &Request<B>) -> Response<Bytes> {
    let answered = match console {
        Some(console) => console.answer(request),
        None if is_console_request(request.method(), request.uri().path()) => {
            return problem(
                StatusCode::SERVICE_UNAVAILABLE,
                "consoleNotBuilt",
                "The console is not in this package",
                "This function was built without the web console: `make package` builds it first (scripts/console.sh build).",
            );
        }
        None => None,
    };
    // None: the API's request, which the gateway's routes never send here;
    // said as the API says an unknown route.
    answered.unwrap_or_else(|| {
        problem(
            StatusCode::NOT_FOUND,
            "unknownRoute",
            "Not Found",
            "No such route: the API's paths are under /api/v1.",
        )
    })
}

fn problem(status: StatusCode, code: &str, title: &str, detail: &str) -> Response<Bytes> {
    let body = format!(
        r#"{{"type":"about:blank","title":{title:?},"status":{},"detail":{detail:?},"code":{code:?}}}"#,
        status.as_u16()
    );
    let mut response = Response::new(Bytes::from(body));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/problem+json"),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::Method;

    fn get(method: Method, path: &str) -> Request<()> {
        Request::builder()
            .method(method)
            .uri(path)
            .body(())
            .unwrap()
    }

    fn console() -> Console {
        Console::from_files([
            (
                "index.html",
                Bytes::from_static(b"<!doctype html><title>Berth</title>"),
            ),
            (
                "assets/index-abc123.js",
                Bytes::from_static(b"console.log(1)"),
            ),
        ])
        .expect("a console")
    }

    #[test]
    fn a_page_of_the_console_is_its_index_with_its_policy() {
        let console = console();
        let page = answer(Some(&console), &get(Method::GET, "/projects/shop"));
        assert_eq!(page.status(), StatusCode::OK);
        assert!(page.body().starts_with(b"<!doctype html>"));
        let policy = page.headers()[header::CONTENT_SECURITY_POLICY]
            .to_str()
            .unwrap();
        assert!(policy.contains("frame-ancestors 'none'"), "{policy}");
        let asset = answer(Some(&console), &get(Method::GET, "/assets/index-abc123.js"));
        assert_eq!(asset.body().as_ref(), b"console.log(1)");
        let missing = answer(Some(&console), &get(Method::GET, "/assets/gone.js"));
        assert_eq!(missing.status(), StatusCode::NOT_FOUND);
    }

    /// Whatever this build embedded (`build.rs`: `console/dist` when it was
    /// built, `BERTH_CONSOLE_DIR`), it is a console serving its own index.
    #[test]
    fn what_the_build_embedded_is_served() {
        match embedded() {
            Some(console) => {
                let page = answer(Some(&console), &get(Method::GET, "/"));
                assert_eq!(page.status(), StatusCode::OK);
                assert!(!page.body().is_empty());
            }
            None => assert!(
                !embedded::FILES
                    .iter()
                    .any(|(path, _)| *path == "index.html"),
                "an index.html was embedded but no console made of it"
            ),
        }
    }

    #[test]
    fn the_apis_paths_and_a_missing_console_are_problems() {
        let console = console();
        let api = answer(Some(&console), &get(Method::GET, "/api/v1/nope"));
        assert_eq!(api.status(), StatusCode::NOT_FOUND);
        assert!(
            std::str::from_utf8(api.body())
                .unwrap()
                .contains("unknownRoute")
        );
        let posted = answer(Some(&console), &get(Method::POST, "/projects"));
        assert_eq!(posted.status(), StatusCode::NOT_FOUND);
        let unbuilt = answer(None, &get(Method::GET, "/"));
        assert_eq!(unbuilt.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(
            unbuilt.headers()[header::CONTENT_TYPE],
            "application/problem+json"
        );
    }
}
