//! Bring your own client: `--client exec:<command>` runs `<command>` (through `sh -c`) once
//! per client process and drives it over JSON lines on its stdin and stdout, so that a lock
//! library in any language can be put under test. `docs/exec-protocol.md` documents the
//! protocol with a worked exchange; in short, one request per line, one reply per line, in
//! order:
//!
//! ```text
//! -> {"op":"hello","protocol":1,"deployment":"redlock","nodes":[{"name":"n1","host":"10.98.0.11","port":6379,"role":"master"},...],"ttl_ms":2000}
//! <- {"type":"ok"}
//! -> {"op":"acquire","resource":"lock","ttl_ms":2000}
//! <- {"type":"ok","token":"c0ffee","validity_ms":1990,"fence":7,"nodes":["n1","n2","n3"]}
//! -> {"op":"release","resource":"lock","token":"c0ffee"}
//! <- {"type":"ok"}
//! ```
//!
//! Replies are `ok`, `fail` (it certainly did not happen; an `error` starting with `held`
//! says someone else holds the lock) or `unknown` (it may have happened). A program that does
//! not reply within the reply timeout is killed, the op is unknown, and a fresh program takes
//! its place. A program that exits or replies with something that is not a protocol reply
//! stops the run: the client under test is broken, not the lock.

use std::collections::VecDeque;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::json;
use splitbrain_checker::Renewal;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use tokio::sync::mpsc;

use super::{
    spin_delay, ClientConfig, ClientKind, Fences, Grant, LockClient, Outcome, RenewalReport,
};

/// How users name this client: `exec:` and the command.
pub const EXEC_PREFIX: &str = "exec:";

/// The protocol version the `hello` request announces.
const PROTOCOL: u32 = 1;

/// Stderr lines kept to explain a program's death.
const STDERR_KEPT: usize = 20;

/// The external-program client, which speaks to any system.
pub const EXEC: ClientKind = ClientKind {
    name: "exec:<command>",
    summary: "any lock library: runs <command> per client, JSON lines on stdin/stdout",
    fences: Fences::IfProgramSays,
    // The library decides what its holder knows.
    checks_lease: false,
    build,
};

/// The client program broke the protocol; the run stops with this.
#[derive(Debug, Clone, thiserror::Error)]
#[error("the exec client `{command}` {problem}")]
pub struct ExecError {
    pub command: String,
    pub problem: String,
}

fn build(config: &ClientConfig) -> Result<Box<dyn LockClient>, String> {
    let command = config
        .options
        .command
        .clone()
        .filter(|c| !c.trim().is_empty())
        .ok_or("--client exec: needs a command after the colon, like exec:python3 adapter.py")?;
    let program = command.split_whitespace().next().unwrap_or_default();
    if !is_runnable(program) {
        return Err(format!(
            "the exec client's program `{program}` is not a command sh can run (not on PATH?)"
        ));
    }
    Ok(Box::new(Exec {
        node_names: config.nodes.iter().map(|(name, _)| name.clone()).collect(),
        hello: hello(config),
        reply_timeout: (config.ttl * 2).max(Duration::from_secs(5)),
        start_timeout: config.options.start_timeout,
        command,
        program: None,
        broken: None,
        renewal: None,
        asks_held: false,
    }))
}

/// The `hello` request: the deployment as a library's own support for it needs it (its kind,
/// each node's address and role at the start, the Sentinels and the name they know the master
/// by, the connection string an etcd, ZooKeeper or PostgreSQL client takes) and the TTL.
fn hello(config: &ClientConfig) -> serde_json::Value {
    let description = config.connection.describe(&config.nodes);
    let nodes: Vec<serde_json::Value> = config
        .nodes
        .iter()
        .zip(&description.roles)
        .map(|((name, addr), role)| {
            json!({"name": name, "host": addr.ip().to_string(), "port": addr.port(), "role": role})
        })
        .collect();
    let mut hello = json!({
        "op": "hello",
        "protocol": PROTOCOL,
        "deployment": config.connection.deployment(),
        "nodes": nodes,
        "ttl_ms": config.ttl.as_millis() as u64,
    });
    for (field, value) in description.fields {
        hello[field] = value;
    }
    hello
}

/// Whether `sh` can run `program`: a builtin, or an executable on PATH or at a path.
fn is_runnable(program: &str) -> bool {
    std::process::Command::new("sh")
        .arg("-c")
        .arg("command -v \"$1\" >/dev/null")
        .arg("sh")
        .arg(program)
        .status()
        .is_ok_and(|status| status.success())
}

