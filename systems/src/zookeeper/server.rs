//! ZooKeeper: an ensemble of members that elect a leader (Zab), asked who they are with the
//! four-letter words over their client port.

use std::net::SocketAddr;
use std::time::Duration;

use futures_util::future::BoxFuture;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use splitbrain_compose::image::{Recipe, NODE_ENTRY_POINT};
use splitbrain_compose::System;

/// The port members serve clients (and four-letter words) on.
pub const ZOOKEEPER_CLIENT_PORT: u16 = 2181;
/// The port followers reach their leader on.
pub const ZOOKEEPER_QUORUM_PORT: u16 = 2888;
/// The port members elect a leader on.
pub const ZOOKEEPER_ELECTION_PORT: u16 = 3888;

pub struct ZooKeeper;

pub static SERVER: ZooKeeper = ZooKeeper;

/// The ZooKeeper member: Debian's ZooKeeper jar on a headless JRE, a script that writes the
/// member's `myid` and `zoo.cfg` and runs it, iptables, and the node entry point that crashes
/// and restarts the server in place (it keeps its data directory, as a crashed machine keeps
/// its disk).
static IMAGE: Recipe = Recipe {
    repository: "splitbrain/zookeeper-node",
    context: &[
        ("Dockerfile", include_str!("image/Dockerfile"), 0o644),
        (
            "splitbrain-zookeeper",
            include_str!("image/splitbrain-zookeeper"),
            0o755,
        ),
        NODE_ENTRY_POINT,
    ],
    args: &[],
};

impl System for ZooKeeper {
    fn name(&self) -> &'static str {
        "zookeeper-3.8"
    }

    fn summary(&self) -> &'static str {
        "Debian bookworm's ZooKeeper 3.8 (the zookeeper deployment's)"
    }

    fn image(&self) -> &'static Recipe {
        &IMAGE
    }

    fn port(&self) -> u16 {
        ZOOKEEPER_CLIENT_PORT
    }

    fn command(&self, args: Vec<String>) -> Vec<String> {
        std::iter::once("splitbrain-zookeeper".to_string())
            .chain(args)
            .collect()
    }

    fn probe(&self, addr: SocketAddr) -> BoxFuture<'static, Result<(), String>> {
        Box::pin(async move { srvr(addr).await.map(drop) })
    }

    fn formed(&self, nodes: Vec<(String, SocketAddr)>) -> BoxFuture<'static, Result<(), String>> {
        Box::pin(async move {
            let mut modes = Vec::new();
            for (name, addr) in &nodes {
                let status = srvr(*addr).await.map_err(|e| format!("{name}: {e}"))?;
                modes.push((name.clone(), status.mode));
            }
            ensemble_formed(&modes)
        })
    }

    fn leaders(&self, nodes: Vec<(String, SocketAddr)>) -> BoxFuture<'static, Vec<String>> {
        Box::pin(async move {
            let mut leaders = Vec::new();
            for (name, addr) in &nodes {
                if let Ok(status) = srvr(*addr).await {
                    if status.mode.leads() {
                        leaders.push(name.clone());
                    }
                }
            }
            leaders
        })
    }

    fn version(&self, addr: SocketAddr) -> BoxFuture<'static, Option<String>> {
        Box::pin(async move { Some(format!("zookeeper {}", srvr(addr).await.ok()?.version)) })
    }

    fn log_file(&self) -> &'static str {
        "zookeeper.log"
    }

    fn clock_faults_reach(&self) -> bool {
        // The shim is only in the Redis image, and ZooKeeper times sessions and elections with
        // System.nanoTime, the monotonic clock, which the shim leaves alone anyway.
        false
    }
}

/// What a member says it is, in `srvr`'s `Mode:` line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Leader,
    Follower,
    Observer,
    /// A single member with no ensemble: it serves alone, so it leads itself.
    Standalone,
}

impl Mode {
    fn parse(word: &str) -> Option<Mode> {
        match word {
            "leader" => Some(Mode::Leader),
            "follower" => Some(Mode::Follower),
            "observer" => Some(Mode::Observer),
            "standalone" => Some(Mode::Standalone),
            _ => None,
        }
    }

    fn leads(self) -> bool {
        matches!(self, Mode::Leader | Mode::Standalone)
    }
}

/// A serving member's answer to `srvr`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Srvr {
    /// `3.8.0`: the release, without Debian's suffix or the build date.
    pub version: String,
    pub mode: Mode,
}

