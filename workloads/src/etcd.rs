//! A connection to an etcd cluster as lock clients use it: every member's endpoint behind one
//! client (etcd-client balances over them), each call bounded in time, and each error sorted
//! into "certainly not done" and "may have been done", as Jepsen's etcd tests sort them.

use std::collections::HashMap;
use std::future::Future;
use std::net::SocketAddr;
use std::time::Duration;

use etcd_client::{Client, ConnectOptions, ResponseHeader};
use tonic::Code;

/// How long one call may take before its outcome is unknown: a write is committed by a
/// majority's fsync, which takes longer than a Redis command on a busy machine.
pub const OP_TIMEOUT: Duration = Duration::from_secs(2);

/// What went wrong with one call.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EtcdError {
    /// The request was refused or never sent: it took no effect.
    #[error("{0}")]
    Definite(String),
    /// It may have been committed: a timeout, a lost connection, a leader lost mid-request.
    #[error("{0}")]
    Indeterminate(String),
}

impl EtcdError {
    fn of(error: etcd_client::Error) -> EtcdError {
        use etcd_client::Error;
        match &error {
            Error::GRpcStatus(status) => match status.code() {
                Code::InvalidArgument
                | Code::FailedPrecondition
                | Code::NotFound
                | Code::OutOfRange
                | Code::AlreadyExists
                | Code::PermissionDenied
                | Code::Unauthenticated => EtcdError::Definite(status.message().to_string()),
                // With require-leader, a member that knows no leader refuses before proposing;
                // a member that refused the connection never saw the request.
                Code::Unavailable
                    if status.message().contains("no leader")
                        || status.message().contains("tcp connect error") =>
                {
                    EtcdError::Definite(format!("{:?}: {}", status.code(), status.message()))
                }
                _ => EtcdError::Indeterminate(format!("{:?}: {}", status.code(), status.message())),
            },
            Error::InvalidArgs(_) | Error::InvalidUri(_) | Error::EndpointError(_) => {
                EtcdError::Definite(error.to_string())
            }
            _ => EtcdError::Indeterminate(error.to_string()),
        }
    }
}

/// One client process's connection to the cluster.
pub struct EtcdConn {
    endpoints: Vec<String>,
    /// Made at the first call: building a client needs the runtime, and building a lock
    /// client must not (the run checks that a client fits a deployment before anything
    /// starts).
    client: Option<Client>,
    /// Member ids by name (`n1`, …), learnt once, to name the member that served a grant.
    members: HashMap<u64, String>,
    /// The member that answered the last call noted with [`EtcdConn::answered`].
    last: String,
}

impl EtcdConn {
    /// A connection to these members, made at its first call.
    pub fn new(nodes: &[(String, SocketAddr)]) -> EtcdConn {
        EtcdConn {
            endpoints: nodes
                .iter()
                .map(|(_, addr)| format!("http://{addr}"))
                .collect(),
            client: None,
            members: HashMap::new(),
            last: "?".into(),
        }
    }

    /// The client, made if it is not yet: connecting sends nothing, so it fails only on a
    /// bad endpoint.
    async fn client(&mut self) -> Result<Client, EtcdError> {
        if let Some(client) = &self.client {
            return Ok(client.clone());
        }
        let options = ConnectOptions::new()
            .with_connect_timeout(Duration::from_millis(500))
            .with_timeout(OP_TIMEOUT)
            // A member cut off from the others says so at once instead of waiting.
            .with_require_leader(true);
        // No HTTP/2 keep-alive pings: etcd closes the connection of a client that pings more
        // often than every 5 s (`--grpc-keepalive-min-time`), failing every call on it; each
        // call is bounded in time instead.
        let client = Client::connect(&self.endpoints, Some(options))
            .await
            .map_err(|e| EtcdError::Definite(format!("connecting: {e}")))?;
        self.client = Some(client.clone());
        Ok(client)
    }

    /// Runs one call on (a handle to) the client, bounded by [`OP_TIMEOUT`]: etcd-client's
    /// own timeout does not cover time queued in its balancer.
    pub async fn call<T, F, Fut>(&mut self, call: F) -> Result<T, EtcdError>
    where
        F: FnOnce(Client) -> Fut,
        Fut: Future<Output = Result<T, etcd_client::Error>>,
    {
        let client = self.client().await?;
        match tokio::time::timeout(OP_TIMEOUT, call(client)).await {
            Ok(Ok(reply)) => Ok(reply),
            Ok(Err(e)) => Err(EtcdError::of(e)),
            Err(_) => Err(EtcdError::Indeterminate(format!(
                "no answer within {} ms",
                OP_TIMEOUT.as_millis()
            ))),
        }
    }

    /// Learns the members' ids, if not known yet; a failure leaves them for the next time.
    pub async fn learn_members(&mut self) {
        if !self.members.is_empty() {
            return;
        }
        if let Ok(list) = self
            .call(|mut c| async move { c.member_list().await })
            .await
        {
            self.members = list
                .members()
                .iter()
                .map(|m| (m.id(), m.name().to_string()))
                .collect();
        }
    }

