//! Which PEs share a node: two PEs are on one node only when they can map each other's memory,
//! so the identity is made of what decides that (the host name alone does not: two containers
//! on one host may share it, or not, and a private `/dev/shm` is another machine to us).
//!
//! Owns the identity string of this process and the grouping of a job's identities into nodes.
//! The identities travel through the launcher's exchange (`bootstrap::Exchange`), never through
//! shared memory.

use std::os::unix::fs::MetadataExt;

/// This process's node identity: host name, boot id, the IPC and mount namespaces, and the
/// device and inode of the shared-memory directory. Equal identities can map each other's files.
pub fn identity(shm_dir: &str) -> String {
    let host = super::hostname();
    let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").map(|s| s.trim().to_string()).unwrap_or_default();
    let ns = |n: &str| std::fs::read_link(format!("/proc/self/ns/{n}")).map(|p| p.to_string_lossy().into_owned()).unwrap_or_default();
    let shm = std::fs::metadata(shm_dir).map(|m| format!("{}:{}", m.dev(), m.ino())).unwrap_or_default();
    format!("{host}|{boot}|{}|{}|{shm}", ns("ipc"), ns("mnt"))
}

/// The host-name part of an identity, for messages.
pub fn host_of(identity: &str) -> &str {
    identity.split('|').next().unwrap_or(identity)
}

/// The nodes of a job, from every PE's identity.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Nodes {
    /// Node index of each PE (nodes numbered by their lowest PE).
    pub node_of: Vec<usize>,
    /// The PEs of each node, ascending.
    pub members: Vec<Vec<usize>>,
    /// A host name for each node (for messages).
    pub hosts: Vec<String>,
    /// Per PE: the PEs of the job on its machine (equal identities; the pretend nodes of
    /// `ISHMEM_NODE_SPLIT` on one machine counted together), which share its CPUs.
    pub host_size: Vec<usize>,
}

impl Nodes {
    /// Groups PEs with equal identities; `split` (`ISHMEM_NODE_SPLIT`, 0 or 1: off) further cuts
    /// each group into `split` pretend nodes of consecutive ranks.
    pub fn group(ids: &[String], split: usize) -> Nodes {
        let mut index = std::collections::HashMap::<String, usize>::new();
        let mut hosts = Vec::new();
        let mut node_of = Vec::with_capacity(ids.len());
        let mut group_size = std::collections::HashMap::<&str, usize>::new();
        for id in ids {
            *group_size.entry(id.as_str()).or_default() += 1;
        }
        let mut seen = std::collections::HashMap::<&str, usize>::new();
        for id in ids {
            let key = if split > 1 {
                // The i-th PE of its group goes to pretend node i * split / group size.
                let n = group_size[id.as_str()];
                let i = seen.entry(id.as_str()).or_default();
                let part = *i * split / n;
                *i += 1;
                format!("{id}#{part}")
            } else {
                id.clone()
            };
            // A map, not a search of the nodes so far: O(PEs), not O(PEs x nodes) (issue 29).
            let next = index.len();
            let n = *index.entry(key).or_insert_with(|| {
                hosts.push(super::clip(host_of(id)));
                next
            });
            node_of.push(n);
        }
        let mut members = vec![Vec::new(); index.len()];
        for (pe, &n) in node_of.iter().enumerate() {
            members[n].push(pe);
        }
        let host_size = ids.iter().map(|id| group_size[id.as_str()]).collect();
        Nodes { node_of, members, hosts, host_size }
    }

    /// One node holding every PE.
    pub fn single(npes: usize) -> Nodes {
        Nodes { node_of: vec![0; npes], members: vec![(0..npes).collect()], hosts: vec![super::hostname()], host_size: vec![npes; npes] }
    }

    pub fn count(&self) -> usize {
        self.members.len()
    }

    /// `pe`'s rank among the PEs of its node.
    pub fn local_rank(&self, pe: usize) -> usize {
        let n = self.node_of[pe];
        self.members[n].iter().position(|&q| q == pe).unwrap_or(0)
    }

