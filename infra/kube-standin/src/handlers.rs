//! HTTP front: parses Kubernetes API paths, queries and bodies, and calls the verbs.

use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use serde_json::{Value, json};

use crate::discovery;
use crate::logs::{self, LogQuery};
use crate::meta;
use crate::patch::PatchType;
use crate::rbac::{self, Action, Identity};
use crate::registry::ResourceType;
use crate::selector::Filter;
use crate::server::App;
use crate::status::{ApiError, ApiResult};
use crate::verbs::{DeleteOptions, Propagation, Subresource, WriteOptions};
use crate::watch::{self, Start, WatchRequest};

pub fn json_response(code: StatusCode, body: &Value) -> Response {
    let mut resp = (code, body.to_string()).into_response();
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    resp
}

fn ok(body: &Value) -> Response {
    json_response(StatusCode::OK, body)
}

/// Query parameters, in order, percent-decoded.
struct Query(Vec<(String, String)>);

impl Query {
    fn parse(uri: &Uri) -> ApiResult<Self> {
        let raw = uri.query().unwrap_or_default();
        serde_urlencoded::from_str(raw)
            .map(Query)
            .map_err(|e| ApiError::bad_request(format!("invalid query string: {e}")))
    }

    fn get(&self, key: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    fn flag(&self, key: &str) -> bool {
        matches!(self.get(key), Some("true" | "1" | "True"))
    }

    fn number<T: std::str::FromStr>(&self, key: &str) -> ApiResult<Option<T>> {
        match self.get(key).filter(|v| !v.is_empty()) {
            None => Ok(None),
            Some(v) => v
                .parse()
                .map(Some)
                .map_err(|_| ApiError::bad_request(format!("invalid {key}: {v:?}"))),
        }
    }

    fn dry_run(&self) -> bool {
        self.0.iter().any(|(k, v)| k == "dryRun" && v == "All")
    }

    /// Without a `fieldManager`, the write is recorded under the client's `User-Agent`, as a
    /// real API server does.
    fn write_options(&self, headers: &HeaderMap, identity: &Identity) -> WriteOptions {
        let user_agent = headers
            .get(header::USER_AGENT)
            .and_then(|v| v.to_str().ok());
        WriteOptions {
            dry_run: self.dry_run(),
            field_manager: self.get("fieldManager").map(str::to_string),
            user_agent_manager: Some(crate::managed::manager_from_user_agent(user_agent)),
            requester: Some(identity.into()),
            ..WriteOptions::default()
        }
    }

    fn filter(&self) -> ApiResult<Filter> {
        Filter::parse(self.get("labelSelector"), self.get("fieldSelector"))
            .map_err(ApiError::bad_request)
    }
}

/// A request's target, parsed from the path.
struct Target<'a> {
    rt: ResourceType,
    version: &'a str,
    namespace: Option<&'a str>,
    name: Option<&'a str>,
    sub: Option<&'a str>,
}

/// Every Kubernetes API request (everything but the `/_standin` knobs) lands here.
pub async fn dispatch(
    State(app): State<App>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let identity = app.tokens.authenticate(&app.state(), &headers);
    let resp = identity
        .and_then(|identity| route(&app, &identity, &method, &uri, &headers, body))
        .unwrap_or_else(IntoResponse::into_response);
    tracing::debug!(%method, %uri, status = resp.status().as_u16(), "request");
    resp
}

fn get_only(method: &Method) -> ApiResult<()> {
    if method == Method::GET || method == Method::HEAD {
        Ok(())
    } else {
        Err(ApiError::method_not_allowed(format!(
            "{method} is not supported here"
        )))
    }
}

/// Checks a request for a path that names no resource (discovery, `/version`).
fn authorize_path(app: &App, identity: &Identity, method: &Method, uri: &Uri) -> ApiResult<()> {
    let verb = method.as_str().to_ascii_lowercase();
    rbac::authorize(
        &app.state(),
        &app.rbac_uses,
        identity,
        &Action::NonResource {
            verb: &verb,
            path: uri.path(),
        },
    )
}

