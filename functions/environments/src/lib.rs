//! The `environments` function: the environments of a project.

use axum::Json;

use berth_api::ApiError;
use berth_api::environments::{self, NewEnvironment};
use berth_api::http::call::Target;
use berth_api::http::{Accepted, Call, Created, JsonBody, Located, ObjectPath};
use berth_api::openapi::cluster_failures;
use berth_domain::Operation;
use berth_domain::names::EnvironmentName;
use berth_domain::paths::{EnvironmentPath, ProjectPath};
use berth_records::environments::{CreateBody, EnvironmentRecord};

berth_api::operations! {
    tag: "environments",
    failures: failures,
    handlers: [
        list_environments,
        create_environment,
        get_environment,
        delete_environment,
        restore_environment,
    ],
}

fn failures(operation: Operation) -> Vec<ApiError> {
    let mut failures = cluster_failures(matches!(
        operation,
        Operation::CreateEnvironment | Operation::DeleteEnvironment | Operation::RestoreEnvironment
    ));
    match operation {
        Operation::CreateEnvironment => {
            failures.push(ApiError::ValidationFailed(String::new()));
            // Over a namespace Berth did not make.
            failures.push(ApiError::NamespaceTaken(String::new()));
        }
        // A production environment needs `env-delete-protected`.
        Operation::DeleteEnvironment => failures.push(ApiError::Forbidden(String::new())),
        _ => {}
    }
    failures
}

/// List environments
///
/// The environments of a project.
#[utoipa::path(
    get,
    path = "/api/v1/projects/{project}/environments",
    params(ProjectPath),
    responses((status = 200, description = "The environments.", body = Vec<EnvironmentRecord>)),
)]
async fn list_environments(
    call: Call<ProjectPath>,
) -> Result<Json<Vec<EnvironmentRecord>>, ApiError> {
    let client = call.cluster().await?;
    Ok(Json(
        environments::list(&client, &call.caller, &call.path.project).await?,
    ))
}

/// Create an environment
///
/// A namespace for the project's apps, with an optional resource quota.
/// Every environment's storage is bounded (1Ti and 20 volumes unless the
/// quota says otherwise; at most 10Ti and 100), and its pods admit traffic
/// only from the same environment and the platform's ingress.
#[utoipa::path(
    post,
    path = "/api/v1/projects/{project}/environments",
    params(ProjectPath),
    request_body = CreateBody,
    responses((status = 201, description = "Created.", body = EnvironmentRecord,
        headers(("Location" = String, description = "The new environment's URL.")))),
)]
async fn create_environment(
    call: Call,
    ObjectPath(project): ObjectPath<ProjectPath>,
    JsonBody(body): JsonBody<CreateBody>,
) -> Result<Created<EnvironmentRecord>, ApiError> {
    if let Ok(environment) = EnvironmentName::parse(&body.name) {
        let project = project.project.clone();
        EnvironmentPath {
            project,
            environment,
        }
        .note();
    }
    let new = NewEnvironment {
        name: body.name,
        env_type: body.env_type,
        quota: body.quota,
    };
    let reserved = &call.state.config.reserved_namespaces;
    let new = environments::validate(&project.project, new, reserved)?;
    let client = call.cluster().await?;
    let created = environments::create(&client, &call.caller.user.org, new).await?;
    Ok(Created::at(
        project.child("environments", &created.name),
        created,
    ))
}

/// Get an environment
///
/// One environment, with its phase.
#[utoipa::path(
    get,
    path = "/api/v1/projects/{project}/environments/{environment}",
    params(EnvironmentPath),
    responses((status = 200, description = "The environment.", body = EnvironmentRecord)),
)]
async fn get_environment(call: Call<EnvironmentPath>) -> Result<Json<EnvironmentRecord>, ApiError> {
    let client = call.cluster().await?;
    Ok(Json(
        environments::get(&client, &call.caller.user.org, &call.path).await?,
    ))
}

/// Delete an environment
///
/// Soft delete: a production environment is purged after its grace period,
/// others at once. Once the purge is done, what its apps kept besides (their
/// release histories, hostname claims and webhooks) goes too, within
/// minutes.
#[utoipa::path(
    delete,
    path = "/api/v1/projects/{project}/environments/{environment}",
    params(EnvironmentPath),
    responses((status = 202, description = "Scheduled for deletion: `deleting` true and \
        `deletion_scheduled_at` set.", body = EnvironmentRecord)),
)]
async fn delete_environment(
    call: Call<EnvironmentPath>,
) -> Result<Accepted<EnvironmentRecord>, ApiError> {
    let client = call.cluster().await?;
    let (state, caller) = (&call.state, &call.caller);
    let grace = state.config.production_grace;
    let deleted = environments::delete(&state.store, &client, caller, &call.path, grace).await?;
    Ok(Accepted::new(deleted))
}

/// Restore a deleted environment
///
/// Cancels the scheduled purge of a deleted environment and brings it back
/// with everything in it. An environment that is not being deleted is
/// answered as it is; one whose purge has begun or is due is `409`.
#[utoipa::path(
    post,
    path = "/api/v1/projects/{project}/environments/{environment}/restore",
    params(EnvironmentPath),
    responses((status = 200, description = "The environment, no longer deleting.",
        body = EnvironmentRecord)),
)]
async fn restore_environment(
    call: Call<EnvironmentPath>,
) -> Result<Json<EnvironmentRecord>, ApiError> {
    let client = call.cluster().await?;
    Ok(Json(
        environments::restore(&client, &call.caller, &call.path).await?,
    ))
}
