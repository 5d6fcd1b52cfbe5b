//! What a client (the CLI) reads: every answer below decodes into its type
//! of `berth-records`, the crate it links without axum, DynamoDB or kube.

use serde::de::DeserializeOwned;
use serde_json::json;

use crate::support::{TestApp, TestResponse};
use berth_domain::Role;
use berth_records::apps::record::{AppDetail, AppRecord, ReleaseRecord};
use berth_records::audit::AuditPage;
use berth_records::auth::Identity;
use berth_records::environments::EnvironmentRecord;
use berth_records::health::Liveness;
use berth_records::members::{MemberRecord, NewMember};
use berth_records::projects::ProjectRecord;
use berth_records::secrets::SecretSummary;
use berth_records::templates::TemplateRecord;
use berth_records::tokens::{CreatedToken, TokenRecord};

fn decoded<T: DeserializeOwned>(answer: &TestResponse) -> T {
    serde_json::from_value(answer.json()).unwrap_or_else(|error| {
        panic!(
            "{} does not decode: {error}\n{}",
            std::any::type_name::<T>(),
            answer.text()
        )
    })
}

#[tokio::test]
async fn a_client_decodes_every_answer_with_the_records_crate() {
    let app = TestApp::with_cluster().await;
    let get = async |path: &str| {
        let answer = app.get(path).by(&app.owner).send().await;
        answer.assert_status(200);
        answer
    };

    let me: Identity = decoded(&get("/api/v1/me").await);
    assert_eq!(me.id, app.owner.id);
    let created = app
        .post("/api/v1/tokens")
        .by(&app.owner)
        .json(json!({"name": "cli"}))
        .send()
        .await;
    created.assert_status(201);
    let token: CreatedToken = decoded(&created);
    let tokens: Vec<TokenRecord> = decoded(&get("/api/v1/tokens").await);
    assert!(tokens.iter().any(|t| t.id == token.record.id));
    let invited = app
        .post("/api/v1/members")
        .by(&app.owner)
        .json(json!({"email": "reader@records.example", "role": Role::Viewer.as_str()}))
        .send()
        .await;
    invited.assert_status(201);
    let invited: NewMember = decoded(&invited);
    let members: Vec<MemberRecord> = decoded(&get("/api/v1/members").await);
    assert!(members.contains(&invited.member));
    let _: Liveness = decoded(&get("/api/v1/healthz").await);

    let project = app.ready_environment("records", "dev").await;
    let _: Vec<ProjectRecord> = decoded(&get("/api/v1/projects").await);
    let environment = format!("/api/v1/projects/{project}/environments/dev");
    let _: EnvironmentRecord = decoded(&get(&environment).await);
    let apps = format!("{environment}/apps");
    app.create_app(&apps, json!({"name": "web", "image": "nginx:1.27", "port": 80, "domains": ["web.records.example"]}))
        .await;
    let detail: AppDetail = decoded(&get(&format!("{apps}/web")).await);
    assert_eq!(detail.app.domains, ["web.records.example"]);
    let _: Vec<AppRecord> = decoded(&get(&apps).await);
    let _: Vec<ReleaseRecord> = decoded(&get(&format!("{apps}/web/releases")).await);
    let _: Vec<SecretSummary> = decoded(&get(&format!("{environment}/secrets")).await);
    let _: Vec<TemplateRecord> = decoded(&get("/api/v1/templates").await);
    let audit: AuditPage = decoded(&get("/api/v1/audit").await);
    assert!(!audit.events.is_empty());
}
