//! Toxiproxy's HTTP API over splitbrain's links, so that existing toxiproxy clients and scripts
//! can drive a run's client-to-node links (and make proxies of their own). Proxies and toxics
//! are JSON resources as in toxiproxy 2.x. Supported toxics: `latency` (latency, jitter ms),
//! `bandwidth` (rate KB/s), `slow_close` (delay ms), `timeout` (data stops; splitbrain keeps the
//! connection open whatever the timeout) and `reset_peer` (connections reset at once); each at
//! toxicity 1 only. Others are refused with 400.

use std::time::Duration;

use axum::body::Bytes;
use axum::extract::{FromRequest, Path, Request, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use tokio::net::TcpListener;

use super::{LinkState, Links, Toxics};

/// A toxic as toxiproxy's API has it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ApiToxic {
    #[serde(default)]
    pub name: String,
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default = "downstream")]
    pub stream: String,
    #[serde(default = "always")]
    pub toxicity: f64,
    #[serde(default)]
    pub attributes: serde_json::Map<String, Value>,
}

fn downstream() -> String {
    "downstream".into()
}

fn always() -> f64 {
    1.0
}

impl ApiToxic {
    /// Adds this toxic's effect to a link state, or says why it cannot.
    pub fn apply(&self, state: &mut LinkState) -> Result<(), String> {
        if self.toxicity != 1.0 {
            return Err(format!(
                "toxicity {} is not supported; only 1.0",
                self.toxicity
            ));
        }
        let ms = |field: &str| {
            Duration::from_millis(
                self.attributes
                    .get(field)
                    .and_then(Value::as_u64)
                    .unwrap_or(0),
            )
        };
        let toxics: &mut Toxics = match self.stream.as_str() {
            "upstream" => &mut state.upstream,
            "downstream" => &mut state.downstream,
            other => {
                return Err(format!(
                    "stream `{other}` is neither upstream nor downstream"
                ))
            }
        };
        match self.kind.as_str() {
            "latency" => {
                toxics.latency += ms("latency");
                toxics.jitter = toxics.jitter.max(ms("jitter"));
            }
            "bandwidth" => {
                let rate = self
                    .attributes
                    .get("rate")
                    .and_then(Value::as_u64)
                    .unwrap_or(0)
                    * 1000;
                toxics.bandwidth = Some(toxics.bandwidth.map_or(rate, |b| b.min(rate)));
            }
            "slow_close" => toxics.slow_close = toxics.slow_close.max(ms("delay")),
            "timeout" => toxics.blackhole = true,
            "reset_peer" => state.reset = true,
            other => {
                return Err(format!(
                    "toxic type `{other}` is not supported by splitbrain's link proxy \
                     (latency, bandwidth, slow_close, timeout, reset_peer are)"
                ))
            }
        }
        Ok(())
    }
}

/// Serves the API on `listener` until the task is aborted.
pub async fn serve(links: Links, listener: TcpListener) -> std::io::Result<()> {
    let app = Router::new()
        .route("/version", get(version))
        .route("/reset", post(reset))
        .route("/proxies", get(list).post(create))
        .route("/proxies/{name}", get(show).post(update).delete(remove))
        .route("/proxies/{name}/toxics", get(toxics).post(add_toxic))
        .route(
            "/proxies/{name}/toxics/{toxic}",
            get(show_toxic).post(update_toxic).delete(remove_toxic),
        )
        .with_state(links);
    axum::serve(listener, app).await
}

/// A request's JSON body, whatever its `Content-Type` says: toxiproxy reads the body as JSON
/// without looking at the header, and `curl -d` (its README's examples) sends a form's type.
struct Body<T>(T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for Body<T> {
    type Rejection = Response;

    async fn from_request(request: Request, state: &S) -> Result<Self, Self::Rejection> {
        let bytes = Bytes::from_request(request, state)
            .await
            .map_err(IntoResponse::into_response)?;
        serde_json::from_slice(&bytes).map(Body).map_err(|e| {
            error(
                StatusCode::BAD_REQUEST,
                format!("the body is not the JSON expected: {e}"),
            )
        })
    }
}

fn error(status: StatusCode, message: impl Into<String>) -> Response {
    (
        status,
        Json(json!({ "error": message.into(), "status": status.as_u16() })),
    )
        .into_response()
}

fn not_found(what: &str) -> Response {
    error(StatusCode::NOT_FOUND, format!("{what} not found"))
}

fn proxy_json(links: &Links, name: &str) -> Option<Value> {
    let link = links.get(name)?;
    Some(json!({
        "name": name,
        "listen": link.listen.to_string(),
        "upstream": link.upstream,
        "enabled": link.enabled(),
        "toxics": link.api_toxics(),
    }))
}

async fn version() -> &'static str {
    concat!("splitbrain-", env!("CARGO_PKG_VERSION"))
}

async fn reset(State(links): State<Links>) -> StatusCode {
    links.heal();
    StatusCode::NO_CONTENT
}

