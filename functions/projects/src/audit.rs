//! A project's audit log: the events of calls concerning it, for those who
//! may read the audit log in the project only (its admins).

use axum::Json;
use axum::extract::State;

use berth_api::ApiError;
use berth_api::AppState;
use berth_api::http::{Caller, ObjectPath, QueryParams, scope};
use berth_api::projects;
use berth_domain::paths::ProjectPath;
use berth_records::audit::{AuditPage, PageQuery};

/// List a project's audit events
///
/// The events of the calls concerning the project (made on its path, or
/// creating it) since it was made, newest first, paged as the
/// organization's log is, and filtered as it is. An event is shown about
/// eight seconds after its call, once no earlier one can still arrive.
#[utoipa::path(
    get,
    path = "/api/v1/projects/{project}/audit",
    params(ProjectPath, PageQuery),
    responses((status = 200, description = "A page of the project's events.", body = AuditPage)),
)]
pub async fn list_project_audit_events(
    State(state): State<AppState>,
    caller: Caller,
    ObjectPath(ProjectPath { project }): ObjectPath<ProjectPath>,
    QueryParams(query): QueryParams<PageQuery>,
) -> Result<Json<AuditPage>, ApiError> {
    scope::audit_target("project", &project);
    let request = query.checked()?;
    let client = state.cluster.client().await?;
    let project = projects::identify(&client, &caller.user.org, &project).await?;
    Ok(Json(
        state
            .audit
            .project_page(
                caller.user.org.as_str(),
                project.name.as_str(),
                project.created * 1000,
                &request,
            )
            .await?,
    ))
}
