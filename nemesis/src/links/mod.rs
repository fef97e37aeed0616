//! The client-to-node link proxy: every client group reaches every node through its own TCP
//! proxy, so that one group's links can be slowed, cut or reset while another's are not.
//! Toxics follow toxiproxy's semantics: latency (with jitter), blackhole (data stops, the
//! connection stays open), reset (connections die with a TCP RST), bandwidth, slow close.
//! Each applies to one direction: `upstream` (client to node) or `downstream`.
//!
//! A link is the path from a group to a node's machine, not to one port: another port of the
//! node (its Sentinel's) can be carried over the same link, with the same toxics and source
//! ports, so that a client cut off from a node is cut off from its Sentinel too.

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::ops::RangeInclusive;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rand::Rng;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpSocket, TcpStream};
use tokio::sync::{mpsc, watch};
use tokio::task::JoinSet;

pub mod toxiproxy;

/// What is wrong with one direction of a link.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Toxics {
    pub latency: Duration,
    pub jitter: Duration,
    /// Swallow every byte, keeping the connection open.
    pub blackhole: bool,
    /// Bytes per second, if limited.
    pub bandwidth: Option<u64>,
    /// How long to wait before passing on a close.
    pub slow_close: Duration,
}

/// Both directions of a link.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LinkState {
    pub upstream: Toxics,
    pub downstream: Toxics,
    /// New connections are reset at once, and existing ones were reset when this was set.
    pub reset: bool,
}

/// One proxied link: a listening port on the loopback that forwards to one upstream.
struct Link {
    listen: SocketAddr,
    upstream: String,
    /// What the proxy applies: the nemesis's toxics and the API's, together.
    state: watch::Sender<LinkState>,
    /// Bumped to reset every open connection.
    resets: watch::Sender<u64>,
    layers: Mutex<Layers>,
    /// Made by the run (a client group's link to a node), not through the API.
    builtin: bool,
    /// The ports a group's connections leave from (a run's links only).
    source: Option<RangeInclusive<u16>>,
    task: tokio::task::AbortHandle,
    /// The node's other ports this link carries: (upstream, where it listens, its proxy).
    other_ports: Mutex<Vec<(SocketAddr, SocketAddr, tokio::task::AbortHandle)>>,
}

/// Who asked for which toxics on a link.
#[derive(Default)]
struct Layers {
    /// The run's network conditions (`--link-jitter`): what the link does when nothing else
    /// is asked of it. A fault's toxics replace it while they last; a heal returns to it.
    baseline: LinkState,
    nemesis: LinkState,
    api: Vec<toxiproxy::ApiToxic>,
    disabled: bool,
}

impl Link {
    fn update(&self, change: impl FnOnce(&mut Layers)) {
        let mut layers = self.layers.lock().unwrap_or_else(|e| e.into_inner());
        change(&mut layers);
        let mut state = if layers.nemesis == LinkState::default() {
            layers.baseline.clone()
        } else {
            layers.nemesis.clone()
        };
        for toxic in &layers.api {
            // Toxics are checked when they are added; a bad one cannot be here.
            let _ = toxic.apply(&mut state);
        }
        state.reset |= layers.disabled;
        if state.reset && !self.state.borrow().reset {
            self.resets.send_modify(|n| *n += 1);
        }
        self.state.send_replace(state);
    }

    fn api_toxics(&self) -> Vec<toxiproxy::ApiToxic> {
        self.layers
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .api
            .clone()
    }

    fn enabled(&self) -> bool {
        !self
            .layers
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .disabled
    }
}

/// Every (client group, node) link of a run, and any proxy made through the toxiproxy API.
/// Cloning shares the links.
#[derive(Clone, Default)]
pub struct Links {
    groups: usize,
    links: Arc<Mutex<BTreeMap<String, Arc<Link>>>>,
}

/// A link's name: `g<group>-><node>`.
pub fn link_name(group: usize, node: &str) -> String {
    format!("g{group}->{node}")
}

/// The client group and node a link's name names.
pub fn parse_link_name(name: &str) -> Option<(usize, &str)> {
    let (group, node) = name.strip_prefix('g')?.split_once("->")?;
    Some((group.parse().ok()?, node))
}

/// The lowest source port of the client groups' connections to the nodes.
const FIRST_SOURCE_PORT: u16 = 20_000;
const SOURCE_PORTS_PER_GROUP: u16 = 500;
/// How many groups get a range of their own, all below Linux's ephemeral ports (32768 up).
pub const GROUPS_WITH_SOURCE_PORTS: usize = 25;

/// The source ports a client group's links connect to the nodes from: a range of its own,
/// so that a node's firewall can drop one group's packets (the `link-drop` fault) without the
/// proxy, whose kernel would otherwise answer for the group. Below the kernel's ephemeral
/// ports, so that no other connection takes them.
pub fn source_ports(group: usize) -> Option<RangeInclusive<u16>> {
    if group >= GROUPS_WITH_SOURCE_PORTS {
        return None;
    }
    let first = FIRST_SOURCE_PORT + group as u16 * SOURCE_PORTS_PER_GROUP;
    Some(first..=first + SOURCE_PORTS_PER_GROUP - 1)
}

