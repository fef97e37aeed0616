//! etcd's v3 gRPC API: the clients of the KV, Lease, Cluster, Maintenance and Lock services,
//! generated at build time from `proto/` by a protobuf compiler written in Rust, and one
//! connection balanced over a cluster's members.

use std::net::SocketAddr;
use std::time::Duration;

use tonic::metadata::AsciiMetadataValue;
use tonic::service::interceptor::InterceptedService;
use tonic::service::Interceptor;
use tonic::transport::{Channel, Endpoint};
use tonic::{Request, Status};

pub mod etcdserverpb {
    tonic::include_proto!("etcdserverpb");
}
pub mod mvccpb {
    tonic::include_proto!("mvccpb");
}
pub mod v3lockpb {
    tonic::include_proto!("v3lockpb");
}

use etcdserverpb::cluster_client::ClusterClient;
use etcdserverpb::kv_client::KvClient;
use etcdserverpb::lease_client::LeaseClient;
use etcdserverpb::maintenance_client::MaintenanceClient;
use v3lockpb::lock_client::LockClient;

/// How a connection treats its calls.
#[derive(Debug, Clone, Copy)]
pub struct Options {
    /// How long opening a TCP connection to a member may take.
    pub connect_timeout: Duration,
    /// How long one call may take on the wire (gRPC's deadline).
    pub timeout: Duration,
    /// Asks members to refuse a call at once while they know no leader (etcd's `hasleader`
    /// metadata), instead of waiting for one.
    pub require_leader: bool,
}

/// The channel every service client shares, with the leader requirement attached.
pub type Service = InterceptedService<Channel, RequireLeader>;

/// A connection to an etcd cluster: one client per service, all on one channel balanced over
/// the members. Cloning is cheap and shares the connection. Making one sends nothing; the
/// members are dialled at the first call.
#[derive(Clone)]
pub struct Connection {
    pub kv: KvClient<Service>,
    pub lease: LeaseClient<Service>,
    pub cluster: ClusterClient<Service>,
    pub maintenance: MaintenanceClient<Service>,
    pub lock: LockClient<Service>,
}

impl Connection {
    /// A connection to these members. Must be called inside a Tokio runtime, which the
    /// balancer's task runs on.
    pub fn connect(members: &[SocketAddr], options: Options) -> Result<Connection, String> {
        if members.is_empty() {
            return Err("no etcd member to connect to".into());
        }
        let endpoints = members
            .iter()
            .map(|addr| {
                Endpoint::from_shared(format!("http://{addr}"))
                    .map(|e| {
                        e.connect_timeout(options.connect_timeout)
                            .timeout(options.timeout)
                    })
                    .map_err(|e| format!("{addr}: {e}"))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let channel = Channel::balance_list(endpoints.into_iter());
        let service = InterceptedService::new(channel, RequireLeader(options.require_leader));
        Ok(Connection {
            kv: KvClient::new(service.clone()),
            lease: LeaseClient::new(service.clone()),
            cluster: ClusterClient::new(service.clone()),
            maintenance: MaintenanceClient::new(service.clone()),
            lock: LockClient::new(service),
        })
    }
}

/// Adds etcd's `hasleader: true` metadata to every call when on, as Go's clientv3
/// `WithRequireLeader` does.
#[derive(Debug, Clone, Copy)]
pub struct RequireLeader(bool);

impl Interceptor for RequireLeader {
    fn call(&mut self, mut request: Request<()>) -> Result<Request<()>, Status> {
        if self.0 {
            request
                .metadata_mut()
                .insert("hasleader", AsciiMetadataValue::from_static("true"));
        }
        Ok(request)
    }
}
