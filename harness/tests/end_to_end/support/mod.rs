//! The one fixture every capability test shares: Docker, the node image, a deployment that
//! is removed however the test ends, and the `splitbrain` binary.

use std::path::PathBuf;
use std::process::{Command, Output};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use splitbrain_checker::{read_history, Op, OpType, Process};
use splitbrain_compose::{Deployment, Docker, System, Topology, TopologyOptions};
use splitbrain_nemesis::links::Links;
use splitbrain_nemesis::{nemesis_op, Action, Target};
use splitbrain_systems::{find_client, find_topology, Reach, Service};
use splitbrain_workloads::{
    ClientConfig, ClientCrashes, ClientPauses, Grant, LockClient, Outcome, Recorder,
};

/// Whether Docker tests were switched off on purpose. Without it, a missing Docker fails.
pub fn docker_skipped() -> bool {
    if std::env::var("SPLITBRAIN_SKIP_DOCKER").as_deref() == Ok("1") {
        eprintln!("SPLITBRAIN_SKIP_DOCKER=1: skipping a test that needs Docker");
        return true;
    }
    false
}

/// The Python interpreter that runs the exec adapters: `SPLITBRAIN_PYTHON` (.ci/run's
/// virtual environment, where it installs their libraries), else `python3`.
pub fn python() -> String {
    std::env::var("SPLITBRAIN_PYTHON").unwrap_or_else(|_| "python3".into())
}

/// The Redis node image, built once per test binary if missing, before any test (or
/// `splitbrain` process a test starts) needs it, so that parallel tests never build it side
/// by side.
pub fn node_image() -> String {
    static IMAGE: OnceLock<String> = OnceLock::new();
    IMAGE
        .get_or_init(|| build_image(server_of("single").image()))
        .clone()
}

/// The default server of a deployment.
pub fn server_of(deployment: &str) -> &'static dyn System {
    let (_, topology) = find_topology(deployment).expect("known deployment");
    topology.system()
}

