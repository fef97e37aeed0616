//! A fault's own iptables chain on each node, jumped to from INPUT. A fault that ends
//! flushes its own chain and leaves every other fault's rules alone: a partition that heals
//! while a scripted `link-drop` still cuts a client group must not uncut the group.

use splitbrain_compose::{ComposeError, Deployment};

/// One fault's chain, by name (iptables allows 28 characters).
pub(super) struct Chain(pub &'static str);

impl Chain {
    /// Appends `rules` (each what follows `-A <chain>`) on `node`, making the chain and the
    /// jump to it from INPUT first where they are not there yet.
    pub async fn append(
        &self,
        deployment: &Deployment,
        node: &str,
        rules: &[String],
    ) -> Result<(), ComposeError> {
        let chain = self.0;
        let mut script = vec![
            format!("{{ iptables -N {chain} 2>/dev/null || true; }}"),
            format!(
                "{{ iptables -C INPUT -j {chain} 2>/dev/null || iptables -I INPUT -j {chain}; }}"
            ),
        ];
        script.extend(
            rules
                .iter()
                .map(|rule| format!("iptables -A {chain} {rule}")),
        );
        deployment
            .exec_ok(node, &["sh", "-c", &script.join(" && ")])
            .await
            .map(drop)
    }

    /// Removes every rule of the chain on `node`; a node that never had the chain has none.
    pub async fn flush(&self, deployment: &Deployment, node: &str) -> Result<(), ComposeError> {
        let chain = self.0;
        let script = format!("! iptables -S {chain} >/dev/null 2>&1 || iptables -F {chain}");
        deployment
            .exec_ok(node, &["sh", "-c", &script])
            .await
            .map(drop)
    }

    /// How many rules the chain holds on `node`.
    pub async fn rules(&self, deployment: &Deployment, node: &str) -> Result<usize, ComposeError> {
        let script = format!("iptables -S {} 2>/dev/null || true", self.0);
        let listed = deployment.exec_ok(node, &["sh", "-c", &script]).await?;
        Ok(listed.lines().filter(|l| l.starts_with("-A")).count())
    }
}
