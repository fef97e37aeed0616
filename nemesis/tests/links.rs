//! The client-to-node link proxy against an echo server on the loopback: each toxic's effect,
//! and its toxiproxy API driven by a real toxiproxy client library from a registry,
//! `toxiproxy-python` (PyPI; `pip install toxiproxy-python`).

use std::net::SocketAddr;
use std::process::Command;
use std::time::{Duration, Instant};

use splitbrain_nemesis::links::{source_ports, toxiproxy, LinkState, Links, Toxics};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// An echo server on the loopback.
async fn echo() -> SocketAddr {
    let listener = TcpListener::bind(("127.0.0.1", 0)).await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut b = [0u8; 1024];
                while let Ok(n) = s.read(&mut b).await {
                    if n == 0 || s.write_all(&b[..n]).await.is_err() {
                        break;
                    }
                }
            });
        }
    });
    addr
}

async fn round_trip(addr: SocketAddr) -> std::io::Result<Duration> {
    let started = Instant::now();
    let mut s = TcpStream::connect(addr).await?;
    s.write_all(b"ping").await?;
    let mut b = [0u8; 4];
    s.read_exact(&mut b).await?;
    assert_eq!(&b, b"ping");
    Ok(started.elapsed())
}

async fn links() -> Links {
    Links::start(2, &[("n1".into(), echo().await)])
        .await
        .unwrap()
}

#[tokio::test]
async fn a_clean_link_forwards_both_ways() {
    let links = links().await;
    round_trip(links.address(0, "n1").unwrap()).await.unwrap();
    assert!(links.toxic().is_empty());
}

#[tokio::test]
async fn each_groups_connections_come_from_its_own_source_ports() {
    // A server that tells each client the port it came from.
    let listener = TcpListener::bind(("127.0.0.1", 0)).await.unwrap();
    let server = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut s, peer)) = listener.accept().await {
            let _ = s.write_all(&peer.port().to_be_bytes()).await;
        }
    });
    let links = Links::start(2, &[("n1".into(), server)]).await.unwrap();
    for group in 0..2 {
        let ports = source_ports(group).unwrap();
        for _ in 0..3 {
            let mut s = TcpStream::connect(links.address(group, "n1").unwrap())
                .await
                .unwrap();
            let mut port = [0u8; 2];
            s.read_exact(&mut port).await.unwrap();
            let port = u16::from_be_bytes(port);
            assert!(ports.contains(&port), "group {group} came from {port}");
        }
    }
    assert_ne!(source_ports(0), source_ports(1));
}

#[tokio::test]
async fn another_port_of_a_node_shares_its_link() {
    let links = links().await;
    let sentinel = echo().await;
    links.carry("n1", sentinel).await.unwrap();
    let carried = links.carried_address(0, "n1", sentinel).unwrap();
    assert_ne!(carried, links.address(0, "n1").unwrap());
    round_trip(carried).await.unwrap();
    let slow = LinkState {
        upstream: Toxics {
            latency: Duration::from_millis(200),
            ..Toxics::default()
        },
        ..LinkState::default()
    };
    links.set("g0->n1", slow);
    let slowed = round_trip(carried).await.unwrap();
    let other = round_trip(links.carried_address(1, "n1", sentinel).unwrap())
        .await
        .unwrap();
    assert!(slowed >= Duration::from_millis(200), "{slowed:?}");
    assert!(other < Duration::from_millis(200), "{other:?}");
    assert_eq!(links.carried_address(0, "n2", sentinel), None);
}

#[tokio::test]
async fn latency_delays_one_group_only() {
    let links = links().await;
    let slow = LinkState {
        downstream: Toxics {
            latency: Duration::from_millis(200),
            ..Toxics::default()
        },
        ..LinkState::default()
    };
    assert!(links.set("g0->n1", slow));
    let slowed = round_trip(links.address(0, "n1").unwrap()).await.unwrap();
    let other = round_trip(links.address(1, "n1").unwrap()).await.unwrap();
    assert!(slowed >= Duration::from_millis(200), "{slowed:?}");
    assert!(other < Duration::from_millis(200), "{other:?}");
    assert_eq!(links.toxic(), ["g0->n1"]);
    links.heal();
    assert!(links.toxic().is_empty());
}

#[tokio::test]
async fn a_baseline_stays_beneath_faults_and_through_heals() {
    let links = links().await;
    let jittery = Toxics {
        jitter: Duration::from_millis(300),
        ..Toxics::default()
    };
    links.set_baseline(LinkState {
        downstream: jittery,
        ..LinkState::default()
    });
    assert!(links.toxic().is_empty(), "a baseline is not a fault");
    let addr = links.address(0, "n1").unwrap();
    let mut slowest = Duration::ZERO;
    for _ in 0..5 {
        slowest = slowest.max(round_trip(addr).await.unwrap());
    }
    assert!(
        slowest >= Duration::from_millis(50),
        "jitter applies: {slowest:?}"
    );
    links.set(
        "g0->n1",
        LinkState {
            reset: true,
            ..LinkState::default()
        },
    );
    assert_eq!(links.toxic(), ["g0->n1"]);
    links.heal();
    assert!(links.toxic().is_empty(), "healed back to the baseline");
    round_trip(addr).await.unwrap();
}

#[tokio::test]
async fn a_blackhole_keeps_the_connection_and_loses_the_data() {
    let links = links().await;
    let hole = LinkState {
        upstream: Toxics {
            blackhole: true,
            ..Toxics::default()
        },
        ..LinkState::default()
    };
    links.set("g1->n1", hole);
    let lost = tokio::time::timeout(
        Duration::from_millis(300),
        round_trip(links.address(1, "n1").unwrap()),
    )
    .await;
    assert!(lost.is_err(), "no answer through a blackhole");
    round_trip(links.address(0, "n1").unwrap()).await.unwrap();
}

