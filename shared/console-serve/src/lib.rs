//! The web console's assets, served: which file answers which path, with
//! which headers. One piece of code for every place Berth serves the
//! console — `berth-local` (and so `make dev`) today, a Lambda function
//! tomorrow — so that they answer alike.
//!
//! - [`Console::from_dir`] reads a built console (`console/dist`, what
//!   `npm run build` writes) into memory once; [`Console::from_files`]
//!   takes the same files as bytes (e.g. `include_bytes!`).
//! - [`is_console_request`] tells a request for the console (a `GET` or
//!   `HEAD` outside `/api/`) from one for the API: everything else is the
//!   API's to answer, including its `unknownRoute`.
//! - [`Console::respond`] answers a console request: a file of the build
//!   (hashed ones under `/assets/` cached for a year, `immutable`), a
//!   missing one under `/assets/` `404`, any other path `index.html`
//!   (the console routes on the client; never cached without asking
//!   again), always with [`CONTENT_SECURITY_POLICY`] and the other
//!   security headers, and the `.br`/`.gz` file written beside it when the
//!   client accepts that encoding.

use std::collections::HashMap;
use std::path::Path;

use bytes::Bytes;
use http::header::{self, HeaderValue};
use http::{Method, Response, StatusCode};

/// The console's policy: its own scripts, styles, images and API only; no
/// inline script or style, no frames, no plugins, forms only to itself.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'self'; script-src 'self'; \
style-src 'self'; img-src 'self' data:; font-src 'self'; connect-src 'self'; \
object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

/// Hashed assets: their name changes with their content.
const IMMUTABLE: &str = "public, max-age=31536000, immutable";
/// The page and the unhashed files: asked again every time (an ETag-less
/// `no-cache`: small, and a new build must show at once).
const NO_CACHE: &str = "no-cache";

/// The prefix of the hashed assets Vite writes (`build.assetsDir`).
pub const ASSETS_PREFIX: &str = "/assets/";

/// A built file: its bytes and those of its compressed copies.
#[derive(Clone, Debug)]
struct File {
    identity: Bytes,
    gzip: Option<Bytes>,
    brotli: Option<Bytes>,
}

/// A built console, in memory: files by path (`/index.html`,
/// `/assets/index-3f2a1b.js`).
#[derive(Clone, Debug)]
pub struct Console {
    files: HashMap<String, File>,
}

/// Whether the API or the console answers a request: the console answers
/// `GET` and `HEAD` outside `/api/` (and `/api` itself); the API all the rest.
pub fn is_console_request(method: &Method, path: &str) -> bool {
    (method == Method::GET || method == Method::HEAD)
        && !(path == "/api" || path.starts_with("/api/"))
}

impl Console {
    /// Reads every file under DIR (the build's output, e.g. `console/dist`).
    /// Fails when DIR has no `index.html`.
    pub fn from_dir(dir: &Path) -> std::io::Result<Console> {
        let mut files = Vec::new();
        read_tree(dir, dir, &mut files)?;
        Console::from_files(files).ok_or_else(|| {
            std::io::Error::new(
                std::io::ErrorKind::NotFound,
                format!(
                    "{} has no index.html: build the console (npm run build)",
                    dir.display()
                ),
            )
        })
    }

    /// The console from its files: (path relative to the build's root,
    /// with `/` separators, bytes), compressed copies (`NAME.gz`,
    /// `NAME.br`) included. None without an `index.html`.
    pub fn from_files<P: AsRef<str>, B: Into<Bytes>>(
        files: impl IntoIterator<Item = (P, B)>,
    ) -> Option<Console> {
        let mut plain = HashMap::new();
        let mut compressed = HashMap::new();
        for (path, bytes) in files {
            let path = format!("/{}", path.as_ref().trim_start_matches('/'));
            let bytes = bytes.into();
            if let Some(base) = path.strip_suffix(".gz") {
                compressed.insert((base.to_owned(), "gzip"), bytes);
            } else if let Some(base) = path.strip_suffix(".br") {
                compressed.insert((base.to_owned(), "br"), bytes);
            } else {
                plain.insert(path, bytes);
            }
        }
        plain.contains_key("/index.html").then(|| Console {
            files: plain
                .into_iter()
                .map(|(path, identity)| {
                    let gzip = compressed.remove(&(path.clone(), "gzip"));
                    let brotli = compressed.remove(&(path.clone(), "br"));
                    (
                        path,
                        File {
                            identity,
                            gzip,
                            brotli,
                        },
                    )
                })
                .collect(),
        })
    }