async fn list(State(links): State<Links>) -> Json<Value> {
    let all: serde_json::Map<String, Value> = links
        .names()
        .into_iter()
        .filter_map(|name| Some((name.clone(), proxy_json(&links, &name)?)))
        .collect();
    Json(Value::Object(all))
}

#[derive(Deserialize)]
struct NewProxy {
    name: String,
    #[serde(default = "any_port")]
    listen: String,
    upstream: String,
    #[serde(default = "enabled")]
    enabled: bool,
}

fn any_port() -> String {
    "127.0.0.1:0".into()
}

fn enabled() -> bool {
    true
}

async fn create(State(links): State<Links>, Body(new): Body<NewProxy>) -> Response {
    if links.get(&new.name).is_some() {
        return error(StatusCode::CONFLICT, "proxy already exists");
    }
    let listener = match TcpListener::bind(new.listen.as_str()).await {
        Ok(listener) => listener,
        Err(e) => {
            return error(
                StatusCode::BAD_REQUEST,
                format!("listen {}: {e}", new.listen),
            )
        }
    };
    match links.add(new.name.clone(), listener, new.upstream, None) {
        Ok(link) => {
            link.update(|layers| layers.disabled = !new.enabled);
            let body = proxy_json(&links, &new.name).unwrap_or_default();
            (StatusCode::CREATED, Json(body)).into_response()
        }
        Err(e) => error(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
    }
}

async fn show(State(links): State<Links>, Path(name): Path<String>) -> Response {
    match proxy_json(&links, &name) {
        Some(body) => Json(body).into_response(),
        None => not_found("proxy"),
    }
}

async fn update(
    State(links): State<Links>,
    Path(name): Path<String>,
    Body(change): Body<Value>,
) -> Response {
    let Some(link) = links.get(&name) else {
        return not_found("proxy");
    };
    if let Some(enabled) = change.get("enabled").and_then(Value::as_bool) {
        link.update(|layers| layers.disabled = !enabled);
    }
    show(State(links), Path(name)).await
}

async fn remove(State(links): State<Links>, Path(name): Path<String>) -> Response {
    let Some(link) = links.get(&name) else {
        return not_found("proxy");
    };
    if link.builtin {
        return error(
            StatusCode::CONFLICT,
            "this link carries the run's clients and cannot be deleted; disable it instead",
        );
    }
    link.task.abort();
    links.map().remove(&name);
    StatusCode::NO_CONTENT.into_response()
}

async fn toxics(State(links): State<Links>, Path(name): Path<String>) -> Response {
    match links.get(&name) {
        Some(link) => Json(link.api_toxics()).into_response(),
        None => not_found("proxy"),
    }
}

async fn add_toxic(
    State(links): State<Links>,
    Path(name): Path<String>,
    Body(mut toxic): Body<ApiToxic>,
) -> Response {
    let Some(link) = links.get(&name) else {
        return not_found("proxy");
    };
    if toxic.name.is_empty() {
        toxic.name = format!("{}_{}", toxic.kind, toxic.stream);
    }
    if let Err(why) = toxic.apply(&mut LinkState::default()) {
        return error(StatusCode::BAD_REQUEST, why);
    }
    if link.api_toxics().iter().any(|t| t.name == toxic.name) {
        return error(StatusCode::CONFLICT, "toxic already exists");
    }
    link.update(|layers| layers.api.push(toxic.clone()));
    Json(toxic).into_response()
}

async fn show_toxic(
    State(links): State<Links>,
    Path((name, toxic)): Path<(String, String)>,
) -> Response {
    let found = links
        .get(&name)
        .and_then(|link| link.api_toxics().into_iter().find(|t| t.name == toxic));
    match found {
        Some(t) => Json(t).into_response(),
        None => not_found("toxic"),
    }
}

async fn update_toxic(
    State(links): State<Links>,
    Path((name, toxic)): Path<(String, String)>,
    Body(change): Body<Value>,
) -> Response {
    let Some(link) = links.get(&name) else {
        return not_found("proxy");
    };
    let Some(mut updated) = link.api_toxics().into_iter().find(|t| t.name == toxic) else {
        return not_found("toxic");
    };
    if let Some(attributes) = change.get("attributes").and_then(Value::as_object) {
        updated.attributes.extend(attributes.clone());
    }
    if let Err(why) = updated.apply(&mut LinkState::default()) {
        return error(StatusCode::BAD_REQUEST, why);
    }
    link.update(|layers| {
        if let Some(t) = layers.api.iter_mut().find(|t| t.name == toxic) {
            *t = updated.clone();
        }
    });
    Json(updated).into_response()
}

async fn remove_toxic(
    State(links): State<Links>,
    Path((name, toxic)): Path<(String, String)>,
) -> Response {
    let Some(link) = links.get(&name) else {
        return not_found("proxy");
    };
    if !link.api_toxics().iter().any(|t| t.name == toxic) {
        return not_found("toxic");
    }
    link.update(|layers| layers.api.retain(|t| t.name != toxic));
    StatusCode::NO_CONTENT.into_response()
}
