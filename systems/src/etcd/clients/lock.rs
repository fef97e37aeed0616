//! etcd's own lock API (v3lock), as users call it: a lease, then `Lock(name, lease)`, which
//! puts `name/<lease>` and waits, on the server, until every key under `name/` created before
//! it is gone. The holder's key's create revision is the fencing token. Released with
//! `Unlock(key)`, then the lease is revoked.

use std::time::{Duration, Instant};

use async_trait::async_trait;
use splitbrain_etcd_api::etcdserverpb::RangeRequest;
use splitbrain_etcd_api::v3lockpb::{LockRequest, UnlockRequest};

use super::lease::{give_back, lease_of, lease_token, on_etcd, renew_lease};
use super::{
    spin_delay, ClientConfig, ClientKind, CrashPoint, EtcdConn, EtcdError, Fences, Grant,
    LockClient, Outcome,
};

pub(crate) const KIND: ClientKind = ClientKind {
    name: "etcd-lock",
    summary:
        "etcd's lock API (Lock/Unlock on a kept-alive lease); the key's create revision fences",
    fences: Fences::Always,
    checks_lease: true,
    build,
};

fn build(config: &ClientConfig) -> Result<Box<dyn LockClient>, String> {
    Ok(Box::new(EtcdLock {
        etcd: on_etcd(config, KIND.name)?,
        crash: config.crash.clone(),
        keys: Vec::new(),
    }))
}

struct EtcdLock {
    etcd: EtcdConn,
    crash: CrashPoint,
    /// The lock key of each lease held, which `Unlock` takes.
    keys: Vec<(i64, Vec<u8>)>,
}

#[async_trait]
impl LockClient for EtcdLock {
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
        let name = resource.as_bytes().to_vec();
        // `Lock` waits for the holders before it; the lease is not kept alive meanwhile, so
        // an attempt waits at most half of it (and the grant is valid for the lease from
        // `started`, which began before the lease did).
        let wait = ttl / 2;
        let lock = tokio::time::timeout(
            wait,
            self.etcd.call(|mut c| async move {
                let locked = c.lock.lock(LockRequest { name, lease }).await?.into_inner();
                // The key's own create revision is the token; the reply's header revision is
                // only at least that.
                let get = RangeRequest {
                    key: locked.key.clone(),
                    ..RangeRequest::default()
                };
                let got = c.kv.range(get).await?.into_inner();
                Ok((locked, got))
            }),
        )
        .await;
        let (locked, got) = match lock {
            Ok(Ok(reply)) => reply,
            Err(_) => {
                // Still queued behind a holder: revoking the lease deletes the waiting key.
                let queued = format!("{}: still queued", splitbrain_checker::acquisition::HELD);
                return give_back(&mut self.etcd, lease, queued, started).await;
            }
            Ok(Err(EtcdError::Definite(e))) => {
                let _ = self.etcd.revoke(lease).await;
                return Outcome::Fail(e);
            }
            Ok(Err(EtcdError::Indeterminate(e))) => {
                return give_back(&mut self.etcd, lease, e, started).await
            }
        };
        let Some(fence) = got.kvs.first().map(|kv| kv.create_revision as u64) else {
            // The key was gone by the time it was read: the lease ended.
            return Outcome::Fail("the lock key was gone as soon as it was granted".into());
        };
        if self.crash.crash_now() {
            return Outcome::Info("crashed: the client died holding the lock".into());
        }
        let node = self.etcd.member(locked.header.as_ref());
        self.keys.push((lease, locked.key));
        Outcome::Ok(Grant {
            token: lease_token(lease),
            validity: ttl,
            nodes: vec![node],
            fence: Some(fence),
        })
    }

    async fn release(&mut self, _resource: &str, grant: &Grant) -> Outcome<()> {
        let Some(lease) = lease_of(grant) else {
            return Outcome::Fail("the grant names no lease".into());
        };
        let Some(at) = self.keys.iter().position(|(l, _)| *l == lease) else {
            return Outcome::Fail("no lock key for this grant".into());
        };
        let (_, key) = self.keys.swap_remove(at);
        let unlock = self
            .etcd
            .call(|mut c| async move { c.lock.unlock(UnlockRequest { key }).await })
            .await;
        let _ = self.etcd.revoke(lease).await;
        match unlock {
            Ok(_) => Outcome::Ok(()),
            Err(EtcdError::Definite(e)) => Outcome::Fail(e),
            Err(EtcdError::Indeterminate(e)) => Outcome::Info(e),
        }
    }

    fn retry_delay(&mut self, _failures: u32) -> Duration {
        spin_delay()
    }

    fn renewal_interval(&self, ttl: Duration) -> Option<Duration> {
        Some(ttl / 3)
    }

    async fn renew(&mut self, _resource: &str, grant: &Grant, _ttl: Duration) -> Outcome<()> {
        renew_lease(&mut self.etcd, grant).await
    }
}
