use std::time::Duration;

use super::{node_name, NodeSpec, Persistence, Topology, TopologyOptions};
use crate::system::{System, POSTGRES};

/// How soon the server gives up on a client whose machine or network is gone: a connection
/// idle this long is probed, every [`KEEPALIVE_INTERVAL`], and closed after
/// [`KEEPALIVE_COUNT`] unanswered probes, ending the session and every lock it held. Linux's
/// defaults (two hours, then nine probes 75 s apart) would keep a vanished holder's lock for
/// over two hours; these end it within about 4 s, as a lock service should.
pub const KEEPALIVE_IDLE: Duration = Duration::from_secs(2);
pub const KEEPALIVE_INTERVAL: Duration = Duration::from_secs(1);
pub const KEEPALIVE_COUNT: u32 = 2;
/// Where the cluster made at build time lives.
const DATA_DIR: &str = "/var/lib/splitbrain/pg";

/// One PostgreSQL server, its advisory locks the lock.
pub struct Postgres;

impl Topology for Postgres {
    fn name(&self) -> &'static str {
        "postgres"
    }

    fn summary(&self) -> &'static str {
        "one PostgreSQL server (advisory locks; lock-set's document lives in it too)"
    }

    fn system(&self) -> &'static dyn System {
        &POSTGRES
    }

    fn nodes(&self, options: &TopologyOptions) -> Result<Vec<NodeSpec>, String> {
        if options.persistence != Persistence::None {
            return Err(
                "--persistence chooses a Redis append-only file; PostgreSQL keeps its write-ahead \
                 log either way (leave --persistence out)"
                    .into(),
            );
        }
        match options.nodes {
            None | Some(1) => {}
            Some(n) => {
                return Err(format!(
                    "the postgres deployment has exactly 1 server, not {n}"
                ))
            }
        }
        let setting = |name: &str, value: String| ["-c".to_string(), format!("{name}={value}")];
        let args = [
            ["-D".to_string(), DATA_DIR.into()],
            setting("listen_addresses", "*".into()),
            setting("max_connections", "200".into()),
            // What a crash loses is not what the tests look at (advisory locks live in memory
            // only), and a busy machine's fsyncs would slow every write.
            setting("fsync", "off".into()),
            setting("synchronous_commit", "off".into()),
            setting("full_page_writes", "off".into()),
            setting("log_destination", "stderr".into()),
            setting("tcp_keepalives_idle", KEEPALIVE_IDLE.as_secs().to_string()),
            setting(
                "tcp_keepalives_interval",
                KEEPALIVE_INTERVAL.as_secs().to_string(),
            ),
            setting("tcp_keepalives_count", KEEPALIVE_COUNT.to_string()),
        ];
        Ok(vec![NodeSpec::new(node_name(0), args.concat())])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_server_that_gives_up_on_a_vanished_client_within_seconds() {
        let nodes = Postgres.nodes(&TopologyOptions::default()).unwrap();
        assert_eq!(nodes.len(), 1);
        assert!(nodes[0].args.contains(&"tcp_keepalives_idle=2".to_string()));
        let two = TopologyOptions {
            nodes: Some(2),
            ..Default::default()
        };
        assert!(Postgres.nodes(&two).is_err());
        let aof = TopologyOptions {
            persistence: Persistence::AofAlways,
            ..Default::default()
        };
        assert!(Postgres.nodes(&aof).is_err());
    }
}
