//! The permission matrix: every operation of this API × each role, no
//! credentials, and the owner of another organization.

use http::Method;
use serde_json::{Value, json};

use crate::support::{TestApp, TestUser};
use berth_shared::Role;

/// Who calls, in the order of the expectations below.
const CALLERS: [&str; 7] = [
    "viewer",
    "operator",
    "developer",
    "admin",
    "owner",
    "anonymous",
    "other-org",
];

struct Case {
    operation: &'static str,
    method: Method,
    /// The path, given a fresh viewer of `acme` to act on where one is needed.
    path: fn(&TestUser) -> String,
    body: Option<fn() -> Value>,
    expected: [u16; 7],
}

fn cases() -> Vec<Case> {
    vec![
        Case {
            operation: "getCurrentUser",
            method: Method::GET,
            path: |_| "/api/v1/me".into(),
            body: None,
            expected: [200, 200, 200, 200, 200, 401, 200],
        },
        // A wrong current password: 422 shows the call got past authorization.
        Case {
            operation: "changePassword",
            method: Method::POST,
            path: |_| "/api/v1/me/password".into(),
            body: Some(
                || json!({ "current_password": "not my password", "new_password": "whatever comes next" }),
            ),
            expected: [422, 422, 422, 422, 422, 401, 422],
        },
        Case {
            operation: "logout",
            method: Method::POST,
            path: |_| "/api/v1/auth/logout".into(),
            body: None,
            expected: [204, 204, 204, 204, 204, 401, 204],
        },
        Case {
            operation: "listTokens",
            method: Method::GET,
            path: |_| "/api/v1/tokens".into(),
            body: None,
            expected: [200, 200, 200, 200, 200, 401, 200],
        },
        Case {
            operation: "createToken",
            method: Method::POST,
            path: |_| "/api/v1/tokens".into(),
            body: Some(|| json!({ "name": "matrix" })),
            expected: [201, 201, 201, 201, 201, 401, 201],
        },
        Case {
            operation: "deleteToken",
            method: Method::DELETE,
            path: |_| "/api/v1/tokens/nosuchtoken0".into(),
            body: None,
            expected: [404, 404, 404, 404, 404, 401, 404],
        },
        Case {
            operation: "listMembers",
            method: Method::GET,
            path: |_| "/api/v1/members".into(),
            body: None,
            expected: [200, 200, 200, 200, 200, 401, 200],
        },
        Case {
            operation: "inviteMember",
            method: Method::POST,
            path: |_| "/api/v1/members".into(),
            body: Some(
                || json!({ "email": format!("{}@example.org", uuid::Uuid::new_v4().simple()), "role": "viewer" }),
            ),
            expected: [403, 403, 403, 201, 201, 401, 201],
        },
        Case {
            operation: "updateMember",
            method: Method::PATCH,
            path: |target| format!("/api/v1/members/{}", target.id),
            body: Some(|| json!({ "role": "operator" })),
            expected: [403, 403, 403, 200, 200, 401, 404],
        },
        Case {
            operation: "removeMember",
            method: Method::DELETE,
            path: |target| format!("/api/v1/members/{}", target.id),
            body: None,
            expected: [403, 403, 403, 204, 204, 401, 404],
        },
        Case {
            operation: "listAuditEvents",
            method: Method::GET,
            path: |_| "/api/v1/audit".into(),
            body: None,
            expected: [403, 403, 403, 200, 200, 401, 200],
        },
        Case {
            operation: "getHealthDetails",
            method: Method::GET,
            path: |_| "/api/v1/healthz/details".into(),
            body: None,
            expected: [200, 200, 200, 200, 200, 401, 200],
        },
        Case {
            operation: "getHealth",
            method: Method::GET,
            path: |_| "/api/v1/healthz".into(),
            body: None,
            expected: [200, 200, 200, 200, 200, 200, 200],
        },
    ]
}

#[tokio::test]
async fn every_operation_for_every_kind_of_caller() {
    let app = TestApp::new().await;
    let mut callers: Vec<Option<TestUser>> = Vec::new();
    for role in [Role::Viewer, Role::Operator, Role::Developer, Role::Admin] {
        callers.push(Some(app.user(role).await));
    }
    callers.push(Some(app.owner.clone()));
    callers.push(None);
    callers.push(Some(app.other_org("umbrella").await));

    let mut failures = Vec::new();
    for case in cases() {
        for (index, caller) in callers.iter().enumerate() {
            let target = app.user(Role::Viewer).await;
            let mut request = app.request(case.method.clone(), &(case.path)(&target));
            if let Some(user) = caller {
                request = request.by(user);
            }
            if let Some(body) = case.body {
                request = request.json(body());
            }
            let response = request.send().await;
            let want = case.expected[index];
            if response.status.as_u16() != want {
                failures.push(format!(
                    "{} as {}: want {want}, got {} {}",
                    case.operation,
                    CALLERS[index],
                    response.status,
                    response.text()
                ));
            } else if want >= 400 {
                let code = response.json()["code"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned();
                let expected_code = match want {
                    401 => "unauthenticated",
                    403 => "forbidden",
                    404 => "not_found",
                    422 => "validation_failed",
                    _ => unreachable!(),
                };
                if code != expected_code {
                    failures.push(format!(
                        "{} as {}: code {code}, want {expected_code}",
                        case.operation, CALLERS[index]
                    ));
                }
            }
            let event = app
                .last_audit_event(match caller {
                    Some(user) => user.org.as_str(),
                    None => berth_shared::store::keys::SYSTEM_ORG,
                })
                .await;
            if event.action != case.operation || event.status != Some(want) {
                failures.push(format!(
                    "{} as {}: audit recorded {} {:?}",
                    case.operation, CALLERS[index], event.action, event.status
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // The matrix changed no one's role where it was refused.
    let members = app
        .get("/api/v1/members")
        .by(&app.owner)
        .send()
        .await
        .json();
    assert!(
        members
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m["role"] == "owner")
    );
}