/// The image of a system under test, built once per test binary if missing (after the Redis
/// node image, whose build makes the shared base).
pub fn image_of(system: &'static dyn System) -> String {
    static IMAGES: Mutex<Vec<(&'static str, String)>> = Mutex::new(Vec::new());
    node_image();
    let mut images = IMAGES.lock().unwrap_or_else(|e| e.into_inner());
    let name = system.name();
    if let Some((_, tag)) = images.iter().find(|(n, _)| *n == name) {
        return tag.clone();
    }
    let tag = build_image(system.image());
    images.push((name, tag.clone()));
    tag
}

/// The etcd member image.
pub fn etcd_image() -> String {
    image_of(server_of("etcd"))
}

/// The ZooKeeper member image.
pub fn zookeeper_image() -> String {
    image_of(server_of("zookeeper"))
}

pub fn postgres_image() -> String {
    image_of(server_of("postgres"))
}

/// The storage image (and the node image before it, since both share one base build).
pub fn storage_image() -> String {
    static IMAGE: OnceLock<String> = OnceLock::new();
    node_image();
    IMAGE
        .get_or_init(|| build_image(&splitbrain_compose::image::STORAGE))
        .clone()
}

fn build_image(recipe: &'static splitbrain_compose::image::Recipe) -> String {
    // A thread of its own: this may be called from inside a test's runtime.
    std::thread::spawn(move || {
        tokio::runtime::Runtime::new().unwrap().block_on(async {
            let docker = connect().await;
            splitbrain_compose::image::ensure(&docker, recipe, &mut |line| eprintln!("  {line}"))
                .await
                .unwrap_or_else(|e| panic!("building {}: {e}", recipe.repository))
        })
    })
    .join()
    .expect("the image build panicked")
}

/// A connection to Docker on the calling test's runtime, and the node image.
pub async fn docker() -> (Docker, String) {
    let image = tokio::task::spawn_blocking(node_image).await.unwrap();
    (connect().await, image)
}

async fn connect() -> Docker {
    splitbrain_compose::connect().await.unwrap_or_else(|e| {
        panic!("this test needs Docker: {e} (set SPLITBRAIN_SKIP_DOCKER=1 to skip it)")
    })
}

/// A deployment that removes itself when dropped, even when the test panics.
pub struct Fixture {
    pub deployment: Deployment,
    /// The deployment's system, and its shape.
    pub service: &'static dyn Service,
    pub topology: &'static dyn Topology,
    pub docker: Docker,
    pub run_id: String,
    pub dir: tempfile::TempDir,
    pub recorder: Arc<Recorder>,
}

impl Fixture {
    pub async fn up(deployment: &str, nodes: Option<usize>) -> Fixture {
        let (docker, _) = docker().await;
        let run_id = format!("test-{:08x}", rand::random::<u32>());
        let (service, topology) = find_topology(deployment).expect("known deployment");
        let system = topology.system();
        let image = tokio::task::spawn_blocking(move || image_of(system))
            .await
            .unwrap();
        let deployment = Deployment::up(
            &docker,
            &run_id,
            (topology, topology.system()),
            &TopologyOptions {
                nodes,
                ..Default::default()
            },
            &image,
        )
        .await
        .expect("bringing the deployment up");
        let dir = tempfile::tempdir().expect("a temporary folder");
        let recorder = Arc::new(Recorder::create(&dir.path().join("history.jsonl")).unwrap());
        Fixture {
            deployment,
            service,
            topology,
            docker,
            run_id,
            dir,
            recorder,
        }
    }

    /// What faults act on: this deployment, and no client workers.
    pub fn target(&self) -> Target {
        Target {
            deployment: self.deployment.clone(),
            clients: ClientPauses::new(0),
            crashes: ClientCrashes::new(0),
            links: Links::default(),
            key: "lock".into(),
            grants: self.recorder.grants(),
        }
    }

    /// A lock client of the given algorithm on this deployment's nodes.
    pub fn client(&self, name: &str, ttl: Duration) -> Box<dyn LockClient> {
        self.client_with(name, self.client_config(ttl))
    }

    /// A lock client built from `config`.
    pub fn client_with(&self, name: &str, config: ClientConfig) -> Box<dyn LockClient> {
        (find_client(name).expect("known client").build)(&config).expect("client fits")
    }

    /// The config every client of this deployment starts from: its nodes, and their
    /// companions (Sentinels) if they have any.
    pub fn client_config(&self, ttl: Duration) -> ClientConfig {
        let nodes = self.deployment.nodes();
        let reach = Reach {
            companions: nodes
                .iter()
                .filter_map(|n| Some((n.name.clone(), n.companion?)))
                .collect(),
            announced: nodes
                .iter()
                .map(|n| (n.name.clone(), n.addr.ip()))
                .collect(),
        };
        ClientConfig::new(
            nodes.iter().map(|n| (n.name.clone(), n.addr)).collect(),
            self.service.connection(self.topology, reach),
            ttl,
        )
    }

    /// Records a nemesis start or stop.
    pub fn fault(&self, f: &str, fault: &str, nodes: &[&str]) {
        let nodes: Vec<String> = nodes.iter().map(|n| n.to_string()).collect();
        self.recorder
            .record(nemesis_op(f, fault, &Action::on(nodes)));
    }

    /// Records one acquire attempt of `process` on `key` and returns its grant, if any.
    /// No acquire in a script may time out.
    pub async fn acquire(
        &self,
        process: u64,
        client: &mut Box<dyn LockClient>,
        key: &str,
        ttl: Duration,
    ) -> Option<Grant> {
        self.record_acquire_invoke(process, key, ttl);
        match client.acquire(key, ttl).await {
            Outcome::Ok(grant) => {
                let mut ok = Op::new(Process::Client(process), OpType::Ok, "acquire")
                    .key(key)
                    .token(&grant.token)
                    .nodes(grant.nodes.clone());
                ok.validity_ms = Some(grant.validity.as_millis() as u64);
                self.recorder.record(ok);
                Some(grant)
            }
            Outcome::Fail(e) => {
                let fail = Op::new(Process::Client(process), OpType::Fail, "acquire");
                self.recorder.record(fail.key(key).error(e));
                None
            }
            Outcome::Info(e) => panic!("no acquire should time out in this script: {e}"),
        }
    }

    /// Records one acquire attempt of `process` on `key` that the script expects to end of
    /// unknown outcome (`info`), and returns its message; `expected` says what should have
    /// happened, should it not.
    pub async fn acquire_unknown(
        &self,
        process: u64,
        client: &mut Box<dyn LockClient>,
        key: &str,
        ttl: Duration,
        expected: &str,
    ) -> String {
        self.record_acquire_invoke(process, key, ttl);
        let Outcome::Info(message) = client.acquire(key, ttl).await else {
            panic!("{expected}");
        };
        let info = Op::new(Process::Client(process), OpType::Info, "acquire").key(key);
        self.recorder.record(info.error(message.clone()));
        message
    }

    fn record_acquire_invoke(&self, process: u64, key: &str, ttl: Duration) {
        let mut invoke = Op::new(Process::Client(process), OpType::Invoke, "acquire").key(key);
        invoke.ttl_ms = Some(ttl.as_millis() as u64);
        self.recorder.record(invoke);
    }

    /// Records a release of `process`'s grant.
    pub async fn release(
        &self,
        process: u64,
        client: &mut Box<dyn LockClient>,
        key: &str,
        grant: &Grant,
    ) {
        let invoke = Op::new(Process::Client(process), OpType::Invoke, "release");
        self.recorder.record(invoke.key(key).token(&grant.token));
        let kind = match client.release(key, grant).await {
            Outcome::Ok(()) => OpType::Ok,
            Outcome::Fail(_) => OpType::Fail,
            Outcome::Info(_) => OpType::Info,
        };
        let done = Op::new(Process::Client(process), kind, "release");
        self.recorder.record(done.key(key).token(&grant.token));
    }

    /// A client that crashes at its first crash point takes the lock and dies; another
    /// client then tries for three TTLs. Returns the history and how long the other waited.
    pub async fn crash_then_contend(&self, client: &str, ttl: Duration) -> (Vec<Op>, Duration) {
        let crashes = ClientCrashes::new(1);
        crashes.arm(0);
        let mut doomed = self.client_with(
            client,
            ClientConfig {
                crash: crashes.point(0),
                ..self.client_config(ttl)
            },
        );
        let expected = format!("{client} should have crashed inside its acquire");
        let crash = self
            .acquire_unknown(0, &mut doomed, "lock", ttl, &expected)
            .await;
        assert!(crash.contains("crashed"), "{crash}");

        let crashed_at = Instant::now();
        let mut other = self.client(client, ttl);
        while crashed_at.elapsed() < ttl * 3 {
            if let Some(grant) = self.acquire(1, &mut other, "lock", ttl).await {
                let waited = crashed_at.elapsed();
                self.release(1, &mut other, "lock", &grant).await;
                return (self.history(), waited);
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        (self.history(), crashed_at.elapsed())
    }

    /// The history recorded so far.
    pub fn history(&self) -> Vec<Op> {
        let file = std::fs::File::open(self.dir.path().join("history.jsonl")).unwrap();
        read_history(std::io::BufReader::new(file)).unwrap().ops
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        let docker = self.docker.clone();
        let run_id = self.run_id.clone();
        // Drop cannot await; a thread with its own runtime can, even while a test panics.
        let removed = std::thread::spawn(move || {
            tokio::runtime::Runtime::new()
                .unwrap()
                .block_on(splitbrain_compose::remove_run(&docker, &run_id))
        })
        .join();
        if !matches!(removed, Ok(Ok(_))) {
            eprintln!(
                "could not remove run {}: run `splitbrain clean`",
                self.run_id
            );
        }
    }
}

/// The `splitbrain` binary under test.
pub fn splitbrain() -> Command {
    Command::new(env!("CARGO_BIN_EXE_splitbrain"))
}

/// Runs `splitbrain` with these arguments and returns what it did.
pub fn run_splitbrain(args: &[&str]) -> Output {
    splitbrain()
        .args(args)
        .output()
        .expect("starting splitbrain")
}

/// How many containers and networks are still labelled with this run id.
pub async fn leftovers(docker: &Docker, run_id: &str) -> usize {
    let left = splitbrain_compose::list_run(docker, run_id)
        .await
        .expect("listing the run's containers");
    left.containers.len() + left.networks.len()
}

/// A fresh results folder for one binary run.
pub fn results_dir() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("results");
    (dir, path)
}

/// One `splitbrain run` (the node image built first) into a results folder of its own, which
/// lives as long as this.
pub struct StoredRun {
    _results: tempfile::TempDir,
    pub out: Output,
    /// The run's folder.
    pub dir: PathBuf,
}

impl StoredRun {
    /// Runs `splitbrain run ARGS --results <fresh folder>`.
    pub fn new(args: &[&str]) -> StoredRun {
        node_image();
        let (keep, results) = results_dir();
        let results_arg = results.display().to_string();
        let argv: Vec<&str> = std::iter::once("run")
            .chain(args.iter().copied())
            .chain(["--results", &results_arg])
            .collect();
        let run = StoredRun {
            out: run_splitbrain(&argv),
            dir: results.join("latest"),
            _results: keep,
        };
        run.assert_windows_shown_hold();
        run
    }

    /// Nothing a fault prevents lies inside the window shown for it: the harness measured
    /// when its faults acted (see `splitbrain_checker::shown_windows`).
    fn assert_windows_shown_hold(&self) {
        if !self.dir.join("history.jsonl").exists() {
            return;
        }
        let test: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(self.dir.join("test.json")).expect("test.json"),
        )
        .unwrap();
        let workers = test["concurrency"].as_u64().expect("concurrency") as usize;
        let found = splitbrain_checker::shown_windows::contradictions(&self.ops(), workers);
        assert!(
            found.is_empty(),
            "inside the windows shown for faults: {found:#?}\n{}",
            printed(&self.out)
        );
    }

    pub fn stdout(&self) -> String {
        String::from_utf8_lossy(&self.out.stdout).to_string()
    }

    /// Asserts the run ended with this exit code.
    pub fn assert_exit(&self, code: i32) {
        assert_eq!(self.out.status.code(), Some(code), "{}", printed(&self.out));
    }

    /// Asserts the run ended with a verdict, whichever (exit 0, 1 or 2).
    pub fn assert_verdict(&self) {
        assert!(
            matches!(self.out.status.code(), Some(0..=2)),
            "{}",
            printed(&self.out)
        );
    }

    pub fn ops(&self) -> Vec<Op> {
        read_ops(&self.dir)
    }

    pub fn results(&self) -> serde_json::Value {
        results_of(&self.dir)
    }
}

/// A run folder's `results.json`.
pub fn results_of(run_dir: &std::path::Path) -> serde_json::Value {
    let text = std::fs::read_to_string(run_dir.join("results.json")).expect("results.json");
    serde_json::from_str(&text).unwrap()
}

/// A run folder's `history.jsonl`.
pub fn read_ops(run_dir: &std::path::Path) -> Vec<Op> {
    let file = std::fs::File::open(run_dir.join("history.jsonl")).expect("history.jsonl");
    read_history(std::io::BufReader::new(file)).unwrap().ops
}

/// The node the run's first `kill-primary` killed, and every nemesis `master` observation
/// in order (the nodes acting as master).
pub fn killed_master_and_masters(ops: &[Op]) -> (String, Vec<Vec<String>>) {
    let killed = ops
        .iter()
        .find(|op| op.fault.as_deref() == Some("kill-primary") && op.f == "start")
        .and_then(|op| op.measured.as_ref()?["master"].as_str().map(String::from))
        .expect("kill-primary names the master it killed");
    let masters = ops
        .iter()
        .filter(|op| op.f == "master")
        .filter_map(|op| op.node.clone())
        .collect();
    (killed, masters)
}

/// What a `splitbrain` process printed, stdout then stderr, for assertion messages.
pub fn printed(out: &Output) -> String {
    format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Runs 10 s of Redlock under `fault`, a fault aimed at the lock's holder (`kill-holder`,
/// `clock-holder`), and asserts what it promises: each step that found a grant hit only nodes
/// of that grant, exactly as many as another client needs for a majority of five; the
/// coverage counts grants it reached; and the run found double grants.
pub fn a_fault_on_the_holder_finds_double_grants(fault: &str) {
    node_image();
    let (_keep, results) = results_dir();
    let out = run_splitbrain(&[
        "run",
        "--nemesis",
        fault,
        "--time-limit",
        "10s",
        "--seed",
        "1",
        "--results",
        results.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", printed(&out));
    let run = results.join("latest");
    let aimed: Vec<_> = read_ops(&run)
        .into_iter()
        .filter(|op| op.f == "start" && op.fault.as_deref() == Some(fault))
        .filter(|op| {
            op.measured
                .as_ref()
                .is_some_and(|m| m["granted_by"].is_array())
        })
        .collect();
    assert!(!aimed.is_empty(), "no {fault} found a grant");
    for step in &aimed {
        let granted: Vec<String> =
            serde_json::from_value(step.measured.as_ref().unwrap()["granted_by"].clone()).unwrap();
        let hit = step.node.clone().unwrap_or_default();
        assert!(
            !hit.is_empty() && hit.iter().all(|n| granted.contains(n)),
            "{fault} hit {hit:?} of a grant by {granted:?}"
        );
        // Exactly enough that the other nodes and the ones hit make a majority of five.
        assert_eq!(hit.len(), 3 - (5 - granted.len()), "{hit:?} of {granted:?}");
    }
    let results = results_of(&run);
    assert!(
        results["coverage"]["grants_faulted"].as_u64().unwrap() > 0,
        "{}",
        results["coverage"]
    );
}

/// A `lock-set` run of two clients of `client` on `deployment` under client pauses longer than
/// their lease (seed 1, 20 s), with or without `--fencing`: the zombie scenario.
pub fn lock_set_with_zombies(deployment: &str, client: &str, fencing: bool) -> StoredRun {
    storage_image();
    let mut args = vec![
        "--deployment",
        deployment,
        "--client",
        client,
        "--workload",
        "lock-set",
        "--nemesis",
        "client-pause",
        "--concurrency",
        "2",
        "--nemesis-interval",
        "300ms",
        "--time-limit",
        "20s",
        "--seed",
        "1",
    ];
    if fencing {
        args.push("--fencing");
    }
    StoredRun::new(&args)
}

/// The library cache (`SPLITBRAIN_CACHE`) that the tests of this process share where they run
/// real libraries without testing their install: each library is installed once a test run
/// rather than once a test. It is `target/tmp/library-cache`, emptied when the first test asks
/// for it, so that every test run installs from scratch once.
pub fn library_cache() -> &'static std::path::Path {
    static CACHE: OnceLock<PathBuf> = OnceLock::new();
    CACHE.get_or_init(|| {
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("library-cache");
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("making the tests' library cache in target/tmp");
        dir
    })
}

/// A `lock-set` run on `deployment` whose holder is cut off from the servers by
/// `link-drop-holder` for longer than its 2 s lease, while it holds for 6 s (seed 1, 25 s), with
/// `more` arguments: the cut-off-holder scenario.
pub fn cut_off_holder_run(deployment: &str, client: &str, more: &[&str]) -> StoredRun {
    storage_image();
    let mut args = vec![
        "--deployment",
        deployment,
        "--client",
        client,
        "--workload",
        "lock-set",
        "--ttl",
        "2s",
        "--hold",
        "6s",
        "--nemesis",
        "link-drop-holder",
        "--nemesis-interval",
        "5s",
        "--time-limit",
        "25s",
        "--seed",
        "1",
    ];
    args.extend_from_slice(more);
    StoredRun::new(&args)
}

/// A one-node deployment reached by two client groups, each through its own link, and the
/// `link-drop` fault that cuts group 0 off at the server's firewall.
pub struct CutOff {
    pub fixture: Fixture,
    pub links: Links,
    target: Target,
    action: Action,
}

impl CutOff {
    pub async fn up(deployment: &str) -> CutOff {
        let fixture = Fixture::up(deployment, None).await;
        let node = fixture.deployment.node("n1").unwrap().clone();
        let links = Links::start(2, &[(node.name.clone(), node.addr)])
            .await
            .unwrap();
        let target = Target {
            links: links.clone(),
            ..fixture.target()
        };
        let action = Action {
            targets: vec!["g0->n1".into()],
            params: serde_json::Value::Null,
        };
        CutOff {
            fixture,
            links,
            target,
            action,
        }
    }

    /// A `client` of `group` whose lease is `ttl`.
    pub fn client(&self, client: &str, group: usize, ttl: Duration) -> Box<dyn LockClient> {
        let config = ClientConfig {
            nodes: vec![("n1".into(), self.links.address(group, "n1").unwrap())],
            ..self.fixture.client_config(ttl)
        };
        self.fixture.client_with(client, config)
    }

    /// Cuts group 0 off.
    pub async fn cut(&self) {
        let drop = splitbrain_nemesis::find_fault("link-drop").unwrap();
        drop.start(&self.target, &self.action).await.unwrap();
        assert_eq!(drop.leftovers(&self.target).await.unwrap().len(), 1);
    }

    /// Lets group 0 through again, leaving no rule behind.
    pub async fn heal(&self) {
        let drop = splitbrain_nemesis::find_fault("link-drop").unwrap();
        drop.stop(&self.target, &self.action).await.unwrap();
        assert!(drop.leftovers(&self.target).await.unwrap().is_empty());
    }
}

/// `client`'s grant of `lock`, which it must get.
pub async fn granted(client: &mut Box<dyn LockClient>, ttl: Duration) -> Grant {
    client.prepare().await.unwrap();
    match client.acquire("lock", ttl).await {
        Outcome::Ok(grant) => grant,
        other => panic!("not granted: {other:?}"),
    }
}