fn route(
    app: &App,
    identity: &Identity,
    method: &Method,
    uri: &Uri,
    headers: &HeaderMap,
    body: Bytes,
) -> ApiResult<Response> {
    let segments: Vec<&str> = uri.path().split('/').filter(|s| !s.is_empty()).collect();
    let resource_request = matches!(
        segments.as_slice(),
        ["api", _, _, ..] | ["apis", _, _, _, ..]
    );
    if !resource_request {
        authorize_path(app, identity, method, uri)?;
    }
    match segments.as_slice() {
        ["version"] => get_only(method).map(|_| ok(&discovery::version())),
        ["healthz" | "readyz" | "livez"] => Ok((StatusCode::OK, "ok").into_response()),
        // An OpenAPI v3 index listing no schemas: kubectl's client-side validation then has
        // nothing to check against, instead of failing to download it.
        ["openapi", "v3"] => get_only(method).map(|_| ok(&json!({"paths": {}}))),
        // kubectl then falls back to OpenAPI v2, which it reads as protobuf: an empty body is an
        // empty (schema-less) document.
        ["openapi", "v2"] => get_only(method).map(|_| {
            let mut resp = (StatusCode::OK, "").into_response();
            resp.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static(
                    "application/com.github.proto-openapi.spec.v2.v1.0+protobuf",
                ),
            );
            resp
        }),
        ["api"] => get_only(method).map(|_| ok(&discovery::core_versions(&app.addr().to_string()))),
        ["apis"] => get_only(method).map(|_| ok(&discovery::group_list(&app.state().registry))),
        ["apis", group] => {
            get_only(method)?;
            discovery::group(&app.state().registry, group)
                .map(|g| ok(&g))
                .ok_or_else(ApiError::no_route)
        }
        ["api", version, rest @ ..] => {
            let request = Request {
                identity,
                method,
                uri,
                headers,
            };
            resource(app, &request, body, "", version, rest)
        }
        ["apis", group, version, rest @ ..] => {
            let request = Request {
                identity,
                method,
                uri,
                headers,
            };
            resource(app, &request, body, group, version, rest)
        }
        _ => Err(ApiError::no_route()),
    }
}

/// Who asks for what: a request to a resource path.
struct Request<'a> {
    identity: &'a Identity,
    method: &'a Method,
    uri: &'a Uri,
    headers: &'a HeaderMap,
}

/// The RBAC verb of a request to a resource.
fn verb(method: &Method, target: &Target<'_>, query: &Query) -> String {
    let read = *method == Method::GET || *method == Method::HEAD;
    match (method.as_str(), target.name) {
        _ if read && query.flag("watch") => "watch".into(),
        (_, Some(_)) if read => "get".into(),
        _ if read => "list".into(),
        ("POST", _) => "create".into(),
        ("PUT", _) => "update".into(),
        ("DELETE", None) => "deletecollection".into(),
        (other, _) => other.to_ascii_lowercase(),
    }
}

/// Lets the request through RBAC, or refuses it as a real API server would.
/// A replace or an apply that would create the object also needs `create`.
fn authorize_resource(
    app: &App,
    request: &Request<'_>,
    target: &Target<'_>,
    query: &Query,
) -> ApiResult<()> {
    let state = app.state();
    // A namespace's own path is in that namespace, for RBAC.
    let namespace = target
        .namespace
        .or(target.name.filter(|_| target.rt.is("", "namespaces")));
    let action = |verb| Action::Resource {
        verb,
        group: &target.rt.group,
        resource: &target.rt.plural,
        subresource: target.sub,
        namespace,
        name: target.name,
    };
    let verb = verb(request.method, target, query);
    rbac::authorize(&state, &app.rbac_uses, request.identity, &action(&verb))?;
    let writes_object = matches!(verb.as_str(), "update" | "patch") && target.sub.is_none();
    if let (true, Some(name)) = (writes_object, target.name)
        && state.existing(&target.rt, target.namespace, name).is_err()
    {
        rbac::authorize(&state, &app.rbac_uses, request.identity, &action("create"))
            .map_err(|_| rbac::forbidden_to_create(&target.rt.group, &target.rt.plural, name))?;
    }
    Ok(())
}