impl Links {
    /// Starts a proxy for every group and node, each on its own loopback port.
    pub async fn start(groups: usize, nodes: &[(String, SocketAddr)]) -> std::io::Result<Links> {
        let links = Links {
            groups,
            ..Links::default()
        };
        for group in 0..groups {
            for (node, upstream) in nodes {
                let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
                let name = link_name(group, node);
                links.add(name, listener, upstream.to_string(), source_ports(group))?;
            }
        }
        Ok(links)
    }

    /// Starts proxying `listener` to `upstream` under `name`; a client group's link connects
    /// from its group's `source` ports, and one made through the API from any.
    fn add(
        &self,
        name: String,
        listener: TcpListener,
        upstream: String,
        source: Option<RangeInclusive<u16>>,
    ) -> std::io::Result<Arc<Link>> {
        let builtin = source.is_some();
        let state = watch::Sender::new(LinkState::default());
        let resets = watch::Sender::new(0);
        let listen = listener.local_addr()?;
        let task = tokio::spawn(serve(
            listener,
            (upstream.clone(), source.clone()),
            state.subscribe(),
            resets.clone(),
        ))
        .abort_handle();
        let link = Arc::new(Link {
            listen,
            upstream,
            state,
            resets,
            layers: Mutex::new(Layers::default()),
            builtin,
            source,
            task,
            other_ports: Mutex::default(),
        });
        self.map().insert(name, link.clone());
        Ok(link)
    }