/// Reads `srvr`'s answer. A member that is not in a quorum answers only "This ZooKeeper
/// instance is not currently serving requests", which is the error.
pub fn parse_srvr(answer: &str) -> Result<Srvr, String> {
    let field = |name: &str| answer.lines().find_map(|l| l.strip_prefix(name));
    let Some(mode) = field("Mode:") else {
        let said = answer.lines().next().unwrap_or("nothing").trim();
        return Err(format!("not serving: it said `{said}`"));
    };
    let mode = Mode::parse(mode.trim()).ok_or_else(|| format!("an unknown mode `{mode}`"))?;
    // `Zookeeper version: 3.8.0-debian, built on ...`
    let version = field("Zookeeper version:")
        .and_then(|v| v.trim().split(['-', ',', ' ']).next())
        .unwrap_or("?")
        .to_string();
    Ok(Srvr { version, mode })
}

/// Whether these members form one ensemble: exactly one leads, and every other follows.
pub fn ensemble_formed(modes: &[(String, Mode)]) -> Result<(), String> {
    let leaders: Vec<&str> = modes
        .iter()
        .filter(|(_, mode)| mode.leads())
        .map(|(name, _)| name.as_str())
        .collect();
    if leaders.len() != 1 {
        return Err(format!("{} leaders: {leaders:?}", leaders.len()));
    }
    match modes
        .iter()
        .find(|(_, mode)| *mode != Mode::Follower && !mode.leads())
    {
        Some((name, mode)) => Err(format!("{name} is a {mode:?}, not a follower")),
        None => Ok(()),
    }
}

/// One member's `srvr`, on a connection of its own, given a second.
async fn srvr(addr: SocketAddr) -> Result<Srvr, String> {
    parse_srvr(&four_letter_word(addr, "srvr").await?)
}

/// Sends a four-letter word and reads the answer to the end: the member closes the connection
/// once it has answered.
async fn four_letter_word(addr: SocketAddr, word: &str) -> Result<String, String> {
    let attempt = async {
        let mut stream = tokio::net::TcpStream::connect(addr).await?;
        stream.write_all(word.as_bytes()).await?;
        let mut answer = String::new();
        stream.read_to_string(&mut answer).await?;
        Ok::<_, std::io::Error>(answer)
    };
    match tokio::time::timeout(Duration::from_secs(1), attempt).await {
        Ok(Ok(answer)) => Ok(answer),
        Ok(Err(e)) => Err(e.to_string()),
        Err(_) => Err("timed out".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FOLLOWER: &str = "Zookeeper version: 3.8.0-debian, built on 2023-01-01 00:00 UTC\n\
        Latency min/avg/max: 0/0.0/0\nReceived: 2\nSent: 1\nConnections: 1\nOutstanding: 0\n\
        Zxid: 0x100000000\nMode: follower\nNode count: 5\n";

    #[test]
    fn srvr_says_the_version_and_the_mode() {
        let status = parse_srvr(FOLLOWER).unwrap();
        assert_eq!(status.version, "3.8.0");
        assert_eq!(status.mode, Mode::Follower);
        let leader = FOLLOWER.replace("follower", "leader");
        assert_eq!(parse_srvr(&leader).unwrap().mode, Mode::Leader);
    }

    #[test]
    fn a_member_without_a_quorum_is_not_serving() {
        let error =
            parse_srvr("This ZooKeeper instance is not currently serving requests\n").unwrap_err();
        assert!(error.contains("not currently serving"), "{error}");
        assert!(parse_srvr(&FOLLOWER.replace("follower", "looking")).is_err());
    }

    #[test]
    fn formed_is_one_leader_and_followers_only() {
        let ensemble = |modes: &[Mode]| -> Vec<(String, Mode)> {
            modes
                .iter()
                .enumerate()
                .map(|(i, m)| (format!("n{}", i + 1), *m))
                .collect()
        };
        use Mode::*;
        assert!(ensemble_formed(&ensemble(&[Follower, Leader, Follower])).is_ok());
        assert!(ensemble_formed(&ensemble(&[Standalone])).is_ok());
        assert!(ensemble_formed(&ensemble(&[Follower, Follower, Follower])).is_err());
        assert!(ensemble_formed(&ensemble(&[Leader, Leader, Follower])).is_err());
        assert!(ensemble_formed(&ensemble(&[Leader, Observer, Follower])).is_err());
    }
}
