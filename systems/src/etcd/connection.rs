//! A connection to an etcd cluster as lock clients use it: every member's endpoint behind one
//! channel balanced over them, each call bounded in time, and each error sorted into
//! "certainly not done" and "may have been done", as Jepsen's etcd tests sort them.

use std::collections::HashMap;
use std::future::Future;
use std::net::SocketAddr;
use std::time::Duration;

use splitbrain_etcd_api::etcdserverpb::compare::{CompareResult, CompareTarget, TargetUnion};
use splitbrain_etcd_api::etcdserverpb::request_op::Request;
use splitbrain_etcd_api::etcdserverpb::{
    Compare, LeaseGrantRequest, LeaseKeepAliveRequest, LeaseRevokeRequest, MemberListRequest,
    RequestOp, ResponseHeader, TxnRequest,
};
use splitbrain_etcd_api::{Connection, Options};
use tonic::{Code, Status};

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
    fn of(status: Status) -> EtcdError {
        match status.code() {
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
        }
    }
}

/// One client process's connection to the cluster.
pub struct EtcdConn {
    members: Vec<SocketAddr>,
    /// Made at the first call: its balancer runs on the runtime, and building a lock client
    /// must not need one (the run checks that a client fits a deployment before anything
    /// starts).
    client: Option<Connection>,
    /// Member names (`n1`, …) by id, learnt once, to name the member that served a grant.
    names: HashMap<u64, String>,
    /// The member that answered the last call noted with [`EtcdConn::answered`].
    last: String,
}

impl EtcdConn {
    /// A connection to these members, made at its first call.
    pub fn new(nodes: &[(String, SocketAddr)]) -> EtcdConn {
        EtcdConn {
            members: nodes.iter().map(|(_, addr)| *addr).collect(),
            client: None,
            names: HashMap::new(),
            last: "?".into(),
        }
    }

    /// The client, made if it is not yet: connecting sends nothing, so it fails only on a
    /// bad endpoint.
    fn client(&mut self) -> Result<Connection, EtcdError> {
        if let Some(client) = &self.client {
            return Ok(client.clone());
        }
        let options = Options {
            connect_timeout: Duration::from_millis(500),
            timeout: OP_TIMEOUT,
            // A member cut off from the others says so at once instead of waiting.
            require_leader: true,
        };
        // No HTTP/2 keep-alive pings: etcd closes the connection of a client that pings more
        // often than every 5 s (`--grpc-keepalive-min-time`), failing every call on it; each
        // call is bounded in time instead.
        let client = Connection::connect(&self.members, options)
            .map_err(|e| EtcdError::Definite(format!("connecting: {e}")))?;
        self.client = Some(client.clone());
        Ok(client)
    }

    /// Runs one call on (a handle to) the client, bounded by [`OP_TIMEOUT`]: gRPC's deadline
    /// does not cover time queued in the balancer.
    pub async fn call<T, F, Fut>(&mut self, call: F) -> Result<T, EtcdError>
    where
        F: FnOnce(Connection) -> Fut,
        Fut: Future<Output = Result<T, Status>>,
    {
        let client = self.client()?;
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
        if !self.names.is_empty() {
            return;
        }
        let list = self.call(|mut c| async move {
            let request = MemberListRequest {
                linearizable: false,
            };
            Ok(c.cluster.member_list(request).await?.into_inner())
        });
        if let Ok(list) = list.await {
            self.names = list.members.into_iter().map(|m| (m.id, m.name)).collect();
        }
    }

    /// The name of the member that answered, from a reply's header.
    pub fn member(&self, header: Option<&ResponseHeader>) -> String {
        let id = header.map_or(0, |h| h.member_id);
        self.names
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
            .call(|mut c| async move {
                let request = LeaseGrantRequest {
                    ttl: seconds,
                    id: 0,
                };
                Ok(c.lease.lease_grant(request).await?.into_inner())
            })
            .await?;
        if lease.ttl != seconds {
            // etcd raises a lease shorter than its minimum; the holder would count on less
            // than the key really lives, so refuse rather than record a wrong validity.
            let _ = self.revoke(lease.id).await;
            return Err(EtcdError::Definite(format!(
                "asked for a {seconds} s lease and etcd granted {} s",
                lease.ttl
            )));
        }
        Ok(lease.id)
    }

    /// Revokes a lease, deleting every key attached to it. A lease already gone (expired,
    /// or revoked by an earlier attempt whose answer was lost) counts as revoked: its keys are
    /// gone either way.
    pub async fn revoke(&mut self, lease: i64) -> Result<(), EtcdError> {
        match self
            .call(|mut c| async move {
                let request = LeaseRevokeRequest { id: lease };
                c.lease.lease_revoke(request).await.map(drop)
            })
            .await
        {
            Err(EtcdError::Definite(e)) if e.contains("lease not found") => Ok(()),
            other => other,
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
                let request = LeaseKeepAliveRequest { id: lease };
                let stream = futures_util::stream::iter([request]);
                let mut replies = c.lease.lease_keep_alive(stream).await?.into_inner();
                replies.message().await
            })
            .await?;
        match renewed {
            Some(reply) if reply.ttl > 0 => Ok(()),
            Some(_) => Err(EtcdError::Definite("the lease had expired".into())),
            None => Err(EtcdError::Indeterminate(
                "the keep-alive stream closed without an answer".into(),
            )),
        }
    }
}

/// A transaction that does `then` only if `key`'s `target` (its value, or its create, mod or
/// version revision, or its lease) equals the one given.
pub fn txn_if_equal(key: &str, target: TargetUnion, then: Request) -> TxnRequest {
    let compared = match target {
        TargetUnion::Version(_) => CompareTarget::Version,
        TargetUnion::CreateRevision(_) => CompareTarget::Create,
        TargetUnion::ModRevision(_) => CompareTarget::Mod,
        TargetUnion::Value(_) => CompareTarget::Value,
        TargetUnion::Lease(_) => CompareTarget::Lease,
    };
    TxnRequest {
        compare: vec![Compare {
            result: CompareResult::Equal.into(),
            target: compared.into(),
            key: key.as_bytes().to_vec(),
            target_union: Some(target),
            range_end: vec![],
        }],
        success: vec![RequestOp {
            request: Some(then),
        }],
        failure: vec![],
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
        EtcdError::of(status)
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