/// RBAC's escalation check of a RoleBinding or ClusterRoleBinding being
/// written (before admission, as the apiserver's RBAC storage does it): on
/// the role it names, or the stored binding's for a patch that names none.
fn authorize_binding(
    app: &App,
    request: &Request<'_>,
    target: &Target<'_>,
    body: &[u8],
) -> ApiResult<()> {
    let rbac_binding = target.rt.is("rbac.authorization.k8s.io", "rolebindings")
        || target
            .rt
            .is("rbac.authorization.k8s.io", "clusterrolebindings");
    let writes = matches!(request.method.as_str(), "POST" | "PUT" | "PATCH");
    if !rbac_binding || !writes || target.sub.is_some() {
        return Ok(());
    }
    let state = app.state();
    let written = parse_body(request.headers, body).ok();
    let binding = match written.filter(|b| b.get("roleRef").is_some()) {
        Some(binding) => binding,
        None => match target.name {
            Some(name) => match state.existing(&target.rt, target.namespace, name) {
                Ok((_, stored)) => (*stored).clone(),
                Err(_) => return Ok(()),
            },
            None => return Ok(()),
        },
    };
    rbac::may_bind(
        &state,
        &app.rbac_uses,
        request.identity,
        target.namespace,
        &binding,
    )
}

fn resource(
    app: &App,
    request: &Request<'_>,
    body: Bytes,
    group: &str,
    version: &str,
    rest: &[&str],
) -> ApiResult<Response> {
    let Request {
        method,
        uri,
        headers,
        ..
    } = *request;
    if rest.is_empty() {
        get_only(method)?;
        return discovery::resource_list(&app.state().registry, group, version)
            .map(|l| ok(&l))
            .ok_or_else(ApiError::no_route);
    }
    let target = parse_target(app, group, version, rest)?;
    let query = Query::parse(uri)?;
    authorize_resource(app, request, &target, &query)?;
    authorize_binding(app, request, &target, &body)?;
    match (target.name, target.sub) {
        (None, _) => collection(
            app,
            request.identity,
            method,
            headers,
            body,
            &target,
            &query,
        ),
        (Some(name), None) => object(
            app,
            request.identity,
            method,
            headers,
            body,
            &target,
            name,
            Subresource::Main,
            &query,
        ),
        (Some(name), Some("status")) if target.rt.status_subresource => {
            if *method == Method::DELETE || *method == Method::POST {
                return Err(ApiError::method_not_allowed(format!(
                    "{method} is not supported on the status subresource"
                )));
            }
            object(
                app,
                request.identity,
                method,
                headers,
                body,
                &target,
                name,
                Subresource::Status,
                &query,
            )
        }
        (Some(name), Some("scale")) if target.rt.has_scale() => scale(
            app,
            request.identity,
            method,
            headers,
            body,
            &target,
            name,
            &query,
        ),
        (Some(name), Some("log")) if target.rt.has_log() => {
            get_only(method)?;
            let q = LogQuery {
                container: query.get("container").map(str::to_string),
                previous: query.flag("previous"),
                tail_lines: query.number::<i64>("tailLines")?.map(|n| n.max(0) as usize),
                limit_bytes: query
                    .number::<i64>("limitBytes")?
                    .map(|n| n.max(0) as usize),
                timestamps: query.flag("timestamps"),
                follow: query.flag("follow"),
                since_time: query
                    .get("sinceTime")
                    .map(|since| {
                        since.parse::<jiff::Timestamp>().map_err(|_| {
                            ApiError::bad_request(format!(
                                "sinceTime: {since} is not an RFC 3339 time"
                            ))
                        })
                    })
                    .transpose()?,
            };
            logs::pod_log(app, target.namespace.unwrap_or_default(), name, &q)
        }
        (Some(name), Some("token")) if target.rt.is("", "serviceaccounts") => {
            if *method != Method::POST {
                return Err(ApiError::method_not_allowed(format!(
                    "{method} is not supported on serviceaccounts/token"
                )));
            }
            let token_request = parse_body(headers, &body)?;
            let issued = app.tokens.request(
                &app.state(),
                target.namespace.unwrap_or_default(),
                name,
                &token_request,
            )?;
            Ok(json_response(StatusCode::CREATED, &issued))
        }
        _ => Err(ApiError::no_route()),
    }
}

