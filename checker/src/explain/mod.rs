//! Why a violation happened, by its mechanism: the faults and node events that explain it, a
//! named [`Cause`], and one sentence built from the history alone.
//!
//! A double grant is explained from its two holds, the nodes each grant names, the
//! [`crate::timeline::Timeline`] of the faults and the deployment's masters, and the releases on its key. Rules,
//! in order, each with a unit test below:
//!
//! 1. A `stale` (or `fenced`) double grant has a **zombie**: the holder whose lease had ended
//!    when the other was granted. It is a [`Cause::Zombie`] where its client worker
//!    (`client-<process % workers>`) was frozen during its hold; a [`Cause::CutOffHolder`]
//!    where a fault aimed at the holder cut its links within its lease (for a lock its
//!    library renews silently, whose lease lives on while it reaches the servers, any time in
//!    its hold before the second grant); a [`Cause::RestartHazard`] where it
//!    renews its lease and its node was killed during its hold (it came back without the key,
//!    so the renewals failed); a [`Cause::ConnectionLost`] where its lock lives with its
//!    connection (`renewal: connection`) and, before the other's grant, a fault reset or cut
//!    the links from its client group to its node, or one of its renewals got no answer
//!    while a fault was on those links (its client gives such a connection up); a
//!    [`Cause::RenewalStopped`] where it renews and its last
//!    renewal asked before the other's grant failed or timed out (coming back before or after
//!    that grant) with none tried after (its library gave up renewing without telling it); otherwise, where no fault touched its client or its nodes
//!    during its hold, a [`Cause::SlowHolder`] (the work outlasted the lease); otherwise
//!    [`Cause::Unexplained`].
//! 2. A `lease` double grant (both leases live) that rule 3 finds no node story for is a
//!    [`Cause::Hijack`] where another process than the first holder released the key (never
//!    of a lock that lives with its holder's connection: only its own session releases it),
//!    successfully, on a node the first grant came from, between the two grants: a release
//!    that does not check its token deletes whoever holds the key then (one that does cannot
//!    succeed while the first holder's key is there). Or the release was asked before both grants and held up (a paused
//!    server answers its queued commands in an order of its own): it deleted the second
//!    holder's key, set meanwhile, and the first was granted after it.
//! 3. Where both grants name their nodes and share some, each shared node granted both, so it
//!    lost the first key while that lease was live: a [`Cause::RestartHazard`] where it was
//!    killed after the first acquire was asked (it may have voted before it went down) and
//!    came back before the second grant, a [`Cause::ClockJump`] where its clock was set
//!    forward (or strobed, or drifted) between them. A shared node with neither is rule 2's,
//!    then, for a lock that lives with its holder's connection, rule 1's
//!    [`Cause::ConnectionLost`];
//!    else, in a run with no fault at all, a [`Cause::NoExclusion`] (the server did as told:
//!    the library's lock kept no key for its lease); else the double grant is unexplained.
//! 4. Where they share no node, the lock moved to another master: a [`Cause::SplitBrain`]
//!    where the first holder's node was cut off when it granted (a master on the minority
//!    side), or where either node granted while the deployment named other nodes master and
//!    not it (a master left behind by a failover, or not yet demoted after a heal), or
//!    granted less than 6 s after the heal that ended its cut-off while the other node was
//!    promoted (the Sentinels had not yet made it a replica): two masters at once. A
//!    [`Cause::Failover`] where the first node was cut off, killed or
//!    paused after its grant and before the second, or a failover of either node was under way
//!    between them.
//! 5. Where the grants name no nodes (a library behind `exec:` that does not say), the
//!    deployment's own events between them come before rule 2 (most libraries release with a
//!    token check, which cannot hijack): a failover, promotion or two masters at once where
//!    masters are recorded, else a restart (of a master, where recorded), else a clock set
//!    forward; then rule 2; then, in a run with no fault at all, a [`Cause::NoExclusion`]
//!    (the library let the second in by itself). Rule 2 never names a release whose own grant came after the
//!    first on the same nodes, or after a restart or clock jump that lost the first key: the
//!    first key was gone already, and the release deleted only its own.
//! 6. Anything else is [`Cause::Unexplained`], with the faults active named: that is the case
//!    a user must look at.
//!
//! Rules 1 to 6 are [`double_grant`]'s. A stuck lock is explained by rule 7 (the stuck-lock
//! checker's [`crate::stuck_lock`]), lost writes by rule 8 ([`lost_writes`]), a fencing
//! violation by rule 9 ([`crate::fencing`]). What they share, the [`context::Context`] of the
//! run's faults and masters, is in [`context`]; what they make, a [`Cause`] and an
//! [`Explanation`], in [`cause`].

pub mod cause;
pub mod context;
pub mod double_grant;
pub mod lost_writes;

pub use cause::{Cause, Explanation};
