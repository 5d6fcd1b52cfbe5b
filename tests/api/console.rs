//! The web console beside the API (docs/console.md): `GET`s outside
//! `/api/` are the console's page or files, never audit events; everything
//! under `/api/` answers as before, `unknownRoute` included.

use std::sync::Arc;

use berth_console_serve::{CONTENT_SECURITY_POLICY, Console};
use http::{Method, header};

use crate::support::TestApp;

async fn with_console() -> TestApp {
    let mut app = TestApp::new().await;
    let console = Console::from_files([
        ("index.html", &b"<!doctype html><title>Berth</title>"[..]),
        ("assets/index-0a1b2c3d.js", b"console.log(1)"),
        ("assets/index-0a1b2c3d.js.gz", b"gzipped"),
    ])
    .expect("an index");
    app.app = berth_local::app_with_console(app.state.clone(), Some(Arc::new(console)));
    app
}

#[tokio::test]
async fn pages_and_assets_are_the_consoles_and_never_audited() {
    let app = with_console().await;
    let before = (
        app.audit_events("acme").await.len(),
        app.audit_events(berth_store::keys::SYSTEM_ORG).await.len(),
    );
    for path in [
        "/",
        "/projects/shop/environments/staging/apps/web",
        "/signin?next=/audit",
    ] {
        let page = app.get(path).by(&app.owner).send().await;
        page.assert_status(200);
        assert_eq!(page.text(), "<!doctype html><title>Berth</title>", "{path}");
        assert_eq!(
            page.headers[header::CONTENT_TYPE],
            "text/html; charset=utf-8"
        );
        assert_eq!(page.headers[header::CACHE_CONTROL], "no-cache");
        assert_eq!(
            page.headers[header::CONTENT_SECURITY_POLICY],
            CONTENT_SECURITY_POLICY
        );
    }
    let script = app
        .get("/assets/index-0a1b2c3d.js")
        .header("accept-encoding", "gzip, br")
        .send()
        .await;
    script.assert_status(200);
    assert_eq!(script.text(), "gzipped");
    assert_eq!(script.headers[header::CONTENT_ENCODING], "gzip");
    assert_eq!(
        script.headers[header::CACHE_CONTROL],
        "public, max-age=31536000, immutable"
    );
    app.get("/assets/index-gone.js")
        .send()
        .await
        .assert_status(404);
    let head = app.request(Method::HEAD, "/").send().await;
    head.assert_status(200);
    assert!(head.body.is_empty());
    let after = (
        app.audit_events("acme").await.len(),
        app.audit_events(berth_store::keys::SYSTEM_ORG).await.len(),
    );
    assert_eq!(before, after, "the console's GETs are no API operation");
}

#[tokio::test]
async fn the_api_answers_as_without_the_console() {
    let app = with_console().await;
    app.get("/api/v1/nowhere")
        .send()
        .await
        .assert_problem(404, "not_found");
    app.get("/api")
        .send()
        .await
        .assert_problem(404, "not_found");
    let event = app.last_audit_event(berth_store::keys::SYSTEM_ORG).await;
    assert_eq!(event.action, "unknownRoute");
    app.request(Method::POST, "/")
        .send()
        .await
        .assert_problem(404, "not_found");
    app.get("/api/v1/healthz").send().await.assert_status(200);
    let me = app.get("/api/v1/me").by(&app.owner).send().await;
    me.assert_status(200);
    assert!(me.headers.get(header::CONTENT_SECURITY_POLICY).is_none());
}