struct Exec {
    command: String,
    /// The deployment's node names: an `acquire` reply may name only these.
    node_names: Vec<String>,
    hello: serde_json::Value,
    reply_timeout: Duration,
    /// How long the program may take to start and answer `hello`.
    start_timeout: Duration,
    program: Option<Program>,
    broken: Option<ExecError>,
    /// What the program said of its own lease renewal in its `hello` reply.
    renewal: Option<Renewal>,
    /// The program asked, in its `hello` reply, to be asked whether it still holds a lock.
    asks_held: bool,
}

/// One running instance of the client program, in a process group of its own so that a pause
/// freezes, and the end of the program kills, everything it started.
struct Program {
    child: Child,
    /// The process group: the `sh` wrapper's pid.
    group: Option<i32>,
    stdin: ChildStdin,
    /// The program's reply lines, in order; closed when its stdout closes.
    replies: mpsc::UnboundedReceiver<std::io::Result<String>>,
    /// Renewal reports, which the program may write between replies.
    renewals: mpsc::UnboundedReceiver<RenewalReport>,
    stderr: Arc<Mutex<VecDeque<String>>>,
}

impl Program {
    /// Sends `signal` to every process of the program's group.
    fn signal_group(&self, signal: i32) {
        if let Some(group) = self.group {
            // SAFETY: killpg only sends a signal; a group that is gone gives ESRCH.
            unsafe {
                libc::killpg(group, signal);
            }
        }
    }
}

impl Drop for Program {
    /// Whatever the program started ends with it (a library's renewal thread, a helper
    /// process), on every path out of the run.
    fn drop(&mut self) {
        self.signal_group(libc::SIGCONT);
        self.signal_group(libc::SIGKILL);
    }
}

/// One reply line.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Reply {
    #[serde(rename = "type")]
    kind: ReplyKind,
    #[serde(default)]
    token: Option<String>,
    #[serde(default)]
    validity_ms: Option<u64>,
    #[serde(default)]
    fence: Option<u64>,
    /// In an `acquire` reply: the names of the nodes that granted it (a Redlock majority).
    #[serde(default)]
    nodes: Option<Vec<String>>,
    #[serde(default)]
    error: Option<String>,
    /// In the `hello` reply: the library renews held leases by itself.
    #[serde(default)]
    renewal: Option<Renewal>,
    /// In the `hello` reply: how long the library's calls may take, where that is longer than
    /// the harness waits by default (a Redlock library that tries each master in turn).
    #[serde(default)]
    reply_timeout_ms: Option<u64>,
    /// In the `hello` reply: the holder asks the library (`held`) before each step of its
    /// critical section whether it still holds the lock, and stops where it is told no.
    #[serde(default)]
    ask_held: Option<bool>,
    /// In a `held` reply: whether the library says it still holds the lock.
    #[serde(default)]
    held: Option<bool>,
}

/// The longest a program may ask the harness to wait for a reply: beyond it, a hung library
/// would hold a worker for most of a run.
const MOST_PATIENCE: Duration = Duration::from_secs(60);

/// How long to wait for a reply: the default, or longer where the program's `hello` reply
/// asked for it (never past [`MOST_PATIENCE`], never shorter than the default).
fn patience(default: Duration, asked_ms: Option<u64>) -> Duration {
    asked_ms.map_or(default, |ms| {
        Duration::from_millis(ms).min(MOST_PATIENCE).max(default)
    })
}

/// A line the program writes of its own accord, between replies.
#[derive(Debug, Deserialize)]
#[serde(tag = "event", rename_all = "lowercase", deny_unknown_fields)]
enum Event {
    /// `{"event":"renewing","resource":…,"token":…,"ttl_ms":…}`: the library is about to
    /// renew a held lease; the `renew` event that follows says how it went.
    Renewing {
        resource: String,
        token: String,
        #[serde(default)]
        ttl_ms: Option<u64>,
    },
    /// `{"event":"renew","resource":…,"token":…,"type":…,"ttl_ms":…}`: the library renewed
    /// a held lease (`ok`: for `ttl_ms` from when the renewal began).
    Renew {
        resource: String,
        token: String,
        #[serde(rename = "type")]
        kind: ReplyKind,
        #[serde(default)]
        ttl_ms: Option<u64>,
        #[serde(default)]
        error: Option<String>,
    },
}