    /// The name of the member that answered, from a reply's header.
    pub fn member(&self, header: Option<&ResponseHeader>) -> String {
        let id = header.map_or(0, |h| h.member_id());
        self.members
            .get(&id)
            .cloned()
            .unwrap_or_else(|| format!("{id:x}"))
    }

    /// Notes the member that answered a reply.
    pub fn answered(&mut self, header: Option<&ResponseHeader>) {
        self.last = self.member(header);
    }

    /// The member that answered the last noted reply.
    pub fn last_member(&self) -> String {
        self.last.clone()
    }

    /// The first step of every lock attempt: a fresh lease of `ttl`, or why there is none (a
    /// lease never attached to a key holds nothing, so failing here is definite).
    pub async fn fresh_lease(&mut self, ttl: Duration) -> Result<i64, String> {
        self.grant_lease(ttl)
            .await
            .map_err(|e| format!("granting a lease: {e}"))
    }

    /// Grants a lease of `ttl` and returns its id.
    async fn grant_lease(&mut self, ttl: Duration) -> Result<i64, EtcdError> {
        let seconds = ttl.as_secs() as i64;
        let lease = self
            .call(|mut c| async move { c.lease_grant(seconds, None).await })
            .await?;
        if lease.ttl() != seconds {
            // etcd raises a lease shorter than its minimum; the holder would count on less
            // than the key really lives, so refuse rather than record a wrong validity.
            let id = lease.id();
            let _ = self.revoke(id).await;
            return Err(EtcdError::Definite(format!(
                "asked for a {seconds} s lease and etcd granted {} s",
                lease.ttl()
            )));
        }
        Ok(lease.id())
    }

    /// Revokes a lease, deleting every key attached to it. A lease already gone (expired,
    /// or revoked by an earlier attempt whose answer was lost) counts as revoked: its keys are
    /// gone either way.
    pub async fn revoke(&mut self, lease: i64) -> Result<(), EtcdError> {
        match self
            .call(|mut c| async move { c.lease_revoke(lease).await })
            .await
        {
            Err(EtcdError::Definite(e)) if e.contains("lease not found") => Ok(()),
            other => other.map(drop),
        }
    }

    /// Revokes a lease, trying again (the balancer may pick another member, or a leader may
    /// have been elected meanwhile) until it is done or `patience` has passed.
    pub async fn revoke_patiently(
        &mut self,
        lease: i64,
        patience: Duration,
    ) -> Result<(), EtcdError> {
        let started = std::time::Instant::now();
        loop {
            match self.revoke(lease).await {
                Err(e) if started.elapsed() < patience => {
                    tracing::debug!("revoking lease {lease:x}: {e}; trying again");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                done => return done,
            }
        }
    }

    /// Renews a lease once, as a keep-alive does: `Fail` when etcd says it has expired.
    pub async fn keep_alive(&mut self, lease: i64) -> Result<(), EtcdError> {
        let renewed = self
            .call(|mut c| async move {
                let (mut keeper, mut replies) = c.lease_keep_alive(lease).await?;
                keeper.keep_alive().await?;
                replies.message().await
            })
            .await?;
        match renewed {
            Some(reply) if reply.ttl() > 0 => Ok(()),
            Some(_) => Err(EtcdError::Definite("the lease had expired".into())),
            None => Err(EtcdError::Indeterminate(
                "the keep-alive stream closed without an answer".into(),
            )),
        }
    }
}

/// Why etcd's clients refuse a lease duration: leases are whole seconds, and etcd raises any
/// shorter than its minimum (1.5 election timeouts, rounded up: 2 s with the 1 s election
/// timeout the etcd deployment runs).
pub fn check_ttl(ttl: Duration) -> Result<(), String> {
    if ttl.subsec_nanos() != 0 || ttl < Duration::from_secs(2) {
        return Err(format!(
            "etcd leases are whole seconds of at least 2 s (its minimum with a 1 s election \
             timeout), and --ttl is {} ms; use --ttl 2s or more",
            ttl.as_millis()
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use tonic::Status;

    fn sorted(status: Status) -> EtcdError {
        EtcdError::of(etcd_client::Error::GRpcStatus(status))
    }

    #[test]
    fn refusals_before_a_proposal_are_definite_and_lost_answers_are_not() {
        let definite = [
            Status::unavailable("etcdserver: no leader"),
            Status::unavailable("tcp connect error"),
            Status::not_found("etcdserver: requested lease not found"),
            Status::invalid_argument("etcdserver: key is not provided"),
        ];
        for status in definite {
            assert!(matches!(sorted(status), EtcdError::Definite(_)));
        }
        let unknown = [
            Status::unavailable("etcdserver: request timed out"),
            Status::unavailable("etcdserver: leader changed"),
            Status::cancelled("Timeout expired"),
            Status::unknown("transport error"),
        ];
        for status in unknown {
            assert!(matches!(sorted(status), EtcdError::Indeterminate(_)));
        }
    }

    #[test]
    fn leases_are_whole_seconds_of_at_least_two() {
        assert!(check_ttl(Duration::from_secs(2)).is_ok());
        assert!(check_ttl(Duration::from_secs(10)).is_ok());
        assert!(check_ttl(Duration::from_secs(1)).is_err());
        assert!(check_ttl(Duration::from_millis(2500)).is_err());
    }
}