    /// The answer to a console request (see [`is_console_request`]):
    /// METHOD, the request's PATH (without its query) and its
    /// `Accept-Encoding`, if any. `HEAD` answers the headers of `GET`
    /// with an empty body.
    pub fn respond(
        &self,
        method: &Method,
        path: &str,
        accept_encoding: Option<&HeaderValue>,
    ) -> Response<Bytes> {
        let (path, file) = match self.files.get(path) {
            Some(file) if path != "/index.html" => (path, file),
            _ if path.starts_with(ASSETS_PREFIX) => return not_found(),
            _ => ("/index.html", &self.files["/index.html"]),
        };
        let accepted = |coding: &str| {
            accept_encoding
                .and_then(|value| value.to_str().ok())
                .is_some_and(|value| accepts(value, coding))
        };
        let (body, encoding) = match (&file.brotli, &file.gzip) {
            (Some(brotli), _) if accepted("br") => (brotli.clone(), Some("br")),
            (_, Some(gzip)) if accepted("gzip") => (gzip.clone(), Some("gzip")),
            _ => (file.identity.clone(), None),
        };
        let cache = if path.starts_with(ASSETS_PREFIX) {
            IMMUTABLE
        } else {
            NO_CACHE
        };
        let mut response = Response::builder()
            .status(StatusCode::OK)
            .header(header::CONTENT_TYPE, content_type(path))
            .header(header::CACHE_CONTROL, cache)
            .header(header::CONTENT_LENGTH, body.len());
        if let Some(encoding) = encoding {
            response = response.header(header::CONTENT_ENCODING, encoding);
        }
        if file.gzip.is_some() || file.brotli.is_some() {
            response = response.header(header::VARY, "Accept-Encoding");
        }
        let body = if method == Method::HEAD {
            Bytes::new()
        } else {
            body
        };
        with_security_headers(response.body(body).expect("valid headers"))
    }

    /// The console's answer to REQUEST, or None when the request is the
    /// API's ([`is_console_request`]): what a server in front of the API
    /// calls first (berth-local; a Lambda function serving the console).
    pub fn answer<B>(&self, request: &http::Request<B>) -> Option<Response<Bytes>> {
        let (method, path) = (request.method(), request.uri().path());
        is_console_request(method, path)
            .then(|| self.respond(method, path, request.headers().get(header::ACCEPT_ENCODING)))
    }

    /// The paths of the files served (compressed copies aside), sorted.
    pub fn paths(&self) -> Vec<&str> {
        let mut paths: Vec<&str> = self.files.keys().map(String::as_str).collect();
        paths.sort_unstable();
        paths
    }
}

/// Whether an `Accept-Encoding` value accepts CODING (not with `q=0`).
fn accepts(value: &str, coding: &str) -> bool {
    value.split(',').any(|item| {
        let mut parts = item.split(';').map(str::trim);
        let name = parts.next().unwrap_or_default();
        let refused = parts.any(|param| {
            param
                .strip_prefix("q=")
                .and_then(|q| q.parse::<f32>().ok())
                .is_some_and(|q| q == 0.0)
        });
        name.eq_ignore_ascii_case(coding) && !refused
    })
}

fn not_found() -> Response<Bytes> {
    let response = Response::builder()
        .status(StatusCode::NOT_FOUND)
        .header(header::CONTENT_TYPE, "text/plain; charset=utf-8")
        .header(header::CACHE_CONTROL, NO_CACHE)
        .body(Bytes::from_static(b"not found\n"))
        .expect("valid headers");
    with_security_headers(response)
}

fn with_security_headers(mut response: Response<Bytes>) -> Response<Bytes> {
    let headers = response.headers_mut();
    for (name, value) in [
        (header::CONTENT_SECURITY_POLICY, CONTENT_SECURITY_POLICY),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        (header::X_FRAME_OPTIONS, "DENY"),
        (header::REFERRER_POLICY, "same-origin"),
    ] {
        headers.insert(name, HeaderValue::from_static(value));
    }
    response
}

/// The content type of a built file, by its extension.
pub fn content_type(path: &str) -> &'static str {
    match path.rsplit_once('.').map(|(_, extension)| extension) {
        Some("html") => "text/html; charset=utf-8",
        Some("js" | "mjs") => "text/javascript; charset=utf-8",
        Some("css") => "text/css; charset=utf-8",
        Some("svg") => "image/svg+xml",
        Some("png") => "image/png",
        Some("ico") => "image/x-icon",
        Some("json") => "application/json",
        Some("webmanifest") => "application/manifest+json",
        Some("txt") => "text/plain; charset=utf-8",
        Some("woff2") => "font/woff2",
        _ => "application/octet-stream",
    }
}