#[derive(Debug, Deserialize, PartialEq)]
#[serde(rename_all = "lowercase")]
enum ReplyKind {
    Ok,
    Fail,
    #[serde(alias = "info")]
    Unknown,
}

/// Why a request got no protocol reply.
enum NoReply {
    /// The program took too long; it has been killed, and the op's outcome is unknown.
    TimedOut,
    /// The program broke the protocol.
    Broken(ExecError),
}

impl Exec {
    /// The error for a program that broke the protocol, with the last of its stderr.
    fn failure(&self, problem: String, stderr: Option<&Mutex<VecDeque<String>>>) -> ExecError {
        let said = stderr
            .map(|s| {
                s.lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .iter()
                    .cloned()
                    .collect::<Vec<_>>()
            })
            .filter(|lines| !lines.is_empty())
            .map(|lines| format!("; its stderr ended with: {}", lines.join(" | ")))
            .unwrap_or_default();
        ExecError {
            command: self.command.clone(),
            problem: problem + &said,
        }
    }

    async fn start(&mut self) -> Result<Program, ExecError> {
        let mut child = Command::new("sh")
            .arg("-c")
            .arg(&self.command)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| self.failure(format!("could not be started: {e}"), None))?;
        let (Some(stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            return Err(self.failure("started without pipes".into(), None));
        };
        let kept = Arc::new(Mutex::new(VecDeque::new()));
        let pid = child.id().unwrap_or_default();
        tokio::spawn(forward_stderr(stderr, pid, kept.clone()));
        let (reply_sender, replies) = mpsc::unbounded_channel();
        let (renewal_sender, renewals) = mpsc::unbounded_channel();
        tokio::spawn(read_stdout(stdout, reply_sender, renewal_sender));
        let mut program = Program {
            child,
            group: i32::try_from(pid).ok().filter(|&pid| pid > 0),
            stdin,
            replies,
            renewals,
            stderr: kept,
        };
        let hello = self.hello.clone();
        let asked = Instant::now();
        match self
            .exchange(&mut program, &hello, self.start_timeout)
            .await
        {
            Ok(reply) if reply.kind == ReplyKind::Ok => {
                let asks_held = reply.ask_held == Some(true);
                if asks_held && reply.renewal == Some(Renewal::Reported) {
                    // A holder waits on the renewal reports while it holds; it cannot also
                    // put questions to the program in between.
                    return Err(self.failure(
                        "answered hello with both \"ask_held\":true and \"renewal\":\"reported\", \
                         which splitbrain cannot do at once: drop one of them"
                            .into(),
                        Some(&program.stderr),
                    ));
                }
                self.renewal = reply.renewal;
                self.asks_held = asks_held;
                self.reply_timeout = patience(self.reply_timeout, reply.reply_timeout_ms);
                let took = asked.elapsed();
                if took > self.start_timeout / 2 {
                    tracing::warn!(
                        "the exec client `{}` took {:.1} s to answer hello, more than half of \
                         --exec-start-timeout {}s; raise it if machines in CI are busier",
                        self.command,
                        took.as_secs_f64(),
                        self.start_timeout.as_secs_f64()
                    );
                }
                Ok(program)
            }
            Ok(reply) => Err(self.failure(
                format!("refused the hello: {}", reply.error.unwrap_or_default()),
                Some(&program.stderr),
            )),
            Err(NoReply::TimedOut) => Err(self.failure(
                format!(
                    "did not answer the hello within --exec-start-timeout {}s (start-up is not \
                     part of any operation, but a program that takes longer is taken as hung; \
                     raise --exec-start-timeout if it is only slow)",
                    self.start_timeout.as_secs_f64()
                ),
                Some(&program.stderr),
            )),
            Err(NoReply::Broken(e)) => Err(e),
        }
    }