    fn map(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, Arc<Link>>> {
        self.links.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn get(&self, name: &str) -> Option<Arc<Link>> {
        self.map().get(name).cloned()
    }

    /// How many client groups have links (0 for none).
    pub fn groups(&self) -> usize {
        self.groups
    }

    /// Where a group's clients connect to reach `node`.
    pub fn address(&self, group: usize, node: &str) -> Option<SocketAddr> {
        self.get(&link_name(group, node)).map(|l| l.listen)
    }

    /// Carries another port of `node` (its Sentinel's) over every group's link to it.
    pub async fn carry(&self, node: &str, upstream: SocketAddr) -> std::io::Result<()> {
        for group in 0..self.groups {
            let Some(link) = self.get(&link_name(group, node)) else {
                continue;
            };
            let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
            let listen = listener.local_addr()?;
            let task = tokio::spawn(serve(
                listener,
                (upstream.to_string(), link.source.clone()),
                link.state.subscribe(),
                link.resets.clone(),
            ))
            .abort_handle();
            link.other_ports
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push((upstream, listen, task));
        }
        Ok(())
    }

    /// Where a group's clients connect to reach `upstream`, a port of `node` its link carries.
    pub fn carried_address(
        &self,
        group: usize,
        node: &str,
        upstream: SocketAddr,
    ) -> Option<SocketAddr> {
        let link = self.get(&link_name(group, node))?;
        let carried = link.other_ports.lock().unwrap_or_else(|e| e.into_inner());
        carried
            .iter()
            .find(|(to, _, _)| *to == upstream)
            .map(|(_, listen, _)| *listen)
    }

    /// Every link's name.
    pub fn names(&self) -> Vec<String> {
        self.map().keys().cloned().collect()
    }

    /// Sets the nemesis's toxics on a link (the API's stay). Setting `reset` also kills its
    /// open connections.
    pub fn set(&self, name: &str, state: LinkState) -> bool {
        let Some(link) = self.get(name) else {
            return false;
        };
        link.update(|layers| layers.nemesis = state);
        true
    }

    /// Sets the run's network conditions on every link, beneath any fault's toxics.
    pub fn set_baseline(&self, state: LinkState) {
        for link in self.map().values() {
            link.update(|layers| layers.baseline = state.clone());
        }
    }

    /// Links that still carry a toxic beyond their baseline, or are disabled.
    pub fn toxic(&self) -> Vec<String> {
        self.map()
            .iter()
            .filter(|(_, l)| {
                let baseline = l
                    .layers
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .baseline
                    .clone();
                *l.state.borrow() != baseline
            })
            .map(|(name, _)| name.clone())
            .collect()
    }

    /// Clears every toxic on every link, and enables every link; baselines stay.
    pub fn heal(&self) {
        for link in self.map().values() {
            link.update(|layers| {
                *layers = Layers {
                    baseline: std::mem::take(&mut layers.baseline),
                    ..Layers::default()
                }
            });
        }
    }

    /// Stops every proxy.
    pub fn shutdown(&self) {
        for link in self.map().values() {
            link.task.abort();
            let carried = link.other_ports.lock().unwrap_or_else(|e| e.into_inner());
            for (_, _, task) in carried.iter() {
                task.abort();
            }
        }
    }
}

async fn serve(
    listener: TcpListener,
    (upstream, source): (String, Option<RangeInclusive<u16>>),
    state: watch::Receiver<LinkState>,
    resets: watch::Sender<u64>,
) {
    let mut connections = JoinSet::new();
    loop {
        let Ok((client, _)) = listener.accept().await else {
            continue;
        };
        let (state, resets) = (state.clone(), resets.subscribe());
        let (upstream, source) = (upstream.clone(), source.clone());
        connections.spawn(async move {
            let refused = state.borrow().reset;
            if refused {
                reset(&client);
                return;
            }
            if let Ok(server) = connect(&upstream, source).await {
                proxy(client, server, state, resets).await;
            }
        });
        // Reap finished connections so the set does not grow without bound.
        while connections.try_join_next().is_some() {}
    }
}

/// Connects to `upstream`, from a port in `source` where given (trying them from a random one
/// on: a port still in TIME_WAIT towards the same node refuses).
async fn connect(
    upstream: &str,
    source: Option<RangeInclusive<u16>>,
) -> std::io::Result<TcpStream> {
    let Some(source) = source else {
        return TcpStream::connect(upstream).await;
    };
    let addr = tokio::net::lookup_host(upstream)
        .await?
        .next()
        .ok_or_else(|| std::io::Error::other(format!("{upstream} has no address")))?;
    let ports: Vec<u16> = source.collect();
    let offset = rand::rng().random_range(0..ports.len());
    for port in ports.iter().cycle().skip(offset).take(ports.len()) {
        let socket = if addr.is_ipv4() {
            TcpSocket::new_v4()?
        } else {
            TcpSocket::new_v6()?
        };
        socket.set_reuseaddr(true)?;
        let any: IpAddr = if addr.is_ipv4() {
            Ipv4Addr::UNSPECIFIED.into()
        } else {
            Ipv6Addr::UNSPECIFIED.into()
        };
        let local = SocketAddr::new(any, *port);
        if socket.bind(local).is_err() {
            continue;
        }
        match socket.connect(addr).await {
            Ok(stream) => return Ok(stream),
            Err(e) if e.kind() == std::io::ErrorKind::AddrNotAvailable => continue,
            Err(e) if e.kind() == std::io::ErrorKind::AddrInUse => continue,
            Err(e) => return Err(e),
        }
    }
    Err(std::io::Error::other(format!(
        "no free source port among {}..={} towards {upstream}",
        ports[0],
        ports[ports.len() - 1]
    )))
}

/// Makes the socket's close a TCP RST instead of a FIN. With a zero linger the close does not
/// block.
fn reset(socket: &TcpStream) {
    let _ = socket2::SockRef::from(socket).set_linger(Some(Duration::ZERO));
}

/// Forwards one connection both ways until either side closes or the link is reset.
async fn proxy(
    client: TcpStream,
    server: TcpStream,
    state: watch::Receiver<LinkState>,
    mut resets: watch::Receiver<u64>,
) {
    let _ = client.set_nodelay(true);
    let _ = server.set_nodelay(true);
    let (mut client_read, mut client_write) = client.into_split();
    let (mut server_read, mut server_write) = server.into_split();
    resets.mark_unchanged();
    let was_reset = {
        let up = pump(&mut client_read, &mut server_write, &state, |s| {
            s.upstream.clone()
        });
        let down = pump(&mut server_read, &mut client_write, &state, |s| {
            s.downstream.clone()
        });
        tokio::select! {
            _ = async { tokio::join!(up, down) } => false,
            _ = resets.changed() => true,
        }
    };
    if was_reset {
        reset(client_read.as_ref());
        reset(server_read.as_ref());
    }
}

/// One direction: a reader that timestamps chunks and a writer that delivers them late, at
/// a limited rate, or never, as the toxics say at that moment.
async fn pump(
    from: &mut tokio::net::tcp::OwnedReadHalf,
    to: &mut tokio::net::tcp::OwnedWriteHalf,
    state: &watch::Receiver<LinkState>,
    toxics: fn(&LinkState) -> Toxics,
) {
    let (send, mut receive) = mpsc::unbounded_channel::<(tokio::time::Instant, Vec<u8>)>();
    let reader = {
        async move {
            let mut buffer = vec![0u8; 16 * 1024];
            loop {
                let n = match from.read(&mut buffer).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => n,
                };
                let now = toxics(&state.borrow());
                if now.blackhole {
                    continue;
                }
                let jitter = if now.jitter.is_zero() {
                    Duration::ZERO
                } else {
                    now.jitter.mul_f64(rand::rng().random_range(0.0..1.0))
                };
                let due = tokio::time::Instant::now() + now.latency + jitter;
                if send.send((due, buffer[..n].to_vec())).is_err() {
                    break;
                }
            }
            let close_after = toxics(&state.borrow()).slow_close;
            tokio::time::sleep(close_after).await;
        }
    };
    let writer = async move {
        while let Some((due, chunk)) = receive.recv().await {
            tokio::time::sleep_until(due).await;
            let bandwidth = toxics(&state.borrow()).bandwidth;
            if let Some(rate) = bandwidth {
                let seconds = chunk.len() as f64 / rate.max(1) as f64;
                tokio::time::sleep(Duration::from_secs_f64(seconds)).await;
            }
            if to.write_all(&chunk).await.is_err() {
                break;
            }
        }
        let _ = to.shutdown().await;
    };
    tokio::join!(reader, writer);
}