    /// The number of PEs on `pe`'s node.
    pub fn local_size(&self, pe: usize) -> usize {
        self.members[self.node_of[pe]].len()
    }

    /// "2 nodes: vm (PEs 0-1), vm2 (PEs 2-3)", for messages and ISHMEM_INFO.
    pub fn describe(&self) -> String {
        let parts: Vec<String> = self
            .members
            .iter()
            .zip(&self.hosts)
            .map(|(m, h)| format!("{h} ({} PE{}: {})", m.len(), if m.len() == 1 { "" } else { "s" }, ranges(m)))
            .collect();
        format!("{} node{}: {}", self.count(), if self.count() == 1 { "" } else { "s" }, parts.join(", "))
    }
}

/// "0-3,6,8-9" for an ascending list.
fn ranges(v: &[usize]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < v.len() {
        let mut j = i;
        while j + 1 < v.len() && v[j + 1] == v[j] + 1 {
            j += 1;
        }
        out.push(if i == j { v[i].to_string() } else { format!("{}-{}", v[i], v[j]) });
        i = j + 1;
    }
    out.join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn groups_equal_identities() {
        let n = Nodes::group(&ids(&["a|1", "a|1", "b|2", "b|2"]), 0);
        assert_eq!(n.node_of, vec![0, 0, 1, 1]);
        assert_eq!(n.members, vec![vec![0, 1], vec![2, 3]]);
        assert_eq!((n.local_rank(3), n.local_size(3)), (1, 2));
        assert_eq!(n.describe(), "2 nodes: a (2 PEs: 0-1), b (2 PEs: 2-3)");
    }

    #[test]
    fn interleaved_ranks_keep_their_node() {
        let n = Nodes::group(&ids(&["a|1", "b|1", "a|1", "b|1", "a|1"]), 0);
        assert_eq!(n.node_of, vec![0, 1, 0, 1, 0]);
        assert_eq!(n.members, vec![vec![0, 2, 4], vec![1, 3]]);
        assert_eq!(n.local_rank(4), 2);
        assert_eq!(n.describe(), "2 nodes: a (3 PEs: 0,2,4), b (2 PEs: 1,3)");
    }

    #[test]
    fn same_host_different_shm_is_another_node() {
        // Two containers with one host name but separate /dev/shm.
        let n = Nodes::group(&ids(&["h|boot|ipc:[1]|mnt:[1]|5:10", "h|boot|ipc:[2]|mnt:[2]|6:10"]), 0);
        assert_eq!(n.count(), 2);
        assert_eq!(host_of("h|boot|x"), "h");
    }

    #[test]
    fn split_makes_pretend_nodes_of_consecutive_ranks() {
        let n = Nodes::group(&ids(&["a"; 4]), 2);
        // Pretend nodes of one machine share its CPUs.
        assert_eq!((n.local_size(0), n.host_size[0], n.host_size[3]), (2, 4, 4));
        assert_eq!(Nodes::group(&ids(&["a", "b", "a"]), 0).host_size, vec![2, 1, 2]);
        assert_eq!(n.members, vec![vec![0, 1], vec![2, 3]]);
        let n = Nodes::group(&ids(&["a"; 5]), 2);
        assert_eq!(n.members, vec![vec![0, 1, 2], vec![3, 4]]);
        let n = Nodes::group(&ids(&["a"; 3]), 1);
        assert_eq!(n.count(), 1);
        // More pretend nodes than PEs: one PE each.
        let n = Nodes::group(&ids(&["a"; 2]), 4);
        assert_eq!(n.members, vec![vec![0], vec![1]]);
    }

    #[test]
    fn identity_is_stable_and_names_the_host() {
        let a = identity("/tmp");
        assert_eq!(a, identity("/tmp"));
        assert_eq!(host_of(&a), super::super::hostname());
        assert_ne!(a, identity("/proc"));
    }
}