    /// Sends one request and reads its reply.
    async fn exchange(
        &self,
        program: &mut Program,
        request: &serde_json::Value,
        timeout: Duration,
    ) -> Result<Reply, NoReply> {
        let op = request["op"].as_str().unwrap_or_default().to_string();
        let mut line = request.to_string();
        line.push('\n');
        let sent = async {
            // A program that already exited cannot take the request, but what it printed
            // before it went still explains more than the broken pipe.
            let written = program.stdin.write_all(line.as_bytes()).await;
            if written.is_ok() {
                let _ = program.stdin.flush().await;
            }
            program.replies.recv().await.transpose()
        };
        let read = match tokio::time::timeout(timeout, sent).await {
            Err(_) => {
                let _ = program.child.start_kill();
                return Err(NoReply::TimedOut);
            }
            Ok(read) => read,
        };
        let stderr = Some(program.stderr.as_ref());
        let line = match read {
            Ok(Some(line)) => line,
            Ok(None) | Err(_) => {
                // Give the exit status a moment to arrive, for the message.
                let status = tokio::time::timeout(Duration::from_secs(1), program.child.wait())
                    .await
                    .ok()
                    .and_then(Result::ok)
                    .map_or("without a status".to_string(), |s| s.to_string());
                return Err(NoReply::Broken(self.failure(
                    format!("exited ({status}) before replying to {op}"),
                    stderr,
                )));
            }
        };
        serde_json::from_str::<Reply>(&line).map_err(|e| {
            NoReply::Broken(self.failure(
                format!(
                    "replied to {op} with `{}`, which is not a protocol reply ({e}); expected \
                     {{\"type\":\"ok\"|\"fail\"|\"unknown\", ...}}",
                    line.chars().take(200).collect::<String>()
                ),
                stderr,
            ))
        })
    }

    /// Starts the program if none runs and has it answer `hello`; a program that cannot start
    /// is remembered for [`LockClient::broken`].
    async fn ensure_started(&mut self) -> Result<(), String> {
        if self.broken.is_some() {
            return Err("the client program is broken".into());
        }
        if self.program.is_none() {
            match self.start().await {
                Ok(program) => self.program = Some(program),
                Err(e) => {
                    let message = e.to_string();
                    self.broken = Some(e);
                    return Err(message);
                }
            }
        }
        Ok(())
    }

    /// Sends a request to the running program (starting one if none runs) and turns the reply
    /// into an outcome; a broken program is remembered for [`LockClient::broken`].
    async fn request(&mut self, request: serde_json::Value) -> Result<Reply, String> {
        self.ensure_started().await?;
        let Some(mut program) = self.program.take() else {
            return Err("the client program is not running".into());
        };
        match self
            .exchange(&mut program, &request, self.reply_timeout)
            .await
        {
            Ok(reply) => {
                self.program = Some(program);
                Ok(reply)
            }
            // The killed program is dropped; the next request starts a fresh one.
            Err(NoReply::TimedOut) => Err(format!(
                "no reply within {} s; the program was killed",
                self.reply_timeout.as_secs()
            )),
            Err(NoReply::Broken(e)) => {
                let message = e.to_string();
                self.broken = Some(e);
                Err(message)
            }
        }
    }
}

/// Reads the program's stdout: renewal reports to `renewals`, every other line to `replies`,
/// which closes when stdout does.
async fn read_stdout(
    stdout: ChildStdout,
    replies: mpsc::UnboundedSender<std::io::Result<String>>,
    renewals: mpsc::UnboundedSender<RenewalReport>,
) {
    let mut lines = BufReader::new(stdout).lines();
    loop {
        let line = match lines.next_line().await {
            Ok(Some(line)) => line,
            Ok(None) => return,
            Err(e) => {
                let _ = replies.send(Err(e));
                return;
            }
        };
        if line.trim_start().starts_with('{') && line.contains("\"event\"") {
            let report = match serde_json::from_str::<Event>(&line) {
                Ok(Event::Renewing {
                    resource,
                    token,
                    ttl_ms,
                }) => Some(RenewalReport {
                    resource,
                    token,
                    ttl: ttl_ms.map(Duration::from_millis),
                    outcome: None,
                }),
                Ok(Event::Renew {
                    resource,
                    token,
                    kind,
                    ttl_ms,
                    error,
                }) => Some(RenewalReport {
                    resource,
                    token,
                    ttl: ttl_ms.map(Duration::from_millis),
                    outcome: Some(match kind {
                        ReplyKind::Ok => Outcome::Ok(()),
                        ReplyKind::Fail => Outcome::Fail(error.unwrap_or_default()),
                        ReplyKind::Unknown => Outcome::Info(error.unwrap_or_default()),
                    }),
                }),
                Err(_) => None,
            };
            if let Some(report) = report {
                let _ = renewals.send(report);
                continue;
            }
        }
        if replies.send(Ok(line)).is_err() {
            return;
        }
    }
}