fn parse_target<'a>(
    app: &App,
    group: &str,
    version: &'a str,
    rest: &[&'a str],
) -> ApiResult<Target<'a>> {
    // `namespaces/{name}/status` is the namespace's subresource, not a resource called "status".
    let namespace_subresource =
        group.is_empty() && rest.len() == 3 && matches!(rest[2], "status" | "finalize");
    let (namespace, rest) = if rest.len() >= 3 && rest[0] == "namespaces" && !namespace_subresource
    {
        (Some(rest[1]), &rest[2..])
    } else {
        (None, rest)
    };
    if rest.len() > 3 {
        return Err(ApiError::no_route());
    }
    let rt = app
        .state()
        .registry
        .lookup(group, version, rest[0])
        .cloned()
        .ok_or_else(ApiError::no_route)?;
    let name = rest.get(1).copied();
    if (namespace.is_some() && !rt.namespaced)
        || (rt.namespaced && namespace.is_none() && name.is_some())
    {
        return Err(ApiError::no_route());
    }
    Ok(Target {
        rt,
        version,
        namespace,
        name,
        sub: rest.get(2).copied(),
    })
}

fn content_type(headers: &HeaderMap) -> &str {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("application/json")
}

/// Parses a request body: JSON, or YAML when the content type says so (YAML is also tried when
/// JSON fails, since apply bodies may be either).
fn parse_body(headers: &HeaderMap, body: &[u8]) -> ApiResult<Value> {
    let ct = content_type(headers);
    if ct.contains("protobuf") || ct.contains("cbor") {
        return Err(ApiError::unsupported_media_type(ct));
    }
    if let Ok(v) = serde_json::from_slice::<Value>(body) {
        return Ok(v);
    }
    if ct.contains("yaml") {
        let text = std::str::from_utf8(body)
            .map_err(|_| ApiError::bad_request("the body is not UTF-8"))?;
        return serde_saphyr::from_str::<Value>(text)
            .map_err(|e| ApiError::bad_request(format!("invalid YAML body: {e}")));
    }
    Err(ApiError::bad_request(
        "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml",
    ))
}

/// The representation a GET asks for through its `Accept` header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Output {
    Full,
    /// `as=Table`: kubectl's server-side printing.
    Table,
    /// `as=PartialObjectMetadata(List)`: metadata only (kube's `get_metadata`, `metadata_watcher`).
    Metadata,
}

impl Output {
    fn of(headers: &HeaderMap) -> Self {
        let accept = headers
            .get(header::ACCEPT)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default();
        if accept.contains("as=Table") {
            Output::Table
        } else if accept.contains("as=PartialObjectMetadata") {
            Output::Metadata
        } else {
            Output::Full
        }
    }

    /// Renders an object or a list.
    fn render(self, rt: &ResourceType, value: Value) -> Value {
        match self {
            Output::Full => value,
            Output::Table => table(rt, &value),
            Output::Metadata => match value.get("items").and_then(Value::as_array) {
                Some(items) => json!({
                    "kind": "PartialObjectMetadataList",
                    "apiVersion": "meta.k8s.io/v1",
                    "metadata": value.get("metadata").cloned().unwrap_or_else(|| json!({})),
                    "items": items.iter().map(partial_metadata).collect::<Vec<_>>(),
                }),
                None => partial_metadata(&value),
            },
        }
    }
}

pub fn partial_metadata(obj: &Value) -> Value {
    json!({
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": obj.get("metadata").cloned().unwrap_or_else(|| json!({})),
    })
}

fn collection(
    app: &App,
    identity: &Identity,
    method: &Method,
    headers: &HeaderMap,
    body: Bytes,
    t: &Target<'_>,
    query: &Query,
) -> ApiResult<Response> {
    let filter = query.filter()?;
    match *method {
        Method::GET | Method::HEAD if query.flag("watch") => {
            watch_response(app, headers, t, filter, query)
        }
        Method::GET | Method::HEAD => {
            let list = app.state().list(&t.rt, t.version, t.namespace, &filter);
            Ok(ok(&Output::of(headers).render(&t.rt, list)))
        }
        Method::POST => {
            if t.rt.namespaced && t.namespace.is_none() {
                return Err(ApiError::method_not_allowed(
                    "POST is not supported on a list across all namespaces",
                ));
            }
            let obj = parse_body(headers, &body)?;
            let created = app.state().create(
                &t.rt,
                t.version,
                t.namespace,
                obj,
                &query.write_options(headers, identity),
            )?;
            Ok(json_response(StatusCode::CREATED, &created))
        }
        Method::DELETE => {
            let opts = delete_options(headers, &body, query, identity)?;
            let out =
                app.state()
                    .delete_collection(&t.rt, t.version, t.namespace, &filter, &opts)?;
            Ok(ok(&out))
        }
        _ => Err(ApiError::method_not_allowed(format!(
            "{method} is not supported on a collection"
        ))),
    }
}

