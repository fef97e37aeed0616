//! The `register` workload's registers as etcd keys.

use std::net::SocketAddr;

use async_trait::async_trait;
use splitbrain_checker::OpType;
use splitbrain_etcd_api::etcdserverpb::compare::TargetUnion;
use splitbrain_etcd_api::etcdserverpb::request_op::Request;
use splitbrain_etcd_api::etcdserverpb::{PutRequest, RangeRequest};
use splitbrain_workloads::workload::{Registers, Unsettled};

use super::connection::{txn_if_equal, EtcdConn, EtcdError};

/// A `register` worker's registers, on every member.
pub(super) fn registers(nodes: &[(String, SocketAddr)]) -> Box<dyn Registers> {
    Box::new(EtcdRegisters(EtcdConn::new(nodes)))
}

/// Registers as etcd keys: a linearizable range read, a put, and a transaction that puts only
/// if the value compares equal.
struct EtcdRegisters(EtcdConn);

fn settled(error: EtcdError) -> Unsettled {
    match error {
        EtcdError::Definite(e) => (OpType::Fail, e),
        EtcdError::Indeterminate(e) => (OpType::Info, e),
    }
}

#[async_trait]
impl Registers for EtcdRegisters {
    async fn read(&mut self, key: &str) -> Result<Option<i64>, Unsettled> {
        self.0.learn_members().await;
        let get = RangeRequest {
            key: key.as_bytes().to_vec(),
            ..RangeRequest::default()
        };
        let got = self
            .0
            .call(|mut c| async move { Ok(c.kv.range(get).await?.into_inner()) })
            .await
            .map_err(settled)?;
        self.0.answered(got.header.as_ref());
        match got.kvs.first() {
            None => Ok(None),
            Some(kv) => std::str::from_utf8(&kv.value)
                .ok()
                .and_then(|v| v.parse().ok())
                .map(Some)
                .ok_or_else(|| (OpType::Fail, "the register holds no integer".to_string())),
        }
    }

    async fn write(&mut self, key: &str, value: i64) -> Result<(), Unsettled> {
        self.0.learn_members().await;
        let put = PutRequest {
            key: key.as_bytes().to_vec(),
            value: value.to_string().into_bytes(),
            ..PutRequest::default()
        };
        let put = self
            .0
            .call(|mut c| async move { Ok(c.kv.put(put).await?.into_inner()) })
            .await
            .map_err(settled)?;
        self.0.answered(put.header.as_ref());
        Ok(())
    }

    async fn cas(&mut self, key: &str, expected: i64, new: i64) -> Result<bool, Unsettled> {
        self.0.learn_members().await;
        let put = PutRequest {
            key: key.as_bytes().to_vec(),
            value: new.to_string().into_bytes(),
            ..PutRequest::default()
        };
        let expected = TargetUnion::Value(expected.to_string().into_bytes());
        let txn = txn_if_equal(key, expected, Request::RequestPut(put));
        let done = self
            .0
            .call(|mut c| async move { Ok(c.kv.txn(txn).await?.into_inner()) })
            .await
            .map_err(settled)?;
        self.0.answered(done.header.as_ref());
        Ok(done.succeeded)
    }

    fn node(&self) -> String {
        self.0.last_member()
    }
}