#[tokio::test]
async fn a_reset_kills_open_and_new_connections() {
    let links = links().await;
    let addr = links.address(0, "n1").unwrap();
    let mut open = TcpStream::connect(addr).await.unwrap();
    open.write_all(b"ping").await.unwrap();
    let mut b = [0u8; 4];
    open.read_exact(&mut b).await.unwrap();
    links.set(
        "g0->n1",
        LinkState {
            reset: true,
            ..LinkState::default()
        },
    );
    tokio::time::sleep(Duration::from_millis(50)).await;
    let broken = async {
        open.write_all(b"ping").await?;
        open.read_exact(&mut b).await
    };
    assert!(broken.await.is_err(), "the open connection died");
    assert!(round_trip(addr).await.is_err(), "and new ones do too");
    links.heal();
    round_trip(addr).await.unwrap();
}

/// Runs a Python snippet with the toxiproxy client pointed at `api`; returns its stdout.
async fn python(api: SocketAddr, body: &str) -> String {
    let script = format!(
        "from toxiproxy import Toxiproxy\nt = Toxiproxy()\nt.update_api_consumer('127.0.0.1', {})\n{body}",
        api.port()
    );
    // .ci/run installs the client into a virtual environment of its own and names its
    // interpreter here.
    let python = std::env::var("SPLITBRAIN_PYTHON").unwrap_or_else(|_| "python3".into());
    let out = tokio::task::spawn_blocking({
        let python = python.clone();
        move || Command::new(python).args(["-c", &script]).output()
    })
    .await
    .unwrap()
    .unwrap_or_else(|e| panic!("running {python}: {e}"));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !stderr.contains("No module named 'toxiproxy'"),
        "this test needs the toxiproxy client in {python}: pip install toxiproxy-python \
         (.ci/run installs it and sets SPLITBRAIN_PYTHON)"
    );
    assert!(out.status.success(), "{stderr}");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_toxiproxy_client_drives_the_links() {
    let upstream = echo().await;
    let links = Links::start(1, &[("n1".into(), upstream)]).await.unwrap();
    let api_listener = TcpListener::bind(("127.0.0.1", 0)).await.unwrap();
    let api = api_listener.local_addr().unwrap();
    let server = tokio::spawn(toxiproxy::serve(links.clone(), api_listener));
    let link = links.address(0, "n1").unwrap();

    let seen = python(api, "print(sorted(t.proxies()))").await;
    assert_eq!(seen, "['g0->n1']");

    python(
        api,
        "p = t.get_proxy('g0->n1')\n\
         p.add_toxic(type='latency', stream='downstream', attributes={'latency': 300})\n\
         print(list(p.toxics()))",
    )
    .await;
    assert!(
        round_trip(link).await.unwrap() >= Duration::from_millis(300),
        "the latency toxic bites"
    );

    let listen = python(
        api,
        &format!(
            "t.get_proxy('g0->n1').destroy_toxic('latency_downstream')\n\
             p = t.create(upstream='{upstream}', name='extra')\n\
             print(p.listen)"
        ),
    )
    .await;
    assert!(
        round_trip(link).await.unwrap() < Duration::from_millis(300),
        "and is gone"
    );
    let extra: SocketAddr = listen.parse().unwrap();
    round_trip(extra).await.unwrap();

    python(api, "t.get_proxy('g0->n1').disable()").await;
    let cut = async {
        let mut s = TcpStream::connect(link).await?;
        s.write_all(b"ping").await?;
        s.read_exact(&mut [0u8; 4]).await
    };
    assert!(cut.await.is_err(), "a disabled link carries nothing");
    assert!(
        !links.toxic().is_empty(),
        "a disabled link counts as not healed"
    );
    python(api, "assert t.reset()\nt.destroy(t.get_proxy('extra'))").await;
    assert!(links.toxic().is_empty());
    assert_eq!(
        python(api, "print(sorted(t.proxies()))").await,
        "['g0->n1']"
    );
    server.abort();
    links.shutdown();
}

/// The `curl` line of docs/running.md, as printed there but for the port: toxiproxy takes a
/// body that `curl -d` sends as a form, and so does splitbrain's API.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_docs_curl_command_adds_a_toxic() {
    let upstream = echo().await;
    let links = Links::start(1, &[("n1".into(), upstream)]).await.unwrap();
    let api_listener = TcpListener::bind(("127.0.0.1", 0)).await.unwrap();
    let port = api_listener.local_addr().unwrap().port();
    let server = tokio::spawn(toxiproxy::serve(links.clone(), api_listener));
    let docs = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/running.md"))
        .unwrap();
    let command = docs
        .lines()
        .find(|line| line.starts_with("curl -XPOST localhost:8474/"))
        .expect("docs/running.md has its curl line")
        .replace("localhost:8474", &format!("127.0.0.1:{port}"));
    let out = tokio::task::spawn_blocking(move || {
        Command::new("sh")
            .args(["-c", &format!("{command} --silent --show-error --fail")])
            .output()
    })
    .await
    .unwrap()
    .unwrap();
    assert!(
        out.status.success(),
        "{} (the test needs curl: apt-get install curl)",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        round_trip(links.address(0, "n1").unwrap()).await.unwrap() >= Duration::from_millis(500),
        "the latency toxic bites"
    );
    server.abort();
    links.shutdown();
}
