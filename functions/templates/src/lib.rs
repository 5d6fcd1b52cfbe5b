//! The `templates` function: the template catalogue, and deploying a
//! template into an environment. The rules live in `berth_api::templates`.

use axum::Json;

use berth_api::ApiError;
use berth_api::apps::hosts::HostRules;
use berth_api::http::{Call, Caller, Created, JsonBody};
use berth_api::openapi::cluster_failures;
use berth_api::templates;
use berth_domain::Operation;
use berth_domain::paths::TemplatePath;
use berth_records::templates::{DeployBody, Deployed, TemplateRecord};

berth_api::operations! {
    tag: "templates",
    failures: failures,
    finish: finish,
    handlers: [
        list_templates,
        deploy_template,
    ],
}

/// What the annotations cannot say. The catalogue ships
/// with the code, so a template's name is one of its names.
fn finish(api: &mut utoipa::openapi::OpenApi) {
    use utoipa::openapi::schema::{ObjectBuilder, Type};
    let names: Vec<String> = templates::list().into_iter().map(|t| t.name).collect();
    let parameters = api
        .paths
        .paths
        .values_mut()
        .filter_map(|item| item.post.as_mut())
        .flat_map(|operation| operation.parameters.iter_mut().flatten());
    for parameter in parameters.filter(|parameter| parameter.name == "template") {
        parameter.schema = Some(
            ObjectBuilder::new()
                .schema_type(Type::String)
                .enum_values(Some(names.clone()))
                .into(),
        );
    }
    // The body may be left out.
    berth_api::openapi::optional_body(api, Operation::DeployTemplate);
}

fn failures(operation: Operation) -> Vec<ApiError> {
    match operation {
        Operation::DeployTemplate => {
            let mut failures = cluster_failures(true);
            failures.push(ApiError::ValidationFailed(String::new()));
            failures.push(ApiError::EnvironmentDeleting);
            failures.extend(berth_api::openapi::namespace_failures());
            failures
        }
        _ => Vec::new(),
    }
}

/// List templates
///
/// The catalogue of ready-made apps that ships with Berth.
#[utoipa::path(
    get,
    path = "/api/v1/templates",
    responses((status = 200, description = "The catalogue.", body = Vec<TemplateRecord>)),
)]
async fn list_templates(_caller: Caller) -> Json<Vec<TemplateRecord>> {
    Json(templates::list())
}

/// Deploy a template
///
/// Creates the template's apps in the environment, with generated values
/// kept in a secret. The body is optional.
#[utoipa::path(
    post,
    path = "/api/v1/projects/{project}/environments/{environment}/templates/{template}",
    params(TemplatePath),
    request_body(content = DeployBody, description = "Optional: another app name, and \
        values for the template's variables."),
    responses((status = 201, description = "Deployed.", body = Deployed)),
)]
async fn deploy_template(
    call: Call<TemplatePath>,
    body: Option<JsonBody<DeployBody>>,
) -> Result<Created<Deployed>, ApiError> {
    let body = body.map(|JsonBody(body)| body).unwrap_or_default();
    let (client, rules) = (call.cluster().await?, HostRules::new(&call.state.config));
    let (store, caller) = (&call.state.store, &call.caller);
    let deployed = templates::deploy(store, &client, &rules, caller, &call.path, body).await?;
    Ok(Created::new(deployed))
}