fn read_tree(root: &Path, dir: &Path, files: &mut Vec<(String, Vec<u8>)>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let path = entry.path();
        if entry.file_type()?.is_dir() {
            read_tree(root, &path, files)?;
        } else {
            let relative = path.strip_prefix(root).expect("under the root");
            let name = relative
                .components()
                .map(|part| part.as_os_str().to_string_lossy())
                .collect::<Vec<_>>()
                .join("/");
            // Build bookkeeping (e.g. the inputs' stamp) is not served.
            if !name.starts_with('.') {
                files.push((name, std::fs::read(&path)?));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn console() -> Console {
        Console::from_files([
            ("index.html", &b"<!doctype html>"[..]),
            ("index.html.gz", b"gz-index"),
            ("assets/index-abc123.js", b"js"),
            ("assets/index-abc123.js.br", b"br-js"),
            ("assets/index-abc123.js.gz", b"gz-js"),
            ("favicon.svg", b"<svg/>"),
        ])
        .unwrap()
    }

    #[test]
    fn only_gets_outside_the_api_are_the_consoles() {
        assert!(is_console_request(&Method::GET, "/"));
        assert!(is_console_request(&Method::HEAD, "/orgs/x"));
        assert!(is_console_request(&Method::GET, "/apiary"));
        assert!(!is_console_request(&Method::GET, "/api/v1/nope"));
        assert!(!is_console_request(&Method::GET, "/api"));
        assert!(!is_console_request(&Method::POST, "/"));
    }

    #[test]
    fn pages_are_the_index_asked_again_and_assets_are_immutable() {
        let console = console();
        for path in ["/", "/projects/web/environments/prod", "/index.html"] {
            let page = console.respond(&Method::GET, path, None);
            assert_eq!(page.status(), 200);
            assert_eq!(page.body().as_ref(), b"<!doctype html>");
            assert_eq!(page.headers()[header::CACHE_CONTROL], "no-cache");
            assert_eq!(
                page.headers()[header::CONTENT_TYPE],
                "text/html; charset=utf-8"
            );
            assert_eq!(
                page.headers()[header::CONTENT_SECURITY_POLICY],
                CONTENT_SECURITY_POLICY
            );
        }
        let script = console.respond(&Method::GET, "/assets/index-abc123.js", None);
        assert_eq!(script.headers()[header::CACHE_CONTROL], IMMUTABLE);
        assert_eq!(
            script.headers()[header::CONTENT_TYPE],
            "text/javascript; charset=utf-8"
        );
        assert_eq!(
            console
                .respond(&Method::GET, "/assets/gone-1.js", None)
                .status(),
            404
        );
        let icon = console.respond(&Method::GET, "/favicon.svg", None);
        assert_eq!(icon.headers()[header::CACHE_CONTROL], "no-cache");
        assert!(CONTENT_SECURITY_POLICY.contains("frame-ancestors 'none'"));
        assert!(!CONTENT_SECURITY_POLICY.contains("unsafe"));
    }

    #[test]
    fn compressed_copies_as_accepted() {
        let console = console();
        let path = "/assets/index-abc123.js";
        let br = console.respond(
            &Method::GET,
            path,
            Some(&HeaderValue::from_static("gzip, deflate, br")),
        );
        assert_eq!(br.body().as_ref(), b"br-js");
        assert_eq!(br.headers()[header::CONTENT_ENCODING], "br");
        assert_eq!(br.headers()[header::VARY], "Accept-Encoding");
        let gz = console.respond(
            &Method::GET,
            path,
            Some(&HeaderValue::from_static("gzip, br;q=0")),
        );
        assert_eq!(gz.headers()[header::CONTENT_ENCODING], "gzip");
        let plain = console.respond(&Method::GET, path, None);
        assert_eq!(plain.body().as_ref(), b"js");
        assert!(plain.headers().get(header::CONTENT_ENCODING).is_none());
        let head = console.respond(&Method::HEAD, "/", Some(&HeaderValue::from_static("gzip")));
        assert!(head.body().is_empty());
        assert_eq!(head.headers()[header::CONTENT_LENGTH], "8");
    }

    #[test]
    fn answers_only_the_consoles_requests() {
        let console = console();
        let page = http::Request::get("/projects/web?x=1").body(()).unwrap();
        assert_eq!(console.answer(&page).unwrap().status(), 200);
        let api = http::Request::get("/api/v1/me").body(()).unwrap();
        assert!(console.answer(&api).is_none());
        let post = http::Request::post("/").body(()).unwrap();
        assert!(console.answer(&post).is_none());
    }

    #[test]
    fn no_console_without_an_index() {
        assert!(Console::from_files([("assets/a.js", &b""[..])]).is_none());
    }
}