async fn forward_stderr(
    stderr: tokio::process::ChildStderr,
    pid: u32,
    kept: Arc<Mutex<VecDeque<String>>>,
) {
    let mut lines = BufReader::new(stderr).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        tracing::info!(target: "exec", "[{pid}] {line}");
        let mut kept = kept.lock().unwrap_or_else(|e| e.into_inner());
        if kept.len() == STDERR_KEPT {
            kept.pop_front();
        }
        kept.push_back(line);
    }
}

impl Exec {
    /// The nodes behind a grant: those the reply names, or the deployment's only node. A name
    /// the deployment does not have breaks the protocol, as a misspelt field does.
    fn granting_nodes(&mut self, named: Option<Vec<String>>) -> Result<Vec<String>, String> {
        let Some(named) = named else {
            return Ok(match self.node_names.as_slice() {
                [only] => vec![only.clone()],
                _ => Vec::new(),
            });
        };
        if let Some(unknown) = named.iter().find(|n| !self.node_names.contains(n)) {
            let broken = ExecError {
                command: self.command.clone(),
                problem: format!(
                    "named node `{unknown}` in an acquire reply; the deployment's nodes are {}",
                    self.node_names.join(", ")
                ),
            };
            self.broken = Some(broken.clone());
            return Err(broken.to_string());
        }
        Ok(named)
    }
}

#[async_trait]
impl LockClient for Exec {
    async fn acquire(&mut self, resource: &str, ttl: Duration) -> Outcome<Grant> {
        let ttl_ms = ttl.as_millis() as u64;
        let reply = match self
            .request(json!({"op": "acquire", "resource": resource, "ttl_ms": ttl_ms}))
            .await
        {
            Ok(reply) => reply,
            Err(e) => return Outcome::Info(e),
        };
        match reply.kind {
            ReplyKind::Ok => Outcome::Ok(Grant {
                nodes: match self.granting_nodes(reply.nodes) {
                    Ok(nodes) => nodes,
                    Err(e) => return Outcome::Info(e),
                },
                token: reply.token.unwrap_or_default(),
                validity: Duration::from_millis(reply.validity_ms.unwrap_or(ttl_ms)),
                fence: reply.fence,
            }),
            ReplyKind::Fail => Outcome::Fail(reply.error.unwrap_or_default()),
            ReplyKind::Unknown => Outcome::Info(reply.error.unwrap_or_default()),
        }
    }

    async fn release(&mut self, resource: &str, grant: &Grant) -> Outcome<()> {
        let reply = match self
            .request(json!({"op": "release", "resource": resource, "token": grant.token}))
            .await
        {
            Ok(reply) => reply,
            Err(e) => return Outcome::Info(e),
        };
        match reply.kind {
            ReplyKind::Ok => Outcome::Ok(()),
            ReplyKind::Fail => Outcome::Fail(reply.error.unwrap_or_default()),
            ReplyKind::Unknown => Outcome::Info(reply.error.unwrap_or_default()),
        }
    }

    fn retry_delay(&mut self, _failures: u32) -> Duration {
        spin_delay()
    }

    fn broken(&self) -> Option<String> {
        self.broken.as_ref().map(ToString::to_string)
    }

    async fn prepare(&mut self) -> Result<(), String> {
        self.ensure_started().await
    }

    fn renewal(&self) -> Option<Renewal> {
        self.renewal
    }

    async fn next_renewal(&mut self) -> Option<RenewalReport> {
        match &mut self.program {
            Some(program) => program.renewals.recv().await,
            None => None,
        }
    }

    fn suspend(&mut self, frozen: bool) {
        if let Some(program) = &self.program {
            program.signal_group(if frozen { libc::SIGSTOP } else { libc::SIGCONT });
        }
    }

    fn asks_held(&self) -> bool {
        self.asks_held
    }

