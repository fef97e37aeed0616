//! Every Redis deployment runs on each server version Debian packages (`--server`): the
//! version is the one asked for, recorded in `test.json`, and the clock shim moves its clock.

use crate::support;

use support::{docker_skipped, printed, StoredRun};

#[test]
fn each_redis_version_runs_and_its_clock_moves() {
    if docker_skipped() {
        return;
    }
    for (server, reported) in [("redis-8.0", "redis 8.0."), ("valkey-8.1", "valkey 8.1.")] {
        let run = StoredRun::new(&[
            "--server",
            server,
            "--deployment",
            "single",
            "--client",
            "set-nx-px",
            "--nemesis",
            "clock-bump",
            "--nemesis-interval",
            "1s",
            "--time-limit",
            "5s",
            "--seed",
            "1",
        ]);
        run.assert_verdict();
        let test: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(run.dir.join("test.json")).expect("test.json"),
        )
        .unwrap();
        assert_eq!(test["server"], server);
        let version = test["versions"]["server"].as_str().unwrap_or_default();
        assert!(version.starts_with(reported), "{server}: {version}");
        let command = test["command"].as_str().unwrap_or_default();
        assert!(
            command.contains(&format!("--server {server}")),
            "the command line runs the same server again: {command}"
        );
        // Each clock jump's start records the skew Redis's own TIME showed, which only the
        // shim under this server's libc can have made.
        let jumps: Vec<_> = run
            .ops()
            .into_iter()
            .filter(|op| op.fault.as_deref() == Some("clock-bump") && op.f == "start")
            .collect();
        assert!(!jumps.is_empty(), "{}", printed(&run.out));
        for jump in jumps {
            let asked = jump.value.as_ref().unwrap()["offset_ms"].as_f64().unwrap();
            let seen = jump.measured.as_ref().unwrap()["skew_ms"]
                .as_object()
                .expect("a measured skew per node")
                .values()
                .map(|v| v.as_f64().unwrap())
                .collect::<Vec<_>>();
            assert!(
                seen.iter().all(|s| (s - asked).abs() < 200.0),
                "{server}: asked {asked} ms, TIME showed {seen:?}"
            );
        }
    }
}
