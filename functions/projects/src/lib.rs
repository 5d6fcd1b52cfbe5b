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

use berth_api::ApiError;
use berth_api::AppState;
use berth_api::http::{Accepted, Call, Caller, Created, JsonBody, Located, Root, scope};
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
async fn list_projects(call: Call) -> Result<Json<Vec<ProjectRecord>>, ApiError> {
    let caller = &call.caller;
    let mut records = projects::list(&call.cluster().await?, caller).await?;
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
    call: Call,
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
    let new = projects::validate(new, &call.state.config.reserved_namespaces)?;
    let client = call.cluster().await?;
    let created = projects::create(&client, &call.caller.user.org, new).await?;
    scope::audit_project(&created.name);
    Ok(Created::at(Root.child("projects", &created.name), created))
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
async fn get_project(call: Call<ProjectPath>) -> Result<Json<ProjectRecord>, ApiError> {
    let client = call.cluster().await?;
    Ok(Json(
        projects::get(&client, &call.caller, &call.path.project).await?,
    ))
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
async fn delete_project(call: Call<ProjectPath>) -> Result<Accepted<ProjectRecord>, ApiError> {
    let (client, org, project) = (
        call.cluster().await?,
        &call.caller.user.org,
        &call.path.project,
    );
    let identity = projects::identify(&client, org, project).await?;
    let deleted = projects::delete(&client, org, project).await?;
    forget(&call.state, &call.caller, &identity).await;
    Ok(Accepted::new(deleted))
}

/// The project the call names, as the cluster knows it: its uid, which
/// its members' roles and its deploy tokens name.
async fn identify<P>(
    call: &Call<P>,
    project: &ProjectName,
) -> Result<projects::ProjectIdentity, ApiError> {
    projects::identify(&call.cluster().await?, &call.caller.user.org, project).await
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
