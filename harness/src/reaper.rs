//! The reaper, as testcontainers' Ryuk is for its users: whatever ends a `run` or `matrix`
//! process (SIGKILL, the OOM killer, a panic), what it started is gone within seconds, with
//! no command to run.
//!
//! The harness starts `splitbrain reap` as a child in a session of its own (so a closed
//! terminal does not take it along) and keeps the write end of a pipe to its stdin. The
//! kernel closes that pipe however the harness ends, and the reaper, reading EOF, removes
//! every container and network labelled with the harness as their owner and kills every
//! program carrying the harness's mark in its environment (client programs, and whatever
//! they started). A harness that ends normally says `done` first: it has removed what it
//! made, and the reaper only checks once.

use std::io::{Read, Write};
use std::os::unix::process::CommandExt;
use std::process::{ChildStdin, Command, Stdio};
use std::sync::OnceLock;
use std::time::Duration;

use splitbrain_compose::owner::{program_owners, Liveness, Owner, OWNER_ENV};

use crate::error::{Exit, HarnessError};

/// The write end of the reaper's pipe, open until this process ends.
static LIFELINE: OnceLock<ChildStdin> = OnceLock::new();

/// Marks this process's future children as its own and starts its reaper. Call before any
/// thread starts (it sets an environment variable) and before anything is created.
pub fn start() -> Result<(), HarnessError> {
    let owner = Owner::this_process().label();
    std::env::set_var(OWNER_ENV, &owner);
    let exe = std::env::current_exe()
        .map_err(|e| anyhow::anyhow!("finding this program to start its reaper: {e}"))?;
    let mut command = Command::new(exe);
    command
        .args(["reap", "--owner", &owner])
        .env_remove(OWNER_ENV)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    // SAFETY: setsid is async-signal-safe, as a pre_exec hook must be.
    unsafe {
        command.pre_exec(|| {
            libc::setsid();
            Ok(())
        });
    }
    let mut child = command
        .spawn()
        .map_err(|e| anyhow::anyhow!("starting the reaper: {e}"))?;
    let pipe = child.stdin.take().expect("the reaper's stdin is piped");
    let _ = LIFELINE.set(pipe);
    Ok(())
}

/// Tells the reaper this process is ending normally, its own clean-up done.
pub fn done() {
    if let Some(mut pipe) = LIFELINE.get() {
        let _ = pipe.write_all(DONE);
    }
}

const DONE: &[u8] = b"done\n";

/// `splitbrain reap --owner OWNER`: waits for the owner's end, then removes what it left.
pub async fn reap(owner: &str) -> Result<Exit, HarnessError> {
    // Reading returns once every write end is closed, which the kernel does when the owner
    // exits, however it exits.
    let said = tokio::task::spawn_blocking(|| {
        let mut said = Vec::new();
        let _ = std::io::stdin().read_to_end(&mut said);
        said
    })
    .await
    .unwrap_or_default();
    sweep(owner).await;
    if said != DONE {
        // A container whose creation was on its way when the owner died appears later.
        tokio::time::sleep(Duration::from_secs(3)).await;
        sweep(owner).await;
    }
    Ok(Exit::Success)
}

/// Kills the owner's programs and removes its containers and networks.
async fn sweep(owner: &str) {
    kill_programs(owner);
    if let Ok(docker) = splitbrain_compose::connect().await {
        let _ = splitbrain_compose::remove_owned(&docker, owner).await;
    }
}

/// Says, once a process, what runs whose harness was killed together with its reaper left on
/// this machine: nothing else would remove it, and it keeps the engine busier than the run
/// beside it expects. Runs whose harness is alive are not counted.
pub async fn mention_abandoned(docker: &splitbrain_compose::Docker) {
    static CHECKED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    if CHECKED.swap(true, std::sync::atomic::Ordering::Relaxed) {
        return;
    }
    let runs = splitbrain_compose::abandoned(docker)
        .await
        .unwrap_or_default();
    let containers: usize = runs.iter().map(|(_, containers)| containers).sum();
    let programs: usize = orphaned_programs(false)
        .iter()
        .map(|(_, programs)| programs)
        .sum();
    if runs.is_empty() && programs == 0 {
        return;
    }
    let ids: Vec<&str> = runs.iter().map(|(run, _)| run.as_str()).collect();
    stderrln!(
        "note: earlier runs whose harness is gone left {containers} container(s) of {} run(s){} \
         and {programs} client program(s) on this machine; `splitbrain clean` removes them",
        runs.len(),
        match ids.is_empty() {
            true => String::new(),
            false => format!(" ({})", ids.join(", ")),
        },
    );
}

/// The client programs still running whose harness is gone (or, with `force`, that another
/// harness than this one started), by owner, each with how many programs it left.
pub fn orphaned_programs(force: bool) -> Vec<(String, usize)> {
    let me = Owner::this_process().label();
    program_owners()
        .into_iter()
        .filter(|(owner, _)| *owner != me)
        .filter(|(owner, _)| {
            force || Owner::parse(owner).is_none_or(|o| o.liveness() == Liveness::Gone)
        })
        .map(|(owner, pids)| (owner, pids.len()))
        .collect()
}

/// SIGKILLs every program whose environment names `owner` (continuing a frozen one first, so
/// the kill is not held up); returns how many there were.
pub fn kill_programs(owner: &str) -> usize {
    let pids: Vec<u32> = program_owners()
        .into_iter()
        .filter(|(o, _)| o == owner)
        .flat_map(|(_, pids)| pids)
        .collect();
    for &pid in &pids {
        // SAFETY: plain signals to processes found by pid; a pid that has gone meanwhile
        // makes kill fail harmlessly.
        unsafe {
            libc::kill(pid as i32, libc::SIGCONT);
            libc::kill(pid as i32, libc::SIGKILL);
        }
    }
    pids.len()
}