#[allow(clippy::too_many_arguments)]
fn object(
    app: &App,
    identity: &Identity,
    method: &Method,
    headers: &HeaderMap,
    body: Bytes,
    t: &Target<'_>,
    name: &str,
    sub: Subresource,
    query: &Query,
) -> ApiResult<Response> {
    match *method {
        Method::GET | Method::HEAD if query.flag("watch") => {
            let mut filter = query.filter()?;
            filter.fields = crate::selector::FieldSelector::parse(&format!("metadata.name={name}"))
                .map_err(ApiError::bad_request)?;
            watch_response(app, headers, t, filter, query)
        }
        Method::GET | Method::HEAD => {
            let obj = app.state().get(&t.rt, t.version, t.namespace, name)?;
            Ok(ok(&Output::of(headers).render(&t.rt, obj)))
        }
        Method::PUT => {
            let obj = parse_body(headers, &body)?;
            let out = app.state().replace(
                &t.rt,
                t.version,
                t.namespace,
                name,
                obj,
                sub,
                &query.write_options(headers, identity),
            )?;
            Ok(ok(&out))
        }
        Method::PATCH => {
            let ct = content_type(headers);
            let patch_type = PatchType::from_content_type(ct)
                .ok_or_else(|| ApiError::unsupported_media_type(ct))?;
            let patch = parse_body(headers, &body)?;
            let (out, created) = app.state().patch(
                &t.rt,
                t.version,
                t.namespace,
                name,
                patch_type,
                &patch,
                sub,
                &query.write_options(headers, identity),
            )?;
            Ok(json_response(
                if created {
                    StatusCode::CREATED
                } else {
                    StatusCode::OK
                },
                &out,
            ))
        }
        Method::DELETE if sub == Subresource::Main => {
            let opts = delete_options(headers, &body, query, identity)?;
            let out = app
                .state()
                .delete(&t.rt, t.version, t.namespace, name, &opts)?;
            Ok(ok(&out))
        }
        _ => Err(ApiError::method_not_allowed(format!(
            "{method} is not supported here"
        ))),
    }
}

#[allow(clippy::too_many_arguments)]
fn scale(
    app: &App,
    identity: &Identity,
    method: &Method,
    headers: &HeaderMap,
    body: Bytes,
    t: &Target<'_>,
    name: &str,
    query: &Query,
) -> ApiResult<Response> {
    let opts = query.write_options(headers, identity);
    let out = match *method {
        Method::GET | Method::HEAD => app.state().get_scale(&t.rt, t.namespace, name)?,
        Method::PUT => {
            let scale = parse_body(headers, &body)?;
            app.state()
                .replace_scale(&t.rt, t.version, t.namespace, name, &scale, &opts)?
        }
        Method::PATCH => {
            let ct = content_type(headers);
            let patch_type = PatchType::from_content_type(ct)
                .ok_or_else(|| ApiError::unsupported_media_type(ct))?;
            let patch = parse_body(headers, &body)?;
            app.state().patch_scale(
                &t.rt,
                t.version,
                t.namespace,
                name,
                patch_type,
                &patch,
                &opts,
            )?
        }
        _ => {
            return Err(ApiError::method_not_allowed(format!(
                "{method} is not supported on the scale subresource"
            )));
        }
    };
    Ok(ok(&out))
}