    async fn held(&mut self, resource: &str, grant: &Grant) -> Outcome<bool> {
        let reply = match self
            .request(json!({"op": "held", "resource": resource, "token": grant.token}))
            .await
        {
            Ok(reply) => reply,
            Err(e) => return Outcome::Info(e),
        };
        match (reply.kind, reply.held) {
            (ReplyKind::Ok, Some(held)) => Outcome::Ok(held),
            (ReplyKind::Ok, None) => {
                let broken = self.failure(
                    "replied ok to held without saying `\"held\":true` or `false`".into(),
                    None,
                );
                self.broken = Some(broken.clone());
                Outcome::Info(broken.to_string())
            }
            (ReplyKind::Fail, _) => Outcome::Fail(reply.error.unwrap_or_default()),
            (ReplyKind::Unknown, _) => Outcome::Info(reply.error.unwrap_or_default()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::SocketAddr;

    use crate::{Connection, Description};

    fn nodes(n: u8) -> Vec<(String, SocketAddr)> {
        (1..=n)
            .map(|i| (format!("n{i}"), ([10, 0, 0, 10 + i], 6379).into()))
            .collect()
    }

    /// A deployment whose first node leads, with a connection string.
    struct Led;

    impl Connection for Led {
        fn deployment(&self) -> &'static str {
            "led"
        }

        fn describe(&self, nodes: &[(String, SocketAddr)]) -> Description {
            let mut fields = serde_json::Map::new();
            fields.insert("connect".into(), "led://n1".into());
            Description {
                roles: (0..nodes.len())
                    .map(|i| if i == 0 { "leader" } else { "follower" })
                    .collect(),
                fields,
            }
        }
    }

    fn config(n: u8) -> ClientConfig {
        ClientConfig::new(nodes(n), Arc::new(Led), Duration::from_secs(2))
    }

    #[test]
    fn hello_describes_the_deployment_as_its_system_does() {
        let hello = hello(&config(3));
        assert_eq!(hello["op"], "hello");
        assert_eq!(hello["deployment"], "led");
        assert_eq!(hello["ttl_ms"], 2000);
        assert_eq!(hello["connect"], "led://n1");
        assert_eq!(
            hello["nodes"][1],
            json!({"name": "n2", "host": "10.0.0.12", "port": 6379, "role": "follower"})
        );
        assert_eq!(hello["nodes"][0]["role"], "leader");
    }

    /// An exec client over `n` nodes whose program has not started.
    fn exec(n: u8) -> Exec {
        let config = config(n);
        Exec {
            command: "true".into(),
            node_names: config.nodes.iter().map(|(name, _)| name.clone()).collect(),
            hello: hello(&config),
            reply_timeout: Duration::from_secs(5),
            start_timeout: Duration::from_secs(5),
            program: None,
            broken: None,
            renewal: None,
            asks_held: false,
        }
    }

    /// A holder asked whether it holds waits on nothing else: a program that also reports its
    /// renewals, which the holder waits on, is refused at its hello, with what to drop.
    #[tokio::test]
    async fn a_hello_that_asks_to_be_asked_and_reports_renewals_is_refused() {
        let mut both = exec(1);
        both.command =
            r#"read x; echo '{"type":"ok","ask_held":true,"renewal":"reported"}'; sleep 5"#.into();
        let refused = both.prepare().await.unwrap_err();
        assert!(refused.contains("drop one of them"), "{refused}");
        assert!(both.broken().is_some());

        let mut asked = exec(1);
        asked.command = r#"read x; echo '{"type":"ok","ask_held":true}'; sleep 5"#.into();
        asked.prepare().await.unwrap();
        assert!(asked.asks_held());
    }

    #[test]
    fn a_program_may_ask_for_more_patience_but_not_less_nor_without_end() {
        let default = Duration::from_secs(5);
        assert_eq!(patience(default, None), default);
        assert_eq!(patience(default, Some(20_000)), Duration::from_secs(20));
        assert_eq!(patience(default, Some(1_000)), default);
        assert_eq!(patience(default, Some(3_600_000)), MOST_PATIENCE);
    }

    #[test]
    fn a_grant_names_the_nodes_the_reply_names_or_the_only_node_there_is() {
        assert_eq!(exec(1).granting_nodes(None), Ok(vec!["n1".to_string()]));
        assert_eq!(exec(5).granting_nodes(None), Ok(Vec::new()));
        let quorum = vec!["n1".to_string(), "n4".to_string(), "n5".to_string()];
        assert_eq!(exec(5).granting_nodes(Some(quorum.clone())), Ok(quorum));
        let mut misspelt = exec(5);
        let refused = misspelt
            .granting_nodes(Some(vec!["node1".into()]))
            .unwrap_err();
        assert!(refused.contains("named node `node1`"), "{refused}");
        assert!(
            misspelt.broken.is_some(),
            "a misspelt node breaks the protocol"
        );
    }
}
