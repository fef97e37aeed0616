//! splitbrain exec adapter for rslock, Redlock in Rust (https://crates.io/crates/rslock).
//!
//! Run as `splitbrain run --deployment redlock --client lib:rslock` (docs/libraries.md). It is
//! written as rslock's README shows it: one `LockManager::new(uris)` over every master `hello`
//! names, `lock(resource, ttl)` for each acquire (its default three tries, each a round of
//! votes, the keys it set deleted again after a round without a majority) and `unlock(&lock)`
//! to release. The grant's validity is the `validity_time` rslock computed: the TTL less its
//! clock drift allowance (1% and 2 ms) and the time the votes took.
//!
//! With `--extend` (the variant `lib:rslock:extends`) the holder keeps its lock alive as
//! rslock's README shows, `extend(&lock, ttl)` every third of the TTL, and asks before each
//! step of its work whether it still holds the lock (`ask_held`): yes while the validity of
//! its grant or of its last extend outlasts the step and no extend has failed, the most a
//! careful caller can know. (An extend that falls short of a majority unlocks every master it
//! reached at once, then tries twice more before it returns its error: the holder still
//! counts on its last validity meanwhile.)
//!
//! rslock keeps which masters voted to itself, so the grants name no nodes, and double grants
//! are explained from the deployment's own events. Its `unlock` returns nothing (it is best
//! effort), so a release is `ok` as far as its caller can tell. `TtlExceeded` comes back
//! without deleting the keys its votes set: the lock may be held, so it is `unknown`. No error
//! of the library ends the adapter.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rslock::{Lock, LockError, LockManager};
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::task::JoinHandle;

/// A lock this client holds: the lock itself and, with `--extend`, the task extending it and
/// until when the holder may count on it (`None` once an extend failed).
struct Held {
    token: String,
    lock: Arc<Lock>,
    valid_until: Arc<Mutex<Option<Instant>>>,
    extender: Option<JoinHandle<()>>,
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let extends = std::env::args().any(|arg| arg == "--extend");
    let mut lines = BufReader::new(tokio::io::stdin()).lines();
    let mut stdout = tokio::io::stdout();
    let mut manager: Option<LockManager> = None;
    let mut held: Vec<Held> = Vec::new();
    // How long the holder works between two questions (ten a TTL, at least 50 ms apart): a
    // yes must cover the step that follows it.
    let mut step = Duration::ZERO;
    while let Ok(Some(line)) = lines.next_line().await {
        let request: Value = match serde_json::from_str(&line) {
            Ok(request) => request,
            Err(e) => {
                eprintln!("not JSON: {e}: {line}");
                return;
            }
        };
        let reply = match request["op"].as_str().unwrap_or_default() {
            "hello" => {
                let uris: Vec<String> = request["nodes"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|node| {
                        format!(
                            "redis://{}:{}/",
                            node["host"].as_str().unwrap_or_default(),
                            node["port"]
                        )
                    })
                    .collect();
                manager = Some(LockManager::new(uris));
                let ttl = Duration::from_millis(request["ttl_ms"].as_u64().unwrap_or(2000));
                step = (ttl / 10).max(Duration::from_millis(50));
                if extends {
                    json!({"type": "ok", "renewal": "silent", "ask_held": true})
                } else {
                    json!({"type": "ok"})
                }
            }
            "acquire" => match &manager {
                Some(manager) => acquire(manager, &request, extends, &mut held).await,
                None => json!({"type": "fail", "error": "acquire before hello"}),
            },
            "held" => {
                let token = request["token"].as_str().unwrap_or_default();
                let standing = held.iter().find(|h| h.token == token).map(|h| {
                    let valid_until = *h.valid_until.lock().expect("not poisoned");
                    valid_until.is_some_and(|until| Instant::now() + step < until)
                });
                json!({"type": "ok", "held": standing.unwrap_or(false)})
            }
            "release" => {
                let token = request["token"].as_str().unwrap_or_default();
                match (held.iter().position(|h| h.token == token), &manager) {
                    (Some(at), Some(manager)) => {
                        let done = held.remove(at);
                        if let Some(extender) = done.extender {
                            extender.abort();
                        }
                        manager.unlock(&done.lock).await;
                        json!({"type": "ok"})
                    }
                    _ => json!({"type": "fail", "error": "not held by this client"}),
                }
            }
            op => json!({"type": "fail", "error": format!("unsupported op {op}")}),
        };
        let mut text = reply.to_string();
        text.push('\n');
        if stdout.write_all(text.as_bytes()).await.is_err() || stdout.flush().await.is_err() {
            return;
        }
    }
}

async fn acquire(
    manager: &LockManager,
    request: &Value,
    extends: bool,
    held: &mut Vec<Held>,
) -> Value {
    let resource = request["resource"]
        .as_str()
        .unwrap_or("lock")
        .as_bytes()
        .to_vec();
    let ttl = Duration::from_millis(request["ttl_ms"].as_u64().unwrap_or(2000));
    match manager.lock(&resource, ttl).await {
        Ok(lock) => {
            let token: String = lock.val.iter().map(|b| format!("{b:02x}")).collect();
            let validity_ms = lock.validity_time.max(1);
            let valid_until = Instant::now() + Duration::from_millis(validity_ms as u64);
            let valid_until = Arc::new(Mutex::new(Some(valid_until)));
            let lock = Arc::new(lock);
            let extender = extends.then(|| {
                tokio::spawn(keep_extending(
                    manager.clone(),
                    lock.clone(),
                    ttl,
                    valid_until.clone(),
                ))
            });
            held.push(Held {
                token: token.clone(),
                lock,
                valid_until,
                extender,
            });
            json!({"type": "ok", "token": token, "validity_ms": validity_ms})
        }
        Err(LockError::Unavailable) => {
            json!({"type": "fail", "error": "held: no majority of masters granted it"})
        }
        Err(e @ LockError::TtlTooLarge) => json!({"type": "fail", "error": e.to_string()}),
        Err(e) => json!({"type": "unknown", "error": format!("{e:?}: {e}")}),
    }
}

/// Extends `lock` by `ttl` every third of it, as rslock's README does, moving `valid_until` to
/// the validity each extend returns; the first failed extend ends the lock for its holder.
async fn keep_extending(
    manager: LockManager,
    lock: Arc<Lock>,
    ttl: Duration,
    valid_until: Arc<Mutex<Option<Instant>>>,
) {
    loop {
        tokio::time::sleep(ttl / 3).await;
        let standing = match manager.extend(&lock, ttl).await {
            Ok(extended) => {
                Some(Instant::now() + Duration::from_millis(extended.validity_time as u64))
            }
            Err(_) => None,
        };
        *valid_until.lock().expect("not poisoned") = standing;
        if standing.is_none() {
            return;
        }
    }
}
