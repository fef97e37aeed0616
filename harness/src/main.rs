//! The `splitbrain` command.

// Output goes through `output`'s macros, which a closed pipe or terminal cannot make panic.
#![deny(clippy::print_stdout, clippy::print_stderr)]

#[macro_use]
mod output;

mod busy;
mod check;
mod claims;
mod cli;
mod error;
#[cfg(test)]
mod findings;
mod library;
mod limits;
mod logging;
mod matrix;
mod progress;
mod reaper;
#[cfg(test)]
mod reference;
mod replay;
mod report;
mod run;
mod scenario;
mod script;
mod serve;
mod shrink;
mod spec;
mod store;
mod summary;

use clap::{Args, CommandFactory, FromArgMatches};
use tokio_util::sync::CancellationToken;

use crate::cli::{
    CheckArgs, Cli, Command, ImagesCommand, LibraryCommand, ReportCommand, ScenarioCommand,
};
use crate::error::{Exit, HarnessError};

fn main() {
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    // A check is a function of a file: it is parsed on its own, without the rest of the
    // command line's tree, and runs with no runtime and no threads, so that checking many
    // small histories costs little more than starting a program.
    if args.get(1).is_some_and(|command| command == "check") {
        let check = CheckArgs::augment_args(
            clap::Command::new("check")
                .bin_name("splitbrain check")
                .about(cli::CHECK_ABOUT)
                .max_term_width(100),
        );
        let args = parsed(
            check
                .try_get_matches_from(&args[1..])
                .and_then(|matches| CheckArgs::from_arg_matches(&matches)),
            "splitbrain check --help",
        );
        std::process::exit(exit_of(check::check(&args)).code());
    }
    let mut command = Cli::command();
    // The scenario catalog is help text; it is only made when help is asked for.
    if args
        .iter()
        .any(|arg| arg == "--help" || arg == "-h" || arg == "help")
    {
        command = command.mut_subcommand("run", |run| run.after_help(spec::catalog()));
    }
    let parsed = command
        .try_get_matches_from(&args)
        .and_then(|matches| Ok((Cli::from_arg_matches(&matches)?, matches)));
    let cli = match parsed {
        Ok((_, matches)) if let Some(flag) = beside_replay(&matches) => {
            stderrln!(
                "error: --replay runs with the stored run's options and faults; leave out \
                 --{flag} (or run without --replay)"
            );
            std::process::exit(Exit::BadInput.code());
        }
        parsed => self::parsed(parsed, "splitbrain --help").0,
    };
    if matches!(
        cli.command,
        Command::Run(_)
            | Command::Matrix(_)
            | Command::Scenario(_)
            | Command::Shrink(_)
            | Command::Library {
                command: LibraryCommand::Test { .. }
            }
    ) {
        limits::raise_open_files();
        if let Err(e) = reaper::start() {
            stderrln!("error: {e:#}");
            std::process::exit(Exit::Crash.code());
        }
    }
    let runtime = tokio::runtime::Runtime::new().expect("starting the async runtime");
    let exit = runtime.block_on(dispatch(cli.command));
    // Do not wait for stray tasks (a hung connection) once the outcome is known.
    runtime.shutdown_timeout(std::time::Duration::from_secs(1));
    reaper::done();
    std::process::exit(exit.code());
}

/// The parsed command line; for `--help` and `--version` what they print, and for an error
/// its first line, then the exit.
fn parsed<T>(parsed: Result<T, clap::Error>, help: &str) -> T {
    match parsed {
        Ok(parsed) => parsed,
        Err(e) if !e.use_stderr() => {
            // --help and --version.
            let _ = e.print();
            std::process::exit(0);
        }
        Err(e) => {
            stderrln!("{} (see `{help}`)", first_line(&e.render().to_string()));
            std::process::exit(Exit::BadInput.code());
        }
    }
}

/// The first line of clap's error, with the list it announces where it ends in a colon:
/// "error: the following required arguments were not provided: <HISTORY>", and with its tips:
/// "error: unexpected argument '--nemsis' found; a similar argument exists: '--nemesis'".
fn first_line(rendered: &str) -> String {
    let mut lines = rendered.lines();
    let first = lines.next().unwrap_or("bad arguments").to_string();
    if !first.ends_with(':') {
        let tips: Vec<&str> = lines
            .filter_map(|line| line.trim().strip_prefix("tip: "))
            .collect();
        return std::iter::once(first.as_str())
            .chain(tips)
            .collect::<Vec<_>>()
            .join("; ");
    }
    let listed: Vec<&str> = lines
        .take_while(|line| line.starts_with("  "))
        .map(str::trim)
        .collect();
    format!("{first} {}", listed.join(", "))
}

