//! splitbrain exec adapter for rslock, Redlock in Rust (https://crates.io/crates/rslock).
//!
//! Run as `splitbrain run --deployment redlock --client lib:rslock` (docs/libraries.md). It is
//! written as rslock's README shows it: one `LockManager::new(uris)` over every master `hello`
//! names, `lock(resource, ttl)` for each acquire (its default three tries, each a round of
//! votes, the keys it set deleted again after a round without a majority) and `unlock(&lock)`
//! to release. The grant's validity is the `validity_time` rslock computed: the TTL less its
//! clock drift allowance (1% and 2 ms) and the time the votes took.
//!
//! rslock keeps which masters voted to itself, so the grants name no nodes, and double grants
//! are explained from the deployment's own events. Its `unlock` returns nothing (it is best
//! effort), so a release is `ok` as far as its caller can tell. `TtlExceeded` comes back
//! without deleting the keys its votes set: the lock may be held, so it is `unknown`. No error
//! of the library ends the adapter.

use std::time::Duration;

use rslock::{Lock, LockError, LockManager};
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let mut lines = BufReader::new(tokio::io::stdin()).lines();
    let mut stdout = tokio::io::stdout();
    let mut manager: Option<LockManager> = None;
    let mut held: Vec<(String, Lock)> = Vec::new();
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
                json!({"type": "ok"})
            }
            "acquire" => match &manager {
                Some(manager) => acquire(manager, &request, &mut held).await,
                None => json!({"type": "fail", "error": "acquire before hello"}),
            },
            "release" => {
                let token = request["token"].as_str().unwrap_or_default();
                match (held.iter().position(|(t, _)| t == token), &manager) {
                    (Some(at), Some(manager)) => {
                        let (_, lock) = held.remove(at);
                        manager.unlock(&lock).await;
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

async fn acquire(manager: &LockManager, request: &Value, held: &mut Vec<(String, Lock)>) -> Value {
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
            held.push((token.clone(), lock));
            json!({"type": "ok", "token": token, "validity_ms": validity_ms})
        }
        Err(LockError::Unavailable) => {
            json!({"type": "fail", "error": "held: no majority of masters granted it"})
        }
        Err(e @ LockError::TtlTooLarge) => json!({"type": "fail", "error": e.to_string()}),
        Err(e) => json!({"type": "unknown", "error": format!("{e:?}: {e}")}),
    }
}
