//! The lock the article describes for etcd: a lease, kept alive while the lock is held, and a
//! transaction that puts the key with that lease only if the key does not exist (its create
//! revision is 0). The key's create revision is the fencing token: it rises with every new
//! holder. Released by deleting the key only if it is still the one this client created, then
//! revoking the lease.

use std::time::{Duration, Instant};

use async_trait::async_trait;
use splitbrain_etcd_api::etcdserverpb::compare::TargetUnion;
use splitbrain_etcd_api::etcdserverpb::request_op::Request;
use splitbrain_etcd_api::etcdserverpb::{DeleteRangeRequest, PutRequest};

use super::{
    check_ttl, held_by_another, txn_if_equal, ClientConfig, ClientKind, CrashPoint, EtcdConn,
    EtcdDeployment, EtcdError, Fences, Grant, LockClient, Outcome,
};

pub(crate) const KIND: ClientKind = ClientKind {
    name: "etcd-lease",
    summary:
        "etcd: a kept-alive lease and a create-if-absent transaction; the key's revision fences",
    fences: Fences::Always,
    checks_lease: true,
    build,
};

fn build(config: &ClientConfig) -> Result<Box<dyn LockClient>, String> {
    Ok(Box::new(EtcdLease {
        etcd: on_etcd(config, KIND.name)?,
        crash: config.crash.clone(),
    }))
}

/// A connection for an etcd client, or why the deployment does not fit `who`.
pub(super) fn on_etcd(config: &ClientConfig, who: &str) -> Result<EtcdConn, String> {
    config.connection::<EtcdDeployment>(who)?;
    check_ttl(config.ttl)?;
    Ok(EtcdConn::new(&config.nodes))
}

struct EtcdLease {
    etcd: EtcdConn,
    crash: CrashPoint,
}

/// A grant's token: the lease id, which etcd never reuses, in hex as etcdctl prints it.
pub(super) fn lease_token(lease: i64) -> String {
    format!("{lease:x}")
}

pub(super) fn lease_of(grant: &Grant) -> Option<i64> {
    i64::from_str_radix(&grant.token, 16).ok()
}

#[async_trait]
impl LockClient for EtcdLease {
    async fn prepare(&mut self) -> Result<(), String> {
        self.etcd.learn_members().await;
        Ok(())
    }

    async fn acquire(&mut self, resource: &str, ttl: Duration) -> Outcome<Grant> {
        let started = Instant::now();
        let lease = match self.etcd.fresh_lease(ttl).await {
            Ok(lease) => lease,
            Err(e) => return Outcome::Fail(e),
        };
        let token = lease_token(lease);
        let put = PutRequest {
            key: resource.as_bytes().to_vec(),
            value: token.clone().into_bytes(),
            lease,
            ..PutRequest::default()
        };
        // Created at revision 0: the key does not exist.
        let txn = txn_if_equal(
            resource,
            TargetUnion::CreateRevision(0),
            Request::RequestPut(put),
        );
        let take = self
            .etcd
            .call(|mut c| async move { Ok(c.kv.txn(txn).await?.into_inner()) })
            .await;
        match take {
            Ok(reply) if reply.succeeded => {
                if self.crash.crash_now() {
                    return Outcome::Info("crashed: the client died holding the lock".into());
                }
                Outcome::Ok(Grant {
                    token,
                    // The lease began after `started`.
                    validity: ttl,
                    nodes: vec![self.etcd.member(reply.header.as_ref())],
                    // The put made the key: its create revision is this revision.
                    fence: reply.header.map(|h| h.revision as u64),
                })
            }
            Ok(_) => {
                let _ = self.etcd.revoke(lease).await;
                Outcome::Fail(held_by_another())
            }
            Err(EtcdError::Definite(e)) => {
                let _ = self.etcd.revoke(lease).await;
                Outcome::Fail(e)
            }
            Err(EtcdError::Indeterminate(e)) => give_back(&mut self.etcd, lease, e, started).await,
        }
    }

    async fn release(&mut self, resource: &str, grant: &Grant) -> Outcome<()> {
        let Some(fence) = grant.fence else {
            return Outcome::Fail("the grant has no revision to release by".into());
        };
        let delete = DeleteRangeRequest {
            key: resource.as_bytes().to_vec(),
            ..DeleteRangeRequest::default()
        };
        let txn = txn_if_equal(
            resource,
            TargetUnion::CreateRevision(fence as i64),
            Request::RequestDeleteRange(delete),
        );
        let delete = self
            .etcd
            .call(|mut c| async move { Ok(c.kv.txn(txn).await?.into_inner()) })
            .await;
        // The lease goes either way; what it still held is gone with it.
        if let Some(lease) = lease_of(grant) {
            let _ = self.etcd.revoke(lease).await;
        }
        match delete {
            Ok(reply) if reply.succeeded => Outcome::Ok(()),
            Ok(_) => Outcome::Fail("the lock was no longer ours (expired or taken)".into()),
            Err(EtcdError::Definite(e)) => Outcome::Fail(e),
            Err(EtcdError::Indeterminate(e)) => Outcome::Info(e),
        }
    }

    fn retry_delay(&mut self, _failures: u32) -> Duration {
        // Each attempt is three writes through Raft (grant, transaction, revoke); a slower
        // poll than a Redis spin lock's keeps five clients from saturating the log.
        Duration::from_millis(rand::random_range(25..=75))
    }

    fn renewal_interval(&self, ttl: Duration) -> Option<Duration> {
        // Go's clientv3 keeps a lease alive every third of its TTL.
        Some(ttl / 3)
    }

    async fn renew(&mut self, _resource: &str, grant: &Grant, _ttl: Duration) -> Outcome<()> {
        renew_lease(&mut self.etcd, grant).await
    }
}

/// After an attempt whose outcome is unknown, revokes its lease, as Go's `concurrency`
/// package closes its session on an error: once the revoke is committed, the key cannot stand
/// (a put with a revoked lease fails), so the attempt certainly holds nothing. It tries for as
/// long as a leader election takes; only when no revoke got through is the attempt unknown.
/// How long an attempt whose outcome is unknown keeps trying to revoke its lease: long enough
/// for a cut-off leader's partition to heal and the election that follows (etcd 3.4 runs
/// without pre-vote, so a rejoining member forces one), measured at up to 7 s here.
const GIVE_BACK_PATIENCE: Duration = Duration::from_secs(10);

pub(super) async fn give_back(
    etcd: &mut EtcdConn,
    lease: i64,
    error: String,
    started: Instant,
) -> Outcome<Grant> {
    let after = started.elapsed().as_millis();
    match etcd.revoke_patiently(lease, GIVE_BACK_PATIENCE).await {
        Ok(()) => Outcome::Fail(format!(
            "{error} after {after} ms; revoked the lease, so nothing is held"
        )),
        Err(e) => Outcome::Info(format!(
            "{error} after {after} ms, and revoking the lease: {e}"
        )),
    }
}

/// One keep-alive of the grant's lease.
pub(super) async fn renew_lease(etcd: &mut EtcdConn, grant: &Grant) -> Outcome<()> {
    let Some(lease) = lease_of(grant) else {
        return Outcome::Fail("the grant names no lease".into());
    };
    match etcd.keep_alive(lease).await {
        Ok(()) => Outcome::Ok(()),
        Err(EtcdError::Definite(e)) => Outcome::Fail(e),
        Err(EtcdError::Indeterminate(e)) => Outcome::Info(e),
    }
}