/// Delete options, from the optional `DeleteOptions` body and the query.
fn delete_options(
    headers: &HeaderMap,
    body: &[u8],
    query: &Query,
    identity: &Identity,
) -> ApiResult<DeleteOptions> {
    let doc = if body.iter().all(u8::is_ascii_whitespace) {
        json!({})
    } else {
        parse_body(headers, body)?
    };
    let str_field =
        |v: &Value, path: &str| v.pointer(path).and_then(Value::as_str).map(str::to_string);
    let policy = str_field(&doc, "/propagationPolicy")
        .or_else(|| query.get("propagationPolicy").map(str::to_string));
    let orphan_legacy = doc.get("orphanDependents").and_then(Value::as_bool).or(
        match query.get("orphanDependents") {
            Some("true") => Some(true),
            Some("false") => Some(false),
            _ => None,
        },
    );
    let propagation = match (policy.as_deref(), orphan_legacy) {
        (Some("Orphan"), _) | (None, Some(true)) => Propagation::Orphan,
        (Some("Foreground"), _) => Propagation::Foreground,
        (Some("Background") | None, _) => Propagation::Background,
        (Some(other), _) => {
            return Err(ApiError::invalid(
                "DeleteOptions",
                "",
                "",
                "propagationPolicy",
                "FieldValueNotSupported",
                &format!(
                    "Unsupported value: \"{other}\": supported values: \"Foreground\", \"Background\", \"Orphan\", \"nil\""
                ),
            ));
        }
    };
    let dry_run = query.dry_run()
        || doc
            .get("dryRun")
            .and_then(Value::as_array)
            .is_some_and(|a| a.iter().any(|v| v == "All"));
    Ok(DeleteOptions {
        dry_run,
        propagation,
        precondition_uid: str_field(&doc, "/preconditions/uid"),
        precondition_rv: str_field(&doc, "/preconditions/resourceVersion"),
        requester: Some(identity.into()),
    })
}

fn watch_response(
    app: &App,
    headers: &HeaderMap,
    t: &Target<'_>,
    filter: Filter,
    query: &Query,
) -> ApiResult<Response> {
    let start = match query.get("resourceVersion").filter(|v| !v.is_empty()) {
        None | Some("0") => Start::Current,
        Some(rv) => Start::After(rv.parse().map_err(|_| {
            ApiError::invalid(
                "",
                "",
                "",
                "resourceVersion",
                "FieldValueInvalid",
                &format!("Invalid value: \"{rv}\": must be a number"),
            )
        })?),
    };
    let req = WatchRequest {
        rt: t.rt.clone(),
        version: t.version.to_string(),
        namespace: t.namespace.map(str::to_string),
        filter,
        start,
        send_initial_events: query.flag("sendInitialEvents"),
        bookmarks: query.flag("allowWatchBookmarks"),
        timeout: query
            .number::<u64>("timeoutSeconds")?
            .map(std::time::Duration::from_secs),
        metadata_only: Output::of(headers) == Output::Metadata,
    };
    let body = watch::start(app.clone(), req, app.bookmark_interval());
    let mut resp = (StatusCode::OK, body).into_response();
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    resp.headers_mut().insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("no-cache, private"),
    );
    Ok(resp)
}

/// A `meta.k8s.io/v1` `Table` for kubectl's server-side printing: name, (status) and age.
fn table(rt: &ResourceType, value: &Value) -> Value {
    let items: Vec<&Value> = match value.get("items").and_then(Value::as_array) {
        Some(items) => items.iter().collect(),
        None => vec![value],
    };
    let with_phase = rt.is("", "namespaces") || rt.is("", "pods");
    let mut columns = vec![
        json!({"name": "Name", "type": "string", "format": "name", "description": "Name must be unique within a namespace.", "priority": 0}),
    ];
    if with_phase {
        columns.push(json!({"name": "Status", "type": "string", "format": "", "description": "The phase of the object.", "priority": 0}));
    }
    columns.push(json!({"name": "Age", "type": "string", "format": "", "description": "Time since creation.", "priority": 0}));
    let rows: Vec<Value> = items
        .iter()
        .map(|obj| {
            let mut cells = vec![json!(meta::name(obj))];
            if with_phase {
                cells.push(json!(
                    obj.pointer("/status/phase")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                ));
            }
            cells.push(json!(meta::age(
                meta::meta_str(obj, "creationTimestamp").unwrap_or_default()
            )));
            json!({"cells": cells, "object": partial_metadata(obj)})
        })
        .collect();
    let rv = value
        .pointer("/metadata/resourceVersion")
        .cloned()
        .unwrap_or_else(|| json!(""));
    json!({
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": {"resourceVersion": rv},
        "columnDefinitions": columns,
        "rows": rows,
    })
}