/// A run option given beside `--replay`, which takes them all from the stored run.
fn beside_replay(matches: &clap::ArgMatches) -> Option<String> {
    let given = |run: &clap::ArgMatches, id: &str| {
        run.value_source(id) == Some(clap::parser::ValueSource::CommandLine)
    };
    let ("run", run) = matches.subcommand()? else {
        return None;
    };
    if !given(run, "replay") {
        return None;
    }
    let command = Cli::command();
    let flag = command
        .find_subcommand("run")?
        .get_arguments()
        .map(|option| option.get_id().as_str())
        .find(|id| {
            !["replay", "replays", "results", "quiet", "limit"].contains(id) && given(run, id)
        })
        .map(|id| id.replace('_', "-"));
    flag
}

/// After a group of runs (a matrix, a scenario, a card), the results folder's index lists them
/// too, as it does after a run. Input refused before anything ran writes nothing.
fn indexed(
    results: &std::path::Path,
    ran: Result<Exit, HarnessError>,
) -> Result<Exit, HarnessError> {
    if ran.is_ok() {
        report::write_index_after(results);
    }
    ran
}

async fn dispatch(command: Command) -> Exit {
    let result = match command {
        Command::Run(args) => {
            progress::set_quiet(args.quiet);
            progress::set_findings_shown(args.limit);
            match &args.replay {
                Some(dir) => {
                    let results = &args.spec.results;
                    replay::replay(dir, args.replays, results, interrupt_on_signals()).await
                }
                None => match args.spec.checked() {
                    Ok(spec) => run::run(spec, interrupt_on_signals())
                        .await
                        .map(|ran| ran.exit),
                    Err(e) => Err(e),
                },
            }
        }
        Command::Check(_) => unreachable!("main checks without a runtime"),
        Command::Matrix(args) => {
            progress::set_quiet(args.quiet);
            let options = matrix::MatrixOptions {
                file: args.file,
                results: args.results.clone(),
                junit: args.junit,
                shard: args.shard,
                parallel: args.parallel.unwrap_or_else(matrix::default_parallel),
            };
            indexed(
                &args.results,
                matrix::run(options, interrupt_on_signals()).await,
            )
        }
        Command::Shrink(args) => {
            progress::set_quiet(args.quiet);
            let options = shrink::ShrinkOptions {
                run_dir: args.run_dir,
                replays: args.replays,
                final_replays: args.final_replays,
                results: args.results,
            };
            shrink::shrink(&options, interrupt_on_signals()).await
        }
        Command::Scenario(args) => match args.command {
            ScenarioCommand::List => scenario::list(&args.dir),
            ScenarioCommand::Run {
                name,
                all,
                stop_at_first,
                runs,
            } => {
                progress::set_quiet(runs.quiet);
                let interrupt = interrupt_on_signals();
                let asked = scenario::Asked {
                    dir: &args.dir,
                    runs: &runs,
                    stop_at_first,
                };
                let ran = match name {
                    Some(name) if !all => scenario::run(&asked, &name, interrupt).await,
                    _ => scenario::run_all(&asked, interrupt).await,
                };
                indexed(&runs.results, ran)
            }
        },
        Command::Report(args) => {
            logging::to_stderr();
            match &args.command {
                Some(ReportCommand::Merge { dirs, out, junit }) => {
                    matrix::merge(dirs, out, junit.as_deref())
                }
                None => report::command(&args),
            }
        }
        Command::Serve(args) => {
            logging::to_stderr();
            serve::serve(&args, interrupt_on_signals()).await
        }
        Command::Library { command } => match command {
            LibraryCommand::List => {
                logging::to_stderr();
                library::list()
            }
            LibraryCommand::Test {
                name,
                all,
                checks,
                scenarios,
                full_time,
                runs,
            } => {
                progress::set_quiet(runs.quiet);
                let name = name.filter(|_| !all);
                let interrupt = interrupt_on_signals();
                let cards = library::Cards {
                    name: name.as_deref(),
                    only: &checks,
                    scenarios: &scenarios,
                    runs: &runs,
                    stop_at_first: !full_time,
                };
                indexed(&runs.results, library::test(cards, interrupt).await)
            }
        },
        Command::Images {
            command: ImagesCommand::Build,
        } => {
            logging::to_stderr();
            build_images().await
        }
        Command::Clean { run, force } => {
            logging::to_stderr();
            clean(run.as_deref(), force).await
        }
        Command::Completions { shell } => {
            let mut script = Vec::new();
            clap_complete::generate(shell, &mut Cli::command(), "splitbrain", &mut script);
            stdout!("{}", String::from_utf8_lossy(&script));
            Ok(Exit::Success)
        }
        Command::Man { out } => man_pages(&out),
        Command::Reap { owner } => reaper::reap(&owner).await,
    };
    exit_of(result)
}

