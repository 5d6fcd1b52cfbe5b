//! The `projects` function: the organization's projects, and what belongs
//! to a project as a whole: its members' roles, its deploy tokens, its
//! audit log.

mod audit;
mod deploy_tokens;
mod members;

use audit::*;
use deploy_tokens::*;
use members::*;

use axum::Json;
use axum::extract::State;

use berth_api::ApiError;
use berth_api::AppState;
use berth_api::http::{Accepted, Caller, Created, JsonBody, ObjectPath, scope};
use berth_api::openapi::cluster_failures;
use berth_api::projects::{self, NewProject};
use berth_domain::Operation;
use berth_domain::names::ProjectName;
use berth_domain::paths::ProjectPath;
use berth_records::projects::{CreateBody, ProjectRecord};

berth_api::operations! {
    tag: "projects",
    failures: failures,
    handlers: [
        list_projects,
        create_project,
        get_project,
        delete_project,
        list_project_members,
        set_project_member,
        remove_project_member,
        list_deploy_tokens,
        create_deploy_token,
        delete_deploy_token,
        list_project_audit_events,
    ],
}

fn failures(operation: Operation) -> Vec<ApiError> {
    let mut failures = cluster_failures(operation != Operation::ListProjects);
    match operation {
        Operation::CreateProject => {
            failures.push(ApiError::ValidationFailed(String::new()));
        }
        Operation::DeleteProject => failures.push(ApiError::ProjectNotEmpty(Vec::new())),
        Operation::SetProjectMember | Operation::CreateDeployToken => {
            failures.push(ApiError::ValidationFailed(String::new()));
            failures.push(ApiError::Conflict(String::new()));
        }
        _ => {}
    }
    failures
}

/// List projects
///
/// The projects of the caller's organization that it sees: all of them,
/// or, for a caller limited to some (a scoped token, a member whose
/// organization role is `member`), those.
#[utoipa::path(
    get,
    path = "/api/v1/projects",
    responses((status = 200, description = "The projects.", body = Vec<ProjectRecord>)),
)]
async fn list_projects(
    State(state): State<AppState>,
    caller: Caller,
) -> Result<Json<Vec<ProjectRecord>>, ApiError> {
    let client = state.cluster.client().await?;
    let mut records = projects::list(&client, &caller).await?;
    records.retain(|record| {
        caller.sees_project(
            &record.name,
            record.uid.as_deref(),
            (record.created_at.as_deref()).and_then(berth_domain::clock::parse_rfc3339),
        )
    });
    Ok(Json(records))
}

/// Create a project
///
/// A cluster-wide `Project`; its environments come next.
#[utoipa::path(
    post,
    path = "/api/v1/projects",
    request_body = CreateBody,
    responses((status = 201, description = "Created.", body = ProjectRecord,
        headers(("Location" = String, description = "The new project's URL.")))),
)]
async fn create_project(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(body): JsonBody<CreateBody>,
) -> Result<Created<ProjectRecord>, ApiError> {
    if let Ok(name) = ProjectName::parse(&body.name) {
        scope::audit_target("project", &name);
    }
    let new = NewProject {
        name: body.name,
        display_name: body.display_name,
        description: body.description,
    };
    let new = projects::validate(new, &state.config.reserved_namespaces)?;
    let client = state.cluster.client().await?;
    let created = projects::create(&client, &caller.user.org, new).await?;
    scope::audit_project(&created.name);
    let location = format!("/api/v1/projects/{}", created.name);
    Ok(Created::at(location, created))
}

/// Get a project
///
/// One project of the caller's organization.
#[utoipa::path(
    get,
    path = "/api/v1/projects/{project}",
    params(ProjectPath),
    responses((status = 200, description = "The project.", body = ProjectRecord)),
)]
async fn get_project(
    State(state): State<AppState>,
    caller: Caller,
    ObjectPath(ProjectPath { project }): ObjectPath<ProjectPath>,
) -> Result<Json<ProjectRecord>, ApiError> {
    scope::audit_target("project", &project);
    let client = state.cluster.client().await?;
    Ok(Json(projects::get(&client, &caller, &project).await?))
}

/// Delete a project
///
/// Only a project without environments; the cluster removes it.
#[utoipa::path(
    delete,
    path = "/api/v1/projects/{project}",
    params(ProjectPath),
    responses((status = 202, description = "Being deleted: the record, `deleting` true.",
        body = ProjectRecord)),
)]
async fn delete_project(
    State(state): State<AppState>,
    caller: Caller,
    ObjectPath(ProjectPath { project }): ObjectPath<ProjectPath>,
) -> Result<Accepted<ProjectRecord>, ApiError> {
    scope::audit_target("project", &project);
    let client = state.cluster.client().await?;
    let identity = projects::identify(&client, &caller.user.org, &project).await?;
    let deleted = projects::delete(&client, &caller.user.org, &project).await?;
    forget(&state, &caller, &identity).await;
    Ok(Accepted::new(deleted))
}

/// Tidies away what named a deleted project: its members' roles and its
/// deploy tokens. Neither reaches anything once the project is gone (they
/// name its uid, which no other project has), so a failure here only
/// leaves stale records, and is logged.
async fn forget(state: &AppState, caller: &Caller, project: &projects::ProjectIdentity) {
    let roles = berth_store::identity::project_roles::forget_project(
        &state.store,
        &caller.user.org,
        project.granted(),
    );
    let tokens = berth_store::identity::deploy_tokens::forget_project(&state.store, &project.uid);
    let (roles, tokens) = tokio::join!(roles, tokens);
    for (what, outcome) in [("members' roles", roles), ("deploy tokens", tokens)] {
        if let Err(error) = outcome {
            tracing::warn!(project = %project.name, error = %error, "forgetting a deleted project's {what} failed");
        }
    }
}