/// The exit a command's outcome calls for; an error is printed first.
fn exit_of(result: Result<Exit, HarnessError>) -> Exit {
    match result {
        Ok(exit) => exit,
        Err(e) => {
            match &e {
                HarnessError::BadInput(message) | HarnessError::Interrupted(message) => {
                    stderrln!("error: {message}")
                }
                HarnessError::Crash(error) => stderrln!("error: {error:#}"),
            }
            Exit::from(&e)
        }
    }
}

/// A token cancelled on the first Ctrl-C or SIGTERM; the run then stops, heals, cleans up and
/// checks what it recorded. A SIGHUP (the terminal went away) stops nothing: as under `nohup`,
/// the run goes on to its end and leaves its verdict in its folder and its exit code.
fn interrupt_on_signals() -> CancellationToken {
    use tokio::signal::unix::{signal, SignalKind};
    let token = CancellationToken::new();
    let cancel = token.clone();
    tokio::spawn(async move {
        let mut term = signal(SignalKind::terminate()).expect("installing the SIGTERM handler");
        let mut hangup = signal(SignalKind::hangup()).expect("installing the SIGHUP handler");
        loop {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => break,
                _ = term.recv() => break,
                _ = hangup.recv() => {
                    tracing::warn!("the terminal went away (SIGHUP); the run goes on to its end");
                }
            }
        }
        cancel.cancel();
    });
    token
}

/// Writes a man page for splitbrain and one for each of its commands into `out`.
fn man_pages(out: &std::path::Path) -> Result<Exit, HarnessError> {
    let writing =
        |e: std::io::Error| anyhow::anyhow!("writing man pages into {}: {e}", out.display());
    std::fs::create_dir_all(out).map_err(writing)?;
    let command = Cli::command().mut_subcommand("run", |run| run.after_help(spec::catalog()));
    clap_mangen::generate_to(command, out).map_err(writing)?;
    let pages = std::fs::read_dir(out)
        .map_err(writing)?
        .filter_map(Result::ok)
        .filter(|entry| entry.file_name().to_string_lossy().ends_with(".1"))
        .count();
    let top = out.join("splitbrain.1");
    stdoutln!(
        "wrote {pages} man pages into {}: splitbrain.1 and one for each command (read them \
         with `man {}`, `man {}`)",
        out.display(),
        top.display(),
        out.join("splitbrain-run.1").display()
    );
    Ok(Exit::Success)
}

async fn build_images() -> Result<Exit, HarnessError> {
    let docker = splitbrain_compose::connect()
        .await
        .map_err(anyhow::Error::from)?;
    use splitbrain_compose::image;
    // The storage first: every `lock-set` run needs it, whichever server it runs.
    let systems = splitbrain_systems::servers().map(|s| s.image());
    for recipe in std::iter::once(&image::STORAGE).chain(systems) {
        progress::step(&format!("building {}", recipe.repository));
        let tag = image::rebuild(&docker, recipe, &mut |line| progress::detail(line))
            .await
            .map_err(anyhow::Error::from)?;
        progress::step(&format!("built {tag}"));
    }
    Ok(Exit::Success)
}

async fn clean(run: Option<&str>, force: bool) -> Result<Exit, HarnessError> {
    let docker = splitbrain_compose::connect()
        .await
        .map_err(anyhow::Error::from)?;
    if let Some(run) = run {
        let removed = splitbrain_compose::remove_run(&docker, run)
            .await
            .map_err(anyhow::Error::from)?;
        stdoutln!(
            "removed {} container(s) and {} network(s) of run {run}",
            removed.containers.len(),
            removed.networks.len()
        );
        return Ok(Exit::Success);
    }
    let cleaned = splitbrain_compose::clean(&docker, force)
        .await
        .map_err(anyhow::Error::from)?;
    let programs = orphan_programs(force);
    stdoutln!(
        "removed {} container(s), {} network(s) and {programs} client program(s) left by earlier runs",
        cleaned.removed.containers.len(),
        cleaned.removed.networks.len()
    );
    for (run, owner, why) in &cleaned.spared {
        stdoutln!("left run {run} alone: {why} ({owner}); --force removes it too");
    }
    for (run, why) in &cleaned.failed {
        stderrln!("error: could not remove run {run}: {why}");
    }
    Ok(if cleaned.failed.is_empty() {
        Exit::Success
    } else {
        Exit::Crash
    })
}

/// Kills the programs of harnesses that are gone (with `force`, of every other harness too);
/// returns how many.
fn orphan_programs(force: bool) -> usize {
    reaper::orphaned_programs(force)
        .iter()
        .map(|(owner, _)| reaper::kill_programs(owner))
        .sum()
}
